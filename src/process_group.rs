//! Process groups, the one place: signalling a group, the grace between
//! SIGTERM and SIGKILL, whether a group still has live members, stopping a
//! recorded group, and whether the process a sidecar recorded is still
//! *that* process. The supervisor (`provider_exec`) and the reaper
//! (`okstra reap`) both stop groups through here.
//!
//! A pid alone proves nothing: after the process dies the kernel hands the
//! number to someone else. So every check pairs the pid with the sidecar's
//! `started_ts` and the start time Linux keeps in `/proc/<pid>/stat`:
//!
//! - the wrapper wrote `started_ts` after it started, so a live wrapper
//!   started no later than `started_ts` (+ rounding);
//! - the child (the group leader, pgid = its pid) was spawned right after
//!   `started_ts`, so it started within [`started_ts` − 1, `started_ts` +
//!   [`SPAWN_WINDOW_SECS`]]; a process with that pid that started later is a
//!   stranger who inherited the number;
//! - when the leader is gone but members of its group remain (grandchildren),
//!   the group id cannot have been handed out again while those members hold
//!   it, and they started after `started_ts`.
//!
//! A start time that fits is not enough for a live leader: a pid reused
//! within the window would pass. So the leader's command must also be the
//! one the sidecar's `argv` recorded ([`command_matches`]); a sidecar with
//! no `argv` cannot prove anything and its group is never called ours.
//!
//! Zombies count as gone: they hold no resources and cannot be stopped.
//! Without `/proc` (not Linux) only `kill(pid, 0)` is available and no
//! group is ever called ours.

use std::fs;
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// Rounding slack: `started_ts` is whole seconds, so is the boot time.
const CLOCK_SLACK_SECS: i64 = 1;
/// Longest plausible gap between the wrapper recording `started_ts` and
/// spawning the CLI (it creates the log and the sidecar in between).
pub const SPAWN_WINDOW_SECS: i64 = 60;
/// How long a stopped group gets between SIGTERM and SIGKILL: the reference
/// wrapper's 5 s (kimi needs about 3 s to clean up).
pub const GRACE: Duration = Duration::from_secs(5);
/// How long we wait for the group to vanish after SIGKILL.
const KILL_WAIT: Duration = Duration::from_secs(2);
/// Poll interval while waiting for a group to vanish.
const POLL: Duration = Duration::from_millis(50);

/// What `/proc/<pid>/stat` says about one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcInfo {
    pub pid: i32,
    /// One-letter state (`R`, `S`, `Z` …).
    pub state: char,
    pub pgrp: i32,
    /// Start time in Unix seconds.
    pub start_unix: i64,
}

impl ProcInfo {
    fn is_zombie(&self) -> bool {
        matches!(self.state, 'Z' | 'X')
    }
}

/// Read `/proc/<pid>/stat`; `None` if there is no such process (or no /proc).
pub fn proc_info(pid: i32) -> Option<ProcInfo> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(pid, &text)
}

/// Parse a `/proc/<pid>/stat` line. The command name (field 2) may hold
/// spaces and parentheses, so fields are counted after its last `)`.
fn parse_stat(pid: i32, text: &str) -> Option<ProcInfo> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is field 3 (state); pgrp is field 5; starttime is field 22.
    let state = fields.first()?.chars().next()?;
    let pgrp = fields.get(2)?.parse().ok()?;
    let ticks: i64 = fields.get(19)?.parse().ok()?;
    let (boot, hertz) = boot_clock()?;
    Some(ProcInfo {
        pid,
        state,
        pgrp,
        start_unix: boot + ticks / hertz,
    })
}

/// Boot time (Unix seconds) and clock ticks per second, read once.
fn boot_clock() -> Option<(i64, i64)> {
    static CLOCK: OnceLock<Option<(i64, i64)>> = OnceLock::new();
    *CLOCK.get_or_init(|| {
        let stat = fs::read_to_string("/proc/stat").ok()?;
        let boot = stat
            .lines()
            .find_map(|line| line.strip_prefix("btime "))?
            .trim()
            .parse()
            .ok()?;
        let hertz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
            .ok()
            .flatten()
            .filter(|hz| *hz > 0)?;
        Some((boot, hertz))
    })
}

/// Whether `pid` exists at all (a zombie counts: `kill` reaches it).
fn exists(pid: i32) -> bool {
    pid > 0 && matches!(kill(Pid::from_raw(pid), None), Ok(()) | Err(Errno::EPERM))
}

