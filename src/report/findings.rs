//! The report's findings as the outputs see them: SARIF, the gate, the
//! pull-request review and `okstra run`'s closing summary all rank, place,
//! credit and identify a finding the same way, here.
//!
//! A finding is one `consensus` or `differences` row of a valid report, with
//! what okstra derived of the claims it cites (`derive::verification`: the
//! report's `verification` block, which `okstra validate` holds to the run's
//! records, or the same derivation from the records for a report without
//! one):
//! - its **class**: a consensus row's `convergence`; a difference row is
//!   `refuted` when every claim it cites is, `worker-unique` when every one
//!   is, else `contested`;
//! - its **severity**: the highest its finders gave its claims (and the
//!   other items it cites), else the row's own; a refuted finding has none
//!   and never ranks;
//! - its **rule** (`okstra/finding`, `okstra/root-cause`, `okstra/risk`,
//!   `okstra/defect`) from the sections its source items sit in: a class in
//!   the rule would make a finding that moves from contested to consensus a
//!   new alert;
//! - who **found** it (the owners of its claims and of the claims merged
//!   with them, nobody else), who **verified** it and who **disputed** it
//!   (counted verdicts only, each reviewer's latest, nobody in both, never a
//!   finder): `derive::verification::row`;
//! - its **anchors** (`anchor::of_evidence` over its source items'
//!   evidence) and, for a run scoped to a change, whether it is
//!   **pre-existing** (no anchor meets a changed hunk);
//! - its **fingerprint**, what it is rather than where it sits in the
//!   report: `sha256("okstra/v2\n" + rule + "\n" + path + "\n" + claim +
//!   "\n" + line)` in hex, where `path` is the first anchor's (anchors
//!   sorted), `claim` the normalised text of its claims (the first in order
//!   of their normalised texts; the row's own text when it cites none: case
//!   folded, every run of other characters than letters and digits made one
//!   space) and `line` the content of the first anchor's first line with
//!   every whitespace run made one space and the ends trimmed. When the line
//!   cannot be read (the project is not there) `@<line number>` stands in
//!   for it. An unanchored finding hashes `unanchored` and the run id
//!   instead of a path and a line: it is never merged with another run's.
//!   Never a row number or order: two findings on one line keep their
//!   identities whichever comes first.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::Value;

use crate::derive::reliability::Reliability;

use super::anchor::{self, Anchor};
use crate::derive::verification::{self as credits, Verification as Block, VerifiedItem};
use crate::digest::sha256_hex;
use crate::fsread::{self, Follow, LineReader};
use crate::items::{Evidence, EvidenceKind};
use crate::run::{Parts, Records, Run};
use crate::vocab::FinalClass;
use crate::vocab::Rule;
use crate::vocab::Severity;

/// Most bytes of a source line read for a fingerprint.
const MAX_LINE_BYTES: usize = 4096;

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
    /// The highest severity its finders gave it (else the row's); `None`
    /// when unranked, and always for a refuted finding.
    pub severity: Option<Severity>,
    /// `codex says low`: counted reviewers who say the severity is
    /// overstated.
    pub severity_disputes: Vec<String>,
    /// The row's `finding` (or a difference's `topic`).
    pub text: String,
    /// Its claims' text, normalised (what its fingerprint hashes).
    pub claim: String,
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

    /// Whether it is refuted: never an alert, never ranked, never counted.
    pub fn is_refuted(&self) -> bool {
        self.class == FinalClass::Refuted
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

    /// `found by claude; verified by codex, kimi; disputed by grok`, or
    /// `found independently by claude, codex` when several workers made the
    /// claim and nobody else judged it: who, one line (what the closing
    /// summary and the review say).
    pub fn credits(&self) -> String {
        credits::credits_line(
            &self.found_by,
            &self.agreed_by,
            &self.disagreed_by,
            str::to_owned,
        )
    }
}

/// Whether the run's findings were checked by a quorum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    pub cross_verified: bool,
    /// `Cross-verified`, or `Not cross-verified (quorum-lost)`
    /// (`derive::reliability::Reliability::headline`).
    pub headline: String,
    /// What was and was not checked, after the headline.
    pub explanation: String,
}

impl Verification {
    /// The statement as one line, in the words every output uses
    /// (`derive::reliability::Reliability::line`).
    pub fn line(&self) -> String {
        format!("{}: {}", self.headline.to_lowercase(), self.explanation)
    }
}

/// A valid report's findings, with the run they came from.
#[derive(Debug)]
pub struct Findings {
    pub list: Vec<Finding>,
    /// The run, when the report sits in one.
    pub run: Option<Run>,
    /// Where the run's project lies in its repository: `services/api/`, or
    /// empty at the top (and outside git, or without a run).
    pub repository_prefix: String,
}

impl Findings {
    /// A project path (an anchor's) as its repository names it: what code
    /// scanning, a pull request and `okstra gate --json` call the file.
    pub fn repository_path(&self, path: &str) -> String {
        format!("{}{path}", self.repository_prefix)
    }
}

