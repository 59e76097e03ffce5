//! What the report's invariant checks share: the one `Problem` a check
//! reports, the report's row tables, each worker result indexed once, and
//! the ledger's classes the report is checked against.
//! `validate` and the severity floor (`floor`) both read these.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

use crate::severity::Severities;
use crate::vocab::FinalClass;

/// Each ledger claim's class as the rules give it (`None` when it has not
/// been classified), and its finding.
#[derive(Debug, Clone)]
pub struct LedgerClasses {
    /// The ledger's path, relative to the run folder, for messages.
    pub shown: String,
    pub classes: HashMap<String, Option<FinalClass>>,
    /// Why each `unverifiable` item is (its failed anchor), for messages.
    pub failed: HashMap<String, String>,
    /// The finding of each claim: claims with the same number are one
    /// finding (`derive::identity`).
    pub finding: HashMap<String, usize>,
}

/// One thing wrong with a report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// `schema` or the invariant's name (`verdict-card`, `next-step-routing`,
    /// `row-id`, `source-item`, `coverage`, `task-type`, `schema-version`,
    /// `header`, `convergence`, `reliability`, `verification`, `usage`,
    /// `anchors`, `severity`, `records`).
    pub rule: &'static str,
    /// JSON pointer to the offending value (`""` is the whole document).
    pub pointer: String,
    pub message: String,
}

impl Problem {
    pub fn new(rule: &'static str, pointer: impl Into<String>, message: String) -> Self {
        Self {
            rule,
            pointer: pointer.into(),
            message,
        }
    }
}

/// A worker's result file, indexed once: how often each item id occurs,
/// and each item's severity.
#[derive(Debug)]
pub enum Indexed {
    Items(HashMap<String, u32>, Severities),
    Unreadable(String),
}

/// The rows of one table (`consensus`, `differences` …) as `(index, row)`
/// pairs; pointers are only built when a problem needs one.
pub fn rows<'a>(report: &'a Value, table: &'a str) -> impl Iterator<Item = (usize, &'a Value)> {
    report
        .get(table)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
}