/// Is the wrapper that wrote a sidecar with this `pid` and `started_ts` still
/// running? A zombie, or a process that started after `started_ts`, is not it.
pub fn wrapper_alive(pid: i32, started_ts: i64) -> bool {
    if !exists(pid) {
        return false;
    }
    match proc_info(pid) {
        Some(info) => !info.is_zombie() && info.start_unix <= started_ts + CLOCK_SLACK_SECS,
        // The pid exists but its /proc entry cannot be read (no /proc, or
        // `hidepid`): it cannot be disproved, so it is not called dead.
        None => true,
    }
}

/// Every live (non-zombie) process, read from `/proc` in one pass.
#[derive(Debug, Default)]
pub struct ProcTable {
    processes: Vec<ProcInfo>,
}

impl ProcTable {
    pub fn scan() -> ProcTable {
        let Ok(entries) = fs::read_dir("/proc") else {
            return ProcTable::default();
        };
        let processes = entries
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
            .filter_map(proc_info)
            .filter(|info| !info.is_zombie())
            .collect();
        ProcTable { processes }
    }

    /// Live members of group `pgid`.
    pub fn members(&self, pgid: i32) -> Vec<ProcInfo> {
        self.processes
            .iter()
            .filter(|info| info.pgrp == pgid)
            .copied()
            .collect()
    }
}

/// What is left of a recorded process group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Group {
    /// No live process is in the group.
    Gone,
    /// The group is the one the sidecar recorded; these pids are in it.
    Ours(Vec<i32>),
    /// The group id is in use by processes that cannot be the recorded ones.
    Foreign(String),
}

/// Longest `comm` Linux keeps (`TASK_COMM_LEN` − 1).
const COMM_LEN: usize = 15;
/// Most bytes of `/proc/<pid>/cmdline` read (Linux caps argv far higher, but
/// a recorded argv is a CLI's flags, never a document).
const CMDLINE_LIMIT: u64 = 256 * 1024;

/// The last path component of a program name.
pub fn base_name(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// Whether `cmdline` (the leader's argv, from `/proc`) and `comm` describe the
/// command recorded as `argv`. Accepted: the same argv; the recorded
/// arguments at the end with the program's name before them (a script run
/// by its interpreter, a program found on `PATH`); or the program's name as
/// `comm` or first word (a CLI that retitled itself, as node CLIs do).
pub fn command_matches(argv: &[String], cmdline: &[String], comm: &str) -> bool {
    let Some((program, recorded_args)) = argv.split_first() else {
        return false;
    };
    let name = base_name(program);
    if name.is_empty() || cmdline.is_empty() {
        return false;
    }
    if cmdline == argv {
        return true;
    }
    if cmdline.len() > recorded_args.len() {
        let (head, tail) = cmdline.split_at(cmdline.len() - recorded_args.len());
        if tail == recorded_args && head.iter().any(|word| base_name(word) == name) {
            return true;
        }
    }
    let short: String = name.chars().take(COMM_LEN).collect();
    (comm == short && name.len() <= COMM_LEN * 4) || base_name(&cmdline[0]) == name
}

/// Whether process `pid` is an okstra wrapper started on the prompt at
/// `prompt`: its program is okstra's (`okstra provider-exec`,
/// `okstra-provider-exec`, an `okstra-<provider>-exec` link) and the prompt
/// is one of its arguments. A record or a sidecar only names a pid and a
/// time, which anyone who can write the run's files can copy from another
/// process: the command line is what okstra started. A process whose
/// command cannot be read (another user's, `hidepid`) cannot be disproved,
/// and counts; okstra could not signal it anyway.
pub fn runs_wrapper_of(pid: i32, prompt: &std::path::Path) -> bool {
    let Some((cmdline, _)) = proc_command(pid) else {
        return true;
    };
    let Some((program, args)) = cmdline.split_first() else {
        return false;
    };
    let prompt = prompt.to_string_lossy();
    base_name(program).starts_with("okstra") && args.iter().any(|arg| **arg == *prompt)
}

/// `/proc/<pid>/cmdline` split at NULs, and `/proc/<pid>/comm`.
pub fn proc_command(pid: i32) -> Option<(Vec<String>, String)> {
    use std::io::Read;
    let mut bytes = Vec::new();
    fs::File::open(format!("/proc/{pid}/cmdline"))
        .ok()?
        .take(CMDLINE_LIMIT)
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.last() == Some(&0) {
        bytes.pop();
    }
    let cmdline = bytes
        .split(|b| *b == 0)
        .map(|word| String::from_utf8_lossy(word).into_owned())
        .collect();
    let comm = fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    Some((cmdline, comm.trim_end_matches('\n').to_owned()))
}

/// The working folder of process `pid` (`/proc/<pid>/cwd`), where it can
/// be read.
pub fn proc_cwd(pid: i32) -> Option<std::path::PathBuf> {
    fs::read_link(format!("/proc/{pid}/cwd")).ok()
}

/// Whether process `pid` runs the same program file as this process
/// (`/proc/<pid>/exe`), where that can be read.
pub fn runs_this_program(pid: i32) -> bool {
    let theirs = fs::read_link(format!("/proc/{pid}/exe"));
    let ours = std::env::current_exe();
    matches!((theirs, ours), (Ok(theirs), Ok(ours)) if theirs == ours)
}

/// Whether process `pid` has the file at `path` open (one of its
/// descriptors is that file: same device and inode), where its descriptors
/// can be read (its owner's, or root).
pub fn holds_open(pid: i32, path: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(wanted) = fs::metadata(path) else {
        return false;
    };
    let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        // `metadata` follows the descriptor's link to the open file itself.
        fs::metadata(fd.path())
            .is_ok_and(|meta| meta.dev() == wanted.dev() && meta.ino() == wanted.ino())
    })
}

