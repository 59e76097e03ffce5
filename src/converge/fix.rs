//! The implementation fix cycle's request: which defects the verifiers
//! found go back to the Executor, written as `state/fix-request.md`.
//!
//! A defect is an item of a verifier's `Defects` section whose row names the
//! severity `blocking` or `major`. With convergence, only the defects the
//! reviewers confirmed (`full-consensus`, `partial-consensus`) go back; with
//! one verifier there is no convergence and every such defect goes back.
//! Withdrawn items never do, nor unverifiable ones (their anchor does not
//! resolve in the code: there is nothing the Executor could fix there).

use std::fmt::Write as _;

use super::ledger::{Ledger, LedgerItem};

use crate::vocab::FinalClass;

/// Severities that earn a fix pass.
const FIXED_SEVERITIES: [&str; 2] = ["blocking", "major"];

/// The defects to fix, in ledger order.
pub fn defects(ledger: &Ledger, convergence: bool) -> Vec<&LedgerItem> {
    ledger
        .items
        .iter()
        .filter(|item| {
            !item.withdrawn
                && item.final_class != Some(FinalClass::Unverifiable)
                && is_defect(item)
                && severe(item)
        })
        .filter(|item| {
            !convergence
                || matches!(
                    item.final_class,
                    Some(FinalClass::FullConsensus | FinalClass::PartialConsensus)
                )
        })
        .collect()
}

/// Whether the item sits in a `Defects` section (`## 3. Defects`).
fn is_defect(item: &LedgerItem) -> bool {
    item.section
        .as_deref()
        .is_some_and(|section| section.to_ascii_lowercase().contains("defect"))
}

/// Whether one of the item's table cells is a severity that earns a fix.
fn severe(item: &LedgerItem) -> bool {
    item.text.as_deref().is_some_and(|text| {
        text.split('|').any(|cell| {
            let cell = cell
                .trim()
                .trim_matches(|c| c == '`' || c == '*')
                .to_ascii_lowercase();
            FIXED_SEVERITIES.contains(&cell.as_str())
        })
    })
}

/// `state/fix-request.md`: one section per defect with its id, class, row
/// and evidence, as the lead contract asks the lead to write it.
pub fn request(defects: &[&LedgerItem]) -> String {
    let mut text = String::from(
        "# Fix request\n\nThe verifiers' `blocking` and `major` defects to fix, one section \
         each: its id and class, then its row as the verifier wrote it \
         (`Defect | Location | Severity | Evidence`).\n",
    );
    for item in defects {
        let class = item.final_class.map_or("unclassified", FinalClass::as_str);
        let _ = write!(
            text,
            "\n## {} ({class})\n\n{}\n",
            item.item_id,
            item.text.as_deref().unwrap_or("").trim()
        );
        let mut cited: Vec<&str> = Vec::new();
        for evidence in &item.evidence {
            if !cited.contains(&evidence.text.as_str()) {
                cited.push(&evidence.text);
                let _ = writeln!(text, "- evidence: {}", evidence.text);
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str, section: &str, text: &str, class: Option<FinalClass>) -> LedgerItem {
        serde_json::from_value(serde_json::json!({
            "itemId": id,
            "owner": id.split(':').next().unwrap(),
            "section": section,
            "text": text,
            "verdicts": [],
            "finalClass": class.map(FinalClass::as_str),
        }))
        .unwrap()
    }

    fn ledger(items: Vec<LedgerItem>) -> Ledger {
        Ledger {
            items,
            ..Ledger::default()
        }
    }

    #[test]
    fn confirmed_blocking_and_major_defects_go_back_and_nothing_else() {
        let ledger = ledger(vec![
            item(
                "codex:D-001",
                "3. Defects",
                "null cart | src/a.rs:1 | major | seen",
                Some(FinalClass::FullConsensus),
            ),
            item(
                "codex:D-002",
                "3. Defects",
                "typo | src/a.rs:2 | minor | seen",
                Some(FinalClass::FullConsensus),
            ),
            item(
                "codex:D-003",
                "3. Defects",
                "race | src/a.rs:3 | `blocking` | seen",
                Some(FinalClass::PartialConsensus),
            ),
            item(
                "codex:D-004",
                "3. Defects",
                "leak | src/a.rs:4 | major | seen",
                Some(FinalClass::Contested),
            ),
            item(
                "codex:C-001",
                "4. Checks run",
                "cargo test | major",
                Some(FinalClass::FullConsensus),
            ),
            item(
                "codex:D-005",
                "3. Defects",
                "phantom | src/a.rs:99 | blocking | seen",
                Some(FinalClass::Unverifiable),
            ),
        ]);
        let ids: Vec<&str> = defects(&ledger, true)
            .iter()
            .map(|i| i.item_id.as_str())
            .collect();
        assert_eq!(ids, ["codex:D-001", "codex:D-003"]);
        let ids: Vec<&str> = defects(&ledger, false)
            .iter()
            .map(|i| i.item_id.as_str())
            .collect();
        assert_eq!(
            ids,
            ["codex:D-001", "codex:D-003", "codex:D-004"],
            "one verifier: no consensus needed, but an anchor that resolves"
        );
        let text = request(&defects(&ledger, true));
        assert!(
            text.contains(
                "## codex:D-001 (full-consensus)\n\nnull cart | src/a.rs:1 | major | seen"
            )
        );
        assert!(!text.contains("D-002") && !text.contains("D-004"));
    }
}
