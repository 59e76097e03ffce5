//! Gathering one run's records and evidence into its board: each worker's
//! row, a dispatch line for every attempt, the counts, the attention list
//! and the run's own line.
//!
//! One derivation serves every part. A worker's row is its most recently
//! recorded attempt (`TeamState::latest_of_worker`; a stopped review does
//! not hide the worker's completed own work, [`row_attempt`]), classified by
//! [`classify_attempt`] exactly as that attempt's dispatch line is, so the
//! two never disagree; a worker okstra has no record of is judged from its
//! files alone ([`classify`]).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::classify::{
    Anomaly, Attempt, Evidence, Verdict, classify, classify_attempt, parse_heartbeat,
};
use super::dispatch_rows::{DispatchRow, dispatch_rows};
use super::files::RunFiles;
use super::outcome::{self, RunLine};
use super::{DISPATCH_EVENT, NOT_STARTED_SECS, TAIL_BYTES_MIN, TAIL_BYTES_PER_LINE};
use crate::clock;
use crate::derive::liveness::{self, Live};
use crate::fsread;
use crate::lifecycle::{Run, par_map};
use crate::process_group as process;
use crate::provider_exec::sidecar;
use crate::run::layout;
use crate::run::roster::Assignment;
use crate::run::team_state::{DispatchRecord, TeamState};
use crate::vocab::BoardState;

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
    pub state: BoardState,
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
    /// The attempt this row shows: the worker's most recently recorded one
    /// (its own work, a review round, a critique, a repair). `None` when
    /// okstra recorded none and the row is judged from the files alone.
    pub attempt: Option<AttemptRef>,
}

/// Which recorded attempt a row shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AttemptRef {
    pub dispatch_name: String,
    pub kind: String,
    pub attempt: u32,
}

/// One entry of a run's attention list.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Attention<'a> {
    pub dispatch_name: &'a str,
    pub state: BoardState,
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
    /// Every attempt of every dispatch okstra recorded (initial, critic,
    /// reverify, retry, the report writer's repair), in recorded order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dispatches: Vec<DispatchRow>,
    /// Per dispatch kind, whether the latest attempt of every dispatch of
    /// it is terminal.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub all_terminal_by_kind: BTreeMap<String, bool>,
    /// An implementation run's landing gate, from its records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub landing: Option<crate::land::gate::Standing>,
    /// The run as a whole: its phase, round and outcome.
    pub run: RunLine,
    /// Why the team state could not be read (the board then shows the
    /// workers from their files alone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub team_state_error: Option<String>,
}

/// Where one worker's (or attempt's) files are.
struct Sources<'p> {
    sidecar: Cow<'p, Path>,
    /// The log when the sidecar names none.
    log: Cow<'p, Path>,
    heartbeat: Cow<'p, Path>,
    results: [&'p Path; 2],
}