/// Identify group `pgid` of a sidecar that recorded `started_ts` and the
/// CLI's `argv` (`None` when the sidecar has none).
pub fn identify_group(
    table: &ProcTable,
    pgid: i32,
    started_ts: i64,
    argv: Option<&[String]>,
) -> Group {
    let members = table.members(pgid);
    if members.is_empty() {
        return Group::Gone;
    }
    let pids = members.iter().map(|m| m.pid).collect();
    if let Some(leader) = members.iter().find(|m| m.pid == pgid) {
        let earliest = started_ts - CLOCK_SLACK_SECS;
        let latest = started_ts + SPAWN_WINDOW_SECS;
        if (earliest..=latest).contains(&leader.start_unix) {
            let Some(argv) = argv.filter(|argv| !argv.is_empty()) else {
                return Group::Foreign(format!(
                    "the sidecar records no `argv` to check group leader {pgid} against"
                ));
            };
            return match proc_command(pgid) {
                Some((cmdline, comm)) if command_matches(argv, &cmdline, &comm) => {
                    Group::Ours(pids)
                }
                Some((cmdline, _)) => Group::Foreign(format!(
                    "group leader {pgid} runs `{}`, not the recorded `{}`",
                    crate::fsread::escape(&cmdline.join(" ")),
                    crate::fsread::escape(&argv.join(" "))
                )),
                None => {
                    Group::Foreign(format!("the command of group leader {pgid} cannot be read"))
                }
            };
        }
        return Group::Foreign(format!(
            "group leader {pgid} started at {} but the sidecar started at {started_ts}",
            leader.start_unix
        ));
    }
    // Leader gone, members remain: the id is still held by this group, so
    // it was never reissued; its members must be younger than the record.
    match members
        .iter()
        .find(|m| m.start_unix < started_ts - CLOCK_SLACK_SECS)
    {
        Some(old) => Group::Foreign(format!(
            "process {} in group {pgid} started at {}, before the sidecar's {started_ts}",
            old.pid, old.start_unix
        )),
        None => Group::Ours(pids),
    }
}

/// How a stop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// The group was already gone when we looked.
    AlreadyGone,
    /// SIGTERM was enough.
    Terminated,
    /// SIGKILL was needed after the grace period.
    Killed,
    /// Something survived even SIGKILL (e.g. stuck in the kernel).
    Survived,
}

/// Send `signal` to group `pgid`: `Ok(true)` if anyone received it,
/// `Ok(false)` when there is no such group (`ESRCH`: already gone, which is
/// not a failure).
pub fn signal(pgid: i32, signal: Signal) -> Result<bool, Errno> {
    match killpg(Pid::from_raw(pgid), signal) {
        Ok(()) => Ok(true),
        Err(Errno::ESRCH) => Ok(false),
        Err(err) => Err(err),
    }
}

/// Whether group `pgid` has a member that is not a zombie. `killpg(_, 0)`
/// also reaches zombies, so a yes is checked against `/proc` (where there
/// is one).
pub fn has_live_members(pgid: i32) -> bool {
    if killpg(Pid::from_raw(pgid), None).is_err() {
        return false;
    }
    !cfg!(target_os = "linux") || !ProcTable::scan().members(pgid).is_empty()
}

