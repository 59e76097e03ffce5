//! `okstra await`: block until every selected dispatch has ended, then print
//! one summary; and how an attempt nobody finished is settled.
//!
//! With nothing dispatched for its selection it says at once what starts
//! it (`okstra next` / `okstra dispatch`) and exits 1: nothing would ever
//! end. An attempt not ended is named as `okstra status` names it (the same
//! derivation); a native worker the host was never handed is `not started`,
//! never waited for.
//!
//! A wrapper dispatch has ended when its record has an `ending`. When the
//! dispatcher that started it is gone (killed, or its host shell closed)
//! and the wrapper too, its record is finished from the sidecar and log,
//! exactly as the dispatcher would have (a wrapper that never wrote a
//! sidecar ends `cli-missing` or `crash`: nothing stays pending forever);
//! all such records are finished in one locked write. A `native-session`
//! worker has ended when its Result Path exists and is not empty, or its
//! heartbeat's last phase is `complete`. Between looks it sleeps a second:
//! no busy polling.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::catalog::{DispatchKind, LeadRuntime, Runner};
use crate::cli::AwaitArgs;
use crate::derive::liveness;
use crate::diag;
use crate::exit::ExitStatus;
use crate::output::Reply;
use crate::provider_exec::sidecar;
use crate::run::Run;
use crate::run::live;
use crate::run::team_state::{self, Change, DispatchRecord, TeamState};
use crate::vocab::BoardState;
use crate::vocab::Ending;

use super::attempt::{self, Ended};
use super::select::{Kind, Planned, select};
use super::summary::{Row, summary};

/// How long `await` sleeps between looks.
const INTERVAL: Duration = Duration::from_secs(1);

