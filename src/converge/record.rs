//! `okstra converge record`: each reviewer's verdict table, read from its
//! Result Path, mapped from labels back to items and written into the
//! ledger.
//!
//! A table row is `| Item 3 | AGREE | evidence | addition |` (`Item 3b` for
//! a member of a group). A row whose verdict is not one of the three words,
//! that has no evidence, or a `SUPPLEMENT` without its addition is
//! malformed; a label answered twice is ambiguous; either is "no answer" for
//! that item, as is a label with no row. Each is reported by label and line.
//! Evidence that reads `same claim as Item 3a` is the evidence given there
//! (and records which claim it named). Each verdict's anchors are checked
//! against the run's snapshot as it is recorded, and kept with it. A
//! reviewer whose round's dispatch ended without completing, left no
//! result, was not dispatched or has not ended is unavailable (with the
//! word `derive::reviewers::outcome` gives), and its silence keeps nothing
//! open. Recording a round again replaces that round's verdicts: the
//! command is idempotent.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{Context as _, Result, bail};
use serde::Serialize;

use crate::catalog::DispatchKind;
use crate::items;
use crate::run::layout::RunLayout;
use crate::run::roster::DispatchPaths;

use super::ledger::{self, Ledger, LedgerItem, NoAnswer, Sent, Unavailable, VerdictEntry};

use super::{RunInfo, apply_rules, check_round, note_unavailable};
use crate::run::records::has_content;
use crate::vocab::{StopReason, Verdict};

/// The result block markers a read-only CLI prints its result in.
const RESULT_BEGIN: &str = "=== OKSTRA RESULT BEGIN ===";
const RESULT_END: &str = "=== OKSTRA RESULT END ===";

/// One row (or missing row) that counted as no answer, or a row that was
/// ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RowProblem {
    pub reviewer: String,
    pub label: Option<String>,
    /// 1-based line in the reviewer's Result Path; `None` for a missing row.
    pub line: Option<usize>,
    pub message: String,
}

impl RowProblem {
    /// `codex, Item 3, line 12: …` for the terminal.
    pub fn line(&self) -> String {
        use std::fmt::Write as _;

        let mut at = format!("`{}`", self.reviewer);
        if let Some(label) = &self.label {
            let _ = write!(at, ", `{label}`");
        }
        if let Some(line) = self.line {
            let _ = write!(at, ", line {line}");
        }
        format!("{at}: {}", self.message)
    }
}

/// What recording a round did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub round: u32,
    /// Verdicts written for this round.
    pub verdicts: usize,
    pub problems: Vec<RowProblem>,
    /// Reviewers that could not answer this round.
    pub unavailable: Vec<Unavailable>,
    /// Item ids still open after the round, in ledger order.
    pub open: Vec<String>,
    pub stopped_because: Option<StopReason>,
}

/// One parsed table row.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    line: usize,
    label: String,
    verdict: String,
    evidence: String,
    addition: String,
    /// The item whose row this one's evidence is (`same claim as …`).
    same_as: Option<String>,
}

