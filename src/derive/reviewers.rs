//! Who reviews in a run, whether each completed its own work, and who can
//! still review: the one definition convergence, the `reliability` block
//! and the classification share.
//!
//! A reviewer is a rostered worker whose role checks the others
//! (analysers, or verifiers in `implementation`). It completed its own work
//! when the latest attempt of its own dispatch did not end other than
//! `completed` and its Result Path is a non-empty regular file; when it did
//! not, [`outcome`] says why in the one word every view uses: the ending,
//! `empty-output` for an attempt that ended `completed` and left no result,
//! `not-dispatched` when no attempt is recorded at all, `not-ended` when
//! one is recorded but has not ended (never `empty-output` for these two:
//! okstra does not claim a worker ran when it has no record of it). It can
//! still review while it completed its own work, its most recent review
//! round did not fail (an interruption by the user is no failure) and the
//! ledger does not list it as unavailable.

use std::collections::BTreeSet;

use super::classes::{self, Judged};
use crate::catalog::DispatchKind;
use crate::converge::ledger::Ledger;
use crate::run::Records;
use crate::run::roster::Assignment;
use crate::run::team_state::{DispatchRecord, TeamState};
use crate::vocab::{Ending, NoEnding, Shortfall};

/// One rostered reviewer and how its own work ended.
#[derive(Debug, Clone)]
pub struct Reviewer {
    pub assignment: Assignment,
    /// `Err(why)` when it did not complete its own work.
    pub completed: Result<(), Shortfall>,
}

/// The run's reviewers, in roster order.
pub fn of(records: &Records) -> Vec<Reviewer> {
    records
        .run
        .reviewers()
        .map(|assignment| Reviewer {
            completed: own_work(
                &records.state,
                assignment,
                records
                    .results
                    .own
                    .get(&assignment.worker_id)
                    .is_some_and(|own| own.has_content),
            ),
            assignment: assignment.clone(),
        })
        .collect()
}

/// Whether `assignment` completed its own work, given whether its Result
/// Path has content (see [`outcome`]).
pub fn own_work(
    state: &TeamState,
    assignment: &Assignment,
    has_content: bool,
) -> Result<(), Shortfall> {
    outcome(state.latest(&assignment.dispatch_name), has_content)
}

/// Whether the work of a dispatch whose latest attempt is `latest` (none
/// when it has none) completed, given whether its Result Path has content;
/// `Err` says why not. An ending other than `completed` decides whatever
/// the file holds; a result with content and no attempt record is a
/// worker its host ran without okstra's records, and counts.
pub fn outcome(latest: Option<&DispatchRecord>, has_content: bool) -> Result<(), Shortfall> {
    match latest.map(|record| record.ending) {
        Some(Some(ending)) if ending != Ending::Completed => Err(Shortfall::Ended(ending)),
        _ if has_content => Ok(()),
        None => Err(Shortfall::Unended(NoEnding::NotDispatched)),
        Some(None) => Err(Shortfall::Unended(NoEnding::NotEnded)),
        Some(Some(_)) => Err(Shortfall::Ended(Ending::EmptyOutput)),
    }
}

/// How a reviewer's most recently recorded review round ended, when it
/// ended other than `completed`: `(round, ending)`. A round stopped by
/// someone (Ctrl-C, `okstra cancel`) is no failure of the reviewer: it runs
/// again on resume.
pub fn reverify_failure(state: &TeamState, assignment: &Assignment) -> Option<(u32, String)> {
    let prefix = DispatchKind::reverify_prefix(&assignment.dispatch_name);
    let record = state
        .dispatches
        .iter()
        .rev()
        .find(|record| record.ending.is_some() && record.dispatch_name.starts_with(&prefix))?;
    let ending = record.ending?;
    if ending == Ending::Completed || record.was_interrupted() && ending != Ending::Budget {
        return None;
    }
    let round = record.dispatch_name.strip_prefix(&prefix)?.parse().ok()?;
    Some((round, ending.as_str().to_owned()))
}

/// Every rostered reviewer's worker id.
pub fn rostered(reviewers: &[Reviewer]) -> BTreeSet<String> {
    reviewers
        .iter()
        .map(|r| r.assignment.worker_id.clone())
        .collect()
}

/// The reviewers that completed their own work and have not failed since
/// (by the team state, or by the ledger's `unavailable`).
pub fn available(
    reviewers: &[Reviewer],
    state: &TeamState,
    ledger: Option<&Ledger>,
) -> BTreeSet<String> {
    reviewers
        .iter()
        .filter(|r| r.completed.is_ok())
        .filter(|r| reverify_failure(state, &r.assignment).is_none())
        .filter(|r| {
            ledger.is_none_or(|ledger| {
                !ledger
                    .unavailable
                    .iter()
                    .any(|u| u.worker_id == r.assignment.worker_id)
            })
        })
        .map(|r| r.assignment.worker_id.clone())
        .collect()
}

