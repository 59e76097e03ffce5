//! The run's own line on the board: how far it got (phase, round) and how
//! it came out, derived each time from its records and never stored.
//!
//! - **live**: an attempt not ended that may still run or be answered, a
//!   worker whose files show it working, or a driver holding the run's
//!   lease. A live run is `running`, whatever happened before.
//! - otherwise the lead events okstra writes decide: the newest of
//!   `run-complete` (with its `verdict`, or `none` and a `reason`),
//!   `run-interrupted`, `run-failed` and `run-cancelled` (`stopped`:
//!   resumable, nobody drives it). A `run-start` / `run-resume` newer than
//!   all of them ended without a new event (a resume that found everything
//!   done records nothing again), so the newest `run-complete` still holds.
//! - the report's `data.json`, checked by the one validate entry point
//!   (`report::check_report`), says which way a completed run went:
//!   `report-valid` (with its verdict and `crossVerified`), `report-invalid`,
//!   or `ended-without-report`. A run with no end recorded and a valid
//!   report (a lead that validated by hand) is `report-valid` too.
//!
//! [`judge`] is the rule, pure and unit-tested; [`run_line`] gathers its
//! inputs. The report is checked only when nothing is live.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::DISPATCH_EVENT;
use crate::clock;
use crate::fsread;
use crate::lifecycle::Run;
use crate::run::events::EventKind;
use crate::run::progress;
use crate::run::team_state::TeamState;

closed_set! {
    /// How a run came out, so far.
    Outcome {
        /// Not ended: something runs, or the lead has steps left.
        Running => "running",
        /// Interrupted, failed or cancelled, and nobody drives it now: it
        /// resumes with the command its reason names.
        Stopped => "stopped",
        /// Ended with a report that passes validation.
        ReportValid => "report-valid",
        /// Ended with a report that fails validation.
        ReportInvalid => "report-invalid",
        /// Ended without a report.
        EndedWithoutReport => "ended-without-report",
    }
}

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
    /// The newest `run-complete`.
    pub last_complete: Option<Event>,
    /// When each worker was last recorded dispatched (`worker-dispatched`
    /// with `--field dispatchName=<name>`), Unix seconds.
    pub dispatched: HashMap<String, i64>,
}

