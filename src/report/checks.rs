//! The report's verification as the templates show it: for every consensus
//! and difference row, who found its claims, who verified and who disputed
//! them (counted verdicts only), its severity and any dispute of it, each
//! reviewer's latest verdict with its evidence and, when it did not count,
//! why, and the claims' anchors; the matrix of claims × workers; and the
//! claims listed apart as unverifiable or refuted (with the evidence that
//! refuted them). Everything comes from the `verification` block okstra
//! derived (`derive::verification`), joined to the rows through their
//! `sourceItems`: nothing here decides who counts.

use std::collections::HashMap;

use serde::Serialize;

use super::model::Report;
use super::verification::{Review, VerifiedItem};
use crate::anchors::Checked;
use crate::vocab::AnchorStatus;
use crate::vocab::FinalClass;
use crate::vocab::Severity;
use crate::vocab::Verdict;

/// Everything the templates show of the verification.
#[derive(Debug, Serialize)]
pub struct Checks<'a> {
    /// The snapshot the anchors were checked against.
    pub snapshot: Option<&'a str>,
    /// The matrix's columns, in coverage order.
    pub workers: Vec<&'a str>,
    /// One line per claim a consensus or difference row cites.
    pub rows: Vec<MatrixRow<'a>>,
    /// Claims whose anchors do not hold them up.
    pub unverifiable: Vec<Unverifiable<'a>>,
    /// Claims their owner withdrew or a quorum refuted, with the refutation.
    pub refuted: Vec<Refuted<'a>>,
}

/// One claim in the matrix.
#[derive(Debug, Serialize)]
pub struct MatrixRow<'a> {
    /// The report row that cites it (`C-001`, `D-002`).
    pub row_id: &'a str,
    pub item_id: &'a str,
    pub class: Option<&'static str>,
    pub anchor_status: Option<&'static str>,
    pub anchors: Vec<AnchorView<'a>>,
    /// One per column.
    pub cells: Vec<Cell<'a>>,
}

/// One anchor, as written, with what okstra found.
#[derive(Debug, Serialize)]
pub struct AnchorView<'a> {
    /// `src/cart.rs:18-22`.
    pub location: String,
    pub excerpt: Option<&'a str>,
    pub status: &'static str,
    pub found_at: Option<&'a str>,
    pub reason: Option<&'a str>,
}

/// One worker's part in one claim.
#[derive(Debug, Serialize)]
pub struct Cell<'a> {
    pub worker_id: &'a str,
    /// `found` (it reported the claim), `found too` (it reported a claim
    /// reviewers merged with this one), or nothing.
    pub found: Option<&'static str>,
    /// Its latest verdict, `no answer`, or nothing when it was not asked.
    pub verdict: Option<&'static str>,
    /// A closed-set CSS class for the verdict.
    pub verdict_class: &'static str,
    pub evidence: Option<&'a str>,
    pub round: Option<u32>,
    pub counted: bool,
    /// Why a verdict did not count.
    pub uncounted: Option<&'static str>,
}

/// A row's verification in one line of text: who found it, who verified
/// and who disputed it, who said what.
#[derive(Debug, Serialize)]
pub struct RowCheck<'a> {
    /// ``found by `claude`; verified by `codex` ``: the credits in the words
    /// every output uses (`derive::verification::credits_line`).
    pub credits: String,
    pub found_by: Vec<&'a str>,
    /// Counted verdicts that agree.
    pub verified_by: Vec<&'a str>,
    /// Counted verdicts that disagree.
    pub disputed_by: Vec<&'a str>,
    /// The severity its finders gave, when okstra knows one.
    pub severity: Option<&'static str>,
    /// `codex says low`, `kimi says overstated`: counted disputes of it.
    pub severity_disputes: Vec<String>,
    pub verdicts: Vec<VerdictLine<'a>>,
    pub anchors: Vec<AnchorView<'a>>,
}