/// Record round `round` of the run in `run_dir` from its plan and the
/// reviewers' Result Paths.
pub fn record(run_dir: &Path, round: u32) -> Result<Outcome> {
    let mut info = RunInfo::load_parts(run_dir, crate::run::Parts::ROUNDS)?;
    check_round(&info, round)?;
    let plan_path = RunLayout::of(info.dir()).round_plan(round);
    let Some(plan) = info.records.plans.remove(&round) else {
        bail!(
            "round `{round}` has no plan `{}`; run `okstra converge plan {} --round {round}` first",
            plan_path.display(),
            run_dir.display()
        );
    };
    let ledger_path = RunLayout::of(info.dir()).convergence_ledger();
    let mut ledger = info.records.ledger.take().unwrap_or_else(|| Ledger {
        schema_version: ledger::FORMAT_VERSION,
        ..Ledger::default()
    });
    if ledger.rounds_run + 1 < round {
        bail!(
            "cannot record round `{round}`: the ledger `{}` has {} rounds recorded; record round \
             {} first",
            ledger_path.display(),
            ledger.rounds_run,
            ledger.rounds_run + 1
        );
    }
    // Idempotent: forget whatever this round (or a later one) wrote before.
    ledger
        .unavailable
        .retain(|u| u.round.is_none_or(|r| r < round));
    for item in &mut ledger.items {
        item.verdicts.retain(|v| v.round < round);
        item.no_answer.retain(|n| n.round < round);
        item.sent_to.retain(|s| s.round < round);
    }
    let mut index: HashMap<String, usize> = ledger
        .items
        .iter()
        .enumerate()
        .map(|(position, item)| (item.item_id.clone(), position))
        .collect();
    for planned in &plan.items {
        let position = *index.entry(planned.item_id.clone()).or_insert_with(|| {
            ledger.items.push(LedgerItem {
                item_id: planned.item_id.clone(),
                owner: planned.owner.clone(),
                section: Some(planned.section.clone()),
                text: Some(planned.text.clone()),
                evidence: planned.evidence.clone(),
                truncated: planned.truncated,
                anchoring: planned.anchoring.clone(),
                grouping: planned.grouping.clone(),
                ..LedgerItem::default()
            });
            ledger.items.len() - 1
        });
        if !planned.reviewers.is_empty() {
            ledger.items[position].sent_to.push(Sent {
                round,
                reviewers: planned.reviewers.clone(),
            });
        }
    }

    let mut problems = Vec::new();
    let mut unavailable = Vec::new();
    let mut verdicts = 0;
    // Where each verdict of this round went: (item, verdict) positions.
    let mut recorded: Vec<(usize, usize)> = Vec::new();
    for reviewer in &plan.reviewers {
        // The plan names who reviewed; the run decides where that reviewer's
        // result is and which provider and model it had to run on, so an
        // edited plan cannot point record at another file or assignment.
        let Some(analyser) = info
            .analysers
            .iter()
            .find(|a| a.assignment.worker_id == reviewer.worker_id)
        else {
            bail!(
                "round plan `{}` names reviewer `{}`, who is not an analyser of this run",
                plan_path.display(),
                reviewer.worker_id
            );
        };
        let dispatch_name =
            DispatchKind::Reverify(round).dispatch_name(&analyser.assignment.dispatch_name);
        if reviewer.dispatch_name != dispatch_name {
            bail!(
                "round plan `{}` gives reviewer `{}` the dispatch name `{}`; this run expects `{dispatch_name}`",
                plan_path.display(),
                reviewer.worker_id,
                reviewer.dispatch_name
            );
        }
        let result_path = DispatchPaths::new(info.dir(), &dispatch_name).result_path;
        let attempt = info.latest_attempt(&dispatch_name);
        if let Err(why) = crate::derive::reviewers::outcome(attempt, has_content(&result_path)) {
            unavailable.push(Unavailable {
                worker_id: reviewer.worker_id.clone(),
                terminal_status: why.as_str().to_owned(),
                round: Some(round),
            });
            continue;
        }
        // A stand-in for the rostered provider or model never counts.
        let substitute = attempt.is_some_and(|record| {
            record
                .provider
                .is_some_and(|p| p != analyser.assignment.provider)
                || record
                    .model
                    .as_deref()
                    .is_some_and(|m| m != analyser.assignment.model_execution_value)
        });
        let text = items::read_result(&result_path)
            .with_context(|| format!("cannot read result `{}`", result_path.display()))?;
        let labels: HashMap<&str, &str> = reviewer
            .labels
            .iter()
            .map(|l| (l.label.as_str(), l.item_id.as_str()))
            .collect();
        let (answers, found) = answers(&text, &labels, &reviewer.worker_id, &reviewer.own_context);
        problems.extend(found);
        for label in &reviewer.labels {
            let Some(&position) = index.get(&label.item_id) else {
                continue;
            };
            let item = &mut ledger.items[position];
            match answers.get(label.label.as_str()) {
                Some(Ok((verdict, row))) => {
                    let verdict = *verdict;
                    item.verdicts.push(VerdictEntry {
                        round,
                        reviewer: reviewer.worker_id.clone(),
                        verdict,
                        evidence: row.evidence.clone(),
                        addition: (!row.addition.is_empty()).then(|| row.addition.clone()),
                        substitute,
                        anchoring: ledger::Anchoring::default(),
                        same_as: row.same_as.clone(),
                    });
                    recorded.push((position, item.verdicts.len() - 1));
                    verdicts += 1;
                }
                Some(Err(reason)) => item.no_answer.push(NoAnswer {
                    round,
                    reviewer: reviewer.worker_id.clone(),
                    reason: reason.clone(),
                }),
                None => {
                    problems.push(RowProblem {
                        reviewer: reviewer.worker_id.clone(),
                        label: Some(label.label.clone()),
                        line: None,
                        message: "no row for this label; counted as no answer".to_owned(),
                    });
                    item.no_answer.push(NoAnswer {
                        round,
                        reviewer: reviewer.worker_id.clone(),
                        reason: "no row".to_owned(),
                    });
                }
            }
        }
    }
    // Every verdict's anchors, checked once, against the run's snapshot.
    let texts: Vec<&str> = recorded
        .iter()
        .map(|&(item, verdict)| ledger.items[item].verdicts[verdict].evidence.as_str())
        .collect();
    let checked = crate::anchors::check_texts(info.run(), &texts)
        .context("cannot check the verdicts' anchors")?;
    for ((item, verdict), anchoring) in recorded.into_iter().zip(checked) {
        ledger.items[item].verdicts[verdict].anchoring = anchoring.into();
    }
    ledger.unavailable.extend(unavailable.iter().cloned());
    // A round its plan says does not run adds no round.
    if plan.stopped_because.is_none() {
        ledger.rounds_run = round;
    }
    ledger.schema_version = ledger::FORMAT_VERSION;
    note_unavailable(&info, &mut ledger);
    let open = apply_rules(&info, &mut ledger);
    ledger::write(&ledger_path, ledger::LEDGER_SCHEMA, &ledger)?;
    let stopped_because = ledger.stopped_because;
    ledger::discard((ledger, plan));
    Ok(Outcome {
        round,
        verdicts,
        problems,
        unavailable,
        open,
        stopped_because,
    })
}

