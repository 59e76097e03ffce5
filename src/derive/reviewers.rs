//! Who reviews in a run, whether each completed its own work, and who can
//! still review: the one definition convergence, the `reliability` block
//! and the classification share.
//!
//! A reviewer is a rostered worker whose role checks the others
//! (analysers, or verifiers in `implementation`). It completed its own work
//! when the latest attempt of its own dispatch did not end other than
//! `completed` and its Result Path is a non-empty regular file. It can still
//! review while it completed its own work, its most recent review round did
//! not fail (an interruption by the user is no failure) and the ledger does
//! not list it as unavailable.

use std::collections::BTreeSet;

use super::classes::{self, Judged};
use crate::catalog::DispatchKind;
use crate::converge::ledger::Ledger;
use crate::run::Records;
use crate::run::roster::Assignment;
use crate::run::team_state::TeamState;
use crate::vocab::Ending;

/// One rostered reviewer and how its own work ended.
#[derive(Debug, Clone)]
pub struct Reviewer {
    pub assignment: Assignment,
    /// `Err(ending)` when it did not complete its own work.
    pub completed: Result<(), String>,
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
/// Path has content: `Err` names the ending (`empty-output` for a result
/// that is missing or empty).
pub fn own_work(
    state: &TeamState,
    assignment: &Assignment,
    has_content: bool,
) -> Result<(), String> {
    if let Some(ending) = state
        .latest(&assignment.dispatch_name)
        .and_then(|record| record.ending)
        && ending != Ending::Completed
    {
        return Err(ending.as_str().to_owned());
    }
    if has_content {
        Ok(())
    } else {
        Err(Ending::EmptyOutput.as_str().to_owned())
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

    fn ended(name: &str, kind: DispatchKind, ending: Ending) -> DispatchRecord {
        let mut record = DispatchRecord::queued(
            name,
            kind,
            1,
            "claude",
            &DispatchPaths::new(&PathBuf::from("/run"), name),
        );
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
            ("nothing written", vec![], false, Err("empty-output"), None),
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
                own_work(&state, &claude, content),
                work.map_err(str::to_owned),
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
