//! The severity floor: a report row is never less severe than the most
//! severe of its source items, so the report writer cannot lower a finding
//! past a gate (`okstra gate --fail-on`).
//!
//! An item's severity is read from its worker's result (`severity`: the
//! cell under its table's `Severity` column, mapped onto the one ladder);
//! the row's is its `severity` field. A row without one is not checked
//! here: the gate and SARIF rank it by its source items anyway.

use std::collections::HashMap;

use serde_json::Value;

use super::rules::{Indexed, Problem, rows};
use crate::vocab::Severity;

/// The tables whose rows carry a severity.
const TABLES: [&str; 2] = ["consensus", "differences"];

/// One `severity` problem per row ranked below one of its source items.
pub fn severities(report: &Value, indexes: &HashMap<String, Indexed>, problems: &mut Vec<Problem>) {
    for table in TABLES {
        for (index, row) in rows(report, table) {
            let Some(claimed) = row
                .get("severity")
                .and_then(Value::as_str)
                .and_then(|word| word.parse::<Severity>().ok())
            else {
                continue;
            };
            let Some((item, floor)) = highest_source(row, indexes) else {
                continue;
            };
            if claimed < floor {
                problems.push(Problem::new(
                    "severity",
                    format!("/{table}/{index}/severity"),
                    format!(
                        "`{claimed}` is below `{floor}`, the severity of source item `{item}`; a \
                         row is at least as severe as its most severe source item"
                    ),
                ));
            }
        }
    }
}

/// The most severe source item of `row`, with its severity (the first one
/// cited wins a tie).
fn highest_source<'a>(
    row: &'a Value,
    indexes: &HashMap<String, Indexed>,
) -> Option<(&'a str, Severity)> {
    let mut highest: Option<(&str, Severity)> = None;
    let cited = row.get("sourceItems").and_then(Value::as_array);
    for entry in cited.into_iter().flatten().filter_map(Value::as_str) {
        let Some((worker, item)) = entry.split_once(':') else {
            continue;
        };
        let Some(Indexed::Items(_, severities)) = indexes.get(worker) else {
            continue;
        };
        if let Some(&severity) = severities.get(item)
            && highest.is_none_or(|(_, best)| severity > best)
        {
            highest = Some((entry, severity));
        }
    }
    highest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_below_its_most_severe_source_is_a_problem() {
        let mut indexes = HashMap::new();
        indexes.insert(
            "codex".to_owned(),
            Indexed::Items(
                HashMap::from([("D-1".to_owned(), 1), ("D-2".to_owned(), 1)]),
                HashMap::from([
                    ("D-1".to_owned(), Severity::Critical),
                    ("D-2".to_owned(), Severity::Low),
                ]),
            ),
        );
        let report = serde_json::json!({
            "consensus": [
                {"severity": "high", "sourceItems": ["codex:D-2", "codex:D-1"]},
                {"severity": "critical", "sourceItems": ["codex:D-1"]},
                {"sourceItems": ["codex:D-1"]},
                {"severity": "info", "sourceItems": ["kimi:X", "codex:D-9"]}
            ],
            "differences": [{"severity": "medium", "sourceItems": ["codex:D-2"]}]
        });
        let mut problems = Vec::new();
        severities(&report, &indexes, &mut problems);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].pointer, "/consensus/0/severity");
        assert_eq!(
            problems[0].message,
            "`high` is below `critical`, the severity of source item `codex:D-1`; a row is at \
             least as severe as its most severe source item"
        );
    }
}
