//! Run the planned CLI: spawn it in its own process group, copy its merged
//! output to our stdout and the log, watch for silence and signals, stop the
//! whole group, and leave a terminal status sidecar behind whatever happens.
//!
//! Layout: a current-thread tokio runtime on the main thread owns the child,
//! the status and every decision (`select!` over the child's exit, the idle
//! deadline and SIGTERM/SIGINT/SIGHUP). The byte copying runs on a plain
//! thread with blocking reads and writes, so a slow or closed reader of our
//! stdout can never stall the watchdog or signal handling, and the copy costs
//! no wake-ups beyond the reads themselves. A second thread feeds the prompt
//! to stdin-reading CLIs.
//!
//! Nothing here waits unboundedly on anything the child controls: after the
//! direct child is reaped, what is left of its group (and any orphan that
//! re-parented to us, e.g. a `setsid` grandchild) is stopped, and draining
//! the pipe is bounded, so a leftover holding stdout cannot keep us alive.
//! Leftovers that die become *our* zombies (we adopt orphans), and a zombie
//! still counts as a group member for `killpg(group, 0)`: so they are reaped
//! first and only live members keep the wait going, which ends it within
//! milliseconds of the last one's death instead of after the full grace.
//!
//! A wrapper killed with SIGKILL cannot stop anything itself. The CLI gets a
//! parent-death signal; the rest of its group is stopped by the guardian
//! (`guardian.rs`): a process forked once the CLI has run for 20 ms, that
//! blocks on a pipe from us and SIGKILLs the group when the pipe closes
//! without our "done" byte.

use nix::libc;
use std::fs::File;
use std::io;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[cfg(target_os = "linux")]
use nix::sys::prctl;
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::waitpid;
use nix::unistd::Pid;
use tokio::process::Child;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::oneshot;
use tokio::time::{Instant, sleep, timeout};

use super::copy::{CopyReport, copy_output};
use super::guardian::{self, Guardian};
use super::provider::Stdin;
use super::status::{self, Status};
use super::watchdog::{Activity, Watchdog};
use super::{PROGRAM, Ready};
use crate::process_group::{self, GRACE};
use crate::vocab::Reason;
use crate::vocab::Stage;
use crate::vocab::TerminatedBy;
use crate::{child, exit};

/// How long we keep draining the pipe after the group is gone, for holders we
/// cannot signal (not in the group and not our descendants).
const DRAIN_LIMIT: Duration = Duration::from_secs(2);
/// How often we look whether leftovers of the group have gone (only while
/// stopping them; never while the child runs): first soon (a leftover
/// usually dies on SIGTERM at once), then doubling up to the longest.
const LEFTOVER_POLL_FIRST: Duration = Duration::from_millis(2);
const LEFTOVER_POLL_LONGEST: Duration = Duration::from_millis(50);
/// Run the supervisor to completion; returns our exit code.
pub fn run(ready: Ready) -> u8 {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    match runtime {
        Ok(runtime) => runtime.block_on(supervise(ready)),
        Err(err) => {
            PROGRAM.error(format_args!("failed to start the async runtime: {err}"));
            exit::EXEC_OS_ERROR
        }
    }
}

