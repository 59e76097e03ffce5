//! Whether a reviewer's verdict counts as verification of a claim, and when
//! it does not, why: the one rule the classes, the report's "verified by",
//! SARIF's `agreedBy`/`disagreedBy`, the pull-request review and the gate
//! share.
//!
//! A verdict counts when all of these hold:
//!
//! | rule | not counted because ([`Uncounted`]) |
//! |---|---|
//! | it is not the claim's owner's own | `owner` |
//! | it is not from a worker who reported the same finding (a claim merged with this one) | `finder` |
//! | it is the reviewer's latest on the finding (decided by the caller, `classes`) | `superseded` |
//! | it was not given by a stand-in for the rostered provider or model | `substitute` |
//! | its reviewer is a rostered reviewer | `unrostered` |
//! | no anchor it cites fails to resolve in the run's snapshot | `unresolved` |
//! | it brings evidence of its own: a command with its output in quotes, or an anchor that resolves and is not one of the claim's own anchors (the same file, within the same lines) re-quoted | `no-evidence`, `own-anchors` |
//!
//! The same rule holds for every verdict word: a `DISAGREE` that checks
//! nothing refutes nothing, as an `AGREE` that re-quotes the claim verifies
//! nothing.

use std::collections::BTreeSet;

use crate::anchors;
use crate::converge::ledger::{LedgerItem, VerdictEntry};
use crate::items;
use crate::vocab::AnchorStatus;
use crate::vocab::Uncounted;

impl Uncounted {
    /// The reason in a few words, for people.
    pub fn reason(self) -> &'static str {
        match self {
            Uncounted::Owner => "the claim's own owner",
            Uncounted::Finder => "a finder of the same finding, who cannot verify it",
            Uncounted::Superseded => "a later verdict of the same reviewer counts instead",
            Uncounted::Substitute => "given by a stand-in for the rostered provider or model",
            Uncounted::Unrostered => "not one of the run's reviewers",
            Uncounted::Unresolved => "an anchor it cites does not resolve",
            Uncounted::NoEvidence => "no command output and no anchor of its own",
            Uncounted::OwnAnchors => "it only re-quotes the claim's own anchors",
        }
    }
}

/// Whether `entry`, a verdict on `claim` (whose own anchors are `own`, see
/// [`claim_spans`]), counts (the caller has already picked each reviewer's
/// latest). `finders` are the owners of every claim merged with `claim`
/// (its own owner included); `reviewers` the run's rostered reviewers.
pub fn check(
    entry: &VerdictEntry,
    claim: &LedgerItem,
    own: &[Span],
    finders: &BTreeSet<&str>,
    reviewers: &BTreeSet<String>,
) -> Result<(), Uncounted> {
    if entry.reviewer == claim.owner {
        return Err(Uncounted::Owner);
    }
    if finders.contains(entry.reviewer.as_str()) {
        return Err(Uncounted::Finder);
    }
    if entry.substitute {
        return Err(Uncounted::Substitute);
    }
    if !reviewers.contains(&entry.reviewer) {
        return Err(Uncounted::Unrostered);
    }
    if entry.anchoring.anchor_status == Some(AnchorStatus::Unanchored) {
        return Err(Uncounted::Unresolved);
    }
    own_evidence(entry, own)
}

/// A location: normalised path, first and last line.
pub type Span = (String, u32, u32);

fn span(path: &str, start: u32, end: u32) -> Span {
    let path = anchors::snapshot::normalise(path).unwrap_or_else(|| path.to_owned());
    (path, start.min(end), start.max(end))
}

/// `18` or `18-22` as (first, last).
fn range(lines: &str) -> Option<(u32, u32)> {
    if let Some((first, last)) = lines.split_once('-') {
        Some((first.parse().ok()?, last.parse().ok()?))
    } else {
        let line = lines.parse().ok()?;
        Some((line, line))
    }
}

