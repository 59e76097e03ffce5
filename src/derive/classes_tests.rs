//! The classification table: one row per rule, then the rules on findings
//! of several claims.

use std::collections::BTreeSet;

use super::*;
use crate::converge::ledger::{Anchoring, NoAnswer, VerdictEntry};
use crate::vocab::AnchorStatus;
use crate::vocab::Verdict;

const OWNER: &str = "claude";
/// Evidence of its own: an anchor the claim does not cite.
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
/// expected (class, open).
struct Row {
    name: &'static str,
    verdicts: Vec<VerdictEntry>,
    no_answer: Vec<(u32, &'static str)>,
    round: u32,
    available: &'static [&'static str],
    expected: (FinalClass, bool),
}

/// The outcome of one claim of `owner` judged alone.
fn alone(item: &LedgerItem, context: &Context<'_>) -> Outcome {
    judge(std::slice::from_ref(item), context).outcome(0)
}

#[test]
fn classification_table() {
    use FinalClass::{Contested, FullConsensus, PartialConsensus, Refuted, WorkerUnique};
    let all: &[&str] = &["claude", "codex", "kimi", "grok"];
    let rows = vec![
        Row {
            name: "no verdict at all",
            verdicts: vec![],
            no_answer: vec![],
            round: 1,
            available: all,
            expected: (WorkerUnique, false),
        },
        Row {
            name: "one checked AGREE",
            verdicts: vec![verdict(1, "codex", A, CHECKED)],
            no_answer: vec![],
            round: 1,
            available: all,
            expected: (FullConsensus, false),
        },
        Row {
            name: "an AGREE citing nothing checkable does not count",
            verdicts: vec![verdict(1, "codex", A, UNCHECKED)],
            no_answer: vec![],
            round: 1,
            available: all,
            expected: (WorkerUnique, false),
        },
        Row {
            name: "a SUPPLEMENT citing nothing checkable does not count",
            verdicts: vec![verdict(1, "kimi", S, UNCHECKED)],
            no_answer: vec![],
            round: 1,
            available: all,
            expected: (WorkerUnique, false),
        },
        Row {
            name: "a SUPPLEMENT with a command and its output counts",
            verdicts: vec![verdict(1, "codex", S, "`cargo test cart` \"1 failed\"")],
            no_answer: vec![],
            round: 1,
            available: all,
            expected: (FullConsensus, false),
        },
        Row {
            name: "a command without its output does not count",
            verdicts: vec![verdict(1, "codex", A, "`cargo test cart` passes")],
            no_answer: vec![],
            round: 1,
            available: all,
            expected: (WorkerUnique, false),
        },
        Row {
            name: "a DISAGREE citing nothing refutes nothing and opens nothing",
            verdicts: vec![verdict(1, "codex", D, UNCHECKED)],
            no_answer: vec![],
            round: 1,
            available: all,
            expected: (WorkerUnique, false),
        },
        Row {
            name: "one checked DISAGREE alone is contested and open",
            verdicts: vec![verdict(1, "codex", D, CHECKED)],
            no_answer: vec![],
            round: 1,
            available: all,
            expected: (Contested, true),
        },
        Row {
            name: "two checked DISAGREEs and no agreement refute it",
            verdicts: vec![
                verdict(1, "codex", D, CHECKED),
                verdict(1, "kimi", D, CHECKED),
            ],
            no_answer: vec![],
            round: 1,
            available: all,
            expected: (Refuted, true),
        },
        Row {
            name: "two DISAGREEs against one checked AGREE stay contested",
            verdicts: vec![
                verdict(1, "codex", A, CHECKED),
                verdict(1, "kimi", D, CHECKED),
                verdict(1, "grok", D, CHECKED),
            ],
            no_answer: vec![],
            round: 1,
            available: all,
            expected: (Contested, true),
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
            expected: (Contested, true),
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
            expected: (PartialConsensus, true),
        },
        Row {
            name: "an unchecked AGREE cannot outvote a DISAGREE",
            verdicts: vec![
                verdict(1, "codex", A, CHECKED),
                verdict(1, "grok", A, UNCHECKED),
                verdict(1, "kimi", D, CHECKED),
            ],
            no_answer: vec![],
            round: 1,
            available: all,
            expected: (Contested, true),
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
            expected: (FullConsensus, false),
        },
        Row {
            name: "a latest AGREE without evidence drops the reviewer",
            verdicts: vec![
                verdict(1, "codex", A, CHECKED),
                verdict(1, "kimi", D, CHECKED),
                verdict(2, "kimi", A, UNCHECKED),
            ],
            no_answer: vec![],
            round: 2,
            available: all,
            expected: (FullConsensus, false),
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
            expected: (Contested, false),
        },
        Row {
            name: "the owner's DISAGREE in round 2 withdraws it: refuted",
            verdicts: vec![
                verdict(1, "codex", A, CHECKED),
                verdict(1, "kimi", D, CHECKED),
                verdict(2, "codex", A, CHECKED),
                verdict(2, OWNER, D, CHECKED),
            ],
            no_answer: vec![],
            round: 2,
            available: all,
            expected: (Refuted, false),
        },
        Row {
            name: "the owner's later AGREE takes a withdrawal back",
            verdicts: vec![
                verdict(1, "codex", A, CHECKED),
                verdict(2, OWNER, D, CHECKED),
                verdict(3, OWNER, A, CHECKED),
            ],
            no_answer: vec![],
            round: 3,
            available: all,
            expected: (FullConsensus, false),
        },
        Row {
            name: "the owner's DISAGREE in round 1 neither withdraws nor counts",
            verdicts: vec![verdict(1, OWNER, D, CHECKED)],
            no_answer: vec![],
            round: 1,
            available: all,
            expected: (WorkerUnique, false),
        },
        Row {
            name: "the owner's AGREE is no vote",
            verdicts: vec![verdict(2, OWNER, A, CHECKED), verdict(2, OWNER, S, CHECKED)],
            no_answer: vec![],
            round: 2,
            available: all,
            expected: (WorkerUnique, false),
        },
        Row {
            name: "no answer from an available reviewer keeps the item open",
            verdicts: vec![verdict(1, "codex", A, CHECKED)],
            no_answer: vec![(1, "kimi")],
            round: 1,
            available: all,
            expected: (FullConsensus, true),
        },
        Row {
            name: "no answer from an unavailable reviewer does not",
            verdicts: vec![verdict(1, "codex", A, CHECKED)],
            no_answer: vec![(1, "kimi")],
            round: 1,
            available: &["claude", "codex"],
            expected: (FullConsensus, false),
        },
        Row {
            name: "no answer in an earlier round does not",
            verdicts: vec![verdict(2, "codex", A, CHECKED)],
            no_answer: vec![(1, "kimi")],
            round: 2,
            available: all,
            expected: (FullConsensus, false),
        },
        Row {
            name: "a verdict from a worker off the roster never counts",
            verdicts: vec![verdict(1, "stand-in", D, CHECKED)],
            no_answer: vec![],
            round: 1,
            available: all,
            expected: (WorkerUnique, false),
        },
        Row {
            name: "two against two is contested",
            verdicts: vec![
                verdict(1, "codex", A, CHECKED),
                verdict(1, "kimi", A, CHECKED),
                verdict(1, "grok", D, CHECKED),
                verdict(1, "antigravity", D, CHECKED),
            ],
            no_answer: vec![],
            round: 1,
            available: all,
            expected: (Contested, true),
        },
    ];
    let reviewers = set(&["claude", "codex", "kimi", "grok", "antigravity"]);
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
        let context = Context {
            reviewers: &reviewers,
            available: &available,
            round: row.round,
        };
        let outcome = alone(&item, &context);
        assert_eq!((outcome.class, outcome.open), row.expected, "{}", row.name);
        assert_eq!(
            outcome.withdrawn,
            row.name.contains("withdraws it"),
            "{}",
            row.name
        );
    }
}

