//! Integration tests: findings that tell the truth. Headless runs of the
//! fake team in its stories (`FAKE_SCENARIO`): two workers' claims at the
//! same lines that say opposite things, a reviewer's `same claim as`, a
//! false lead refuted with command output and withdrawn by its owner, an
//! `AGREE` that only re-quotes the claim's anchor, a result edited after
//! the fact, and two findings on one line whose order changes between runs.
//! Who found and who verified each row is the same in the report, SARIF,
//! the pull-request review and the closing summary.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use serde_json::Value;

use super::publish::{Github, TOKEN, publish, serve_github};
use super::{gate, git, okstra_in, results, sarif_of};
use crate::run::{run_dir, run_with, team_project};
use crate::support::{Project, commit_all, read_json};

/// The analysers of every story.
const TEAM: &str = "claude,codex,kimi,report-writer";

/// A headless run of claude, codex and kimi in `scenario` (more fake-team
/// switches in `env`); its run folder.
fn story(project: &Project, task_id: &str, scenario: &str, env: &[(&str, &str)]) -> PathBuf {
    let mut env = env.to_vec();
    env.push(("FAKE_SCENARIO", scenario));
    let (outcome, code, stderr) = run_with(
        project,
        &[
            "--task-type",
            "project-analysis",
            "--workers",
            TEAM,
            "--task-id",
            task_id,
        ],
        &env,
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(outcome["valid"], true, "{outcome}");
    run_dir(&outcome)
}

/// The `verification` block's entry of claim `id`.
fn claim<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["verification"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["itemId"] == id)
        .unwrap_or_else(|| panic!("no claim {id}: {}", report["verification"]))
}

/// The report rows citing `id`: (row id, its source items).
fn rows_citing(report: &Value, id: &str) -> Vec<(String, Vec<String>)> {
    ["consensus", "differences"]
        .iter()
        .flat_map(|table| report[*table].as_array().unwrap())
        .filter(|row| row["sourceItems"].as_array().unwrap().contains(&id.into()))
        .map(|row| {
            (
                row["id"].as_str().unwrap().to_owned(),
                row["sourceItems"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| s.as_str().unwrap().to_owned())
                    .collect(),
            )
        })
        .collect()
}

