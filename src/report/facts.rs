//! What the run manifest and the run's records tell the report's checks:
//! the roster, the ledger and the blocks okstra computes. Read once by
//! `report::find_run`, used by `validate` (the invariants) and `records`
//! (the checks against the records).

use std::path::PathBuf;

use crate::catalog::Role;

use super::rules::LedgerClasses;
use super::verification::Verification;
use crate::derive::reliability::Reliability;

/// One rostered worker as the run manifest records it.
#[derive(Debug, Clone)]
pub struct Rostered {
    pub worker_id: String,
    pub role: String,
    pub provider: String,
    /// The worker's result file, already re-rooted under the run folder.
    pub result_path: PathBuf,
}

/// What the run manifest tells the cross-file checks.
#[derive(Debug, Clone)]
pub struct RunFacts {
    pub run_dir: PathBuf,
    pub roster: Vec<Rostered>,
    pub task_type: Option<String>,
    pub schema_version: Option<String>,
    pub run_id: Option<String>,
    pub task_key: Option<String>,
    /// The convergence ledger, when the run has one (`Err` when it cannot
    /// be read).
    pub ledger: Option<Result<LedgerClasses, String>>,
    /// The `reliability` block the run's records give (`Err` when they
    /// cannot be read); `None` when the report carries no block to check.
    pub reliability: Option<Result<Reliability, String>>,
    /// The `verification` block the run's records give (`Ok(None)` without
    /// a ledger); `None` when the report carries no block to check.
    pub verification: Option<Result<Option<Verification>, String>>,
    /// The coverage and usage the run's records give (`Err` when they cannot
    /// be read); `None` for a report older than 2.1, whose writer authored
    /// both, which skips the checks that need them.
    pub records: Option<Result<Computed, String>>,
}

/// What okstra computes from a run's team state for the report: the
/// `workerCoverage` and `usageSummary` it writes after the report writer
/// ends.
#[derive(Debug, Clone)]
pub struct Computed {
    pub coverage: Vec<crate::derive::coverage::Entry>,
    pub usage: crate::usage::Summary,
}

impl RunFacts {
    /// The workers whose results the report cites: everyone but the report
    /// writer, which authors the report rather than contributing to it.
    pub(super) fn contributors(&self) -> impl Iterator<Item = &Rostered> {
        self.roster
            .iter()
            .filter(|w| w.role != Role::ReportWriter.as_str())
    }

    /// The workers that need a coverage entry: from 2.1 on (okstra writes
    /// the block) every one, the report writer included; before, the
    /// contributors.
    pub(super) fn covered(&self) -> impl Iterator<Item = &Rostered> {
        let all = self.records.is_some();
        self.roster
            .iter()
            .filter(move |w| all || w.role != Role::ReportWriter.as_str())
    }
}
