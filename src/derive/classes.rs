//! A finding's class once convergence is over, whether it is still open,
//! whether its owners withdrew it, and why convergence stopped: the rules,
//! one pure function per question. Nothing here reads a file.
//!
//! A finding is one claim, or claims merged because reviewers said they are
//! the same (`identity`); every claim of a finding gets its class.
//!
//! - A claim whose anchors okstra checked and found wanting (one does not
//!   resolve in the run's snapshot, or it cites none) is `unverifiable`,
//!   whatever its verdicts, and never open: it is not evidence.
//! - Each reviewer's latest verdict on the finding counts when `counting`
//!   says so: not a finder's, not a stand-in's, with evidence of its own.
//! - Open after round R: a counted `DISAGREE` from round R, or an available
//!   reviewer it was sent to in round R gave no answer.
//! - A claim's owner withdraws it by a `DISAGREE` on its own claim in round
//!   ≥ 2 (its latest word on it); a finding is withdrawn when every claim
//!   of it is.
//! - A finding merged from the claims of n owners was found n times, each
//!   on its own (claims are written before any worker sees another's):
//!   each owner after the first is one agreement, found independently,
//!   though never a verifier of it (`counting`: a finder's verdict does not
//!   count). With two analysers, a defect both found is one finding in
//!   `full-consensus`, not two, and not `worker-unique`.
//! - Withdrawn → `refuted`; at least [`REFUTE_QUORUM`] counted `DISAGREE`s
//!   and no agreement → `refuted`; no counted verdict and no second finder
//!   → `worker-unique`; every agreement and no counted `DISAGREE` →
//!   `full-consensus`; agreeing > disagreeing ≥ 1 → `partial-consensus`;
//!   otherwise `contested` (reviewers disagree and neither side was
//!   refuted).

use std::collections::{BTreeMap, BTreeSet};

use crate::converge::ledger::LedgerItem;

use crate::vocab::{FinalClass, StopReason};

use super::counting;
pub use super::identity::is_withdrawn;
use super::identity::{self, Findings};
use crate::vocab::Uncounted;

/// Counted `DISAGREE`s that refute a finding nobody verified: the quorum a
/// finding needs to be checked at all.
pub const REFUTE_QUORUM: u32 = 2;

/// What the rules need to know about the run.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// Every rostered reviewer, available or not.
    pub reviewers: &'a BTreeSet<String>,
    /// The reviewers still able to review.
    pub available: &'a BTreeSet<String>,
    /// The last round recorded (0 before round 1).
    pub round: u32,
}

/// The rules applied to one finding (every claim of it shares it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    pub class: FinalClass,
    pub open: bool,
    /// Every owner withdrew its claim.
    pub withdrawn: bool,
    /// Counted agreeing verdicts of reviewers.
    pub agreeing: u32,
    /// Owners after the first of the finding's claims: found independently.
    pub independent: u32,
    pub disagreeing: u32,
}

/// The ledger's claims judged: their findings, each finding's outcome, and
/// for every verdict whether it counted.
#[derive(Debug, Clone)]
pub struct Judged {
    pub findings: Findings,
    /// One per finding.
    pub outcomes: Vec<Outcome>,
    /// Per claim, per verdict (in the claim's order): counted, or why not.
    pub counted: Vec<Vec<Result<(), Uncounted>>>,
}

impl Judged {
    /// The outcome of claim `index`'s finding.
    pub fn outcome(&self, index: usize) -> Outcome {
        self.outcomes[self.findings.of[index]]
    }
}

/// Judge every claim of `items`.
pub fn judge(items: &[LedgerItem], context: &Context<'_>) -> Judged {
    let findings = identity::of(items);
    let mut counted: Vec<Vec<Result<(), Uncounted>>> = items
        .iter()
        .map(|item| vec![Ok(()); item.verdicts.len()])
        .collect();
    let outcomes = findings
        .members
        .iter()
        .map(|members| finding(items, members, context, &mut counted))
        .collect();
    Judged {
        findings,
        outcomes,
        counted,
    }
}

/// Apply the rules to the finding made of claims `members`, filling in
/// their verdicts' `counted`.
fn finding(
    items: &[LedgerItem],
    members: &[usize],
    context: &Context<'_>,
    counted: &mut [Vec<Result<(), Uncounted>>],
) -> Outcome {
    let finders: BTreeSet<&str> = members.iter().map(|&m| items[m].owner.as_str()).collect();
    // Each reviewer's candidates: (round, passes, claim, verdict).
    let mut by_reviewer: BTreeMap<&str, Vec<(u32, bool, usize, usize)>> = BTreeMap::new();
    for &member in members {
        let claim = &items[member];
        let own = counting::claim_spans(claim);
        for (index, entry) in claim.verdicts.iter().enumerate() {
            let checked = counting::check(entry, claim, &own, &finders, context.reviewers);
            let passes = checked.is_ok();
            counted[member][index] = checked;
            if matches!(checked, Err(Uncounted::Owner | Uncounted::Finder)) {
                continue;
            }
            by_reviewer
                .entry(entry.reviewer.as_str())
                .or_default()
                .push((entry.round, passes, member, index));
        }
    }
    let (mut agreeing, mut disagreeing) = (0_u32, 0_u32);
    let mut disagreed_now = false;
    for candidates in by_reviewer.values() {
        // The latest round; in it, one that counts; then the last written.
        let Some(&(round, passes, member, index)) = candidates.iter().max() else {
            continue;
        };
        for &(_, _, m, i) in candidates {
            if (m, i) != (member, index) {
                counted[m][i] = Err(Uncounted::Superseded);
            }
        }
        if !passes {
            continue;
        }
        if items[member].verdicts[index].verdict.agrees() {
            agreeing += 1;
        } else {
            disagreeing += 1;
            disagreed_now |= round == context.round;
        }
    }
    let withdrawn = members.iter().all(|&m| is_withdrawn(&items[m]));
    let unverifiable = members.iter().any(|&m| items[m].anchoring.fails());
    let unanswered = members.iter().any(|&m| {
        items[m].no_answer.iter().any(|missing| {
            missing.round == context.round && context.available.contains(&missing.reviewer)
        })
    });
    let open = !withdrawn && !unverifiable && context.round >= 1 && (disagreed_now || unanswered);
    let independent = u32::try_from(finders.len().saturating_sub(1)).unwrap_or(u32::MAX);
    let agree = agreeing.saturating_add(independent);
    let class = if unverifiable {
        FinalClass::Unverifiable
    } else if withdrawn || (disagreeing >= REFUTE_QUORUM && agree == 0) {
        FinalClass::Refuted
    } else if agree + disagreeing == 0 {
        FinalClass::WorkerUnique
    } else if disagreeing == 0 {
        FinalClass::FullConsensus
    } else if agree > disagreeing {
        FinalClass::PartialConsensus
    } else {
        FinalClass::Contested
    };
    Outcome {
        class,
        open,
        withdrawn,
        agreeing,
        independent,
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
#[path = "classes_tests.rs"]
mod tests;
