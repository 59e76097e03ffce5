//! The run's own line on the board: how far it got (phase, round) and how
//! it came out, derived each time from its records and never stored.
//!
//! Whether the run is still going, failed or was cancelled is the one rule
//! of `derive::liveness` (`outcome`): an attempt that runs, a driver that
//! holds the lease or a worker whose files show it working keep it
//! `running`; an attempt the host holds keeps it going only while nothing
//! stopped it. This line spells that outcome in the board's words:
//!
//! - `running` — running, or waiting for the host (its reason says so);
//! - `stopped` — failed by an error, interrupted or cancelled, with the
//!   line that resumes it;
//! - `report-valid` (with its verdict and `crossVerified`),
//!   `report-invalid`, `ended-without-report` — the newest `run-complete`
//!   and the report's `data.json`, checked by the one validate entry point
//!   (`report::check_report`). A run with no end recorded and a valid
//!   report (a lead that validated by hand) is `report-valid` too.
//!
//! The derived outcome travels beside it as `state` (`running`,
//! `waiting-for-host`, `done`, `failed`, `cancelled`).
//!
//! [`judge`] is the rule's spelling, pure and unit-tested; [`run_line`]
//! gathers its inputs. The report is checked only when nothing runs.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::DISPATCH_EVENT;
use crate::clock;
use crate::derive::liveness;
use crate::fsread;
use crate::lifecycle::Run;

use crate::run::progress;
use crate::run::team_state::TeamState;
use crate::vocab::EventKind;
use crate::vocab::Outcome;

impl Outcome {
    /// Whether the run is still going: `status --active` keeps these runs,
    /// and a project-wide `status --watch` waits for them.
    pub fn is_active(self) -> bool {
        self == Outcome::Running
    }
}

/// The run's line (`runs[].run` in `--json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunLine {
    pub outcome: Outcome,
    /// The run's outcome as every command derives it (`derive::liveness`):
    /// `running`, `waiting-for-host`, `done`, `failed` or `cancelled`.
    pub state: liveness::Outcome,
    /// [`Outcome::is_active`].
    pub active: bool,
    /// The phase of the newest `phase-start` event, else of the newest
    /// attempt (`4`, `5`, `5.5`, `5.6`, `6`); none before any.
    pub phase: Option<String>,
    /// The highest convergence round an attempt was recorded for.
    pub round: Option<u32>,
    /// The report's `finalVerdict.verdictToken` (a valid report).
    pub verdict: Option<String>,
    /// The report's `reliability.crossVerified` (computed from the records
    /// for a report without the block).
    pub cross_verified: Option<bool>,
    /// The report's data.json, when it exists.
    pub report_path: Option<PathBuf>,
    /// Why, in one line: how it ended without a valid report, how to
    /// resume a stopped run, what a running one waits for.
    pub reason: Option<String>,
}

impl RunLine {
    /// `report valid, verdict HEALTHY, cross-verified; phase 6, round 2;
    /// report <path>`.
    pub fn text(&self) -> String {
        let mut line = self.outcome.as_str().replace('-', " ");
        if let Some(verdict) = &self.verdict {
            line.push_str(", verdict ");
            line.push_str(verdict);
        }
        match self.cross_verified {
            Some(true) => line.push_str(", cross-verified"),
            Some(false) => line.push_str(", not cross-verified"),
            None => {}
        }
        if let Some(reason) = &self.reason {
            line.push_str(": ");
            line.push_str(reason);
        }
        if let Some(phase) = &self.phase {
            line.push_str("; phase ");
            line.push_str(phase);
            if let Some(round) = self.round {
                let _ = write!(line, ", round {round}");
            }
        }
        if let Some(path) = &self.report_path {
            let _ = write!(line, "; report {}", path.display());
        }
        line
    }
}

impl RunLine {
    /// The line in brief, for the one-line-per-run board: how it came out
    /// (verdict, cross-verified) and why; the phase while it runs; no path.
    pub fn brief(&self) -> String {
        let mut line = self.outcome.as_str().replace('-', " ");
        if let Some(verdict) = &self.verdict {
            line.push_str(", ");
            line.push_str(verdict);
        }
        match self.cross_verified {
            Some(true) => line.push_str(", cross-verified"),
            Some(false) => line.push_str(", not cross-verified"),
            None => {}
        }
        if self.outcome == Outcome::Running
            && let Some(phase) = &self.phase
        {
            line.push_str(", phase ");
            line.push_str(phase);
            if let Some(round) = self.round {
                let _ = write!(line, " round {round}");
            }
        }
        if let Some(reason) = &self.reason {
            line.push_str(": ");
            line.push_str(reason);
        }
        line
    }
}

