//! The checks of a 2.1 report against what okstra computes from its run's
//! records: `workerCoverage` (each entry's role, status, failure and notes
//! as the worker's latest attempt gives them), `usageSummary` (the usage
//! recorded for each attempt and the lead, summed by `crate::usage`), and
//! the convergence ledger's completeness (every classified claim in the
//! report, in its class; nothing unverified promoted into `consensus`).
//!
//! okstra writes the two blocks itself once the report writer has ended
//! (`report::finalize`), so a difference is an edit or a stale report, and
//! each problem names the value the records give.

use std::collections::HashSet;

use serde_json::Value;

use crate::vocab::FinalClass;

use super::facts::RunFacts;
use super::rules::LedgerClasses;
use super::rules::{Problem, rows};

/// The fields of a coverage entry okstra computes from the attempt records
/// and a writer could misstate; `provider` and `itemsReported` have checks
/// of their own above.
const COVERAGE_FIELDS: [&str; 4] = ["role", "terminalStatus", "failure", "notes"];

/// One problem per value of `entry` that differs from what the records
/// give for its worker (inside `failure` too: its reason, detail, log tail).
pub(super) fn coverage_against_records(
    entry: &Value,
    index: usize,
    computed: &crate::derive::coverage::Entry,
    problems: &mut Vec<Problem>,
) {
    let Ok(expected) = serde_json::to_value(computed) else {
        return;
    };
    for field in COVERAGE_FIELDS {
        let pointer = format!("/workerCoverage/{index}/{field}");
        let mut differences = Vec::new();
        match (entry.get(field), expected.get(field)) {
            (Some(found), Some(wanted)) => differ(&pointer, found, wanted, &mut differences),
            (None, None) => {}
            (found, wanted) => differences.push((pointer, found.cloned(), wanted.cloned())),
        }
        let why = match field {
            "terminalStatus" | "failure" => " (its latest attempt decides)",
            _ => "",
        };
        for (pointer, found, wanted) in differences {
            let shown = pointer
                .strip_prefix(&format!("/workerCoverage/{index}/"))
                .unwrap_or(field)
                .replace('/', ".");
            problems.push(Problem::new(
                "coverage",
                pointer,
                format!(
                    "worker `{}` has `{shown}` {} but okstra computes {} from the run's \
                     records{why}; okstra writes `workerCoverage` once the report writer \
                     has ended, never edit it",
                    computed.worker_id,
                    shown_value(found.as_ref()),
                    shown_value(wanted.as_ref())
                ),
            ));
        }
    }
}

/// A JSON value in a message: `none` when absent, else in backticks (long
/// values cut, so a log tail does not flood the line).
fn shown_value(value: Option<&Value>) -> String {
    /// A value shown in a message is cut to this many characters.
    const MAX_SHOWN: usize = 80;
    let Some(value) = value else {
        return "none".to_owned();
    };
    let text = match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let text = crate::fsread::escape(&text).into_owned();
    if text.chars().count() > MAX_SHOWN {
        let cut: String = text.chars().take(MAX_SHOWN).collect();
        format!("`{cut}…`")
    } else {
        format!("`{text}`")
    }
}

/// At most this many usage differences are listed: one edit to an attempt
/// changes its worker, its provider and the totals.
const MAX_USAGE_PROBLEMS: usize = 20;

/// From 2.1 on, `usageSummary` is what okstra computes from the run's
/// records: every attempt's recorded usage summed (the report writer's
/// too), the lead's, the totals. One problem per value that differs.
pub(super) fn usage(report: &Value, run: &RunFacts, problems: &mut Vec<Problem>) {
    let Some(records) = &run.records else {
        return;
    };
    let Some(found) = report.get("usageSummary") else {
        return; // the schema requires it
    };
    let records = match records {
        Ok(records) => records,
        Err(reason) => {
            problems.push(Problem::new(
                "usage",
                "/usageSummary",
                format!("`usageSummary` cannot be checked against the run's records: {reason}"),
            ));
            return;
        }
    };
    let Ok(expected) = serde_json::to_value(&records.usage) else {
        return;
    };
    let mut differences = Vec::new();
    differ("/usageSummary", found, &expected, &mut differences);
    let total = differences.len();
    for (pointer, found, wanted) in differences.into_iter().take(MAX_USAGE_PROBLEMS) {
        problems.push(Problem::new(
            "usage",
            pointer,
            format!(
                "is {} but okstra computes {} from the run's records (the usage recorded for \
                 each attempt, summed); okstra writes `usageSummary` once the report writer \
                 has ended, never edit it",
                shown_value(found.as_ref()),
                shown_value(wanted.as_ref())
            ),
        ));
    }
    if total > MAX_USAGE_PROBLEMS {
        problems.push(Problem::new(
            "usage",
            "/usageSummary",
            format!(
                "{} more values differ from the run's records",
                total - MAX_USAGE_PROBLEMS
            ),
        ));
    }
}

