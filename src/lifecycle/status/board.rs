//! Gathering one run's evidence (sidecars, heartbeats, logs, Result Paths,
//! dispatch records) into the rows, counts and attention list of its board.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::classify::{Anomaly, Evidence, State, classify, parse_heartbeat};
use super::files::RunFiles;
use super::{DISPATCH_EVENT, NOT_STARTED_SECS, TAIL_BYTES_MIN, TAIL_BYTES_PER_LINE};
use crate::clock;
use crate::fsread;
use crate::lifecycle::dispatch_rows::{DispatchRow, dispatch_rows};
use crate::lifecycle::{Run, par_map};
use crate::process_group as process;
use crate::provider_exec::sidecar;
use crate::run::layout;
use crate::run::roster::Assignment;
use crate::run::team_state::DispatchRecord;

/// One worker row.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerStatus<'a> {
    pub dispatch_name: &'a str,
    pub worker_id: &'a str,
    pub role: &'a str,
    pub provider: &'a str,
    pub model: &'a str,
    pub runner: &'a str,
    pub state: State,
    pub reason: Cow<'static, str>,
    pub exit_code: Option<i64>,
    pub started_ts: Option<i64>,
    pub ended_ts: Option<i64>,
    pub elapsed_seconds: Option<i64>,
    pub last_activity_ts: Option<i64>,
    pub wrapper_pid: Option<i32>,
    pub pgid: Option<i32>,
    pub phase: Option<String>,
    pub summary: Option<String>,
    pub blocker: Option<String>,
    pub changed_files: usize,
    pub missing_results: Vec<PathBuf>,
    pub sidecar_path: PathBuf,
    pub log_path: PathBuf,
    pub anomalies: Vec<Anomaly>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_tail: Option<Vec<String>>,
}

/// One entry of a run's attention list.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Attention<'a> {
    pub dispatch_name: &'a str,
    pub state: State,
    pub reason: Cow<'static, str>,
}

/// One run's board. It borrows the names from the loaded [`Run`]: a
/// project board has ten thousand rows, and copying every name into each
/// was a large share of its allocations.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunStatus<'a> {
    pub run_id: &'a str,
    pub run_dir: &'a Path,
    pub task_key: &'a str,
    pub task_type: &'a str,
    pub workers: Vec<WorkerStatus<'a>>,
    pub counts: BTreeMap<&'static str, usize>,
    pub all_terminal: bool,
    pub attention: Vec<Attention<'a>>,
    /// Every dispatch `okstra dispatch` recorded (latest attempt of each).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dispatches: Vec<DispatchRow>,
    /// Per dispatch kind, whether every dispatch of it has ended.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub all_terminal_by_kind: BTreeMap<String, bool>,
    /// An implementation run's landing gate, from its records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub landing: Option<crate::land::gate::Standing>,
}

/// Gather the evidence for one assignment.
pub(super) fn gather(
    run: &Run,
    assignment: &Assignment,
    now: i64,
    files: &mut RunFiles<'_>,
    latest: Option<&DispatchRecord>,
) -> (Evidence, PathBuf, PathBuf) {
    // A retried worker is shown by its latest attempt's own sidecar.
    let sidecar_path = latest.and_then(|r| r.sidecar_path.clone()).map_or_else(
        || layout::sidecar(&assignment.paths.prompt_path),
        |p| run.resolve(&p),
    );
    let mut evidence = Evidence::default();
    // Sidecars usually exist, so opening one directly is cheaper than
    // listing its folder first.
    match sidecar::read_with(&sidecar_path, |path| files.open(path)) {
        Ok(found) => evidence.sidecar = found,
        Err(err) => evidence.sidecar_error = Some(format!("{err:#}")),
    }
    let log_path = evidence
        .sidecar
        .as_ref()
        .and_then(|s| s.log_path.as_deref())
        .map_or_else(
            || layout::log(&assignment.paths.prompt_path),
            |recorded| run.resolve(recorded),
        );
    if let Some(side) = &evidence.sidecar
        && !side.is_exited()
        && let Some(pid) = side.pid
    {
        let started = side.started_ts.unwrap_or(i64::MAX);
        evidence.wrapper_alive = Some(process::wrapper_alive(pid, started));
    }
    let path = &assignment.paths.heartbeat_path;
    if files.is_file(path)
        && let Ok(file) = files.open(path)
        && let Ok(bytes) = fsread::read_opened(file, path, fsread::Kind::Sidecar)
    {
        evidence.heartbeat = parse_heartbeat(&String::from_utf8_lossy(&bytes), now);
        evidence.heartbeat_mtime = files.mtime(path);
    }
    // A finished wrapper's activity is its `ended_ts`; only a live one's
    // log time matters (and is worth a stat).
    if evidence.sidecar.as_ref().is_none_or(|s| !s.is_exited()) {
        evidence.log_mtime = files.mtime(&log_path);
    }
    for path in [
        &assignment.paths.result_path,
        &assignment.paths.worker_results_path,
    ] {
        if files.is_file(path) {
            evidence.any_result = true;
        } else {
            evidence.missing_results.push(path.clone());
        }
    }
    (evidence, sidecar_path, log_path)
}

