//! Which claims are one finding: decided by what reviewers said, never by
//! where the claims point.
//!
//! Claims whose anchors overlap are shown to a reviewer side by side
//! (`converge::group`), and a reviewer may answer one of them `same claim as
//! Item 3a`; beside a claim of another worker, a reviewer is shown its own
//! claims at the same lines and may answer `same claim as my F-2` (the
//! ledger keeps either as the verdict's `sameAs`). Two claims of different
//! workers are one finding when
//!
//! - both their owners said so: each, in a verdict on the other's claim,
//!   named its own (`same claim as my …`), or answered both in one round
//!   and called them the same — with two analysers nobody else ever sees
//!   both, so this is how a defect both found becomes one finding; or
//! - more than half of the reviewers who answered both in one round said
//!   so (each reviewer's latest round with both), at least one of them,
//!
//! and they do not contradict each other: no reviewer's latest verdicts on
//! the two point opposite ways (one agrees, the other disagrees; a claim's
//! owner holds its own claim unless it said otherwise), so a claim that
//! the sleep is the root cause never merges with one that it is not. A
//! claim whose anchors do not resolve, or that its owner withdrew, merges
//! with nothing. Findings are the groups this joins, checked again for
//! contradictions before two groups join. The owners of a finding's claims
//! are who found it, nobody else.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::converge::ledger::{LedgerItem, VerdictEntry};

use crate::vocab::Verdict;

/// The claims of a ledger grouped into findings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Findings {
    /// The finding of each claim (by its index in the ledger).
    pub of: Vec<usize>,
    /// Each finding's claims, in ledger order; findings in the order of
    /// their first claim.
    pub members: Vec<Vec<usize>>,
}

impl Findings {
    /// The claims in the same finding as claim `index`, itself included.
    pub fn with(&self, index: usize) -> &[usize] {
        &self.members[self.of[index]]
    }
}

/// Each reviewer's latest verdict on each claim: (reviewer, claim) → verdict.
type Latest<'a> = HashMap<(&'a str, usize), &'a VerdictEntry>;

/// The findings of `items`.
pub fn of(items: &[LedgerItem]) -> Findings {
    let index: HashMap<&str, usize> = items
        .iter()
        .enumerate()
        .map(|(position, item)| (item.item_id.as_str(), position))
        .collect();
    let mut latest: Latest<'_> = HashMap::new();
    let mut pairs: BTreeSet<(usize, usize)> = BTreeSet::new();
    for (position, item) in items.iter().enumerate() {
        for entry in &item.verdicts {
            let slot = latest
                .entry((entry.reviewer.as_str(), position))
                .or_insert(entry);
            if entry.round >= slot.round {
                *slot = entry;
            }
            if let Some(&other) = entry.same_as.as_deref().and_then(|id| index.get(id))
                && other != position
                && items[other].owner != item.owner
            {
                pairs.insert((other.min(position), other.max(position)));
            }
        }
    }
    let mut sets = Sets::new(items.len());
    // Each root's claims, so a join checks only the two groups it joins.
    let mut groups: Vec<Vec<usize>> = (0..items.len()).map(|i| vec![i]).collect();
    for (a, b) in pairs {
        let apart = |item: &LedgerItem| item.anchoring.fails() || is_withdrawn(item);
        if apart(&items[a]) || apart(&items[b]) || !said_same(items, a, b) {
            continue;
        }
        let (root_a, root_b) = (sets.find(a), sets.find(b));
        if root_a == root_b {
            continue;
        }
        let clash = groups[root_a].iter().any(|&x| {
            groups[root_b]
                .iter()
                .any(|&y| contradict(items, &latest, x, y))
        });
        if !clash {
            sets.join(root_a, root_b);
            let (kept, gone) = if sets.find(root_a) == root_a {
                (root_a, root_b)
            } else {
                (root_b, root_a)
            };
            let moved = std::mem::take(&mut groups[gone]);
            groups[kept].extend(moved);
        }
    }
    let mut by_root: BTreeMap<usize, usize> = BTreeMap::new();
    let mut members: Vec<Vec<usize>> = Vec::new();
    let mut of = Vec::with_capacity(items.len());
    for position in 0..items.len() {
        let root = sets.find(position);
        let finding = *by_root.entry(root).or_insert_with(|| {
            members.push(Vec::new());
            members.len() - 1
        });
        members[finding].push(position);
        of.push(finding);
    }
    Findings { of, members }
}

