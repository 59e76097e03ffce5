//! The convergence rules, as one pure function per question: is an item
//! still open, what is its final class, and why did convergence stop.
//! Nothing here reads a file; the rules are the ones the convergence
//! document states, word for word:
//!
//! - A claim whose anchors okstra checked and found wanting (one does not
//!   resolve in the run's snapshot, or it cites none) is `unverifiable`,
//!   whatever its verdicts, and never open: it is not evidence, and no
//!   round can make it so.
//! - Count each non-owner reviewer's latest verdict. In adversarial mode an
//!   `AGREE` or `SUPPLEMENT` whose evidence cites nothing checkable (no
//!   `path:line`, command or quoted output) is not counted, nor a verdict
//!   whose own anchors do not resolve. A verdict from a substitute, or from
//!   a worker that is not a rostered analyser, never is.
//! - Open after round R: a counted `DISAGREE` from round R, or an available
//!   reviewer it was sent to in round R gave no answer.
//! - The owner's `DISAGREE` in round ≥ 2 withdraws the item; the owner's
//!   `AGREE`/`SUPPLEMENT` never counts as a vote.
//! - No counted verdict → `worker-unique`; every counted verdict agrees →
//!   `full-consensus`; agreeing > disagreeing ≥ 1 → `partial-consensus`;
//!   disagreeing ≥ agreeing, or withdrawn → `contested`.

use std::collections::{BTreeMap, BTreeSet};

use crate::anchors;
use crate::items;

use super::ledger::{FinalClass, LedgerItem, StopReason, Verdict, VerdictEntry};

/// What the rules need to know about the run.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// Every rostered analyser (or verifier), available or not.
    pub analysers: &'a BTreeSet<String>,
    /// The analysers still able to review.
    pub available: &'a BTreeSet<String>,
    pub adversarial: bool,
    /// The last round recorded (0 before round 1).
    pub round: u32,
}

/// The rules applied to one item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    pub class: FinalClass,
    pub open: bool,
    pub withdrawn: bool,
    pub agreeing: u32,
    pub disagreeing: u32,
}

/// Whether `entry` is a vote that counts for an item owned by `owner`.
pub fn counts(entry: &VerdictEntry, owner: &str, context: &Context<'_>) -> bool {
    entry.reviewer != owner
        && !entry.substitute
        && context.analysers.contains(&entry.reviewer)
        && !(context.adversarial && entry.verdict.agrees() && !items::is_checkable(&entry.evidence))
        && !(context.adversarial
            && entry.anchoring.anchor_status == Some(anchors::Status::Unanchored))
}

/// For each of `item`'s verdicts, whether the rules count it: the latest
/// verdict of a reviewer other than the owner (a later entry of the same
/// round replaces an earlier one) that [`counts`].
pub fn counted(item: &LedgerItem, context: &Context<'_>) -> Vec<bool> {
    let mut latest: BTreeMap<&str, usize> = BTreeMap::new();
    for (index, entry) in item.verdicts.iter().enumerate() {
        if entry.reviewer == item.owner {
            continue;
        }
        match latest.get(entry.reviewer.as_str()) {
            Some(&seen) if item.verdicts[seen].round > entry.round => {}
            _ => {
                latest.insert(&entry.reviewer, index);
            }
        }
    }
    let mut flags = vec![false; item.verdicts.len()];
    for index in latest.into_values() {
        flags[index] = counts(&item.verdicts[index], &item.owner, context);
    }
    flags
}

/// Apply the rules to one item.
pub fn item(item: &LedgerItem, context: &Context<'_>) -> Outcome {
    let counted: Vec<&VerdictEntry> = item
        .verdicts
        .iter()
        .zip(counted(item, context))
        .filter_map(|(entry, counts)| counts.then_some(entry))
        .collect();
    let agreeing =
        u32::try_from(counted.iter().filter(|v| v.verdict.agrees()).count()).unwrap_or(u32::MAX);
    let disagreeing = u32::try_from(counted.len()).unwrap_or(u32::MAX) - agreeing;
    let withdrawn = item
        .verdicts
        .iter()
        .any(|v| v.reviewer == item.owner && v.round >= 2 && v.verdict == Verdict::Disagree);
    let unverifiable = item.anchoring.fails();
    let open = !withdrawn
        && !unverifiable
        && context.round >= 1
        && (counted
            .iter()
            .any(|v| v.round == context.round && v.verdict == Verdict::Disagree)
            || item.no_answer.iter().any(|missing| {
                missing.round == context.round && context.available.contains(&missing.reviewer)
            }));
    let class = if unverifiable {
        FinalClass::Unverifiable
    } else if withdrawn {
        FinalClass::Contested
    } else if agreeing + disagreeing == 0 {
        FinalClass::WorkerUnique
    } else if disagreeing == 0 {
        FinalClass::FullConsensus
    } else if agreeing > disagreeing {
        FinalClass::PartialConsensus
    } else {
        FinalClass::Contested
    };
    Outcome {
        class,
        open,
        withdrawn,
        agreeing,
        disagreeing,
    }
}

/// Why convergence stops after `rounds_run` rounds, or `None` when another
/// round is due.
pub fn stop(
    rostered: usize,
    available: usize,
    rounds_run: u32,
    max_rounds: u32,
    open: usize,
) -> Option<StopReason> {
    if rostered < 2 {
        Some(StopReason::SingleWorker)
    } else if rounds_run == 0 {
        (available < 2).then_some(StopReason::Quorum)
    } else if open == 0 {
        Some(StopReason::NoOpenItems)
    } else if rounds_run >= max_rounds {
        Some(StopReason::MaxRounds)
    } else if available < 2 {
        Some(StopReason::Quorum)
    } else {
        None
    }
}

#[cfg(test)]
#[path = "classify_tests.rs"]
mod tests;