/// The board row for one assignment.
pub(super) fn worker_status<'a>(
    run: &Run,
    assignment: &'a Assignment,
    now: i64,
    tail: Option<usize>,
    files: &mut RunFiles<'_>,
    latest: Option<&DispatchRecord>,
) -> WorkerStatus<'a> {
    let (evidence, sidecar_path, log_path) = gather(run, assignment, now, files, latest);
    let verdict = classify(&evidence, now);
    let side = evidence.sidecar.as_ref();
    let beat = &evidence.heartbeat;
    let started_ts = side.and_then(|s| s.started_ts).or(beat.first_ts);
    let ended_ts = side.and_then(|s| s.ended_ts).or_else(|| {
        (verdict.state.is_terminal() && side.is_none())
            .then_some(beat.last_ts)
            .flatten()
    });
    let elapsed_seconds = match (side.and_then(|s| s.duration_ms), started_ts, ended_ts) {
        (Some(ms), _, _) => Some(ms / 1000),
        (None, Some(start), Some(end)) => Some(end - start),
        (None, Some(start), None) if !verdict.state.is_terminal() => Some(now - start),
        _ => None,
    };
    let mut anomalies = beat.anomalies.clone();
    if let Some(err) = &evidence.sidecar_error {
        anomalies.push(Anomaly {
            kind: "unreadable_sidecar",
            observed: err.clone(),
            clamped_ts: None,
        });
    }
    WorkerStatus {
        dispatch_name: &assignment.dispatch_name,
        worker_id: &assignment.worker_id,
        role: assignment.role.as_str(),
        provider: assignment.provider.as_str(),
        model: &assignment.model_execution_value,
        runner: assignment.runner.as_str(),
        state: verdict.state,
        reason: verdict.reason,
        exit_code: side.and_then(|s| s.exit_code),
        started_ts,
        ended_ts,
        elapsed_seconds,
        last_activity_ts: verdict.last_activity,
        wrapper_pid: side.and_then(|s| s.pid),
        pgid: side.and_then(|s| s.pgid),
        phase: beat.phase.clone(),
        summary: beat.summary.clone(),
        blocker: beat.blocker.clone(),
        changed_files: beat.changed_files,
        missing_results: evidence.missing_results,
        sidecar_path,
        log_tail: tail.map(|lines| log_tail(&log_path, lines)),
        log_path,
        anomalies,
    }
}