/// One lead event, as far as the board reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub kind: EventKind,
    pub fields: BTreeMap<String, String>,
}

/// What a run's lead events log says, read in one pass (a missing or
/// unreadable log says nothing).
#[derive(Debug, Default)]
pub struct Events {
    /// The `phase` of the newest `phase-start`.
    pub phase: Option<String>,
    /// The newest of `run-start`, `run-resume`, `run-complete`,
    /// `run-interrupted`, `run-failed`, `run-cancelled`.
    pub last_lifecycle: Option<Event>,
    /// When each worker was last recorded dispatched (`worker-dispatched`
    /// with `--field dispatchName=<name>`), Unix seconds.
    pub dispatched: HashMap<String, i64>,
}

impl Events {
    pub fn read(path: &Path) -> Events {
        let mut events = Events::default();
        let Ok(bytes) = fsread::read_no_follow(path, fsread::Kind::Events) else {
            return events;
        };
        for line in bytes.split(|b| *b == b'\n') {
            // Most lines are neither: skip them before parsing them whole.
            let Ok(Value::Object(event)) = serde_json::from_slice::<Value>(line) else {
                continue;
            };
            let Some(kind) = event.get("kind").and_then(Value::as_str) else {
                continue;
            };
            let fields = event.get("fields").and_then(Value::as_object);
            let field = |key: &str| fields.and_then(|f| f.get(key)).and_then(Value::as_str);
            if kind == DISPATCH_EVENT {
                let at = event
                    .get("ts")
                    .and_then(Value::as_str)
                    .and_then(clock::parse_rfc3339);
                if let (Some(name), Some(at)) = (field("dispatchName"), at) {
                    events.dispatched.insert(name.to_owned(), at);
                }
                continue;
            }
            let Ok(kind) = kind.parse::<EventKind>() else {
                continue;
            };
            if kind == EventKind::PhaseStart {
                if let Some(phase) = field("phase") {
                    events.phase = Some(phase.to_owned());
                }
            } else if crate::run::events::LIFECYCLE.contains(&kind) {
                let found = Event {
                    kind,
                    fields: fields
                        .map(|fields| {
                            fields
                                .iter()
                                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                                .collect()
                        })
                        .unwrap_or_default(),
                };
                events.last_lifecycle = Some(found);
            }
        }
        events
    }
}

/// The report, as validation finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReportCheck {
    /// No data.json.
    Missing,
    Valid {
        verdict: Option<String>,
        cross_verified: Option<bool>,
    },
    /// Its problems, one line each (or why it cannot be read).
    Invalid(Vec<String>),
}

/// How the run came out, and why in one line, in the board's words:
/// `derived` is the run's outcome (`derive::liveness`), `end` the newest
/// lifecycle event, `report` the report as checked (`None` while the run
/// runs: it was not checked).
pub fn judge(
    derived: liveness::Outcome,
    end: Option<&Event>,
    attempts: usize,
    report: Option<&ReportCheck>,
) -> (Outcome, Option<String>) {
    let field = |event: &Event, key: &str| event.fields.get(key).cloned();
    let resume = |event: &Event| {
        field(event, "resume").map_or_else(String::new, |line| format!("; resume with `{line}`"))
    };
    let invalid = |problems: &[String]| {
        format!(
            "{} problem{}, the first: {}",
            problems.len(),
            if problems.len() == 1 { "" } else { "s" },
            problems.first().map_or("", String::as_str)
        )
    };
    let reason = |event: &Event| {
        liveness::End::of_event(event.kind.as_str(), &event.fields)
            .and_then(|end| end.reason().map(str::to_owned))
    };
    match derived {
        liveness::Outcome::Running | liveness::Outcome::WaitingForHost => {
            let why = match report {
                _ if derived == liveness::Outcome::WaitingForHost => {
                    Some("waiting for the host's answer".to_owned())
                }
                Some(ReportCheck::Invalid(problems)) => Some(format!(
                    "its report is not valid yet ({}); the lead repairs it",
                    invalid(problems)
                )),
                _ if attempts == 0 => Some("nothing dispatched yet".to_owned()),
                _ => None,
            };
            (Outcome::Running, why)
        }
        liveness::Outcome::Done => (Outcome::ReportValid, None),
        liveness::Outcome::Cancelled => {
            let why = end.map_or_else(
                || "cancelled".to_owned(),
                |event| {
                    format!(
                        "{}{}",
                        reason(event).unwrap_or_else(|| "cancelled".to_owned()),
                        resume(event)
                    )
                },
            );
            (Outcome::Stopped, Some(why))
        }
        liveness::Outcome::Failed => match end {
            Some(event) if event.kind == EventKind::RunComplete => match report {
                Some(ReportCheck::Invalid(problems)) => (
                    Outcome::ReportInvalid,
                    Some(field(event, "reason").unwrap_or_else(|| invalid(problems))),
                ),
                _ => (
                    Outcome::EndedWithoutReport,
                    Some(
                        field(event, "reason")
                            .unwrap_or_else(|| "its report is no longer there".to_owned()),
                    ),
                ),
            },
            Some(event) => (
                Outcome::Stopped,
                Some(format!(
                    "failed: {}{}",
                    reason(event).unwrap_or_else(|| "no reason recorded".to_owned()),
                    resume(event)
                )),
            ),
            None => (Outcome::Stopped, Some("failed".to_owned())),
        },
    }
}