#[test]
fn three_against_two_is_partial() {
    let reviewers = set(&["claude", "a", "b", "c", "d", "e"]);
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
        reviewers: &reviewers,
        available: &reviewers,
        round: 1,
    };
    let outcome = alone(&item, &context);
    assert_eq!(
        (outcome.class, outcome.agreeing, outcome.disagreeing),
        (FinalClass::PartialConsensus, 3, 2)
    );
}

#[test]
fn a_substitute_never_counts() {
    let reviewers = set(&["claude", "codex"]);
    let mut entry = verdict(1, "codex", D, CHECKED);
    entry.substitute = true;
    let item = LedgerItem {
        owner: OWNER.to_owned(),
        verdicts: vec![entry],
        ..LedgerItem::default()
    };
    let context = Context {
        reviewers: &reviewers,
        available: &reviewers,
        round: 1,
    };
    let judged = judge(std::slice::from_ref(&item), &context);
    assert_eq!(
        (judged.outcome(0).class, judged.outcome(0).open),
        (FinalClass::WorkerUnique, false)
    );
    assert_eq!(judged.counted[0], vec![Err(Uncounted::Substitute)]);
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

fn anchored(status: Option<AnchorStatus>) -> Anchoring {
    Anchoring {
        anchor_status: status,
        anchors: Vec::new(),
    }
}

#[test]
fn a_claim_whose_anchors_fail_is_unverifiable_whatever_the_verdicts() {
    let reviewers = set(&["claude", "codex", "kimi"]);
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
            Some(AnchorStatus::Unanchored),
            &agreeing,
            (FinalClass::Unverifiable, false),
        ),
        (
            Some(AnchorStatus::None),
            &agreeing,
            (FinalClass::Unverifiable, false),
        ),
        (
            Some(AnchorStatus::Unanchored),
            &disputed,
            (FinalClass::Unverifiable, false),
        ),
        (
            Some(AnchorStatus::Verified),
            &agreeing,
            (FinalClass::FullConsensus, false),
        ),
        (
            Some(AnchorStatus::Moved),
            &agreeing,
            (FinalClass::FullConsensus, false),
        ),
        (
            Some(AnchorStatus::Verified),
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
        let context = Context {
            reviewers: &reviewers,
            available: &reviewers,
            round: 1,
        };
        let outcome = alone(&item, &context);
        assert_eq!(
            (outcome.class, outcome.open),
            expected,
            "{status:?} {verdicts:?}"
        );
    }
}