fn names(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|list| {
            list.iter()
                .map(|name| name.as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn markdown(run: &Path) -> String {
    fs::read_to_string(run.join("report/final-report.md")).unwrap()
}

#[test]
fn claims_at_the_same_lines_merge_only_when_a_reviewer_says_so_and_never_when_they_contradict() {
    let project = team_project();
    let run = story(&project, "truth", "truth", &[]);
    let report = read_json(&run.join("report/data.json"));

    // claude says the sleep is the root cause and codex that it is not, at
    // the same line; kimi, who saw both side by side, called them the same
    // claim, but each owner refuted the other's: two findings, two rows,
    // each found by its own owner alone.
    for (id, owner) in [("claude:F-001", "claude"), ("codex:F-1", "codex")] {
        let item = claim(&report, id);
        assert_eq!(names(&item["foundBy"]), [owner], "{item}");
        assert!(item.get("mergedWith").is_none(), "{item}");
        assert_eq!(
            rows_citing(&report, id),
            [(rows_citing(&report, id)[0].0.clone(), vec![id.to_owned()])],
            "{id}"
        );
    }
    let sleep_row = rows_citing(&report, "claude:F-001")[0].0.clone();
    assert!(
        markdown(&run).contains(&format!("- {sleep_row}: found by `claude`; verified by ")),
        "{}",
        markdown(&run)
    );

    // The race claude and codex both reported, which kimi called the same
    // claim: one finding, found by both owners, verified by kimi alone (a
    // finder never verifies its own finding).
    let race = claim(&report, "claude:F-002");
    assert_eq!(names(&race["mergedWith"]), ["codex:F-2"]);
    assert_eq!(names(&race["foundBy"]), ["claude", "codex"]);
    assert_eq!(names(&race["agreedBy"]), ["kimi"]);
    assert_eq!(race["finalClass"], "full-consensus");
    let by_codex = claim(&report, "codex:F-2")["reviews"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["reviewer"] == "claude")
        .unwrap()
        .clone();
    assert_eq!(by_codex["counted"], false, "{by_codex}");
    assert_eq!(by_codex["uncounted"], "finder", "{by_codex}");
    let rows = rows_citing(&report, "claude:F-002");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].1, ["claude:F-002", "codex:F-2"]);
    assert!(rows[0].0.starts_with("C-"), "{rows:?}");
    // Its severity is the highest its finders gave.
    assert_eq!(race["severity"], "high");
}

#[test]
fn a_finder_is_never_its_own_verifier_and_nobody_both_agrees_and_disagrees() {
    let project = team_project();
    let run = story(&project, "finders", "truth", &[]);
    let report = read_json(&run.join("report/data.json"));
    for item in report["verification"]["items"].as_array().unwrap() {
        let found = names(&item["foundBy"]);
        let agreed = names(&item["agreedBy"]);
        let disagreed = names(&item["disagreedBy"]);
        for worker in &found {
            assert!(
                !agreed.contains(worker) && !disagreed.contains(worker),
                "{item}"
            );
        }
        for worker in &agreed {
            assert!(!disagreed.contains(worker), "{item}");
        }
        // The owners kept their own claims in round 2: never a vote.
        for review in item["reviews"].as_array().unwrap() {
            if review["reviewer"] == item["owner"] {
                assert_eq!(review["counted"], false, "{review}");
                assert_eq!(review["uncounted"], "owner", "{review}");
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let log = sarif_of(&run, &dir.path().join("truth.sarif"));
    for result in results(&log) {
        let found = names(&result["properties"]["foundBy"]);
        for verifier in names(&result["properties"]["agreedBy"]) {
            assert!(!found.contains(&verifier), "{result}");
        }
    }
}

#[test]
fn a_claim_refuted_with_command_output_and_withdrawn_is_no_alert_and_passes_every_gate() {
    let project = team_project();
    commit_all(project.root());
    let run = story(&project, "refuted", "refuted", &[]);
    let report = read_json(&run.join("report/data.json"));
    let lead = claim(&report, "claude:F-003");
    assert_eq!(lead["finalClass"], "refuted", "{lead}");
    assert_eq!(lead["withdrawn"], true, "{lead}");
    assert!(lead.get("severity").is_none(), "{lead}");
    assert_eq!(names(&lead["disagreedBy"]), ["codex", "kimi"]);
    // Listed apart, with the evidence that refuted it.
    let md = markdown(&run);
    let section = &md[md.find("## Refuted claims").expect("a refuted section")..];
    assert!(
        section.contains(
            "- `claude:F-003`: REFUTED-LEAD releasing inside a reserve deadlocks on the lock"
        ),
        "{section}"
    );
    assert!(
        section.contains("withdrawn by its owner; refuted by `codex`: `python3 -c"),
        "{section}"
    );
    assert!(
        fs::read_to_string(run.join("report/final-report.html"))
            .unwrap()
            .contains("<h2>Refuted claims</h2>")
    );

    // Not an alert in SARIF: no result but a suppressed one.
    let dir = tempfile::tempdir().unwrap();
    let log = sarif_of(&run, &dir.path().join("refuted.sarif"));
    for result in results(&log) {
        assert!(result.get("suppressions").is_some(), "{result}");
        assert_ne!(result["level"], "error", "{result}");
    }

    // Never an alert in the pull-request review, even inside its diff.
    let head = git(project.root(), &["rev-parse", "HEAD"])
        .trim()
        .to_owned();
    let github = Github::with_patch(
        &head,
        "@@ -9,4 +9,4 @@\n         self._stock = dict(stock)\n         self._reserved = {}\n-        self._lock = None\n+        self._lock = threading.Lock()\n \n",
    );
    let server = serve_github(&github);
    let dry = publish(&project, &run, &server.url(), None, &["--dry-run"]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    let body: Value = serde_json::from_str(&dry.stdout).unwrap();
    assert_eq!(body["comments"], serde_json::json!([]), "{body}");
    let summary = body["body"].as_str().unwrap();
    assert!(!summary.contains("REFUTED-LEAD"), "{summary}");
    assert!(summary.contains("1 refuted claim"), "{summary}");

    // And the gate passes at every threshold.
    let info = gate(&run, &["--fail-on", "info"]);
    assert_eq!(info.code, 0, "{}{}", info.stdout, info.stderr);
    assert!(info.stderr.contains("gate passed"), "{}", info.stderr);
    let refused = gate(&run, &["--fail-on", "info", "--classes", "refuted"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("invalid value `refuted` for `--classes`"),
        "{}",
        refused.stderr
    );
}

#[test]
fn an_agree_that_only_requotes_the_claims_own_anchor_is_not_counted() {
    let project = team_project();
    let (outcome, code, stderr) = run_with(
        &project,
        &["--task-type", "project-analysis", "--workers", TEAM],
        // Each reviewer checks claude's F-001 rather than merging its own
        // in-memory claim with it.
        &[("FAKE_REQUOTE", "kimi"), ("FAKE_MERGE", "0")],
    );
    assert_eq!(code, 0, "{stderr}");
    let run = run_dir(&outcome);
    let report = read_json(&run.join("report/data.json"));
    let item = claim(&report, "claude:F-001");
    let by_kimi = item["reviews"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["reviewer"] == "kimi")
        .unwrap();
    assert_eq!(by_kimi["verdict"], "AGREE");
    assert_eq!(by_kimi["evidence"], "src/inventory.py:1 confirms it");
    assert_eq!(by_kimi["counted"], false, "{by_kimi}");
    assert_eq!(by_kimi["uncounted"], "own-anchors", "{by_kimi}");
    // codex checked it with a command and its output: the only verifier.
    assert_eq!(names(&item["agreedBy"]), ["codex"]);
    assert!(
        markdown(&run).contains(
            "`kimi` on `claude:F-001` AGREE (not counted: it only re-quotes the claim's own \
             anchors) — src/inventory.py:1 confirms it"
        ),
        "{}",
        markdown(&run)
    );
}

/// `found by X; verified by Y` (and `; disputed by Z`), or `found
/// independently by X, W` (several finders, maybe no other verdict), as a
/// sorted pair of finder and verifier lists.
fn credits(line: &str) -> (Vec<String>, Vec<String>) {
    let list = |text: &str| -> Vec<String> {
        let mut names: Vec<String> = text
            .split(", ")
            .map(|n| n.trim_matches(|c| c == '`' || c == ' ').to_owned())
            .filter(|n| !n.is_empty() && n != "nobody")
            .collect();
        names.sort();
        names
    };
    let independent = line.contains("found independently by ");
    let found = line
        .replace("found independently by ", "found by ")
        .split("found by ")
        .nth(1)
        .unwrap()
        .to_owned();
    let (found, verified) = if let Some((found, rest)) = found.split_once("; verified by ") {
        (found, rest.split(';').next().unwrap())
    } else {
        // Several finders and no other verdict: nobody else verified it.
        assert!(independent, "no verifier named in {line:?}");
        (found.split(';').next().unwrap(), "")
    };
    let found = list(found.trim_end_matches('.'));
    assert_eq!(independent, found.len() > 1, "{line:?}");
    (found, list(verified.trim_end_matches('.')))
}

#[test]
fn the_report_sarif_the_review_and_the_closing_summary_credit_every_row_alike() {
    let project = team_project();
    commit_all(project.root());
    let output = project
        .task_command(
            &["run"],
            &[
                "--task-type",
                "project-analysis",
                "--workers",
                TEAM,
                "--task-id",
                "alike",
                "--yes",
            ],
        )
        .env("FAKE_SCENARIO", "truth")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let markdown_path = stdout
        .lines()
        .find_map(|line| line.trim().strip_prefix("report: "))
        .unwrap();
    let run = Path::new(markdown_path)
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .to_path_buf();

    // The closing summary: one line per finding.
    let closing: BTreeMap<String, (Vec<String>, Vec<String>)> = stdout
        .lines()
        .filter(|line| line.starts_with("    C-") || line.starts_with("    D-"))
        .map(|line| {
            let row = line.split_whitespace().next().unwrap().to_owned();
            (row, credits(line))
        })
        .collect();
    // The report's own lines.
    let md = markdown(&run);
    let report: BTreeMap<String, (Vec<String>, Vec<String>)> = md
        .lines()
        .filter_map(|line| line.strip_prefix("- "))
        .filter(|line| line.starts_with("C-") || line.starts_with("D-"))
        .filter(|line| line.contains(": found by ") || line.contains(": found independently by "))
        .map(|line| (line.split(':').next().unwrap().to_owned(), credits(line)))
        .collect();
    // SARIF.
    let dir = tempfile::tempdir().unwrap();
    let log = sarif_of(&run, &dir.path().join("alike.sarif"));
    let sarif: BTreeMap<String, (Vec<String>, Vec<String>)> = results(&log)
        .iter()
        .map(|result| {
            let sorted = |value: &Value| {
                let mut list = names(value);
                list.sort();
                list
            };
            (
                result["properties"]["reportRow"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
                (
                    sorted(&result["properties"]["foundBy"]),
                    sorted(&result["properties"]["agreedBy"]),
                ),
            )
        })
        .collect();
    // The pull-request review: a diff over the whole file, so every
    // anchored finding is an inline comment.
    let head = git(project.root(), &["rev-parse", "HEAD"])
        .trim()
        .to_owned();
    let whole: String = (1..=27).fold(String::from("@@ -1,27 +1,27 @@\n"), |mut patch, _| {
        patch.push_str(" line\n");
        patch
    });
    let github = Github::with_patch(&head, &whole);
    let server = serve_github(&github);
    let dry = publish(&project, &run, &server.url(), Some(TOKEN), &["--dry-run"]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    let body: Value = serde_json::from_str(&dry.stdout).unwrap();
    let mut review: BTreeMap<String, (Vec<String>, Vec<String>)> = BTreeMap::new();
    for comment in body["comments"].as_array().unwrap() {
        let text = comment["body"].as_str().unwrap();
        let row = text
            .trim_start_matches("**okstra · ")
            .split(' ')
            .next()
            .unwrap()
            .to_owned();
        let line = text
            .lines()
            .find(|l| l.starts_with("Found "))
            .unwrap()
            .replacen("Found ", "found ", 1);
        review.insert(row, credits(&line));
    }
    for line in body["body"].as_str().unwrap().lines() {
        if let Some(rest) = line.strip_prefix("- **") {
            let row = rest.split("**").next().unwrap().to_owned();
            review.insert(row, credits(line));
        }
    }

    assert!(!report.is_empty());
    assert_eq!(closing, report, "closing summary vs report");
    assert_eq!(sarif, report, "SARIF vs report");
    assert_eq!(review, report, "review vs report");
}

#[test]
fn a_result_edited_after_the_fact_makes_validate_and_the_gate_refuse() {
    let project = team_project();
    let run = story(&project, "edited", "truth", &[]);
    let before = okstra_in(&["validate", run.to_str().unwrap()]);
    assert_eq!(before.code, 0, "{}{}", before.stdout, before.stderr);
    // Lower one severity cell of codex's result.
    let result = run.join("results/codex-worker.md");
    let text = fs::read_to_string(&result).unwrap();
    let lowered = text.replacen(
        "`if self.available(sku) < quantity:` | high |",
        "`if self.available(sku) < quantity:` | low |",
        1,
    );
    assert_ne!(lowered, text);
    fs::write(&result, lowered).unwrap();
    let after = okstra_in(&["validate", run.to_str().unwrap()]);
    assert_eq!(after.code, 1, "{}{}", after.stdout, after.stderr);
    assert!(
        after
            .stdout
            .contains("[records] `results/codex-worker.md` is not the file okstra recorded"),
        "{}",
        after.stdout
    );
    let gated = gate(&run, &["--fail-on", "high"]);
    assert_eq!(gated.code, 3, "{}", gated.stderr);
    assert!(
        gated
            .stderr
            .contains("`results/codex-worker.md` is not the file okstra recorded"),
        "{}",
        gated.stderr
    );
}

#[test]
fn two_findings_on_one_line_keep_their_identities_when_their_order_changes() {
    let project = team_project();
    commit_all(project.root());
    let first = story(&project, "twins-a", "twins", &[]);
    let second = story(&project, "twins-b", "twins", &[("FAKE_SWAP", "1")]);
    let dir = tempfile::tempdir().unwrap();
    let prints = |run: &Path, name: &str| -> BTreeMap<String, String> {
        let log = sarif_of(run, &dir.path().join(name));
        results(&log)
            .iter()
            .map(|result| {
                let text = result["message"]["text"].as_str().unwrap();
                let claim = text.split(" | ").next().unwrap().to_owned();
                (
                    claim,
                    result["partialFingerprints"]["okstraFinding/v2"]
                        .as_str()
                        .unwrap()
                        .to_owned(),
                )
            })
            .collect()
    };
    let (a, b) = (prints(&first, "a.sarif"), prints(&second, "b.sarif"));
    assert_eq!(a.len(), 2, "{a:?}");
    // The report lists them in the other order the second time.
    let rows = |run: &Path| -> Vec<String> {
        read_json(&run.join("report/data.json"))["consensus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| row["finding"].as_str().unwrap().to_owned())
            .collect()
    };
    let mut reversed = rows(&second);
    reversed.reverse();
    assert_eq!(rows(&first), reversed);
    assert_eq!(a, b);
    // Two findings, two identities.
    assert_ne!(a.values().next(), a.values().nth(1));
}
