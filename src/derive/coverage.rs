//! Worker coverage: the final report's `workerCoverage`, computed from the
//! run's dispatch records instead of written by hand.
//!
//! Every rostered worker, the report writer included, gets one entry: its
//! own dispatches' latest attempt (initial, retry or repair, never a
//! reverify round) decides its `terminalStatus` through
//! `Ending::report_status`, the one mapping; a worker that did not complete
//! carries the classified reason, the record's detail and its log tail;
//! `itemsReported` counts the items of its Result Path the way `okstra
//! validate` does (none for the report writer, which reports no items: its
//! Result Path is the report). [`of`] is the one place this is worked out:
//! the report's finalize step writes its answer into data.json once the
//! report writer has ended, and `okstra validate` checks the block against
//! it.

use serde::Serialize;

use crate::catalog::{Provider, Role};
use crate::run::Records;
use crate::run::roster::Assignment;
use crate::run::team_state::DispatchRecord;
use crate::vocab::{Ending, ReportStatus};
use crate::vocab::{Isolation, Word};

/// The report keeps at most this many log lines per failure.
const MAX_TAIL: usize = 40;

/// One `workerCoverage` entry, in the report schema's shape.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub worker_id: String,
    pub provider: Provider,
    pub role: Role,
    pub terminal_status: ReportStatus,
    pub items_reported: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Why a worker did not complete.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Failure {
    pub reason: &'static str,
    pub detail: String,
    pub log_tail: Vec<String>,
}

/// The coverage of every rostered worker, the report writer included, in
/// roster order.
pub fn of(records: &Records) -> Vec<Entry> {
    let state = &records.state;
    records
        .run
        .assignments
        .iter()
        .map(|a| {
            let latest = state.latest(&a.dispatch_name);
            let ending = latest.and_then(|r| r.ending);
            let (terminal_status, reason) = match ending {
                Some(ending) => ending.report_status(),
                None => (ReportStatus::Unavailable, Some("unavailable")),
            };
            let failure = reason.map(|reason| {
                let detail = match latest {
                    None => "never dispatched".to_owned(),
                    Some(r) if r.ending.is_none() => "still running, or never ended".to_owned(),
                    Some(r) => r
                        .detail
                        .clone()
                        .filter(|d| !d.trim().is_empty())
                        .unwrap_or_else(|| ending.map_or("unavailable", Ending::as_str).to_owned()),
                };
                let mut log_tail = latest.and_then(|r| r.log_tail.clone()).unwrap_or_default();
                if log_tail.len() > MAX_TAIL {
                    log_tail.drain(..log_tail.len() - MAX_TAIL);
                }
                Failure {
                    reason,
                    detail,
                    log_tail,
                }
            });
            // The report writer's Result Path is the report itself: it
            // reports no items of its own.
            let items_reported = if a.role == Role::ReportWriter {
                0
            } else {
                records
                    .results
                    .own
                    .get(&a.worker_id)
                    .map_or(0, |own| own.occurrences)
            };
            let mut notes: Vec<String> =
                isolation_note(a, &state.dispatches).into_iter().collect();
            // Answers okstra did not take from the sub-agent itself.
            let relayed: Vec<&str> = state
                .latest_attempts()
                .into_iter()
                .filter(|r| {
                    r.worker_id == a.worker_id && r.recovered_from
                            .as_ref()
                            .is_some_and(|from| *from == crate::vocab::Recovery::Relayed)
                })
                .map(|r| r.dispatch_name.as_str())
                .collect();
            if !relayed.is_empty() {
                notes.push(format!(
                    "the result of {} reached okstra through `okstra submit` (passed on by the lead or the sub-agent), not from the sub-agent's own final message",
                    relayed.join(", ")
                ));
            }
            Entry {
                notes,
                worker_id: a.worker_id.clone(),
                provider: a.provider,
                role: a.role,
                terminal_status,
                items_reported,
                failure,
            }
        })
        .collect()
}