/// The signals that make us stop the child, as a stream.
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> io::Result<Self> {
        Ok(Self {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    async fn recv(&mut self) -> Signal {
        tokio::select! {
            _ = self.term.recv() => Signal::SIGTERM,
            _ = self.int.recv() => Signal::SIGINT,
            _ = self.hup.recv() => Signal::SIGHUP,
        }
    }
}

async fn supervise(ready: Ready) -> u8 {
    let started = Instant::now();
    let inv = &ready.invocation;
    let plan = &ready.plan;
    let (sidecar, log_path) =
        crate::run::layout::attempt_files(&ready.prompt_as_given, ready.attempt);

    // Handlers first: from the moment a sidecar exists, a signal must end in
    // a terminal sidecar, never in the default "die silently".
    let mut signals = match Signals::install() {
        Ok(signals) => signals,
        Err(err) => {
            PROGRAM.error(format_args!("failed to install signal handlers: {err}"));
            return exit::EXEC_OS_ERROR;
        }
    };
    // Orphans of the CLI (a `setsid` grandchild included) re-parent to us
    // instead of init, so we can find and stop them after the CLI exits.
    #[cfg(target_os = "linux")]
    if let Err(err) = prctl::set_child_subreaper(true) {
        PROGRAM.warning(format_args!("cannot adopt orphans of the CLI: {err}"));
    }

    let mut status = Status {
        schema_version: status::SCHEMA_VERSION,
        wrapper: inv.provider.wrapper(),
        provider: inv.provider.as_str().to_owned(),
        model: inv.model.to_string_lossy().into_owned(),
        role: inv.role.clone(),
        pid: std::process::id(),
        started_ts: status::unix_now(),
        log_path: absolute(&log_path),
        prompt_path: inv.prompt_path.clone(),
        cwd: plan.cwd.clone(),
        argv: std::iter::once(plan.program.to_owned())
            .chain(
                plan.args
                    .iter()
                    .map(|arg| arg.to_string_lossy().into_owned()),
            )
            .collect(),
        idle_timeout_seconds: inv.idle_timeout_secs.unwrap_or(0),
        cli_path: Some(ready.program.clone()),
        cli_version: Some(ready.cli_version.clone()),
        ..Status::default()
    };
    if let Err(err) = write_status(&status, &sidecar) {
        PROGRAM.error(format_args!(
            "cannot write status `{}`, not starting: {err}",
            sidecar.display()
        ));
        return exit::EXEC_CANT_CREATE;
    }
    let finish = |status: &mut Status, code: u8, reason: Reason, error: Option<String>| {
        if let Some(error) = &error {
            PROGRAM.error(error);
        }
        status.stage = Stage::Exited;
        status.exit_code = Some(code);
        status.reason = Some(reason);
        status.ended_ts = Some(status::unix_now());
        status.duration_ms = Some(millis(started.elapsed()));
        status.error = error.or(status.error.take());
        if let Err(err) = write_status(status, &sidecar) {
            // Reported, never turned into another exit code.
            PROGRAM.error(format_args!(
                "cannot write final status `{}`: {err}",
                sidecar.display()
            ));
        }
        code
    };

    let log = match create_log(&log_path) {
        Ok(log) => log,
        Err(err) => {
            let error = format!("cannot create log `{}`: {err}", log_path.display());
            return finish(
                &mut status,
                exit::EXEC_CANT_CREATE,
                Reason::LogUnavailable,
                Some(error),
            );
        }
    };
    let setup = Setup::new(plan.stdin);
    let (setup, child_stdout) = match setup {
        Ok(pair) => pair,
        Err(err) => {
            let error = format!("cannot create pipes for the CLI: {err}");
            return finish(
                &mut status,
                exit::EXEC_OS_ERROR,
                Reason::WrapperError,
                Some(error),
            );
        }
    };

    let mut environment = plan.environment(std::env::vars_os());
    // Under Landlock the helper confines itself, then becomes the CLI (same
    // pid); the scratch folder lives until we return.
    let contained = if ready.confine {
        match super::contain::prepare(&ready, &mut environment) {
            Ok(contained) => contained,
            Err(error) => {
                return finish(
                    &mut status,
                    exit::EXEC_CANT_CREATE,
                    Reason::WrapperError,
                    Some(error),
                );
            }
        }
    } else {
        None
    };
    let mut builder = if let Some(contained) = &contained {
        let mut builder = child::Builder::new(&contained.program);
        builder.args(&contained.args);
        builder
    } else {
        let mut builder = child::Builder::new(&ready.program);
        builder.arg0(plan.program).args(&plan.args);
        builder
    };
    builder
        .current_dir(&plan.cwd)
        .environment(environment)
        .stdin(setup.child_stdin)
        .stdout(setup.child_stdout_for_stdout)
        .stderr(setup.child_stdout_for_stderr)
        .die_with_parent();
    let mut command = builder.into_tokio();
    command.kill_on_drop(true);
    let spawned = command.spawn();
    // Our copies of the pipe's write end must close now, or EOF never comes.
    drop(command);
    let mut child = match spawned {
        Ok(child) => child,
        Err(err) => {
            let code = if err.kind() == io::ErrorKind::NotFound {
                exit::NOT_FOUND
            } else {
                exit::CANNOT_EXECUTE
            };
            let error = format!("cannot start `{}`: {err}", ready.program.display());
            return finish(&mut status, code, Reason::SpawnFailed, Some(error));
        }
    };
    let Some(group) = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw)
    else {
        // Only possible if the child was already reaped, which nobody did yet.
        let error = "the CLI vanished before its pid was known".to_owned();
        return finish(
            &mut status,
            exit::EXEC_OS_ERROR,
            Reason::WrapperError,
            Some(error),
        );
    };
    status.child_pid = u32::try_from(group.as_raw()).ok();
    status.pgid = Some(group.as_raw());
    if let Err(err) = write_status(&status, &sidecar) {
        PROGRAM.warning(format_args!(
            "cannot update status `{}`: {err}",
            sidecar.display()
        ));
    }

    if let Some(writer) = setup.prompt_writer {
        feed_prompt(ready.prompt, writer);
    }
    let activity = Activity::new(Instant::now());
    let copied = Arc::new(AtomicU64::new(0));
    let (report_tx, mut report_rx) = oneshot::channel();
    {
        let activity = Arc::clone(&activity);
        let copied = Arc::clone(&copied);
        std::thread::Builder::new()
            .name("copy-output".into())
            .spawn(move || {
                let report = copy_output(child_stdout, log, &activity, &copied);
                let _ = report_tx.send(report);
            })
            .map_err(|err| PROGRAM.error(format_args!("cannot start the output copier: {err}")))
            .ok();
    }

    let watchdog = Watchdog::new(inv.idle_timeout_secs.map(Duration::from_secs), activity);
    let mut guardian = None;
    let (exit_status, outcome) = tokio::select! {
        waited = wait_guarded(&mut child, group, &mut guardian) => (waited, Outcome::Exited),
        idle = watchdog.expired() => {
            // Recorded at the moment of the decision, not after the kill.
            status.timeout = Some(true);
            status.idle_at_ts = Some(status::unix_now());
            status.idle_seconds = Some(idle.silent_for.as_secs());
            status.terminated_by = Some(TerminatedBy::IdleWatchdog);
            let (waited, killed) = stop(&mut child, group, Signal::SIGTERM, &mut signals).await;
            status.killed = Some(killed);
            (waited, Outcome::Idle)
        }
        received = signals.recv() => {
            status.terminated_by = Some(TerminatedBy::Signal);
            status.signal = Some(received.as_str().to_owned());
            // Forward the same signal, as a terminal would have done.
            let (waited, killed) = stop(&mut child, group, received, &mut signals).await;
            status.killed = Some(killed);
            (waited, Outcome::Signalled(received))
        }
    };

    let drained = stop_leftovers(group, &mut report_rx, guardian.as_ref().map(Guardian::pid)).await;
    // Leftovers are stopped: the guardian has nothing left to do.
    if let Some(guardian) = guardian {
        guardian.release();
    }
    status.output_bytes = Some(copied.load(Ordering::Relaxed));
    match drained {
        Some(report) => {
            status.stdout_closed = report.stdout_closed.then_some(true);
            if !report.problems.is_empty() {
                status.error = Some(report.problems.join("; "));
            }
        }
        None => status.drain_timed_out = Some(true),
    }

    let child_code = match exit_status {
        Ok(exit_status) => {
            if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&exit_status) {
                status.child_signal = Some(
                    Signal::try_from(signal)
                        .map_or_else(|_| format!("SIG{signal}"), |s| s.as_str().to_owned()),
                );
            }
            code_of(exit_status)
        }
        Err(err) => {
            status.error = Some(format!("cannot wait for the CLI: {err}"));
            exit::EXEC_OS_ERROR
        }
    };
    match outcome {
        Outcome::Exited => finish(&mut status, child_code, Reason::Exited, None),
        Outcome::Idle => finish(&mut status, exit::TIMED_OUT, Reason::IdleTimeout, None),
        Outcome::Signalled(received) => finish(
            &mut status,
            exit::from_signal(received as i32),
            Reason::Signal,
            None,
        ),
    }
}

