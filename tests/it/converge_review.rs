//! Integration tests: what a reviewer is shown, through headless runs of the
//! fake team in its stories (`FAKE_SCENARIO`): a blind round names no
//! worker and no owner's item id; a group of claims at overlapping lines is
//! headed for what it is, never as the claims of "different workers"; and
//! with two analysers, each reviewer sees its own claim beside the other's,
//! so a defect both found is one finding, one row of the report.

use std::fs;
use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::run::{run_dir, run_with, team_project};
use crate::support::{Project, read_json};

/// A headless run of `workers` in `scenario`; its run folder.
fn story(project: &Project, workers: &str, scenario: &str) -> PathBuf {
    let (outcome, code, stderr) = run_with(
        project,
        &["--task-type", "project-analysis", "--workers", workers],
        &[("FAKE_SCENARIO", scenario)],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(outcome["valid"], true, "{outcome}");
    run_dir(&outcome)
}

/// Every reverify prompt of the run: (reviewer, prompt text).
fn reverify_prompts(run: &Path) -> Vec<(String, String)> {
    let mut prompts = Vec::new();
    for round in 1..=2 {
        let plan = run.join(format!("state/round-plan-r{round}.json"));
        if !plan.exists() {
            continue;
        }
        for reviewer in read_json(&plan)["reviewers"].as_array().unwrap() {
            prompts.push((
                reviewer["workerId"].as_str().unwrap().to_owned(),
                fs::read_to_string(reviewer["promptPath"].as_str().unwrap()).unwrap(),
            ));
        }
    }
    assert!(
        !prompts.is_empty(),
        "no reverify prompt in {}",
        run.display()
    );
    prompts
}

/// The claims a prompt shows, without the reviewer's own lines (`- Yours:`,
/// its own claims as context).
fn claims_shown(prompt: &str) -> String {
    let section = prompt
        .split("\n## The claims\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## Your result\n").next())
        .unwrap_or_else(|| panic!("no claims section in:\n{prompt}"));
    section
        .lines()
        .filter(|line| !line.starts_with("- Yours:"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The words of `text` (letters, digits, `.`, `_`, `-`), lowercase.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '.' | '_' | '-')))
        .map(|word| word.trim_end_matches(['.', '-', '_']).to_lowercase())
        .filter(|word| !word.is_empty())
        .collect()
}

