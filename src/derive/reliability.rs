//! Whether a run's findings were cross-verified: the final report's
//! `reliability` block (schema 2.1), computed by okstra and never authored.
//!
//! [`judge`] is the rule, one pure function of the run's facts; [`facts`]
//! takes those facts from the run's records, and [`of`] chains the two.
//! `okstra coverage` hands the block to the report writer, the report's
//! finalize step writes it into data.json, and `okstra validate` checks the
//! one it finds against it.
//!
//! The rules, in order (the first that holds decides):
//!
//! | facts | `crossVerified` | `reason` |
//! |---|---|---|
//! | fewer than 2 reviewers rostered | false | `single-reviewer` (by design) |
//! | fewer than 2 completed their own work | false | `quorum-lost` |
//! | no convergence round ran, convergence off | false | `convergence-disabled` |
//! | no convergence round ran | false | `convergence-not-run` |
//! | round 1 left a completed reviewer's items without another reviewer's answer | false | `reviewers-failed` |
//! | otherwise | true | — |
//!
//! A reviewer is a rostered worker whose role reviews the others (analysers,
//! or verifiers in `implementation`). It completed its own work when its
//! latest own attempt (initial or retry) ended `completed` and its Result
//! Path is not empty — `derive::reviewers` decides that, as it does for
//! convergence. It answered a round when the latest attempt of its reverify
//! dispatch for that round ended `completed`.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::catalog::DispatchKind;
use crate::run::Records;
use crate::vocab::Ending;
use crate::vocab::ReliabilityReason;

pub use super::quorum::REVIEWERS_REQUIRED;
use super::quorum::{Count, Standing};

/// The report's `reliability` block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Reliability {
    pub cross_verified: bool,
    /// Set exactly when `cross_verified` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<ReliabilityReason>,
    /// One sentence for people: what was and was not checked, and why.
    pub detail: String,
    pub reviewers_rostered: u32,
    pub reviewers_completed: u32,
    pub reviewers_required: u32,
    pub rounds_run: u32,
    /// One entry per round run, in order.
    pub rounds: Vec<RoundAnswers>,
}

/// Who was asked and who answered in one convergence round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoundAnswers {
    pub round: u32,
    /// Reviewers dispatched in the round, in roster order.
    pub asked: Vec<String>,
    /// Of those, the ones whose attempt completed, in roster order.
    pub answered: Vec<String>,
}

impl Reliability {
    /// Whether a run with this block must not pass as a normal result: a
    /// roster of two or more reviewers that ended without cross-verifying.
    /// A single-reviewer roster is unverified by design, not by failure.
    pub fn falls_short(&self) -> bool {
        !self.cross_verified && self.reviewers_rostered >= REVIEWERS_REQUIRED
    }

    /// Whether the findings were cross-verified, in the words every
    /// output uses: `Cross-verified`, or `Not cross-verified (quorum-lost)`.
    pub fn headline(&self) -> String {
        match self.reason {
            Some(reason) => format!("Not cross-verified ({reason})"),
            None => "Cross-verified".to_owned(),
        }
    }

    /// What was and was not checked, after the headline: the block's
    /// `detail`, its first letter lowered and without a final period.
    pub fn explanation(&self) -> String {
        let mut detail = self.detail.trim().trim_end_matches('.').to_owned();
        if let Some(first) = detail.get(..1) {
            let lower = first.to_lowercase();
            detail.replace_range(..1, &lower);
        }
        detail
    }

    /// The statement as one line, as every output gives it (the report's
    /// top line, the closing summary, SARIF, the pull-request review, the
    /// gate, `okstra next`): `not cross-verified (quorum-lost): only 1 of 2
    /// reviewers …`, or `cross-verified: 3 of 3 reviewers …`.
    pub fn line(&self) -> String {
        format!("{}: {}", self.headline().to_lowercase(), self.explanation())
    }
}

/// What the rule needs to know about a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// Every rostered reviewer, in roster order.
    pub reviewers: Vec<Reviewer>,
    /// The run's `convergence.enabled` (or the ledger's).
    pub convergence_enabled: bool,
    /// The ledger's `roundsRun` (0 without a ledger).
    pub rounds_run: u32,
    /// Rounds `1..=rounds_run`, in order.
    pub rounds: Vec<RoundAnswers>,
    /// Workers that own at least one item in the ledger.
    pub item_owners: BTreeSet<String>,
}

/// One rostered reviewer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reviewer {
    pub worker_id: String,
    /// Whether it completed its own work.
    pub completed: bool,
}

