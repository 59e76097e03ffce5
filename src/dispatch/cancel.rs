//! `okstra cancel`: stop a run's live work and leave it resumable.
//!
//! The driver that holds the run's lease (`okstra run`, `okstra dispatch`,
//! a detached dispatcher) is asked to stop with SIGTERM: it stops its
//! wrappers, records their attempts `cancelled` and lets go of the lease.
//! Wrappers nobody drives any more (their driver was killed) are stopped
//! here — SIGTERM to the wrapper, which stops its CLI's group; after the
//! grace, SIGKILL to both groups — and their attempts recorded `cancelled`.
//! The lease file only names a pid: before it is signalled, the process
//! table must show okstra driving this run there (`Holder::check_driver`),
//! else the command refuses (exit 2) and signals nothing.
//! With `--workers`, only those workers' wrappers are stopped (a live
//! driver then records them as it sees them end). Nothing is ever
//! signalled that a record and the process table do not both name.
//!
//! A native attempt the host holds (`with-host`) is closed `cancelled`
//! too: its answer is no longer taken, and the run reads `cancelled` — not
//! `running` because the host still holds a task — until the user resumes
//! it (`okstra next --resume`, or `okstra run <run-dir>`).

use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use nix::sys::signal::Signal;
use serde::Serialize;

use crate::cli::CancelArgs;
use crate::derive::liveness;
use crate::diag;
use crate::process_group as process;
use crate::run::Run;

use crate::run::lease::Lease;
use crate::run::live::{liveness, wrapper_of};
use crate::run::team_state::DispatchRecord;

use super::attempt::{self, Ended};
use super::select::Live;
use crate::vocab::EventKind;

/// How long a driver gets to stop its wrappers and let go of the lease:
/// each wrapper has the group grace, then a little to record.
const DRIVER_GRACE: Duration = Duration::from_secs(15);
/// How often the lease and the wrappers are looked at while waiting.
const POLL: Duration = Duration::from_millis(100);

/// What `okstra cancel --json` prints.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Cancelled {
    run_dir: std::path::PathBuf,
    /// The driver asked to stop (pid), if one held the lease.
    driver: Option<i32>,
    /// Dispatches whose wrappers were stopped here, and native attempts the
    /// host held, recorded cancelled.
    stopped: Vec<String>,
    /// The command that resumes the run.
    resume: String,
}

/// One `stopped <name>` line per dispatch stopped (the rest goes to stderr).
impl crate::output::Answer for Cancelled {
    const SCHEMA: &'static str = "cancel-answer.schema.json";
    const VERSION: Option<u32> = Some(1);
}

impl crate::output::Text for Cancelled {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        for name in &self.stopped {
            writeln!(out, "stopped {name}")?;
        }
        Ok(())
    }
}

