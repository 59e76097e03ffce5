//! `okstra status`: one row per worker assignment of a run (or of every run
//! under a project), its state, and what needs attention.
//!
//! A worker's state is derived, never stored: from its status sidecar (CLI
//! workers), its heartbeat file (any worker), its log's modification time,
//! and whether its Result Paths exist. [`classify`] is the whole state
//! machine and is pure, so it is unit-tested directly; the rest gathers
//! evidence from disk and draws it.
//!
//! `--watch` redraws in place on a terminal; otherwise it appends one
//! snapshot per change. It ends when every worker is terminal (or when
//! `--timeout` expires, exit 1). Attention states never change the exit
//! code of a plain `status`: it reports, it does not judge.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fmt::{self, Write as _};
use std::fs::{self, File};
use std::io::{self, IsTerminal, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::sidecar::{self, Sidecar, Stage};
use super::{Assignment, Run, clock, par_map, process};
use crate::cli::StatusArgs;
use crate::exit::ExitStatus;
use crate::fsread;
use crate::provider_exec::status as exec_status;
use crate::team_state::DispatchRecord;

use super::dispatch_rows::{DispatchRow, dispatch_rows};

/// No log or heartbeat activity for this long while running: `stale`.
pub const STALE_SECS: i64 = 600;
/// A worker the lead dispatched this long ago with no sign of life yet
/// needs attention (the reference harness's not-started limit).
pub const NOT_STARTED_SECS: i64 = 180;
/// The lead event that records a dispatch (`--field dispatchName=<name>`).
const DISPATCH_EVENT: &str = "worker-dispatched";
/// Heartbeat timestamps further ahead than this are not trusted.
pub const FUTURE_SKEW_SECS: i64 = 60;
/// Heartbeat phase that ends a worker.
const COMPLETE_PHASE: &str = "complete";
/// Bytes read from a log's end per requested tail line (plus a floor).
const TAIL_BYTES_PER_LINE: u64 = 512;
const TAIL_BYTES_MIN: u64 = 16 * 1024;
/// Version of the `--json` document.
const STATUS_VERSION: u32 = 1;

/// A worker's state. Terminal states never change again on their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// No sidecar, heartbeat, log or result yet.
    Pending,
    /// Working, with activity in the last [`STALE_SECS`].
    Running,
    /// Running, but silent for [`STALE_SECS`].
    Stale,
    /// Running, and its latest heartbeat names a blocker.
    Blocked,
    /// Finished, but with a nonzero exit code or a Result Path missing.
    Exited,
    /// Stopped by provider-exec's idle watchdog (exit 124).
    IdleKilled,
    /// Stopped because its wrapper was signalled (exit 128+N).
    Signalled,
    /// Its wrapper died without finishing the sidecar.
    Lost,
    /// Finished, exit 0 (or heartbeat `complete`), every Result Path present.
    Done,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Pending => "pending",
            State::Running => "running",
            State::Stale => "stale",
            State::Blocked => "blocked",
            State::Exited => "exited",
            State::IdleKilled => "idle-killed",
            State::Signalled => "signalled",
            State::Lost => "lost",
            State::Done => "done",
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            State::Exited | State::IdleKilled | State::Signalled | State::Lost | State::Done
        )
    }

    fn needs_attention(self) -> bool {
        !matches!(self, State::Pending | State::Running | State::Done)
    }
}

/// Something in a worker's files that was not trusted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Anomaly {
    pub kind: &'static str,
    /// The value as found.
    pub observed: String,
    /// What it was clamped to (Unix seconds), when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clamped_ts: Option<i64>,
}

/// What a heartbeat file says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Heartbeat {
    pub count: usize,
    pub first_ts: Option<i64>,
    pub last_ts: Option<i64>,
    pub phase: Option<String>,
    pub summary: Option<String>,
    pub blocker: Option<String>,
    pub changed_files: usize,
    pub anomalies: Vec<Anomaly>,
}