fn parse_verdict(cell: &str) -> Option<Verdict> {
    cell.parse().ok()
}

/// Each label's verdict and row, or why it counts as no answer.
type Answers = HashMap<String, Result<(Verdict, Row), String>>;

/// Every label's answer in `text`: the row, or why it is no answer; and the
/// problems found (malformed, duplicated and unknown rows). `own` are the
/// reviewer's own claims its prompt showed as context (item ids), which
/// `same claim as my <id>` may name.
fn answers(
    text: &str,
    labels: &HashMap<&str, &str>,
    reviewer: &str,
    own: &[String],
) -> (Answers, Vec<RowProblem>) {
    let mut answers: Answers = HashMap::new();
    let mut first_line: HashMap<String, usize> = HashMap::new();
    let mut problems = Vec::new();
    let problem = |label: &str, line: usize, message: String| RowProblem {
        reviewer: reviewer.to_owned(),
        label: Some(label.to_owned()),
        line: Some(line),
        message,
    };
    for row in rows(result_block(text)) {
        let Some(label) = normalise_label(&row.label) else {
            continue; // a header or a row of some other table
        };
        if !labels.contains_key(label.as_str()) {
            problems.push(problem(
                &label,
                row.line,
                "this label was not sent to this reviewer; row ignored".to_owned(),
            ));
            continue;
        }
        if let Some(first) = first_line.get(&label) {
            let message = format!(
                "answered twice (lines {first} and {}); counted as no answer",
                row.line
            );
            problems.push(problem(&label, row.line, message.clone()));
            answers.insert(label, Err(message));
            continue;
        }
        first_line.insert(label.clone(), row.line);
        let checked = match parse_verdict(&row.verdict) {
            None => Err(format!(
                "verdict `{}` is not `AGREE`, `DISAGREE` or `SUPPLEMENT`; counted as no answer",
                row.verdict
            )),
            Some(_) if row.evidence.is_empty() => {
                Err("the row gives no evidence; counted as no answer".to_owned())
            }
            Some(Verdict::Supplement) if row.addition.is_empty() => {
                Err("a `SUPPLEMENT` without its addition; counted as no answer".to_owned())
            }
            Some(verdict) => Ok(verdict),
        };
        match checked {
            Err(message) => {
                problems.push(problem(&label, row.line, message.clone()));
                answers.insert(label, Err(message));
            }
            Ok(verdict) => {
                let mut row = row;
                if let Some(named) = same_as_own(&row.evidence) {
                    let item = format!("{reviewer}:{named}");
                    if own.contains(&item) {
                        row.same_as = Some(item);
                    } else {
                        problems.push(problem(
                            &label,
                            row.line,
                            format!(
                                "`same claim as my {named}` names no claim of yours shown beside \
                                 this one; the verdict stands, merging nothing"
                            ),
                        ));
                    }
                }
                answers.insert(label, Ok((verdict, row)));
            }
        }
    }
    resolve_same_as(&mut answers, labels, &mut problems, reviewer);
    (answers, problems)
}