/// Whether claim `item`'s owner withdrew it: its latest word on its own
/// claim is a `DISAGREE` of round 2 or later.
pub fn is_withdrawn(item: &LedgerItem) -> bool {
    item.verdicts
        .iter()
        .filter(|v| v.reviewer == item.owner)
        .max_by_key(|v| v.round)
        .is_some_and(|v| v.round >= 2 && v.verdict == Verdict::Disagree)
}

/// Whether the owners of claims `a` and `b`, or more than half of the
/// reviewers who answered both in one round, said they are the same claim.
fn said_same(items: &[LedgerItem], a: usize, b: usize) -> bool {
    fn rounds(item: &LedgerItem) -> BTreeMap<&str, BTreeSet<u32>> {
        let mut by: BTreeMap<&str, BTreeSet<u32>> = BTreeMap::new();
        for entry in &item.verdicts {
            by.entry(entry.reviewer.as_str())
                .or_default()
                .insert(entry.round);
        }
        by
    }
    let (rounds_a, rounds_b) = (rounds(&items[a]), rounds(&items[b]));
    let names = |entry: &VerdictEntry, other: &LedgerItem| {
        entry.same_as.as_deref() == Some(other.item_id.as_str())
    };
    let mut saw = 0_usize;
    let mut said: BTreeSet<&str> = BTreeSet::new();
    for (reviewer, on_a) in &rounds_a {
        let Some(on_b) = rounds_b.get(reviewer) else {
            continue;
        };
        let Some(&round) = on_a.intersection(on_b).last() else {
            continue;
        };
        saw += 1;
        let in_round = |item: &LedgerItem, other: &LedgerItem| {
            item.verdicts
                .iter()
                .any(|e| e.reviewer == *reviewer && e.round == round && names(e, other))
        };
        if in_round(&items[a], &items[b]) || in_round(&items[b], &items[a]) {
            said.insert(reviewer);
        }
    }
    // An owner also says so in a verdict on the other claim, by naming its
    // own (`same claim as my …`): a later round's verdict that does not
    // repeat it takes nothing back (one that disagrees keeps the two apart,
    // `contradict`).
    let owner_said = |own: &LedgerItem, other: &LedgerItem| {
        said.contains(own.owner.as_str())
            || other
                .verdicts
                .iter()
                .any(|entry| entry.reviewer == own.owner && names(entry, own))
    };
    let owners = owner_said(&items[a], &items[b]) && owner_said(&items[b], &items[a]);
    owners || (!said.is_empty() && 2 * said.len() > saw)
}

/// Whether some reviewer's latest verdicts on claims `x` and `y` point
/// opposite ways (an owner holds its own claim unless it said otherwise).
fn contradict(items: &[LedgerItem], latest: &Latest<'_>, x: usize, y: usize) -> bool {
    let stance = |reviewer: &str, claim: usize| -> Option<bool> {
        latest
            .get(&(reviewer, claim))
            .map(|entry| entry.verdict.agrees())
            .or_else(|| (items[claim].owner == reviewer).then_some(true))
    };
    let mut reviewers: BTreeSet<&str> = BTreeSet::new();
    reviewers.insert(&items[x].owner);
    reviewers.insert(&items[y].owner);
    for item in [&items[x], &items[y]] {
        reviewers.extend(item.verdicts.iter().map(|e| e.reviewer.as_str()));
    }
    reviewers.into_iter().any(|reviewer| {
        matches!(
            (stance(reviewer, x), stance(reviewer, y)),
            (Some(a), Some(b)) if a != b
        )
    })
}

/// Union-find over indexes (claims here, the plan's items in
/// `converge::group`); the smaller index leads.
pub struct Sets(Vec<usize>);

impl Sets {
    /// `len` indexes, each alone.
    pub fn new(len: usize) -> Sets {
        Sets((0..len).collect())
    }

    /// The index that leads `at`'s set.
    pub fn find(&mut self, mut at: usize) -> usize {
        while self.0[at] != at {
            self.0[at] = self.0[self.0[at]];
            at = self.0[at];
        }
        at
    }

