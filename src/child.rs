//! One way to start a child process, and one bounded run of it.
//!
//! [`Builder`] makes every child okstra starts — the provider CLI under
//! provider-exec, the engine's wrappers, the doctor's probes, git — the same
//! way: it leads a process group of its own (a terminal's Ctrl-C reaches
//! okstra only, and okstra stops the whole group), the host session's
//! markers are gone from its environment (a nested `claude` that inherits
//! `CLAUDECODE` hangs), and its stdin is `/dev/null` unless the caller gives
//! one (a CLI that waits on a stdin nobody closes never ends). On request the
//! kernel SIGKILLs it when its parent dies (`PR_SET_PDEATHSIG`), the one
//! `unsafe` this needs living in [`Builder::die_with_parent`].
//!
//! [`run_captured`] runs one child to its end: bounded output (read on
//! threads, so a full pipe never stalls the child), a wall-time limit after
//! which the whole group is stopped (SIGTERM, [`GRACE`], SIGKILL, through
//! `process_group`), and what is left of the group killed afterwards. In a
//! [`Subreaper`] it also stops what the child left *outside* its group: a
//! daemon started with `setsid` re-parents to us instead of init, and is
//! found and killed.
//!
//! Not here: the supervisor's own loop (idle watchdog, signal forwarding,
//! guardian) in `provider_exec::supervise`, which only builds its child here.

use std::ffi::OsStr;
use std::io::{self, Read, Write};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::catalog::HOST_SESSION_MARKERS;
use crate::process_group::{self, GRACE};

/// How long a finished run waits for its output readers after the group is
/// gone: a holder we cannot signal (not in the group, not adopted) would
/// otherwise keep the pipe open for ever.
const DRAIN_LIMIT: Duration = Duration::from_secs(2);

/// A child process being described; [`Builder::into_std`] or
/// [`Builder::into_tokio`] turns it into a command to spawn.
#[derive(Debug)]
pub struct Builder {
    command: Command,
    die_with_parent: bool,
}

impl Builder {
    /// `program` in a group of its own, stdin `/dev/null`, the environment
    /// inherited minus [`HOST_SESSION_MARKERS`].
    pub fn new(program: impl AsRef<OsStr>) -> Builder {
        let mut command = Command::new(program);
        command.stdin(Stdio::null());
        Builder {
            command,
            die_with_parent: false,
        }
    }

    /// argv\[0] as the child sees it.
    pub fn arg0(&mut self, arg0: impl AsRef<OsStr>) -> &mut Builder {
        std::os::unix::process::CommandExt::arg0(&mut self.command, arg0);
        self
    }

    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Builder {
        self.command.arg(arg);
        self
    }

    pub fn args<I, S>(&mut self, args: I) -> &mut Builder
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command.args(args);
        self
    }

    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Builder {
        self.command.current_dir(dir);
        self
    }

    pub fn env(&mut self, name: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Builder {
        self.command.env(name, value);
        self
    }

    pub fn env_remove(&mut self, name: impl AsRef<OsStr>) -> &mut Builder {
        self.command.env_remove(name);
        self
    }

    /// Exactly these variables and no inherited one (the host-session
    /// markers are removed from them all the same).
    pub fn environment<I, K, V>(&mut self, vars: I) -> &mut Builder
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.command.env_clear().envs(vars);
        self
    }

    pub fn stdin(&mut self, stdin: impl Into<Stdio>) -> &mut Builder {
        self.command.stdin(stdin);
        self
    }

    pub fn stdout(&mut self, stdout: impl Into<Stdio>) -> &mut Builder {
        self.command.stdout(stdout);
        self
    }

    pub fn stderr(&mut self, stderr: impl Into<Stdio>) -> &mut Builder {
        self.command.stderr(stderr);
        self
    }

    /// Have the kernel SIGKILL the child when the thread that spawned it
    /// dies, even by SIGKILL (Linux; elsewhere nothing happens). A child
    /// whose parent died before the signal was armed refuses to start.
    pub fn die_with_parent(&mut self) -> &mut Builder {
        self.die_with_parent = true;
        self
    }

    /// The finished `std` command: its own group, the markers removed.
    pub fn into_std(mut self) -> Command {
        use std::os::unix::process::CommandExt;
        for name in HOST_SESSION_MARKERS {
            self.command.env_remove(name);
        }
        self.command.process_group(0);
        if self.die_with_parent {
            arm_parent_death_signal(&mut self.command);
        }
        self.command
    }

    /// The same as a tokio command (the supervisor's and the engine's).
    pub fn into_tokio(self) -> tokio::process::Command {
        tokio::process::Command::from(self.into_std())
    }
}

/// Elsewhere there is no parent-death signal; the sidecar's `pgid` remains.
#[cfg(not(target_os = "linux"))]
fn arm_parent_death_signal(_command: &mut Command) {}