#[test]
fn a_blind_round_names_no_worker_and_no_owner_local_id() {
    let world = team_project();
    let run = story(&world, "claude,codex,kimi,report-writer", "leaky");
    let manifest = read_json(&run.join("run-manifest.json"));
    let mut hidden: Vec<String> = Vec::new();
    for assignment in manifest["assignments"].as_array().unwrap() {
        for field in ["workerId", "provider", "modelExecutionValue"] {
            hidden.push(assignment[field].as_str().unwrap().to_lowercase());
        }
    }
    hidden.extend(["f-001", "f-002", "f-9", "k-1"].map(str::to_owned));
    for (reviewer, prompt) in reverify_prompts(&run) {
        let shown = claims_shown(&prompt);
        let said = words(&shown);
        for name in &hidden {
            assert!(
                !said.contains(name),
                "{reviewer}'s prompt shows `{name}`:\n{shown}"
            );
        }
        assert!(shown.contains("[a worker]"), "{shown}");
    }
    // A hidden id of a claim the reviewer has under a label reads as it.
    let plan = read_json(&run.join("state/round-plan-r1.json"));
    let kimi = plan["reviewers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["workerId"] == "kimi")
        .unwrap();
    let label_of = |item: &str| {
        kimi["labels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["itemId"] == item)
            .map(|l| l["label"].as_str().unwrap().to_owned())
            .unwrap()
    };
    let prompt = fs::read_to_string(kimi["promptPath"].as_str().unwrap()).unwrap();
    assert!(
        prompt.contains(&format!(
            "the check in {} races, as [a worker] and [a worker] would say",
            label_of("claude:F-002")
        )),
        "{prompt}"
    );
}

#[test]
fn a_group_heading_never_says_different_workers_for_one_workers_claims() {
    let world = team_project();
    let run = story(&world, "claude,codex,kimi,report-writer", "crowd");
    let plan = read_json(&run.join("state/round-plan-r1.json"));
    assert_eq!(
        plan["groups"][0]["items"],
        serde_json::json!(["claude:F-001", "claude:F-002", "codex:F-1"])
    );
    for (reviewer, prompt) in reverify_prompts(&run) {
        assert!(
            !prompt.to_lowercase().contains("different workers"),
            "{reviewer}:\n{prompt}"
        );
        // claude reviews codex's one claim: no group to head.
        let Some(heading) = prompt.lines().find(|line| line.starts_with("### Items ")) else {
            assert_eq!(reviewer, "claude", "{prompt}");
            continue;
        };
        assert!(
            heading.ends_with(": claims at overlapping lines (`src/inventory.py:18-19`)"),
            "{heading}"
        );
        assert!(
            prompt.contains("judge each on its own. Evidence `same claim as Item 3a` only if it states the same defect as Item 3a"),
            "{prompt}"
        );
    }
    // codex's group holds claude's two claims alone, codex's own beside it.
    let codex = fs::read_to_string(run.join("prompts/codex-worker-reverify-r1.md")).unwrap();
    assert!(
        codex.contains("### Items 1a–1b: claims at overlapping lines"),
        "{codex}"
    );
    assert!(
        codex.contains("- Yours: `F-1` ALL-AGREE two reserves"),
        "{codex}"
    );
}

/// With the default roster's two analysers nobody but the owners sees both
/// of two claims at the same lines: each is shown its own beside the
/// other's, and both saying `same claim as my …` makes the defect one
/// finding, found by both, in one row; claims that say opposite things at
/// one line stay apart.
#[test]
fn two_analysers_report_one_row_for_one_defect_both_found() {
    let world = team_project();
    let run = story(&world, "claude,codex,report-writer", "truth");
    let plan = read_json(&run.join("state/round-plan-r1.json"));
    let own_context = |worker: &str| -> Vec<Value> {
        plan["reviewers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["workerId"] == worker)
            .unwrap()["ownContext"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    assert!(
        own_context("claude").contains(&"claude:F-002".into()),
        "{plan}"
    );
    assert!(own_context("codex").contains(&"codex:F-2".into()), "{plan}");
    let claude = fs::read_to_string(run.join("prompts/claude-worker-reverify-r1.md")).unwrap();
    assert!(claude.contains("- Yours: `F-002` SAME-CLAIM"), "{claude}");
    assert!(claude.contains("`same claim as my <your id>`"), "{claude}");

    let report = read_json(&run.join("report/data.json"));
    let rows: Vec<&Value> = ["consensus", "differences"]
        .iter()
        .flat_map(|table| report[*table].as_array().unwrap())
        .filter(|row| {
            let items = row["sourceItems"].as_array().unwrap();
            items.contains(&"claude:F-002".into()) || items.contains(&"codex:F-2".into())
        })
        .collect();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        rows[0]["sourceItems"],
        serde_json::json!(["claude:F-002", "codex:F-2"])
    );
    assert_eq!(rows[0]["convergence"], "full-consensus");
    let item = report["verification"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["itemId"] == "claude:F-002")
        .unwrap();
    assert_eq!(item["foundBy"], serde_json::json!(["claude", "codex"]));
    // Its finders never verify it.
    assert!(item.get("agreedBy").is_none(), "{item}");
    // The sleep claims sit at one line and say opposite things: two.
    let sleep = report["verification"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["itemId"] == "claude:F-001")
        .unwrap();
    assert!(sleep.get("mergedWith").is_none(), "{sleep}");
}
