//! Where an implementation run's change stands at the landing gate: the
//! verification half of the gate, from the run's records alone (so `okstra
//! status`, the report, `okstra run` and `okstra land` show the same
//! standing): the Executor's change is on its branch, every verifier has
//! ended and one checked exactly that commit, the defects were classified,
//! a fix pass that changed the code was checked on its commit, and no
//! confirmed `blocking`/`major` defect stays open. The working-tree half
//! (ancestry, the files) is `land::apply`'s.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::catalog::{Role, TaskType};
use crate::converge::{fix, fix_check};
use crate::run::Records;
use crate::run::team_state::ExecutorCommits;
use crate::vocab::Ending;
use crate::vocab::{LandReason, LandingState};

/// One reason the change may not land, with what it is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Blocker {
    pub reason: LandReason,
    pub detail: String,
}

impl Blocker {
    pub fn new(reason: LandReason, detail: impl Into<String>) -> Blocker {
        Blocker {
            reason,
            detail: detail.into(),
        }
    }

    /// `reason: detail`, the one line the gate prints.
    pub fn line(&self) -> String {
        format!("{}: {}", self.reason, self.detail)
    }
}

/// What the records say of the Executor's change.
#[derive(Debug, Clone, Default)]
pub struct Verification {
    /// Its commits, once its own work was committed.
    pub commits: Option<ExecutorCommits>,
    /// Why it may not land yet (empty: verification allows it).
    pub blockers: Vec<Blocker>,
}

/// The verification half of the gate for an implementation run, from its
/// records (nothing for any other run).
pub fn verification(records: &Records) -> Verification {
    let (run, state) = (&records.run, &records.state);
    let mut found = Verification::default();
    if run.task_type != TaskType::Implementation {
        return found;
    }
    let block = |found: &mut Verification, reason: LandReason, detail: String| {
        found.blockers.push(Blocker::new(reason, detail));
    };
    let Some(executor) = run.in_role(Role::Executor).next() else {
        block(
            &mut found,
            LandReason::VerificationIncomplete,
            "this run has no Executor".into(),
        );
        return found;
    };
    if let Some(latest) = state.latest(&executor.dispatch_name)
        && latest.ending.is_none()
    {
        block(
            &mut found,
            LandReason::VerificationIncomplete,
            format!("`{}` has not finished", latest.dispatch_name),
        );
        return found;
    }
    let Some(commits) =
        state.executor_commits(&executor.dispatch_name, &executor.paths.prompt_path)
    else {
        block(
            &mut found,
            LandReason::VerificationIncomplete,
            format!(
                "the Executor `{}` has no committed change",
                executor.dispatch_name
            ),
        );
        return found;
    };
    found.commits = Some(commits.clone());

    // Every verifier has ended; at least one checked the Executor's commit.
    let mut checked = 0;
    for verifier in run.in_role(Role::Verifier) {
        match state.latest(&verifier.dispatch_name) {
            None => block(
                &mut found,
                LandReason::VerificationIncomplete,
                format!("`{}` has not run", verifier.dispatch_name),
            ),
            Some(latest) if latest.ending.is_none() => block(
                &mut found,
                LandReason::VerificationIncomplete,
                format!("`{}` has not finished", verifier.dispatch_name),
            ),
            Some(latest) => {
                let on_first = latest.workspace.as_ref().and_then(|w| w.commit.as_deref())
                    == Some(commits.first.as_str());
                if latest.ending == Some(Ending::Completed) && on_first {
                    checked += 1;
                }
            }
        }
    }
    if checked == 0 && found.blockers.is_empty() {
        block(
            &mut found,
            LandReason::VerificationIncomplete,
            format!(
                "no verifier completed a check of the Executor's commit `{}`",
                short(&commits.first)
            ),
        );
    }
    if !found.blockers.is_empty() {
        return found;
    }

    // The defects, as classified.
    let classified = records
        .ledger
        .as_ref()
        .filter(|l| l.items.iter().all(|i| i.final_class.is_some()));
    let Some(classified) = classified else {
        block(
            &mut found,
            LandReason::VerificationIncomplete,
            format!(
                "the verifiers' defects are not classified yet (`okstra converge classify {}`)",
                run.dir.display()
            ),
        );
        return found;
    };
    let defects: Vec<String> = fix::defects(classified, classified.enabled)
        .into_iter()
        .map(|item| item.item_id.clone())
        .collect();

    // A fix pass that changed the code, checked on its commit.
    let mut fixed = BTreeSet::new();
    if commits.tip != commits.first {
        let plan = records
            .fix_check
            .as_ref()
            .filter(|plan| plan.tip == commits.tip);
        let Some(plan) = plan else {
            block(
                &mut found,
                LandReason::FixUnverified,
                format!(
                    "the fix pass changed the code (`{}`), and no verifier has checked its change",
                    short(&commits.tip)
                ),
            );
            return found;
        };
        let outcome = fix_check::outcome(state, plan, &records.results.fix_answers);
        if !outcome.ended {
            block(
                &mut found,
                LandReason::FixUnverified,
                "the verifiers' check of the fix pass has not finished".into(),
            );
            return found;
        }
        if outcome.completed.is_empty() {
            block(
                &mut found,
                LandReason::FixUnverified,
                format!(
                    "no verifier completed the check of the fix pass's commit `{}`",
                    short(&commits.tip)
                ),
            );
            return found;
        }
        fixed = outcome.fixed;
    }
    let open: Vec<&String> = defects.iter().filter(|id| !fixed.contains(*id)).collect();
    if !open.is_empty() {
        let ids: Vec<String> = open.iter().map(|id| format!("`{id}`")).collect();
        block(
            &mut found,
            LandReason::DefectsOpen,
            format!(
                "{} confirmed blocking or major defect{} not fixed: {}",
                open.len(),
                if open.len() == 1 { " is" } else { "s are" },
                ids.join(", ")
            ),
        );
    }
    found
}