/// A ledger's claims judged for the run whose reviewers are `reviewers`:
/// every rostered one counts, the available ones can still answer, the
/// round is the ledger's last. `converge` writes the outcome back; the
/// report's verification block reads it.
pub struct Ruling {
    pub judged: Judged,
    /// How many reviewers are rostered.
    pub rostered: usize,
    /// How many of them can still review.
    pub available: usize,
}

/// Judge `ledger` for the run whose reviewers are `reviewers` and whose team
/// state is `state` (the one context the rules get).
pub fn judge(reviewers: &[Reviewer], state: &TeamState, ledger: &Ledger) -> Ruling {
    let rostered = rostered(reviewers);
    let available = available(reviewers, state, Some(ledger));
    let context = classes::Context {
        reviewers: &rostered,
        available: &available,
        round: ledger.rounds_run,
    };
    Ruling {
        judged: classes::judge(&ledger.items, &context),
        rostered: rostered.len(),
        available: available.len(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::catalog::{Provider, Role, Runner};
    use crate::run::roster::DispatchPaths;
    use crate::run::team_state::DispatchRecord;

    fn assignment(worker: &str) -> Assignment {
        let name = format!("{worker}-worker");
        Assignment {
            worker_id: worker.to_owned(),
            role: Role::Analyser,
            provider: Provider::Claude,
            model_execution_value: "opus".to_owned(),
            host_model: "inherit".to_owned(),
            runner: Runner::CliWrapper,
            wrapper: None,
            writes_project: false,
            paths: DispatchPaths::new(&PathBuf::from("/run"), &name),
            dispatch_name: name,
        }
    }

    fn unended(name: &str, kind: DispatchKind) -> DispatchRecord {
        DispatchRecord::queued(
            name,
            kind,
            1,
            "claude",
            &DispatchPaths::new(&PathBuf::from("/run"), name),
        )
    }

    fn ended(name: &str, kind: DispatchKind, ending: Ending) -> DispatchRecord {
        let mut record = unended(name, kind);
        record.ending = Some(ending);
        record
    }

    #[test]
    fn own_work_and_review_rounds_decide_who_reviews() {
        /// (name, records, result has content, own work, failed round)
        type Row = (
            &'static str,
            Vec<DispatchRecord>,
            bool,
            Result<(), &'static str>,
            Option<u32>,
        );
        let claude = assignment("claude");
        let table: Vec<Row> = vec![
            ("never dispatched, result there", vec![], true, Ok(()), None),
            // No record and no result: it has not run, which is no empty
            // output.
            (
                "never dispatched, nothing written",
                vec![],
                false,
                Err("not-dispatched"),
                None,
            ),
            (
                "ran, completed, wrote nothing",
                vec![ended(
                    "claude-worker",
                    DispatchKind::Initial,
                    Ending::Completed,
                )],
                false,
                Err("empty-output"),
                None,
            ),
            (
                "its attempt has not ended",
                vec![unended("claude-worker", DispatchKind::Initial)],
                false,
                Err("not-ended"),
                None,
            ),
            (
                "a failed ending decides over a result",
                vec![ended("claude-worker", DispatchKind::Initial, Ending::Auth)],
                true,
                Err("auth"),
                None,
            ),
            (
                "completed",
                vec![ended(
                    "claude-worker",
                    DispatchKind::Initial,
                    Ending::Completed,
                )],
                true,
                Ok(()),
                None,
            ),
            (
                "timed out",
                vec![ended(
                    "claude-worker",
                    DispatchKind::Initial,
                    Ending::IdleTimeout,
                )],
                true,
                Err("idle-timeout"),
                None,
            ),
            (
                "a failed round 2",
                vec![
                    ended("claude-worker", DispatchKind::Initial, Ending::Completed),
                    ended(
                        "claude-worker-reverify-r2",
                        DispatchKind::Reverify(2),
                        Ending::Auth,
                    ),
                ],
                true,
                Ok(()),
                Some(2),
            ),
            (
                "a cancelled round is no failure",
                vec![
                    ended("claude-worker", DispatchKind::Initial, Ending::Completed),
                    ended(
                        "claude-worker-reverify-r1",
                        DispatchKind::Reverify(1),
                        Ending::Cancelled,
                    ),
                ],
                true,
                Ok(()),
                None,
            ),
        ];
        for (name, dispatches, content, work, failed) in table {
            let state = TeamState {
                dispatches,
                ..TeamState::default()
            };
            assert_eq!(
                own_work(&state, &claude, content).map_err(Shortfall::as_str),
                work,
                "{name}"
            );
            assert_eq!(
                reverify_failure(&state, &claude).map(|(round, _)| round),
                failed,
                "{name}"
            );
        }
    }
}
