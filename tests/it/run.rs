//! Integration tests: `okstra run`, the headless lead, end to end on the
//! bundled example project, with one fake program
//! (`tests/fixtures/workers/team.py`) installed under every provider CLI's
//! name. It plays analyser, reviewer and report writer from its prompt, in
//! each CLI's own stream format.

use std::fs;
use std::path::PathBuf;

use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::support::{
    Project, commit_all, copy_dir, okstra, read_json, repo_root, team_state_path,
};

#[path = "run_fail_fast.rs"]
mod fail_fast;
#[path = "run_host.rs"]
mod host;
#[path = "run_host_liveness.rs"]
mod host_liveness;
#[path = "run_preflight.rs"]
mod preflight;
#[path = "run_resume.rs"]
mod resume;

/// A copy of `examples/tiny-service` with the example brief, the fake team
/// installed under every provider CLI's name, and a key variable for each
/// provider (the preflight wants credentials; the fakes never read them).
pub(crate) fn team_project() -> Project {
    team_without_credentials().credentials()
}

/// [`team_project`] without the key variables: the preflight's world.
pub(crate) fn team_without_credentials() -> Project {
    let brief = fs::read_to_string(repo_root().join("examples/brief.md")).unwrap();
    let project = Project::new()
        .key("demo", "review", "reservations")
        .brief(&brief);
    copy_dir(&repo_root().join("examples/tiny-service"), project.root());
    for binary in ["claude", "codex", "agy", "grok", "kimi"] {
        project.fake_cli(binary, "workers/team.py");
    }
    project
}

/// `okstra run` rendering a headless run of `workers`; the JSON outcome,
/// exit code and stderr.
pub fn run(project: &Project, workers: &str, env: &[(&str, &str)]) -> (Value, i32, String) {
    run_with(
        project,
        &["--task-type", "project-analysis", "--workers", workers],
        env,
    )
}

/// `okstra run` rendering a headless run with launcher flags `flags`.
pub(crate) fn run_with(
    project: &Project,
    flags: &[&str],
    env: &[(&str, &str)],
) -> (Value, i32, String) {
    let mut cmd = project.task_command(&["run"], &[flags, &["--yes", "--json"]].concat());
    for (name, value) in env {
        cmd.env(name, value);
    }
    let output = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let outcome: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("no JSON outcome; stderr:\n{stderr}"));
    (outcome, output.status.code().unwrap(), stderr)
}

/// An implementation run: claude the Executor, codex and kimi verifiers.
pub const IMPLEMENTATION: &[&str] = &[
    "--task-type",
    "implementation",
    "--executor",
    "claude",
    "--workers",
    "codex,kimi,report-writer",
];

/// Every attempt record of dispatch `name`, in order.
pub fn attempts(run: &std::path::Path, name: &str) -> Vec<Value> {
    read_json(&team_state_path(run))["dispatches"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["dispatchName"] == name)
        .cloned()
        .collect()
}

pub(crate) fn run_dir(outcome: &Value) -> PathBuf {
    PathBuf::from(outcome["runDir"].as_str().unwrap())
}

