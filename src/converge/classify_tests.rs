//! The classification table: one row per rule, adversarial off and on.

use std::collections::BTreeSet;

use super::*;
use crate::anchors::Status;
use crate::converge::ledger::{Anchoring, NoAnswer};

const OWNER: &str = "claude";
const CHECKED: &str = "src/cart.rs:88 sums before discounts";
const UNCHECKED: &str = "looks right";

fn verdict(round: u32, reviewer: &str, verdict: Verdict, evidence: &str) -> VerdictEntry {
    VerdictEntry {
        round,
        reviewer: reviewer.to_owned(),
        verdict,
        evidence: evidence.to_owned(),
        addition: None,
        substitute: false,
        anchoring: Anchoring::default(),
        same_as: None,
    }
}

use Verdict::{Agree as A, Disagree as D, Supplement as S};

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

/// One row: verdicts, no-answers, round, available reviewers, then the
/// expected (class, open, withdrawn) with adversarial off and on.
struct Row {
    name: &'static str,
    verdicts: Vec<VerdictEntry>,
    no_answer: Vec<(u32, &'static str)>,
    round: u32,
    available: &'static [&'static str],
    off: (FinalClass, bool),
    on: (FinalClass, bool),
}

#[test]
fn classification_table() {
    use FinalClass::{Contested, FullConsensus, PartialConsensus, WorkerUnique};
    let all: &[&str] = &["claude", "codex", "kimi", "grok"];
    let rows = vec![
        Row {
            name: "no verdict at all",
            verdicts: vec![],
            no_answer: vec![],
            round: 1,
            available: all,
            off: (WorkerUnique, false),
            on: (WorkerUnique, false),
        },
        Row {
            name: "one checked AGREE",
            verdicts: vec![verdict(1, "codex", A, CHECKED)],
            no_answer: vec![],
            round: 1,
            available: all,
            off: (FullConsensus, false),
            on: (FullConsensus, false),
        },
        Row {
            name: "an AGREE citing nothing counts only outside adversarial mode",
            verdicts: vec![verdict(1, "codex", A, UNCHECKED)],
            no_answer: vec![],
            round: 1,
            available: all,
            off: (FullConsensus, false),
            on: (WorkerUnique, false),
        },
        Row {
            name: "a SUPPLEMENT citing nothing counts only outside adversarial mode",
            verdicts: vec![verdict(1, "kimi", S, UNCHECKED)],
            no_answer: vec![],
            round: 1,
            available: all,
            off: (FullConsensus, false),
            on: (WorkerUnique, false),
        },
        Row {
            name: "a SUPPLEMENT citing a command counts",
            verdicts: vec![verdict(1, "codex", S, "`cargo test cart` fails")],
            no_answer: vec![],
            round: 1,
            available: all,
            off: (FullConsensus, false),
            on: (FullConsensus, false),
        },
        Row {
            name: "a DISAGREE citing nothing still counts",
            verdicts: vec![verdict(1, "codex", D, UNCHECKED)],
            no_answer: vec![],
            round: 1,
            available: all,
            off: (Contested, true),
            on: (Contested, true),
        },
        Row {
            name: "a tie goes against the item and keeps it open",
            verdicts: vec![
                verdict(1, "codex", A, CHECKED),
                verdict(1, "kimi", D, CHECKED),
            ],
            no_answer: vec![],
            round: 1,
            available: all,
            off: (Contested, true),
            on: (Contested, true),
        },
        Row {
            name: "more agreeing than disagreeing is partial",
            verdicts: vec![
                verdict(1, "codex", A, CHECKED),
                verdict(1, "grok", S, CHECKED),
                verdict(1, "kimi", D, CHECKED),
            ],
            no_answer: vec![],
            round: 1,
            available: all,
            off: (PartialConsensus, true),
            on: (PartialConsensus, true),
        },
        Row {
            name: "an unchecked AGREE cannot outvote a DISAGREE in adversarial mode",
            verdicts: vec![
                verdict(1, "codex", A, CHECKED),
                verdict(1, "grok", A, UNCHECKED),
                verdict(1, "kimi", D, CHECKED),
            ],
            no_answer: vec![],
            round: 1,
            available: all,
            off: (PartialConsensus, true),
            on: (Contested, true),
        },
        Row {
            name: "only the latest verdict of a reviewer counts",
            verdicts: vec![
                verdict(1, "codex", A, CHECKED),
                verdict(1, "kimi", D, CHECKED),
                verdict(2, "kimi", A, CHECKED),
            ],
            no_answer: vec![],
            round: 2,
            available: all,
            off: (FullConsensus, false),
            on: (FullConsensus, false),
        },
        Row {
            name: "a latest AGREE without evidence drops the reviewer in adversarial mode",
            verdicts: vec![
                verdict(1, "codex", A, CHECKED),
                verdict(1, "kimi", D, CHECKED),
                verdict(2, "kimi", A, UNCHECKED),
            ],
            no_answer: vec![],
            round: 2,
            available: all,
            off: (FullConsensus, false),
            on: (FullConsensus, false),
        },
        Row {
            name: "a DISAGREE from an earlier round counts but no longer opens",
            verdicts: vec![
                verdict(1, "kimi", D, CHECKED),
                verdict(2, "codex", A, CHECKED),
            ],
            no_answer: vec![],
            round: 2,
            available: &["claude", "codex"],
            off: (Contested, false),
            on: (Contested, false),
        },
        Row {
            name: "the owner's DISAGREE in round 2 withdraws the item",
            verdicts: vec![
                verdict(1, "codex", A, CHECKED),
                verdict(1, "kimi", D, CHECKED),
                verdict(2, "codex", A, CHECKED),
                verdict(2, OWNER, D, CHECKED),
            ],
            no_answer: vec![],
            round: 2,
            available: all,
            off: (Contested, false),
            on: (Contested, false),
        },
        Row {
            name: "the owner's DISAGREE in round 1 neither withdraws nor counts",
            verdicts: vec![verdict(1, OWNER, D, CHECKED)],
            no_answer: vec![],
            round: 1,
            available: all,
            off: (WorkerUnique, false),
            on: (WorkerUnique, false),
        },
        Row {
            name: "the owner's AGREE is no vote",
            verdicts: vec![verdict(2, OWNER, A, CHECKED), verdict(2, OWNER, S, CHECKED)],
            no_answer: vec![],
            round: 2,
            available: all,
            off: (WorkerUnique, false),
            on: (WorkerUnique, false),
        },
        Row {
            name: "no answer from an available reviewer keeps the item open",
            verdicts: vec![verdict(1, "codex", A, CHECKED)],
            no_answer: vec![(1, "kimi")],
            round: 1,
            available: all,
            off: (FullConsensus, true),
            on: (FullConsensus, true),
        },
        Row {
            name: "no answer from an unavailable reviewer does not",
            verdicts: vec![verdict(1, "codex", A, CHECKED)],
            no_answer: vec![(1, "kimi")],
            round: 1,
            available: &["claude", "codex"],
            off: (FullConsensus, false),
            on: (FullConsensus, false),
        },
        Row {
            name: "no answer in an earlier round does not",
            verdicts: vec![verdict(2, "codex", A, CHECKED)],
            no_answer: vec![(1, "kimi")],
            round: 2,
            available: all,
            off: (FullConsensus, false),
            on: (FullConsensus, false),
        },
        Row {
            name: "a verdict from a worker off the roster never counts",
            verdicts: vec![verdict(1, "stand-in", D, CHECKED)],
            no_answer: vec![],
            round: 1,
            available: all,
            off: (WorkerUnique, false),
            on: (WorkerUnique, false),
        },
        Row {
            name: "two against two is contested, three against two partial",
            verdicts: vec![
                verdict(1, "codex", A, CHECKED),
                verdict(1, "kimi", A, CHECKED),
                verdict(1, "grok", D, CHECKED),
                verdict(1, "antigravity", D, CHECKED),
            ],
            no_answer: vec![],
            round: 1,
            available: all,
            off: (Contested, true),
            on: (Contested, true),
        },
    ];
    let analysers = set(&["claude", "codex", "kimi", "grok", "antigravity"]);
    for row in rows {
        let item = LedgerItem {
            item_id: format!("{OWNER}:F-001"),
            owner: OWNER.to_owned(),
            verdicts: row.verdicts.clone(),
            no_answer: row
                .no_answer
                .iter()
                .map(|(round, reviewer)| NoAnswer {
                    round: *round,
                    reviewer: (*reviewer).to_owned(),
                    reason: "no row".to_owned(),
                })
                .collect(),
            ..LedgerItem::default()
        };
        let available = set(row.available);
        for (adversarial, expected) in [(false, row.off), (true, row.on)] {
            let context = Context {
                analysers: &analysers,
                available: &available,
                adversarial,
                round: row.round,
            };
            let outcome = super::item(&item, &context);
            assert_eq!(
                (outcome.class, outcome.open),
                expected,
                "{} (adversarial {adversarial})",
                row.name
            );
            assert_eq!(
                outcome.withdrawn,
                row.name.contains("withdraws the item"),
                "{}",
                row.name
            );
        }
    }
}

