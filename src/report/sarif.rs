//! The report's findings as one SARIF 2.1.0 log, for code scanning
//! (`okstra report --format sarif`), and the reader of an earlier log's
//! fingerprints (`okstra gate --baseline`).
//!
//! One run, okstra as the tool driver, one rule per kind of claim
//! (`findings::Rule`, always all four, in one order, so `ruleIndex` is
//! stable). Every consensus and contested finding is a result, and every
//! worker-unique one that has an anchor; an unanchored one has no location
//! and says so. A refuted finding is a suppressed result (`suppressions`,
//! with its justification, level `none`): never an alert. Levels follow the
//! severity (`critical`/`high` → `error`, `medium` → `warning`,
//! `low`/`info`/unranked → `note`). Paths are relative to the root of the
//! project's repository (`uriBaseId` `%SRCROOT%`), as code scanning and a
//! pull request name files, however deep the project lies in it;
//! `partialFingerprints` carries okstra's fingerprint under
//! [`FINGERPRINT_KEY`], so a re-run does not duplicate alerts.
//!
//! GitHub's limits are kept: at most [`MAX_RESULTS`] results (the most
//! severe first when there are more, and the run says how many were left
//! out), [`MAX_LOCATIONS`] locations per result, and messages cut to
//! [`MAX_MESSAGE_CHARS`], so the log stays far below 10 MB gzipped.
//! See: <https://docs.github.com/en/code-security/code-scanning/integrating-with-code-scanning/sarif-support-for-code-scanning>

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::{Value, json};

use super::findings::{Finding, Findings, Verification};
use crate::fsread;
use crate::vocab::FinalClass;
use crate::vocab::Rule;
use crate::vocab::Severity;

/// The `partialFingerprints` key of okstra's fingerprint (v2: what a
/// finding is, never where it sits in the report).
pub const FINGERPRINT_KEY: &str = "okstraFinding/v2";
/// GitHub code scanning's limit on results per run.
pub const MAX_RESULTS: usize = 25_000;
/// GitHub's limit on locations per result.
pub const MAX_LOCATIONS: usize = 1_000;
/// Characters of a finding's text kept in a result's message.
pub const MAX_MESSAGE_CHARS: usize = 2_000;
/// The rules, in `ruleIndex` order.
const RULES: [Rule; 4] = [Rule::Finding, Rule::RootCause, Rule::Risk, Rule::Defect];
/// The base every location's `uri` is relative to: the repository's root.
const SOURCE_ROOT: &str = "%SRCROOT%";
/// The schema URI a SARIF 2.1.0 log names.
const SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// Whether a finding becomes a SARIF result: consensus and contested ones
/// always, a worker-unique one only with an anchor, a refuted one as a
/// suppressed result only.
pub fn is_reported(finding: &Finding) -> bool {
    finding.class != FinalClass::WorkerUnique || finding.is_anchored()
}

/// Whether a finding is an alert (what the pull-request review comments on,
/// and the most severe of which a log keeps first): a reported one that is
/// not refuted.
pub fn is_alert(finding: &Finding) -> bool {
    is_reported(finding) && !finding.is_refuted()
}

/// The SARIF log of a valid report's findings.
pub fn log(findings: &Findings, report: &Value, verification: &Verification) -> Value {
    let mut reported: Vec<&Finding> = findings.list.iter().filter(|f| is_reported(f)).collect();
    let left_out = reported.len().saturating_sub(MAX_RESULTS);
    if left_out > 0 {
        // Keep the most severe alerts (a refuted finding never ranks); the
        // sort is stable, so report order breaks ties.
        reported.sort_by_key(|f| std::cmp::Reverse((is_alert(f), f.rank())));
        reported.truncate(MAX_RESULTS);
    }
    let results: Vec<Value> = reported.iter().map(|f| result(f, findings)).collect();
    let text = |pointer: &str| report.pointer(pointer).and_then(Value::as_str);
    let task_key = text("/header/taskKey").unwrap_or("unknown");
    let run_id = text("/header/runId").unwrap_or("unknown");
    let mut properties = json!({
        "taskKey": task_key,
        "runId": run_id,
        "reportSchemaVersion": text("/schemaVersion"),
        "crossVerified": verification.cross_verified,
        "verification": verification.line(),
        "resultsLeftOut": left_out,
    });
    if let Some(run) = &findings.run {
        if let Some(source) = &run.source {
            properties["commit"] = json!(source.commit);
            properties["treeClean"] = json!(source.clean);
        }
        if let Some(change) = &run.change {
            properties["change"] = json!({
                "spec": change.spec,
                "baseCommit": change.base_commit,
                "headCommit": change.head_commit,
                "mergeBase": change.merge_base,
            });
        }
    }
    json!({
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "okstra",
                "version": env!("CARGO_PKG_VERSION"),
                "semanticVersion": env!("CARGO_PKG_VERSION"),
                "rules": RULES.iter().map(|rule| rule_descriptor(*rule)).collect::<Vec<_>>(),
            }},
            // GitHub's category is the id up to its last `/`: one per task
            // key, so a later run's upload closes the alerts it no longer has.
            "automationDetails": {"id": format!("okstra/{task_key}/{run_id}")},
            "columnKind": "unicodeCodePoints",
            // Every location is relative to the root of the repository the
            // project lies in, as code scanning resolves them; where that
            // root is on this machine is nobody else's business.
            "originalUriBaseIds": {SOURCE_ROOT: {"description": {"text":
                "The root of the git repository the analysed project lies in (the project itself outside git)."}}},
            "results": results,
            "properties": properties,
        }],
    })
}