/// The claim's own anchors: as okstra checked them, or for a ledger
/// written by hand (nothing checked) as its text and evidence cite them.
pub fn claim_spans(claim: &LedgerItem) -> Vec<Span> {
    if !claim.anchoring.anchors.is_empty() {
        return claim
            .anchoring
            .anchors
            .iter()
            .filter_map(|a| range(&a.lines).map(|(s, e)| span(&a.path, s, e)))
            .collect();
    }
    let mut text = claim.text.clone().unwrap_or_default();
    for evidence in &claim.evidence {
        text.push(' ');
        text.push_str(&evidence.text);
    }
    anchors::parse(&text)
        .iter()
        .map(|a| span(&a.path, a.start, a.end))
        .collect()
}

/// The verdict's anchors that resolved (all it cites, for a verdict okstra
/// did not check).
fn verdict_spans(entry: &VerdictEntry) -> Vec<Span> {
    if entry.anchoring.anchor_status.is_none() {
        return anchors::parse(&entry.evidence)
            .iter()
            .map(|a| span(&a.path, a.start, a.end))
            .collect();
    }
    entry
        .anchoring
        .anchors
        .iter()
        .filter(|a| a.status.is_anchored())
        .filter_map(|a| range(&a.lines).map(|(s, e)| span(&a.path, s, e)))
        .collect()
}