#[test]
fn a_headless_run_ends_in_a_valid_report_with_every_convergence_class() {
    let world = team_project();
    let (outcome, code, stderr) = run(&world, "claude,codex,antigravity,kimi,report-writer", &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(outcome["valid"], true);
    let classes = &outcome["convergence"]["classes"];
    for class in [
        "full-consensus",
        "partial-consensus",
        "contested",
        "worker-unique",
    ] {
        assert!(
            classes[class].as_u64().unwrap() >= 1,
            "no {class}: {classes}"
        );
    }
    assert_eq!(outcome["convergence"]["roundsRun"], 2);
    let run = run_dir(&outcome);
    // The report okstra rendered is one `okstra validate` accepts.
    okstra().arg("validate").arg(&run).assert().success();
    assert!(run.join("report/final-report.md").is_file());
    assert!(run.join("report/final-report.html").is_file());
    let report = read_json(&run.join("report/data.json"));
    // okstra wrote the block the writer left out: four of four reviewers
    // answered round 1.
    assert_eq!(report["schemaVersion"], "2.2");
    let reliability = &report["reliability"];
    assert_eq!(reliability["crossVerified"], true, "{reliability}");
    assert!(reliability.get("reason").is_none(), "{reliability}");
    assert_eq!(reliability["reviewersCompleted"], 4);
    assert_eq!(reliability["roundsRun"], 2);
    assert_eq!(
        reliability["rounds"][0]["answered"],
        serde_json::json!(["claude", "codex", "antigravity", "kimi"])
    );
    let contested: Vec<&Value> = report["differences"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["resolution"] == "left contested")
        .collect();
    assert_eq!(contested.len(), 1);
    // Every step is a lead event, so `okstra status` can follow the run.
    let events = fs::read_to_string(run.join("state/lead-events.jsonl")).unwrap();
    for kind in [
        "run-start",
        "round-complete",
        "report-validated",
        "run-complete",
    ] {
        assert!(
            events.contains(&format!("\"kind\":\"{kind}\"")),
            "no {kind}"
        );
    }
    let status = okstra()
        .args(["status", "--json"])
        .arg(&run)
        .output()
        .unwrap();
    let board: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(
        board["runs"][0]["allTerminalByKind"],
        serde_json::json!({"initial": true, "reverify-r1": true, "reverify-r2": true})
    );
}

#[test]
fn an_analyser_without_credentials_is_unavailable_and_convergence_goes_on() {
    let world = team_project();
    let (outcome, code, stderr) = run(
        &world,
        "claude,codex,antigravity,kimi,report-writer",
        &[("FAKE_AUTH_FAIL", "kimi")],
    );
    assert_eq!(code, 0, "{stderr}");
    let run = run_dir(&outcome);
    assert!(outcome["convergence"]["roundsRun"].as_u64().unwrap() >= 1);
    let report = read_json(&run.join("report/data.json"));
    let kimi = report["workerCoverage"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["workerId"] == "kimi")
        .unwrap()
        .clone();
    assert_eq!(kimi["terminalStatus"], "unavailable");
    assert_eq!(kimi["failure"]["reason"], "auth");
    assert!(
        kimi["failure"]["detail"]
            .as_str()
            .unwrap()
            .contains("No model configured")
    );
    assert_eq!(kimi["itemsReported"], 0);
}

/// Without `--json`, stdout is one summary: the verdict, the classes, the
/// cost beside the estimate, the report's paths, and each worker that did
/// not complete with why and how to fix it. stderr says each worker's
/// ending once (no event line repeats it).
#[test]
fn the_closing_summary_says_what_came_out_and_how_to_fix_what_failed() {
    let world = team_project();
    let output = world
        .task_command(
            &["run"],
            &[
                "--task-type",
                "project-analysis",
                "--workers",
                "claude,codex,antigravity,kimi,report-writer",
                "--yes",
            ],
        )
        .env("FAKE_AUTH_FAIL", "kimi")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0],
        "okstra: project-analysis run `project-analysis-001` of `demo/review/reservations`: verdict HEALTHY-WITH-GAPS",
        "{stdout}"
    );
    // Whether it was cross-verified, in the words every output uses.
    assert!(
        lines[1].starts_with("  cross-verified: 3 of 4 reviewers completed their own work"),
        "{stdout}"
    );
    let lines = &lines[1..];
    assert!(
        lines[1].starts_with("  findings: ") && lines[1].contains("full-consensus"),
        "{stdout}"
    );
    // Each finding on a line of its own, with who found and who verified it.
    let findings: Vec<&str> = lines[2..]
        .iter()
        .copied()
        .take_while(|line| line.starts_with("    "))
        .collect();
    // The in-memory finding each analyser made, merged by its reviewers.
    assert!(
        findings[0].starts_with("    C-001 ")
            && findings[0].contains(": found independently by claude, codex, antigravity"),
        "{stdout}"
    );
    assert!(
        findings[1].starts_with("    C-002 ")
            && findings[1].contains(": found by claude; verified by "),
        "{stdout}"
    );
    // The count is of findings (report rows), never of the claims they merge.
    let counted: usize = lines[1]["  findings: ".len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {:?}", lines[1]));
    assert_eq!(counted, findings.len(), "{stdout}");
    let lines = &lines[findings.len()..];
    // codex's model has no price: its tokens are never worth `$0.00`; the
    // priced part is a floor, and one hint says how to give a price.
    assert!(
        lines[2].starts_with("  cost: ≥ $0.0")
            && lines[2].contains(" + unpriced, ")
            && lines[2].contains("(estimated at least "),
        "{stdout}"
    );
    assert!(
        lines[3].starts_with("    hint: okstra's price table (")
            && lines[3]
                .contains("has no price for `gpt-5.6-sol`; to give one, point `OKSTRA_PRICES` at"),
        "{stdout}"
    );
    assert!(
        lines[4].starts_with("  report: ") && lines[4].ends_with("report/final-report.md"),
        "{stdout}"
    );
    assert!(
        lines[5].trim_start().ends_with("report/final-report.html"),
        "{stdout}"
    );
    assert!(
        lines[6].starts_with(
            "  kimi-worker (kimi): auth — error: failed to run prompt: No model configured"
        ),
        "{stdout}"
    );
    assert!(
        lines[7].starts_with("    fix: run `kimi` and `/login`, or set `KIMI_MODEL_API_KEY`")
            && lines[7].contains(", then resume with `okstra run "),
        "{stdout}"
    );
    assert_eq!(lines.len(), 8, "{stdout}");
    assert_eq!(stdout.matches("OKSTRA_PRICES").count(), 1, "{stdout}");
    // One stream: each ending once, no raw event line for it; a normal end
    // said plainly.
    assert!(!stderr.contains("PROGRESS:"), "{stderr}");
    assert!(
        stderr.contains("okstra: claude-worker completed after "),
        "{stderr}"
    );
    assert!(!stderr.contains("recovered"), "{stderr}");
    assert_eq!(
        stderr.matches("kimi-worker ended auth").count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains("okstra: phase 5.5: convergence"),
        "{stderr}"
    );
}

