//! The quorum: how many of a run's reviewers must complete their own work
//! for its findings to be checked by a second model — two when two or more
//! are rostered, one of one — and whether that many did, or still can.
//!
//! One count ([`Count`]) answers every question about it: whether the first
//! batch is still worth finishing (fail fast: [`Quorum::lost`]), whether
//! convergence may run (the step machine, the round plan), and whether the
//! run was cross-verified (`reliability`). Every reviewer who can still
//! complete counts — one still running, one the host holds (a native
//! sub-agent not answered yet), one whose one retry is left to the host —
//! so a wrapper's failure never stops reviewers that could still make two.
//!
//! | a reviewer's own work | standing |
//! |---|---|
//! | its latest attempt completed, its Result Path holds something | completed |
//! | not dispatched yet; running; with the host; left running (the next look settles it) | can complete |
//! | stopped by someone (a cancel, the budget): it runs again | can complete |
//! | native, ended retryably with its one retry left (the host gets the retry) | can complete |
//! | anything else | out |

use std::collections::BTreeSet;

use crate::catalog::{DispatchKind, Runner};
use crate::run::Records;
use crate::vocab::Ending;

use super::liveness::{self, State};
use super::reviewers;

/// Completed reviewers cross-verification needs: a finding counts as checked
/// only when a second model has looked at it.
pub const REVIEWERS_REQUIRED: u32 = 2;

/// Where one reviewer stands toward its own work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    Completed,
    CanComplete,
    Out,
}

/// How the reviewers of a run stand.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Count {
    pub rostered: usize,
    pub completed: usize,
    /// Those that have not completed yet but still can.
    pub can_complete: usize,
}

impl Count {
    /// The count of `standings` (one per rostered reviewer).
    pub fn of(standings: impl IntoIterator<Item = Standing>) -> Count {
        let mut count = Count::default();
        for standing in standings {
            count.rostered += 1;
            match standing {
                Standing::Completed => count.completed += 1,
                Standing::CanComplete => count.can_complete += 1,
                Standing::Out => {}
            }
        }
        count
    }

    /// How many must complete: two of two or more, one of one.
    pub fn needed(self) -> usize {
        let required = REVIEWERS_REQUIRED as usize;
        if self.rostered >= required {
            required
        } else {
            1
        }
    }

    /// Enough completed for each to check another's findings: convergence
    /// may run, and the findings can be cross-verified.
    pub fn cross_checks(self) -> bool {
        self.completed >= REVIEWERS_REQUIRED as usize
    }

    /// Enough completed, or still can.
    pub fn is_reachable(self) -> bool {
        self.completed + self.can_complete >= self.needed()
    }
}

/// The quorum of one batch of reviewers while it runs: the engine sees how
/// its members end; every other rostered reviewer stands as it did when
/// the batch started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Quorum {
    /// The batch's reviewers, by dispatch name.
    pub members: BTreeSet<String>,
    /// The other rostered reviewers: dispatch name and standing.
    pub others: Vec<(String, Standing)>,
}

impl Quorum {
    /// The count once `completed` of the members have completed and
    /// `pending` of them are still queued or running.
    pub fn count(&self, completed: &BTreeSet<String>, pending: &BTreeSet<String>) -> Count {
        Count::of(
            self.members
                .iter()
                .map(|member| {
                    if completed.contains(member) {
                        Standing::Completed
                    } else if pending.contains(member) {
                        Standing::CanComplete
                    } else {
                        Standing::Out
                    }
                })
                .chain(self.others.iter().map(|(_, standing)| *standing)),
        )
    }

    /// Why the batch stops now, if its quorum can no longer be reached.
    pub fn lost(&self, completed: &BTreeSet<String>, pending: &BTreeSet<String>) -> Option<String> {
        let count = self.count(completed, pending);
        if count.is_reachable() {
            return None;
        }
        let possible = count.completed + count.can_complete;
        let mut names: Vec<&str> = self.members.iter().map(String::as_str).collect();
        names.extend(self.others.iter().map(|(name, _)| name.as_str()));
        names.sort_unstable();
        Some(format!(
            "stopped early: at most {possible} of the {} reviewers that must complete ({}) still can; nothing more is spent",
            count.needed(),
            names.join(", ")
        ))
    }
}

