//! Integration tests: one usage and coverage truth. okstra writes a
//! report's `workerCoverage` and `usageSummary` from the run's records once
//! the report writer has ended (its own attempt included), `okstra usage`
//! prints the same summary, and `okstra validate` checks a report against
//! those records when its run is there (the `records` level) and says when
//! it could only check the schema and the report's own invariants (the
//! `schema` level: a report folder without its run, such as a CI artifact).

use std::fs;
use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::run::{run, run_dir, team_project};
use crate::support::{copy_dir, okstra, read_json, repo_root, tree};

struct Checked {
    code: i32,
    stdout: String,
    stderr: String,
}

/// `okstra validate <target>` (with `--json` when `json`).
fn validate(target: &Path, json: bool) -> Checked {
    let mut cmd = okstra();
    cmd.arg("validate");
    if json {
        cmd.arg("--json");
    }
    let output = cmd.arg(target).output().unwrap();
    Checked {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn write_json(path: &Path, value: &Value) {
    fs::write(path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
}

/// The coverage entry of `worker` in `report`.
fn entry<'a>(report: &'a Value, worker: &str) -> &'a Value {
    report["workerCoverage"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["workerId"] == worker)
        .unwrap_or_else(|| panic!("no coverage entry for {worker}: {report}"))
}

#[test]
fn a_headless_run_reports_every_attempt_and_no_lead_model() {
    let world = team_project();
    let (outcome, code, stderr) = run(&world, "claude,codex,report-writer", &[]);
    assert_eq!(code, 0, "{stderr}");
    let run = run_dir(&outcome);
    let report = read_json(&run.join("report/data.json"));

    // Every rostered worker has one entry, the report writer included.
    let ids: Vec<&str> = report["workerCoverage"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["workerId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["claude", "codex", "report-writer"]);
    let writer = entry(&report, "report-writer");
    assert_eq!(writer["role"], "report-writer");
    assert_eq!(writer["terminalStatus"], "completed");
    assert_eq!(writer["itemsReported"], 0);

    // The writer's own attempt is counted; nobody's usage is missing.
    let usage = &report["usageSummary"];
    let line = usage["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["workerId"] == "report-writer")
        .unwrap_or_else(|| panic!("no usage of the report writer: {usage}"));
    assert_eq!(line["attempts"], 1, "{line}");
    assert_eq!(line["usage"]["source"], "cli-stream", "{line}");
    assert_eq!(line["usage"]["inputTokens"], 100, "{line}");
    // okstra led the run: no lead model, so nothing is missing either.
    assert_eq!(usage["lead"]["source"], "not-applicable", "{usage}");
    assert_eq!(usage["lead"]["inputTokens"], Value::Null);
    assert_eq!(usage["source"], "complete", "{usage}");
    // Every part came from the CLIs' own streams: one source for the whole.
    assert_eq!(usage["totals"]["source"], "cli-stream", "{usage}");
    let summed: u64 = usage["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["usage"]["inputTokens"].as_u64().unwrap())
        .sum();
    assert_eq!(usage["totals"]["inputTokens"], summed, "{usage}");

    // The report writer was given none of okstra's own blocks to copy: no
    // usage, no coverage, no verification, no reliability; the findings in
    // the form a row cites them instead.
    let inputs = read_json(&run.join("state/report-inputs.json"));
    for block in [
        "usageSummary",
        "workerCoverage",
        "verification",
        "reliability",
    ] {
        assert!(inputs.get(block).is_none(), "{block} in {inputs}");
    }
    assert_eq!(inputs["crossVerified"], true, "{inputs}");
    assert!(
        inputs["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|finding| {
                finding["sourceItems"]
                    .as_array()
                    .is_some_and(|items| !items.is_empty())
                    && finding["convergence"].is_string()
            })
    );

    // `okstra usage` prints the summary the report has, to the byte.
    let output = world
        .okstra()
        .args(["usage", "--json"])
        .arg(&run)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(printed, *usage);
    // … and recording it again left the report valid against the records.
    let checked = validate(&run, true);
    assert_eq!(checked.code, 0, "{}{}", checked.stdout, checked.stderr);
    let verdict: Value = serde_json::from_str(&checked.stdout).unwrap();
    assert_eq!(verdict["level"], "records");
    assert_eq!(verdict["valid"], true);
}

/// One way to tamper with a report, the problem line `okstra validate`
/// must print for it at the records level, and its rule.
struct Tamper {
    name: &'static str,
    edit: fn(&mut Value, &Value),
    pointer: &'static str,
    says: &'static str,
}

const TAMPERS: [Tamper; 4] = [
    Tamper {
        name: "usage totals edited",
        edit: |report, _| report["usageSummary"]["totals"]["inputTokens"] = 1.into(),
        pointer: "/usageSummary/totals/inputTokens: [usage] is `1` but okstra computes",
        says: "never edit it",
    },
    Tamper {
        name: "a full-consensus item dropped",
        edit: |report, ledger| {
            let item = ledger["items"]
                .as_array()
                .unwrap()
                .iter()
                .find(|i| i["finalClass"] == "full-consensus")
                .expect("the fake team's run has a full-consensus item")["itemId"]
                .clone();
            let rows = report["consensus"].as_array_mut().unwrap();
            let before = rows.len();
            rows.retain(|row| !row["sourceItems"].as_array().unwrap().contains(&item));
            assert_eq!(rows.len(), before - 1);
        },
        pointer: "/consensus: [convergence] `",
        says: "is `full-consensus` in `state/convergence-ledger.json` but no `consensus` row cites it",
    },
    Tamper {
        name: "a completed worker said to have crashed",
        edit: |report, _| {
            let claude = report["workerCoverage"]
                .as_array_mut()
                .unwrap()
                .iter_mut()
                .find(|e| e["workerId"] == "claude")
                .unwrap();
            claude["terminalStatus"] = "failed".into();
            claude["failure"] = serde_json::json!({
                "reason": "crash", "detail": "it crashed", "logTail": []
            });
        },
        pointer: "/workerCoverage/0/terminalStatus: [coverage] worker `claude` has \
                  `terminalStatus` `failed` but okstra computes `completed`",
        says: "its latest attempt decides",
    },
    Tamper {
        name: "the report writer's entry removed",
        edit: |report, _| {
            report["workerCoverage"]
                .as_array_mut()
                .unwrap()
                .retain(|e| e["workerId"] != "report-writer");
        },
        pointer: "/workerCoverage: [coverage] rostered worker `report-writer` (report-writer, \
                  claude) has no coverage entry",
        says: "every worker must be accounted for",
    },
];

#[test]
fn validate_checks_coverage_usage_and_the_ledger_against_the_records() {
    let world = team_project();
    let (outcome, code, stderr) = run(&world, "claude,codex,report-writer", &[]);
    assert_eq!(code, 0, "{stderr}");
    let run = run_dir(&outcome);
    let data_path = run.join("report/data.json");
    let original = read_json(&data_path);
    let ledger = read_json(&run.join("state/convergence-ledger.json"));
    let away = tempfile::tempdir().unwrap();
    for (index, tamper) in TAMPERS.iter().enumerate() {
        let mut report = original.clone();
        (tamper.edit)(&mut report, &ledger);
        write_json(&data_path, &report);

        // In its run: rejected against the records, and the level named.
        let checked = validate(&run, false);
        assert_eq!(checked.code, 1, "{}: {}", tamper.name, checked.stderr);
        let line = checked
            .stdout
            .lines()
            .find(|line| line.starts_with(tamper.pointer))
            .unwrap_or_else(|| {
                panic!(
                    "{}: no `{}` in\n{}",
                    tamper.name, tamper.pointer, checked.stdout
                )
            });
        assert!(line.contains(tamper.says), "{}: {line}", tamper.name);
        assert!(
            checked
                .stderr
                .contains("is not a valid v2.2 report at the `records` level"),
            "{}: {}",
            tamper.name,
            checked.stderr
        );
        // okstra's own blocks are fixed by writing them again, never by
        // hand: the note says how (a ledger item dropped is the writer's).
        let note = format!(
            "note: okstra writes `reliability`, `verification`, `workerCoverage` and \
             `usageSummary` from the run's records; `okstra report {}` writes them again",
            run.display()
        );
        assert_eq!(
            checked.stderr.contains(&note),
            !tamper.pointer.starts_with("/consensus"),
            "{}: {}",
            tamper.name,
            checked.stderr
        );
        let json = validate(&run, true);
        let verdict: Value = serde_json::from_str(&json.stdout).unwrap();
        assert_eq!(
            (verdict["level"].as_str(), verdict["valid"].as_bool()),
            (Some("records"), Some(false)),
            "{}",
            tamper.name
        );

        // The report folder alone, away from its run: only the schema level
        // can be checked, the report passes it, and says so.
        let folder = away.path().join(format!("report-{index}"));
        copy_dir(&run.join("report"), &folder);
        let checked = validate(&folder, false);
        assert_eq!(
            checked.code, 0,
            "{}: {}{}",
            tamper.name, checked.stdout, checked.stderr
        );
        assert!(
            checked
                .stderr
                .contains("is a valid v2.2 report at the `schema` level"),
            "{}: {}",
            tamper.name,
            checked.stderr
        );
        let verdict: Value = serde_json::from_str(&validate(&folder, true).stdout).unwrap();
        assert_eq!(verdict["level"], "schema", "{}", tamper.name);
        assert_eq!(verdict["valid"], true, "{}", tamper.name);
    }

    // `okstra report` puts okstra's blocks back from the records.
    let output = world.okstra().arg("report").arg(&run).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let restored = read_json(&data_path);
    assert_eq!(restored["workerCoverage"], original["workerCoverage"]);
    assert_eq!(restored["usageSummary"], original["usageSummary"]);
}

#[test]
fn the_example_report_validates_at_both_levels() {
    let example = repo_root().join("examples/report");
    let checked = validate(&example, false);
    assert_eq!(checked.code, 0, "{}{}", checked.stdout, checked.stderr);
    assert!(
        checked
            .stderr
            .contains("is a valid v2.2 report at the `records` level"),
        "{}",
        checked.stderr
    );
    // Its report folder alone, as a CI artifact would carry it.
    let away = tempfile::tempdir().unwrap();
    let folder = away.path().join("report");
    copy_dir(&example.join("report"), &folder);
    let checked = validate(&folder, true);
    assert_eq!(checked.code, 0, "{}{}", checked.stdout, checked.stderr);
    let verdict: Value = serde_json::from_str(&checked.stdout).unwrap();
    assert_eq!(verdict["level"], "schema");
    assert_eq!(verdict["crossFileChecks"], false);
    assert!(
        checked
            .stderr
            .contains("skipped the roster and worker-result checks"),
        "{}",
        checked.stderr
    );
}

/// The bundled example ships the snapshot its anchors were checked against
/// and the stored check: `okstra items` on it (an example of its help)
/// agrees with the report that the cited lines hold, and writes nothing —
/// no snapshot taken of whatever surrounds the example, no ref made in the
/// repository it was cloned into.
#[test]
fn the_example_run_answers_items_from_what_it_ships_and_writes_nothing() {
    let away = tempfile::tempdir().unwrap();
    let example = away.path().join("report");
    copy_dir(&repo_root().join("examples/report"), &example);
    let before = tree(&example);
    let output = okstra()
        .args(["items", "--json"])
        .arg(&example)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
    let status = |id: &str| {
        listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["itemId"] == id)
            .unwrap_or_else(|| panic!("no {id} in {listed}"))["anchorStatus"]
            .clone()
    };
    for id in ["claude:F-001", "claude:F-002", "claude:F-003"] {
        assert_eq!(status(id), "verified", "{id}");
    }
    assert_eq!(
        tree(&example),
        before,
        "okstra items wrote into the example"
    );
}
