//! The report's findings as the outputs see them: SARIF, the gate and the
//! pull-request review all rank, place and identify a finding the same way,
//! here.
//!
//! A finding is one `consensus` or `differences` row of a valid report, with
//! what the run's records add to it:
//! - its **class**: a consensus row's `convergence`; a difference row is
//!   `contested` (the report records a disagreement), or `worker-unique`
//!   when the ledger says every source item it knows is;
//! - its **severity**: the highest of the row's own `severity` and its source
//!   items' (see `severity`), so a row can never rank below what its workers
//!   said; a finding with neither is unranked and counts as `info`;
//! - its **rule** (`okstra/finding`, `okstra/root-cause`, `okstra/risk`,
//!   `okstra/defect`) from the sections its source items sit in: a class in
//!   the rule would make a finding that moves from contested to consensus a
//!   new alert;
//! - who **found** it (its source items' owners), who **agreed** and who
//!   **disagreed** (the convergence ledger's verdicts);
//! - its **anchors** (`anchor::of_evidence` over its source items' evidence)
//!   and, for a run scoped to a change, whether it is **pre-existing** (no
//!   anchor meets a changed hunk);
//! - its **fingerprint**, which stays the same when a later run reports the
//!   same finding on an unchanged line:
//!   `sha256("okstra/v1\n" + rule + "\n" + path + "\n" + line)` in hex, where
//!   `path` is the first anchor's (anchors sorted) and `line` the content of
//!   its first line with every whitespace run made one space and the ends
//!   trimmed, then `:N` for the N-th finding of the run with that hash. When
//!   the line cannot be read (the project is not there) `@<line number>`
//!   stands in for it. An unanchored finding hashes `unanchored`, the run id
//!   and its row id instead: it is never merged with another run's. The
//!   model's wording never enters it.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::Value;

use super::anchor::{self, Anchor};
use crate::catalog::Role;
use crate::converge::ledger::{self, FinalClass, Ledger};
use crate::digest::sha256_hex;
use crate::fsread::{self, Follow, LineReader};
use crate::items::{self, Evidence};
use crate::run::Run;
use crate::run::layout::RunLayout;
use crate::severity::{self, Severity};

/// Most bytes of a source line read for a fingerprint.
const MAX_LINE_BYTES: usize = 4096;

closed_set! {
    /// The kind of claim a finding is: its SARIF rule.
    Rule {
        Finding => "finding",
        RootCause => "root-cause",
        Risk => "risk",
        Defect => "defect",
    }
}

impl Rule {
    /// The SARIF `ruleId`.
    pub fn id(self) -> String {
        format!("okstra/{self}")
    }

    /// The rule of an item under the `## ` heading `section`.
    pub fn of_section(section: &str) -> Rule {
        let section = section.to_ascii_lowercase();
        if section.contains("defect") {
            Rule::Defect
        } else if section.contains("root cause") || section.contains("hypothes") {
            Rule::RootCause
        } else if section.contains("risk") {
            Rule::Risk
        } else {
            Rule::Finding
        }
    }

    /// The more specific of two rules (a row citing a defect and a finding
    /// is a defect).
    fn specificity(self) -> u8 {
        match self {
            Rule::Finding => 0,
            Rule::Risk => 1,
            Rule::RootCause => 2,
            Rule::Defect => 3,
        }
    }

    /// One line for the SARIF rule's short description.
    pub fn description(self) -> &'static str {
        match self {
            Rule::Finding => "A finding of an okstra run",
            Rule::RootCause => "A root cause or hypothesis of an okstra run",
            Rule::Risk => "A risk an okstra run found",
            Rule::Defect => "A defect an okstra run's verifiers found",
        }
    }
}

/// Which table of the report a finding is a row of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Table {
    Consensus,
    Differences,
}

/// One finding of the report.
#[derive(Debug, Clone)]
pub struct Finding {
    /// The row id (`C-002`, `D-001`).
    pub row: String,
    pub rule: Rule,
    pub class: FinalClass,
    /// The highest of the row's and its source items' severities.
    pub severity: Option<Severity>,
    /// The row's `finding` (or a difference's `topic`).
    pub text: String,
    pub suggested_fix: Option<String>,
    pub source_items: Vec<String>,
    pub found_by: Vec<String>,
    pub agreed_by: Vec<String>,
    pub disagreed_by: Vec<String>,
    /// Sorted; empty when the finding is unanchored.
    pub anchors: Vec<Anchor>,
    pub fingerprint: String,
    /// `Some(true)` when the run was scoped to a change and no anchor meets
    /// a changed hunk; `None` without a change record or without anchors.
    pub pre_existing: Option<bool>,
}