#[test]
fn three_against_two_is_partial() {
    let analysers = set(&["claude", "a", "b", "c", "d", "e"]);
    let item = LedgerItem {
        owner: OWNER.to_owned(),
        verdicts: vec![
            verdict(1, "a", A, CHECKED),
            verdict(1, "b", A, CHECKED),
            verdict(1, "c", S, CHECKED),
            verdict(1, "d", D, CHECKED),
            verdict(1, "e", D, CHECKED),
        ],
        ..LedgerItem::default()
    };
    let context = Context {
        analysers: &analysers,
        available: &analysers,
        adversarial: true,
        round: 1,
    };
    let outcome = item_outcome(&item, &context);
    assert_eq!(
        (outcome.class, outcome.agreeing, outcome.disagreeing),
        (FinalClass::PartialConsensus, 3, 2)
    );
}

#[test]
fn a_substitute_never_counts() {
    let analysers = set(&["claude", "codex"]);
    let mut entry = verdict(1, "codex", D, CHECKED);
    entry.substitute = true;
    let item = LedgerItem {
        owner: OWNER.to_owned(),
        verdicts: vec![entry],
        ..LedgerItem::default()
    };
    let context = Context {
        analysers: &analysers,
        available: &analysers,
        adversarial: false,
        round: 1,
    };
    let outcome = item_outcome(&item, &context);
    assert_eq!(
        (outcome.class, outcome.open),
        (FinalClass::WorkerUnique, false)
    );
}