/// Have the kernel SIGKILL the child if its parent dies, even by SIGKILL, so
/// no CLI outlives its supervisor unnoticed. (Grandchildren are not covered;
/// the sidecar's `pgid` lets a later okstra reap them.)
#[cfg(target_os = "linux")]
#[expect(
    unsafe_code,
    reason = "PR_SET_PDEATHSIG must be set in the child between fork and exec; only pre_exec runs there"
)]
fn arm_parent_death_signal(command: &mut Command) {
    use nix::errno::Errno;
    use nix::sys::prctl;
    use nix::unistd::{getpid, getppid};
    use std::os::unix::process::CommandExt;
    let parent = getpid();
    // SAFETY: the closure runs in the forked child before exec, where only
    // async-signal-safe work is allowed. It makes two raw syscalls (prctl,
    // getppid) and builds an `io::Error` from an errno, which neither
    // allocates nor takes a lock.
    unsafe {
        command.pre_exec(move || {
            prctl::set_pdeathsig(Signal::SIGKILL).map_err(io::Error::from)?;
            // If the parent died before prctl took effect, the death signal
            // will never come: we were already re-parented. Refuse to run.
            if getppid() != parent {
                return Err(io::Error::from(Errno::ESRCH));
            }
            Ok(())
        });
    }
}

/// How [`run_captured`] runs a child.
#[derive(Debug, Clone)]
pub struct Capture {
    /// Wall time before the group is stopped.
    pub limit: Duration,
    /// Bytes kept of stdout (and of stderr); the rest is read and dropped.
    pub keep: usize,
    /// stdout and stderr through one pipe, in order, into `stdout`.
    pub merge: bool,
    /// Bytes written to the child's stdin, then EOF (else `/dev/null`).
    pub input: Option<Vec<u8>>,
}

/// How one bounded run ended.
#[derive(Debug, Clone, Default)]
pub struct Captured {
    /// The exit code; `None` when a signal ended it.
    pub code: Option<i32>,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    /// stdout (with stderr when merged), at most `keep` bytes.
    pub stdout: Vec<u8>,
    /// Whether stdout had more than `keep` bytes.
    pub stdout_truncated: bool,
    /// stderr when not merged, at most `keep` bytes.
    pub stderr: Vec<u8>,
    /// The wall-time limit passed and the group was stopped.
    pub timed_out: bool,
}

impl Captured {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// `exit N` or `signal N`, for messages.
    pub fn describe_status(&self) -> String {
        match (self.code, self.signal) {
            (Some(code), _) => format!("exit {code}"),
            (None, Some(signal)) => format!("signal {signal}"),
            (None, None) => "no exit status".to_owned(),
        }
    }
}

/// Run `builder`'s child to its end under `capture`'s bounds, then stop
/// whatever is left of its group (and, in `subreaper`, whatever it left
/// behind outside the group). `Err` only when it could not be started or
/// waited for.
pub fn run_captured(
    mut builder: Builder,
    capture: &Capture,
    subreaper: Option<&Subreaper>,
) -> io::Result<Captured> {
    let (out_reader, out_writer) = io::pipe()?;
    let (err_reader, err_writer) = if capture.merge {
        (None, out_writer.try_clone()?)
    } else {
        let (reader, writer) = io::pipe()?;
        (Some(reader), writer)
    };
    let input = match &capture.input {
        Some(bytes) => {
            let (reader, writer) = io::pipe()?;
            builder.stdin(reader);
            Some((writer, bytes.clone()))
        }
        None => None,
    };
    builder.stdout(out_writer).stderr(err_writer);
    let mut command = builder.into_std();
    let spawned = command.spawn();
    // Our copies of the write ends must close now, or EOF never comes.
    drop(command);
    let mut child = spawned?;
    let group = i32::try_from(child.id()).ok();
    let out = read_bounded(out_reader, capture.keep);
    let err = err_reader.map(|reader| read_bounded(reader, capture.keep));
    if let Some((mut writer, bytes)) = input {
        // A child that exits without reading is not an error.
        thread::spawn(move || {
            let _ = writer.write_all(&bytes);
        });
    }
    let (done_tx, done_rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = done_tx.send(child.wait());
    });
    let mut timed_out = false;
    let status = match done_rx.recv_timeout(capture.limit) {
        Ok(status) => status?,
        Err(RecvTimeoutError::Timeout) => {
            timed_out = true;
            signal(group, Signal::SIGTERM);
            if let Ok(status) = done_rx.recv_timeout(GRACE) {
                status?
            } else {
                signal(group, Signal::SIGKILL);
                done_rx
                    .recv()
                    .map_err(|_| io::Error::other("lost the child's exit status"))??
            }
        }
        Err(RecvTimeoutError::Disconnected) => {
            return Err(io::Error::other("lost the child's exit status"));
        }
    };
    // Whatever the child left in its group goes with it.
    signal(group, Signal::SIGKILL);
    if subreaper.is_some() {
        Subreaper::stop_adopted();
    }
    let (stdout, stdout_truncated) = out.recv_timeout(DRAIN_LIMIT).unwrap_or_default();
    let stderr = err
        .and_then(|err| err.recv_timeout(DRAIN_LIMIT).ok())
        .map(|(bytes, _)| bytes)
        .unwrap_or_default();
    Ok(Captured {
        code: status.code(),
        signal: signal_of(status),
        stdout,
        stdout_truncated,
        stderr,
        timed_out,
    })
}

