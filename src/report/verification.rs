//! The report's `verification` block: who found and who verified each
//! claim (`derive::verification`, computed from the run's records and never
//! authored), and each `primaryEvidence` row checked against the run's
//! snapshot.
//!
//! [`compute`] assembles it; `okstra coverage` hands it to the report
//! writer, the report's finalize step writes it into data.json, and `okstra
//! validate` checks the one it finds ([`check`]): a hand edit fails on the
//! item it changed. Whatever the block says, a consensus row may not cite
//! an `unverifiable` or `refuted` claim.

use anyhow::{Context as _, Result};
use serde_json::Value;

use crate::anchors;
pub use crate::derive::verification::failed_anchor;
pub use crate::derive::verification::{CheckedEvidence, Review, Verification, VerifiedItem};
use crate::run::{Records, Run};
use crate::vocab::FinalClass;

use super::rules::{LedgerClasses, Problem};

/// The block for the run whose records are `records`; `None` when it has
/// no convergence ledger. With `report` (its data.json, once the writer
/// wrote it), its `primaryEvidence` rows are checked too, against the
/// snapshot the run recorded (none recorded: nothing to check them against).
pub fn compute(records: &Records, report: Option<&Value>) -> Result<Option<Verification>> {
    let Some(mut block) = crate::derive::verification::of(records) else {
        return Ok(None);
    };
    // Against the run's recorded snapshot only: checking evidence never
    // takes one (`okstra validate` writes nothing into a run).
    if let Some(report) = report
        && block.snapshot.is_some()
    {
        block.evidence = evidence(&records.run, report).with_context(|| {
            format!(
                "cannot check the evidence rows of `{}` against the run's snapshot",
                records.run.dir.display()
            )
        })?;
    }
    Ok(Some(block))
}

/// Each `primaryEvidence` row of `report` with an id, its location's
/// anchors checked against the run's snapshot. The row's excerpt belongs to
/// its location when that names one place; a location that names several
/// keeps the excerpts written beside each.
fn evidence(run: &Run, report: &Value) -> Result<Vec<CheckedEvidence>> {
    let rows: Vec<(&str, Vec<anchors::grammar::Anchor>)> = report
        .get("primaryEvidence")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|row| {
            let id = row.get("id").and_then(Value::as_str)?;
            let location = row.get("location").and_then(Value::as_str).unwrap_or("");
            let mut parsed = anchors::grammar::parse(location);
            if let ([only], Some(excerpt)) = (
                parsed.as_mut_slice(),
                row.get("excerpt").and_then(Value::as_str),
            ) && only.excerpt.is_none()
                && !excerpt.trim().is_empty()
            {
                only.excerpt = Some(crate::fsread::clip(
                    excerpt.trim(),
                    anchors::grammar::MAX_PART_BYTES,
                ));
            }
            Some((id, parsed))
        })
        .collect();
    let ids: Vec<&str> = rows.iter().map(|(id, _)| *id).collect();
    let checked =
        anchors::check_anchors(run, rows.into_iter().map(|(_, parsed)| parsed).collect())?;
    Ok(ids
        .into_iter()
        .zip(checked)
        .map(|(id, anchoring)| CheckedEvidence {
            id: id.to_owned(),
            anchor_status: anchoring.anchor_status,
            anchors: anchoring.anchors,
        })
        .collect())
}

/// The `verification` block checks: on a run it equals what okstra computes
/// from the records (one problem per item that differs); and no consensus
/// row cites a claim that is `unverifiable` (by the ledger, else by the
/// block itself), nor claims that class or `refuted`.
pub fn check(
    report: &Value,
    computed: Option<&Result<Option<Verification>, String>>,
    ledger: Option<&LedgerClasses>,
    problems: &mut Vec<Problem>,
) {
    let block = report.get("verification");
    if let Some(block) = block {
        match computed {
            Some(Ok(Some(expected))) => against_records(block, expected, problems),
            Some(Ok(None)) => problems.push(Problem::new(
                "verification",
                "/verification",
                "the run has no convergence ledger, so there is nothing to verify; okstra \
                 writes this block, never edit it"
                    .to_owned(),
            )),
            Some(Err(reason)) => problems.push(Problem::new(
                "verification",
                "/verification",
                format!("`verification` cannot be checked against the run's records: {reason}"),
            )),
            None => {}
        }
    }
    // Which cited claims are unverifiable, and why.
    let from_block: Option<Verification> =
        block.and_then(|block| serde_json::from_value(block.clone()).ok());
    let unverifiable = |item: &str| -> Option<String> {
        if let Some(ledger) = ledger {
            return (ledger.classes.get(item).copied().flatten() == Some(FinalClass::Unverifiable))
                .then(|| {
                    ledger
                        .failed
                        .get(item)
                        .cloned()
                        .unwrap_or_else(|| failed_anchor(&[]))
                });
        }
        let found = from_block
            .as_ref()?
            .items
            .iter()
            .find(|v| v.item_id == item)?;
        (found.final_class == Some(FinalClass::Unverifiable)).then(|| failed_anchor(&found.anchors))
    };
    let rows = report.get("consensus").and_then(Value::as_array);
    for (index, row) in rows.into_iter().flatten().enumerate() {
        match row.get("convergence").and_then(Value::as_str) {
            Some(class) if class == FinalClass::Unverifiable.as_str() => {
                problems.push(Problem::new(
                    "anchors",
                    format!("/consensus/{index}/convergence"),
                    "an `unverifiable` claim is not consensus: okstra lists it apart".to_owned(),
                ));
            }
            Some(class) if class == FinalClass::Refuted.as_str() => {
                problems.push(Problem::new(
                    "convergence",
                    format!("/consensus/{index}/convergence"),
                    "a `refuted` claim is not consensus: okstra lists it apart with its refutation"
                        .to_owned(),
                ));
            }
            _ => {}
        }
        let sources = row.get("sourceItems").and_then(Value::as_array);
        for (position, source) in sources.into_iter().flatten().enumerate() {
            let Some(item) = source.as_str() else {
                continue;
            };
            if let Some(why) = unverifiable(item) {
                problems.push(Problem::new(
                    "anchors",
                    format!("/consensus/{index}/sourceItems/{position}"),
                    format!(
                        "`{item}` is `unverifiable` ({why}); an unverifiable claim is listed \
                         apart, never cited as consensus"
                    ),
                ));
            }
        }
    }
}