fn item_outcome(item: &LedgerItem, context: &Context<'_>) -> Outcome {
    super::item(item, context)
}

#[test]
fn stop_reasons() {
    use StopReason::{MaxRounds, NoOpenItems, Quorum, SingleWorker};
    // (rostered, available, rounds run, max rounds, open) → reason
    let table = [
        ((1, 1, 0, 0, 0), Some(SingleWorker)),
        ((0, 0, 0, 0, 0), Some(SingleWorker)),
        ((1, 1, 2, 3, 5), Some(SingleWorker)),
        ((3, 1, 0, 3, 0), Some(Quorum)),
        ((3, 2, 0, 3, 0), None),
        ((3, 3, 1, 3, 0), Some(NoOpenItems)),
        ((3, 1, 1, 3, 0), Some(NoOpenItems)),
        ((3, 3, 3, 3, 2), Some(MaxRounds)),
        ((3, 1, 1, 3, 2), Some(Quorum)),
        ((3, 2, 1, 3, 2), None),
    ];
    for ((rostered, available, rounds, max, open), expected) in table {
        assert_eq!(
            stop(rostered, available, rounds, max, open),
            expected,
            "{rostered} rostered, {available} available, {rounds}/{max} rounds, {open} open"
        );
    }
}

fn anchored(status: Option<Status>) -> Anchoring {
    Anchoring {
        anchor_status: status,
        anchors: Vec::new(),
    }
}

#[test]
fn a_claim_whose_anchors_fail_is_unverifiable_whatever_the_verdicts() {
    let analysers = set(&["claude", "codex", "kimi"]);
    let agreeing = vec![
        verdict(1, "codex", A, CHECKED),
        verdict(1, "kimi", A, CHECKED),
    ];
    let disputed = vec![
        verdict(1, "codex", A, CHECKED),
        verdict(1, "kimi", D, CHECKED),
    ];
    // (anchor status, verdicts) → (class, open)
    let table = [
        (
            Some(Status::Unanchored),
            &agreeing,
            (FinalClass::Unverifiable, false),
        ),
        (
            Some(Status::None),
            &agreeing,
            (FinalClass::Unverifiable, false),
        ),
        (
            Some(Status::Unanchored),
            &disputed,
            (FinalClass::Unverifiable, false),
        ),
        (
            Some(Status::Verified),
            &agreeing,
            (FinalClass::FullConsensus, false),
        ),
        (
            Some(Status::Moved),
            &agreeing,
            (FinalClass::FullConsensus, false),
        ),
        (
            Some(Status::Verified),
            &disputed,
            (FinalClass::Contested, true),
        ),
        // A hand-written ledger has no anchor status: verdicts alone decide.
        (None, &agreeing, (FinalClass::FullConsensus, false)),
    ];
    for (status, verdicts, expected) in table {
        let item = LedgerItem {
            owner: OWNER.to_owned(),
            verdicts: verdicts.clone(),
            anchoring: anchored(status),
            ..LedgerItem::default()
        };
        for adversarial in [false, true] {
            let context = Context {
                analysers: &analysers,
                available: &analysers,
                adversarial,
                round: 1,
            };
            let outcome = item_outcome(&item, &context);
            assert_eq!(
                (outcome.class, outcome.open),
                expected,
                "{status:?} {verdicts:?} adversarial {adversarial}"
            );
        }
    }
}

#[test]
fn in_adversarial_mode_a_verdict_whose_anchor_does_not_resolve_is_not_counted() {
    let analysers = set(&["claude", "codex", "kimi"]);
    let mut unresolved = verdict(1, "kimi", D, "src/cart.rs:999 `nowhere`");
    unresolved.anchoring = anchored(Some(Status::Unanchored));
    let mut resolved = verdict(1, "codex", A, CHECKED);
    resolved.anchoring = anchored(Some(Status::Verified));
    let item = LedgerItem {
        owner: OWNER.to_owned(),
        verdicts: vec![resolved, unresolved],
        anchoring: anchored(Some(Status::Verified)),
        ..LedgerItem::default()
    };
    for (adversarial, expected) in [
        (false, (FinalClass::Contested, true)),
        (true, (FinalClass::FullConsensus, false)),
    ] {
        let context = Context {
            analysers: &analysers,
            available: &analysers,
            adversarial,
            round: 1,
        };
        let outcome = item_outcome(&item, &context);
        assert_eq!(
            (outcome.class, outcome.open),
            expected,
            "adversarial {adversarial}"
        );
    }
}