/// `same claim as Item 3a` → the label it names, when the evidence says
/// only that.
fn same_as_label(evidence: &str) -> Option<String> {
    let lower = evidence.trim().trim_end_matches('.').to_lowercase();
    let rest = lower
        .strip_prefix("same claim as ")
        .or_else(|| lower.strip_prefix("same as "))?;
    normalise_label(rest)
}

/// `same claim as my F-2; …` → `F-2`: the reviewer's own claim that an
/// Evidence cell begins by naming (what follows is the reviewer's check,
/// kept as the evidence).
fn same_as_own(evidence: &str) -> Option<&str> {
    const PREFIX: &str = "same claim as my ";
    let text = evidence.trim_start();
    let head = text.get(..PREFIX.len())?;
    if !head.eq_ignore_ascii_case(PREFIX) {
        return None;
    }
    let rest = text[PREFIX.len()..].trim_start().trim_start_matches('`');
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
        .unwrap_or(rest.len());
    let id = rest[..end].trim_end_matches(['.', '-', '_']);
    (!id.is_empty()).then_some(id)
}

/// Give every row whose evidence is `same claim as Item N` the evidence of
/// that row; one that names a label without a usable answer (or itself) is
/// no answer.
fn resolve_same_as(
    answers: &mut Answers,
    labels: &HashMap<&str, &str>,
    problems: &mut Vec<RowProblem>,
    reviewer: &str,
) {
    let mut referring: Vec<(String, String)> = answers
        .iter()
        .filter_map(|(label, answer)| {
            let (_, row) = answer.as_ref().ok()?;
            Some((label.clone(), same_as_label(&row.evidence)?))
        })
        .collect();
    referring.sort();
    // Decided on the rows as written, so the outcome never depends on the
    // order they are resolved in.
    let targets: Vec<(String, String, Option<String>)> = referring
        .into_iter()
        .map(|(label, named)| {
            let target = answers
                .get(&named)
                .and_then(|answer| answer.as_ref().ok())
                .filter(|(_, row)| named != label && same_as_label(&row.evidence).is_none())
                .map(|(_, row)| row.evidence.clone());
            (label, named, target)
        })
        .collect();
    for (label, named, target) in targets {
        let Some(Ok((_, row))) = answers.get_mut(&label) else {
            continue;
        };
        if let Some(evidence) = target {
            row.same_as = labels.get(named.as_str()).map(|id| (*id).to_owned());
            row.evidence = evidence;
        } else {
            let line = row.line;
            let message = format!(
                "`same claim as {named}`, which has no answer of its own; counted as no answer"
            );
            problems.push(RowProblem {
                reviewer: reviewer.to_owned(),
                label: Some(label.clone()),
                line: Some(line),
                message: message.clone(),
            });
            answers.insert(label, Err(message));
        }
    }
}

/// The part of `text` between the result markers, or all of it. Line numbers
/// stay those of the whole file.
fn result_block(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let numbered = text
        .lines()
        .enumerate()
        .map(|(index, line)| (index + 1, line));
    let begin = text.lines().position(|line| line.trim() == RESULT_BEGIN);
    let end = text.lines().position(|line| line.trim() == RESULT_END);
    let (skip, stop) = match (begin, end) {
        (Some(begin), Some(end)) if begin < end => (begin + 1, end),
        _ => (0, usize::MAX),
    };
    numbered.skip(skip).take(stop.saturating_sub(skip))
}