/// Every model priced (codex's through `OKSTRA_PRICES`) and every usage
/// read: the cost is plain dollars, with no floor and no hint; with no
/// model priced, it reads `unpriced`, never `$0.00`.
#[test]
fn a_cost_reads_in_dollars_only_when_every_token_has_a_price() {
    let cost_lines = |roster: &[&str], prices: &str| {
        let world = team_project();
        let file = world.path("prices.json");
        fs::write(&file, prices).unwrap();
        let output = world
            .task_command(
                &["run"],
                &[&["--task-type", "project-analysis", "--yes"], roster].concat(),
            )
            .env("OKSTRA_PRICES", &file)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert_eq!(output.status.code(), Some(0), "{stdout}");
        let lines: Vec<String> = stdout
            .lines()
            .skip_while(|line| !line.starts_with("  cost: "))
            .take(2)
            .map(str::to_owned)
            .collect();
        (lines, stdout)
    };
    let (priced, stdout) = cost_lines(
        &["--workers", "claude,codex,report-writer"],
        r#"{"models": {"gpt-5.6-sol": {"input": 1, "cacheRead": 0.1, "output": 8}}}"#,
    );
    assert!(
        regex::Regex::new(r"^  cost: \$0\.\d{4}, \d+ tokens")
            .unwrap()
            .is_match(&priced[0]),
        "{stdout}"
    );
    assert!(
        !stdout.contains("unpriced") && !stdout.contains("hint:"),
        "{stdout}"
    );
    // Only codex, whose model has no price: `unpriced`, never `$0.00`.
    let (unpriced, stdout) = cost_lines(
        &[
            "--workers",
            "codex,report-writer",
            "--report-writer-provider",
            "codex",
        ],
        r#"{"models": {}}"#,
    );
    assert!(unpriced[0].starts_with("  cost: unpriced, "), "{stdout}");
    assert!(
        unpriced[1].starts_with("    hint: ") && unpriced[1].contains("`gpt-5.6-sol`"),
        "{stdout}"
    );
}

