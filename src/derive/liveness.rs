//! Whether a run is still going, derived once: the state of one attempt
//! (the one answer to "is it still running?") and the outcome of the whole
//! run. `okstra status`, `await`, `next`, `cancel`, `cleanup` and the
//! quorum ([`super::quorum`]) ask these; none decides it again.
//!
//! An attempt's state, from its record and what of it runs
//! ([`crate::run::live`]):
//!
//! | ending | runner | what runs | state |
//! |---|---|---|---|
//! | recorded | any | — | `ended` (its ending) |
//! | none | native | — (the host's session) | `with-host` |
//! | none | wrapper | its driver or its wrapper | `running` |
//! | none | wrapper | nothing | `abandoned` (the next look settles it) |
//!
//! The run's outcome, the first row that holds:
//!
//! | facts | outcome |
//! |---|---|
//! | an attempt `running`, or a live driver holds the run's lease | `running` |
//! | the newest end recorded since the last start or resume: cancelled or interrupted | `cancelled` |
//! | … failed, or ended without a report (a stopped batch, a spent budget) | `failed` |
//! | a valid report | `done` |
//! | an attempt `with-host` | `waiting-for-host` |
//! | otherwise (steps left, nothing runs this moment) | `running` |
//!
//! A `with-host` attempt keeps a run going only while nothing stopped it:
//! a failed or cancelled run is not `running` because the host still holds
//! a task, and `okstra cancel` closes such attempts.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::catalog::Runner;
use crate::run::Records;
pub use crate::run::live::Live;
use crate::run::team_state::{DispatchRecord, TeamState};
use crate::vocab::Ending;

/// Where one attempt stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Not ended, and its driver or wrapper runs.
    Running,
    /// A `native-session` attempt handed to the host and not answered.
    WithHost,
    /// It ended this way.
    Ended(Ending),
    /// Not ended, and nothing of it runs: its driver and wrapper are gone.
    Abandoned,
}

impl State {
    /// Whether something of okstra's still runs it.
    pub fn is_running(self) -> bool {
        self == State::Running
    }
}

/// The rule: the state of an attempt that ended `ending` (if it did), run
/// by the host (`native`) or by a wrapper of which `live` still runs.
pub fn attempt_state(ending: Option<Ending>, native: bool, live: Live) -> State {
    match (ending, native, live) {
        (Some(ending), _, _) => State::Ended(ending),
        (None, true, _) => State::WithHost,
        (None, false, Live::Nothing) => State::Abandoned,
        (None, false, Live::Driver | Live::Wrapper) => State::Running,
    }
}

/// The state of `record`, given what of it runs.
pub fn of_record(record: &DispatchRecord, live: Live) -> State {
    attempt_state(
        record.ending,
        record.runner == Some(Runner::NativeSession),
        live,
    )
}

/// The state of `record` as the run's records saw it when they were read.
pub fn of(records: &Records, record: &DispatchRecord) -> State {
    let live = records
        .live
        .get(&(record.dispatch_name.clone(), record.attempt))
        .copied()
        .unwrap_or_default();
    of_record(record, live)
}

/// How a run came out, so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Something runs, or okstra has steps left.
    Running,
    /// Nothing of okstra's runs: the host holds the run's next attempts.
    WaitingForHost,
    /// A valid report.
    Done,
    /// It ended without a report, or a step failed: it stays so until the
    /// user resumes it.
    Failed,
    /// Someone stopped it (`okstra cancel`, a signal): it stays so until
    /// the user resumes it.
    Cancelled,
}

impl Outcome {
    /// Whether the run is still going (nothing stopped it, no report yet).
    pub fn is_active(self) -> bool {
        matches!(self, Outcome::Running | Outcome::WaitingForHost)
    }

    /// Whether it stopped and only an explicit resume goes on.
    pub fn is_stopped(self) -> bool {
        matches!(self, Outcome::Failed | Outcome::Cancelled)
    }
}