/// The body rows of every table outside fenced code, as cells.
fn rows<'a>(lines: impl Iterator<Item = (usize, &'a str)>) -> Vec<Row> {
    let mut found = Vec::new();
    let mut in_fence = false;
    for (line, raw) in lines {
        let trimmed = raw.trim();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence || !trimmed.starts_with('|') {
            continue;
        }
        let cells = split_cells(trimmed);
        let mut cells = cells.into_iter();
        let label = cells.next().unwrap_or_default();
        let verdict = cells
            .next()
            .unwrap_or_default()
            .trim_matches(|c| c == '*' || c == '`')
            .trim()
            .to_owned();
        let evidence = cells.next().unwrap_or_default();
        let addition = cells.collect::<Vec<_>>().join(" | ");
        found.push(Row {
            line,
            label,
            verdict,
            evidence,
            addition,
            same_as: None,
        });
    }
    found
}

/// The cells of `| a | b \| c |`, trimmed, with `\|` kept as `|`.
fn split_cells(line: &str) -> Vec<String> {
    let inner = line.strip_prefix('|').unwrap_or(line);
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '\\' if chars.peek() == Some(&'|') => {
                cell.push('|');
                chars.next();
            }
            '|' => cells.push(std::mem::take(&mut cell).trim().to_owned()),
            _ => cell.push(ch),
        }
    }
    cells.push(cell.trim().to_owned());
    cells
}