/// Whether `entry` brings evidence of its own for a claim whose own anchors
/// are `own`.
fn own_evidence(entry: &VerdictEntry, own: &[Span]) -> Result<(), Uncounted> {
    if items::brings_output(&entry.evidence) {
        return Ok(());
    }
    let cited = verdict_spans(entry);
    if cited.is_empty() {
        return Err(Uncounted::NoEvidence);
    }
    let requoted = |(path, first, last): &Span| {
        own.iter()
            .any(|(p, s, e)| p == path && s <= first && last <= e)
    };
    if cited.iter().all(requoted) {
        Err(Uncounted::OwnAnchors)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::anchors::Checked;
    use crate::converge::ledger::Anchoring;
    use crate::vocab::Verdict;

    fn checked(location: &str, status: AnchorStatus) -> Checked {
        let (path, lines) = location.rsplit_once(':').unwrap();
        Checked {
            path: path.to_owned(),
            lines: lines.to_owned(),
            excerpt: None,
            excerpt_sha256: None,
            status,
            found_at: None,
            reason: None,
        }
    }

    fn claim(anchors: &[&str]) -> LedgerItem {
        let anchors: Vec<Checked> = anchors
            .iter()
            .map(|a| checked(a, AnchorStatus::Verified))
            .collect();
        LedgerItem {
            item_id: "claude:F-1".to_owned(),
            owner: "claude".to_owned(),
            anchoring: Anchoring {
                anchor_status: Some(AnchorStatus::of(&anchors)),
                anchors,
            },
            ..LedgerItem::default()
        }
    }

    fn verdict(
        reviewer: &str,
        evidence: &str,
        cited: Option<&[(&str, AnchorStatus)]>,
    ) -> VerdictEntry {
        VerdictEntry {
            round: 1,
            reviewer: reviewer.to_owned(),
            verdict: Verdict::Agree,
            evidence: evidence.to_owned(),
            addition: None,
            substitute: false,
            anchoring: cited.map_or_else(Anchoring::default, |cited| {
                let anchors: Vec<Checked> = cited.iter().map(|(a, s)| checked(a, *s)).collect();
                Anchoring {
                    anchor_status: Some(AnchorStatus::of(&anchors)),
                    anchors,
                }
            }),
            same_as: None,
        }
    }

    /// (name, verdict, finders besides the owner, outcome)
    type Row = (
        &'static str,
        VerdictEntry,
        &'static [&'static str],
        Result<(), Uncounted>,
    );

    #[test]
    fn the_counting_table() {
        use AnchorStatus::{Moved, Unanchored, Verified};
        let reviewers: BTreeSet<String> = ["claude", "codex", "kimi"]
            .iter()
            .map(|r| (*r).to_owned())
            .collect();
        let the_claim = claim(&["src/inv.py:18-22"]);
        let mut stand_in = verdict("codex", "`grep -n x src` \"18: x\"", None);
        stand_in.substitute = true;
        let rows: Vec<Row> = vec![
            (
                "a command with its output counts",
                verdict("codex", "`sed -n 18p src/inv.py` \"if x < q:\"", Some(&[])),
                &[],
                Ok(()),
            ),
            (
                "a command without output does not",
                verdict("codex", "ran `pytest -k race`", Some(&[])),
                &[],
                Err(Uncounted::NoEvidence),
            ),
            (
                "prose checks nothing",
                verdict("codex", "looks right to me", Some(&[])),
                &[],
                Err(Uncounted::NoEvidence),
            ),
            (
                "an anchor of its own counts",
                verdict(
                    "codex",
                    "src/inv.py:16 `with self._lock:` is after the check",
                    Some(&[("src/inv.py:16", Verified)]),
                ),
                &[],
                Ok(()),
            ),
            (
                "a moved anchor of its own counts",
                verdict(
                    "codex",
                    "src/server.py:4 `x`",
                    Some(&[("src/server.py:4", Moved)]),
                ),
                &[],
                Ok(()),
            ),
            (
                "re-quoting the claim's own anchor does not",
                verdict(
                    "codex",
                    "src/inv.py:18-22 confirms it",
                    Some(&[("src/inv.py:18-22", Verified)]),
                ),
                &[],
                Err(Uncounted::OwnAnchors),
            ),
            (
                "nor a line inside the claim's own range, however spelt",
                verdict(
                    "codex",
                    "./src/inv.py:20 shows it",
                    Some(&[("./src/inv.py:20", Verified)]),
                ),
                &[],
                Err(Uncounted::OwnAnchors),
            ),
            (
                "one anchor of its own among re-quoted ones counts",
                verdict(
                    "codex",
                    "src/inv.py:20 and src/inv.py:26",
                    Some(&[("src/inv.py:20", Verified), ("src/inv.py:26", Verified)]),
                ),
                &[],
                Ok(()),
            ),
            (
                "an anchor that does not resolve is not counted, even beside output",
                verdict(
                    "codex",
                    "src/inv.py:900 `nope`; `grep x` \"x\"",
                    Some(&[("src/inv.py:900", Unanchored)]),
                ),
                &[],
                Err(Uncounted::Unresolved),
            ),
            (
                "the owner's own verdict never counts",
                verdict("claude", "`grep x` \"x\"", None),
                &[],
                Err(Uncounted::Owner),
            ),
            (
                "a finder of the same finding never verifies it",
                verdict("kimi", "`grep x` \"x\"", None),
                &["kimi"],
                Err(Uncounted::Finder),
            ),
            (
                "a stand-in never counts",
                stand_in,
                &[],
                Err(Uncounted::Substitute),
            ),
            (
                "a worker off the roster never counts",
                verdict("grok", "`grep x` \"x\"", None),
                &[],
                Err(Uncounted::Unrostered),
            ),
            (
                "a hand-written verdict's anchors are read from its text",
                verdict("codex", "src/inv.py:40 returns early", None),
                &[],
                Ok(()),
            ),
        ];
        for (name, entry, others, expected) in rows {
            let mut finders: BTreeSet<&str> = others.iter().copied().collect();
            finders.insert("claude");
            assert_eq!(
                check(
                    &entry,
                    &the_claim,
                    &claim_spans(&the_claim),
                    &finders,
                    &reviewers
                ),
                expected,
                "{name}"
            );
        }
        // A hand-written claim's anchors come from its text.
        let hand = LedgerItem {
            owner: "claude".to_owned(),
            text: Some("it oversells (src/inv.py:18)".to_owned()),
            ..LedgerItem::default()
        };
        let finders = BTreeSet::from(["claude"]);
        assert_eq!(
            check(
                &verdict("codex", "src/inv.py:18 yes", None),
                &hand,
                &claim_spans(&hand),
                &finders,
                &reviewers
            ),
            Err(Uncounted::OwnAnchors)
        );
    }
}