/// Stop a process group: SIGTERM, up to `grace` for it to vanish, SIGKILL.
/// A group already gone is success.
pub fn stop_group(pgid: i32, grace: Duration) -> Result<Stopped, Errno> {
    if !signal(pgid, Signal::SIGTERM)? {
        return Ok(Stopped::AlreadyGone);
    }
    if wait_gone(pgid, grace) {
        return Ok(Stopped::Terminated);
    }
    if !signal(pgid, Signal::SIGKILL)? {
        return Ok(Stopped::Killed);
    }
    if wait_gone(pgid, KILL_WAIT) {
        Ok(Stopped::Killed)
    } else {
        Ok(Stopped::Survived)
    }
}

/// This process's current children, as the kernel lists them per thread in
/// `/proc/self/task/<tid>/children` (Linux; empty elsewhere). In a
/// sub-reaper that includes orphans adopted from its children's trees.
pub fn children_of_this_process() -> Vec<i32> {
    let Ok(tasks) = fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for task in tasks.flatten() {
        let Ok(list) = fs::read_to_string(task.path().join("children")) else {
            continue;
        };
        found.extend(
            list.split_ascii_whitespace()
                .filter_map(|pid| pid.parse::<i32>().ok()),
        );
    }
    found
}

/// SIGKILL an adopted orphan `pid` — with its whole group when it leads one
/// (a `setsid` daemon does) — and reap it.
pub fn kill_adopted(pid: i32) {
    let target = Pid::from_raw(pid);
    if proc_info(pid).is_some_and(|info| info.pgrp == pid) {
        let _ = signal(pid, Signal::SIGKILL);
    }
    let _ = kill(target, Signal::SIGKILL);
    let _ = nix::sys::wait::waitpid(target, None);
}

/// Wait until group `pgid` has no live member, at most `limit`.
fn wait_gone(pgid: i32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if ProcTable::scan().members(pgid).is_empty() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let line =
            "4242 (odd (name) x) S 1 4240 4240 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 500 0 0";
        let info = parse_stat(4242, line).unwrap();
        assert_eq!(info.state, 'S');
        assert_eq!(info.pgrp, 4240);
        let (boot, hertz) = boot_clock().unwrap();
        assert_eq!(info.start_unix, boot + 500 / hertz);
    }

    #[test]
    fn our_own_process_is_alive_and_recorded_start_matters() {
        let pid = i32::try_from(std::process::id()).unwrap();
        let now = crate::clock::unix_now();
        assert!(wrapper_alive(pid, now));
        // A record from before we started cannot be us.
        let info = proc_info(pid).unwrap();
        assert!(!wrapper_alive(pid, info.start_unix - 10));
    }

    #[test]
    fn a_leader_that_started_long_after_the_record_is_foreign() {
        let pid = i32::try_from(std::process::id()).unwrap();
        let info = proc_info(pid).unwrap();
        let table = ProcTable {
            processes: vec![ProcInfo { pgrp: pid, ..info }],
        };
        let (cmdline, _) = proc_command(pid).unwrap();
        assert_eq!(
            identify_group(&table, pid, info.start_unix, Some(&cmdline)),
            Group::Ours(vec![pid])
        );
        assert!(matches!(
            identify_group(&table, pid, info.start_unix - 3600, Some(&cmdline)),
            Group::Foreign(_)
        ));
        assert!(matches!(
            identify_group(&table, pid, info.start_unix, None),
            Group::Foreign(_)
        ));
        let other = vec!["codex".to_owned(), "exec".to_owned()];
        assert!(matches!(
            identify_group(&table, pid, info.start_unix, Some(&other)),
            Group::Foreign(_)
        ));
        assert_eq!(
            identify_group(&table, pid + 1, info.start_unix, None),
            Group::Gone
        );
    }

    #[test]
    fn commands_match_through_interpreters_paths_and_retitling() {
        let words = |text: &str| -> Vec<String> { text.split(' ').map(str::to_owned).collect() };
        let argv = words("/usr/bin/codex exec --json -");
        assert!(command_matches(&argv, &argv, "codex"));
        let script = words("/bin/sh /usr/bin/codex exec --json -");
        assert!(command_matches(&argv, &script, "sh"));
        assert!(command_matches(&argv, &words("codex"), "codex"));
        assert!(!command_matches(&argv, &words("sleep 300"), "sleep"));
        assert!(!command_matches(
            &argv,
            &words("/bin/sh -c exec --json -"),
            "sh"
        ));
        assert!(!command_matches(&[], &argv, "codex"));
        assert!(!command_matches(&argv, &[], "codex"));
    }
}