impl Finding {
    /// The severity the gate ranks it at (unranked counts as `info`).
    pub fn rank(&self) -> Severity {
        self.severity.unwrap_or(Severity::Info)
    }

    pub fn is_anchored(&self) -> bool {
        !self.anchors.is_empty()
    }

    /// One line: `C-002 critical full-consensus src/a.rs:94 text`.
    pub fn line(&self) -> String {
        let place = self
            .anchors
            .first()
            .map_or_else(|| "(unanchored)".to_owned(), Anchor::label);
        let text = crate::fsread::clip(&self.text, 200);
        format!(
            "{} {} {} {place} {}",
            self.row,
            self.severity.map_or("unranked", Severity::as_str),
            self.class,
            crate::fsread::escape(&text)
        )
    }
}

/// Whether the run's findings were checked by a quorum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    pub cross_verified: bool,
    /// One line for people.
    pub detail: String,
}

/// A valid report's findings, with the run they came from.
#[derive(Debug)]
pub struct Findings {
    pub list: Vec<Finding>,
    /// The run, when the report sits in one.
    pub run: Option<Run>,
}

/// What the run's records say about one source item.
#[derive(Debug, Default)]
struct Source {
    section: Option<String>,
    evidence: Vec<Evidence>,
    severity: Option<Severity>,
    class: Option<FinalClass>,
    agreed: Vec<String>,
    disagreed: Vec<String>,
}

/// The findings of the valid report `report`, which sits in `run_dir` when
/// one was found.
pub fn collect(report: &Value, run_dir: Option<&Path>) -> Result<Findings> {
    let run = run_dir.map(Run::open).transpose()?;
    let sources = run.as_ref().map(sources).unwrap_or_default();
    let project_root = run.as_ref().and_then(readable_root);
    let recorded_root = run.as_ref().map(|run| run.project_root.as_path());
    let mut list = Vec::new();
    for (table, key) in [
        (Table::Consensus, "consensus"),
        (Table::Differences, "differences"),
    ] {
        for row in report
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            list.push(finding(table, row, &sources, recorded_root, run.as_ref()));
        }
    }
    // The lines as the workers saw them: at the recorded commit when the
    // tree was clean then, else as the files are now.
    let commit = run
        .as_ref()
        .and_then(|run| run.source.as_ref())
        .filter(|source| source.clean)
        .map(|source| source.commit.as_str());
    let lines = project_root
        .as_deref()
        .map(|root| read_lines(root, commit, &list))
        .unwrap_or_default();
    let run_id = run.as_ref().map_or_else(
        || {
            report
                .pointer("/header/runId")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        },
        |run| run.run_id.clone(),
    );
    let mut seen: HashMap<String, u32> = HashMap::new();
    for finding in &mut list {
        let hash = fingerprint_hash(finding, &lines, &run_id);
        let count = seen.entry(hash.clone()).or_insert(0);
        *count += 1;
        finding.fingerprint = format!("{hash}:{count}");
    }
    Ok(Findings { list, run })
}

/// One row as a finding (fingerprint filled in later).
fn finding(
    table: Table,
    row: &Value,
    sources: &HashMap<String, Source>,
    recorded_root: Option<&Path>,
    run: Option<&Run>,
) -> Finding {
    let text = |key: &str| row.get(key).and_then(Value::as_str).map(str::to_owned);
    let source_items: Vec<String> = row
        .get("sourceItems")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    let known: Vec<&Source> = source_items
        .iter()
        .filter_map(|item| sources.get(item))
        .collect();
    let class = match table {
        Table::Consensus => text("convergence")
            .and_then(|word| word.parse::<FinalClass>().ok())
            .unwrap_or(FinalClass::WorkerUnique),
        Table::Differences => {
            let classes: Vec<FinalClass> = known.iter().filter_map(|s| s.class).collect();
            if !classes.is_empty() && classes.iter().all(|c| *c == FinalClass::WorkerUnique) {
                FinalClass::WorkerUnique
            } else {
                FinalClass::Contested
            }
        }
    };
    let row_severity = text("severity").and_then(|word| word.parse::<Severity>().ok());
    let severity = known
        .iter()
        .filter_map(|source| source.severity)
        .chain(row_severity)
        .max();
    let rule = known
        .iter()
        .filter_map(|source| source.section.as_deref())
        .map(Rule::of_section)
        .max_by_key(|rule| rule.specificity())
        .unwrap_or(Rule::Finding);
    let mut found_by: Vec<String> = Vec::new();
    for item in &source_items {
        if let Some((owner, _)) = item.split_once(':') {
            push_once(&mut found_by, owner);
        }
    }
    let mut agreed_by: Vec<String> = Vec::new();
    let mut disagreed_by: Vec<String> = Vec::new();
    for source in &known {
        for reviewer in &source.agreed {
            push_once(&mut agreed_by, reviewer);
        }
        for reviewer in &source.disagreed {
            push_once(&mut disagreed_by, reviewer);
        }
    }
    let mut anchors: Vec<Anchor> = known
        .iter()
        .flat_map(|source| anchor::of_evidence(&source.evidence, recorded_root))
        .collect();
    anchors.sort();
    anchors.dedup();
    let pre_existing = run
        .and_then(|run| run.change.as_ref())
        .filter(|_| !anchors.is_empty())
        .map(|change| {
            !anchors
                .iter()
                .any(|a| change.touches(&a.path, a.start, a.end))
        });
    Finding {
        row: text("id").unwrap_or_default(),
        rule,
        class,
        severity,
        text: text("finding")
            .or_else(|| text("topic"))
            .unwrap_or_default(),
        suggested_fix: text("suggestedFix"),
        source_items,
        found_by,
        agreed_by,
        disagreed_by,
        anchors,
        fingerprint: String::new(),
        pre_existing,
    }
}