impl<'p> Sources<'p> {
    /// An assignment's own files (a worker with no record).
    fn of_assignment(assignment: &'p Assignment) -> Sources<'p> {
        let paths = &assignment.paths;
        Sources {
            sidecar: Cow::Owned(layout::sidecar(&paths.prompt_path)),
            log: Cow::Owned(layout::log(&paths.prompt_path)),
            heartbeat: Cow::Borrowed(&paths.heartbeat_path),
            results: [&paths.result_path, &paths.worker_results_path],
        }
    }

    /// A recorded attempt's files (its paths were confined to the run when
    /// the team state was read). Its heartbeat is its assignment's when it
    /// is the assignment's own dispatch, else the one named after it.
    fn of_record(run: &Run, record: &'p DispatchRecord) -> Sources<'p> {
        let heartbeat = run
            .assignments
            .iter()
            .find(|a| a.dispatch_name == record.dispatch_name)
            .map_or_else(
                || run.layout().heartbeat(&record.dispatch_name),
                |a| a.paths.heartbeat_path.clone(),
            );
        Sources {
            sidecar: record.sidecar_path.as_deref().map_or_else(
                || Cow::Owned(layout::sidecar(&record.prompt_path)),
                Cow::Borrowed,
            ),
            log: record.log_path.as_deref().map_or_else(
                || Cow::Owned(layout::log(&record.prompt_path)),
                Cow::Borrowed,
            ),
            heartbeat: Cow::Owned(heartbeat),
            results: [&record.result_path, &record.worker_results_path],
        }
    }
}

/// The evidence gathered for a worker or an attempt, with the sidecar and
/// log paths it was read from.
struct Gathered {
    evidence: Evidence,
    sidecar_path: PathBuf,
    log_path: PathBuf,
}

/// Gather the evidence at `sources`.
fn gather(run: &Run, sources: &Sources<'_>, now: i64, files: &mut RunFiles<'_>) -> Gathered {
    let sidecar_path = sources.sidecar.clone().into_owned();
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
            || sources.log.clone().into_owned(),
            |recorded| run.resolve(recorded),
        );
    if let Some(side) = &evidence.sidecar
        && !side.is_exited()
        && let Some(pid) = side.pid
    {
        let started = side.started_ts.unwrap_or(i64::MAX);
        evidence.wrapper_alive = Some(process::wrapper_alive(pid, started));
    }
    let path = &*sources.heartbeat;
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
    for path in sources.results {
        if files.is_file(path) {
            evidence.any_result = true;
        } else {
            evidence.missing_results.push(path.to_path_buf());
        }
    }
    Gathered {
        evidence,
        sidecar_path,
        log_path,
    }
}

/// The verdict on one recorded attempt, from its record, what of it still
/// runs (`derive::liveness`), and (when gathered) its files.
fn attempt_verdict(
    record: &DispatchRecord,
    life: liveness::State,
    gathered: Option<&Gathered>,
    now: i64,
) -> Verdict {
    classify_attempt(
        &Attempt {
            state: record.state(),
            life,
            detail: record.detail.as_deref(),
            evidence: gathered.map(|g| &g.evidence),
        },
        now,
    )
}

/// Whether `record` still runs, is with the host, ended or was abandoned.
fn life_of(record: &DispatchRecord) -> liveness::State {
    let live = if record.ending.is_some() {
        Live::Nothing
    } else {
        crate::run::live::liveness(record)
    };
    liveness::of_record(record, live)
}

/// The verdict on one recorded attempt of `run` (what `okstra await` shows
/// for an attempt not ended): the same derivation as its board row.
pub fn verdict_of_attempt(run: &Run, record: &DispatchRecord, now: i64) -> Verdict {
    let mut files = RunFiles::new(&run.dir);
    let gathered = record
        .ending
        .is_none()
        .then(|| gather(run, &Sources::of_record(run, record), now, &mut files));
    attempt_verdict(record, life_of(record), gathered.as_ref(), now)
}

/// The verdict on a worker okstra has no record of, from its files alone.
pub fn verdict_of_worker(run: &Run, assignment: &Assignment, now: i64) -> Verdict {
    let mut files = RunFiles::new(&run.dir);
    let gathered = gather(run, &Sources::of_assignment(assignment), now, &mut files);
    classify(&gathered.evidence, now)
}

/// The board row for one assignment, shown by `record` (its latest
/// attempt) when it has one.
fn worker_status<'a>(
    assignment: &'a Assignment,
    verdict: Verdict,
    gathered: Gathered,
    record: Option<&DispatchRecord>,
    now: i64,
    tail: Option<usize>,
) -> WorkerStatus<'a> {
    let Gathered {
        evidence,
        sidecar_path,
        log_path,
    } = gathered;
    let side = evidence.sidecar.as_ref();
    let beat = &evidence.heartbeat;
    let at = |text: &Option<String>| text.as_deref().and_then(clock::parse_rfc3339);
    let started_ts = record
        .and_then(|r| at(&r.started_at))
        .or_else(|| side.and_then(|s| s.started_ts))
        .or(beat.first_ts);
    let ended_ts = match record {
        Some(r) => at(&r.ended_at).or_else(|| {
            (r.ending.is_some())
                .then(|| side.and_then(|s| s.ended_ts))
                .flatten()
        }),
        None => side.and_then(|s| s.ended_ts).or_else(|| {
            (verdict.state.is_terminal() && side.is_none())
                .then_some(beat.last_ts)
                .flatten()
        }),
    };
    let elapsed_seconds = match (side.and_then(|s| s.duration_ms), started_ts, ended_ts) {
        (Some(ms), _, _) if record.is_none_or(|r| r.ending.is_some()) => Some(ms / 1000),
        (_, Some(start), Some(end)) => Some(end - start),
        (_, Some(start), None) if !verdict.state.is_terminal() => Some(now - start),
        _ => None,
    };
    let exit_code = record
        .and_then(|r| r.exit_code)
        .or_else(|| side.and_then(|s| s.exit_code));
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
        exit_code,
        started_ts,
        ended_ts,
        elapsed_seconds,
        last_activity_ts: verdict.last_activity.or(ended_ts),
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
        attempt: record.map(|r| AttemptRef {
            dispatch_name: r.dispatch_name.clone(),
            kind: r.dispatch_kind.as_string(),
            attempt: r.attempt,
        }),
    }
}