/// Parse heartbeat JSONL `{ts, phase, summary, changedFiles, blocker}`.
/// Lines that are not objects are skipped; a `ts` more than
/// [`FUTURE_SKEW_SECS`] ahead of `now` is recorded as an anomaly and ignored.
pub fn parse_heartbeat(text: &str, now: i64) -> Heartbeat {
    let mut beat = Heartbeat::default();
    let limit = now + FUTURE_SKEW_SECS;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(Value::Object(row)) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        beat.count += 1;
        let ts = match row.get("ts") {
            Some(Value::String(text)) => Some((text.clone(), clock::parse_rfc3339(text))),
            Some(Value::Number(n)) => Some((n.to_string(), n.as_i64())),
            _ => None,
        };
        match ts {
            Some((observed, Some(ts))) if ts > limit => beat.anomalies.push(Anomaly {
                kind: "future_heartbeat_timestamp",
                observed,
                clamped_ts: Some(limit),
            }),
            Some((_, Some(ts))) => {
                beat.first_ts.get_or_insert(ts);
                beat.last_ts = Some(beat.last_ts.map_or(ts, |last| last.max(ts)));
            }
            Some((observed, None)) => beat.anomalies.push(Anomaly {
                kind: "unparseable_heartbeat_timestamp",
                observed,
                clamped_ts: None,
            }),
            None => {}
        }
        let text = |key: &str| match row.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_owned()),
            _ => None,
        };
        if let Some(phase) = text("phase") {
            beat.phase = Some(phase);
        }
        if let Some(summary) = text("summary") {
            beat.summary = Some(summary);
        }
        // A blocker holds until a later heartbeat stops naming it.
        beat.blocker = text("blocker");
        if let Some(Value::Array(files)) = row.get("changedFiles") {
            beat.changed_files = files.len();
        }
    }
    beat
}

/// Everything known about one worker, gathered from disk.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    pub sidecar: Option<Sidecar>,
    /// A sidecar that exists but could not be read.
    pub sidecar_error: Option<String>,
    /// Whether the sidecar's wrapper pid is still that wrapper (asked only
    /// of sidecars at `started`).
    pub wrapper_alive: Option<bool>,
    pub heartbeat: Heartbeat,
    pub heartbeat_mtime: Option<i64>,
    pub log_mtime: Option<i64>,
    pub missing_results: Vec<PathBuf>,
    pub any_result: bool,
}

/// The verdict on one worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub state: State,
    pub reason: Cow<'static, str>,
    pub last_activity: Option<i64>,
}

/// The state machine. `now` is Unix seconds.
pub fn classify(evidence: &Evidence, now: i64) -> Verdict {
    let beat = &evidence.heartbeat;
    let results_ok = evidence.missing_results.is_empty();
    let missing = || {
        let names: Vec<String> = evidence
            .missing_results
            .iter()
            .map(|p| format!("`{}`", p.display()))
            .collect();
        format!("Result Path missing: {}", names.join(", "))
    };
    let ended = evidence.sidecar.as_ref().and_then(|s| s.ended_ts);
    let mut last_activity = [
        evidence.log_mtime,
        beat.last_ts,
        evidence.heartbeat_mtime,
        ended,
    ]
    .into_iter()
    .flatten()
    .max();
    if last_activity.is_none() {
        last_activity = evidence.sidecar.as_ref().and_then(|s| s.started_ts);
    }
    let verdict = |state: State, reason: Cow<'static, str>| Verdict {
        state,
        reason,
        last_activity,
    };

    if let Some(side) = &evidence.sidecar {
        if side.stage == Stage::Exited {
            let by = side.terminated_by.as_deref();
            let code = side
                .exit_code
                .map_or_else(|| "no exit code".to_owned(), |c| format!("exit code {c}"));
            return if by == Some("reaper") {
                let why = side.reason.as_deref().unwrap_or("wrapper-lost");
                verdict(
                    State::Lost,
                    format!("finished by `okstra reap` ({why})").into(),
                )
            } else if side.timeout || by == Some("idle-watchdog") {
                verdict(
                    State::IdleKilled,
                    format!("idle watchdog stopped it ({code})").into(),
                )
            } else if by == Some("signal") {
                let signal = side.signal.as_deref().unwrap_or("a signal");
                verdict(
                    State::Signalled,
                    format!("its wrapper got {signal} and stopped it ({code})").into(),
                )
            } else if side.exit_code != Some(0) {
                verdict(State::Exited, code.into())
            } else if !results_ok {
                verdict(
                    State::Exited,
                    format!("exit code 0 but {}", missing()).into(),
                )
            } else {
                verdict(State::Done, "exit code 0, every Result Path present".into())
            };
        }
        if evidence.wrapper_alive == Some(false) {
            let pid = side.pid.map_or_else(String::new, |p| format!(" {p}"));
            return verdict(
                State::Lost,
                format!(
                    "wrapper pid{pid} is gone but its sidecar still says `started`; `okstra reap` lists what it left"
                )
                .into(),
            );
        }
    } else if beat.phase.as_deref() == Some(COMPLETE_PHASE) {
        return if results_ok {
            verdict(
                State::Done,
                "heartbeat `complete`, every Result Path present".into(),
            )
        } else {
            verdict(
                State::Exited,
                format!("heartbeat `complete` but {}", missing()).into(),
            )
        };
    } else if beat.count == 0 && evidence.log_mtime.is_none() {
        if results_ok {
            return verdict(State::Done, "every Result Path present".into());
        }
        if !evidence.any_result && evidence.sidecar_error.is_none() {
            return verdict(State::Pending, "not started".into());
        }
    }

    // Working: blocked, stale or running.
    if let Some(blocker) = &beat.blocker {
        return verdict(
            State::Blocked,
            format!("heartbeat blocker: {}", fsread::escape(blocker)).into(),
        );
    }
    match last_activity {
        Some(at) if now - at > STALE_SECS => verdict(
            State::Stale,
            format!(
                "no log or heartbeat activity for {}",
                clock::short_duration(now - at)
            )
            .into(),
        ),
        _ => verdict(State::Running, "".into()),
    }
}

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
}