/// The kinds that start or end a drive of the run.
const LIFECYCLE: [EventKind; 6] = [
    EventKind::RunStart,
    EventKind::RunResume,
    EventKind::RunComplete,
    EventKind::RunInterrupted,
    EventKind::RunFailed,
    EventKind::RunCancelled,
];

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
            } else if LIFECYCLE.contains(&kind) {
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
                if kind == EventKind::RunComplete {
                    events.last_complete = Some(found.clone());
                }
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

/// How the run came out, and why in one line: the rule. `report` is
/// `None` when it was not checked (the run is live).
pub fn judge(
    live: bool,
    events: &Events,
    attempts: usize,
    report: Option<&ReportCheck>,
) -> (Outcome, Option<String>) {
    let report = match report {
        Some(report) if !live => report,
        _ => return (Outcome::Running, None),
    };
    // A drive that started after the last end and recorded none ended
    // the way the run had ended before (or halted for its host).
    let end = match &events.last_lifecycle {
        Some(event) if matches!(event.kind, EventKind::RunStart | EventKind::RunResume) => {
            events.last_complete.as_ref()
        }
        other => other.as_ref(),
    };
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
    match end {
        Some(event) if event.kind == EventKind::RunComplete => match report {
            ReportCheck::Valid { .. } => (Outcome::ReportValid, None),
            ReportCheck::Invalid(problems) => (
                Outcome::ReportInvalid,
                Some(field(event, "reason").unwrap_or_else(|| invalid(problems))),
            ),
            ReportCheck::Missing => (
                Outcome::EndedWithoutReport,
                Some(
                    field(event, "reason")
                        .unwrap_or_else(|| "its report is no longer there".to_owned()),
                ),
            ),
        },
        Some(event) => {
            let why = match event.kind {
                EventKind::RunInterrupted => format!(
                    "interrupted by {}",
                    field(event, "signal").unwrap_or_else(|| "a signal".into())
                ),
                EventKind::RunFailed => format!(
                    "failed: {}",
                    field(event, "error").unwrap_or_else(|| "no reason recorded".into())
                ),
                _ => "cancelled".to_owned(),
            };
            (Outcome::Stopped, Some(format!("{why}{}", resume(event))))
        }
        None => match report {
            ReportCheck::Valid { .. } => (Outcome::ReportValid, None),
            ReportCheck::Invalid(problems) => (
                Outcome::Running,
                Some(format!(
                    "its report is not valid yet ({}); the lead repairs it",
                    invalid(problems)
                )),
            ),
            ReportCheck::Missing if attempts == 0 => {
                (Outcome::Running, Some("nothing dispatched yet".to_owned()))
            }
            ReportCheck::Missing => (Outcome::Running, None),
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
/// [`judge`].
/// `report` checks the report; it is asked only when nothing is live and
/// `has_report` (data.json exists).
pub fn run_line(
    run: &Run,
    state: &TeamState,
    events: &Events,
    live: bool,
    has_report: bool,
    report: impl FnOnce() -> ReportCheck,
) -> RunLine {
    let report = if live {
        None
    } else if has_report {
        Some(report())
    } else {
        Some(ReportCheck::Missing)
    };
    let (outcome, reason) = judge(live, events, state.dispatches.len(), report.as_ref());
    let (verdict, cross_verified) = match &report {
        Some(ReportCheck::Valid {
            verdict,
            cross_verified,
        }) if outcome == Outcome::ReportValid => (verdict.clone(), *cross_verified),
        _ => (None, None),
    };
    RunLine {
        outcome,
        active: outcome.is_active(),
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

    fn events(last: Option<Event>, complete: Option<Event>) -> Events {
        Events {
            last_lifecycle: last,
            last_complete: complete,
            ..Events::default()
        }
    }

    #[test]
    fn the_outcome_follows_the_records() {
        let valid = ReportCheck::Valid {
            verdict: Some("HEALTHY".into()),
            cross_verified: Some(true),
        };
        let invalid = ReportCheck::Invalid(vec!["/x: [schema] bad".into()]);
        let done = event(EventKind::RunComplete, &[("verdict", "HEALTHY")]);
        let none = event(
            EventKind::RunComplete,
            &[
                ("verdict", "none"),
                ("reason", "the report writer did not complete"),
            ],
        );
        let resumed = event(EventKind::RunResume, &[]);
        let interrupted = event(
            EventKind::RunInterrupted,
            &[("signal", "SIGINT"), ("resume", "okstra run r")],
        );
        let outcome = |live, e: &Events, attempts, report| judge(live, e, attempts, report).0;
        // Live is running, whatever came before.
        assert_eq!(
            outcome(
                true,
                &events(Some(done.clone()), Some(done.clone())),
                3,
                None
            ),
            Outcome::Running
        );
        let ended = events(Some(done.clone()), Some(done.clone()));
        assert_eq!(
            outcome(false, &ended, 3, Some(&valid)),
            Outcome::ReportValid
        );
        assert_eq!(
            outcome(false, &ended, 3, Some(&invalid)),
            Outcome::ReportInvalid
        );
        assert_eq!(
            outcome(false, &ended, 3, Some(&ReportCheck::Missing)),
            Outcome::EndedWithoutReport
        );
        let without = events(Some(none.clone()), Some(none.clone()));
        assert_eq!(
            judge(false, &without, 3, Some(&ReportCheck::Missing)),
            (
                Outcome::EndedWithoutReport,
                Some("the report writer did not complete".into())
            )
        );
        // A resume that recorded no new end: the last end holds.
        let again = events(Some(resumed.clone()), Some(none));
        assert_eq!(
            outcome(false, &again, 3, Some(&ReportCheck::Missing)),
            Outcome::EndedWithoutReport
        );
        // Interrupted after its end: stopped, with the resume line.
        let stopped = events(Some(interrupted), Some(done));
        assert_eq!(
            judge(false, &stopped, 3, Some(&valid)),
            (
                Outcome::Stopped,
                Some("interrupted by SIGINT; resume with `okstra run r`".into())
            )
        );
        // No end recorded: a valid report ends it, anything else runs.
        let quiet = events(None, None);
        assert_eq!(
            outcome(false, &quiet, 3, Some(&valid)),
            Outcome::ReportValid
        );
        assert_eq!(outcome(false, &quiet, 3, Some(&invalid)), Outcome::Running);
        assert_eq!(
            judge(false, &quiet, 0, Some(&ReportCheck::Missing)),
            (Outcome::Running, Some("nothing dispatched yet".into()))
        );
        assert_eq!(
            outcome(false, &events(Some(resumed), None), 3, Some(&valid)),
            Outcome::ReportValid
        );
        assert!(Outcome::Running.is_active());
        assert!(!Outcome::Stopped.is_active());
        assert!(!Outcome::ReportValid.is_active());
    }

    #[test]
    fn the_line_says_everything_in_one_sentence() {
        let line = RunLine {
            outcome: Outcome::ReportValid,
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