/// The board for one run.
pub fn run_status(run: &Run, now: i64, tail: Option<usize>) -> RunStatus<'_> {
    let mut files = RunFiles::new(&run.dir);
    let state = run.team_state().unwrap_or_default();
    let records: Vec<DispatchRecord> = state.latest_attempts().into_iter().cloned().collect();
    let workers: Vec<WorkerStatus<'_>> = run
        .assignments
        .iter()
        .map(|a| {
            let latest = records.iter().find(|r| r.dispatch_name == a.dispatch_name);
            worker_status(run, a, now, tail, &mut files, latest)
        })
        .collect();
    let (dispatch_records, all_terminal_by_kind) = dispatch_rows(&records);
    let mut counts = BTreeMap::new();
    for worker in &workers {
        *counts.entry(worker.state.as_str()).or_insert(0) += 1;
    }
    // Only a pending worker can be "not started": skip reading the lead
    // events when there is none (most runs on a project board).
    let dispatched = if workers.iter().any(|w| w.state == State::Pending) {
        dispatch_times(&run.lead_events_path)
    } else {
        HashMap::new()
    };
    let mut attention = Vec::new();
    for worker in &workers {
        if worker.state.needs_attention() {
            attention.push(Attention {
                dispatch_name: worker.dispatch_name,
                state: worker.state,
                reason: worker.reason.clone(),
            });
        } else if worker.state == State::Pending
            && let Some(at) = dispatched.get(worker.dispatch_name)
            && now - at > NOT_STARTED_SECS
        {
            attention.push(Attention {
                dispatch_name: worker.dispatch_name,
                state: worker.state,
                reason: Cow::Owned(format!(
                    "not started: dispatched {} ago (lead event `{DISPATCH_EVENT}`) and no sidecar, heartbeat, log or result yet",
                    clock::short_duration(now - at)
                )),
            });
        } else if let Some(blocker) = &worker.blocker {
            attention.push(Attention {
                dispatch_name: worker.dispatch_name,
                state: worker.state,
                reason: Cow::Owned(format!("heartbeat blocker: {}", fsread::escape(blocker))),
            });
        }
        for anomaly in &worker.anomalies {
            attention.push(Attention {
                dispatch_name: worker.dispatch_name,
                state: worker.state,
                reason: Cow::Owned(format!(
                    "{}: `{}` not trusted",
                    anomaly.kind,
                    fsread::escape(&anomaly.observed)
                )),
            });
        }
    }
    RunStatus {
        landing: crate::land::gate::standing(run, &state).ok().flatten(),
        run_id: &run.run_id,
        run_dir: &run.dir,
        task_key: &run.task_key,
        task_type: run.task_type.as_str(),
        all_terminal: workers.iter().all(|w| w.state.is_terminal()),
        workers,
        counts,
        attention,
        dispatches: dispatch_records,
        all_terminal_by_kind,
    }
}

/// The boards of many runs, spread over the available cores (a project can
/// hold thousands of runs; the work is independent per run).
pub(super) fn boards(runs: &[Run], now: i64, tail: Option<usize>) -> Vec<RunStatus<'_>> {
    par_map(runs, |run| run_status(run, now, tail))
}

/// When the lead last recorded dispatching each worker: the `ts` of the
/// latest `worker-dispatched` lead event per `dispatchName` field. A missing
/// or unreadable log is simply no information.
pub(in crate::lifecycle) fn dispatch_times(events: &Path) -> HashMap<String, i64> {
    let mut times = HashMap::new();
    let Ok(bytes) = fsread::read_no_follow(events, fsread::Kind::Events) else {
        return times;
    };
    for line in bytes.split(|b| *b == b'\n') {
        let Ok(event) = serde_json::from_slice::<DispatchEvent>(line) else {
            continue;
        };
        if event.kind != DISPATCH_EVENT {
            continue;
        }
        if let (Some(name), Some(at)) = (
            event.fields.dispatch_name,
            event.ts.as_deref().and_then(clock::parse_rfc3339),
        ) {
            times.insert(name, at);
        }
    }
    times
}

/// The parts of a lead event [`dispatch_times`] reads.
#[derive(Debug, Deserialize)]
pub(super) struct DispatchEvent {
    kind: String,
    ts: Option<String>,
    #[serde(default)]
    fields: DispatchFields,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct DispatchFields {
    dispatch_name: Option<String>,
}

/// The last `lines` lines of a log, lossily decoded; empty when unreadable.
pub(super) fn log_tail(path: &Path, lines: usize) -> Vec<String> {
    let want = (lines as u64)
        .saturating_mul(TAIL_BYTES_PER_LINE)
        .max(TAIL_BYTES_MIN);
    // From the end, never blocking on a FIFO, never following a link.
    let Ok((bytes, cut)) = fsread::read_tail(path, want, fsread::Follow::No) else {
        return Vec::new();
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut all: Vec<&str> = text.lines().collect();
    if cut && !all.is_empty() {
        all.remove(0); // cut by the seek
    }
    let skip = all.len().saturating_sub(lines);
    all[skip..].iter().map(|l| (*l).to_owned()).collect()
}