/// Where an implementation run's change stands, from its records: what
/// `okstra status`, the report and `okstra run` show.
#[derive(Debug, Clone, Serialize)]
pub struct Standing {
    pub state: LandingState,
    /// The branch, without `refs/heads/`.
    pub branch: Option<String>,
    /// Its tip.
    pub commit: Option<String>,
    pub reasons: Vec<Blocker>,
}

/// The standing of the run whose records are `records` (`None` unless an
/// implementation run).
pub fn standing(records: &Records) -> Option<Standing> {
    if records.run.task_type != TaskType::Implementation {
        return None;
    }
    let state = &records.state;
    let found = verification(records);
    let commits = found.commits.as_ref();
    let landed = state
        .landing
        .as_ref()
        .is_some_and(|l| commits.is_some_and(|c| c.tip == l.commit));
    Some(Standing {
        state: if landed {
            LandingState::Landed
        } else if found.blockers.is_empty() && commits.is_some() {
            LandingState::Landable
        } else {
            LandingState::Blocked
        },
        branch: commits.map(|c| c.branch.trim_start_matches("refs/heads/").to_owned()),
        commit: commits.map(|c| c.tip.clone()),
        reasons: if landed { Vec::new() } else { found.blockers },
    })
}

/// The first 12 hex digits of a commit id.
pub fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::DispatchKind;
    use crate::converge::ledger::{Ledger, LedgerItem};
    use crate::derive::testing;
    use crate::run::team_state::{BranchRecord, DispatchRecord, Landing, WorkspaceRecord};
    use crate::vocab::FinalClass;

    const TIP: &str = "c0ffee000000000000000000000000000000c0de";

    fn roster() -> crate::run::Run {
        testing::run(
            "implementation",
            &[
                ("claude", "executor", "claude"),
                ("codex", "verifier", "codex"),
                ("report-writer", "report-writer", "claude"),
            ],
        )
    }

    fn attempt(run: &crate::run::Run, worker: &str, ending: Option<Ending>) -> DispatchRecord {
        let assignment = run.assignment(worker).unwrap();
        let mut record = DispatchRecord::queued(
            &assignment.dispatch_name,
            DispatchKind::Initial,
            1,
            worker,
            &assignment.paths,
        );
        record.ending = ending;
        record
    }

    /// The Executor's attempt, committed as `TIP` when `committed`.
    fn executor(run: &crate::run::Run, ending: Option<Ending>, committed: bool) -> DispatchRecord {
        let mut record = attempt(run, "claude", ending);
        record.branch = Some(BranchRecord {
            name: "refs/heads/okstra/p/g/t/r-001".to_owned(),
            parent: Some("5a5a".to_owned()),
            commit: committed.then(|| TIP.to_owned()),
        });
        record
    }

    /// The verifier's attempt, checking the commit `on`.
    fn verifier(run: &crate::run::Run, on: &str) -> DispatchRecord {
        let mut record = attempt(run, "codex", Some(Ending::Completed));
        record.workspace = Some(WorkspaceRecord {
            path: "/copies/codex".into(),
            snapshot_ref: None,
            kind: crate::vocab::WorkspaceKind::GitCopy.into(),
            snapshot_ms: None,
            copy_ms: None,
            commit: Some(on.to_owned()),
            head: None,
        });
        record
    }

    /// A ledger holding one verifier defect of `severity` in `class`.
    fn ledger(severity: &str, class: FinalClass) -> Ledger {
        Ledger {
            enabled: true,
            items: vec![LedgerItem {
                item_id: "codex:D-001".to_owned(),
                owner: "codex".to_owned(),
                section: Some("3. Defects".to_owned()),
                text: Some(format!(
                    "expired holds count | src/inventory.py:1 | {severity}"
                )),
                final_class: Some(class),
                ..LedgerItem::default()
            }],
            ..Ledger::default()
        }
    }

    /// (name, attempts, ledger, landed, (state, first reason))
    type Row = (
        &'static str,
        Vec<DispatchRecord>,
        Option<Ledger>,
        bool,
        (&'static str, Option<LandReason>),
    );

    #[test]
    fn the_landing_table() {
        let run = roster();
        let done = Some(Ending::Completed);
        let rows: Vec<Row> = vec![
            (
                "the Executor has not finished",
                vec![executor(&run, None, false)],
                None,
                false,
                ("blocked", Some(LandReason::VerificationIncomplete)),
            ),
            (
                "its change was never committed",
                vec![executor(&run, done, false), verifier(&run, TIP)],
                None,
                false,
                ("blocked", Some(LandReason::VerificationIncomplete)),
            ),
            (
                "the verifier checked another commit",
                vec![executor(&run, done, true), verifier(&run, "0ther")],
                Some(ledger("minor", FinalClass::FullConsensus)),
                false,
                ("blocked", Some(LandReason::VerificationIncomplete)),
            ),
            (
                "the defects are not classified",
                vec![executor(&run, done, true), verifier(&run, TIP)],
                None,
                false,
                ("blocked", Some(LandReason::VerificationIncomplete)),
            ),
            (
                "a confirmed major defect stays open",
                vec![executor(&run, done, true), verifier(&run, TIP)],
                Some(ledger("major", FinalClass::FullConsensus)),
                false,
                ("blocked", Some(LandReason::DefectsOpen)),
            ),
            (
                "a refuted major defect blocks nothing",
                vec![executor(&run, done, true), verifier(&run, TIP)],
                Some(ledger("major", FinalClass::Refuted)),
                false,
                ("landable", None),
            ),
            (
                "verified with nothing to fix",
                vec![executor(&run, done, true), verifier(&run, TIP)],
                Some(ledger("minor", FinalClass::FullConsensus)),
                false,
                ("landable", None),
            ),
            (
                "landed",
                vec![executor(&run, done, true), verifier(&run, TIP)],
                Some(ledger("minor", FinalClass::FullConsensus)),
                true,
                ("landed", None),
            ),
        ];
        for (name, dispatches, ledger, landed, expected) in rows {
            let mut records = testing::records(run.clone(), dispatches);
            records.ledger = ledger;
            if landed {
                records.state.landing = Some(Landing {
                    state: LandingState::Landed.into(),
                    branch: "okstra/p/g/t/r-001".to_owned(),
                    commit: TIP.to_owned(),
                    head: None,
                    landed_at: None,
                    files: Vec::new(),
                });
            }
            let standing = standing(&records).expect("an implementation run");
            assert_eq!(
                (
                    standing.state.as_str(),
                    standing.reasons.first().map(|blocker| blocker.reason)
                ),
                expected,
                "{name}: {:?}",
                standing.reasons
            );
        }
        let other = testing::records(testing::run("project-analysis", &[]), Vec::new());
        assert!(standing(&other).is_none(), "nothing to land");
    }
}