/// The team state of `run`, or why it cannot be read. A run without one
/// (a hand-made folder) simply has no records.
fn read_team_state(run: &Run) -> (TeamState, Option<String>) {
    match run.team_state() {
        Ok(state) => (state, None),
        Err(_) if std::fs::symlink_metadata(&run.team_state_path).is_err() => {
            (TeamState::default(), None)
        }
        Err(err) => (TeamState::default(), Some(format!("{err:#}"))),
    }
}

/// The board for one run.
pub fn run_status(run: &Run, now: i64, tail: Option<usize>) -> RunStatus<'_> {
    let mut files = RunFiles::new(&run.dir);
    let (state, team_state_error) = read_team_state(run);
    let has_report = files.is_file(&run.report_data_path);
    // Checking the report is most of the cost of a finished run's board,
    // and it is needed only once nothing is live: when every attempt has
    // ended (so the run is most likely over) it runs beside the rest.
    let early = has_report && state.dispatches.iter().all(|r| r.ending.is_some());
    std::thread::scope(|scope| {
        // A thread that cannot be started leaves the check to this one.
        let checked = early
            .then(|| {
                std::thread::Builder::new()
                    .spawn_scoped(scope, || outcome::check_report(run))
                    .ok()
            })
            .flatten();
        let report = move || match checked {
            Some(handle) => handle.join().unwrap_or_else(|_| {
                outcome::ReportCheck::Invalid(vec!["the report could not be checked".to_owned()])
            }),
            None => outcome::check_report(run),
        };
        board_of(
            run,
            &state,
            team_state_error,
            now,
            tail,
            &mut files,
            has_report,
            report,
        )
    })
}

/// The attempt a worker's row shows: its most recently recorded one — but
/// a review, critique or fix check that was stopped (Ctrl-C, `okstra
/// cancel`, the budget) does not hide the worker's own work when that
/// completed: the worker did its part, the run stopped (its line says so,
/// and the stopped attempt keeps its dispatch line).
fn row_attempt<'s>(
    state: &'s TeamState,
    worker_id: &str,
    own_dispatch: &str,
) -> Option<&'s crate::run::team_state::DispatchRecord> {
    let latest = state.latest_of_worker(worker_id)?;
    if latest.dispatch_name == own_dispatch || !latest.was_interrupted() {
        return Some(latest);
    }
    match state.latest(own_dispatch) {
        Some(own) if own.ending == Some(crate::vocab::Ending::Completed) => Some(own),
        _ => Some(latest),
    }
}