/// The standing of each rostered reviewer in `records`, in roster order,
/// with its own dispatch's name.
pub fn standings(records: &Records) -> Vec<(String, Standing)> {
    reviewers::of(records)
        .into_iter()
        .map(|reviewer| {
            let name = reviewer.assignment.dispatch_name.clone();
            let latest = records.state.latest(&name);
            let standing = match latest.map(|record| (record, liveness::of(records, record))) {
                None if reviewer.completed.is_ok() => Standing::Completed,
                None => Standing::CanComplete,
                Some((_, State::Ended(Ending::Completed))) if reviewer.completed.is_ok() => {
                    Standing::Completed
                }
                Some((_, State::Ended(Ending::Completed))) => Standing::Out,
                Some((record, State::Ended(ending))) => {
                    let native = reviewer.assignment.runner == Runner::NativeSession;
                    if record.was_interrupted()
                        || native && ending.is_retryable() && !records.state.retry_spent(&name)
                    {
                        Standing::CanComplete
                    } else {
                        Standing::Out
                    }
                }
                Some((_, State::Running | State::WithHost | State::Abandoned)) => {
                    Standing::CanComplete
                }
            };
            (name, standing)
        })
        .collect()
}

/// The quorum of the batch that runs `workers`' dispatches of `kind`: a
/// first batch of reviewers has one (analysers, or the verifiers of an
/// implementation run); any other batch has none.
pub fn of_batch(records: &Records, kind: DispatchKind, workers: &[String]) -> Option<Quorum> {
    let reviews = |worker: &String| {
        records
            .run
            .assignment(worker)
            .is_some_and(|a| a.role.reviews())
    };
    if kind != DispatchKind::Initial || workers.is_empty() || !workers.iter().all(reviews) {
        return None;
    }
    let mut quorum = Quorum::default();
    for (name, standing) in standings(records) {
        let member = records
            .run
            .assignments
            .iter()
            .any(|a| a.dispatch_name == name && workers.contains(&a.worker_id));
        if member {
            quorum.members.insert(name);
        } else {
            quorum.others.push((name, standing));
        }
    }
    Some(quorum)
}

#[cfg(test)]
mod tests {
    use super::*;

    use Standing::{CanComplete, Completed, Out};

    #[test]
    fn the_count_says_what_is_needed_reachable_and_cross_checked() {
        // (standings, cross-checks, reachable)
        let table: &[(&[Standing], bool, bool)] = &[
            (&[], false, false),
            (&[Completed], false, true),
            (&[CanComplete], false, true),
            (&[Out], false, false),
            (&[Completed, Completed], true, true),
            (&[Completed, Out], false, false),
            (&[Completed, CanComplete], false, true),
            (&[Out, Out, CanComplete], false, false),
            // The host's native reviewer and a healthy wrapper can still make two.
            (&[Out, CanComplete, CanComplete], false, true),
            (&[Completed, Out, Completed], true, true),
        ];
        for (standings, cross, reachable) in table {
            let count = Count::of(standings.iter().copied());
            assert_eq!(count.cross_checks(), *cross, "{standings:?} cross-checks");
            assert_eq!(count.is_reachable(), *reachable, "{standings:?} reachable");
        }
        assert_eq!(Count::of([Out]).needed(), 1);
        assert_eq!(Count::of([Out, Out, Out]).needed(), 2);
    }

    fn names(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_batch_counts_the_reviewers_outside_it() {
        // codex and kimi in the batch, claude with the host.
        let quorum = Quorum {
            members: names(&["codex-worker", "kimi-worker"]),
            others: vec![("claude-worker".to_owned(), CanComplete)],
        };
        // codex is out (network twice); kimi still runs; claude can answer.
        assert_eq!(quorum.lost(&names(&[]), &names(&["kimi-worker"])), None);
        // kimi completed: two are still possible.
        assert_eq!(quorum.lost(&names(&["kimi-worker"]), &names(&[])), None);
        // Without the host's reviewer the same endings lose it.
        let alone = Quorum {
            others: vec![("claude-worker".to_owned(), Out)],
            ..quorum.clone()
        };
        let why = alone.lost(&names(&[]), &names(&["kimi-worker"])).unwrap();
        assert!(
            why.starts_with("stopped early: at most 1 of the 2 reviewers"),
            "{why}"
        );
        assert!(
            why.contains("claude-worker, codex-worker, kimi-worker"),
            "{why}"
        );
        // One rostered, in the batch: one of one.
        let single = Quorum {
            members: names(&["codex-worker"]),
            others: Vec::new(),
        };
        assert_eq!(single.lost(&names(&[]), &names(&["codex-worker"])), None);
        assert!(single.lost(&names(&[]), &names(&[])).is_some());
        // A reviewer that completed before the batch counts.
        let before = Quorum {
            members: names(&["codex-worker"]),
            others: vec![("claude-worker".to_owned(), Completed)],
        };
        assert_eq!(before.lost(&names(&[]), &names(&["codex-worker"])), None);
    }
}