/// The `--json` document.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Board<'a> {
    schema_version: u32,
    now_ts: i64,
    runs: &'a [RunStatus<'a>],
}

/// One run folder, opened once: the files a board reads for a run (about
/// fifteen) are opened relative to it, a path walk of two or three
/// components instead of ten. It also remembers which files exist, one
/// folder listing per folder instead of one `stat` per path: a run's
/// workers share a handful of folders (results, heartbeats), so a large
/// project costs a few `getdents` per run. Paths outside the run folder
/// (hand-made manifests) are used as they are.
#[derive(Debug)]
struct RunFiles<'a> {
    dir: &'a Path,
    fd: Option<OwnedFd>,
    /// Listed folders and their files; `None` if a folder cannot be listed.
    folders: Vec<(PathBuf, Option<HashSet<OsString>>)>,
}

impl<'a> RunFiles<'a> {
    fn new(dir: &'a Path) -> RunFiles<'a> {
        // A handle for `*at` calls only; `O_PATH` needs no read permission.
        #[cfg(any(target_os = "linux", target_os = "android"))]
        const HANDLE: OFlags = OFlags::PATH;
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        const HANDLE: OFlags = OFlags::RDONLY;
        let flags = HANDLE | OFlags::DIRECTORY | OFlags::CLOEXEC;
        RunFiles {
            dir,
            fd: rustix::fs::open(dir, flags, Mode::empty()).ok(),
            folders: Vec::new(),
        }
    }

    /// The open run folder and `path` relative to it, when it is inside.
    fn inside<'p>(&self, path: &'p Path) -> Option<(&OwnedFd, &'p Path)> {
        let fd = self.fd.as_ref()?;
        let relative = path.strip_prefix(self.dir).ok()?;
        (!relative.as_os_str().is_empty()).then_some((fd, relative))
    }

    fn open(&self, path: &Path) -> io::Result<File> {
        match self.inside(path) {
            Some((fd, relative)) => {
                // Never block on a FIFO; readers then refuse it (`fsread`).
                let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK;
                Ok(File::from(rustix::fs::openat(
                    fd,
                    relative,
                    flags,
                    Mode::empty(),
                )?))
            }
            None => fsread::open_raw(path),
        }
    }

    /// Modification time, Unix seconds.
    fn mtime(&self, path: &Path) -> Option<i64> {
        match self.inside(path) {
            Some((fd, relative)) => rustix::fs::statat(fd, relative, AtFlags::empty())
                .ok()
                .map(|stat| stat.st_mtime),
            None => fs::metadata(path)
                .and_then(|m| m.modified())
                .ok()
                .map(clock::to_unix),
        }
    }

    /// Whether `path` is a regular file (or a symlink to one).
    fn is_file(&mut self, path: &Path) -> bool {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return false;
        };
        let index = self
            .folders
            .iter()
            .position(|(dir, _)| dir == parent)
            .unwrap_or_else(|| {
                let names = self.list_files(parent);
                self.folders.push((parent.to_path_buf(), names));
                self.folders.len() - 1
            });
        match &self.folders[index].1 {
            Some(names) => {
                names.contains(name) && (!names.contains(&symlink_key(name)) || path.is_file())
            }
            None => path.is_file(),
        }
    }

    /// Names of the files (and symlinks) in `dir`; `None` if it cannot be
    /// listed.
    fn list_files(&self, dir: &Path) -> Option<HashSet<OsString>> {
        let mut names = HashSet::new();
        let mut add = |name: OsString, file: bool, symlink: bool| {
            if symlink {
                names.insert(symlink_key(&name));
                names.insert(name);
            } else if file {
                names.insert(name);
            }
        };
        if let Some((fd, relative)) = self.inside(dir) {
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
            let opened = rustix::fs::openat(fd, relative, flags, Mode::empty()).ok()?;
            for entry in rustix::fs::Dir::new(opened).ok()? {
                let entry = entry.ok()?;
                let kind = entry.file_type();
                add(
                    OsStr::from_bytes(entry.file_name().to_bytes()).to_owned(),
                    kind == FileType::RegularFile,
                    kind == FileType::Symlink,
                );
            }
        } else {
            for entry in fs::read_dir(dir).ok()?.flatten() {
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                add(entry.file_name(), kind.is_file(), kind.is_symlink());
            }
        }
        Some(names)
    }
}