/// One problem per part of the block that differs from the records.
fn against_records(block: &Value, expected: &Verification, problems: &mut Vec<Problem>) {
    let Ok(wanted) = serde_json::to_value(expected) else {
        return;
    };
    if block.get("snapshot") != wanted.get("snapshot") {
        problems.push(Problem::new(
            "verification",
            "/verification/snapshot",
            format!(
                "`verification.snapshot` is not the run's snapshot ({}); okstra writes this \
                 block, never edit it",
                wanted
                    .get("snapshot")
                    .and_then(Value::as_str)
                    .map_or_else(|| "none recorded".to_owned(), |s| format!("`{s}`"))
            ),
        ));
    }
    if block.get("evidence") != wanted.get("evidence") {
        problems.push(Problem::new(
            "verification",
            "/verification/evidence",
            "`verification.evidence` is not what okstra finds at the `primaryEvidence` rows' \
             locations in the run's snapshot; okstra writes this block, never edit it"
                .to_owned(),
        ));
    }
    let found = block.get("items").and_then(Value::as_array);
    let wanted_items = wanted.get("items").and_then(Value::as_array);
    let (Some(found), Some(wanted_items)) = (found, wanted_items) else {
        problems.push(Problem::new(
            "verification",
            "/verification/items",
            "`verification.items` is not the list okstra computes".to_owned(),
        ));
        return;
    };
    if found.len() != wanted_items.len() {
        problems.push(Problem::new(
            "verification",
            "/verification/items",
            format!(
                "`verification.items` lists {} claims but the convergence ledger has {}; okstra \
                 writes this block, never edit it",
                found.len(),
                wanted_items.len()
            ),
        ));
        return;
    }
    for (index, (found, wanted)) in found.iter().zip(wanted_items).enumerate() {
        if found != wanted {
            let id = wanted.get("itemId").and_then(Value::as_str).unwrap_or("?");
            problems.push(Problem::new(
                "verification",
                format!("/verification/items/{index}"),
                format!(
                    "the verification of `{id}` is not what okstra computes from the run's \
                     records; okstra writes this block, never edit it"
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn report(rows: &Value, block: Option<Value>) -> Value {
        let mut report = serde_json::json!({ "consensus": rows });
        if let Some(block) = block {
            report["verification"] = block;
        }
        report
    }

    #[test]
    fn a_consensus_row_never_cites_an_unverifiable_claim() {
        let rows = serde_json::json!([
            {"convergence": "full-consensus", "sourceItems": ["claude:F-1", "codex:F-9"]},
            {"convergence": "unverifiable", "sourceItems": ["codex:F-2"]},
        ]);
        let ledger = LedgerClasses {
            shown: "state/convergence-ledger.json".to_owned(),
            classes: HashMap::from([
                ("claude:F-1".to_owned(), Some(FinalClass::FullConsensus)),
                ("codex:F-9".to_owned(), Some(FinalClass::Unverifiable)),
            ]),
            failed: HashMap::from([(
                "codex:F-9".to_owned(),
                "its anchor `a.py:88` does not resolve: line 88 is past the end".to_owned(),
            )]),
            finding: HashMap::new(),
        };
        let mut problems = Vec::new();
        check(&report(&rows, None), None, Some(&ledger), &mut problems);
        let found: Vec<(&str, &str)> = problems
            .iter()
            .map(|p| (p.rule, p.pointer.as_str()))
            .collect();
        assert_eq!(
            found,
            [
                ("anchors", "/consensus/0/sourceItems/1"),
                ("anchors", "/consensus/1/convergence")
            ]
        );
        assert!(problems[0].message.contains("`a.py:88` does not resolve"));
        // Without a ledger, the block's own classes decide.
        let block = serde_json::json!({"items": [{
            "itemId": "codex:F-9", "owner": "codex", "foundBy": ["codex"], "reviews": [],
            "finalClass": "unverifiable"
        }]});
        let mut problems = Vec::new();
        check(&report(&rows, Some(block)), None, None, &mut problems);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].message.contains("it cites no anchor"));
    }
}