/// The board of `run` whose team state is `state`; `report` checks its
/// report when the run's line needs it.
#[expect(
    clippy::too_many_arguments,
    reason = "one run's gathered inputs, passed once from `run_status`"
)]
fn board_of<'r>(
    run: &'r Run,
    state: &TeamState,
    team_state_error: Option<String>,
    now: i64,
    tail: Option<usize>,
    files: &mut RunFiles<'_>,
    has_report: bool,
    report: impl FnOnce() -> outcome::ReportCheck,
) -> RunStatus<'r> {
    let records = &state.dispatches;
    let shown: Vec<Option<usize>> = run
        .assignments
        .iter()
        .map(|a| {
            let row = row_attempt(state, &a.worker_id, &a.dispatch_name)?;
            records.iter().position(|r| std::ptr::eq(r, row))
        })
        .collect();
    // Files are read for an attempt not ended (they refine it) and for the
    // ones a row shows (their times, heartbeat and log); an ended attempt's
    // dispatch line needs its record alone.
    let mut gathered: Vec<Option<Gathered>> = records
        .iter()
        .enumerate()
        .map(|(index, record)| {
            (record.ending.is_none() || shown.contains(&Some(index)))
                .then(|| gather(run, &Sources::of_record(run, record), now, files))
        })
        .collect();
    let lives: Vec<liveness::State> = records.iter().map(life_of).collect();
    let verdicts: Vec<Verdict> = records
        .iter()
        .zip(&lives)
        .zip(&gathered)
        .map(|((record, life), found)| attempt_verdict(record, *life, found.as_ref(), now))
        .collect();
    let (dispatch_records, all_terminal_by_kind) = dispatch_rows(records, &verdicts);
    let workers: Vec<WorkerStatus<'_>> = run
        .assignments
        .iter()
        .zip(&shown)
        .map(|(a, shown)| {
            if let Some(index) = *shown {
                let found = gathered[index].take().unwrap_or_else(|| {
                    gather(run, &Sources::of_record(run, &records[index]), now, files)
                });
                let verdict = verdicts[index].clone();
                worker_status(a, verdict, found, Some(&records[index]), now, tail)
            } else {
                let found = gather(run, &Sources::of_assignment(a), now, files);
                let verdict = classify(&found.evidence, now);
                worker_status(a, verdict, found, None, now, tail)
            }
        })
        .collect();
    let mut counts = BTreeMap::new();
    for worker in &workers {
        *counts.entry(worker.state.as_str()).or_insert(0) += 1;
    }
    let events = outcome::Events::read(&run.lead_events_path);
    let mut attention = Vec::new();
    for worker in &workers {
        if worker.state.needs_attention() {
            attention.push(Attention {
                dispatch_name: worker.dispatch_name,
                state: worker.state,
                reason: worker.reason.clone(),
            });
        } else if worker.state == BoardState::Pending
            && let Some(at) = events.dispatched.get(worker.dispatch_name)
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
    // The run's outcome (`derive::liveness`) from each dispatch's latest
    // attempt; a worker the files show working (a host that runs workers
    // without records) or a driver that holds the run keeps it running.
    let latest: Vec<liveness::State> = state
        .latest_attempts()
        .into_iter()
        .filter_map(|latest| records.iter().position(|r| std::ptr::eq(r, latest)))
        .map(|index| lives[index])
        .collect();
    let driven = workers
        .iter()
        .any(|w| w.attempt.is_none() && w.state.is_live())
        || crate::run::lease::Lease::live_holder(run).is_some();
    let run_line = outcome::run_line(run, state, &events, &latest, driven, has_report, report);
    RunStatus {
        // Only an implementation run has a change to land: no other run
        // pays for reading its records again.
        landing: (run.task_type == crate::catalog::TaskType::Implementation)
            .then(|| crate::run::Records::load(run.clone(), crate::run::Parts::FACTS).ok())
            .flatten()
            .and_then(|records| crate::derive::landing::standing(&records)),
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
        run: run_line,
        team_state_error,
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
#[cfg(test)]
pub(in crate::lifecycle) fn dispatch_times(
    events: &Path,
) -> std::collections::HashMap<String, i64> {
    outcome::Events::read(events).dispatched
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