/// Where `run`'s project lies in its repository, `/`-terminated or empty:
/// as recorded when the run was rendered, else (a run of an older okstra
/// in git) as the file system shows it now; empty for a run rendered
/// outside git.
fn repository_prefix(run: Option<&Run>) -> String {
    // Outside git when rendered (no `source`): the project's own paths.
    let Some((run, source)) = run.and_then(|run| Some((run, run.source.as_ref()?))) else {
        return String::new();
    };
    if let Some(prefix) = &source.prefix {
        return prefix.clone();
    }
    let project =
        std::fs::canonicalize(&run.project_root).unwrap_or_else(|_| run.project_root.clone());
    crate::workspace::repository_prefix(&project)
        .map(|prefix| {
            let mut text = prefix.to_string_lossy().replace('\\', "/");
            if !text.is_empty() && !text.ends_with('/') {
                text.push('/');
            }
            text
        })
        .unwrap_or_default()
}

/// What okstra knows of one source item from its worker's result.
#[derive(Debug, Default)]
struct Source {
    section: Option<String>,
    text: Option<String>,
    evidence: Vec<Evidence>,
    severity: Option<Severity>,
}

/// The findings of the valid report `report`, which sits in `run_dir` when
/// one was found.
pub fn collect(report: &Value, run_dir: Option<&Path>) -> Result<Findings> {
    let records = run_dir
        .map(|dir| Records::open(dir, Parts::FACTS))
        .transpose()?;
    let sources = records.as_ref().map(sources).unwrap_or_default();
    // Who found and who verified: the report's own block (validated against
    // the records), else the same derivation from the records.
    let block: Option<Block> = report
        .get("verification")
        .and_then(|block| serde_json::from_value(block.clone()).ok())
        .or_else(|| records.as_ref().and_then(credits::of));
    let claims: HashMap<&str, &VerifiedItem> = block
        .iter()
        .flat_map(|block| &block.items)
        .map(|item| (item.item_id.as_str(), item))
        .collect();
    let run = records.map(|records| records.run);
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
            list.push(finding(
                table,
                row,
                &sources,
                &claims,
                recorded_root,
                run.as_ref(),
            ));
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
    for finding in &mut list {
        finding.fingerprint = fingerprint(finding, &lines, &run_id);
    }
    let repository_prefix = repository_prefix(run.as_ref());
    Ok(Findings {
        list,
        run,
        repository_prefix,
    })
}

/// One row as a finding (fingerprint filled in later).
fn finding(
    table: Table,
    row: &Value,
    sources: &HashMap<String, Source>,
    claims: &HashMap<&str, &VerifiedItem>,
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
    let cited: Vec<&VerifiedItem> = source_items
        .iter()
        .filter_map(|item| claims.get(item.as_str()).copied())
        .collect();
    let credit = credits::row(&cited, &source_items);
    let classes: Vec<FinalClass> = cited.iter().filter_map(|item| item.final_class).collect();
    let class = match table {
        Table::Consensus => text("convergence")
            .and_then(|word| word.parse::<FinalClass>().ok())
            .unwrap_or(FinalClass::WorkerUnique),
        Table::Differences if credit.refuted => FinalClass::Refuted,
        Table::Differences => {
            if !classes.is_empty() && classes.iter().all(|c| *c == FinalClass::WorkerUnique) {
                FinalClass::WorkerUnique
            } else {
                FinalClass::Contested
            }
        }
    };
    // The items it cites that are not claims okstra judged keep their
    // owners' severities.
    let others = source_items
        .iter()
        .filter(|item| !claims.contains_key(item.as_str()))
        .filter_map(|item| sources.get(item)?.severity);
    let known = credit.severity.into_iter().chain(others).max();
    let severity = if credit.refuted || class == FinalClass::Refuted {
        None
    } else {
        known.or_else(|| text("severity").and_then(|word| word.parse::<Severity>().ok()))
    };
    let rule = source_items
        .iter()
        .filter_map(|item| {
            sources
                .get(item)
                .and_then(|source| source.section.as_deref())
                .or_else(|| claims.get(item.as_str())?.section.as_deref())
        })
        .map(Rule::of_section)
        .max_by_key(|rule| rule.specificity())
        .unwrap_or(Rule::Finding);
    let mut anchors: Vec<Anchor> = source_items
        .iter()
        .flat_map(|item| {
            let evidence = match (sources.get(item), claims.get(item.as_str())) {
                (Some(source), _) if !source.evidence.is_empty() => source.evidence.clone(),
                (_, Some(claim)) => claim
                    .anchors
                    .iter()
                    .map(|a| Evidence {
                        kind: EvidenceKind::PathLine,
                        text: a.location(),
                    })
                    .collect(),
                _ => Vec::new(),
            };
            anchor::of_evidence(&evidence, recorded_root)
        })
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
    let claim_text = source_items
        .iter()
        .filter_map(|item| {
            claims
                .get(item.as_str())
                .and_then(|claim| claim.text.clone())
                .or_else(|| sources.get(item)?.text.clone())
        })
        .map(|text| normalise_claim(&text))
        .filter(|text| !text.is_empty())
        .min();
    let row_text = text("finding")
        .or_else(|| text("topic"))
        .unwrap_or_default();
    Finding {
        row: text("id").unwrap_or_default(),
        rule,
        class,
        severity,
        severity_disputes: credit.severity_disputes.iter().map(|d| d.shown()).collect(),
        claim: claim_text.unwrap_or_else(|| normalise_claim(&row_text)),
        text: row_text,
        suggested_fix: text("suggestedFix"),
        found_by: credit.found_by.iter().map(|s| (*s).to_owned()).collect(),
        agreed_by: credit.verified_by.iter().map(|s| (*s).to_owned()).collect(),
        disagreed_by: credit.disputed_by.iter().map(|s| (*s).to_owned()).collect(),
        source_items,
        anchors,
        fingerprint: String::new(),
        pre_existing,
    }
}

