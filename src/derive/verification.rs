//! Who found and who verified each claim: the final report's `verification`
//! block (schema 2.2), derived from the convergence ledger and never
//! authored.
//!
//! For every claim of the ledger: its owner; the other claims of its
//! finding (`mergedWith`, `identity`) and so who found it (`foundBy`: the
//! owners of those claims, nobody else); its anchors as okstra checked
//! them; its finding's class, and whether its owner withdrew it; who
//! verified the finding (`agreedBy`) and who disputed it (`disagreedBy`) —
//! counted verdicts only (`counting`), each reviewer's latest, nobody in
//! both; its finding's severity and the counted reviewers who say it is
//! overstated (`severity`); and every review round by round, each verdict
//! saying whether it counted and, when not, why (`uncounted`), or why a
//! reviewer gave no answer.
//!
//! The report's views, SARIF, the pull-request review, the gate and `okstra
//! run`'s closing summary all read this block (or, for a report without
//! one, the same derivation from the run's records); `okstra validate`
//! checks a report's block against it.

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use crate::anchors::{self, Checked};
use crate::converge::ledger::{Ledger, LedgerItem};
use crate::run::Records;
use crate::vocab::Severity;
use crate::vocab::{FinalClass, Verdict};

use super::classes::{self, Judged};

use super::reviewers;
use super::severity::{self as finding_severity, Dispute};
use crate::vocab::Uncounted;

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
    pub anchor_status: crate::vocab::AnchorStatus,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anchors: Vec<Checked>,
}

/// One claim: who found it, its anchors, who verified it and how.
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
    /// Its owner withdrew it (its finding is then `refuted`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub withdrawn: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor_status: Option<crate::vocab::AnchorStatus>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anchors: Vec<Checked>,
    /// The owners of the claims of its finding: its own first, then in
    /// roster order.
    pub found_by: Vec<String>,
    /// The other claims of its finding.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_with: Vec<String>,
    /// The reviewers whose counted verdict on the finding agrees, in roster
    /// order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agreed_by: Vec<String>,
    /// The reviewers whose counted verdict on the finding disagrees.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disagreed_by: Vec<String>,
    /// The finding's severity: the highest its finders gave (absent when
    /// none did, or it is refuted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<Severity>,
    /// Counted reviewers who say that severity is overstated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub severity_disputes: Vec<Dispute>,
    /// Written by okstra before findings were merged only on reviewers'
    /// word (schema 2.1); never written now.
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
    pub anchor_status: Option<crate::vocab::AnchorStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_as: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_answer: Option<String>,
    pub counted: bool,
    /// Why a verdict was not counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncounted: Option<Uncounted>,
}

/// The ledger's claims as the rules judge them for the run whose records
/// are `records`; `None` without a ledger.
pub fn judged(records: &Records) -> Option<(&Ledger, Judged)> {
    let ledger = records.ledger.as_ref()?;
    let ruling = reviewers::judge(&reviewers::of(records), &records.state, ledger);
    Some((ledger, ruling.judged))
}

/// Each claim's severity as its owner wrote it, by item id.
pub fn claim_severities(records: &Records) -> HashMap<String, Severity> {
    records
        .results
        .own
        .iter()
        .flat_map(|(worker, own)| {
            own.severities
                .iter()
                .map(move |(id, severity)| (format!("{worker}:{id}"), *severity))
        })
        .collect()
}

/// The block's claims for the run whose records are `records` (no evidence
/// rows: they are the report's); `None` without a ledger.
pub fn of(records: &Records) -> Option<Verification> {
    let (ledger, judged) = judged(records)?;
    let roster: Vec<&str> = records
        .run
        .assignments
        .iter()
        .map(|a| a.worker_id.as_str())
        .collect();
    Some(Verification {
        snapshot: records.snapshot.as_ref().map(anchors::snapshot::Record::id),
        items: items(&ledger.items, &judged, &roster, &claim_severities(records)),
        evidence: Vec::new(),
    })
}

/// What one finding's claims share in the block.
struct FindingCredits {
    severity: Option<Severity>,
    disputes: Vec<Dispute>,
    agreed_by: Vec<String>,
    disagreed_by: Vec<String>,
}

