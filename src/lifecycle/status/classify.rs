//! A worker's state from its evidence: the pure state machine of `okstra status`,
//! and heartbeat parsing.

use std::borrow::Cow;
use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

use super::{COMPLETE_PHASE, FUTURE_SKEW_SECS, STALE_SECS};
use crate::clock;
use crate::fsread;
use crate::provider_exec::sidecar::Sidecar;
use crate::provider_exec::status::{Reason, TerminatedBy};

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

    pub(super) fn needs_attention(self) -> bool {
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
        if side.is_exited() {
            let by = side.terminated_by;
            let code = side
                .exit_code
                .map_or_else(|| "no exit code".to_owned(), |c| format!("exit code {c}"));
            return if by == Some(TerminatedBy::Reaper) {
                let why = side
                    .reason_text
                    .as_deref()
                    .unwrap_or(Reason::WrapperLost.as_str());
                verdict(
                    State::Lost,
                    format!("finished by `okstra reap` ({why})").into(),
                )
            } else if side.timeout || by == Some(TerminatedBy::IdleWatchdog) {
                verdict(
                    State::IdleKilled,
                    format!("idle watchdog stopped it ({code})").into(),
                )
            } else if by == Some(TerminatedBy::Signal) {
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