fn push_once(list: &mut Vec<String>, name: &str) {
    if !list.iter().any(|known| known == name) {
        list.push(name.to_owned());
    }
}

/// Every source item the run's records know: each contributor's result
/// items, then the convergence ledger's classes and verdicts.
fn sources(run: &Run) -> HashMap<String, Source> {
    let mut known: HashMap<String, Source> = HashMap::new();
    for assignment in &run.assignments {
        if assignment.role == Role::ReportWriter {
            continue;
        }
        let path = &assignment.paths.result_path;
        if crate::confine::inside_no_links(path, &run.dir, "a worker's result").is_err() {
            continue;
        }
        let Ok(text) = items::read_result(path) else {
            continue;
        };
        let severities = severity::of_result(&text);
        for item in items::parse(&text).items {
            let key = format!("{}:{}", assignment.worker_id, item.id);
            let entry = known.entry(key).or_default();
            entry.severity = severities.get(&item.id).copied();
            entry.section = Some(item.section);
            entry.evidence = item.evidence;
        }
    }
    let path = RunLayout::of(&run.dir).convergence_ledger();
    if let Ok(Some(ledger)) = ledger::read::<Ledger>(&path, ledger::LEDGER_SCHEMA) {
        for item in ledger.items {
            let entry = known.entry(item.item_id).or_default();
            entry.class = item.final_class;
            if entry.section.is_none() {
                entry.section = item.section;
            }
            if entry.evidence.is_empty() {
                entry.evidence = item.evidence;
            }
            for verdict in item.verdicts.iter().filter(|v| !v.substitute) {
                if verdict.verdict.agrees() {
                    push_once(&mut entry.agreed, &verdict.reviewer);
                } else {
                    push_once(&mut entry.disagreed, &verdict.reviewer);
                }
            }
        }
    }
    known
}

/// The project's folder when its files are there: the one the manifest
/// records, else the folder holding the `.okstra/` the run sits in.
fn readable_root(run: &Run) -> Option<PathBuf> {
    if run.project_root.is_dir() {
        return Some(run.project_root.clone());
    }
    run.dir
        .ancestors()
        .find(|dir| {
            dir.file_name()
                .is_some_and(|name| name == crate::confine::OKSTRA_DIR)
        })
        .and_then(Path::parent)
        .filter(|root| root.is_dir())
        .map(Path::to_path_buf)
}

/// The first line of every anchor, read once per file (from git at `commit`
/// when given, else from the working tree): `(path, line)` → normalised
/// content.
fn read_lines(
    root: &Path,
    commit: Option<&str>,
    findings: &[Finding],
) -> HashMap<(String, u32), String> {
    let mut wanted: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for anchor in findings.iter().filter_map(|f| f.anchors.first()) {
        wanted.entry(&anchor.path).or_default().push(anchor.start);
    }
    let mut lines = HashMap::new();
    for (path, mut numbers) in wanted {
        numbers.sort_unstable();
        numbers.dedup();
        if let Some(text) = commit.and_then(|commit| crate::change::file_at(root, commit, path)) {
            for (index, line) in text.lines().enumerate() {
                let number = u32::try_from(index + 1).unwrap_or(u32::MAX);
                if numbers.binary_search(&number).is_ok() {
                    // Cut as the working-tree reader cuts, so both agree.
                    let kept = &line.as_bytes()[..line.len().min(MAX_LINE_BYTES)];
                    let text = String::from_utf8_lossy(kept);
                    lines.insert((path.to_owned(), number), normalise(&text));
                }
            }
            continue;
        }
        // No link anywhere on the way: a symlink could lead out of the project.
        if crate::confine::check_no_links(root, Path::new(path)).is_err() {
            continue;
        }
        let Ok((file, _)) = fsread::open(&root.join(path), Follow::No) else {
            continue;
        };
        let mut reader = LineReader::new(file, MAX_LINE_BYTES);
        let mut number = 0_u32;
        let mut next = numbers.iter().peekable();
        while let Some(&&want) = next.peek() {
            let Ok(Some(line)) = reader.next_line() else {
                break;
            };
            number += 1;
            if number == want {
                let text = String::from_utf8_lossy(line.bytes);
                lines.insert((path.to_owned(), want), normalise(&text));
                next.next();
            }
        }
    }
    lines
}

