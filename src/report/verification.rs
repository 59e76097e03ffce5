//! Who found and who verified each claim: the final report's
//! `verification` block (schema 2.1, optional), computed by okstra from the
//! convergence ledger and never authored.
//!
//! For every claim of the ledger: its owner and the workers whose claims at
//! overlapping lines corroborate it (`foundBy`), its anchors as okstra
//! checked them, its final class, and every review round by round — the
//! verdict, its evidence, the evidence's anchor status, whether the
//! classification counted it — or why a reviewer gave no answer. The report
//! views join it to the consensus and difference rows through their
//! `sourceItems`, and list the `unverifiable` claims apart.
//!
//! [`compute`] reads the run's records; `okstra coverage` hands the block to
//! the report writer, [`super::finalize`] writes it into data.json, and
//! `okstra validate` recomputes it ([`check`]): a hand edit fails on the
//! item it changed. Whatever the block says, a consensus row may not cite
//! an `unverifiable` claim.

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::anchors::{self, Checked};
use crate::converge::ledger::{LedgerItem, Verdict};
use crate::converge::{FinalClass, Ledger, classify};
use crate::derive::reviewers;
use crate::run::{Records, Run};

use super::rules::{LedgerClasses, Problem};

/// The report's `verification` block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Verification {
    /// The snapshot the anchors were checked against, when one was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
    pub items: Vec<VerifiedItem>,
    /// Each `primaryEvidence` row's location and excerpt as okstra checked
    /// them, in the rows' order; empty before the report writer wrote any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<CheckedEvidence>,
}

/// One `primaryEvidence` row of the report, checked: the writer quotes the
/// code, okstra says whether the snapshot holds it there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CheckedEvidence {
    pub id: String,
    /// `none` for a location that names no line of the project (a log, a
    /// reproduction).
    pub anchor_status: anchors::Status,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anchors: Vec<Checked>,
}

/// One claim: who found it, its anchors, who reviewed it and how.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VerifiedItem {
    pub item_id: String,
    pub owner: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_class: Option<FinalClass>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor_status: Option<anchors::Status>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anchors: Vec<Checked>,
    /// The owner, then the owners of the claims that corroborate it.
    pub found_by: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub corroborated_by: Vec<String>,
    pub reviews: Vec<Review>,
}

/// One reviewer's answer in one round, or why it gave none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Review {
    pub reviewer: String,
    pub round: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor_status: Option<anchors::Status>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_as: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_answer: Option<String>,
    pub counted: bool,
}

/// The block for the run whose records are `records`; `None` when it has
/// no convergence ledger. With `report` (its data.json, once the writer
/// wrote it), its `primaryEvidence` rows are checked too, against the
/// snapshot the run recorded (none recorded: nothing to check them against).
pub fn compute(records: &Records, report: Option<&Value>) -> Result<Option<Verification>> {
    let Some(ledger) = &records.ledger else {
        return Ok(None);
    };
    let mut block = of(records, ledger);
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

/// The block for `ledger` of the run whose records are `records`.
pub fn of(records: &Records, ledger: &Ledger) -> Verification {
    let reviewers = reviewers::of(records);
    let rostered = reviewers::rostered(&reviewers);
    let available = reviewers::available(&reviewers, &records.state, Some(ledger));
    let context = classify::Context {
        analysers: &rostered,
        available: &available,
        adversarial: records.run.convergence.adversarial,
        round: ledger.rounds_run,
    };
    let roster: Vec<&str> = records
        .run
        .assignments
        .iter()
        .map(|a| a.worker_id.as_str())
        .collect();
    Verification {
        snapshot: records.snapshot.as_ref().map(anchors::snapshot::Record::id),
        items: ledger
            .items
            .iter()
            .map(|item| verified(item, &context, &roster))
            .collect(),
        evidence: Vec::new(),
    }
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

fn verified(item: &LedgerItem, context: &classify::Context<'_>, roster: &[&str]) -> VerifiedItem {
    let mut found_by = vec![item.owner.clone()];
    let mut others: Vec<String> = item
        .grouping
        .corroborated_by
        .iter()
        .filter_map(|id| id.split_once(':').map(|(owner, _)| owner.to_owned()))
        .filter(|owner| *owner != item.owner)
        .collect();
    others.sort_by_key(|owner| roster.iter().position(|r| r == owner));
    others.dedup();
    found_by.extend(others);
    let counted = classify::counted(item, context);
    let mut reviews: Vec<Review> = item
        .verdicts
        .iter()
        .zip(counted)
        .map(|(entry, counted)| Review {
            reviewer: entry.reviewer.clone(),
            round: entry.round,
            verdict: Some(entry.verdict),
            evidence: Some(entry.evidence.clone()),
            addition: entry.addition.clone(),
            anchor_status: entry.anchoring.anchor_status,
            same_as: entry.same_as.clone(),
            no_answer: None,
            counted,
        })
        .collect();
    reviews.extend(item.no_answer.iter().map(|missing| Review {
        reviewer: missing.reviewer.clone(),
        round: missing.round,
        verdict: None,
        evidence: None,
        addition: None,
        anchor_status: None,
        same_as: None,
        no_answer: Some(missing.reason.clone()),
        counted: false,
    }));
    // Round by round, then in roster order: the same records, the same block.
    reviews.sort_by_key(|review| {
        (
            review.round,
            roster.iter().position(|r| *r == review.reviewer),
        )
    });
    VerifiedItem {
        item_id: item.item_id.clone(),
        owner: item.owner.clone(),
        section: item.section.clone(),
        text: item.text.clone(),
        final_class: item.final_class,
        anchor_status: item.anchoring.anchor_status,
        anchors: item.anchoring.anchors.clone(),
        found_by,
        corroborated_by: item.grouping.corroborated_by.clone(),
        reviews,
    }
}

/// Why a claim is unverifiable, in one phrase: its first failed anchor, or
/// that it has none.
pub fn failed_anchor(anchors: &[Checked]) -> String {
    anchors
        .iter()
        .find(|a| a.status == anchors::Status::Unanchored)
        .map_or_else(
            || "it cites no anchor".to_owned(),
            |a| {
                format!(
                    "its anchor `{}` does not resolve: {}",
                    a.location(),
                    a.reason.as_deref().unwrap_or("not found")
                )
            },
        )
}

/// The `verification` block checks: on a run it equals what okstra computes
/// from the records (one problem per item that differs); and no consensus
/// row cites a claim that is `unverifiable` (by the ledger, else by the
/// block itself), nor claims that class.
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
        if row.get("convergence").and_then(Value::as_str) == Some(FinalClass::Unverifiable.as_str())
        {
            problems.push(Problem::new(
                "anchors",
                format!("/consensus/{index}/convergence"),
                "an `unverifiable` claim is not consensus: okstra lists it apart".to_owned(),
            ));
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