/// The rule: the `reliability` block for `facts`.
pub fn judge(facts: &Facts) -> Reliability {
    let rostered = count(facts.reviewers.len());
    let completed: Vec<&str> = facts
        .reviewers
        .iter()
        .filter(|r| r.completed)
        .map(|r| r.worker_id.as_str())
        .collect();
    let completed_count = count(completed.len());
    let quorum = Count::of(facts.reviewers.iter().map(|r| {
        if r.completed {
            Standing::Completed
        } else {
            Standing::Out
        }
    }));
    let (reason, detail) = if rostered < REVIEWERS_REQUIRED {
        (
            Some(ReliabilityReason::SingleReviewer),
            if rostered == 0 {
                "No reviewer was rostered, so no finding could be checked by a second model."
                    .to_owned()
            } else {
                "Only one reviewer was rostered, so no finding could be checked by a second \
                 model; each finding is that model's word."
                    .to_owned()
            },
        )
    } else if !quorum.cross_checks() {
        (
            Some(ReliabilityReason::QuorumLost),
            format!(
                "Only {completed_count} of {rostered} reviewers completed their own work; \
                 cross-verification needs {REVIEWERS_REQUIRED}, so each finding is one model's \
                 word."
            ),
        )
    } else if facts.rounds_run == 0 {
        if facts.convergence_enabled {
            (
                Some(ReliabilityReason::ConvergenceNotRun),
                format!(
                    "{completed_count} of {rostered} reviewers completed their own work, but no \
                     convergence round ran, so no finding was checked by a second reviewer; each \
                     finding is one model's word."
                ),
            )
        } else {
            (
                Some(ReliabilityReason::ConvergenceDisabled),
                format!(
                    "{completed_count} of {rostered} reviewers completed their own work, but \
                     convergence was switched off, so no finding was checked by a second \
                     reviewer; each finding is one model's word."
                ),
            )
        }
    } else {
        let answered: Vec<&str> = facts
            .rounds
            .iter()
            .find(|round| round.round == 1)
            .map(|round| round.answered.iter().map(String::as_str).collect())
            .unwrap_or_default();
        let unchecked: Vec<&str> = completed
            .iter()
            .copied()
            .filter(|owner| facts.item_owners.contains(*owner))
            .filter(|owner| !answered.iter().any(|reviewer| reviewer != owner))
            .collect();
        if unchecked.is_empty() {
            (
                None,
                format!(
                    "{completed_count} of {rostered} reviewers completed their own work and \
                     checked each other's findings in {} convergence round{}.",
                    facts.rounds_run,
                    if facts.rounds_run == 1 { "" } else { "s" }
                ),
            )
        } else {
            let asked = facts
                .rounds
                .iter()
                .find(|round| round.round == 1)
                .map_or(0, |round| round.asked.len());
            (
                Some(ReliabilityReason::ReviewersFailed),
                format!(
                    "Convergence round 1 ran, but only {} of {asked} reviewers asked answered, so \
                     no other reviewer checked the findings of {}; those findings are one \
                     model's word.",
                    answered.len(),
                    unchecked
                        .iter()
                        .map(|id| format!("`{id}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        }
    };
    Reliability {
        cross_verified: reason.is_none(),
        reason,
        detail,
        reviewers_rostered: rostered,
        reviewers_completed: completed_count,
        reviewers_required: REVIEWERS_REQUIRED,
        rounds_run: facts.rounds_run,
        rounds: facts.rounds.clone(),
    }
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The facts of the run whose records are `records`.
pub fn facts(records: &Records) -> Facts {
    let reviewers = super::reviewers::of(records);
    let ledger = records.ledger.as_ref();
    let rounds_run = ledger.map_or(0, |ledger| ledger.rounds_run);
    let rounds = (1..=rounds_run)
        .map(|round| {
            let mut asked = Vec::new();
            let mut answered = Vec::new();
            for reviewer in &reviewers {
                let name =
                    DispatchKind::Reverify(round).dispatch_name(&reviewer.assignment.dispatch_name);
                if let Some(latest) = records.state.latest(&name) {
                    asked.push(reviewer.assignment.worker_id.clone());
                    if latest.ending == Some(Ending::Completed) {
                        answered.push(reviewer.assignment.worker_id.clone());
                    }
                }
            }
            RoundAnswers {
                round,
                asked,
                answered,
            }
        })
        .collect();
    Facts {
        reviewers: reviewers
            .iter()
            .map(|reviewer| Reviewer {
                worker_id: reviewer.assignment.worker_id.clone(),
                completed: reviewer.completed.is_ok(),
            })
            .collect(),
        convergence_enabled: records.run.convergence.enabled
            || ledger.is_some_and(|ledger| ledger.enabled),
        rounds_run,
        rounds,
        item_owners: ledger
            .iter()
            .flat_map(|ledger| ledger.items.iter().map(|item| item.owner.clone()))
            .collect(),
    }
}

/// The `reliability` block of the run whose records are `records`.
pub fn of(records: &Records) -> Reliability {
    judge(&facts(records))
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn reviewers(completed: &[(&str, bool)]) -> Vec<Reviewer> {
        completed
            .iter()
            .map(|(id, done)| Reviewer {
                worker_id: (*id).to_owned(),
                completed: *done,
            })
            .collect()
    }

    fn round(number: u32, asked: &[&str], answered: &[&str]) -> RoundAnswers {
        let ids = |ids: &[&str]| ids.iter().map(|id| (*id).to_owned()).collect();
        RoundAnswers {
            round: number,
            asked: ids(asked),
            answered: ids(answered),
        }
    }

    fn owners(ids: &[&str]) -> BTreeSet<String> {
        ids.iter().map(|id| (*id).to_owned()).collect()
    }

    /// A three-reviewer run in which everyone completed and both rounds were
    /// answered: the base each row below changes one fact of.
    fn healthy() -> Facts {
        Facts {
            reviewers: reviewers(&[("claude", true), ("codex", true), ("kimi", true)]),
            convergence_enabled: true,
            rounds_run: 2,
            rounds: vec![
                round(
                    1,
                    &["claude", "codex", "kimi"],
                    &["claude", "codex", "kimi"],
                ),
                round(2, &["codex", "kimi"], &["codex"]),
            ],
            item_owners: owners(&["claude", "codex", "kimi"]),
        }
    }

    #[test]
    fn each_rule_decides_its_row() {
        let rows: Vec<(&str, Facts, Option<ReliabilityReason>)> = vec![
            ("everyone answered", healthy(), None),
            (
                "one reviewer rostered",
                Facts {
                    reviewers: reviewers(&[("claude", true)]),
                    convergence_enabled: false,
                    rounds_run: 0,
                    rounds: vec![],
                    item_owners: owners(&["claude"]),
                },
                Some(ReliabilityReason::SingleReviewer),
            ),
            (
                "no reviewer rostered",
                Facts::default(),
                Some(ReliabilityReason::SingleReviewer),
            ),
            (
                "one of three completed",
                Facts {
                    reviewers: reviewers(&[("claude", true), ("codex", false), ("kimi", false)]),
                    rounds_run: 0,
                    rounds: vec![],
                    ..healthy()
                },
                Some(ReliabilityReason::QuorumLost),
            ),
            (
                "none of two completed",
                Facts {
                    reviewers: reviewers(&[("claude", false), ("codex", false)]),
                    rounds_run: 0,
                    rounds: vec![],
                    ..healthy()
                },
                Some(ReliabilityReason::QuorumLost),
            ),
            (
                "quorum wins over the rounds the ledger claims",
                Facts {
                    reviewers: reviewers(&[("claude", true), ("codex", false), ("kimi", false)]),
                    ..healthy()
                },
                Some(ReliabilityReason::QuorumLost),
            ),
            (
                "convergence switched off",
                Facts {
                    convergence_enabled: false,
                    rounds_run: 0,
                    rounds: vec![],
                    ..healthy()
                },
                Some(ReliabilityReason::ConvergenceDisabled),
            ),
            (
                "interrupted before round 1 was recorded",
                Facts {
                    rounds_run: 0,
                    rounds: vec![],
                    ..healthy()
                },
                Some(ReliabilityReason::ConvergenceNotRun),
            ),
            (
                "round 1 answered by one reviewer only",
                Facts {
                    rounds_run: 1,
                    rounds: vec![round(1, &["claude", "codex", "kimi"], &["codex"])],
                    ..healthy()
                },
                Some(ReliabilityReason::ReviewersFailed),
            ),
            (
                "round 1 answered by nobody",
                Facts {
                    rounds_run: 1,
                    rounds: vec![round(1, &["claude", "codex"], &[])],
                    ..healthy()
                },
                Some(ReliabilityReason::ReviewersFailed),
            ),
            (
                "the one answer came from the only owner of items",
                Facts {
                    rounds_run: 1,
                    rounds: vec![round(1, &["codex"], &["codex"])],
                    item_owners: owners(&["codex"]),
                    ..healthy()
                },
                Some(ReliabilityReason::ReviewersFailed),
            ),
            (
                "one answer suffices when only the others own items",
                Facts {
                    rounds_run: 1,
                    rounds: vec![round(1, &["codex"], &["codex"])],
                    item_owners: owners(&["claude", "kimi"]),
                    ..healthy()
                },
                None,
            ),
            (
                "a failed later round does not undo round 1",
                Facts {
                    rounds: vec![
                        round(1, &["claude", "codex", "kimi"], &["claude", "kimi"]),
                        round(2, &["codex", "kimi"], &[]),
                    ],
                    ..healthy()
                },
                None,
            ),
        ];
        for (name, facts, expected) in rows {
            let block = judge(&facts);
            assert_eq!(block.reason, expected, "{name}: {}", block.detail);
            assert_eq!(block.cross_verified, expected.is_none(), "{name}");
            assert_eq!(block.rounds_run, facts.rounds_run, "{name}");
            assert_eq!(block.rounds, facts.rounds, "{name}");
            assert_eq!(block.reviewers_required, REVIEWERS_REQUIRED, "{name}");
        }
    }

    #[test]
    fn the_block_counts_reviewers_and_says_why_in_one_sentence() {
        let block = judge(&Facts {
            reviewers: reviewers(&[("claude", true), ("codex", false), ("kimi", false)]),
            rounds_run: 0,
            rounds: vec![],
            ..healthy()
        });
        assert_eq!(
            block,
            Reliability {
                cross_verified: false,
                reason: Some(ReliabilityReason::QuorumLost),
                detail: "Only 1 of 3 reviewers completed their own work; cross-verification \
                         needs 2, so each finding is one model's word."
                    .to_owned(),
                reviewers_rostered: 3,
                reviewers_completed: 1,
                reviewers_required: 2,
                rounds_run: 0,
                rounds: vec![],
            }
        );
        let failed = judge(&Facts {
            rounds_run: 1,
            rounds: vec![round(1, &["claude", "codex", "kimi"], &["codex"])],
            ..healthy()
        });
        assert_eq!(
            failed.detail,
            "Convergence round 1 ran, but only 1 of 3 reviewers asked answered, so no other \
             reviewer checked the findings of `codex`; those findings are one model's word."
        );
    }

    #[test]
    fn the_diagnostic_line_is_lowercase_with_no_final_period() {
        let lost = judge(&Facts {
            reviewers: reviewers(&[("claude", true), ("kimi", false)]),
            ..Facts::default()
        });
        assert_eq!(
            lost.line(),
            "not cross-verified (quorum-lost): only 1 of 2 reviewers completed their own work; \
             cross-verification needs 2, so each finding is one model's word"
        );
        assert_eq!(
            judge(&healthy()).line(),
            "cross-verified: 3 of 3 reviewers completed their own work and checked each other's \
             findings in 2 convergence rounds"
        );
    }

    #[test]
    fn only_a_roster_of_two_or_more_falls_short() {
        let single = judge(&Facts {
            reviewers: reviewers(&[("claude", true)]),
            ..Facts::default()
        });
        assert!(!single.cross_verified && !single.falls_short());
        let lost = judge(&Facts {
            reviewers: reviewers(&[("claude", true), ("kimi", false)]),
            ..Facts::default()
        });
        assert!(lost.falls_short());
        assert!(!judge(&healthy()).falls_short());
    }

    #[test]
    fn the_block_serialises_to_the_schema_and_back() {
        for facts in [
            healthy(),
            Facts {
                rounds_run: 0,
                rounds: vec![],
                ..healthy()
            },
        ] {
            let block = judge(&facts);
            let value = serde_json::to_value(&block).unwrap();
            let schema: serde_json::Value =
                serde_json::from_str(crate::schema::text("final-report-v2.1.schema.json").unwrap())
                    .unwrap();
            let mut wrapper = schema.clone();
            wrapper["$ref"] = "#/$defs/Reliability".into();
            let root = wrapper.as_object_mut().unwrap();
            for key in [
                "required",
                "properties",
                "allOf",
                "additionalProperties",
                "type",
            ] {
                root.remove(key);
            }
            let validator = jsonschema::validator_for(&wrapper).unwrap();
            assert!(validator.is_valid(&value), "{value}");
            assert_eq!(
                serde_json::from_value::<Reliability>(value.clone()).unwrap(),
                block
            );
            assert_eq!(value.get("reason").is_some(), !block.cross_verified);
        }
    }
}
