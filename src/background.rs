//! One background start: okstra starting itself again as a process that
//! outlives the command that started it — the detached dispatcher (`okstra
//! dispatch --detach`) and the background driver `okstra next` hands a
//! batch to.
//!
//! [`start`] runs this same binary through [`Builder`] (a process
//! group of its own, so a Ctrl-C at the terminal reaches only the starter;
//! stdin `/dev/null`; the host session's markers gone), its stdout and
//! stderr appended to a log that is a regular file, never reached through a
//! symlink. [`Started::wait_ready`] then waits, bounded, until it recorded
//! what it was started for or exited. The started process calls
//! [`ignore_hangup`] to outlive the terminal.
//!
//! Not here: who hands the run's lease over (the starter drops it just
//! before [`start`]; the started process takes it itself, waiting like any
//! second driver).

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::child::Builder;

/// How often [`Started::wait_ready`] looks again.
const POLL: Duration = Duration::from_millis(20);

/// A background okstra just started.
#[derive(Debug)]
pub struct Started {
    child: Child,
    /// Its process id (`None` only past `i32`).
    pub pid: Option<i32>,
}

/// Start this okstra again with `args`, in the background, its output
/// appended to `log`; `configure` sets its environment. `what` names it in
/// the errors ("the detached dispatcher").
pub fn start<I, S>(
    what: &str,
    log: &Path,
    args: I,
    configure: impl FnOnce(&mut Builder),
) -> Result<Started>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let program = std::env::current_exe()
        .with_context(|| format!("cannot find the okstra binary to start {what}"))?;
    let out = crate::beneath::open_append(log)
        .with_context(|| format!("cannot open `{}`", log.display()))?;
    crate::fsread::check_regular(&out, log)?;
    let mut builder = Builder::new(program);
    builder.args(args).stdout(out.try_clone()?).stderr(out);
    configure(&mut builder);
    let child = builder
        .into_std()
        .spawn()
        .with_context(|| format!("cannot start {what}"))?;
    let pid = i32::try_from(child.id()).ok();
    Ok(Started { child, pid })
}

impl Started {
    /// Wait until `ready` holds (it recorded what it was started for), it
    /// exited, or `limit` passed, whichever comes first; its exit status
    /// when it exited. An error of `ready` ends the wait with that error.
    pub fn wait_ready(
        &mut self,
        limit: Duration,
        mut ready: impl FnMut() -> Result<bool>,
    ) -> Result<Option<ExitStatus>> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().ok().flatten() {
                return Ok(Some(status));
            }
            if ready()? || Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(POLL);
        }
    }
}

/// Ignore SIGHUP: a background okstra outlives the terminal that started
/// it.
pub fn ignore_hangup() {
    use nix::sys::signal::{SigHandler, Signal, signal};
    #[expect(
        unsafe_code,
        reason = "ignoring SIGHUP has no handler code to be unsafe in"
    )]
    // SAFETY: SIG_IGN runs no code in signal context.
    let _ = unsafe { signal(Signal::SIGHUP, SigHandler::SigIgn) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_started_process_writes_to_its_log_and_its_exit_ends_the_wait() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("dispatch.log");
        // The test binary itself, listing its tests: it prints and exits.
        let mut started = start("the test", &log, ["--list"], |_| {}).unwrap();
        assert!(started.pid.is_some());
        let status = started
            .wait_ready(Duration::from_mins(1), || Ok(false))
            .unwrap()
            .expect("it exits by itself");
        assert!(status.success());
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.contains("background::tests"), "{text}");
    }

    #[test]
    fn ready_or_the_limit_ends_the_wait_of_a_process_still_running() {
        let child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = i32::try_from(child.id()).ok();
        let mut started = Started { child, pid };
        let begun = Instant::now();
        assert!(
            started
                .wait_ready(Duration::from_secs(30), || Ok(true))
                .unwrap()
                .is_none()
        );
        assert!(begun.elapsed() < Duration::from_secs(10));
        let begun = Instant::now();
        assert!(
            started
                .wait_ready(Duration::from_millis(200), || Ok(false))
                .unwrap()
                .is_none()
        );
        assert!(begun.elapsed() >= Duration::from_millis(200));
        let _ = started.child.kill();
        let _ = started.child.wait();
    }

    #[test]
    fn a_link_is_no_log() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        let link = dir.path().join("link.log");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(start("the test", &link, ["--list"], |_| {}).is_err());
        assert!(!target.exists());
    }
}