/// How a drive of the run last ended, from the newest lifecycle lead event
/// (`run-start` and `run-resume` end nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// `run-complete` with a verdict: it ended with a report.
    Report,
    /// `run-complete` without one, or `run-failed`: why.
    Failed(String),
    /// `run-interrupted` or `run-cancelled`: by what.
    Cancelled(String),
}

impl End {
    /// The end a lifecycle event of `kind` (its name) with `fields` says,
    /// if it ends anything.
    pub fn of_event(kind: &str, fields: &BTreeMap<String, String>) -> Option<End> {
        let field = |key: &str| fields.get(key).cloned();
        match kind {
            "run-complete" => match field("verdict").as_deref() {
                Some("none") | None => Some(End::Failed(
                    field("reason").unwrap_or_else(|| "it ended without a report".to_owned()),
                )),
                Some(_) => Some(End::Report),
            },
            "run-failed" => Some(End::Failed(
                field("error").unwrap_or_else(|| "no reason was recorded".to_owned()),
            )),
            "run-interrupted" => Some(End::Cancelled(format!(
                "interrupted by {}",
                field("signal").unwrap_or_else(|| "a signal".to_owned())
            ))),
            "run-cancelled" => Some(End::Cancelled("cancelled with `okstra cancel`".to_owned())),
            _ => None,
        }
    }

    /// Why, in one line (none for a report).
    pub fn reason(&self) -> Option<&str> {
        match self {
            End::Report => None,
            End::Failed(why) | End::Cancelled(why) => Some(why),
        }
    }
}

/// What [`outcome`] looks at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFacts {
    /// The state of each dispatch's latest attempt.
    pub attempts: Vec<State>,
    /// A live driver holds the run's lease.
    pub driven: bool,
    /// How the run last ended, when nothing started or resumed it since.
    pub end: Option<End>,
    /// Its report passes validation.
    pub report_valid: bool,
}

impl RunFacts {
    /// The facts of a run whose dispatch records are `state`, each latest
    /// attempt not ended asked `live` what of it runs; `newest` is the
    /// newest lifecycle lead event (its kind and fields).
    pub fn of(
        state: &TeamState,
        live: impl Fn(&DispatchRecord) -> Live,
        driven: bool,
        newest: Option<(&str, &BTreeMap<String, String>)>,
        report_valid: bool,
    ) -> RunFacts {
        RunFacts {
            attempts: state
                .latest_attempts()
                .into_iter()
                .map(|record| {
                    let probe = if record.ending.is_none() {
                        live(record)
                    } else {
                        Live::Nothing
                    };
                    of_record(record, probe)
                })
                .collect(),
            driven,
            end: newest.and_then(|(kind, fields)| End::of_event(kind, fields)),
            report_valid,
        }
    }
}

