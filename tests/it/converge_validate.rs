//! Convergence: `okstra items` and `okstra validate`'s ledger checks, and
//! hostile files refused without hanging.

use super::*;

#[test]
fn items_lists_every_completed_analysers_items_with_evidence() {
    let run = RunDir::render("claude,codex,kimi,report-writer");
    run.result(
        "claude",
        "# claude\n\n## 1. Findings\n\n| ID | Finding |\n|---|---|\n| F-001 | retries loop | `src/client.rs:88` |\n\n## 2. Reproduction\n\n- [R-1] run `cargo test retry` and see \"six requests\"\n",
    );
    run.result("codex", "## 1. Findings\n\n1. [1.1] no evidence here\n");
    let out = run_args(&["items", run.path(), "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let listed: Value = serde_json::from_str(&out.stdout).unwrap();
    let ids: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["itemId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["claude:F-001", "claude:R-1", "codex:1.1"]);
    let r1 = &listed["items"][1];
    assert_eq!(r1["owner"], "claude");
    assert_eq!(r1["section"], "2. Reproduction");
    assert_eq!(
        r1["evidence"],
        json!([{"kind": "command", "text": "cargo test retry"}, {"kind": "quote", "text": "six requests"}])
    );
    // kimi has no attempt record: it did not run, so it is not said to
    // have run and printed nothing.
    assert_eq!(
        listed["skipped"],
        json!([{"workerId": "kimi", "reason": "not-dispatched"}])
    );
    assert!(
        out.stderr.contains("skipped `kimi`: it was not dispatched"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_worker_never_dispatched_and_one_that_wrote_nothing_are_told_apart() {
    let run = RunDir::render("claude,codex,kimi,report-writer");
    run.result("claude", &findings("claude", 1));
    run.dispatch("claude-worker", "initial", "claude", "completed", "claude");
    // codex ran, and its attempt ended `completed`, but its result is empty.
    run.result("codex", "");
    run.dispatch("codex-worker", "initial", "codex", "completed", "codex");
    // kimi was never dispatched: no attempt of it is recorded.
    let out = run_args(&["items", run.path(), "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let listed: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        listed["skipped"],
        json!([
            {"workerId": "codex", "reason": "empty-output"},
            {"workerId": "kimi", "reason": "not-dispatched"},
        ])
    );
    assert!(
        out.stderr
            .contains("skipped `codex`: it did not complete (empty-output)"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(
            "skipped `kimi`: it was not dispatched (not-dispatched: no attempt of it is recorded)"
        ),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("`kimi`: it did not complete"),
        "{}",
        out.stderr
    );

    // The convergence ledger says the same of both.
    run_classify(&run);
    let unavailable: Vec<(String, String)> = run.ledger()["unavailable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["workerId"].as_str().unwrap().to_owned(),
                u["terminalStatus"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        unavailable,
        [
            ("codex".to_owned(), "empty-output".to_owned()),
            ("kimi".to_owned(), "not-dispatched".to_owned()),
        ]
    );
}

// --------------------------------------------------------------- validate

fn report_fixture(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures/reports").join(name)
}

fn validate_lines(target: &Path) -> (i32, Vec<String>) {
    let out = run(&["validate", target.to_str().unwrap()]);
    (out.code, out.stdout.lines().map(str::to_owned).collect())
}

#[test]
fn validate_checks_the_report_against_the_ledger() {
    let (code, lines) = validate_lines(&report_fixture("invalid-convergence"));
    assert_eq!(code, 1);
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert!(lines[0].starts_with("/consensus/2/convergence: [convergence] `partial-consensus`"));
    assert!(
        lines[1]
            .starts_with("/consensus/2/sourceItems/0: [convergence] `claude:F-003` is `contested`")
    );
    // Nobody said the two claims C-003 cites are the same: two findings.
    assert!(lines[2].starts_with(
        "/consensus/2/sourceItems/1: [convergence] `codex:1.3` and `claude:F-003` are two findings"
    ));
    assert!(lines[3].starts_with("/differences: [convergence] `claude:F-003` is `contested`"));
}

#[test]
fn validate_checks_header_and_item_counts_against_the_run() {
    let (code, lines) = validate_lines(&report_fixture("invalid-header-run"));
    assert_eq!(code, 1);
    assert_eq!(
        lines,
        [
            "/header/runId: [header] `header.runId` is `error-analysis-002` but the run manifest says `error-analysis-001`",
            "/header/taskKey: [header] `header.taskKey` is `demo/payments/other` but the run manifest says `demo/payments/timeout-123`",
        ]
    );
    let (code, lines) = validate_lines(&report_fixture("invalid-coverage-count"));
    assert_eq!(code, 1);
    assert_eq!(
        lines,
        [
            "/workerCoverage/0/itemsReported: [coverage] worker `claude` reports 5 items but 6 are parsed from its result `results/claude-worker.md`"
        ]
    );
}

#[test]
fn a_report_consistent_with_its_ledger_is_valid() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&report_fixture("v2-valid"), dir.path());
    // grok checked every pair of root causes and said they are the same
    // claims: three findings, each found by claude and codex and verified by
    // grok alone (a finder never verifies its own), so C-003 is full.
    let data = dir.path().join("report/data.json");
    let mut report: Value = serde_json::from_slice(&fs::read(&data).unwrap()).unwrap();
    report["consensus"][2]["convergence"] = json!("full-consensus");
    fs::write(&data, serde_json::to_vec_pretty(&report).unwrap()).unwrap();
    let checked = "`grep -n loop src/payments/client.rs` \"88: loop {\"";
    let said = |reviewer: &str, verdict: &str, same_as: Option<&str>| {
        let mut entry =
            json!({"round": 1, "reviewer": reviewer, "verdict": verdict, "evidence": checked});
        if let Some(other) = same_as {
            entry["sameAs"] = json!(other);
        }
        entry
    };
    let claims = [
        ("claude:F-001", vec![said("grok", "AGREE", None)]),
        (
            "codex:1.1",
            vec![said("grok", "AGREE", Some("claude:F-001"))],
        ),
        ("claude:F-002", vec![said("grok", "AGREE", None)]),
        (
            "codex:1.2",
            vec![said("grok", "AGREE", Some("claude:F-002"))],
        ),
        ("claude:F-003", vec![said("grok", "AGREE", None)]),
        (
            "codex:1.3",
            vec![said("grok", "AGREE", Some("claude:F-003"))],
        ),
        (
            "claude:Q-1",
            vec![said("codex", "DISAGREE", None), said("grok", "AGREE", None)],
        ),
        ("codex:2.1", vec![]),
    ];
    let items: Vec<Value> = claims
        .iter()
        .map(|(id, verdicts)| json!({"itemId": id, "owner": id.split(':').next().unwrap(), "verdicts": verdicts}))
        .collect();
    fs::create_dir_all(dir.path().join("state")).unwrap();
    fs::write(
        dir.path().join("state/convergence-ledger.json"),
        serde_json::to_vec(&json!({"items": items})).unwrap(),
    )
    .unwrap();
    let out = run(&["validate", dir.path().to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);

    // A broken ledger is a problem of the report's run, named once.
    fs::write(dir.path().join("state/convergence-ledger.json"), "{").unwrap();
    let (code, lines) = validate_lines(dir.path());
    assert_eq!(code, 1);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("/: [convergence] the run's convergence ledger cannot be used"));
}

#[test]
fn hostile_files_are_refused_without_hanging() {
    let run = RunDir::render("claude,codex,kimi,report-writer");
    run.result("claude", &findings("claude", 1));
    run.result("codex", &findings("codex", 1));
    // kimi's Result Path is a symlink out of the project: never read.
    let kimi = PathBuf::from(run.assignment("kimi")["resultPath"].as_str().unwrap());
    std::os::unix::fs::symlink("/etc/hostname", &kimi).unwrap();
    let out = run_args(&["items", run.path(), "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let listed: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(listed["skipped"][0]["workerId"], "kimi");

    // A plan edited to send record to another file is refused.
    let plan = run.plan(1, &[]);
    let path = run.dir.join("state/round-plan-r1.json");
    let mut edited = plan.clone();
    edited["reviewers"][0]["dispatchName"] = json!("report-writer-reverify-r1");
    fs::write(&path, serde_json::to_vec(&edited).unwrap()).unwrap();
    let out = run_args(&["converge", "record", run.path(), "--round", "1"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("this run expects `claude-worker-reverify-r1`"),
        "{}",
        out.stderr
    );
    assert!(!run.dir.join("state/convergence-ledger.json").exists());

    // A FIFO where the ledger should be is refused at once, not waited on.
    let ledger = run.dir.join("state/convergence-ledger.json");
    nix::unistd::mkfifo(&ledger, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let out = run_args(&["converge", "classify", run.path()]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("not a regular file"), "{}", out.stderr);
}