/// Every place `found` and `wanted` differ, as (pointer, found, wanted);
/// objects key by key, arrays item by item (a length that differs is one
/// difference at the array).
fn differ(
    pointer: &str,
    found: &Value,
    wanted: &Value,
    out: &mut Vec<(String, Option<Value>, Option<Value>)>,
) {
    match (found, wanted) {
        (Value::Object(found), Value::Object(wanted)) => {
            for (key, value) in found {
                let here = format!("{pointer}/{}", escape_pointer(key));
                match wanted.get(key) {
                    Some(expected) => differ(&here, value, expected, out),
                    None => out.push((here, Some(value.clone()), None)),
                }
            }
            for (key, value) in wanted {
                if !found.contains_key(key) {
                    let here = format!("{pointer}/{}", escape_pointer(key));
                    out.push((here, None, Some(value.clone())));
                }
            }
        }
        (Value::Array(found_items), Value::Array(wanted_items))
            if found_items.len() == wanted_items.len() =>
        {
            for (index, (value, expected)) in found_items.iter().zip(wanted_items).enumerate() {
                differ(&format!("{pointer}/{index}"), value, expected, out);
            }
        }
        (Value::Array(found_items), Value::Array(wanted_items)) => out.push((
            pointer.to_owned(),
            Some(Value::from(format!("{} entries", found_items.len()))),
            Some(Value::from(format!("{} entries", wanted_items.len()))),
        )),
        (found, wanted) if found != wanted => {
            out.push((
                pointer.to_owned(),
                Some(found.clone()),
                Some(wanted.clone()),
            ));
        }
        _ => {}
    }
}