#[test]
fn a_verdict_whose_anchor_does_not_resolve_is_not_counted() {
    let reviewers = set(&["claude", "codex", "kimi"]);
    let mut unresolved = verdict(1, "kimi", D, "src/cart.rs:999 `nowhere`");
    unresolved.anchoring = anchored(Some(AnchorStatus::Unanchored));
    let mut resolved = verdict(1, "codex", A, CHECKED);
    resolved.anchoring = Anchoring {
        anchor_status: Some(AnchorStatus::Verified),
        anchors: vec![crate::anchors::Checked {
            path: "src/cart.rs".to_owned(),
            lines: "88".to_owned(),
            excerpt: None,
            excerpt_sha256: None,
            status: AnchorStatus::Verified,
            found_at: None,
            reason: None,
        }],
    };
    let item = LedgerItem {
        owner: OWNER.to_owned(),
        verdicts: vec![resolved, unresolved],
        anchoring: anchored(Some(AnchorStatus::Verified)),
        ..LedgerItem::default()
    };
    let context = Context {
        reviewers: &reviewers,
        available: &reviewers,
        round: 1,
    };
    let judged = judge(std::slice::from_ref(&item), &context);
    assert_eq!(
        (judged.outcome(0).class, judged.outcome(0).open),
        (FinalClass::FullConsensus, false)
    );
    assert_eq!(judged.counted[0], vec![Ok(()), Err(Uncounted::Unresolved)]);
}

/// A claim of `id` with `verdicts`.
fn claim(id: &str, verdicts: Vec<VerdictEntry>) -> LedgerItem {
    LedgerItem {
        item_id: id.to_owned(),
        owner: id.split_once(':').unwrap().0.to_owned(),
        verdicts,
        ..LedgerItem::default()
    }
}