/// One reviewer's latest answer on one of a row's claims.
#[derive(Debug, Serialize)]
pub struct VerdictLine<'a> {
    pub worker_id: &'a str,
    pub item_id: &'a str,
    pub verdict: &'static str,
    pub verdict_class: &'static str,
    pub evidence: Option<&'a str>,
    pub round: u32,
    pub counted: bool,
    /// Why it did not count.
    pub uncounted: Option<&'static str>,
}

/// A claim listed apart as refuted: its owner withdrew it, or reviewers
/// refuted it with evidence of their own and none verified it.
#[derive(Debug, Serialize)]
pub struct Refuted<'a> {
    pub item_id: &'a str,
    pub text: Option<&'a str>,
    pub withdrawn: bool,
    /// Each counted refutation: who, and its evidence.
    pub refutations: Vec<(&'a str, &'a str)>,
}

/// A claim listed apart: its anchor does not resolve, or it has none.
#[derive(Debug, Serialize)]
pub struct Unverifiable<'a> {
    pub item_id: &'a str,
    pub text: Option<&'a str>,
    pub anchors: Vec<AnchorView<'a>>,
}

fn verdict_text(review: &Review) -> (&'static str, &'static str) {
    match review.verdict {
        Some(Verdict::Agree) => ("AGREE", "agree"),
        Some(Verdict::Disagree) => ("DISAGREE", "disagree"),
        Some(Verdict::Supplement) => ("SUPPLEMENT", "supplement"),
        None => ("no answer", "no-answer"),
    }
}

fn anchors_of(anchors: &[Checked]) -> Vec<AnchorView<'_>> {
    anchors
        .iter()
        .map(|a| AnchorView {
            location: a.location(),
            excerpt: a.excerpt.as_deref(),
            status: a.status.as_str(),
            found_at: a.found_at.as_deref(),
            reason: a.reason.as_deref(),
        })
        .collect()
}

/// Each reviewer's latest review of `item` (reviews are in round order).
fn latest(item: &VerifiedItem) -> Vec<&Review> {
    let mut by_reviewer: Vec<&Review> = Vec::new();
    for review in &item.reviews {
        match by_reviewer
            .iter_mut()
            .find(|r| r.reviewer == review.reviewer)
        {
            Some(seen) if seen.round <= review.round => *seen = review,
            Some(_) => {}
            None => by_reviewer.push(review),
        }
    }
    by_reviewer
}