/// A key as one JSON-pointer segment (RFC 6901).
fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Every claim of the convergence ledger is in the report, in its class:
/// a `full-` or `partial-consensus` claim in a `consensus` row (a
/// `differences` row when the run was not cross-verified), a
/// `worker-unique` one in a `differences` row, and no `worker-unique`,
/// unclassified or never-reviewed item (one the ledger does not hold) in
/// `consensus`. (`contested` and `refuted` claims have their own rule in
/// `validate::convergence`; an `unverifiable` or `refuted` one okstra lists
/// apart.)
pub(super) fn ledger_complete(report: &Value, ledger: &LedgerClasses, problems: &mut Vec<Problem>) {
    let cited = |table: &'static str| -> HashSet<&str> {
        rows(report, table)
            .flat_map(|(_, row)| {
                row.get("sourceItems")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
            })
            .collect()
    };
    let consensus = cited("consensus");
    let differences = cited("differences");
    let cross_verified = report
        .pointer("/reliability/crossVerified")
        .and_then(Value::as_bool)
        != Some(false);
    let mut items: Vec<(&String, FinalClass)> = ledger
        .classes
        .iter()
        .filter_map(|(item, class)| class.map(|class| (item, class)))
        .collect();
    items.sort();
    for (item, class) in items {
        let table = match class {
            FinalClass::FullConsensus | FinalClass::PartialConsensus if cross_verified => {
                "consensus"
            }
            FinalClass::FullConsensus | FinalClass::PartialConsensus | FinalClass::WorkerUnique => {
                "differences"
            }
            FinalClass::Contested | FinalClass::Unverifiable | FinalClass::Refuted => continue,
        };
        let rows = if table == "consensus" {
            &consensus
        } else {
            &differences
        };
        if !rows.contains(item.as_str()) {
            problems.push(Problem::new(
                "convergence",
                format!("/{table}"),
                format!(
                    "`{item}` is `{class}` in `{}` but no `{table}` row cites it; every claim of \
                     the ledger belongs in the report, in its class",
                    ledger.shown
                ),
            ));
        }
    }
    for (index, row) in rows(report, "consensus") {
        let sources = row.get("sourceItems").and_then(Value::as_array);
        for (position, item) in sources.into_iter().flatten().enumerate() {
            let Some(item) = item.as_str() else { continue };
            let why = match ledger.classes.get(item) {
                Some(Some(FinalClass::WorkerUnique)) => "is `worker-unique`",
                Some(None) => "has no final class (convergence never settled it)",
                // A description, or an item convergence never saw: nobody
                // was asked to check it.
                None => "is not a claim of the ledger (no reviewer was asked about it)",
                _ => continue,
            };
            problems.push(Problem::new(
                "convergence",
                format!("/consensus/{index}/sourceItems/{position}"),
                format!(
                    "`{item}` {why} in `{}`: no other worker verified it, so it belongs in \
                     `differences`, not `consensus`",
                    ledger.shown
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde_json::json;

    use super::*;

    fn ledger(classes: &[(&str, Option<FinalClass>)]) -> LedgerClasses {
        LedgerClasses {
            shown: "state/convergence-ledger.json".to_owned(),
            classes: classes
                .iter()
                .map(|(item, class)| ((*item).to_owned(), *class))
                .collect(),
            failed: HashMap::new(),
            finding: HashMap::new(),
        }
    }

    fn lines(problems: &[Problem]) -> Vec<String> {
        problems
            .iter()
            .map(|p| format!("{} {}", p.pointer, p.message))
            .collect()
    }

    #[test]
    fn every_claim_of_the_ledger_is_in_its_class_and_nothing_unverified_is_promoted() {
        let ledger = ledger(&[
            ("a:F-1", Some(FinalClass::FullConsensus)),
            ("b:F-1", Some(FinalClass::PartialConsensus)),
            ("a:F-2", Some(FinalClass::WorkerUnique)),
            ("b:F-2", Some(FinalClass::Contested)),
            ("a:F-3", None),
        ]);
        let complete = json!({
            "reliability": {"crossVerified": true},
            "consensus": [{"sourceItems": ["a:F-1", "b:F-1"]}],
            "differences": [{"sourceItems": ["a:F-2", "b:F-2"]}],
        });
        let mut problems = Vec::new();
        ledger_complete(&complete, &ledger, &mut problems);
        assert_eq!(lines(&problems), Vec::<String>::new());

        // Dropped: the partial-consensus claim; promoted: the worker-unique
        // and the unclassified claims, and a description nobody reviewed.
        let tampered = json!({
            "reliability": {"crossVerified": true},
            "consensus": [{"sourceItems": ["a:F-1", "a:F-2", "a:F-3", "a:D-1"]}],
            "differences": [{"sourceItems": ["a:F-2", "b:F-2"]}],
        });
        let mut problems = Vec::new();
        ledger_complete(&tampered, &ledger, &mut problems);
        let found = lines(&problems);
        assert_eq!(found.len(), 4, "{found:#?}");
        assert!(
            found[3].starts_with("/consensus/0/sourceItems/3 `a:D-1` is not a claim of the ledger"),
            "{found:#?}"
        );
        assert!(found[0].starts_with(
            "/consensus `b:F-1` is `partial-consensus` in `state/convergence-ledger.json` but \
             no `consensus` row cites it"
        ));
        assert!(found[1].starts_with("/consensus/0/sourceItems/1 `a:F-2` is `worker-unique`"));
        assert!(found[2].starts_with("/consensus/0/sourceItems/2 `a:F-3` has no final class"));

        // Not cross-verified: every claim is a difference.
        let unverified = json!({
            "reliability": {"crossVerified": false},
            "consensus": [],
            "differences": [{"sourceItems": ["a:F-1", "a:F-2", "b:F-2"]}],
        });
        let mut problems = Vec::new();
        ledger_complete(&unverified, &ledger, &mut problems);
        let found = lines(&problems);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].starts_with("/differences `b:F-1` is `partial-consensus`"));
    }

    #[test]
    fn differences_are_found_at_their_pointer_with_both_values() {
        let found = json!({"totals": {"inputTokens": 1, "a/b": [1, 2]}, "extra": true});
        let wanted = json!({"totals": {"inputTokens": 197, "a/b": [1, 3]}, "source": "complete"});
        let mut out = Vec::new();
        differ("/usageSummary", &found, &wanted, &mut out);
        out.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            out,
            vec![
                ("/usageSummary/extra".to_owned(), Some(json!(true)), None),
                (
                    "/usageSummary/source".to_owned(),
                    None,
                    Some(json!("complete"))
                ),
                (
                    "/usageSummary/totals/a~1b/1".to_owned(),
                    Some(json!(2)),
                    Some(json!(3))
                ),
                (
                    "/usageSummary/totals/inputTokens".to_owned(),
                    Some(json!(1)),
                    Some(json!(197))
                ),
            ]
        );
        // Arrays of another length differ once, at the array.
        let mut out = Vec::new();
        differ("/w", &json!([1]), &json!([1, 2]), &mut out);
        assert_eq!(
            out,
            vec![(
                "/w".to_owned(),
                Some(json!("1 entries")),
                Some(json!("2 entries"))
            )]
        );
        assert_eq!(shown_value(None), "none");
        assert_eq!(
            shown_value(Some(&json!("x".repeat(100)))).chars().count(),
            83
        );
    }
}