/// Every source item the run's own results hold: each contributor's items
/// as its worker wrote them (section, text, evidence, severity), parsed
/// once in the records.
fn sources(records: &Records) -> HashMap<String, Source> {
    let mut known: HashMap<String, Source> = HashMap::new();
    for (worker, own) in &records.results.own {
        for item in &own.parsed.items {
            known.insert(
                format!("{worker}:{}", item.id),
                Source {
                    section: Some(item.section.clone()),
                    text: Some(item.text.clone()),
                    evidence: item.evidence.clone(),
                    severity: own.severities.get(&item.id).copied(),
                },
            );
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

/// A claim's text for its identity: case folded, every run of characters
/// other than letters and digits made one space, the ends trimmed.
fn normalise_claim(text: &str) -> String {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A finding's fingerprint (see the module docs).
fn fingerprint(finding: &Finding, lines: &HashMap<(String, u32), String>, run_id: &str) -> String {
    let rule = finding.rule.id();
    let key = match finding.anchors.first() {
        Some(anchor) => {
            let content = lines
                .get(&(anchor.path.clone(), anchor.start))
                .cloned()
                .unwrap_or_else(|| format!("@{}", anchor.start));
            format!(
                "okstra/v2\n{rule}\n{}\n{}\n{content}",
                anchor.path, finding.claim
            )
        }
        None => format!("okstra/v2\n{rule}\nunanchored\n{run_id}\n{}", finding.claim),
    };
    sha256_hex(key.as_bytes())
}

/// Whether the report says its run was cross-verified: the 2.1
/// `reliability` block's statement, or for an older report what its
/// coverage shows (two or more reviewers completed, and a convergence round
/// ran), in the same form.
pub fn verification(report: &Value) -> Verification {
    if let Some(block) = report
        .get("reliability")
        .and_then(|block| serde_json::from_value::<Reliability>(block.clone()).ok())
    {
        return Verification {
            cross_verified: block.cross_verified,
            headline: block.headline(),
            explanation: block.explanation(),
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
        headline: if cross_verified {
            "Cross-verified"
        } else {
            "Not cross-verified"
        }
        .to_owned(),
        explanation: format!(
            "{completed} of {} reviewers completed and {rounds} convergence round{} ran \
             (derived from the report's coverage: it has no `reliability` block)",
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
            "reason": "quorum-lost", "detail": "Only 1 of 3.", "reviewersRostered": 3,
            "reviewersCompleted": 1, "reviewersRequired": 2, "roundsRun": 0, "rounds": []}});
        let said = verification(&block);
        assert!(!said.cross_verified);
        assert_eq!(said.line(), "not cross-verified (quorum-lost): only 1 of 3");
    }

    fn credited(found: &[&str], agreed: &[&str], disagreed: &[&str]) -> Finding {
        let names = |list: &[&str]| list.iter().map(|name| (*name).to_owned()).collect();
        Finding {
            row: "C-001".to_owned(),
            rule: Rule::Finding,
            class: FinalClass::FullConsensus,
            severity: None,
            severity_disputes: Vec::new(),
            text: String::new(),
            claim: String::new(),
            suggested_fix: None,
            source_items: Vec::new(),
            found_by: names(found),
            agreed_by: names(agreed),
            disagreed_by: names(disagreed),
            anchors: Vec::new(),
            fingerprint: String::new(),
            pre_existing: None,
        }
    }

    #[test]
    fn credits_say_an_independent_finding_is_one_and_never_verified_by_nobody() {
        assert_eq!(
            credited(&["claude", "codex"], &[], &[]).credits(),
            "found independently by claude, codex"
        );
        assert_eq!(
            credited(&["claude", "codex"], &["kimi"], &["grok"]).credits(),
            "found independently by claude, codex; verified by kimi; disputed by grok"
        );
        assert_eq!(
            credited(&["claude"], &[], &[]).credits(),
            "found by claude; verified by nobody"
        );
        assert_eq!(
            credited(&["claude"], &["codex"], &[]).credits(),
            "found by claude; verified by codex"
        );
    }
}
