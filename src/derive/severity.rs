//! A finding's severity: the highest its finders gave it, on the one ladder
//! (`crate::severity`), and the counted reviewers who say it is overstated.
//!
//! The severity of a finding is the highest severity among the claims
//! merged into it, as each claim's owner wrote it in its result. A counted
//! `DISAGREE` or `SUPPLEMENT` (`counting`) disputes it when its evidence or
//! addition says the severity is lower — `severity: low` (or `severity low`,
//! `severity is low`, any worker word of the ladder) below the finding's, or
//! the word `overstated` — and the report then shows both: the finders'
//! severity, which still ranks the finding (a reviewer's word never lowers
//! one past a gate), and each dispute. A refuted finding has no rank.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::converge::ledger::LedgerItem;

use crate::vocab::Severity;
use crate::vocab::Uncounted;
use crate::vocab::{FinalClass, Verdict};

/// A counted reviewer who says a finding's severity is overstated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Dispute {
    pub reviewer: String,
    pub round: u32,
    /// The severity it proposes; absent when it only says "overstated".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<Severity>,
}

impl Dispute {
    /// As a report shows it: `<reviewer> says <severity>`, or `says
    /// overstated` when it proposes none.
    pub fn shown(&self) -> String {
        let severity = self.severity.map_or("overstated", Severity::as_str);
        format!("{} says {severity}", self.reviewer)
    }
}

/// What a reviewer says of a claim's severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Said {
    /// `severity: <word>`: this rung.
    Rung(Severity),
    /// `overstated`, without a rung.
    Overstated,
}

/// What `text` says of a claim's severity; `None` when it says nothing
/// about it.
pub fn proposed(text: &str) -> Option<Said> {
    let lower = text.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|word| !word.is_empty())
        .collect();
    for (at, word) in words.iter().enumerate() {
        if *word != "severity" {
            continue;
        }
        let next = words[at + 1..]
            .iter()
            .copied()
            .find(|w| !matches!(*w, "is" | "should" | "be" | "at" | "most" | "only"));
        if let Some(rung) = next.and_then(Severity::from_worker) {
            return Some(Said::Rung(rung));
        }
    }
    words
        .iter()
        .any(|word| matches!(*word, "overstated" | "overrated" | "exaggerated"))
        .then_some(Said::Overstated)
}

