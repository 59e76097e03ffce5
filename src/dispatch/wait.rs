//! `okstra await`: block until every selected dispatch has ended, then print
//! one summary.
//!
//! A wrapper dispatch has ended when its record has an `ending`. When the
//! dispatcher that started it is gone (killed, or its host shell closed)
//! and the wrapper too, `await` finishes the record itself from the sidecar
//! and log, exactly as the dispatcher would have (a wrapper that never wrote
//! a sidecar ends `cli-missing` or `crash`: nothing stays pending forever).
//! A `native-session` worker has ended when its Result Path exists and is
//! not empty, or its heartbeat's last phase is `complete`. Between looks it
//! sleeps a second: no busy polling.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use crate::catalog::Runner;
use crate::cli::AwaitArgs;
use crate::diag;
use crate::ending::Ending;
use crate::exit::ExitStatus;
use crate::process_group as process;
use crate::provider_exec::sidecar;
use crate::run::manifest::RunManifest;
use crate::run::team_state::{self, DispatchRecord};

use super::attempt::{self, Ended};
use super::select::{Kind, Planned, select};
use super::summary::{Row, print_summary};

/// How long `await` sleeps between looks.
const INTERVAL: Duration = Duration::from_secs(1);

pub fn await_command(args: &AwaitArgs) -> Result<ExitStatus> {
    let manifest = RunManifest::load(&args.run_dir)?;
    let kind = match &args.kind {
        Some(text) => Some(Kind::parse(text).map_err(anyhow::Error::msg)?),
        None => None,
    };
    let workers = args
        .workers
        .as_deref()
        .map(super::split_workers)
        .transpose()?;
    let deadline = args.timeout.map(|limit| Instant::now() + limit);
    let prices = crate::usage::Prices::load(&|name| std::env::var(name).ok())?;
    // Native workers of the first batch (or the named ones) are awaited by
    // their files: the host dispatched them, okstra has no record.
    let native: Vec<Planned> = if kind.is_none_or(|k| k == Kind::Initial) {
        let state = team_state::read(&manifest.team_state_path)?;
        let mut fresh = state.clone();
        fresh.dispatches.clear();
        select(&manifest, &fresh, Kind::Initial, workers.as_deref())?.native
    } else {
        Vec::new()
    };
    loop {
        let state = team_state::read(&manifest.team_state_path)?;
        let mut selected: Vec<DispatchRecord> = latest_attempts(&state.dispatches)
            .into_iter()
            .filter(|r| {
                kind.is_none_or(|k| {
                    same_kind(k, &r.dispatch_kind, &r.dispatch_name, &state.dispatches)
                })
            })
            .filter(|r| workers.as_ref().is_none_or(|w| w.contains(&r.worker_id)))
            .collect();
        if selected.is_empty() && native.is_empty() {
            bail!(
                "nothing to await in `{}`: no dispatch{} was recorded; start one with `okstra dispatch`",
                args.run_dir.display(),
                kind.map_or(String::new(), |k| format!(" of kind `{}`", k.as_string()))
            );
        }
        let mut pending = 0;
        for record in &mut selected {
            if record.ending.is_none() && !settle(&manifest, record, &prices)? {
                pending += 1;
            }
        }
        let native_rows: Vec<Row> = native
            .iter()
            .filter(|n| !selected.iter().any(|r| r.dispatch_name == n.dispatch_name))
            .map(native_row)
            .collect();
        pending += native_rows.iter().filter(|r| r.ending.is_none()).count();
        let timed_out = deadline.is_some_and(|d| Instant::now() >= d);
        if pending == 0 || timed_out {
            let mut rows: Vec<Row> = selected.iter().map(Row::from_record).collect();
            rows.extend(native_rows);
            print_summary(&rows, args.json)?;
            if timed_out && pending > 0 {
                diag::error(format_args!(
                    "timed out with {pending} dispatch(es) still running"
                ));
                return Ok(ExitStatus::Failure);
            }
            let all_completed = rows.iter().all(|r| r.ending == Some(Ending::Completed));
            return Ok(if all_completed {
                ExitStatus::Success
            } else {
                ExitStatus::Failure
            });
        }
        std::thread::sleep(INTERVAL);
    }
}

/// Whether a record of kind `dispatch_kind` belongs to `kind`: a retry
/// belongs to the kind of the dispatch it retries.
fn same_kind(kind: Kind, dispatch_kind: &str, dispatch_name: &str, all: &[DispatchRecord]) -> bool {
    let wanted = kind.as_string();
    if dispatch_kind == wanted {
        return true;
    }
    dispatch_kind == Kind::Retry.as_string()
        && all.iter().any(|r| {
            r.dispatch_name == dispatch_name && r.attempt == 1 && r.dispatch_kind == wanted
        })
}