fn rule_descriptor(rule: Rule) -> Value {
    let name: String = rule
        .as_str()
        .split('-')
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect();
    json!({
        "id": rule.id(),
        "name": name,
        "shortDescription": {"text": rule.description()},
        "fullDescription": {"text": format!(
            "{}. Each result says which workers found it, which verified and which disputed it \
             (counted verdicts only), and its convergence class (full-consensus, \
             partial-consensus, contested or worker-unique; a refuted one is suppressed).",
            rule.description()
        )},
        "defaultConfiguration": {"level": "warning"},
        "properties": {"tags": ["okstra"]},
    })
}

fn result(finding: &Finding, findings: &Findings) -> Value {
    let index = RULES
        .iter()
        .position(|rule| *rule == finding.rule)
        .unwrap_or_default();
    let mut message = fsread::clip(&finding.text, MAX_MESSAGE_CHARS);
    let _ = write!(
        message,
        " [{}, {}; {}",
        finding.class,
        finding.severity.map_or("unranked", Severity::as_str),
        finding.credits()
    );
    if !finding.severity_disputes.is_empty() {
        let _ = write!(
            message,
            "; severity disputed: {}",
            finding.severity_disputes.join(", ")
        );
    }
    message.push(']');
    if !finding.is_anchored() {
        message.push_str(" (unanchored: its workers cited no file and line in the project)");
    }
    let locations: Vec<Value> = finding
        .anchors
        .iter()
        .take(MAX_LOCATIONS)
        .map(|anchor| {
            json!({"physicalLocation": {
                "artifactLocation": {
                    "uri": uri(&findings.repository_path(&anchor.path)),
                    "uriBaseId": SOURCE_ROOT,
                },
                "region": {"startLine": anchor.start, "endLine": anchor.end},
            }})
        })
        .collect();
    let mut properties = json!({
        "reportRow": finding.row,
        "convergence": finding.class.as_str(),
        "severity": finding.severity.map(Severity::as_str),
        "foundBy": finding.found_by,
        "agreedBy": finding.agreed_by,
        "disagreedBy": finding.disagreed_by,
        "severityDisputes": finding.severity_disputes,
        "sourceItems": finding.source_items,
        "anchored": finding.is_anchored(),
        "tags": ["okstra", finding.class.as_str()],
    });
    if let Some(pre_existing) = finding.pre_existing {
        properties["preExisting"] = json!(pre_existing);
    }
    let mut result = json!({
        "ruleId": finding.rule.id(),
        "ruleIndex": index,
        "kind": "fail",
        "level": if finding.is_refuted() { "none" } else { finding.rank().sarif_level() },
        "message": {"text": message},
        "partialFingerprints": {FINGERPRINT_KEY: finding.fingerprint},
        "properties": properties,
    });
    if finding.is_refuted() {
        // Code scanning shows a suppressed result closed, never as an alert.
        result["suppressions"] = json!([{
            "kind": "external",
            "status": "accepted",
            "justification": format!(
                "refuted in convergence: its owner withdrew it, or reviewers refuted it with \
                 evidence of their own ({})",
                list(&finding.disagreed_by)
            ),
        }]);
    }
    if !locations.is_empty() {
        result["locations"] = Value::Array(locations);
    }
    result
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "nobody".to_owned()
    } else {
        names.join(", ")
    }
}