/// Marker entry recording that `name` is a symlink (resolved on demand).
fn symlink_key(name: &OsStr) -> OsString {
    let mut key = OsString::from("\0symlink:");
    key.push(name);
    key
}

/// Gather the evidence for one assignment.
fn gather(
    run: &Run,
    assignment: &Assignment,
    now: i64,
    files: &mut RunFiles<'_>,
    latest: Option<&DispatchRecord>,
) -> (Evidence, PathBuf, PathBuf) {
    // A retried worker is shown by its latest attempt's own sidecar.
    let sidecar_path = latest.and_then(|r| r.sidecar_path.clone()).map_or_else(
        || exec_status::sidecar_path(&assignment.prompt_path),
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
            || exec_status::log_path(&assignment.prompt_path),
            |recorded| run.resolve(recorded),
        );
    if let Some(side) = &evidence.sidecar
        && side.stage != Stage::Exited
        && let Some(pid) = side.pid
    {
        let started = side.started_ts.unwrap_or(i64::MAX);
        evidence.wrapper_alive = Some(process::wrapper_alive(pid, started));
    }
    if let Some(path) = &assignment.heartbeat_path
        && files.is_file(path)
        && let Ok(file) = files.open(path)
        && let Ok(bytes) = fsread::read_opened(file, path, fsread::Kind::Sidecar)
    {
        evidence.heartbeat = parse_heartbeat(&String::from_utf8_lossy(&bytes), now);
        evidence.heartbeat_mtime = files.mtime(path);
    }
    // A finished wrapper's activity is its `ended_ts`; only a live one's
    // log time matters (and is worth a stat).
    if evidence
        .sidecar
        .as_ref()
        .is_none_or(|s| s.stage != Stage::Exited)
    {
        evidence.log_mtime = files.mtime(&log_path);
    }
    for path in [&assignment.result_path, &assignment.worker_results_path]
        .into_iter()
        .flatten()
    {
        if files.is_file(path) {
            evidence.any_result = true;
        } else {
            evidence.missing_results.push(path.clone());
        }
    }
    (evidence, sidecar_path, log_path)
}

/// The board row for one assignment.
fn worker_status<'a>(
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
        role: &assignment.role,
        provider: &assignment.provider,
        model: &assignment.model,
        runner: &assignment.runner,
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
    let records = run
        .team_state_path
        .as_deref()
        .and_then(|path| crate::team_state::read(path).ok())
        .map(|state| crate::dispatch::latest_attempts(&state.dispatches))
        .unwrap_or_default();
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
        run_id: &run.run_id,
        run_dir: &run.dir,
        task_key: &run.task_key,
        task_type: &run.task_type,
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
fn boards(runs: &[Run], now: i64, tail: Option<usize>) -> Vec<RunStatus<'_>> {
    par_map(runs, |run| run_status(run, now, tail))
}