/// Wait for the CLI; if it is still running after [`guardian::START_AFTER`],
/// start the guardian for its group (see `guardian.rs`) and keep waiting.
async fn wait_guarded(
    child: &mut Child,
    group: Pid,
    guardian: &mut Option<Guardian>,
) -> io::Result<ExitStatus> {
    tokio::select! {
        waited = child.wait() => return waited,
        () = sleep(guardian::START_AFTER) => {}
    }
    *guardian = Guardian::start(group);
    child.wait().await
}

/// Why the supervision loop ended.
#[derive(Debug, Clone, Copy)]
enum Outcome {
    Exited,
    Idle,
    Signalled(Signal),
}

/// The pipes between us and the CLI.
struct Setup {
    child_stdin: Stdio,
    child_stdout_for_stdout: Stdio,
    child_stdout_for_stderr: Stdio,
    prompt_writer: Option<io::PipeWriter>,
}

impl Setup {
    /// One pipe for stdout and stderr (merged, in order) and, for stdin
    /// providers, one for the prompt.
    fn new(stdin: Stdin) -> io::Result<(Self, io::PipeReader)> {
        let (reader, writer) = io::pipe()?;
        let (child_stdin, prompt_writer) = match stdin {
            Stdin::Prompt => {
                let (prompt_reader, prompt_writer) = io::pipe()?;
                (Stdio::from(prompt_reader), Some(prompt_writer))
            }
            Stdin::Null => (Stdio::null(), None),
        };
        let setup = Self {
            child_stdin,
            child_stdout_for_stdout: Stdio::from(writer.try_clone()?),
            child_stdout_for_stderr: Stdio::from(writer),
            prompt_writer,
        };
        Ok((setup, reader))
    }
}