pub fn await_command(args: &AwaitArgs) -> Result<Reply> {
    let run = Run::open(&args.run_dir)?;
    let kind = args.kind;
    let workers = args
        .workers
        .as_deref()
        .map(super::split_workers)
        .transpose()?;
    let deadline = args.timeout.map(|limit| Instant::now() + limit);
    let prices = crate::usage::Prices::load(&|name| std::env::var(name).ok())?;
    // The native workers of the first batch (or the named ones): the host
    // runs them. One okstra never handed out has no record; it is awaited
    // by its files only when they show the host working on it.
    let native: Vec<Planned> = if kind.is_none_or(|k| k == Kind::Initial) {
        select(
            &run,
            &TeamState::default(),
            Kind::Initial,
            workers.as_deref(),
        )?
        .into_iter()
        .filter(|p| p.runner == Runner::NativeSession)
        .collect()
    } else {
        Vec::new()
    };
    let mut said = false;
    loop {
        let state = run.team_state()?;
        let mut selected: Vec<DispatchRecord> = state
            .latest_attempts()
            .into_iter()
            .filter(|r| kind.is_none_or(|k| same_kind(k, r, &state.dispatches)))
            .filter(|r| workers.as_ref().is_none_or(|w| w.contains(&r.worker_id)))
            .cloned()
            .collect();
        let now = crate::clock::unix_now();
        let native_rows: Vec<Row> = native
            .iter()
            .filter(|n| !selected.iter().any(|r| r.dispatch_name == n.dispatch_name))
            .map(|n| native_row(&run, n, now))
            .collect();
        if selected.is_empty() && native_rows.iter().all(|r| r.state == NOT_STARTED) {
            // Nothing to wait for, ever: say what starts it, at once.
            diag::error(format_args!(
                "nothing to await in `{}`: nothing was dispatched{}; start it with `{}`",
                args.run_dir.display(),
                kind.map_or(String::new(), |k| format!(" of kind `{}`", k.as_string())),
                start_line(&run, kind, args.workers.as_deref(), !native.is_empty())
            ));
            return Ok(Reply::status(ExitStatus::Failure));
        }
        // Nothing of okstra's runs them: settle each from its files (a
        // native one once the host's sub-agent wrote its Result Path).
        let orphans: Vec<DispatchRecord> = selected
            .iter()
            .filter(|r| {
                matches!(
                    liveness::of_record(r, live::liveness(r)),
                    liveness::State::WithHost | liveness::State::Abandoned
                )
            })
            .cloned()
            .collect();
        if !orphans.is_empty() {
            for done in settle_all(&run, orphans, &prices)? {
                if let Some(slot) = selected.iter_mut().find(|r| r.is_same_attempt(&done)) {
                    *slot = done;
                }
            }
        }
        // Each row as `okstra status` shows it: the ending, else the same
        // derivation its board row uses.
        let mut rows: Vec<Row> = selected
            .iter()
            .map(|record| {
                let mut row = Row::from_record(record);
                if record.ending.is_none() {
                    crate::lifecycle::verdict_of_attempt(&run, record, now)
                        .state
                        .as_str()
                        .clone_into(&mut row.state);
                }
                row
            })
            .collect();
        rows.extend(native_rows);
        let waiting: Vec<&Row> = rows
            .iter()
            .filter(|r| r.ending.is_none() && r.state != NOT_STARTED)
            .collect();
        let pending = waiting.len();
        let listed = || -> String {
            waiting
                .iter()
                .map(|r| {
                    if r.state == BoardState::WithHost.as_str() {
                        format!("{} (host session)", r.dispatch_name)
                    } else {
                        format!("{} ({})", r.dispatch_name, r.state)
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        if pending > 0 && !said {
            // Once, on the first look: what it waits for.
            diag::progress(format_args!(
                "waiting for {pending} dispatch(es): {}",
                listed()
            ));
            said = true;
        }
        let timed_out = deadline.is_some_and(|d| Instant::now() >= d);
        if pending == 0 || timed_out {
            let reply = summary(&rows, args.json)?;
            let never: Vec<&str> = rows
                .iter()
                .filter(|r| r.state == NOT_STARTED)
                .map(|r| r.dispatch_name.as_str())
                .collect();
            // Said after the summary they concern.
            let never = (!never.is_empty()).then(|| {
                format!(
                    "`{}` never started: the host was never handed it; `{}` does",
                    never.join("`, `"),
                    start_line(&run, None, None, true)
                )
            });
            let late = (timed_out && pending > 0).then(|| {
                format!(
                    "timed out with {pending} dispatch(es) not ended: {}",
                    listed()
                )
            });
            let all_completed = rows.iter().all(|r| r.ending == Some(Ending::Completed));
            let status = if all_completed && late.is_none() {
                ExitStatus::Success
            } else {
                ExitStatus::Failure
            };
            return Ok(reply
                .then_say(move || {
                    if let Some(never) = never {
                        diag::note(never);
                    }
                    if let Some(late) = late {
                        diag::error(late);
                    }
                })
                .with_status(status));
        }
        std::thread::sleep(INTERVAL);
    }
}

/// The state of a native worker the host was never handed.
const NOT_STARTED: &str = "not started";

/// The command that starts what `await` found nothing of: `okstra next`
/// for a run a host leads (it hands the host its native workers), else
/// `okstra dispatch` with the same selection.
fn start_line(run: &Run, kind: Option<Kind>, workers: Option<&str>, native: bool) -> String {
    let dir = run.dir.to_string_lossy();
    if native || run.lead_runtime != LeadRuntime::External {
        return crate::shell::okstra_line(&["next", &dir]);
    }
    let kind = kind.map(Kind::as_string);
    let mut args = vec!["dispatch", &dir];
    if let Some(kind) = &kind {
        args.extend(["--kind", kind]);
    }
    if let Some(workers) = workers {
        args.extend(["--workers", workers]);
    }
    crate::shell::okstra_line(&args)
}

/// Whether `record` belongs to `kind`: a retry belongs to the kind of the
/// dispatch it retries.
fn same_kind(kind: Kind, record: &DispatchRecord, all: &[DispatchRecord]) -> bool {
    if record.dispatch_kind == kind {
        return true;
    }
    record.dispatch_kind == DispatchKind::Retry
        && all.iter().any(|r| {
            r.dispatch_name == record.dispatch_name && r.attempt == 1 && r.dispatch_kind == kind
        })
}

/// Finish every record of `orphans` (attempts that never recorded an
/// ending, nothing of which runs) from its files, in one locked write.
/// Returns the finished records.
pub fn settle_all(
    run: &Run,
    orphans: Vec<DispatchRecord>,
    prices: &crate::usage::Prices,
) -> Result<Vec<DispatchRecord>> {
    let mut done = Vec::with_capacity(orphans.len());
    let mut names = Vec::with_capacity(orphans.len());
    for record in orphans {
        let assignment_name = run
            .assignment(&record.worker_id)
            .map_or_else(|| record.dispatch_name.clone(), |a| a.dispatch_name.clone());
        let finished = if record.runner == Some(Runner::NativeSession) {
            match settle_native(run, record) {
                Some(mut finished) => {
                    // A native Executor's change goes onto the branch here,
                    // once its guard shows it kept to its copy.
                    if let Err(why) = super::change::onto_branch(run, &mut finished) {
                        super::change::fail(&mut finished, why);
                    }
                    finished
                }
                None => continue,
            }
        } else {
            let ended = ended_without_dispatcher(&record);
            attempt::conclude(run, record, &ended, prices)?.0
        };
        names.push(assignment_name);
        done.push(finished);
    }
    if done.is_empty() {
        return Ok(done);
    }
    let mut changes: Vec<Change<'_>> = Vec::with_capacity(done.len() * 2);
    for (record, name) in done.iter().zip(&names) {
        changes.push(Change::Put(record));
        if let (true, Some(ending)) = (record.dispatch_name == *name, record.ending) {
            changes.push(Change::Terminal(name, ending));
        }
    }
    team_state::update(run, &changes)?;
    for record in &done {
        attempt::announce(run, record);
    }
    Ok(done)
}

/// What is known of an attempt's end when its dispatcher is gone.
fn ended_without_dispatcher(record: &DispatchRecord) -> Ended {
    let found = record
        .sidecar_path
        .as_deref()
        .and_then(|path| sidecar::read(path).ok().flatten());
    match &found {
        Some(found) if found.is_exited() => Ended::default(),
        Some(_) => Ended {
            exit_code: None,
            cancelled: false,
            wrapper_stderr: "the wrapper died without recording an exit".into(),
            reason: None,
        },
        None if record.started_at.is_none() => Ended {
            exit_code: None,
            cancelled: true,
            wrapper_stderr: "never started: its dispatcher is gone".into(),
            reason: None,
        },
        None => Ended {
            exit_code: None,
            cancelled: false,
            wrapper_stderr: "the wrapper left no status sidecar: it did not start".into(),
            reason: None,
        },
    }
}

/// A native-session worker has ended when its Result Path holds something
/// or its heartbeat says `complete` (without a result: `empty-output`).
fn settle_native(run: &Run, mut record: DispatchRecord) -> Option<DispatchRecord> {
    let has_result = non_empty(&record.result_path);
    let heartbeat = run
        .assignment(&record.worker_id)
        .map(|a| a.paths.heartbeat_path.clone());
    let complete = heartbeat.as_deref().is_some_and(heartbeat_complete);
    if !has_result && !complete {
        return None;
    }
    let (ending, detail) = if has_result {
        (
            Ending::Completed,
            "the host's session wrote its Result Path",
        )
    } else {
        (
            Ending::EmptyOutput,
            "its heartbeat says complete but its Result Path is empty",
        )
    };
    record.end(ending, detail.into());
    record.recovered_from =
        has_result.then_some(crate::vocab::Word::Known(crate::vocab::Recovery::File));
    if has_result
        && let Ok(bytes) =
            crate::fsread::read_no_follow(&record.result_path, crate::fsread::Kind::Report)
    {
        record.result_sha256 = Some(crate::digest::sha256_hex(&bytes));
    }
    Some(record)
}

/// A native-session worker's row when okstra has no record of it, from its
/// files: `completed` once its Result Path holds something or its heartbeat
/// says `complete`; `not started` while `okstra status` sees nothing of it
/// (the host was never handed it); `with-host` while its files show the host
/// working on it.
fn native_row(run: &Run, planned: &Planned, now: i64) -> Row {
    let done =
        non_empty(&planned.paths.result_path) || heartbeat_complete(&planned.paths.heartbeat_path);
    let seen = done
        || run.assignment(&planned.worker_id).is_some_and(|a| {
            crate::lifecycle::verdict_of_worker(run, a, now).state != BoardState::Pending
        });
    Row {
        dispatch_name: planned.dispatch_name.clone(),
        kind: planned.kind.as_string(),
        attempt: 1,
        runner: Runner::NativeSession,
        ending: done.then_some(Ending::Completed),
        state: match (done, seen) {
            (true, _) => Ending::Completed.as_str(),
            (false, true) => BoardState::WithHost.as_str(),
            (false, false) => NOT_STARTED,
        }
        .to_owned(),
        terminal_status: done.then_some(crate::vocab::ReportStatus::Completed),
        failure_reason: None,
        exit_code: None,
        result_path: planned.paths.result_path.clone(),
        detail: if done {
            None
        } else if seen {
            Some("waiting for the host's session to write its Result Path".into())
        } else {
            Some("never handed to the host".into())
        },
    }
}

fn non_empty(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.len() > 0)
}

/// Whether the heartbeat file's last line has `"phase": "complete"`.
fn heartbeat_complete(path: &Path) -> bool {
    let Ok(bytes) = crate::fsread::read_no_follow(path, crate::fsread::Kind::Events) else {
        return false;
    };
    String::from_utf8_lossy(&bytes)
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .and_then(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .is_some_and(|v| v.get("phase").and_then(serde_json::Value::as_str) == Some("complete"))
}