impl<'a> Checks<'a> {
    /// The verification of `report`, when it carries the block.
    pub fn new(report: &'a Report) -> Option<Checks<'a>> {
        let block = report.verification.as_ref()?;
        let index: HashMap<&str, &VerifiedItem> = block
            .items
            .iter()
            .map(|item| (item.item_id.as_str(), item))
            .collect();
        let cited: Vec<(&str, &VerifiedItem)> = report
            .consensus
            .iter()
            .map(|row| (row.id.as_str(), &row.source_items))
            .chain(
                report
                    .differences
                    .iter()
                    .map(|row| (row.id.as_str(), &row.source_items)),
            )
            .flat_map(|(row_id, sources)| {
                sources
                    .iter()
                    .filter_map(|source| index.get(source.as_str()))
                    .map(move |item| (row_id, *item))
            })
            .collect();
        let mut workers: Vec<&str> = report
            .worker_coverage
            .iter()
            .map(|w| w.worker_id.as_str())
            .filter(|worker| {
                cited.iter().any(|(_, item)| {
                    item.found_by.iter().any(|f| f == worker)
                        || item.reviews.iter().any(|r| r.reviewer == *worker)
                })
            })
            .collect();
        for (_, item) in &cited {
            for worker in item
                .found_by
                .iter()
                .chain(item.reviews.iter().map(|r| &r.reviewer))
            {
                if !workers.contains(&worker.as_str()) {
                    workers.push(worker);
                }
            }
        }
        let rows = cited
            .iter()
            .map(|(row_id, item)| {
                let reviews = latest(item);
                MatrixRow {
                    row_id,
                    item_id: &item.item_id,
                    class: item.final_class.map(FinalClass::as_str),
                    anchor_status: item.anchor_status.map(AnchorStatus::as_str),
                    anchors: anchors_of(&item.anchors),
                    cells: workers
                        .iter()
                        .map(|worker| {
                            let found = if item.owner == *worker {
                                Some("found")
                            } else if item.found_by.iter().any(|f| f == worker) {
                                Some("found too")
                            } else {
                                None
                            };
                            let review = reviews.iter().find(|r| r.reviewer == *worker);
                            let (verdict, verdict_class) = review.map_or((None, ""), |r| {
                                let (text, class) = verdict_text(r);
                                (Some(text), class)
                            });
                            Cell {
                                worker_id: worker,
                                found,
                                verdict,
                                verdict_class,
                                evidence: review.and_then(|r| r.evidence.as_deref()),
                                round: review.map(|r| r.round),
                                counted: review.is_some_and(|r| r.counted),
                                uncounted: review
                                    .and_then(|r| r.uncounted)
                                    .map(crate::vocab::Uncounted::reason),
                            }
                        })
                        .collect(),
                }
            })
            .collect();
        let unverifiable = block
            .items
            .iter()
            .filter(|item| item.final_class == Some(FinalClass::Unverifiable))
            .map(|item| Unverifiable {
                item_id: &item.item_id,
                text: item.text.as_deref(),
                anchors: anchors_of(&item.anchors),
            })
            .collect();
        let refuted = block
            .items
            .iter()
            .filter(|item| item.final_class == Some(FinalClass::Refuted))
            .map(|item| Refuted {
                item_id: &item.item_id,
                text: item.text.as_deref(),
                withdrawn: item.withdrawn,
                refutations: item
                    .reviews
                    .iter()
                    .filter(|r| r.counted && r.verdict == Some(Verdict::Disagree))
                    .filter_map(|r| Some((r.reviewer.as_str(), r.evidence.as_deref()?)))
                    .collect(),
            })
            .collect();
        Some(Checks {
            snapshot: block.snapshot.as_deref(),
            workers,
            rows,
            unverifiable,
            refuted,
        })
    }

    /// The one-line verification of a row citing `sources`.
    pub fn row(report: &'a Report, sources: &'a [String]) -> Option<RowCheck<'a>> {
        let block = report.verification.as_ref()?;
        let items: Vec<&VerifiedItem> = sources
            .iter()
            .filter_map(|source| block.items.iter().find(|item| item.item_id == *source))
            .collect();
        if items.is_empty() {
            return None;
        }
        let credits = crate::derive::verification::row(&items, sources);
        let severity_disputes = credits
            .severity_disputes
            .iter()
            .map(|d| d.shown())
            .collect();
        let verdicts = items
            .iter()
            .flat_map(|item| {
                latest(item).into_iter().map(move |review| {
                    let (verdict, verdict_class) = verdict_text(review);
                    VerdictLine {
                        worker_id: &review.reviewer,
                        item_id: &item.item_id,
                        verdict,
                        verdict_class,
                        evidence: review.evidence.as_deref(),
                        round: review.round,
                        counted: review.counted,
                        uncounted: review.uncounted.map(crate::vocab::Uncounted::reason),
                    }
                })
            })
            .collect();
        // Claims of several workers at the same lines share their anchors:
        // each is shown once.
        let mut anchors: Vec<AnchorView<'a>> = Vec::new();
        for anchor in items.iter().flat_map(|item| anchors_of(&item.anchors)) {
            if !anchors
                .iter()
                .any(|seen| seen.location == anchor.location && seen.status == anchor.status)
            {
                anchors.push(anchor);
            }
        }
        Some(RowCheck {
            credits: crate::derive::verification::credits_line(
                &credits.found_by,
                &credits.verified_by,
                &credits.disputed_by,
                |who| format!("`{who}`"),
            ),
            found_by: credits.found_by,
            verified_by: credits.verified_by,
            disputed_by: credits.disputed_by,
            severity: credits.severity.map(Severity::as_str),
            severity_disputes,
            verdicts,
            anchors,
        })
    }
}