/// Copy the prompt file to the CLI's stdin, then close it (EOF). A CLI that
/// exits without reading is not an error.
fn feed_prompt(mut prompt: File, mut writer: io::PipeWriter) {
    let spawned = std::thread::Builder::new()
        .name("feed-prompt".into())
        .spawn(move || match io::copy(&mut prompt, &mut writer) {
            Ok(_) => {}
            Err(err) if err.kind() == io::ErrorKind::BrokenPipe => {}
            Err(err) => PROGRAM.warning(format_args!("prompt not fully delivered: {err}")),
        });
    if let Err(err) = spawned {
        PROGRAM.error(format_args!("cannot start the prompt feeder: {err}"));
    }
}

/// Stop the group: `first` now, SIGKILL after [`GRACE`] (or at once on a
/// further signal to us). Returns the child's status and whether SIGKILL was needed.
async fn stop(
    child: &mut Child,
    group: Pid,
    first: Signal,
    signals: &mut Signals,
) -> (io::Result<ExitStatus>, bool) {
    signal_group(group, first);
    tokio::select! {
        waited = child.wait() => return (waited, false),
        () = sleep(GRACE) => {}
        _ = signals.recv() => {}
    }
    signal_group(group, Signal::SIGKILL);
    (child.wait().await, true)
}

/// After the CLI is reaped: stop what is left of its group and any orphans
/// that re-parented to us, and wait (bounded) for the copy thread's EOF.
/// `None` means the pipe was still held open when we gave up.
async fn stop_leftovers(
    group: Pid,
    report: &mut oneshot::Receiver<CopyReport>,
    guardian: Option<Pid>,
) -> Option<CopyReport> {
    let group_signalled = signal_group(group, Signal::SIGTERM);
    let adopted = orphans(guardian);
    for &orphan in &adopted {
        let _ = kill(orphan, Signal::SIGTERM);
    }
    if group_signalled || !adopted.is_empty() {
        let deadline = Instant::now() + GRACE;
        let mut poll = LEFTOVER_POLL_FIRST;
        loop {
            // Our zombies first: they would keep the group "alive".
            let all_reaped = orphans(guardian).into_iter().all(reap);
            if all_reaped && !process_group::has_live_members(group.as_raw()) {
                break;
            }
            if Instant::now() >= deadline {
                signal_group(group, Signal::SIGKILL);
                break;
            }
            sleep(poll).await;
            poll = (poll * 2).min(LEFTOVER_POLL_LONGEST);
        }
    }
    // SIGKILL whatever re-parented to us by now (the killed ones' children
    // included) and reap it, so no zombie or stray writer survives us.
    for _ in 0..4 {
        let found = orphans(guardian);
        if found.is_empty() {
            break;
        }
        for pid in found {
            let _ = kill(pid, Signal::SIGKILL);
            let _ = waitpid(pid, None);
        }
    }
    timeout(DRAIN_LIMIT, report).await.ok().and_then(Result::ok)
}