fn signal_of(status: ExitStatus) -> Option<i32> {
    std::os::unix::process::ExitStatusExt::signal(&status)
}

fn signal(group: Option<i32>, signal: Signal) {
    if let Some(group) = group {
        let _ = process_group::signal(group, signal);
    }
}

/// Read `reader` to its end on a thread, keeping at most `keep` bytes; the
/// receiver gets the bytes and whether any were dropped.
fn read_bounded(mut reader: io::PipeReader, keep: usize) -> mpsc::Receiver<(Vec<u8>, bool)> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut kept = Vec::new();
        let mut dropped = false;
        let mut buf = [0_u8; 8192];
        loop {
            match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let room = keep.saturating_sub(kept.len());
                    dropped |= n > room;
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = tx.send((kept, dropped));
    });
    rx
}

/// This process as a sub-reaper: orphans of the children it starts
/// re-parent to it instead of init, so [`run_captured`] can stop a daemon a
/// child started with `setsid` (outside its process group).
///
/// Only for a process that runs its children one at a time through
/// [`run_captured`] and has no other children (the doctor): after each run
/// every child it still has is an orphan to stop.
#[derive(Debug)]
pub struct Subreaper(());

impl Subreaper {
    /// Become a sub-reaper (Linux only; elsewhere an error).
    pub fn start() -> io::Result<Subreaper> {
        #[cfg(target_os = "linux")]
        {
            nix::sys::prctl::set_child_subreaper(true).map_err(io::Error::from)?;
            Ok(Subreaper(()))
        }
        #[cfg(not(target_os = "linux"))]
        {
            Err(io::Error::other("a sub-reaper needs Linux"))
        }
    }

    /// Stop every orphan adopted so far: for a caller that ran several
    /// children at once without the sub-reaper and has reaped them all.
    #[expect(
        clippy::unused_self,
        reason = "holding the sub-reaper is the proof that orphans re-parent to us"
    )]
    pub fn stop_orphans(&self) {
        Self::stop_adopted();
    }

    /// SIGKILL every child this process has (all adopted orphans, since the
    /// run's own child is already reaped), with its group when it leads one,
    /// and reap it; again for the children those leave behind.
    fn stop_adopted() {
        // Each round reaps one generation; a fork bomb is not our threat.
        for _ in 0..16 {
            let found = process_group::children_of_this_process();
            if found.is_empty() {
                return;
            }
            for pid in found {
                process_group::kill_adopted(pid);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(limit: Duration) -> Capture {
        Capture {
            limit,
            keep: 16,
            merge: false,
            input: None,
        }
    }

    #[test]
    fn output_is_bounded_and_input_is_fed() {
        let mut sh = Builder::new("sh");
        sh.args(["-c", "cat; printf '%s' 0123456789abcdefXYZ >&2; exit 3"]);
        let mut with_input = capture(Duration::from_secs(30));
        with_input.input = Some(b"from stdin".to_vec());
        let run = run_captured(sh, &with_input, None).unwrap();
        assert_eq!(run.code, Some(3));
        assert_eq!(run.stdout, b"from stdin");
        assert!(!run.stdout_truncated);
        assert_eq!(run.stderr, b"0123456789abcdef");
        assert!(!run.timed_out);
        assert_eq!(run.describe_status(), "exit 3");
    }

    #[test]
    fn the_host_session_markers_never_reach_a_child() {
        let mut sh = Builder::new("sh");
        sh.args(["-c", "printf '%s' \"${CLAUDECODE-unset}\""])
            .environment([("CLAUDECODE", "1"), ("PATH", "/usr/bin:/bin")]);
        let mut keep = capture(Duration::from_secs(30));
        keep.merge = true;
        let run = run_captured(sh, &keep, None).unwrap();
        assert_eq!(run.stdout, b"unset");
    }

    #[test]
    fn an_overstaying_child_is_stopped_with_its_group() {
        let mut sh = Builder::new("sh");
        sh.args(["-c", "sleep 300 & sleep 300"]);
        let run = run_captured(sh, &capture(Duration::from_millis(200)), None).unwrap();
        assert!(run.timed_out);
        assert_eq!(run.signal, Some(Signal::SIGTERM as i32));
    }
}