/// `Item 7`, `**Item 7**`, `` `item 7` `` or `7` → `Item 7`; `Item 3B` →
/// `Item 3b` (a member of a group).
fn normalise_label(cell: &str) -> Option<String> {
    let cell = cell.trim().trim_matches(|c| c == '*' || c == '`').trim();
    let rest = match cell.get(..4) {
        Some(prefix) if prefix.eq_ignore_ascii_case("item") => cell[4..].trim(),
        _ => cell,
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let letters = &rest[digits..];
    if digits == 0 || !letters.bytes().all(|b| b.is_ascii_alphabetic()) {
        return None;
    }
    let number: u32 = rest[..digits].parse().ok()?;
    Some(format!("Item {number}{}", letters.to_ascii_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels() -> HashMap<&'static str, &'static str> {
        [
            ("Item 1", "claude:F-1"),
            ("Item 2", "claude:F-2"),
            ("Item 3", "codex:1.1"),
            ("Item 4", "codex:1.2"),
        ]
        .into_iter()
        .collect()
    }

    #[test]
    fn rows_map_to_labels_and_bad_rows_are_no_answer() {
        let text = "\
# kimi — convergence round 1

| Item | Verdict | Evidence | Addition |
|---|---|---|---|
| Item 1 | AGREE | src/a.rs:3 shows it | |
| **Item 2** | MAYBE | src/a.rs:9 | |
| Item 3 | SUPPLEMENT | `grep -n x src` \\| wc | also covers y |
| Item 3 | DISAGREE | src/b.rs:1 | |
| Item 9 | AGREE | src/c.rs:1 | |

```
| Item 4 | AGREE | inside a fence | |
```
";
        let (answers, problems) = answers(text, &labels(), "kimi", &[]);
        let (verdict, row) = answers["Item 1"].as_ref().unwrap();
        assert_eq!((row.line, *verdict), (5, Verdict::Agree));
        assert!(answers["Item 2"].as_ref().unwrap_err().contains("`MAYBE`"));
        assert!(
            answers["Item 3"]
                .as_ref()
                .unwrap_err()
                .contains("lines 7 and 8")
        );
        assert!(!answers.contains_key("Item 4"));
        let lines: Vec<_> = problems.iter().map(|p| (p.label.clone(), p.line)).collect();
        assert_eq!(
            lines,
            vec![
                (Some("Item 2".to_owned()), Some(6)),
                (Some("Item 3".to_owned()), Some(8)),
                (Some("Item 9".to_owned()), Some(9)),
            ]
        );
    }

    #[test]
    fn escaped_pipes_stay_in_the_cell_and_missing_parts_are_malformed() {
        let text = "\
| Item 1 | SUPPLEMENT | `grep -n x src \\| wc -l` | adds z |
| Item 2 | SUPPLEMENT | src/a.rs:1 | |
| Item 3 | AGREE |  | |
| 4 | DISAGREE | src/x.rs:2 is empty |
";
        let (answers, _) = answers(text, &labels(), "kimi", &[]);
        let (_, row) = answers["Item 1"].as_ref().unwrap();
        assert_eq!(row.evidence, "`grep -n x src | wc -l`");
        assert_eq!(row.addition, "adds z");
        assert!(answers["Item 2"].as_ref().unwrap_err().contains("addition"));
        assert!(
            answers["Item 3"]
                .as_ref()
                .unwrap_err()
                .contains("no evidence")
        );
        assert!(answers["Item 4"].is_ok());
    }

    #[test]
    fn only_the_result_block_is_read_when_there_is_one() {
        let text = "\
| Item 1 | DISAGREE | draft | |
=== OKSTRA RESULT BEGIN ===
| Item 1 | AGREE | src/a.rs:1 | |
=== OKSTRA RESULT END ===
";
        let (answers, problems) = answers(text, &labels(), "kimi", &[]);
        assert_eq!(answers["Item 1"].as_ref().unwrap().1.line, 3);
        assert!(problems.is_empty());
    }

    #[test]
    fn same_claim_as_my_names_the_reviewers_own_claim_shown_beside() {
        let labels: HashMap<&str, &str> = [("Item 1", "codex:F-1"), ("Item 2", "codex:F-2")]
            .into_iter()
            .collect();
        let own = vec!["claude:F-002".to_owned()];
        let text = "\
| Item 1 | AGREE | Same claim as my `F-002`; `sed -n 18p src/inventory.py` \"if x:\" | |
| Item 2 | AGREE | same claim as my F-009. | |
";
        let (answers, problems) = answers(text, &labels, "claude", &own);
        let (_, row) = answers["Item 1"].as_ref().unwrap();
        assert_eq!(row.same_as.as_deref(), Some("claude:F-002"));
        // The reviewer's check stays its evidence.
        assert!(row.evidence.contains("`sed -n 18p"), "{}", row.evidence);
        // An id that was not shown merges nothing; the verdict stands.
        let (_, row) = answers["Item 2"].as_ref().unwrap();
        assert_eq!(row.same_as, None);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].message.contains("`same claim as my F-009`"));
        for (evidence, named) in [
            ("same claim as my F-1", Some("F-1")),
            ("same claim as my F-1, and more", Some("F-1")),
            ("SAME CLAIM AS MY 1.2: yes", Some("1.2")),
            ("same claim as Item 3a", None),
            ("same claim as my", None),
            ("it is the same claim as my F-1", None),
        ] {
            assert_eq!(same_as_own(evidence), named, "{evidence}");
        }
    }

    #[test]
    fn labels_normalise() {
        assert_eq!(normalise_label("Item 7").as_deref(), Some("Item 7"));
        assert_eq!(normalise_label("**item  7**").as_deref(), Some("Item 7"));
        assert_eq!(normalise_label("`7`").as_deref(), Some("Item 7"));
        assert_eq!(normalise_label("Item"), None);
        assert_eq!(normalise_label("F-001"), None);
        assert_eq!(normalise_label("Item -1"), None);
        assert_eq!(normalise_label("Item 3B").as_deref(), Some("Item 3b"));
        assert_eq!(
            normalise_label("**Item 12ab**").as_deref(),
            Some("Item 12ab")
        );
        assert_eq!(normalise_label("Items 3a–3c"), None);
        assert_eq!(normalise_label("1.1"), None);
    }

    #[test]
    fn same_claim_as_takes_the_evidence_it_names() {
        let labels: HashMap<&str, &str> = [
            ("Item 3a", "claude:F-1"),
            ("Item 3b", "codex:1"),
            ("Item 3c", "kimi:K-1"),
            ("Item 4", "kimi:K-2"),
        ]
        .into_iter()
        .collect();
        let text = "\
| Item 3a | AGREE | src/a.py:3 `x = 1` is unguarded | |
| Item 3b | AGREE | Same claim as item 3A. | |
| Item 3c | DISAGREE | same claim as Item 4 | |
| Item 4 | AGREE | same as Item 3c | |
";
        let (answers, problems) = answers(text, &labels, "grok", &[]);
        let (verdict, row) = answers["Item 3b"].as_ref().unwrap();
        assert_eq!(*verdict, Verdict::Agree);
        assert_eq!(row.evidence, "src/a.py:3 `x = 1` is unguarded");
        assert_eq!(row.same_as.as_deref(), Some("claude:F-1"));
        // Two rows naming each other have no evidence of their own.
        assert!(answers["Item 3c"].is_err() && answers["Item 4"].is_err());
        assert_eq!(problems.len(), 2, "{problems:?}");
    }
}