/// Write the sidecar atomically; when that fails (a full disk has no room
/// for the temp file), overwrite it in place: its blocks are already
/// allocated, so a terminal record still lands where anything can.
fn write_status(status: &Status, path: &std::path::Path) -> io::Result<()> {
    let Err(err) = status.write(path) else {
        return Ok(());
    };
    let Ok(mut bytes) = serde_json::to_vec(status) else {
        return Err(err);
    };
    bytes.push(b'\n');
    let in_place = || -> io::Result<()> {
        use nix::fcntl::OFlag;
        use std::os::unix::fs::FileExt;
        let file = crate::beneath::open(
            path,
            OFlag::O_WRONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK,
            nix::sys::stat::Mode::empty(),
        )?;
        crate::fsread::check_regular(&file, path).map_err(io::Error::other)?;
        file.write_all_at(&bytes, 0)?;
        file.set_len(bytes.len() as u64)?;
        file.sync_data()
    };
    in_place().map_err(|_| err)
}

/// Create (or truncate) the log without following a symlink out of the run
/// and without blocking on a FIFO. A symlink in its place (planted, or left
/// by someone) is removed and the log created fresh: the file it pointed to
/// is never touched.
fn create_log(path: &std::path::Path) -> io::Result<File> {
    use nix::fcntl::OFlag;
    let open = || {
        crate::beneath::open(
            path,
            OFlag::O_WRONLY
                | OFlag::O_CREAT
                | OFlag::O_TRUNC
                | OFlag::O_NOFOLLOW
                | OFlag::O_NONBLOCK,
            nix::sys::stat::Mode::from_bits_truncate(0o666),
        )
    };
    let file = match open() {
        // The link itself goes (never its target), and only when the folder
        // it sits in is reached through no link.
        Err(err) if err.raw_os_error() == Some(libc::ELOOP) => {
            crate::beneath::unlink(path)?;
            open()?
        }
        other => other?,
    };
    crate::fsread::check_regular(&file, path).map_err(io::Error::other)?;
    Ok(file)
}

/// Send `signal` to the group; `true` if anyone received it (`ESRCH`, "no
/// such group", counts as done, not as a failure).
fn signal_group(group: Pid, signal: Signal) -> bool {
    match process_group::signal(group.as_raw(), signal) {
        Ok(delivered) => delivered,
        Err(err) => {
            PROGRAM.warning(format_args!(
                "cannot send {signal} to process group {group}: {err}"
            ));
            false
        }
    }
}

/// Reap `pid` if it has exited; `true` once it is gone.
fn reap(pid: Pid) -> bool {
    use nix::sys::wait::{WaitPidFlag, WaitStatus};
    !matches!(
        waitpid(pid, Some(WaitPidFlag::WNOHANG)),
        Ok(WaitStatus::StillAlive)
    )
}

/// Our current children other than the CLI (already reaped when this is
/// called) and the guardian: orphans of its tree adopted through
/// `PR_SET_CHILD_SUBREAPER`.
fn orphans(guardian: Option<Pid>) -> Vec<Pid> {
    process_group::children_of_this_process()
        .into_iter()
        .map(Pid::from_raw)
        .filter(|pid| Some(*pid) != guardian)
        .collect()
}

/// The shell's view of a status: the code, or 128+N for signal N; never negative.
fn code_of(status: ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code & 0xff).unwrap_or(u8::MAX),
        (None, Some(signal)) => exit::from_signal(signal),
        (None, None) => exit::EXEC_OS_ERROR,
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn absolute(path: &std::path::Path) -> std::path::PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use super::*;

    #[test]
    fn exit_codes_follow_the_shell() {
        assert_eq!(code_of(ExitStatus::from_raw(0)), 0);
        assert_eq!(code_of(ExitStatus::from_raw(3 << 8)), 3);
        assert_eq!(code_of(ExitStatus::from_raw(255 << 8)), 255);
        // Killed by SIGKILL (9) and SIGSEGV (11): 128+N, never negative.
        assert_eq!(code_of(ExitStatus::from_raw(9)), 137);
        assert_eq!(code_of(ExitStatus::from_raw(11)), 139);
    }
}