    /// One set of `a`'s and `b`'s.
    pub fn join(&mut self, a: usize, b: usize) {
        let (a, b) = (self.find(a), self.find(b));
        if a < b {
            self.0[b] = a;
        } else {
            self.0[a] = b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::converge::ledger::Anchoring;
    use crate::vocab::AnchorStatus;

    fn claim(id: &str) -> LedgerItem {
        LedgerItem {
            item_id: id.to_owned(),
            owner: id.split_once(':').unwrap().0.to_owned(),
            ..LedgerItem::default()
        }
    }

    /// `reviewer` in `round` said `verdict`, maybe `same claim as` another.
    fn said(round: u32, reviewer: &str, verdict: Verdict, same_as: Option<&str>) -> VerdictEntry {
        VerdictEntry {
            round,
            reviewer: reviewer.to_owned(),
            verdict,
            evidence: "`grep x` \"x\"".to_owned(),
            addition: None,
            substitute: false,
            anchoring: Anchoring::default(),
            same_as: same_as.map(str::to_owned),
        }
    }

    use Verdict::{Agree as A, Disagree as D};

    /// One row: the claims with their verdicts, then the expected findings
    /// as item ids.
    struct Row {
        name: &'static str,
        claims: Vec<(&'static str, Vec<VerdictEntry>)>,
        expected: Vec<Vec<&'static str>>,
    }

    #[test]
    fn the_identity_table() {
        let rows = vec![
            Row {
                name: "overlap alone merges nothing",
                claims: vec![
                    ("claude:F-1", vec![said(1, "kimi", A, None)]),
                    ("codex:1", vec![said(1, "kimi", A, None)]),
                ],
                expected: vec![vec!["claude:F-1"], vec!["codex:1"]],
            },
            Row {
                name: "the one reviewer who saw both said so",
                claims: vec![
                    ("claude:F-1", vec![said(1, "kimi", A, None)]),
                    ("codex:1", vec![said(1, "kimi", A, Some("claude:F-1"))]),
                ],
                expected: vec![vec!["claude:F-1", "codex:1"]],
            },
            Row {
                name: "one of two reviewers is no majority",
                claims: vec![
                    (
                        "claude:F-1",
                        vec![said(1, "kimi", A, None), said(1, "grok", A, None)],
                    ),
                    (
                        "codex:1",
                        vec![
                            said(1, "kimi", A, Some("claude:F-1")),
                            said(1, "grok", A, None),
                        ],
                    ),
                ],
                expected: vec![vec!["claude:F-1"], vec!["codex:1"]],
            },
            Row {
                name: "both owners said so, the third did not",
                claims: vec![
                    (
                        "claude:F-1",
                        vec![
                            said(2, "claude", A, None),
                            said(2, "codex", A, Some("codex:1")),
                            said(2, "kimi", A, None),
                        ],
                    ),
                    (
                        "codex:1",
                        vec![
                            said(2, "claude", A, Some("claude:F-1")),
                            said(2, "codex", A, None),
                            said(2, "kimi", A, None),
                        ],
                    ),
                ],
                expected: vec![vec!["claude:F-1", "codex:1"]],
            },
            Row {
                name: "claims that contradict never merge, whoever says they are the same",
                claims: vec![
                    (
                        "claude:F-1",
                        vec![said(1, "kimi", A, None), said(1, "codex", D, None)],
                    ),
                    (
                        "codex:1",
                        vec![
                            said(1, "kimi", A, Some("claude:F-1")),
                            said(1, "claude", D, None),
                        ],
                    ),
                ],
                expected: vec![vec!["claude:F-1"], vec!["codex:1"]],
            },
            Row {
                name: "a reviewer who agrees with one and refutes the other keeps them apart",
                claims: vec![
                    (
                        "claude:F-1",
                        vec![said(1, "kimi", A, None), said(1, "grok", A, None)],
                    ),
                    (
                        "codex:1",
                        vec![
                            said(1, "kimi", A, Some("claude:F-1")),
                            said(1, "grok", D, None),
                        ],
                    ),
                ],
                expected: vec![vec!["claude:F-1"], vec!["codex:1"]],
            },
            Row {
                name: "a chain merges unless its ends contradict",
                claims: vec![
                    (
                        "claude:F-1",
                        vec![said(1, "antigravity", A, None), said(1, "grok", A, None)],
                    ),
                    (
                        "codex:1",
                        vec![
                            said(1, "antigravity", A, Some("claude:F-1")),
                            said(1, "claude", A, None),
                        ],
                    ),
                    (
                        "kimi:K-1",
                        vec![
                            said(1, "claude", A, Some("codex:1")),
                            said(1, "grok", D, None),
                        ],
                    ),
                ],
                expected: vec![vec!["claude:F-1", "codex:1"], vec!["kimi:K-1"]],
            },
            Row {
                name: "a chain without a contradiction is one finding",
                claims: vec![
                    ("claude:F-1", vec![said(1, "antigravity", A, None)]),
                    (
                        "codex:1",
                        vec![
                            said(1, "antigravity", A, Some("claude:F-1")),
                            said(1, "claude", A, None),
                        ],
                    ),
                    ("kimi:K-1", vec![said(1, "claude", A, Some("codex:1"))]),
                ],
                expected: vec![vec!["claude:F-1", "codex:1", "kimi:K-1"]],
            },
            Row {
                name: "two analysers: each owner named its own claim beside the other's",
                claims: vec![
                    ("claude:F-1", vec![said(1, "codex", A, Some("codex:1"))]),
                    ("codex:1", vec![said(1, "claude", A, Some("claude:F-1"))]),
                ],
                expected: vec![vec!["claude:F-1", "codex:1"]],
            },
            Row {
                name: "one owner's word alone merges nothing",
                claims: vec![
                    ("claude:F-1", vec![said(1, "codex", A, None)]),
                    ("codex:1", vec![said(1, "claude", A, Some("claude:F-1"))]),
                ],
                expected: vec![vec!["claude:F-1"], vec!["codex:1"]],
            },
            Row {
                name: "an owner's word stands when it reviews again without repeating it",
                claims: vec![
                    (
                        "claude:F-1",
                        vec![
                            said(1, "codex", A, Some("codex:1")),
                            said(2, "codex", A, None),
                        ],
                    ),
                    ("codex:1", vec![said(1, "claude", A, Some("claude:F-1"))]),
                ],
                expected: vec![vec!["claude:F-1", "codex:1"]],
            },
            Row {
                name: "an owner who disputes the other claim later keeps the two apart",
                claims: vec![
                    (
                        "claude:F-1",
                        vec![
                            said(1, "codex", A, Some("codex:1")),
                            said(2, "codex", D, None),
                        ],
                    ),
                    ("codex:1", vec![said(1, "claude", A, Some("claude:F-1"))]),
                ],
                expected: vec![vec!["claude:F-1"], vec!["codex:1"]],
            },
            Row {
                name: "owners who name their own claims still never merge opposites",
                claims: vec![
                    ("claude:F-1", vec![said(1, "codex", D, Some("codex:1"))]),
                    ("codex:1", vec![said(1, "claude", A, Some("claude:F-1"))]),
                ],
                expected: vec![vec!["claude:F-1"], vec!["codex:1"]],
            },
            Row {
                name: "a worker's two claims are never merged",
                claims: vec![
                    ("claude:F-1", vec![said(1, "kimi", A, None)]),
                    ("claude:F-2", vec![said(1, "kimi", A, Some("claude:F-1"))]),
                ],
                expected: vec![vec!["claude:F-1"], vec!["claude:F-2"]],
            },
        ];
        for row in rows {
            let items: Vec<LedgerItem> = row
                .claims
                .iter()
                .map(|(id, verdicts)| LedgerItem {
                    verdicts: verdicts.clone(),
                    ..claim(id)
                })
                .collect();
            let found = of(&items);
            let named: Vec<Vec<&str>> = found
                .members
                .iter()
                .map(|members| members.iter().map(|&i| items[i].item_id.as_str()).collect())
                .collect();
            assert_eq!(named, row.expected, "{}", row.name);
        }
    }

    #[test]
    fn an_unverifiable_claim_merges_with_nothing() {
        let mut lost = claim("claude:F-1");
        lost.verdicts = vec![said(1, "kimi", A, None)];
        lost.anchoring = Anchoring {
            anchor_status: Some(AnchorStatus::Unanchored),
            anchors: Vec::new(),
        };
        let mut other = claim("codex:1");
        other.verdicts = vec![said(1, "kimi", A, Some("claude:F-1"))];
        let found = of(&[lost, other]);
        assert_eq!(found.members, vec![vec![0], vec![1]]);
    }
}
