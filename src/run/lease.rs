//! One driver at a time: the run lease.
//!
//! Whoever advances a run or dispatches its workers (`okstra run`,
//! `okstra dispatch`, a detached dispatcher, `okstra next`) holds the lease:
//! an exclusive `flock` on `state/run.lease`, whose content names the holder
//! (pid, start time, command) for the "waiting for pid N" line a second
//! driver prints. The kernel releases a `flock` when its holder dies, so a
//! lease is never stale: a driver killed outright leaves a lease anyone
//! can take.
//!
//! A second driver waits up to its timeout (a [`Lock`] bound, saying whom
//! it waits for), then refuses (exit 2): it never plans a round twice,
//! starts a worker twice or re-runs the report writer.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::durable::Lock;
use crate::run::Run;

/// The holder record is a few hundred bytes.
const MAX_HOLDER_BYTES: u64 = 4096;

/// Who holds a lease (the content of `state/run.lease`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Holder {
    pub pid: i32,
    /// Unix seconds.
    pub started_ts: i64,
    /// `okstra run`, `okstra dispatch` …
    pub command: String,
}

impl Holder {
    /// Whether the process this holder names is okstra driving `run`, as
    /// far as the process table shows — the lease file is only a file, and
    /// anyone who can write the run folder can name any pid in it: alive
    /// and started no later than it recorded, running okstra (its program
    /// is called `okstra`, or is this very binary), and either naming the
    /// run folder on its command line or holding the run's lease file open.
    /// `Err` says why not. Linux only: without `/proc` nothing is proved.
    pub fn check_driver(&self, run: &Run) -> Result<(), String> {
        use crate::process_group as process;
        if self.pid <= 0 || !process::wrapper_alive(self.pid, self.started_ts) {
            return Err("it is not running since it recorded itself".to_owned());
        }
        let Some((cmdline, _)) = process::proc_command(self.pid) else {
            return Err("its command line cannot be read".to_owned());
        };
        let is_okstra = cmdline
            .first()
            .is_some_and(|program| program.rsplit('/').next() == Some("okstra"))
            || process::runs_this_program(self.pid);
        let shown =
            || crate::fsread::escape(&crate::fsread::clip(&cmdline.join(" "), 200)).into_owned();
        if !is_okstra {
            return Err(format!("it runs `{}`", shown()));
        }
        let run_dir = std::fs::canonicalize(&run.dir).unwrap_or_else(|_| run.dir.clone());
        let cwd = process::proc_cwd(self.pid);
        let names_run = cmdline.iter().skip(1).any(|word| {
            let word = Path::new(word);
            let path = match &cwd {
                Some(cwd) if word.is_relative() => cwd.join(word),
                _ => word.to_path_buf(),
            };
            std::fs::canonicalize(path).is_ok_and(|path| path == run_dir)
        });
        if names_run || process::holds_open(self.pid, &Lease::path(run)) {
            return Ok(());
        }
        Err(format!(
            "it runs `{}`, which neither names this run nor holds its lease",
            shown()
        ))
    }
}

/// A held lease; released when dropped (or when the process ends).
#[derive(Debug)]
pub struct Lease {
    lock: Lock,
}

impl Lease {
    /// The lease file of `run`.
    pub fn path(run: &Run) -> PathBuf {
        run.layout().lease()
    }

    /// Take the lease of `run` for `command`, waiting up to `wait` for the
    /// current holder (saying once who it is); refuse after that.
    pub fn acquire(run: &Run, command: &str, wait: Duration) -> Result<Lease> {
        let path = Lease::path(run);
        let lock = Lock::on(&path, format!("the run `{}`", run.dir.display()))
            .wait(wait)
            .holder(|| holder(&path).filter(|h| h.pid > 0).map(|h| describe(&h)))
            .hint(format!(
                "another okstra drives it: wait for it, or stop it with `okstra cancel {}`",
                run.dir.display()
            ))
            .acquire()?;
        let mut lease = Lease { lock };
        lease.record(command)?;
        Ok(lease)
    }

    /// The holder of `run`'s lease, if someone holds it now.
    pub fn held_by(run: &Run) -> Result<Option<Holder>> {
        let path = Lease::path(run);
        match Lock::on(&path, "the run lease")
            .existing()
            .shared()
            .try_acquire()
        {
            Ok(Some(_free)) => Ok(None),
            Ok(None) => Ok(Some(holder(&path).unwrap_or(Holder {
                pid: 0,
                started_ts: 0,
                command: "okstra".into(),
            }))),
            Err(err) if err.is_missing() => Ok(None),
            Err(err) => Err(err).context("cannot inspect the run lease"),
        }
    }

    /// The last holder `run`'s lease file names, when that process still
    /// runs: who drives the run now, read without taking any lock (a probe
    /// with `flock` could make a driver that tries the lease at the same
    /// instant think it is taken). A holder that let go but has not exited
    /// yet still counts: its last moments are part of its drive.
    pub fn live_holder(run: &Run) -> Option<Holder> {
        holder(&Lease::path(run))
            .filter(|h| h.pid > 0 && crate::process_group::wrapper_alive(h.pid, h.started_ts))
    }

    /// Name this process as the holder.
    fn record(&mut self, command: &str) -> Result<()> {
        let holder = Holder {
            pid: i32::try_from(std::process::id()).unwrap_or(0),
            started_ts: crate::clock::unix_now(),
            command: command.to_owned(),
        };
        let bytes = serde_json::to_vec(&holder)?;
        let path = self.lock.path().to_path_buf();
        let file: &mut File = &mut self.lock;
        file.set_len(0)?;
        file.seek(SeekFrom::Start(0))?;
        file.write_all(&bytes)
            .with_context(|| format!("cannot write the run lease `{}`", path.display()))?;
        Ok(())
    }
}

/// The holder a lease file names, if it can be read.
fn holder(path: &Path) -> Option<Holder> {
    let file = crate::beneath::open_read(path).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_HOLDER_BYTES).read_to_end(&mut bytes).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// `pid 123 (`okstra run`, since 2026-12-01T10:00:00Z)`.
fn describe(holder: &Holder) -> String {
    format!(
        "pid {} (`{}`, since {})",
        holder.pid,
        crate::fsread::escape(&holder.command),
        crate::clock::rfc3339(holder.started_ts)
    )
}