/// The latest attempt of every dispatch name, in first-recorded order.
pub fn latest_attempts(records: &[DispatchRecord]) -> Vec<DispatchRecord> {
    let mut latest: Vec<DispatchRecord> = Vec::new();
    for record in records {
        match latest
            .iter_mut()
            .find(|r| r.dispatch_name == record.dispatch_name)
        {
            Some(slot) if slot.attempt <= record.attempt => *slot = record.clone(),
            Some(_) => {}
            None => latest.push(record.clone()),
        }
    }
    latest
}

/// Finish `record` when nobody else will: its dispatcher is gone and its
/// wrapper has ended (or never started). Returns whether it has ended.
fn settle(
    manifest: &RunManifest,
    record: &mut DispatchRecord,
    prices: &crate::usage::Prices,
) -> Result<bool> {
    if record.runner == Some(Runner::NativeSession) {
        return settle_native(manifest, record);
    }
    if record
        .dispatcher_pid
        .is_some_and(|pid| dispatcher_alive(pid, record))
    {
        return Ok(false);
    }
    let sidecar = record
        .sidecar_path
        .as_deref()
        .and_then(|path| sidecar::read(path).ok().flatten());
    let ended = match &sidecar {
        Some(found) if found.is_exited() => Ended::default(),
        Some(found) => {
            let alive = match (found.pid, found.started_ts) {
                (Some(pid), Some(started)) => process::wrapper_alive(pid, started),
                _ => false,
            };
            if alive {
                return Ok(false);
            }
            Ended {
                exit_code: None,
                cancelled: false,
                wrapper_stderr: "the wrapper died without recording an exit".into(),
            }
        }
        None if record.started_at.is_none() => Ended {
            exit_code: None,
            cancelled: true,
            wrapper_stderr: "never started: its dispatcher is gone".into(),
        },
        None => Ended {
            exit_code: None,
            cancelled: false,
            wrapper_stderr: "the wrapper left no status sidecar: it did not start".into(),
        },
    };
    let assignment_name = manifest
        .assignment(&record.worker_id)
        .map_or_else(|| record.dispatch_name.clone(), |a| a.dispatch_name.clone());
    let (done, _) = attempt::finish(
        &manifest.team_state_path,
        record.clone(),
        &assignment_name,
        &ended,
        prices,
    )?;
    *record = done;
    Ok(true)
}

/// A native-session worker has ended when its Result Path holds something
/// or its heartbeat says `complete` (without a result: `empty-output`).
fn settle_native(manifest: &RunManifest, record: &mut DispatchRecord) -> Result<bool> {
    let has_result = non_empty(&record.result_path);
    let heartbeat = manifest
        .assignment(&record.worker_id)
        .map(|a| a.paths.heartbeat_path.clone());
    let complete = heartbeat.as_deref().is_some_and(heartbeat_complete);
    if !has_result && !complete {
        return Ok(false);
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
    record.ending = Some(ending);
    record.ended_at = Some(crate::clock::rfc3339_now());
    record.detail = Some(detail.into());
    record.recovered_from = has_result.then(|| "file".to_owned());
    if has_result
        && let Ok(bytes) =
            crate::fsread::read_no_follow(&record.result_path, crate::fsread::Kind::Report)
    {
        record.result_sha256 = Some(crate::digest::sha256_hex(&bytes));
    }
    let assignment_name = manifest
        .assignment(&record.worker_id)
        .map_or_else(|| record.dispatch_name.clone(), |a| a.dispatch_name.clone());
    let mut changes = vec![team_state::Change::Put(record)];
    if record.dispatch_name == assignment_name {
        changes.push(team_state::Change::Terminal(&assignment_name, ending));
    }
    team_state::update(&manifest.team_state_path, &changes)?;
    Ok(true)
}

/// Whether the dispatcher `pid` that wrote `record` still runs (a pid that
/// now belongs to a process started after the record is someone else).
fn dispatcher_alive(pid: i32, record: &DispatchRecord) -> bool {
    let since = record
        .started_at
        .as_deref()
        .and_then(crate::clock::parse_rfc3339)
        .unwrap_or_else(crate::clock::unix_now);
    process::wrapper_alive(pid, since)
}

/// A native-session worker's row, from its files.
fn native_row(planned: &Planned) -> Row {
    let done =
        non_empty(&planned.paths.result_path) || heartbeat_complete(&planned.paths.heartbeat_path);
    Row {
        dispatch_name: planned.dispatch_name.clone(),
        kind: planned.kind.clone(),
        attempt: 1,
        runner: Runner::NativeSession,
        ending: done.then_some(Ending::Completed),
        terminal_status: done.then_some(crate::ending::ReportStatus::Completed),
        failure_reason: None,
        exit_code: None,
        result_path: planned.paths.result_path.clone(),
        detail: if done {
            None
        } else {
            Some("waiting for the host's session to write its Result Path".into())
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
