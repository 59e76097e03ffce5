//! Whether the results a report cites are the ones okstra recorded: every
//! attempt that okstra took a result from records the SHA-256 of its Result
//! Path (and of its worker-results file), and a report is only as good as
//! those files. A result edited afterwards — a severity cell lowered, a
//! finding deleted — is no evidence, and `okstra validate` (at its
//! `records` level) and `okstra gate` say so, naming the file.
//!
//! Checked: the own result of every worker the report cites (its latest
//! attempt that recorded a digest), and, when the report carries who
//! verified what, every reviewer's verdicts of each recorded round. A file
//! whose attempt recorded no digest (a run of an older okstra, a fixture
//! written by hand) is not checked.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use crate::catalog::{DispatchKind, Role};
use crate::run::Records;
use crate::run::team_state::{DispatchRecord, TeamState};

/// A file that is not what its attempt recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub path: PathBuf,
    pub dispatch_name: String,
    pub attempt: u32,
    /// The SHA-256 the attempt recorded.
    pub recorded: String,
    /// The file's SHA-256 now; `None` when it is gone or unreadable.
    pub found: Option<String>,
}

impl Mismatch {
    /// One sentence naming the file (relative to the run folder `run_dir`).
    pub fn message(&self, run_dir: &Path) -> String {
        let shown = self.path.strip_prefix(run_dir).unwrap_or(&self.path);
        let now = self.found.as_deref().map_or_else(
            || "it is gone, or not a file okstra can read".to_owned(),
            |found| format!("its SHA-256 is now `{}`", short(found)),
        );
        format!(
            "`{}` is not the file okstra recorded for `{}` (attempt {}): {now}, where the team \
             state recorded `{}`; a result changed after okstra took it in is no evidence",
            shown.display(),
            self.dispatch_name,
            self.attempt,
            short(&self.recorded)
        )
    }
}

fn short(digest: &str) -> &str {
    &digest[..digest.len().min(16)]
}

/// Every cited file that differs from what was recorded: the own results of
/// the workers in `cited`, and with `reviews` the verdict files of every
/// round the ledger records.
pub fn mismatches(records: &Records, cited: &BTreeSet<String>, reviews: bool) -> Vec<Mismatch> {
    let mut names: Vec<String> = records
        .run
        .assignments
        .iter()
        .filter(|a| a.role != Role::ReportWriter && cited.contains(&a.worker_id))
        .map(|a| a.dispatch_name.clone())
        .collect();
    if reviews {
        let rounds = records.ledger.as_ref().map_or(0, |l| l.rounds_run);
        for reviewer in records.run.reviewers() {
            for round in 1..=rounds {
                names.push(DispatchKind::Reverify(round).dispatch_name(&reviewer.dispatch_name));
            }
        }
    }
    compare(&records.state, &names, &records.results.digests)
}

/// Each file of the dispatches `names` whose digest now (`digests`, by
/// path) is not the one its latest attempt that recorded one recorded.
fn compare(
    state: &TeamState,
    names: &[String],
    digests: &HashMap<PathBuf, Option<String>>,
) -> Vec<Mismatch> {
    type Digest = fn(&DispatchRecord) -> Option<&String>;
    type File = fn(&DispatchRecord) -> &PathBuf;
    let files: [(Digest, File); 2] = [
        (|r| r.result_sha256.as_ref(), |r| &r.result_path),
        (
            |r| r.worker_results_sha256.as_ref(),
            |r| &r.worker_results_path,
        ),
    ];
    let mut found = Vec::new();
    for name in names {
        for (digest, path) in files {
            let Some(record) = state
                .dispatches
                .iter()
                .filter(|r| r.dispatch_name == *name && digest(r).is_some())
                .max_by_key(|r| r.attempt)
            else {
                continue;
            };
            let Some(recorded) = digest(record) else {
                continue;
            };
            let path = path(record);
            let now = digests.get(path).cloned().flatten();
            if now.as_deref() != Some(recorded.as_str()) {
                found.push(Mismatch {
                    path: path.clone(),
                    dispatch_name: name.clone(),
                    attempt: record.attempt,
                    recorded: recorded.clone(),
                    found: now,
                });
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::roster::DispatchPaths;

    fn attempt(attempt: u32, result: Option<&str>, audit: Option<&str>) -> DispatchRecord {
        let mut record = DispatchRecord::queued(
            "claude-worker",
            DispatchKind::Initial,
            attempt,
            "claude",
            &DispatchPaths::new(Path::new("/run"), "claude-worker"),
        );
        record.result_sha256 = result.map(str::to_owned);
        record.worker_results_sha256 = audit.map(str::to_owned);
        record
    }

    /// (name, attempts, digests now of (result, worker-results), expected
    /// (attempt, digest now) of each mismatch)
    type Row = (
        &'static str,
        Vec<DispatchRecord>,
        (Option<&'static str>, Option<&'static str>),
        Vec<(u32, Option<&'static str>)>,
    );

    #[test]
    fn the_integrity_table() {
        let result = PathBuf::from("/run/results/claude-worker.md");
        let audit = PathBuf::from("/run/results/claude-worker.worker-results.md");
        let rows: Vec<Row> = vec![
            (
                "as recorded",
                vec![attempt(1, Some("aa"), Some("bb"))],
                (Some("aa"), Some("bb")),
                vec![],
            ),
            (
                "a result edited afterwards",
                vec![attempt(1, Some("aa"), None)],
                (Some("cc"), None),
                vec![(1, Some("cc"))],
            ),
            (
                "a worker-results file edited afterwards",
                vec![attempt(1, Some("aa"), Some("bb"))],
                (Some("aa"), Some("ee")),
                vec![(1, Some("ee"))],
            ),
            (
                "a result deleted",
                vec![attempt(1, Some("aa"), None)],
                (None, None),
                vec![(1, None)],
            ),
            (
                "the latest attempt that recorded one decides",
                vec![
                    attempt(1, Some("aa"), None),
                    attempt(2, Some("dd"), None),
                    attempt(3, None, None),
                ],
                (Some("dd"), None),
                vec![],
            ),
            (
                "nothing recorded, nothing checked",
                vec![attempt(1, None, None)],
                (Some("zz"), None),
                vec![],
            ),
        ];
        for (name, dispatches, (now_result, now_audit), expected) in rows {
            let state = TeamState {
                dispatches,
                ..TeamState::default()
            };
            let digests: HashMap<PathBuf, Option<String>> = [
                (result.clone(), now_result.map(str::to_owned)),
                (audit.clone(), now_audit.map(str::to_owned)),
            ]
            .into_iter()
            .collect();
            let found: Vec<(u32, Option<String>)> =
                compare(&state, &["claude-worker".to_owned()], &digests)
                    .into_iter()
                    .map(|m| (m.attempt, m.found))
                    .collect();
            let expected: Vec<(u32, Option<String>)> = expected
                .into_iter()
                .map(|(a, f)| (a, f.map(str::to_owned)))
                .collect();
            assert_eq!(found, expected, "{name}");
        }
    }
}