/// When the lead last recorded dispatching each worker: the `ts` of the
/// latest `worker-dispatched` lead event per `dispatchName` field. A missing
/// or unreadable log is simply no information.
pub(super) fn dispatch_times(events: &Path) -> HashMap<String, i64> {
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
struct DispatchEvent {
    kind: String,
    ts: Option<String>,
    #[serde(default)]
    fields: DispatchFields,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DispatchFields {
    dispatch_name: Option<String>,
}

/// The last `lines` lines of a log, lossily decoded; empty when unreadable.
fn log_tail(path: &Path, lines: usize) -> Vec<String> {
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

/// Which runs the command covers.
fn load_runs(args: &StatusArgs) -> Result<Vec<Run>> {
    if let Some(dir) = &args.run_dir {
        let run = Run::load(dir)?;
        return Ok(vec![run]);
    }
    let root = super::project_root(args.project_root.as_deref())?;
    // Manifests load in parallel too: on a large project they are a third
    // of the reading.
    let loaded = par_map(&super::run_dirs(&root)?, |dir| Run::load(dir));
    let mut runs = Vec::with_capacity(loaded.len());
    for result in loaded {
        match result {
            Ok(run) => runs.push(run),
            // Not a run folder (no manifest): not worth a warning.
            Err(super::Error::NotARun { source, .. }) if source.is_not_found() => {}
            Err(err) => {
                let message = fsread::escape(&format!("{err:#}")).into_owned();
                let _ = writeln!(io::stderr(), "warning: skipping a run: {message}");
            }
        }
    }
    Ok(runs)
}

pub fn status_command(args: &StatusArgs) -> Result<ExitStatus> {
    let runs = load_runs(args)?;
    if args.watch {
        return watch(args, &runs);
    }
    let now = clock::unix_now();
    let board = boards(&runs, now, args.log_tail);
    let mut out = io::BufWriter::new(io::stdout().lock());
    if args.json {
        write_json(&mut out, &board, now)?;
    } else {
        write!(out, "{}", render(&board, now, args.run_dir.is_none()))?;
    }
    out.flush()?;
    Ok(ExitStatus::Success)
}

fn write_json(out: &mut impl Write, board: &[RunStatus<'_>], now: i64) -> Result<()> {
    // Straight into the buffered stdout: serialising runs on the board
    // threads into buffers of their own measured slower (the buffers are
    // fresh memory for every run).
    let doc = Board {
        schema_version: STATUS_VERSION,
        now_ts: now,
        runs: board,
    };
    serde_json::to_writer(&mut *out, &doc).context("cannot write the status as JSON")?;
    writeln!(out)?;
    Ok(())
}

/// What makes two snapshots different for `--watch` (not the clock).
fn fingerprint(board: &[RunStatus<'_>]) -> Vec<(String, State, Option<i64>, String)> {
    board
        .iter()
        .flat_map(|run| {
            run.workers.iter().map(|w| {
                (
                    format!("{}/{}", run.run_id, w.dispatch_name),
                    w.state,
                    w.exit_code,
                    w.reason.to_string(),
                )
            })
        })
        .collect()
}

fn watch(args: &StatusArgs, runs: &[Run]) -> Result<ExitStatus> {
    let interval = args.interval.unwrap_or(Duration::from_secs(1));
    let deadline = args.timeout.map(|limit| Instant::now() + limit);
    let terminal = io::stdout().is_terminal() && !args.json;
    let mut last = None;
    loop {
        let now = clock::unix_now();
        let board = boards(runs, now, args.log_tail);
        let print = fingerprint(&board);
        let mut out = io::stdout().lock();
        if terminal {
            // Home the cursor and clear: redraw in place.
            write!(out, "\x1b[H\x1b[2J{}", render(&board, now, runs.len() > 1))?;
        } else if last.as_ref() != Some(&print) {
            if args.json {
                write_json(&mut out, &board, now)?;
            } else {
                writeln!(out, "--- {} ---", clock::rfc3339(now))?;
                write!(out, "{}", render(&board, now, runs.len() > 1))?;
            }
        }
        out.flush()?;
        drop(out);
        last = Some(print);
        if board.iter().all(|run| run.all_terminal) {
            return Ok(ExitStatus::Success);
        }
        if deadline.is_some_and(|d| Instant::now() + interval > d) {
            let _ = writeln!(
                io::stderr(),
                "okstra: `--timeout` expired before every worker finished"
            );
            return Ok(ExitStatus::Failure);
        }
        std::thread::sleep(interval);
    }
}

/// The text board.
fn render(board: &[RunStatus<'_>], now: i64, summary: bool) -> String {
    let mut text = String::new();
    render_into(&mut text, board, now, summary).expect("writing to a String cannot fail");
    // Names and reasons come from files: no terminal escape gets through.
    fsread::escape_keep_lines(&text).into_owned()
}

fn render_into(text: &mut String, board: &[RunStatus<'_>], now: i64, summary: bool) -> fmt::Result {
    // Runs are drawn independently, so a large board is drawn in parallel.
    for part in par_map(board, |run| {
        let mut part = String::new();
        render_run(&mut part, run, now).map(|()| part)
    }) {
        text.push_str(&part?);
    }
    if summary {
        let mut totals: BTreeMap<&str, usize> = BTreeMap::new();
        let mut workers = 0;
        for run in board {
            for (state, count) in &run.counts {
                *totals.entry(state).or_insert(0) += count;
                workers += count;
            }
        }
        let attention: usize = board.iter().map(|r| r.attention.len()).sum();
        writeln!(
            text,
            "{} runs, {workers} workers{}; {attention} need attention",
            board.len(),
            counts_text(&totals)
        )?;
    }
    Ok(())
}

fn counts_text(counts: &BTreeMap<&str, usize>) -> String {
    if counts.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = counts.iter().map(|(s, n)| format!("{n} {s}")).collect();
    format!(": {}", parts.join(", "))
}

fn render_run(text: &mut String, run: &RunStatus<'_>, now: i64) -> fmt::Result {
    writeln!(
        text,
        "{} {} ({})  {}",
        run.task_key,
        run.run_id,
        run.task_type,
        run.run_dir.display()
    )?;
    let header = [
        "DISPATCH", "PROVIDER", "MODEL", "RUNNER", "STATE", "EXIT", "ELAPSED", "ACTIVITY",
    ]
    .map(Cow::Borrowed);
    let rows: Vec<[Cow<'_, str>; 8]> = run
        .workers
        .iter()
        .map(|w| {
            [
                Cow::Borrowed(w.dispatch_name),
                Cow::Borrowed(w.provider),
                Cow::Borrowed(w.model),
                Cow::Borrowed(w.runner),
                Cow::Borrowed(w.state.as_str()),
                w.exit_code
                    .map_or(Cow::Borrowed("-"), |c| Cow::Owned(c.to_string())),
                w.elapsed_seconds.map_or(Cow::Borrowed("-"), |secs| {
                    Cow::Owned(clock::short_duration(secs))
                }),
                w.last_activity_ts.map_or(Cow::Borrowed("-"), |at| {
                    Cow::Owned(format!("{} ago", clock::short_duration(now - at)))
                }),
            ]
        })
        .collect();
    let mut widths = [0; 8];
    for row in rows.iter().chain([&header]) {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    // Cells padded to their column and two spaces apart; no trailing blanks.
    let line = |text: &mut String, cells: &[Cow<'_, str>; 8]| {
        text.push_str("  ");
        for (index, (cell, width)) in cells.iter().zip(widths).enumerate() {
            if index > 0 {
                text.push_str("  ");
            }
            text.push_str(cell);
            text.extend(std::iter::repeat_n(' ', width - cell.chars().count()));
        }
        text.truncate(text.trim_end().len());
        text.push('\n');
    };
    line(text, &header);
    for (row, worker) in rows.iter().zip(&run.workers) {
        line(text, row);
        if let Some(summary) = &worker.summary {
            writeln!(
                text,
                "      {}: {}",
                fsread::escape(worker.phase.as_deref().unwrap_or("heartbeat")),
                fsread::escape(summary)
            )?;
        }
        for tail_line in worker.log_tail.iter().flatten() {
            writeln!(text, "      | {}", fsread::escape(tail_line))?;
        }
    }
    writeln!(
        text,
        "  {} workers{}",
        run.workers.len(),
        counts_text(&run.counts)
    )?;
    for item in &run.attention {
        writeln!(
            text,
            "  attention: {} {}: {}",
            item.dispatch_name,
            item.state.as_str(),
            item.reason
        )?;
    }
    for row in &run.dispatches {
        let usage = row
            .usage
            .as_ref()
            .and_then(|value| serde_json::from_value::<crate::usage::Record>(value.clone()).ok())
            .map_or_else(String::new, |record| format!(" [{}]", record.short()));
        writeln!(
            text,
            "  dispatch: {} {} attempt {} {}{usage}{}",
            row.dispatch_name,
            row.kind,
            row.attempt,
            row.state,
            row.detail.as_deref().map_or_else(String::new, |d| format!(
                ": {}",
                crate::dispatch::printable(d)
            ))
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    const NOW: i64 = 1_800_000_000;

    fn sidecar(json: &str) -> Sidecar {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.status.json");
        fs::write(&path, json).unwrap();
        sidecar::read(&path).unwrap().unwrap()
    }

    fn state(evidence: &Evidence) -> State {
        classify(evidence, NOW).state
    }

    fn row<'a>(
        name: &'a str,
        model: &'a str,
        state: State,
        exit_code: Option<i64>,
    ) -> WorkerStatus<'a> {
        WorkerStatus {
            dispatch_name: name,
            worker_id: name,
            role: "analyser",
            provider: "codex",
            model,
            runner: "cli-wrapper",
            state,
            reason: "".into(),
            exit_code,
            started_ts: Some(NOW - 600),
            ended_ts: None,
            elapsed_seconds: Some(600),
            last_activity_ts: Some(NOW - 5),
            wrapper_pid: None,
            pgid: None,
            phase: None,
            summary: None,
            blocker: None,
            changed_files: 0,
            missing_results: Vec::new(),
            sidecar_path: PathBuf::new(),
            log_path: PathBuf::new(),
            anomalies: Vec::new(),
            log_tail: None,
        }
    }

    #[test]
    fn the_text_board_aligns_columns_without_trailing_blanks() {
        let run = RunStatus {
            run_id: "error-analysis-002",
            run_dir: Path::new("/p/.okstra/tasks/d/g/t/error-analysis-002"),
            task_key: "d/g/t",
            task_type: "error-analysis",
            workers: vec![
                row("codex-worker", "gpt-5.6-sol", State::Running, None),
                row("w", "m", State::Exited, Some(1)),
            ],
            counts: BTreeMap::from([("exited", 1), ("running", 1)]),
            all_terminal: false,
            attention: Vec::new(),
            dispatches: Vec::new(),
            all_terminal_by_kind: BTreeMap::new(),
        };
        let text = render(std::slice::from_ref(&run), NOW, false);
        let expected = [
            "d/g/t error-analysis-002 (error-analysis)  /p/.okstra/tasks/d/g/t/error-analysis-002",
            "  DISPATCH      PROVIDER  MODEL        RUNNER       STATE    EXIT  ELAPSED  ACTIVITY",
            "  codex-worker  codex     gpt-5.6-sol  cli-wrapper  running  -     10m00s   5s ago",
            "  w             codex     m            cli-wrapper  exited   1     10m00s   5s ago",
            "  2 workers: 1 exited, 1 running",
            "",
        ];
        assert_eq!(text, expected.join("\n"));
        // Many runs (drawn in parallel) come out in order, then the totals.
        let many: Vec<RunStatus> = (0..300).map(|_| run.clone()).collect();
        let text = render(&many, NOW, true);
        assert_eq!(text.matches("error-analysis-002 (").count(), 300);
        assert!(text.starts_with(expected[0]));
        assert!(
            text.ends_with("300 runs, 600 workers: 300 exited, 300 running; 0 need attention\n")
        );
    }

    #[test]
    fn run_files_sees_files_and_symlinks_inside_and_outside_the_run() {
        let run = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let results = run.path().join("results");
        fs::create_dir_all(results.join("sub")).unwrap();
        fs::write(results.join("a.md"), "a").unwrap();
        std::os::unix::fs::symlink(results.join("a.md"), results.join("b.md")).unwrap();
        std::os::unix::fs::symlink(results.join("gone.md"), results.join("c.md")).unwrap();
        fs::write(outside.path().join("x.md"), "x").unwrap();

        let mut files = RunFiles::new(run.path());
        let is_file = |files: &mut RunFiles<'_>, name: &str| files.is_file(&results.join(name));
        assert!(is_file(&mut files, "a.md"));
        assert!(is_file(&mut files, "b.md"), "a symlink to a file counts");
        assert!(!is_file(&mut files, "c.md"), "a dangling symlink does not");
        assert!(!is_file(&mut files, "sub"), "a folder is not a file");
        assert!(!is_file(&mut files, "missing.md"));
        assert!(files.is_file(&outside.path().join("x.md")));
        assert!(!files.is_file(&outside.path().join("y.md")));
        assert!(!files.is_file(&run.path().join("no-such-folder/a.md")));

        let mut text = String::new();
        files
            .open(&results.join("b.md"))
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "a");
        assert!(files.open(&outside.path().join("x.md")).is_ok());
        let now = clock::unix_now();
        let mtime = files.mtime(&results.join("a.md")).unwrap();
        assert!((now - mtime).abs() < 60, "{mtime} vs {now}");
        assert_eq!(files.mtime(&results.join("missing.md")), None);
    }

    #[test]
    fn nothing_yet_is_pending() {
        let evidence = Evidence {
            missing_results: vec!["/r/a.md".into()],
            ..Evidence::default()
        };
        assert_eq!(state(&evidence), State::Pending);
    }

    #[test]
    fn exited_sidecars_map_to_terminal_states() {
        let base = |json: &str, missing: bool| Evidence {
            sidecar: Some(sidecar(json)),
            missing_results: if missing {
                vec!["/r/a.md".into()]
            } else {
                vec![]
            },
            ..Evidence::default()
        };
        let ok = r#"{"stage":"exited","exit_code":0}"#;
        assert_eq!(state(&base(ok, false)), State::Done);
        assert_eq!(state(&base(ok, true)), State::Exited);
        assert_eq!(
            state(&base(r#"{"stage":"exited","exit_code":3}"#, false)),
            State::Exited
        );
        assert_eq!(
            state(&base(
                r#"{"stage":"exited","exit_code":124,"timeout":true,"terminated_by":"idle-watchdog"}"#,
                false
            )),
            State::IdleKilled
        );
        assert_eq!(
            state(&base(
                r#"{"stage":"exited","exit_code":143,"terminated_by":"signal","signal":"SIGTERM"}"#,
                false
            )),
            State::Signalled
        );
        assert_eq!(
            state(&base(
                r#"{"stage":"exited","terminated_by":"reaper","reason":"wrapper-lost"}"#,
                false
            )),
            State::Lost
        );
    }

    #[test]
    fn started_sidecars_are_lost_running_or_stale() {
        let json = format!(
            r#"{{"stage":"started","pid":42,"started_ts":{}}}"#,
            NOW - 900
        );
        let mut evidence = Evidence {
            sidecar: Some(sidecar(&json)),
            wrapper_alive: Some(false),
            missing_results: vec!["/r/a.md".into()],
            ..Evidence::default()
        };
        assert_eq!(state(&evidence), State::Lost);
        evidence.wrapper_alive = Some(true);
        evidence.log_mtime = Some(NOW - 10);
        assert_eq!(state(&evidence), State::Running);
        evidence.log_mtime = Some(NOW - STALE_SECS - 1);
        assert_eq!(state(&evidence), State::Stale);
        // No log at all: the start time is the last sign of life.
        evidence.log_mtime = None;
        assert_eq!(state(&evidence), State::Stale);
    }

    #[test]
    fn heartbeats_drive_native_workers() {
        let text = format!(
            "{{\"ts\":\"{}\",\"phase\":\"analysis\",\"summary\":\"reading\"}}\nnot json\n{{\"ts\":\"{}\",\"phase\":\"analysis\",\"blocker\":\"need creds\",\"changedFiles\":[\"a\",\"b\"]}}\n",
            clock::rfc3339(NOW - 100),
            clock::rfc3339(NOW - 50)
        );
        let beat = parse_heartbeat(&text, NOW);
        assert_eq!(beat.count, 2);
        assert_eq!(beat.first_ts, Some(NOW - 100));
        assert_eq!(beat.last_ts, Some(NOW - 50));
        assert_eq!(beat.summary.as_deref(), Some("reading"));
        assert_eq!(beat.changed_files, 2);
        let mut evidence = Evidence {
            heartbeat: beat,
            missing_results: vec!["/r/a.md".into()],
            ..Evidence::default()
        };
        assert_eq!(state(&evidence), State::Blocked);
        evidence.heartbeat.blocker = None;
        assert_eq!(state(&evidence), State::Running);
        evidence.heartbeat.phase = Some("complete".into());
        assert_eq!(state(&evidence), State::Exited);
        evidence.missing_results.clear();
        assert_eq!(state(&evidence), State::Done);
    }

    #[test]
    fn future_heartbeats_are_anomalies_not_activity() {
        let far = clock::rfc3339(NOW + 3600);
        let near = clock::rfc3339(NOW + 30);
        let text = format!("{{\"ts\":\"{far}\",\"phase\":\"x\"}}\n");
        let beat = parse_heartbeat(&text, NOW);
        assert_eq!(beat.last_ts, None);
        assert_eq!(
            beat.anomalies,
            vec![Anomaly {
                kind: "future_heartbeat_timestamp",
                observed: far,
                clamped_ts: Some(NOW + FUTURE_SKEW_SECS),
            }]
        );
        let beat = parse_heartbeat(&format!("{{\"ts\":\"{near}\"}}\n"), NOW);
        assert_eq!(beat.last_ts, Some(NOW + 30));
        assert!(beat.anomalies.is_empty());
    }

    #[test]
    fn terminal_and_attention_sets() {
        for s in [
            State::Exited,
            State::IdleKilled,
            State::Signalled,
            State::Lost,
            State::Done,
        ] {
            assert!(s.is_terminal());
        }
        for s in [State::Pending, State::Running, State::Stale, State::Blocked] {
            assert!(!s.is_terminal());
        }
        assert!(!State::Done.needs_attention());
        assert!(State::Stale.needs_attention());
    }

    #[test]
    fn log_tail_returns_the_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.log");
        let text = (1..=100).fold(String::new(), |mut text, i| {
            writeln!(text, "line {i}").unwrap();
            text
        });
        fs::write(&path, text).unwrap();
        assert_eq!(log_tail(&path, 2), vec!["line 99", "line 100"]);
        assert!(log_tail(&dir.path().join("none"), 3).is_empty());
    }
}