/// `okstra cancel`.
pub fn cancel_command(args: &CancelArgs) -> Result<crate::output::Reply> {
    let run = Run::open(&args.run_dir)?;
    let workers = args
        .workers
        .as_deref()
        .map(super::split_workers)
        .transpose()?;
    if let Some(names) = &workers {
        super::check_workers(&run, names)?;
    }
    let named = |record: &DispatchRecord| {
        workers
            .as_ref()
            .is_none_or(|names| names.contains(&record.worker_id))
    };
    let mut driver = None;
    if workers.is_none()
        && let Some(holder) = Lease::held_by(&run)?
        && holder.pid > 0
        && process::wrapper_alive(holder.pid, holder.started_ts)
    {
        // The lease file names a pid; only the process table says who it is.
        if let Err(why) = holder.check_driver(&run) {
            bail!(
                "the lease of `{}` names pid {} (`{}`), which is not okstra driving this run ({why}); nothing was signalled",
                run.dir.display(),
                holder.pid,
                crate::fsread::escape(&holder.command)
            );
        }
        diag::progress(format_args!(
            "stopping pid {} (`{}`), which drives `{}`",
            holder.pid,
            crate::fsread::escape(&holder.command),
            run.dir.display()
        ));
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(holder.pid), Signal::SIGTERM);
        driver = Some(holder.pid);
        let deadline = Instant::now() + DRIVER_GRACE;
        while Lease::held_by(&run)?.is_some() && Instant::now() < deadline {
            std::thread::sleep(POLL);
        }
        if Lease::held_by(&run)?.is_some() {
            diag::warning(format_args!(
                "pid {} did not stop within {}s; stopping its wrappers directly",
                holder.pid,
                DRIVER_GRACE.as_secs()
            ));
            // Still the process checked above (its pid not handed on).
            if process::wrapper_alive(holder.pid, holder.started_ts) {
                let _ =
                    nix::sys::signal::kill(nix::unistd::Pid::from_raw(holder.pid), Signal::SIGKILL);
            }
        }
    }
    // What is still running without a live driver, or was named.
    let state = run.team_state()?;
    let live: Vec<DispatchRecord> = state
        .latest_attempts()
        .into_iter()
        .filter(|r| named(r))
        // Wrapper attempts not ended (the host's are closed below).
        .filter(|r| liveness::of_record(r, Live::Driver) == liveness::State::Running)
        .filter(|r| workers.is_some() || liveness(r) != Live::Driver)
        .cloned()
        .collect();
    let mut stopped = Vec::new();
    let mut orphans = Vec::new();
    for record in live {
        let Some((pid, started)) = wrapper_of(&record) else {
            if liveness(&record) == Live::Nothing {
                orphans.push(record);
            }
            continue;
        };
        stop_wrapper(pid, started);
        stopped.push(record.dispatch_name.clone());
        if workers.is_none() || liveness(&record) != Live::Driver {
            orphans.push(record);
        }
    }
    record_cancelled(&run, orphans, "cancelled with `okstra cancel`")?;
    let closed = close_with_host(&run, &named)?;
    stopped.extend(closed);
    let resume = if run.lead_runtime == crate::catalog::LeadRuntime::External {
        crate::shell::okstra_line(&["run", &run.dir.to_string_lossy()])
    } else {
        crate::shell::okstra_line(&["next", &run.dir.to_string_lossy(), "--resume"])
    };
    crate::run::events::record(
        &run,
        EventKind::RunCancelled,
        &[
            ("stopped", &stopped.len().to_string()),
            (
                "driver",
                &driver.map_or_else(|| "none".to_owned(), |pid| pid.to_string()),
            ),
        ],
    );
    let report = Cancelled {
        run_dir: run.dir.clone(),
        driver,
        stopped,
        resume,
    };
    let reply = crate::output::Reply::answer(&report, args.json)?;
    let nothing = (report.driver.is_none() && report.stopped.is_empty())
        .then(|| format!("nothing runs in `{}`", run.dir.display()));
    let resume = format!("resume with `{}`", report.resume);
    Ok(reply.then_say(move || {
        if let Some(nothing) = nothing {
            diag::progress(nothing);
        }
        diag::progress(resume);
    }))
}

/// An attempt whose driver is gone while its wrapper still runs.
#[derive(Debug)]
pub struct Orphan {
    pub record: DispatchRecord,
    /// The wrapper's pid and start time.
    pub pid: i32,
    pub started_ts: i64,
}

/// The attempts of `run` whose driver is gone while their wrapper still
/// runs; none while a driver holds the run's lease (it adopts them).
pub fn orphaned(run: &Run) -> Result<Vec<Orphan>> {
    if Lease::held_by(run)?.is_some() {
        return Ok(Vec::new());
    }
    let state = run.team_state()?;
    Ok(state
        .latest_attempts()
        .into_iter()
        .filter(|r| r.ending.is_none() && liveness(r) == Live::Wrapper)
        .filter_map(|r| {
            let (pid, started_ts) = wrapper_of(r)?;
            Some(Orphan {
                record: r.clone(),
                pid,
                started_ts,
            })
        })
        .collect())
}