/// Every claim of `items` as the block shows it, given how the rules
/// judged them, the roster's order and each claim's severity.
pub fn items(
    items: &[LedgerItem],
    judged: &Judged,
    roster: &[&str],
    severities: &HashMap<String, Severity>,
) -> Vec<VerifiedItem> {
    let order = |worker: &str| roster.iter().position(|r| *r == worker);
    let findings: Vec<FindingCredits> = judged
        .findings
        .members
        .iter()
        .zip(&judged.outcomes)
        .map(|(members, outcome)| {
            let (severity, disputes) = finding_severity::of_finding(
                items,
                members,
                outcome.class,
                severities,
                &judged.counted,
            );
            let (mut agreed, mut disagreed) = (BTreeSet::new(), BTreeSet::new());
            for &member in members {
                for (entry, counts) in items[member].verdicts.iter().zip(&judged.counted[member]) {
                    if counts.is_ok() {
                        if entry.verdict.agrees() {
                            agreed.insert(entry.reviewer.as_str());
                        } else {
                            disagreed.insert(entry.reviewer.as_str());
                        }
                    }
                }
            }
            let sorted = |set: BTreeSet<&str>| {
                let mut list: Vec<String> = set.into_iter().map(str::to_owned).collect();
                list.sort_by_key(|worker| order(worker));
                list
            };
            FindingCredits {
                severity,
                disputes,
                agreed_by: sorted(agreed),
                disagreed_by: sorted(disagreed),
            }
        })
        .collect();
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let members = judged.findings.with(index);
            let credits = &findings[judged.findings.of[index]];
            let mut others: Vec<String> = members
                .iter()
                .map(|&m| items[m].owner.clone())
                .filter(|owner| *owner != item.owner)
                .collect();
            others.sort_by_key(|owner| order(owner));
            others.dedup();
            let mut found_by = vec![item.owner.clone()];
            found_by.extend(others);
            let mut reviews: Vec<Review> = item
                .verdicts
                .iter()
                .zip(&judged.counted[index])
                .map(|(entry, counts)| Review {
                    reviewer: entry.reviewer.clone(),
                    round: entry.round,
                    verdict: Some(entry.verdict),
                    evidence: Some(entry.evidence.clone()),
                    addition: entry.addition.clone(),
                    anchor_status: entry.anchoring.anchor_status,
                    same_as: entry.same_as.clone(),
                    no_answer: None,
                    counted: counts.is_ok(),
                    uncounted: counts.err(),
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
                uncounted: None,
            }));
            // Round by round, then in roster order: the same records, the
            // same block.
            reviews.sort_by_key(|review| (review.round, order(&review.reviewer)));
            VerifiedItem {
                item_id: item.item_id.clone(),
                owner: item.owner.clone(),
                section: item.section.clone(),
                text: item.text.clone(),
                final_class: Some(judged.outcome(index).class),
                withdrawn: classes::is_withdrawn(item),
                anchor_status: item.anchoring.anchor_status,
                anchors: item.anchoring.anchors.clone(),
                found_by,
                merged_with: members
                    .iter()
                    .filter(|&&m| m != index)
                    .map(|&m| items[m].item_id.clone())
                    .collect(),
                agreed_by: credits.agreed_by.clone(),
                disagreed_by: credits.disagreed_by.clone(),
                severity: credits.severity,
                severity_disputes: credits.disputes.clone(),
                corroborated_by: Vec::new(),
                reviews,
            }
        })
        .collect()
}

/// What a report row says of who found, verified and disputed it: the rows
/// of the report, SARIF, the pull-request review, the gate and the closing
/// summary all take it from here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowCredits<'a> {
    /// The finders of its claims, then the owners of the other items it
    /// cites (a question, a description).
    pub found_by: Vec<&'a str>,
    /// Reviewers whose counted verdicts on its claims all agree; never a
    /// finder.
    pub verified_by: Vec<&'a str>,
    /// Reviewers whose counted verdicts on its claims all disagree.
    pub disputed_by: Vec<&'a str>,
    /// The highest severity of its findings that are not refuted.
    pub severity: Option<Severity>,
    pub severity_disputes: Vec<&'a Dispute>,
    /// Every claim it cites is refuted (and it cites at least one).
    pub refuted: bool,
}