#[test]
fn an_invalid_report_gets_one_repair_attempt_with_the_validators_words() {
    let world = team_project();
    let (outcome, code, stderr) = run(
        &world,
        "claude,codex,antigravity,kimi,report-writer",
        &[("FAKE_BAD_REPORT", "1")],
    );
    assert_eq!(code, 0, "{stderr}");
    let run = run_dir(&outcome);
    let repair = fs::read_to_string(run.join("prompts/report-writer.repair.md")).unwrap();
    assert!(repair.contains("## Repair: your report failed validation"));
    assert!(repair.contains("verdictToken"), "{repair}");
    // The repair carries the validator's messages, the paths and the rules
    // those messages break, not the writer's whole prompt again: under a
    // third of it.
    let writer_prompt = fs::read_to_string(run.join("prompts/report-writer.md")).unwrap();
    assert!(
        repair.len() * 3 < writer_prompt.len(),
        "the repair prompt is {} bytes, the writer's {}",
        repair.len(),
        writer_prompt.len()
    );
    for carried in [
        "/verdictCard/verdictToken: [verdict-card]",
        "**Result Path:** `report/data.json`",
        "- `verdict-card`: `verdictCard.verdictToken` and `verdictCard.direction` repeat",
        "verdictCard:\n",
        "  verdictToken: HEALTHY | HEALTHY-WITH-GAPS | AT-RISK | CRITICAL-RISK\n",
    ] {
        assert!(repair.contains(carried), "`{carried}` not in:\n{repair}");
    }
    for left_out in [
        "## How to fill them",
        "consensus: list of",
        "## The task brief",
    ] {
        assert!(!repair.contains(left_out), "`{left_out}` in:\n{repair}");
    }
    let state_path = team_state_path(&run);
    let writer: Vec<Value> = read_json(&state_path)["dispatches"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["dispatchName"] == "report-writer")
        .cloned()
        .collect();
    assert_eq!(writer.len(), 2);
    assert_eq!(writer[1]["attempt"], 2);
    assert!(
        writer[1]["promptPath"]
            .as_str()
            .unwrap()
            .ends_with("report-writer.repair.md")
    );
    let events = fs::read_to_string(run.join("state/lead-events.jsonl")).unwrap();
    assert!(events.contains("\"kind\":\"report-repair\""));
    assert!(events.contains("\"attempts\":\"2\""));
}

/// The first paragraph of a Markdown report after its title.
fn first_paragraph(markdown: &str) -> &str {
    let mut paragraphs = markdown.split("\n\n");
    assert!(paragraphs.next().unwrap().starts_with("# "), "{markdown}");
    paragraphs.next().unwrap()
}

/// Every reviewer but one fails: the analysers were paid for, so the report
/// is written and rendered, but it says first that nothing was
/// cross-verified, and the run fails.
#[test]
fn a_run_that_loses_quorum_writes_an_unverified_report_and_exits_1() {
    let world = team_project();
    // kimi fails once claude has completed: nothing is left to stop, so
    // the batch keeps what it paid for (see `run_fail_fast.rs` for a loss
    // while a reviewer still runs).
    let (outcome, code, stderr) = run(
        &world,
        "claude,kimi,report-writer",
        &[("FAKE_AUTH_FAIL", "kimi"), ("FAKE_SLEEP_KIMI", "1")],
    );
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(outcome["valid"], true, "{outcome}");
    assert_eq!(outcome["crossVerified"], false, "{outcome}");
    let run = run_dir(&outcome);
    let report = read_json(&run.join("report/data.json"));
    let reliability = &report["reliability"];
    assert_eq!(reliability["crossVerified"], false, "{reliability}");
    assert_eq!(reliability["reason"], "quorum-lost");
    assert_eq!(reliability["reviewersCompleted"], 1);
    assert_eq!(reliability["reviewersRostered"], 2);
    assert_eq!(report["consensus"], serde_json::json!([]));
    let markdown = fs::read_to_string(run.join("report/final-report.md")).unwrap();
    assert!(
        first_paragraph(&markdown)
            .starts_with("> **Not cross-verified (quorum-lost)**: only 1 of 2 reviewers completed"),
        "{markdown}"
    );
    assert!(markdown.contains("_No finding was cross-verified._"));
    // The report writer was told, through the report inputs.
    let inputs = read_json(&run.join("state/report-inputs.json"));
    assert_eq!(inputs["crossVerified"], false);
    assert_eq!(inputs["notCrossVerified"], reliability["detail"]);
    assert!(inputs.get("reliability").is_none(), "{inputs}");
    let last = stderr.lines().last().unwrap();
    assert!(
        last.starts_with(
            "error: the report is written, but not cross-verified (quorum-lost): only 1 of 2"
        ),
        "{stderr}"
    );
    okstra().arg("validate").arg(&run).assert().success();

    // A hand edit claiming cross-verification is caught against the records.
    let data_path = run.join("report/data.json");
    let mut edited = report.clone();
    edited["reliability"]["crossVerified"] = true.into();
    fs::write(&data_path, serde_json::to_vec_pretty(&edited).unwrap()).unwrap();
    let out = okstra().arg("validate").arg(&run).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(
        stdout.starts_with("/reliability/crossVerified: [reliability] ")
            && stdout.contains("okstra computes `false`"),
        "{stdout}"
    );
}