/// How `assignment`'s worker was kept from changing the project, from the
/// `isolation` of all its attempts (its own work and its reviews). The
/// weakest one decides: a reader must know that one attempt ran in the
/// project itself, whatever the others did.
fn isolation_note(assignment: &Assignment, records: &[DispatchRecord]) -> Option<String> {
    let mine: Vec<&DispatchRecord> = records
        .iter()
        .filter(|r| r.worker_id == assignment.worker_id)
        .collect();
    let used: Vec<Isolation> = mine
        .iter()
        .filter_map(|r| r.isolation.as_ref().and_then(Word::known))
        .collect();
    let provider = assignment.provider;
    let has = |isolation: Isolation| used.contains(&isolation);
    // The Executor's branch, as its notes name it.
    let branch = mine
        .iter()
        .find_map(|r| r.branch.as_ref().map(|b| b.name.clone()))
        .map_or_else(String::new, |name| format!(" `{name}`"));
    let note = if has(Isolation::None) {
        format!(
            "{provider} has no read-only mode and no copy of the project could be made for it, so it ran in the project itself (allowed by `--allow-unisolated`)"
        )
    } else if has(Isolation::GitWorktree) {
        format!(
            "{provider} has no read-only mode, so it worked in a throwaway git worktree of the project"
        )
    } else if has(Isolation::FileCopy) {
        format!(
            "{provider} has no read-only mode, so it worked in its own file copy of the project (not a git repository), never in the project itself"
        )
    } else if has(Isolation::GitCopy) {
        let snapshot = mine
            .iter()
            .find_map(|r| r.workspace.as_ref()?.snapshot_ref.clone())
            .map_or_else(String::new, |reference| format!(" (`{reference}`)"));
        match assignment.role {
            Role::Executor => format!(
                "the Executor worked in its own git copy of the run's snapshot of the working tree{snapshot}; its change is on the branch{branch} and reaches the project only through `okstra land`"
            ),
            Role::Verifier => format!(
                "{provider} worked in a git copy holding the Executor's change on the run's snapshot of the working tree{snapshot}, never in the project itself"
            ),
            _ => format!(
                "{provider} has no read-only mode, so it worked in its own git copy of the run's snapshot of the working tree{snapshot}, never in the project itself"
            ),
        }
    } else if has(Isolation::Landlock) {
        match assignment.role {
            Role::Executor => format!(
                "the Executor worked in its own git copy of the run's snapshot of the working tree, confined to it by Landlock (it could not write the project); its change is on the branch{branch} and reaches the project only through `okstra land`"
            ),
            Role::Verifier => format!(
                "{provider} read the Executor's git copy (its change on the run's snapshot of the working tree) under Landlock, which let it write nothing there nor in the project"
            ),
            _ => format!(
                "{provider} read the project itself under Landlock, which let it write only its own state folders and a scratch folder, never the project"
            ),
        }
    } else if has(Isolation::CliSandbox) {
        if assignment.role == Role::Executor {
            "the Executor worked in the project itself, as its role requires".to_owned()
        } else {
            format!("{provider} worked in the project under its own read-only mode")
        }
    } else {
        return None;
    };
    Some(note)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::DispatchKind;
    use crate::derive::testing;
    use crate::run::records::OwnResult;

    fn attempt(name: &str, worker: &str, attempt: u32, ending: Option<Ending>) -> DispatchRecord {
        let run = testing::run("project-analysis", &[]);
        let mut record = DispatchRecord::queued(
            name,
            DispatchKind::Initial,
            attempt,
            worker,
            &crate::run::roster::DispatchPaths::new(&run.dir, name),
        );
        record.ending = ending;
        record.detail = ending.map(|e| format!("ended {e}"));
        record
    }

    /// (name, claude's attempts, its result's items) → (status, failure
    /// reason, items reported)
    type Row = (
        &'static str,
        Vec<DispatchRecord>,
        usize,
        (ReportStatus, Option<&'static str>, usize),
    );

    #[test]
    fn the_coverage_table() {
        let rows: Vec<Row> = vec![
            (
                "completed, its items counted",
                vec![attempt(
                    "claude-worker",
                    "claude",
                    1,
                    Some(Ending::Completed),
                )],
                4,
                (ReportStatus::Completed, None, 4),
            ),
            (
                "the latest attempt decides",
                vec![
                    attempt("claude-worker", "claude", 1, Some(Ending::IdleTimeout)),
                    attempt("claude-worker", "claude", 2, Some(Ending::Completed)),
                ],
                2,
                (ReportStatus::Completed, None, 2),
            ),
            (
                "a review round is not its own work",
                vec![
                    attempt("claude-worker", "claude", 1, Some(Ending::Completed)),
                    attempt("claude-worker-reverify-r1", "claude", 1, Some(Ending::Auth)),
                ],
                1,
                (ReportStatus::Completed, None, 1),
            ),
            (
                "never dispatched",
                vec![],
                0,
                (ReportStatus::Unavailable, Some("unavailable"), 0),
            ),
            (
                "still running, or never ended",
                vec![attempt("claude-worker", "claude", 1, None)],
                0,
                (ReportStatus::Unavailable, Some("unavailable"), 0),
            ),
        ];
        for (name, dispatches, occurrences, expected) in rows {
            let run = testing::run(
                "project-analysis",
                &[
                    ("claude", "analyser", "claude"),
                    ("report-writer", "report-writer", "claude"),
                ],
            );
            let mut records = testing::records(run, dispatches);
            records.results.own.insert(
                "claude".to_owned(),
                OwnResult {
                    occurrences,
                    ..OwnResult::default()
                },
            );
            let entries = of(&records);
            assert_eq!(entries.len(), 2, "{name}: every rostered worker");
            let claude = &entries[0];
            assert_eq!(
                (
                    claude.terminal_status,
                    claude.failure.as_ref().map(|f| f.reason),
                    claude.items_reported
                ),
                expected,
                "{name}"
            );
            // The report writer reports no items of its own.
            assert_eq!(entries[1].items_reported, 0, "{name}");
            // A worker with no attempt is not said to have run (the report
            // writer's prompt names this detail).
            if name == "never dispatched" {
                assert_eq!(
                    claude.failure.as_ref().map(|f| f.detail.as_str()),
                    Some("never dispatched")
                );
            }
        }
    }
}