/// `found by claude; verified by codex; disputed by grok`: who found, who
/// verified and who disputed a finding, in the one wording the report, the
/// closing summary, SARIF and the pull-request review use, each name
/// written by `name` (`` `claude` `` in Markdown). Several finders made the
/// claim each on their own, which is corroboration of its own: that reads
/// `found independently by claude, codex`, never "verified by nobody".
pub fn credits_line<S: AsRef<str>>(
    found_by: &[S],
    verified_by: &[S],
    disputed_by: &[S],
    name: impl Fn(&str) -> String,
) -> String {
    let names = |list: &[S]| {
        if list.is_empty() {
            "nobody".to_owned()
        } else {
            list.iter()
                .map(|who| name(who.as_ref()))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let mut line = if found_by.len() > 1 {
        format!("found independently by {}", names(found_by))
    } else {
        format!("found by {}", names(found_by))
    };
    if !verified_by.is_empty() || found_by.len() <= 1 {
        line.push_str("; verified by ");
        line.push_str(&names(verified_by));
    }
    if !disputed_by.is_empty() {
        line.push_str("; disputed by ");
        line.push_str(&names(disputed_by));
    }
    line
}

/// The credits of a row citing `sources`, of which `claims` are the ones
/// the block holds.
pub fn row<'a>(claims: &[&'a VerifiedItem], sources: &'a [String]) -> RowCredits<'a> {
    fn union<'a>(lists: impl Iterator<Item = &'a String>) -> Vec<&'a str> {
        let mut names: Vec<&'a str> = Vec::new();
        for name in lists {
            if !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
        names
    }
    let mut found_by = union(claims.iter().flat_map(|item| &item.found_by));
    for source in sources {
        if let Some((owner, _)) = source.split_once(':')
            && !claims.iter().any(|item| item.item_id == *source)
            && !found_by.contains(&owner)
        {
            found_by.push(owner);
        }
    }
    let agreed = union(claims.iter().flat_map(|item| &item.agreed_by));
    let disagreed = union(claims.iter().flat_map(|item| &item.disagreed_by));
    // A row citing several findings names a reviewer under one word only
    // when it said the same of all of them, and never a finder.
    let only = |list: &[&'a str], other: &[&'a str]| -> Vec<&'a str> {
        list.iter()
            .copied()
            .filter(|w| !other.contains(w) && !found_by.contains(w))
            .collect()
    };
    let refuted = !claims.is_empty()
        && claims
            .iter()
            .all(|item| item.final_class == Some(FinalClass::Refuted));
    let mut severity_disputes: Vec<&Dispute> = Vec::new();
    for dispute in claims.iter().flat_map(|item| &item.severity_disputes) {
        if !severity_disputes.contains(&dispute) {
            severity_disputes.push(dispute);
        }
    }
    RowCredits {
        verified_by: only(&agreed, &disagreed),
        disputed_by: only(&disagreed, &agreed),
        found_by,
        severity: claims.iter().filter_map(|item| item.severity).max(),
        severity_disputes,
        refuted,
    }
}