/// The severity of the finding made of `members` (claim indexes into
/// `items`) of class `class`, and the counted verdicts that dispute it.
/// `severities` gives each claim's severity as its owner wrote it, by item
/// id; `counted` whether each verdict of each claim counted.
pub fn of_finding(
    items: &[LedgerItem],
    members: &[usize],
    class: FinalClass,
    severities: &HashMap<String, Severity>,
    counted: &[Vec<Result<(), Uncounted>>],
) -> (Option<Severity>, Vec<Dispute>) {
    if class == FinalClass::Refuted {
        return (None, Vec::new());
    }
    let severity = members
        .iter()
        .filter_map(|&m| severities.get(&items[m].item_id).copied())
        .max();
    let mut disputes = Vec::new();
    for &member in members {
        for (entry, counts) in items[member].verdicts.iter().zip(&counted[member]) {
            if counts.is_err() || entry.verdict == Verdict::Agree {
                continue;
            }
            let said =
                proposed(&entry.evidence).or_else(|| entry.addition.as_deref().and_then(proposed));
            let proposed = match said {
                Some(Said::Overstated) => None,
                Some(Said::Rung(rung)) if severity.is_some_and(|stated| rung < stated) => {
                    Some(rung)
                }
                _ => continue,
            };
            disputes.push(Dispute {
                reviewer: entry.reviewer.clone(),
                round: entry.round,
                severity: proposed,
            });
        }
    }
    (severity, disputes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::converge::ledger::{Anchoring, VerdictEntry};

    #[test]
    fn what_a_reviewer_says_of_the_severity() {
        for (text, expected) in [
            (
                "severity: low, the input is trusted",
                Some(Said::Rung(Severity::Low)),
            ),
            (
                "Severity is medium at most",
                Some(Said::Rung(Severity::Medium)),
            ),
            (
                "`cat x` \"y\"; severity minor",
                Some(Said::Rung(Severity::Low)),
            ),
            ("the impact is overstated", Some(Said::Overstated)),
            ("high severity", None),
            ("src/a.rs:3 returns early", None),
        ] {
            assert_eq!(proposed(text), expected, "{text}");
        }
    }

    fn item(id: &str, verdicts: Vec<VerdictEntry>) -> LedgerItem {
        LedgerItem {
            item_id: id.to_owned(),
            owner: id.split_once(':').unwrap().0.to_owned(),
            verdicts,
            ..LedgerItem::default()
        }
    }

    fn verdict(
        reviewer: &str,
        verdict: Verdict,
        evidence: &str,
        addition: Option<&str>,
    ) -> VerdictEntry {
        VerdictEntry {
            round: 1,
            reviewer: reviewer.to_owned(),
            verdict,
            evidence: evidence.to_owned(),
            addition: addition.map(str::to_owned),
            substitute: false,
            anchoring: Anchoring::default(),
            same_as: None,
        }
    }

    /// (name, verdicts on codex:1, counted, class, (severity, disputes))
    type Row = (
        &'static str,
        Vec<VerdictEntry>,
        Vec<Result<(), Uncounted>>,
        FinalClass,
        (Option<Severity>, Vec<Option<Severity>>),
    );

    #[test]
    fn the_severity_table() {
        use Verdict::{Agree, Disagree, Supplement};
        let severities: HashMap<String, Severity> = [
            ("claude:F-1".to_owned(), Severity::Medium),
            ("codex:1".to_owned(), Severity::High),
        ]
        .into_iter()
        .collect();
        let rows: Vec<Row> = vec![
            (
                "the highest of the merged claims' owners",
                vec![],
                vec![],
                FinalClass::FullConsensus,
                (Some(Severity::High), vec![]),
            ),
            (
                "a counted DISAGREE saying lower is a dispute",
                vec![verdict("kimi", Disagree, "`x` \"y\": severity low", None)],
                vec![Ok(())],
                FinalClass::Contested,
                (Some(Severity::High), vec![Some(Severity::Low)]),
            ),
            (
                "a counted SUPPLEMENT saying overstated in its addition",
                vec![verdict("kimi", Supplement, "`x` \"y\"", Some("overstated"))],
                vec![Ok(())],
                FinalClass::FullConsensus,
                (Some(Severity::High), vec![None]),
            ),
            (
                "an uncounted one is not",
                vec![verdict("kimi", Disagree, "severity low", None)],
                vec![Err(Uncounted::NoEvidence)],
                FinalClass::WorkerUnique,
                (Some(Severity::High), vec![]),
            ),
            (
                "nor an AGREE, nor a higher word",
                vec![
                    verdict("kimi", Agree, "`x` \"y\" severity low", None),
                    verdict("grok", Disagree, "`x` \"y\" severity critical", None),
                ],
                vec![Ok(()), Ok(())],
                FinalClass::Contested,
                (Some(Severity::High), vec![]),
            ),
            (
                "a refuted finding has no rank",
                vec![],
                vec![],
                FinalClass::Refuted,
                (None, vec![]),
            ),
        ];
        for (name, verdicts, counted_on_codex, class, expected) in rows {
            let items = vec![item("claude:F-1", vec![]), item("codex:1", verdicts)];
            let counted = vec![Vec::new(), counted_on_codex];
            let (severity, disputes) = of_finding(&items, &[0, 1], class, &severities, &counted);
            let said: Vec<Option<Severity>> = disputes.iter().map(|d| d.severity).collect();
            assert_eq!((severity, said), expected, "{name}");
        }
    }
}
