//! Integration tests: the outputs where reviews happen. SARIF (`okstra
//! report --format sarif`) checked against the official SARIF 2.1.0 schema
//! (`tests/fixtures/sarif/`, see its SOURCE.md) and GitHub's limits; the
//! gate's exit codes on crafted reports; runs scoped to a change (`--diff`)
//! and `gate --new-only`; findings that tell the truth (`truth`).

use std::fs;
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};
use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::run::{run_dir, run_with, team_project};
use crate::support::commit_all;
use crate::support::{Project, copy_dir, okstra, read_json, repo_root, team_state_path};

#[path = "outputs_publish.rs"]
mod publish;
#[path = "outputs_truth.rs"]
mod truth;

/// The official SARIF 2.1.0 schema, compiled once per test.
fn sarif_validator() -> jsonschema::Validator {
    let schema: Value =
        read_json(&repo_root().join("tests/fixtures/sarif/sarif-schema-2.1.0.json"));
    jsonschema::validator_for(&schema).expect("the SARIF schema compiles")
}

/// Every schema violation of `log`, one line each.
fn violations(log: &Value) -> Vec<String> {
    sarif_validator()
        .iter_errors(log)
        .map(|err| format!("{}: {err}", err.instance_path()))
        .collect()
}

/// A copy of the bundled example run (errors: the fixture is read-only for
/// the tests).
fn example_copy(dir: &Path) -> PathBuf {
    let run = dir.join("example-run");
    copy_dir(&repo_root().join("examples/report"), &run);
    run
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn okstra_in(args: &[&str]) -> Out {
    let output = okstra().args(args).output().unwrap();
    Out {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// `okstra report <target> --format sarif --out <file>`; the parsed log.
fn sarif_of(target: &Path, out: &Path) -> Value {
    let run = okstra_in(&[
        "report",
        target.to_str().unwrap(),
        "--format",
        "sarif",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.trim(), out.to_str().unwrap());
    read_json(out)
}

/// The results of a log's one run.
fn results(log: &Value) -> &Vec<Value> {
    log["runs"][0]["results"].as_array().unwrap()
}

/// A result's row, first location and fingerprint.
fn summary(result: &Value) -> (String, Option<String>, String) {
    let location = result["locations"][0]["physicalLocation"]
        .as_object()
        .map(|at| {
            format!(
                "{}:{}-{}",
                at["artifactLocation"]["uri"].as_str().unwrap(),
                at["region"]["startLine"],
                at["region"]["endLine"]
            )
        });
    (
        result["properties"]["reportRow"]
            .as_str()
            .unwrap()
            .to_owned(),
        location,
        result["partialFingerprints"]["okstraFinding/v2"]
            .as_str()
            .unwrap()
            .to_owned(),
    )
}

/// GitHub code scanning's documented limits on one upload.
fn within_github_limits(log: &Value, bytes: u64) {
    let runs = log["runs"].as_array().unwrap();
    assert!(runs.len() <= 20);
    for run in runs {
        let results = run["results"].as_array().unwrap();
        assert!(results.len() <= 25_000);
        for result in results {
            let locations = result["locations"].as_array().map_or(0, Vec::len);
            assert!(locations <= 1_000);
            for location in result["locations"].as_array().into_iter().flatten() {
                let uri = location["physicalLocation"]["artifactLocation"]["uri"]
                    .as_str()
                    .unwrap();
                assert!(!uri.starts_with('/') && !uri.contains(".."), "{uri}");
            }
        }
        let tags = run["tool"]["driver"]["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|rule| rule["properties"]["tags"].as_array().map_or(0, Vec::len))
            .max()
            .unwrap_or(0);
        assert!(tags <= 20);
    }
    // 10 MB gzipped is the limit; the uncompressed log is far below it.
    assert!(bytes < 10 * 1024 * 1024, "{bytes} bytes");
}

#[test]
fn sarif_schema_fixture_is_the_pinned_copy() {
    let bytes = fs::read(repo_root().join("tests/fixtures/sarif/sarif-schema-2.1.0.json")).unwrap();
    assert_eq!(
        sha256(&bytes),
        "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"
    );
    // The validator is not a rubber stamp: a log without `version` fails.
    let broken = serde_json::json!({"runs": []});
    assert!(!violations(&broken).is_empty());
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    use std::fmt::Write as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .fold(String::new(), |mut hex, b| {
            let _ = write!(hex, "{b:02x}");
            hex
        })
}

#[test]
fn sarif_of_the_example_report_is_valid_relative_and_anchored() {
    let dir = tempfile::tempdir().unwrap();
    let run = example_copy(dir.path());
    let out = dir.path().join("example.sarif");
    let log = sarif_of(&run, &out);
    assert_eq!(violations(&log), Vec::<String>::new());
    within_github_limits(&log, fs::metadata(&out).unwrap().len());
    assert_eq!(log["version"], "2.1.0");
    let driver = &log["runs"][0]["tool"]["driver"];
    assert_eq!(driver["name"], "okstra");
    let rules: Vec<&str> = driver["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|rule| rule["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        rules,
        [
            "okstra/finding",
            "okstra/root-cause",
            "okstra/risk",
            "okstra/defect"
        ]
    );
    let rows: Vec<(String, Option<String>)> = results(&log)
        .iter()
        .map(|result| {
            let (row, location, _) = summary(result);
            (row, location)
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            ("C-001".into(), Some("src/payments/client.rs:88-88".into())),
            ("C-002".into(), Some("src/payments/client.rs:94-94".into())),
            ("C-003".into(), Some("config/payments.toml:12-12".into())),
            ("C-004".into(), Some("src/payments/client.rs:88-88".into())),
            ("C-005".into(), Some("src/payments/client.rs:94-94".into())),
            ("C-006".into(), Some("config/payments.toml:12-12".into())),
            // codex's part of it cites the config line.
            ("D-001".into(), Some("config/payments.toml:12-12".into())),
        ]
    );
    let critical = &results(&log)[1];
    assert_eq!(critical["level"], "error");
    // An error analysis's root-cause section.
    assert_eq!(critical["ruleId"], "okstra/root-cause");
    assert_eq!(critical["properties"]["convergence"], "full-consensus");
    assert_eq!(critical["properties"]["severity"], "critical");
    // Found by its owner alone (nobody said codex's claim is the same),
    // verified by the other.
    assert_eq!(
        critical["properties"]["foundBy"],
        serde_json::json!(["claude"])
    );
    assert_eq!(
        critical["properties"]["agreedBy"],
        serde_json::json!(["codex"])
    );
    let contested = &results(&log)[6];
    assert_eq!(contested["properties"]["convergence"], "contested");
    assert_eq!(contested["properties"]["anchored"], true);
    assert!(
        !contested["message"]["text"]
            .as_str()
            .unwrap()
            .contains("(unanchored:")
    );
    assert_eq!(log["runs"][0]["properties"]["crossVerified"], true);
}

#[test]
fn sarif_is_refused_for_an_invalid_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.sarif");
    let invalid = repo_root().join("tests/fixtures/reports/invalid-row-id");
    let run = okstra_in(&[
        "report",
        invalid.to_str().unwrap(),
        "--format",
        "sarif",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("refusing to write SARIF"),
        "{}",
        run.stderr
    );
    assert!(!out.exists());
}

/// `git` in `root`, which must succeed.
fn git(root: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// A headless run of the fake team (claude, codex, kimi analysers) with
/// `flags`; its run folder.
fn team_run(project: &Project, task_id: &str, flags: &[&str]) -> PathBuf {
    let (outcome, code, stderr) = run_with(
        project,
        &[
            &[
                "--task-type",
                "project-analysis",
                "--workers",
                "claude,codex,kimi,report-writer",
                "--task-id",
                task_id,
            ],
            flags,
        ]
        .concat(),
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    run_dir(&outcome)
}

/// The anchored results' (first location, fingerprint): the identity code
/// scanning keeps across runs (an unanchored finding is never merged).
fn prints(log: &Value) -> Vec<(Option<String>, String)> {
    let mut found: Vec<(Option<String>, String)> = results(log)
        .iter()
        .map(|result| {
            let (_, location, print) = summary(result);
            (location, print)
        })
        .filter(|(location, _)| location.is_some())
        .collect();
    found.sort();
    found
}

#[test]
fn sarif_of_headless_runs_keeps_fingerprints_until_the_line_changes() {
    let project = team_project();
    commit_all(project.root());
    let first = team_run(&project, "sarif-a", &[]);
    let second = team_run(&project, "sarif-b", &[]);
    let manifest = read_json(&first.join("run-manifest.json"));
    let head = git(project.root(), &["rev-parse", "HEAD"]);
    assert_eq!(manifest["source"]["commit"], head.trim());
    assert_eq!(manifest["source"]["clean"], true);

    let one = sarif_of(&first, &project.path("one.sarif"));
    let two = sarif_of(&second, &project.path("two.sarif"));
    for log in [&one, &two] {
        assert_eq!(violations(log), Vec::<String>::new());
    }
    within_github_limits(&one, fs::metadata(project.path("one.sarif")).unwrap().len());
    // Locations are relative to the project root and name real lines.
    for result in results(&one) {
        for location in result["locations"].as_array().into_iter().flatten() {
            let at = &location["physicalLocation"];
            let uri = at["artifactLocation"]["uri"].as_str().unwrap();
            let line = at["region"]["startLine"].as_u64().unwrap();
            let text = fs::read_to_string(project.root().join(uri)).unwrap();
            assert!(
                text.lines().count() >= usize::try_from(line).unwrap(),
                "{uri}:{line}"
            );
        }
    }
    assert!(!results(&one).is_empty());
    assert_eq!(prints(&one), prints(&two), "same tree, same fingerprints");

    // Change the content of line 1 only, commit, run again.
    let source = project.root().join("src/inventory.py");
    let text = fs::read_to_string(&source).unwrap();
    let (first_line, rest) = text.split_once('\n').unwrap();
    fs::write(&source, format!("{first_line}  # changed\n{rest}")).unwrap();
    git(project.root(), &["commit", "-q", "-am", "change line 1"]);
    let third = team_run(&project, "sarif-c", &[]);
    let three = sarif_of(&third, &project.path("three.sarif"));
    let line_of = |log: &Value, wanted: &str| -> Vec<String> {
        prints(log)
            .into_iter()
            .filter(|(location, _)| location.as_deref() == Some(wanted))
            .map(|(_, print)| print)
            .collect()
    };
    let before = line_of(&one, "src/inventory.py:1-1");
    let after = line_of(&three, "src/inventory.py:1-1");
    assert!(!before.is_empty());
    assert_eq!(before.len(), after.len());
    for print in &after {
        assert!(
            !before.contains(print),
            "line 1 changed, its fingerprint must too"
        );
    }
    assert_eq!(
        line_of(&one, "src/inventory.py:2-2"),
        line_of(&three, "src/inventory.py:2-2"),
        "line 2 is unchanged"
    );
    // The first run's fingerprints come from the commit it analysed, not
    // from the files as they are now.
    assert_eq!(
        prints(&sarif_of(&first, &project.path("again.sarif"))),
        prints(&one)
    );
}

/// `okstra gate` with `args`.
fn gate(target: &Path, args: &[&str]) -> Out {
    okstra_in(&[&["gate", target.to_str().unwrap()], args].concat())
}

#[test]
fn the_gate_fails_on_a_critical_finding_of_the_example() {
    let out = gate(
        &repo_root().join("examples/report"),
        &["--fail-on", "critical"],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "C-002 critical full-consensus src/payments/client.rs:94 A new idempotency key is \
         generated for every attempt, defeating the provider's deduplication.\n\
         C-005 critical full-consensus src/payments/client.rs:94 Each attempt mints a fresh \
         idempotency key, so the provider cannot deduplicate our retries (codex's account).\n"
    );
    assert!(
        out.stderr
            .contains("gate failed: 2 findings at or above `critical`"),
        "{}",
        out.stderr
    );
    let high = gate(&repo_root().join("examples/report"), &["--fail-on", "high"]);
    assert_eq!(high.code, 1);
    assert_eq!(high.stdout.lines().count(), 4, "{}", high.stdout);
    // Only worker-unique findings counted: the example's are unanchored.
    let lone = gate(
        &repo_root().join("examples/report"),
        &["--fail-on", "info", "--classes", "worker-unique"],
    );
    assert_eq!(lone.code, 0, "{}", lone.stderr);
    assert!(lone.stderr.contains("gate passed"), "{}", lone.stderr);
    let json = gate(
        &repo_root().join("examples/report"),
        &["--fail-on", "critical", "--json"],
    );
    let decision: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(decision["outcome"], "findings");
    assert_eq!(decision["exitCode"], 1);
    assert_eq!(decision["counted"][0]["row"], "C-002");
    assert_eq!(
        decision["counted"][0]["location"],
        "src/payments/client.rs:94"
    );
}

#[test]
fn the_gate_says_3_without_a_reliable_answer() {
    // Not cross-verified (a valid report whose reviewers lost quorum).
    let unverified = gate(
        &repo_root().join("tests/fixtures/reports/v2.2-unverified"),
        &["--fail-on", "high"],
    );
    assert_eq!(unverified.code, 3, "{}", unverified.stderr);
    assert!(
        unverified.stderr.contains("not cross-verified"),
        "{}",
        unverified.stderr
    );
    assert!(
        unverified.stderr.contains("quorum-lost"),
        "{}",
        unverified.stderr
    );
    // Its findings are worker-unique (one model's word): not counted by
    // default. Counted, they come first: 1, listed (the ledger's every
    // claim is in the report, so all three findings).
    let info = gate(
        &repo_root().join("tests/fixtures/reports/v2.2-unverified"),
        &["--fail-on", "info", "--classes", "worker-unique"],
    );
    assert_eq!(info.code, 1, "{}", info.stderr);
    assert_eq!(
        info.stdout,
        "D-001 unranked worker-unique src/payments/client.rs:88 Timeouts are retried \
         immediately and without an attempt limit.\nD-002 unranked worker-unique \
         src/payments/client.rs:94 A new idempotency key is generated for every attempt.\n\
         D-003 unranked worker-unique config/payments.toml:12 The 2 s timeout is shorter than \
         the upstream's p99 latency.\n"
    );
    // An invalid report.
    let invalid = gate(
        &repo_root().join("tests/fixtures/reports/invalid-verdict-card"),
        &["--fail-on", "critical"],
    );
    assert_eq!(invalid.code, 3, "{}", invalid.stderr);
    assert!(
        invalid.stderr.contains("does not validate"),
        "{}",
        invalid.stderr
    );
    // A report that is not JSON.
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("data.json");
    fs::write(&garbage, "{ not json").unwrap();
    let broken = gate(&garbage, &["--fail-on", "critical"]);
    assert_eq!(broken.code, 3, "{}", broken.stderr);

    // A run stopped by its budget.
    let run = example_copy(dir.path());
    let state_path = team_state_path(&run);
    let mut state = read_json(&state_path);
    state["budget"] = serde_json::json!({"stoppedAt": "2026-03-12T14:40:00Z",
        "reason": "recorded cost $5.00 reached --max-cost 5.00", "maxCostUsd": 5.0,
        "maxTokens": null});
    fs::write(&state_path, serde_json::to_vec_pretty(&state).unwrap()).unwrap();
    let budget = gate(
        &run,
        &["--fail-on", "critical", "--classes", "worker-unique"],
    );
    assert_eq!(budget.code, 3, "{}", budget.stderr);
    assert!(
        budget.stderr.contains("stopped by its budget"),
        "{}",
        budget.stderr
    );

    // A run still being driven (another process holds its lease).
    let running = example_copy(&dir.path().join("second"));
    fs::create_dir_all(running.join("state")).unwrap();
    let lease = fs::File::create(running.join("state/run.lease")).unwrap();
    let held = Flock::lock(lease, FlockArg::LockExclusiveNonblock).unwrap();
    let busy = gate(
        &running,
        &["--fail-on", "critical", "--classes", "worker-unique"],
    );
    assert_eq!(busy.code, 3, "{}", busy.stderr);
    assert!(busy.stderr.contains("still running"), "{}", busy.stderr);
    drop(held);
    let free = gate(
        &running,
        &["--fail-on", "critical", "--classes", "worker-unique"],
    );
    assert_eq!(free.code, 0, "{}", free.stderr);
}

#[test]
fn the_gate_refuses_bad_input_with_2() {
    let example = repo_root().join("examples/report");
    for (args, says) in [
        (vec!["--fail-on", "severe"], "`severe` is not a severity"),
        (
            vec!["--fail-on", "high", "--classes", "consensus"],
            "`consensus` is not a convergence class",
        ),
        (
            vec!["--fail-on", "high", "--new-only"],
            "`--new-only` needs a run scoped to a change",
        ),
        (
            vec!["--fail-on", "high", "--baseline", "/nonexistent/x.sarif"],
            "cannot read the baseline",
        ),
    ] {
        let out = gate(&example, &args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        // One line, or clap's whole refusal opening with that line.
        let first = out.stderr.lines().next().unwrap_or_default();
        assert!(first.contains(says), "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.lines().count() == 1 || out.stderr.contains("try '--help'"),
            "{}",
            out.stderr
        );
    }
    let missing = gate(Path::new("/nonexistent/run"), &["--fail-on", "high"]);
    assert_eq!(missing.code, 2);
    assert!(
        missing.stderr.contains("does not exist"),
        "{}",
        missing.stderr
    );
}

#[test]
fn the_gate_takes_a_baseline_of_fingerprints() {
    let dir = tempfile::tempdir().unwrap();
    let run = example_copy(dir.path());
    let baseline = dir.path().join("baseline.sarif");
    sarif_of(&run, &baseline);
    let out = gate(
        &run,
        &[
            "--fail-on",
            "critical",
            "--baseline",
            baseline.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    // It says what it left out, so a pass is not mistaken for no finding.
    let without = gate(&run, &["--fail-on", "critical"]);
    assert_eq!(without.code, 1, "{}", without.stderr);
    let known = without.stdout.lines().count();
    assert!(known > 0, "{}", without.stdout);
    let said = format!(
        "okstra: the baseline left out {known} finding{} at or above `critical` that it already lists\n",
        if known == 1 { "" } else { "s" }
    );
    assert!(out.stderr.contains(&said), "{}", out.stderr);
    let json = gate(
        &run,
        &[
            "--fail-on",
            "critical",
            "--baseline",
            baseline.to_str().unwrap(),
            "--json",
        ],
    );
    let decision: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(decision["baselineExcluded"], known, "{decision}");
    assert_eq!(decision["counted"], serde_json::json!([]), "{decision}");
}

#[test]
fn validate_rejects_a_row_ranked_below_its_source_item() {
    let dir = tempfile::tempdir().unwrap();
    let run = example_copy(dir.path());
    // claude's F-001 is `blocking` (critical); the report ranks C-001 `high`.
    let result = run.join("results/claude-worker.md");
    let text = fs::read_to_string(&result).unwrap();
    let text = text
        .replace(
            "| ID | Finding | Evidence |",
            "| ID | Finding | Evidence | Severity |",
        )
        .replace(
            "|----|---------|----------|",
            "|----|---------|----------|----------|",
        )
        .replace(
            "`src/payments/client.rs:88` |",
            "`src/payments/client.rs:88` | blocking |",
        )
        .replace(
            "`src/payments/client.rs:94` |",
            "`src/payments/client.rs:94` | major |",
        )
        .replace(
            "`config/payments.toml:12` |",
            "`config/payments.toml:12` | medium |",
        );
    fs::write(&result, &text).unwrap();
    // As if claude had written this result: its attempt recorded it, and
    // okstra wrote its blocks from it.
    let state_path = run.join("state/team-state-error-analysis-001.json");
    let mut state: Value = serde_json::from_slice(&fs::read(&state_path).unwrap()).unwrap();
    state["dispatches"][0]["resultSha256"] = serde_json::json!(sha256(text.as_bytes()));
    fs::write(&state_path, serde_json::to_vec_pretty(&state).unwrap()).unwrap();
    okstra_in(&["report", run.to_str().unwrap()]);
    let out = okstra_in(&["validate", run.to_str().unwrap()]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "/consensus/0/severity: [severity] `high` is below `critical`, the severity of source \
         item `claude:F-001`; a row is at least as severe as its most severe source item\n"
    );
    // The gate will not judge it.
    let gated = gate(&run, &["--fail-on", "critical"]);
    assert_eq!(gated.code, 3, "{}", gated.stderr);
}

#[test]
fn a_diff_run_marks_pre_existing_claims_and_gates_on_new_ones() {
    let project = team_project();
    commit_all(project.root());
    git(project.root(), &["branch", "base"]);
    git(project.root(), &["checkout", "-q", "-b", "feature"]);
    // The change touches line 2 of src/inventory.py only.
    let source = project.root().join("src/inventory.py");
    let text = fs::read_to_string(&source).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines[1].push_str("  # changed by the feature");
    fs::write(&source, lines.join("\n") + "\n").unwrap();
    git(project.root(), &["commit", "-q", "-am", "feature"]);

    let run = team_run(
        &project,
        "diff-run",
        &["--diff", "base...HEAD", "--fail-on", "critical"],
    );
    let brief = fs::read_to_string(run.join("inputs/task-brief.md")).unwrap();
    assert!(brief.contains("## The change under review"), "{brief}");
    assert!(brief.contains("+++ b/src/inventory.py"), "{brief}");
    let manifest = read_json(&run.join("run-manifest.json"));
    assert_eq!(manifest["change"]["spec"], "base...HEAD");
    assert_eq!(
        manifest["change"]["files"],
        serde_json::json!([{"path": "src/inventory.py", "hunks": [[2, 2]]}])
    );

    let log = sarif_of(&run, &project.path("diff.sarif"));
    assert_eq!(violations(&log), Vec::<String>::new());
    let mut marks: Vec<(String, bool)> = results(&log)
        .iter()
        .filter_map(|result| {
            let (_, location, _) = summary(result);
            Some((location?, result["properties"]["preExisting"].as_bool()?))
        })
        .collect();
    marks.sort();
    marks.dedup();
    assert!(
        marks.contains(&("src/inventory.py:2-2".into(), false)),
        "{marks:?}"
    );
    assert!(
        marks.contains(&("src/inventory.py:1-1".into(), true)),
        "{marks:?}"
    );
    assert!(
        marks
            .iter()
            .all(|(at, pre)| *pre == (at != "src/inventory.py:2-2")),
        "{marks:?}"
    );

    let all = gate(&run, &["--fail-on", "info"]);
    let new = gate(&run, &["--fail-on", "info", "--new-only"]);
    assert_eq!(all.code, 1, "{}", all.stderr);
    assert_eq!(new.code, 1, "{}", new.stderr);
    assert!(new.stdout.lines().count() < all.stdout.lines().count());
    for line in new.stdout.lines() {
        assert!(line.contains("src/inventory.py:2 "), "{line}");
    }
    // The head must be the checked-out commit.
    let other = project
        .task_command(
            &["--render-only", "--yes"],
            &["--task-type", "project-analysis", "--diff", "base...base"],
        )
        .output()
        .unwrap();
    assert_eq!(other.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&other.stderr);
    assert!(stderr.contains("check the head out first"), "{stderr}");
}

#[test]
fn run_fail_on_replaces_the_runs_exit_code_with_the_gates() {
    let project = team_project();
    let flags = [
        "--task-type",
        "project-analysis",
        "--workers",
        "claude,codex,kimi,report-writer",
    ];
    let (_, code, stderr) = run_with(
        &project,
        &[&flags[..], &["--task-id", "gate-info", "--fail-on", "info"]].concat(),
        &[],
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("gate failed"), "{stderr}");
    let (_, code, stderr) = run_with(
        &project,
        &[
            &flags[..],
            &["--task-id", "gate-critical", "--fail-on", "critical"],
        ]
        .concat(),
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("gate passed"), "{stderr}");
}