/// Stop orphaned wrappers (`okstra reap --execute`) and record their
/// attempts `cancelled`, so the run resumes them. Returns their dispatch
/// names.
pub fn reap_orphans(run: &Run, orphans: Vec<Orphan>) -> Result<Vec<String>> {
    let names = orphans
        .iter()
        .map(|o| o.record.dispatch_name.clone())
        .collect();
    let mut records = Vec::with_capacity(orphans.len());
    for orphan in orphans {
        stop_wrapper(orphan.pid, orphan.started_ts);
        records.push(orphan.record);
    }
    record_cancelled(
        run,
        records,
        "stopped by `okstra reap`: its driver was gone",
    )?;
    Ok(names)
}

/// Close every native attempt the host holds that `named` picks:
/// `cancelled`, in one locked write. Returns their dispatch names.
fn close_with_host(run: &Run, named: &dyn Fn(&DispatchRecord) -> bool) -> Result<Vec<String>> {
    let state = run.team_state()?;
    let mut closed: Vec<DispatchRecord> = state
        .latest_attempts()
        .into_iter()
        .filter(|r| named(r))
        .filter(|r| liveness::of_record(r, Live::Nothing) == liveness::State::WithHost)
        .cloned()
        .collect();
    if closed.is_empty() {
        return Ok(Vec::new());
    }
    for record in &mut closed {
        record.end(
            crate::vocab::Ending::Cancelled,
            "cancelled with `okstra cancel` while the host held it: its answer is no longer taken"
                .to_owned(),
        );
    }
    write_ended(run, &closed)?;
    Ok(closed.into_iter().map(|r| r.dispatch_name).collect())
}

/// Finish `records` as `cancelled` (from their files), in one locked write.
fn record_cancelled(run: &Run, records: Vec<DispatchRecord>, why: &str) -> Result<()> {
    if records.is_empty() {
        return Ok(());
    }
    let prices = crate::usage::Prices::load(&|name| std::env::var(name).ok())?;
    let mut finished = Vec::with_capacity(records.len());
    for record in records {
        let ended = Ended {
            exit_code: None,
            cancelled: true,
            wrapper_stderr: why.to_owned(),
            reason: None,
        };
        finished.push(attempt::conclude(run, record, &ended, &prices)?.0);
    }
    write_ended(run, &finished)
}

/// Record `ended` attempts in one locked write: each record, and its
/// worker's terminal ending when the attempt is the worker's own dispatch
/// (not a reverify round's), then announce each.
fn write_ended(run: &Run, ended: &[DispatchRecord]) -> Result<()> {
    let owners: Vec<String> = ended
        .iter()
        .map(|r| {
            run.assignment(&r.worker_id)
                .map_or_else(|| r.dispatch_name.clone(), |a| a.dispatch_name.clone())
        })
        .collect();
    let mut changes = Vec::new();
    for (record, name) in ended.iter().zip(&owners) {
        changes.push(crate::run::team_state::Change::Put(record));
        if record.dispatch_name == *name
            && let Some(ending) = record.ending
        {
            changes.push(crate::run::team_state::Change::Terminal(name, ending));
        }
    }
    run.update_team_state(&changes)?;
    for record in ended {
        attempt::announce(run, record);
    }
    Ok(())
}

/// Stop one wrapper: SIGTERM (it stops its CLI's group and records its
/// exit); after the grace, SIGKILL (its guardian then stops the CLI's
/// group, as it does whenever a wrapper dies).
fn stop_wrapper(pid: i32, started: i64) {
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGTERM);
    let deadline = Instant::now() + process::GRACE + Duration::from_secs(2);
    while process::wrapper_alive(pid, started) && Instant::now() < deadline {
        std::thread::sleep(POLL);
    }
    if process::wrapper_alive(pid, started) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
    }
}