/// The rule: the run's outcome (see the module docs).
pub fn outcome(facts: &RunFacts) -> Outcome {
    if facts.driven || facts.attempts.iter().any(|s| s.is_running()) {
        return Outcome::Running;
    }
    match &facts.end {
        Some(End::Cancelled(_)) => return Outcome::Cancelled,
        Some(End::Failed(_)) => return Outcome::Failed,
        Some(End::Report) if !facts.report_valid => return Outcome::Failed,
        Some(End::Report) | None => {}
    }
    if facts.report_valid {
        Outcome::Done
    } else if facts.attempts.contains(&State::WithHost) {
        Outcome::WaitingForHost
    } else {
        Outcome::Running
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_attempt_is_running_only_while_something_of_okstras_runs_it() {
        let table: &[(Option<Ending>, bool, Live, State)] = &[
            (
                Some(Ending::Completed),
                false,
                Live::Nothing,
                State::Ended(Ending::Completed),
            ),
            // An ending is final, whatever a stale probe says.
            (
                Some(Ending::Network),
                false,
                Live::Driver,
                State::Ended(Ending::Network),
            ),
            (
                Some(Ending::Cancelled),
                true,
                Live::Nothing,
                State::Ended(Ending::Cancelled),
            ),
            (None, true, Live::Nothing, State::WithHost),
            // The host's session is no process of okstra's.
            (None, true, Live::Driver, State::WithHost),
            (None, false, Live::Driver, State::Running),
            (None, false, Live::Wrapper, State::Running),
            (None, false, Live::Nothing, State::Abandoned),
        ];
        for (ending, native, live, expected) in table {
            assert_eq!(
                attempt_state(*ending, *native, *live),
                *expected,
                "{ending:?} native={native} {live:?}"
            );
        }
        assert!(!State::WithHost.is_running());
    }

    #[test]
    fn the_outcome_is_the_first_row_that_holds() {
        let failed = || Some(End::Failed("stopped early".to_owned()));
        let cancelled = || Some(End::Cancelled("cancelled".to_owned()));
        let facts = |attempts: &[State], driven, end: Option<End>, report_valid| RunFacts {
            attempts: attempts.to_vec(),
            driven,
            end,
            report_valid,
        };
        let host = State::WithHost;
        let running = State::Running;
        let done = State::Ended(Ending::Completed);
        let table: Vec<(&str, RunFacts, Outcome)> = vec![
            (
                "nothing yet",
                facts(&[], false, None, false),
                Outcome::Running,
            ),
            (
                "a wrapper runs",
                facts(&[running, host], false, None, false),
                Outcome::Running,
            ),
            (
                "a driver holds it",
                facts(&[done], true, failed(), false),
                Outcome::Running,
            ),
            (
                "only the host holds work",
                facts(&[done, host], false, None, false),
                Outcome::WaitingForHost,
            ),
            (
                "failed, a task still with the host",
                facts(&[host], false, failed(), false),
                Outcome::Failed,
            ),
            (
                "cancelled, a task still with the host",
                facts(&[host], false, cancelled(), false),
                Outcome::Cancelled,
            ),
            (
                "a runner outlives a failure",
                facts(&[running], false, failed(), false),
                Outcome::Running,
            ),
            (
                "a valid report",
                facts(&[done], false, Some(End::Report), true),
                Outcome::Done,
            ),
            (
                "a report recorded, since removed",
                facts(&[done], false, Some(End::Report), false),
                Outcome::Failed,
            ),
            (
                "a valid report, no end recorded",
                facts(&[done], false, None, true),
                Outcome::Done,
            ),
            (
                "abandoned: the next look settles it",
                facts(&[State::Abandoned], false, None, false),
                Outcome::Running,
            ),
            (
                "cancelled after its report",
                facts(&[done], false, cancelled(), true),
                Outcome::Cancelled,
            ),
        ];
        for (name, facts, expected) in table {
            assert_eq!(outcome(&facts), expected, "{name}");
        }
        assert!(Outcome::WaitingForHost.is_active() && !Outcome::Failed.is_active());
        assert!(Outcome::Cancelled.is_stopped() && !Outcome::Done.is_stopped());
    }

    #[test]
    fn each_lifecycle_event_ends_the_run_its_own_way() {
        let fields = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        assert_eq!(End::of_event("run-start", &fields(&[])), None);
        assert_eq!(End::of_event("run-resume", &fields(&[])), None);
        assert_eq!(
            End::of_event("run-complete", &fields(&[("verdict", "HEALTHY")])),
            Some(End::Report)
        );
        assert_eq!(
            End::of_event(
                "run-complete",
                &fields(&[("verdict", "none"), ("reason", "no analyser completed")])
            ),
            Some(End::Failed("no analyser completed".to_owned()))
        );
        assert_eq!(
            End::of_event("run-failed", &fields(&[("error", "boom")])),
            Some(End::Failed("boom".to_owned()))
        );
        assert_eq!(
            End::of_event("run-interrupted", &fields(&[("signal", "SIGINT")])),
            Some(End::Cancelled("interrupted by SIGINT".to_owned()))
        );
        assert!(matches!(
            End::of_event("run-cancelled", &fields(&[])),
            Some(End::Cancelled(_))
        ));
    }
}