/// Whitespace runs made one space, ends trimmed.
fn normalise(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The fingerprint before its occurrence count (see the module docs).
fn fingerprint_hash(
    finding: &Finding,
    lines: &HashMap<(String, u32), String>,
    run_id: &str,
) -> String {
    let rule = finding.rule.id();
    let key = match finding.anchors.first() {
        Some(anchor) => {
            let content = lines
                .get(&(anchor.path.clone(), anchor.start))
                .cloned()
                .unwrap_or_else(|| format!("@{}", anchor.start));
            format!("okstra/v1\n{rule}\n{}\n{content}", anchor.path)
        }
        None => format!("okstra/v1\n{rule}\nunanchored\n{run_id}\n{}", finding.row),
    };
    sha256_hex(key.as_bytes())
}

/// Whether the report says its run was cross-verified: the 2.1
/// `reliability` block, or for an older report what its coverage shows (two
/// or more reviewers completed, and a convergence round ran).
pub fn verification(report: &Value) -> Verification {
    if let Some(block) = report.get("reliability") {
        let cross_verified = block.get("crossVerified").and_then(Value::as_bool) == Some(true);
        let detail = block
            .get("detail")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let detail = match block.get("reason").and_then(Value::as_str) {
            Some(reason) if !cross_verified => format!("{reason}: {detail}"),
            _ => detail,
        };
        return Verification {
            cross_verified,
            detail,
        };
    }
    let reviewers: Vec<&Value> = report
        .get("workerCoverage")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|entry| {
            matches!(
                entry.get("role").and_then(Value::as_str),
                Some("analyser" | "verifier")
            )
        })
        .collect();
    let completed = reviewers
        .iter()
        .filter(|entry| entry.get("terminalStatus").and_then(Value::as_str) == Some("completed"))
        .count();
    let rounds = report
        .pointer("/workflow/convergenceRounds")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let cross_verified = completed >= 2 && rounds >= 1;
    Verification {
        cross_verified,
        detail: format!(
            "{completed} of {} reviewers completed and {rounds} convergence round{} ran (derived \
             from the report's coverage: it has no `reliability` block)",
            reviewers.len(),
            if rounds == 1 { "" } else { "s" }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_pick_the_rule() {
        assert_eq!(Rule::of_section("3. Defects"), Rule::Defect);
        assert_eq!(Rule::of_section("4. Root cause"), Rule::RootCause);
        assert_eq!(Rule::of_section("3. Hypotheses"), Rule::RootCause);
        assert_eq!(Rule::of_section("6. Risks and rollback"), Rule::Risk);
        assert_eq!(Rule::of_section("1. Findings"), Rule::Finding);
        assert_eq!(Rule::of_section(""), Rule::Finding);
        assert_eq!(Rule::Defect.id(), "okstra/defect");
    }

    #[test]
    fn lines_are_normalised_for_the_fingerprint() {
        assert_eq!(normalise("  let  x =\t1; \r"), "let x = 1;");
    }

    #[test]
    fn older_reports_are_judged_from_their_coverage() {
        let report = serde_json::json!({
            "workerCoverage": [
                {"role": "analyser", "terminalStatus": "completed"},
                {"role": "analyser", "terminalStatus": "completed"},
                {"role": "report-writer", "terminalStatus": "completed"}
            ],
            "workflow": {"convergenceRounds": 1}
        });
        assert!(verification(&report).cross_verified);
        let mut unverified = report.clone();
        unverified["workflow"]["convergenceRounds"] = 0.into();
        assert!(!verification(&unverified).cross_verified);
        let block = serde_json::json!({"reliability": {"crossVerified": false,
            "reason": "quorum-lost", "detail": "Only 1 of 3."}});
        assert_eq!(
            verification(&block),
            Verification {
                cross_verified: false,
                detail: "quorum-lost: Only 1 of 3.".to_owned()
            }
        );
    }
}