/// One analyser is unverified by design, not by failure: exit 0.
#[test]
fn a_single_analyser_run_is_not_cross_verified_and_exits_0() {
    let world = team_project();
    let (outcome, code, stderr) = run(&world, "claude,report-writer", &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(outcome["valid"], true);
    let run = run_dir(&outcome);
    let reliability = &read_json(&run.join("report/data.json"))["reliability"];
    assert_eq!(reliability["crossVerified"], false, "{reliability}");
    assert_eq!(reliability["reason"], "single-reviewer");
    let markdown = fs::read_to_string(run.join("report/final-report.md")).unwrap();
    assert!(
        first_paragraph(&markdown).starts_with("> **Not cross-verified (single-reviewer)**: "),
        "{markdown}"
    );
    assert!(!stderr.contains("error:"), "{stderr}");
    // Said on the terminal too, in the same words, as the last line.
    assert_eq!(outcome["crossVerified"], false, "{outcome}");
    let line = outcome["verification"].as_str().unwrap();
    assert!(
        line.starts_with("not cross-verified (single-reviewer): "),
        "{outcome}"
    );
    assert_eq!(
        stderr.lines().last().unwrap(),
        format!("note: {line}"),
        "{stderr}"
    );
}

#[test]
fn run_carries_out_a_run_folder_rendered_headless() {
    let world = team_project();
    let run = world.render(&[
        "--headless",
        "--task-type",
        "project-analysis",
        "--task-id",
        "twice",
        "--workers",
        "claude,codex,report-writer",
    ]);
    let manifest = read_json(&run.join("run-manifest.json"));
    assert!(
        manifest["assignments"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["runner"] == "cli-wrapper")
    );
    world.okstra().arg("run").arg(&run).assert().success();
    okstra().arg("validate").arg(&run).assert().success();
    // `--headless` and a host runtime contradict each other.
    let refused = world
        .render_command(&[
            "--headless",
            "--lead-runtime",
            "codex",
            "--task-type",
            "project-analysis",
            "--task-id",
            "no",
        ])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--headless"));
}

/// The lead contract's fix cycle, carried out: the verifiers' confirmed
/// `blocking`/`major` defects (not a confirmed `minor` one, not a refuted
/// `blocking` one) go to `state/fix-request.md`, and the Executor gets its
/// one fix pass before the report.
#[test]
fn an_implementation_run_sends_confirmed_serious_defects_back_to_the_executor_once() {
    let world = team_project();
    commit_all(world.root());
    let (outcome, code, stderr) = run_with(&world, IMPLEMENTATION, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(outcome["valid"], true);
    assert!(
        stderr.contains("okstra: fix pass: 2 defect(s) go back to the Executor"),
        "{stderr}"
    );
    // The phases are the implementation run's, and every event is said in
    // words: no raw `PROGRESS:` line.
    for said in [
        "okstra: phase 4: the Executor\n",
        "okstra: phase 5: the verifiers check the Executor's change\n",
    ] {
        assert!(stderr.contains(said), "{said}{stderr}");
    }
    assert!(!stderr.contains("the analysers"), "{stderr}");
    assert!(!stderr.contains("PROGRESS:"), "{stderr}");
    let run = run_dir(&outcome);
    let request = fs::read_to_string(run.join("state/fix-request.md")).unwrap();
    for sent in [
        "## codex:D-001 (full-consensus)",
        "## kimi:D-001 (full-consensus)",
    ] {
        assert!(request.contains(sent), "{sent} missing:\n{request}");
    }
    for kept in ["codex:D-002", "codex:D-003"] {
        assert!(!request.contains(kept), "{kept} sent:\n{request}");
    }
    let attempts = attempts(&run, "claude-executor");
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    assert!(
        attempts[1]["promptPath"]
            .as_str()
            .unwrap()
            .ends_with("claude-executor.fix.md")
    );
    assert_eq!(attempts[1]["ending"], "completed");
    let result = fs::read_to_string(run.join("results/claude-executor.md")).unwrap();
    assert!(
        result.contains("| P-001 | codex:D-001 | fixed |"),
        "{result}"
    );
}

#[test]
fn with_fix_cycle_no_the_executor_runs_once() {
    let world = team_project();
    commit_all(world.root());
    let (outcome, code, stderr) = run_with(
        &world,
        &[IMPLEMENTATION, &["--fix-cycle", "no"]].concat(),
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("fix-pass"), "{stderr}");
    let run = run_dir(&outcome);
    assert!(!run.join("state/fix-request.md").exists());
    assert_eq!(attempts(&run, "claude-executor").len(), 1);
}

/// A worker cites a line past the end of the file and code that is not in
/// it; every reviewer agrees all the same. okstra's check, not the vote,
/// decides: the claim is unverifiable, never consensus, and the report
/// lists it apart with the anchor that failed.
#[test]
fn an_unanchored_finding_never_reaches_consensus() {
    let world = team_project();
    let (outcome, code, stderr) = run(
        &world,
        "claude,codex,antigravity,kimi,report-writer",
        &[("FAKE_UNANCHORED", "claude")],
    );
    assert_eq!(code, 0, "{stderr}");
    let run = run_dir(&outcome);
    let ledger = read_json(&run.join("state/convergence-ledger.json"));
    let planted = ledger["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["itemId"] == "claude:F-404")
        .unwrap()
        .clone();
    assert_eq!(planted["finalClass"], "unverifiable", "{planted}");
    assert_eq!(planted["anchorStatus"], "unanchored");
    assert_eq!(
        planted["anchors"][0]["reason"],
        "line 88 is past the end of `src/inventory.py` (27 lines), and the excerpt is not in \
         `src/inventory.py`"
    );
    // The reviewers were told, and agreed anyway: their verdicts are there.
    let prompt = fs::read_to_string(run.join("prompts/codex-worker-reverify-r1.md")).unwrap();
    assert!(
        prompt.contains("okstra: `src/inventory.py:88` does not resolve: line 88 is past the end"),
        "{prompt}"
    );
    assert_eq!(planted["verdicts"].as_array().unwrap().len(), 3);
    let report = read_json(&run.join("report/data.json"));
    for row in report["consensus"].as_array().unwrap() {
        assert!(
            !row["sourceItems"]
                .as_array()
                .unwrap()
                .contains(&"claude:F-404".into()),
            "{row}"
        );
    }
    let verified = report["verification"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["itemId"] == "claude:F-404")
        .unwrap();
    assert_eq!(verified["finalClass"], "unverifiable");
    let html = fs::read_to_string(run.join("report/final-report.html")).unwrap();
    let apart = html.find("<h2>Unverifiable claims</h2>").unwrap();
    assert!(html[apart..].contains("<code>claude:F-404</code>"));
    assert!(html[apart..].contains("line 88 is past the end"));
    let markdown = fs::read_to_string(run.join("report/final-report.md")).unwrap();
    assert!(
        markdown.contains("- `claude:F-404`: Stock is decremented twice"),
        "{markdown}"
    );
    // Every other finding was anchored and reviewed as before.
    assert_eq!(outcome["convergence"]["classes"]["unverifiable"], 1);
    assert!(
        outcome["convergence"]["classes"]["full-consensus"]
            .as_u64()
            .unwrap()
            >= 1
    );
}

/// Whole results (seven sections, ~25 items each): only the findings go to
/// review, each of them; overlapping ones are grouped; the snapshot was
/// taken before the analysers started.
#[test]
fn only_findings_go_to_review_and_the_same_defect_is_shown_once() {
    let world = team_project();
    let (outcome, code, stderr) = run(
        &world,
        "claude,codex,antigravity,kimi,report-writer",
        &[("FAKE_FULL", "1")],
    );
    assert_eq!(code, 0, "{stderr}");
    let run = run_dir(&outcome);
    let plan = read_json(&run.join("state/round-plan-r1.json"));
    let mut planned: Vec<&str> = plan["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["itemId"].as_str().unwrap())
        .collect();
    planned.sort_unstable();
    // Each analyser's findings, none of its descriptions.
    assert_eq!(planned.len(), 19, "{planned:?}");
    assert!(planned.iter().all(|id| {
        let item = id.split_once(':').unwrap().1;
        item.starts_with('F') || item.starts_with("AG") || item.starts_with('K')
    }));
    assert_eq!(plan["descriptive"], 80);
    let verdicts: usize = plan["reviewers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["labels"].as_array().unwrap().len())
        .sum();
    assert_eq!(verdicts, 19 * 3, "each claim to each of the three others");
    let groups = plan["groups"].as_array().unwrap();
    let race = groups
        .iter()
        .find(|g| {
            g["items"]
                .as_array()
                .unwrap()
                .contains(&"claude:F-001".into())
        })
        .unwrap();
    assert_eq!(
        race["items"],
        serde_json::json!(["claude:F-001", "codex:F-1", "antigravity:AG-1", "kimi:K-1"])
    );
    let snapshot = read_json(&run.join("state/snapshot.json"));
    assert_eq!(snapshot["taken"], "first-dispatch");
    // The false lead was refuted by the three others with evidence of their
    // own; the race all four reported is one finding: each owner, shown its
    // own claim beside the others', said `same claim as my …`.
    let ledger = read_json(&run.join("state/convergence-ledger.json"));
    let class = |id: &str| {
        ledger["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["itemId"] == id)
            .unwrap()["finalClass"]
            .clone()
    };
    assert_eq!(class("claude:F-006"), "refuted");
    assert_eq!(class("claude:F-001"), "full-consensus");
    let merged = ledger["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["itemId"] == "claude:F-001")
        .unwrap()["mergedWith"]
        .clone();
    assert_eq!(
        merged,
        serde_json::json!(["codex:F-1", "antigravity:AG-1", "kimi:K-1"])
    );

    // A description nobody was asked to check, promoted into a consensus
    // row of the report: rejected against the records.
    let items = world
        .okstra()
        .args(["items", "--json"])
        .arg(&run)
        .output()
        .unwrap();
    let items: Value = serde_json::from_slice(&items.stdout).unwrap();
    let description = items["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["claim"] == false && i["owner"] == "claude")
        .expect("a whole result has descriptions")["itemId"]
        .clone();
    let data_path = run.join("report/data.json");
    let mut report = read_json(&data_path);
    let row = &mut report["consensus"][0]["sourceItems"];
    let position = row.as_array().unwrap().len();
    row.as_array_mut().unwrap().push(description.clone());
    fs::write(&data_path, serde_json::to_vec_pretty(&report).unwrap()).unwrap();
    let output = world.okstra().arg("validate").arg(&run).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    let wanted = format!(
        "/consensus/0/sourceItems/{position}: [convergence] `{}` is not a claim of the ledger",
        description.as_str().unwrap()
    );
    assert!(stdout.contains(&wanted), "{wanted}\n{stdout}");
}