/// A relative path as a URI reference: every byte outside the unreserved
/// set and `/` percent-encoded.
fn uri(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// Most bytes of a baseline SARIF log okstra reads.
const MAX_BASELINE_BYTES: u64 = 64 * 1024 * 1024;

/// Every okstra fingerprint in the SARIF log at `path` (`--baseline`).
pub fn baseline_fingerprints(path: &Path) -> Result<HashSet<String>> {
    let (file, size) = fsread::open(path, fsread::Follow::Yes)
        .with_context(|| format!("cannot read the baseline `{}`", path.display()))?;
    if size > MAX_BASELINE_BYTES {
        anyhow::bail!(
            "the baseline `{}` is {size} bytes, over the {MAX_BASELINE_BYTES}-byte limit",
            path.display()
        );
    }
    let log: Value = serde_json::from_reader(std::io::Read::take(
        std::io::BufReader::new(file),
        MAX_BASELINE_BYTES,
    ))
    .with_context(|| {
        format!(
            "the baseline `{}` is not a JSON SARIF log (expected the output of `okstra report \
             --format sarif`)",
            path.display()
        )
    })?;
    let mut found = HashSet::new();
    let runs = log.get("runs").and_then(Value::as_array);
    for run in runs.into_iter().flatten() {
        let results = run.get("results").and_then(Value::as_array);
        for result in results.into_iter().flatten() {
            if let Some(print) = result
                .pointer(&format!(
                    "/partialFingerprints/{}",
                    FINGERPRINT_KEY.replace('/', "~1")
                ))
                .and_then(Value::as_str)
            {
                found.insert(print.to_owned());
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::anchor::Anchor;

    fn finding(row: usize, severity: Severity, anchored: bool) -> Finding {
        let long = row == 1;
        Finding {
            row: format!("C-{row:03}"),
            rule: Rule::Finding,
            class: FinalClass::FullConsensus,
            severity: Some(severity),
            severity_disputes: Vec::new(),
            text: if long {
                "x".repeat(MAX_MESSAGE_CHARS * 2)
            } else {
                "short".into()
            },
            claim: "short".into(),
            suggested_fix: None,
            source_items: vec!["claude:F-1".into()],
            found_by: vec!["claude".into()],
            agreed_by: vec!["codex".into()],
            disagreed_by: Vec::new(),
            anchors: if anchored {
                vec![Anchor {
                    path: "src/ü b.rs".into(),
                    start: 3,
                    end: 4,
                }]
            } else {
                Vec::new()
            },
            fingerprint: format!("{row}:1"),
            pre_existing: None,
        }
    }

    #[test]
    fn the_log_keeps_githubs_limits_and_the_most_severe() {
        let mut list: Vec<Finding> = (0..MAX_RESULTS)
            .map(|n| finding(n, Severity::Low, true))
            .collect();
        list.push(finding(MAX_RESULTS, Severity::Critical, false));
        let findings = Findings {
            list,
            run: None,
            repository_prefix: String::new(),
        };
        let verification = Verification {
            cross_verified: true,
            headline: "Cross-verified".into(),
            explanation: "fine".into(),
        };
        let log = log(&findings, &json!({}), &verification);
        let run = &log["runs"][0];
        let results = run["results"].as_array().unwrap();
        assert_eq!(results.len(), MAX_RESULTS);
        assert_eq!(run["properties"]["resultsLeftOut"], 1);
        assert_eq!(results[0]["level"], "error");
        assert!(results[0].get("locations").is_none());
        assert!(
            results[0]["message"]["text"]
                .as_str()
                .unwrap()
                .ends_with("(unanchored: its workers cited no file and line in the project)")
        );
        let second = &results[1];
        assert_eq!(second["level"], "note");
        assert!(second["message"]["text"].as_str().unwrap().chars().count() < 2200);
        assert_eq!(
            second["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "src/%C3%BC%20b.rs"
        );
        assert_eq!(second["partialFingerprints"][FINGERPRINT_KEY], "0:1");
    }

    #[test]
    fn a_refuted_finding_is_a_suppressed_result_never_an_alert() {
        let mut refuted = finding(1, Severity::High, true);
        refuted.class = FinalClass::Refuted;
        refuted.severity = None;
        refuted.disagreed_by = vec!["codex".into(), "kimi".into()];
        assert!(is_reported(&refuted) && !is_alert(&refuted));
        let result = result(
            &refuted,
            &Findings {
                list: Vec::new(),
                run: None,
                repository_prefix: String::new(),
            },
        );
        assert_eq!(result["level"], "none");
        assert_eq!(result["suppressions"][0]["status"], "accepted");
        assert!(
            result["suppressions"][0]["justification"]
                .as_str()
                .unwrap()
                .contains("codex, kimi")
        );
    }

    #[test]
    fn unanchored_worker_unique_findings_are_not_results() {
        let mut lone = finding(1, Severity::High, false);
        lone.class = FinalClass::WorkerUnique;
        assert!(!is_reported(&lone));
        lone.anchors.push(Anchor {
            path: "a.rs".into(),
            start: 1,
            end: 1,
        });
        assert!(is_reported(&lone));
    }
}