/// Why a claim is unverifiable, in one phrase: its first failed anchor, or
/// that it has none.
pub fn failed_anchor(anchors: &[Checked]) -> String {
    anchors
        .iter()
        .find(|a| a.status == crate::vocab::AnchorStatus::Unanchored)
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::converge::ledger::{Anchoring, NoAnswer, VerdictEntry};

    fn verdict(round: u32, reviewer: &str, said: Verdict, evidence: &str) -> VerdictEntry {
        VerdictEntry {
            round,
            reviewer: reviewer.to_owned(),
            verdict: said,
            evidence: evidence.to_owned(),
            addition: None,
            substitute: false,
            anchoring: Anchoring::default(),
            same_as: None,
        }
    }

    fn claim(id: &str, verdicts: Vec<VerdictEntry>) -> LedgerItem {
        LedgerItem {
            item_id: id.to_owned(),
            owner: id.split_once(':').unwrap().0.to_owned(),
            verdicts,
            ..LedgerItem::default()
        }
    }

    /// The block's credits for `items` judged in round `round` with four
    /// reviewers: (found by, agreed by, disagreed by, uncounted reasons).
    fn credits(items: &[LedgerItem], round: u32) -> Vec<(Vec<String>, Vec<String>, Vec<String>)> {
        let reviewers: BTreeSet<String> = ["claude", "codex", "kimi", "grok"]
            .iter()
            .map(|r| (*r).to_owned())
            .collect();
        let context = classes::Context {
            reviewers: &reviewers,
            available: &reviewers,
            round,
        };
        let judged = classes::judge(items, &context);
        let roster = ["claude", "codex", "kimi", "grok"];
        super::items(items, &judged, &roster, &HashMap::new())
            .into_iter()
            .map(|item| (item.found_by, item.agreed_by, item.disagreed_by))
            .collect()
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|n| (*n).to_owned()).collect()
    }

    const OUTPUT: &str = "`grep -n x src` \"3: x\"";

    /// (name, claims, round, per claim (found by, agreed by, disagreed by))
    type Row = (
        &'static str,
        Vec<LedgerItem>,
        u32,
        Vec<(Vec<String>, Vec<String>, Vec<String>)>,
    );

    #[test]
    fn the_credits_table() {
        let mut same = verdict(1, "kimi", Verdict::Agree, OUTPUT);
        same.same_as = Some("claude:F-1".to_owned());
        let rows: Vec<Row> = vec![
            (
                "a claim at the same lines as another is still found by its owner alone",
                vec![
                    claim(
                        "claude:F-1",
                        vec![verdict(1, "codex", Verdict::Disagree, OUTPUT)],
                    ),
                    claim(
                        "codex:1",
                        vec![verdict(1, "claude", Verdict::Disagree, OUTPUT)],
                    ),
                ],
                1,
                vec![
                    (names(&["claude"]), vec![], names(&["codex"])),
                    (names(&["codex"]), vec![], names(&["claude"])),
                ],
            ),
            (
                "claims a reviewer said are the same credit both owners, verified by the reviewer only",
                vec![
                    claim(
                        "claude:F-1",
                        vec![
                            verdict(1, "codex", Verdict::Agree, OUTPUT),
                            verdict(1, "kimi", Verdict::Agree, OUTPUT),
                        ],
                    ),
                    claim(
                        "codex:1",
                        vec![verdict(1, "claude", Verdict::Agree, OUTPUT), same],
                    ),
                ],
                1,
                vec![
                    (names(&["claude", "codex"]), names(&["kimi"]), vec![]),
                    (names(&["codex", "claude"]), names(&["kimi"]), vec![]),
                ],
            ),
            (
                "a reviewer who changed its mind is listed once, by its latest verdict",
                vec![claim(
                    "claude:F-1",
                    vec![
                        verdict(1, "codex", Verdict::Agree, OUTPUT),
                        verdict(2, "codex", Verdict::Disagree, OUTPUT),
                        verdict(1, "kimi", Verdict::Agree, "looks right"),
                    ],
                )],
                2,
                vec![(names(&["claude"]), vec![], names(&["codex"]))],
            ),
            (
                "the owner is never its own verifier",
                vec![claim(
                    "claude:F-1",
                    vec![
                        verdict(2, "claude", Verdict::Agree, OUTPUT),
                        verdict(1, "grok", Verdict::Agree, OUTPUT),
                    ],
                )],
                2,
                vec![(names(&["claude"]), names(&["grok"]), vec![])],
            ),
        ];
        for (name, claims, round, expected) in rows {
            assert_eq!(credits(&claims, round), expected, "{name}");
        }
    }

    #[test]
    fn every_review_says_whether_it_counted_and_why_not() {
        let items = vec![LedgerItem {
            no_answer: vec![NoAnswer {
                round: 1,
                reviewer: "grok".to_owned(),
                reason: "no row".to_owned(),
            }],
            ..claim(
                "claude:F-1",
                vec![
                    verdict(1, "codex", Verdict::Agree, OUTPUT),
                    verdict(1, "kimi", Verdict::Agree, "looks right"),
                ],
            )
        }];
        let reviewers: BTreeSet<String> = ["claude", "codex", "kimi", "grok"]
            .iter()
            .map(|r| (*r).to_owned())
            .collect();
        let context = classes::Context {
            reviewers: &reviewers,
            available: &reviewers,
            round: 1,
        };
        let judged = classes::judge(&items, &context);
        let block = super::items(
            &items,
            &judged,
            &["claude", "codex", "kimi", "grok"],
            &HashMap::new(),
        );
        let reviews: Vec<(&str, bool, Option<Uncounted>)> = block[0]
            .reviews
            .iter()
            .map(|r| (r.reviewer.as_str(), r.counted, r.uncounted))
            .collect();
        assert_eq!(
            reviews,
            [
                ("codex", true, None),
                ("kimi", false, Some(Uncounted::NoEvidence)),
                ("grok", false, None),
            ]
        );
    }
}