#[test]
fn a_finding_of_merged_claims_is_judged_once_and_its_finders_never_verify_it() {
    let reviewers = set(&["claude", "codex", "kimi"]);
    let context = Context {
        reviewers: &reviewers,
        available: &reviewers,
        round: 1,
    };
    let mut same = verdict(1, "kimi", A, CHECKED);
    same.same_as = Some("claude:F-1".to_owned());
    let items = vec![
        // codex checked claude's claim, and kimi both: codex found it too,
        // so its verdict is a finder's.
        claim(
            "claude:F-1",
            vec![
                verdict(1, "codex", A, CHECKED),
                verdict(1, "kimi", A, CHECKED),
            ],
        ),
        claim("codex:1", vec![verdict(1, "claude", A, CHECKED), same]),
    ];
    let judged = judge(&items, &context);
    assert_eq!(judged.findings.members, vec![vec![0, 1]]);
    let outcome = judged.outcome(1);
    assert_eq!(
        (outcome.class, outcome.agreeing, outcome.disagreeing),
        (FinalClass::FullConsensus, 1, 0)
    );
    assert_eq!(
        judged.counted,
        vec![
            vec![Err(Uncounted::Finder), Err(Uncounted::Superseded)],
            vec![Err(Uncounted::Finder), Ok(())],
        ]
    );
}

#[test]
fn a_defect_two_analysers_both_found_is_one_finding_found_independently() {
    let reviewers = set(&["claude", "codex"]);
    let context = Context {
        reviewers: &reviewers,
        available: &reviewers,
        round: 1,
    };
    // Each owner, shown its own claim beside the other's, named it.
    let mut by_codex = verdict(1, "codex", A, CHECKED);
    by_codex.same_as = Some("codex:1".to_owned());
    let mut by_claude = verdict(1, "claude", A, CHECKED);
    by_claude.same_as = Some("claude:F-1".to_owned());
    let items = vec![
        claim("claude:F-1", vec![by_codex]),
        claim("codex:1", vec![by_claude]),
    ];
    let judged = judge(&items, &context);
    assert_eq!(judged.findings.members, vec![vec![0, 1]]);
    let outcome = judged.outcome(0);
    assert_eq!(
        (
            outcome.class,
            outcome.agreeing,
            outcome.independent,
            outcome.disagreeing
        ),
        (FinalClass::FullConsensus, 0, 1, 0)
    );
    // Neither finder verified it.
    assert_eq!(
        judged.counted,
        vec![vec![Err(Uncounted::Finder)], vec![Err(Uncounted::Finder)]]
    );
    // Found twice and refuted by two counted reviewers: contested, not
    // refuted.
    let reviewers = set(&["claude", "codex", "kimi", "grok"]);
    let context = Context {
        reviewers: &reviewers,
        available: &reviewers,
        round: 1,
    };
    let mut items = items;
    items[0].verdicts.push(verdict(1, "kimi", D, CHECKED));
    items[1].verdicts.push(verdict(1, "grok", D, CHECKED));
    let outcome = judge(&items, &context).outcome(0);
    assert_eq!(outcome.class, FinalClass::Contested);
}

#[test]
fn a_withdrawn_claim_merges_with_nothing() {
    let reviewers = set(&["claude", "codex", "kimi"]);
    let context = Context {
        reviewers: &reviewers,
        available: &reviewers,
        round: 2,
    };
    let mut same = verdict(1, "kimi", A, CHECKED);
    same.same_as = Some("claude:F-1".to_owned());
    let one_withdrew = vec![
        claim(
            "claude:F-1",
            vec![
                verdict(1, "kimi", A, CHECKED),
                verdict(2, OWNER, D, CHECKED),
            ],
        ),
        claim("codex:1", vec![same.clone()]),
    ];
    // A withdrawn claim merges with nothing: claude's is refuted, codex's
    // stands on kimi's check.
    let judged = judge(&one_withdrew, &context);
    assert_eq!(judged.findings.members.len(), 2);
    assert_eq!(judged.outcome(0).class, FinalClass::Refuted);
    assert!(judged.outcome(0).withdrawn);
    assert_eq!(judged.outcome(1).class, FinalClass::FullConsensus);
}