/// Check the report of `run` with the one validate entry point.
pub fn check_report(run: &Run) -> ReportCheck {
    match crate::report::check_report(&run.dir) {
        Ok(checked) if checked.is_valid() => {
            let verdict = checked
                .value
                .pointer("/finalVerdict/verdictToken")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let cross_verified = checked
                .value
                .pointer("/reliability/crossVerified")
                .and_then(Value::as_bool)
                .or_else(|| {
                    crate::run::Records::load(run.clone(), crate::run::Parts::FACTS)
                        .ok()
                        .map(|records| crate::derive::reliability::of(&records).cross_verified)
                });
            ReportCheck::Valid {
                verdict,
                cross_verified,
            }
        }
        Ok(checked) => ReportCheck::Invalid(checked.problems),
        Err(err) => ReportCheck::Invalid(vec![format!("{err:#}")]),
    }
}

/// The run's line: its phase and round from the records, its outcome by
/// `derive::liveness::outcome` spelt by [`judge`]. `latest` is the state of
/// each dispatch's latest attempt; `driven`, whether a driver holds the run
/// or a worker's files show it working. `report` checks the report; it is
/// asked only when nothing runs and `has_report` (data.json exists).
pub fn run_line(
    run: &Run,
    state: &TeamState,
    events: &Events,
    latest: &[liveness::State],
    driven: bool,
    has_report: bool,
    report: impl FnOnce() -> ReportCheck,
) -> RunLine {
    let running = driven || latest.iter().any(|life| life.is_running());
    let report = if running {
        None
    } else if has_report {
        Some(report())
    } else {
        Some(ReportCheck::Missing)
    };
    let end = events.last_lifecycle.as_ref();
    let facts = liveness::RunFacts {
        attempts: latest.to_vec(),
        driven,
        end: end.and_then(|event| liveness::End::of_event(event.kind.as_str(), &event.fields)),
        report_valid: matches!(report, Some(ReportCheck::Valid { .. })),
    };
    let derived = liveness::outcome(&facts);
    let (outcome, reason) = judge(derived, end, state.dispatches.len(), report.as_ref());
    let (verdict, cross_verified) = match &report {
        Some(ReportCheck::Valid {
            verdict,
            cross_verified,
        }) if outcome == Outcome::ReportValid => (verdict.clone(), *cross_verified),
        _ => (None, None),
    };
    RunLine {
        outcome,
        state: derived,
        active: derived.is_active(),
        phase: events
            .phase
            .clone()
            .or_else(|| progress::phase(run, state).map(str::to_owned)),
        round: progress::round(state),
        verdict,
        cross_verified,
        report_path: has_report.then(|| run.report_data_path.clone()),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: EventKind, fields: &[(&str, &str)]) -> Event {
        Event {
            kind,
            fields: fields
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    #[test]
    fn the_outcome_is_spelt_in_the_boards_words() {
        use liveness::Outcome as Derived;
        /// (name, derived, newest end, attempts, report, outcome, reason)
        type Row<'a> = (
            &'a str,
            Derived,
            Option<&'a Event>,
            usize,
            Option<&'a ReportCheck>,
            Outcome,
            Option<&'a str>,
        );
        let valid = ReportCheck::Valid {
            verdict: Some("HEALTHY".into()),
            cross_verified: Some(true),
        };
        let invalid = ReportCheck::Invalid(vec!["/x: [schema] bad".into()]);
        let none = event(
            EventKind::RunComplete,
            &[
                ("verdict", "none"),
                ("reason", "the report writer did not complete"),
            ],
        );
        let done = event(EventKind::RunComplete, &[("verdict", "HEALTHY")]);
        let interrupted = event(
            EventKind::RunInterrupted,
            &[("signal", "SIGINT"), ("resume", "okstra run r")],
        );
        let cancelled = event(EventKind::RunCancelled, &[("stopped", "0")]);
        let failed = event(
            EventKind::RunFailed,
            &[("error", "boom"), ("resume", "okstra next r --resume")],
        );
        let table: Vec<Row<'_>> = vec![
            (
                "runs",
                Derived::Running,
                Some(&done),
                3,
                None,
                Outcome::Running,
                None,
            ),
            (
                "nothing yet",
                Derived::Running,
                None,
                0,
                Some(&ReportCheck::Missing),
                Outcome::Running,
                Some("nothing dispatched yet"),
            ),
            (
                "with the host",
                Derived::WaitingForHost,
                None,
                2,
                Some(&ReportCheck::Missing),
                Outcome::Running,
                Some("waiting for the host's answer"),
            ),
            (
                "being repaired",
                Derived::Running,
                None,
                3,
                Some(&invalid),
                Outcome::Running,
                Some(
                    "its report is not valid yet (1 problem, the first: /x: [schema] bad); the lead repairs it",
                ),
            ),
            (
                "done",
                Derived::Done,
                Some(&done),
                3,
                Some(&valid),
                Outcome::ReportValid,
                None,
            ),
            (
                "ended without a report",
                Derived::Failed,
                Some(&none),
                3,
                Some(&ReportCheck::Missing),
                Outcome::EndedWithoutReport,
                Some("the report writer did not complete"),
            ),
            (
                "report removed",
                Derived::Failed,
                Some(&done),
                3,
                Some(&ReportCheck::Missing),
                Outcome::EndedWithoutReport,
                Some("its report is no longer there"),
            ),
            (
                "report broken",
                Derived::Failed,
                Some(&done),
                3,
                Some(&invalid),
                Outcome::ReportInvalid,
                Some("1 problem, the first: /x: [schema] bad"),
            ),
            (
                "interrupted",
                Derived::Cancelled,
                Some(&interrupted),
                3,
                Some(&valid),
                Outcome::Stopped,
                Some("interrupted by SIGINT; resume with `okstra run r`"),
            ),
            (
                "cancelled",
                Derived::Cancelled,
                Some(&cancelled),
                3,
                Some(&ReportCheck::Missing),
                Outcome::Stopped,
                Some("cancelled with `okstra cancel`"),
            ),
            (
                "a step failed",
                Derived::Failed,
                Some(&failed),
                3,
                Some(&ReportCheck::Missing),
                Outcome::Stopped,
                Some("failed: boom; resume with `okstra next r --resume`"),
            ),
        ];
        for (name, derived, end, attempts, report, outcome, reason) in table {
            assert_eq!(
                judge(derived, end, attempts, report),
                (outcome, reason.map(str::to_owned)),
                "{name}"
            );
        }
        assert!(Outcome::Running.is_active());
        assert!(!Outcome::Stopped.is_active());
        assert!(!Outcome::ReportValid.is_active());
    }

    #[test]
    fn the_line_says_everything_in_one_sentence() {
        let line = RunLine {
            outcome: Outcome::ReportValid,
            state: liveness::Outcome::Done,
            active: false,
            phase: Some("6".into()),
            round: Some(2),
            verdict: Some("HEALTHY".into()),
            cross_verified: Some(true),
            report_path: Some("/r/report/data.json".into()),
            reason: None,
        };
        assert_eq!(
            line.text(),
            "report valid, verdict HEALTHY, cross-verified; phase 6, round 2; report /r/report/data.json"
        );
        let line = RunLine {
            outcome: Outcome::Running,
            state: liveness::Outcome::Running,
            active: true,
            phase: None,
            round: None,
            verdict: None,
            cross_verified: None,
            report_path: None,
            reason: Some("nothing dispatched yet".into()),
        };
        assert_eq!(line.text(), "running: nothing dispatched yet");
    }
}
