//! A worker's state: the pure state machines of `okstra status` — one for a
//! recorded attempt ([`classify_attempt`]: its ending, else what still runs
//! and its files), one for a worker with no record ([`classify`]: its files
//! alone) — and heartbeat parsing.

use std::borrow::Cow;
use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

use super::{COMPLETE_PHASE, FUTURE_SKEW_SECS, STALE_SECS};
use crate::clock;
use crate::derive::liveness;
use crate::fsread;
use crate::provider_exec::sidecar::Sidecar;
use crate::run::team_state::AttemptState;
use crate::vocab::Reason;
use crate::vocab::TerminatedBy;
use crate::vocab::{BoardState, Ending};

impl BoardState {
    pub(in crate::lifecycle) fn needs_attention(self) -> bool {
        !matches!(
            self,
            BoardState::Pending
                | BoardState::Queued
                | BoardState::Held
                | BoardState::WithHost
                | BoardState::Running
                | BoardState::Done
                | BoardState::Ended(Ending::Completed)
        )
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
    pub state: BoardState,
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
    let verdict = |state: BoardState, reason: Cow<'static, str>| Verdict {
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
                let why = side.reason.clone().unwrap_or(Reason::WrapperLost.into());
                verdict(
                    BoardState::Lost,
                    format!("finished by `okstra reap` ({why})").into(),
                )
            } else if side.timeout || by == Some(TerminatedBy::IdleWatchdog) {
                verdict(
                    BoardState::IdleKilled,
                    format!("idle watchdog stopped it ({code})").into(),
                )
            } else if by == Some(TerminatedBy::Signal) {
                let signal = side.signal.as_deref().unwrap_or("a signal");
                verdict(
                    BoardState::Signalled,
                    format!("its wrapper got {signal} and stopped it ({code})").into(),
                )
            } else if side.exit_code != Some(0) {
                verdict(BoardState::Exited, code.into())
            } else if !results_ok {
                verdict(
                    BoardState::Exited,
                    format!("exit code 0 but {}", missing()).into(),
                )
            } else {
                verdict(
                    BoardState::Done,
                    "exit code 0, every Result Path present".into(),
                )
            };
        }
        if evidence.wrapper_alive == Some(false) {
            let pid = side.pid.map_or_else(String::new, |p| format!(" {p}"));
            return verdict(
                BoardState::Lost,
                format!(
                    "wrapper pid{pid} is gone but its sidecar still says `started`; `okstra reap` lists what it left"
                )
                .into(),
            );
        }
    } else if beat.phase.as_deref() == Some(COMPLETE_PHASE) {
        return if results_ok {
            verdict(
                BoardState::Done,
                "heartbeat `complete`, every Result Path present".into(),
            )
        } else {
            verdict(
                BoardState::Exited,
                format!("heartbeat `complete` but {}", missing()).into(),
            )
        };
    } else if beat.count == 0 && evidence.log_mtime.is_none() {
        if results_ok {
            return verdict(BoardState::Done, "every Result Path present".into());
        }
        if !evidence.any_result && evidence.sidecar_error.is_none() {
            return verdict(BoardState::Pending, "not started".into());
        }
    }

    // Working: blocked, stale or running.
    if let Some(blocker) = &beat.blocker {
        return verdict(
            BoardState::Blocked,
            format!("heartbeat blocker: {}", fsread::escape(blocker)).into(),
        );
    }
    match last_activity {
        Some(at) if now - at > STALE_SECS => verdict(
            BoardState::Stale,
            format!(
                "no log or heartbeat activity for {}",
                clock::short_duration(now - at)
            )
            .into(),
        ),
        _ => verdict(BoardState::Running, "".into()),
    }
}

/// One recorded attempt, as [`classify_attempt`] sees it.
#[derive(Debug, Clone, Copy)]
pub struct Attempt<'a> {
    /// From its record ([`crate::run::team_state::DispatchRecord::state`]).
    pub state: AttemptState,
    /// Whether it still runs, is with the host, ended or was abandoned
    /// (`derive::liveness`, the one answer every view shares).
    pub life: liveness::State,
    /// Its record's `detail`.
    pub detail: Option<&'a str>,
    /// Its files (gathered only for an attempt not ended, or the one a
    /// worker's row shows).
    pub evidence: Option<&'a Evidence>,
}

/// The state of one recorded attempt. Its ending, once it has one, is its
/// state and nothing overrides it; the files only refine an attempt that has
/// not ended and still runs (`running`, `stale`, `blocked`). A native
/// attempt not answered is `with-host`, never `running`: okstra cannot see
/// the host's session work. An attempt not ended of which nothing runs is
/// `lost` until `okstra await` (or the next `okstra dispatch` / `next`)
/// records how it ended.
pub fn classify_attempt(attempt: &Attempt<'_>, now: i64) -> Verdict {
    let detail = || -> Cow<'static, str> {
        attempt
            .detail
            .map_or(Cow::Borrowed(""), |d| Cow::Owned(d.to_owned()))
    };
    let activity = attempt.evidence.map(|e| classify(e, now).last_activity);
    let verdict = |state: BoardState, reason: Cow<'static, str>| Verdict {
        state,
        reason,
        last_activity: activity.flatten(),
    };
    match (attempt.life, attempt.state) {
        (liveness::State::Ended(ending), _) => return verdict(BoardState::Ended(ending), detail()),
        (liveness::State::WithHost, _) => {
            return verdict(
                BoardState::WithHost,
                "handed to the host's session; waiting for its answer".into(),
            );
        }
        (liveness::State::Abandoned, AttemptState::Queued | AttemptState::Held) => {
            return verdict(
                BoardState::Lost,
                "never started and its dispatcher is gone; `okstra await` records it".into(),
            );
        }
        (liveness::State::Abandoned, _) => {
            return verdict(
                BoardState::Lost,
                "its dispatcher and wrapper are gone and no ending was recorded; `okstra await` records how it ended"
                    .into(),
            );
        }
        (liveness::State::Running, AttemptState::Queued) => {
            return verdict(BoardState::Queued, "recorded, not started yet".into());
        }
        (liveness::State::Running, AttemptState::Held) => {
            return verdict(BoardState::Held, detail());
        }
        (liveness::State::Running, _) => {}
    }
    let Some(evidence) = attempt.evidence else {
        return verdict(BoardState::Running, "".into());
    };
    let found = classify(evidence, now);
    match found.state {
        BoardState::Running | BoardState::Stale | BoardState::Blocked => found,
        BoardState::Pending => verdict(BoardState::Running, "started; no sign of it yet".into()),
        _ => verdict(
            BoardState::Running,
            "its wrapper finished; its dispatcher is recording how it ended".into(),
        ),
    }
}
