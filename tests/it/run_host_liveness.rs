//! A host-led run survives a failure: the quorum counts the reviewers the
//! host holds, a failed or cancelled run stays so until the user resumes
//! it (`okstra next --resume`), the run keeps its settings for every later
//! call and background driver, a lead launch has okstra's hook in force,
//! a stopped attempt's usage is what its log held, and any profile's
//! clarification questions reach the user. The same scripted host as
//! `run_host.rs`; the fakes' call log says what was paid for.

use std::fs;
use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::support::{Project, limit, read_json};

use super::host::{Host, ROSTER, Via, hosted, next_in, run_line};
use super::{attempts, team_project};

/// Wait until okstra runs nothing more of the run (its background driver
/// ended), as `okstra status` says, and assert that only the host holds
/// its next step; then `okstra next`'s answer.
fn until_only_the_host_is_left(world: &Project, run: &Path) -> Value {
    let state = crate::support::wait_for(limit(), "the background driver to end", || {
        let output = world
            .okstra()
            .args(["status", "--json"])
            .arg(run)
            .output()
            .unwrap();
        let board: Value = serde_json::from_slice(&output.stdout).unwrap();
        let state = board["runs"][0]["run"]["state"].clone();
        (state != "running").then_some(state)
    });
    let (answer, _) = next_in(world, run, &[], &[]);
    assert_eq!(state, "waiting-for-host", "{answer}");
    answer
}

/// The background driver stopped the analysers' batch early (claude's
/// credentials refused, so two of two can no longer complete): `okstra next
/// --wait` ends the host's loop as `failed`, naming why. The run stays
/// failed: every later `okstra next` answers the same and starts nothing (a
/// lead that restarted asks it to learn where the run stands); `okstra next
/// --resume` is what pays for the batch again, each analyser once.
#[test]
fn a_failed_run_stays_failed_until_the_user_resumes_it() {
    let world = team_project();
    let run = hosted(&world, "external", "claude,codex,report-writer");
    let next = |extra: &[&str], env: &[(&str, &str)]| next_in(&world, &run, extra, env);
    let broken = [("FAKE_AUTH_FAIL", "claude"), ("FAKE_SLEEP_CODEX", "60")];
    let (answer, code) = next(&["--wait", "--timeout", "60s"], &broken);
    assert_eq!(
        (answer["state"].as_str(), code),
        (Some("failed"), 1),
        "{answer}"
    );
    let reason = answer["reason"].as_str().unwrap().to_owned();
    assert!(reason.starts_with("stopped early"), "{reason}");
    let resume = answer["resume"].as_str().unwrap().to_owned();
    assert!(
        resume.contains("okstra next") && resume.contains("--resume"),
        "{answer}"
    );
    for name in ["claude-worker", "codex-worker"] {
        assert_eq!(attempts(&run, name).len(), 1, "{name}");
    }
    // Asked twice more (claude logged in meanwhile): the same answer, and
    // no provider CLI was called.
    let paid = calls(&world);
    for _ in 0..2 {
        let (again, code) = next(&[], &[]);
        assert_eq!(
            (again["state"].as_str(), code),
            (Some("failed"), 1),
            "{again}"
        );
        assert_eq!(again["reason"].as_str(), Some(reason.as_str()), "{again}");
        assert_eq!(again["resume"].as_str(), Some(resume.as_str()), "{again}");
        assert!(again["tasks"].as_array().unwrap().is_empty(), "{again}");
    }
    assert_eq!(calls(&world), paid);
    // The status says so too.
    let status = world
        .okstra()
        .args(["status", "--json"])
        .arg(&run)
        .output()
        .unwrap();
    let board: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(board["runs"][0]["run"]["state"], "failed", "{board}");
    assert_eq!(board["runs"][0]["run"]["active"], false, "{board}");
    // Resumed: the run goes on and ends; each analyser paid for once more
    // (the stopped one, and the refused one's fresh attempt).
    let (answer, code) = next(&["--resume", "--wait", "--timeout", "60s"], &[]);
    assert_eq!(
        (answer["state"].as_str(), code),
        (Some("done"), 0),
        "{answer}"
    );
    assert_eq!(answer["report"]["crossVerified"], true, "{answer}");
    assert_eq!(attempts(&run, "codex-worker").len(), 2);
    assert_eq!(attempts(&run, "claude-worker").len(), 2);
    let resumed: Vec<String> = calls(&world).into_iter().skip(paid.len()).collect();
    for analyser in ["claude analyser", "codex analyser"] {
        assert_eq!(
            resumed.iter().filter(|c| *c == analyser).count(),
            1,
            "{resumed:?}"
        );
    }
}

/// Every model call the fake team was paid for, in order.
fn calls(world: &Project) -> Vec<String> {
    fs::read_to_string(world.path("fake/calls.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// claude runs in the host's session, codex and kimi as wrappers; codex's
/// API cannot be reached, twice (its attempt and its one retry), while the
/// host has not answered yet. claude and kimi can still make two: kimi is
/// not stopped, and once claude answers the run ends cross-verified.
#[test]
fn a_wrappers_failure_stops_nobody_while_the_hosts_reviewer_can_still_make_two() {
    let world = team_project();
    let run = hosted(&world, "claude-code", ROSTER);
    let (answer, _) = next_in(
        &world,
        &run,
        &[],
        &[("FAKE_NETWORK", "codex"), ("FAKE_SLEEP_KIMI", "3")],
    );
    assert_eq!(answer["state"], "host-work", "{answer}");
    // The host holds claude's task unanswered while okstra's workers end.
    let held = until_only_the_host_is_left(&world, &run);
    assert_eq!(held["state"], "host-work", "{held}");
    let codex = attempts(&run, "codex-worker");
    let endings: Vec<&str> = codex
        .iter()
        .map(|a| a["ending"].as_str().unwrap())
        .collect();
    assert_eq!(endings, ["network", "network"], "{codex:?}");
    let kimi = attempts(&run, "kimi-worker");
    assert_eq!(kimi.len(), 1, "{kimi:?}");
    assert_eq!(kimi[0]["ending"], "completed", "{kimi:?}");
    let mut host = Host::new(&world, run.clone(), "claude", Via::Submit);
    let (answer, code) = host.drive();
    assert_eq!(
        (answer["state"].as_str(), code),
        (Some("done"), 0),
        "{answer}"
    );
    assert_eq!(answer["report"]["crossVerified"], true, "{answer}");
}

/// The default roster led by Claude Code: claude in the host's session,
/// codex a wrapper whose first call crashes at start-up. The crash's one
/// retry runs (the host's claude can still make two) and completes.
#[test]
fn on_the_default_roster_a_crashed_wrappers_retry_runs() {
    let world = team_project();
    let run = hosted(&world, "claude-code", "claude,codex,report-writer");
    let (answer, _) = next_in(&world, &run, &[], &[("FAKE_CRASH", "codex")]);
    assert_eq!(answer["state"], "host-work", "{answer}");
    until_only_the_host_is_left(&world, &run);
    let codex = attempts(&run, "codex-worker");
    let endings: Vec<(&str, &str)> = codex
        .iter()
        .map(|a| {
            (
                a["dispatchKind"].as_str().unwrap_or("?"),
                a["ending"].as_str().unwrap_or("?"),
            )
        })
        .collect();
    assert_eq!(
        endings,
        [("initial", "crash"), ("retry", "completed")],
        "{codex:?}"
    );
    let mut host = Host::new(&world, run.clone(), "claude", Via::Submit);
    let (answer, code) = host.drive();
    assert_eq!(
        (answer["state"].as_str(), code),
        (Some("done"), 0),
        "{answer}"
    );
}

/// `okstra ask --lead` with engine flags: the preflight and the estimate
/// come before the host starts, the run keeps the flags (the names passed,
/// never the values), and the claude it starts has okstra's sub-agent-stop
/// hook in force on its command line. A later plain `okstra next` (no flag,
/// not even the variable that stands for `--pass-env`) runs its background
/// driver with them: the wrappers get the 3000 s idle timeout and the
/// variable, and once the recorded cost passes `--max-cost` nothing more
/// goes to the host: the run fails, saying the budget stopped it.
#[test]
fn a_lead_launch_keeps_the_runs_settings_and_starts_claude_with_the_hook() {
    let world = team_project();
    fs::remove_file(world.path("bin/claude")).unwrap();
    world.fake_cli("claude", "lead/record-lead.sh");
    let record = world.path("fake/lead.txt");
    // codex's answers cost dollars: one analyser's passes the budget.
    let prices = world.path("prices.json");
    fs::write(
        &prices,
        r#"{"models": {"gpt-5.6-sol": {"input": 20000, "cacheRead": 2000, "output": 20000}}}"#,
    )
    .unwrap();
    let output = world
        .okstra()
        .args(["ask", "--lead", "--yes", "--workers", ROSTER])
        .args(["--idle-timeout", "3000", "--max-cost", "1"])
        .args(["--pass-env", "OKSTRA_TEST_X", "--pass-env", "FAKE_*"])
        .arg("Why are reservations oversold?")
        .env("OKSTRA_TEST_RECORD", &record)
        .env("OKSTRA_PRICES", &prices)
        .env("OKSTRA_TEST_X", "passed")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let plan = stderr.find("okstra: plan:").expect("the plan is shown");
    let estimate = stderr
        .find("okstra: estimate:")
        .expect("the estimate is shown");
    let start = stderr.find("starting the claude-code lead").unwrap();
    assert!(plan < start && estimate < start, "{stderr}");
    // The lead claude: the hook on its command line, then the instruction.
    let recorded = fs::read_to_string(&record).unwrap();
    let args: Vec<&str> = recorded
        .lines()
        .filter_map(|l| l.strip_prefix("arg="))
        .collect();
    assert_eq!(args[0], "--settings", "{recorded}");
    let settings: Value = serde_json::from_str(args[1]).unwrap();
    let hook = settings["hooks"]["SubagentStop"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(hook.contains(" hook subagent-stop"), "{hook}");
    let okstra = crate::support::okstra_path();
    assert!(
        hook.starts_with(&format!("'{}'", okstra.display())),
        "the hook runs this okstra: {hook}"
    );
    let handoff = args[2]
        .split_whitespace()
        .find(|word| word.ends_with("handoff.md"))
        .unwrap();
    let run = Path::new(handoff).parent().unwrap().to_path_buf();
    // The run keeps its settings: names, never values.
    let state = read_json(&crate::support::team_state_path(&run));
    assert_eq!(
        state["settings"],
        json!({"idleTimeoutSeconds": 3000, "maxCostUsd": 1.0, "passEnv": ["OKSTRA_TEST_X", "FAKE_*"]}),
    );
    assert!(
        !fs::read_to_string(crate::support::team_state_path(&run))
            .unwrap()
            .contains("passed")
    );
    // A later plain `okstra next`, as the host runs it.
    let next = |extra: &[&str]| {
        let output = world
            .okstra()
            .arg("next")
            .arg(&run)
            .arg("--json")
            .args(extra)
            .env_remove("OKSTRA_PASS_ENV")
            .env("OKSTRA_PRICES", &prices)
            .env("OKSTRA_TEST_X", "passed")
            .output()
            .unwrap();
        serde_json::from_slice::<Value>(&output.stdout).unwrap()
    };
    let answer = next(&[]);
    assert_eq!(answer["state"], "host-work", "{answer}");
    let answer = crate::support::wait_for(limit(), "the run to stop", || {
        let answer = next(&[]);
        (answer["state"] == "failed").then_some(answer)
    });
    let reason = answer["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("budget reached: recorded cost"),
        "{reason}"
    );
    assert!(reason.contains("--max-cost 1.00"), "{reason}");
    let sidecar = read_json(&run.join("prompts/codex-worker.md.status.json"));
    assert_eq!(sidecar["idle_timeout_seconds"], 3000, "{sidecar}");
    let seen = fs::read_to_string(world.path("fake/env.log")).unwrap();
    assert!(
        seen.contains("codex analyser OKSTRA_TEST_X=passed"),
        "{seen}"
    );
    assert!(
        seen.contains("kimi analyser OKSTRA_TEST_X=passed"),
        "{seen}"
    );
    // Nothing of the run was paid for after the budget was spent.
    assert!(!calls(&world).iter().any(|c| c.ends_with(" reviewer")));
}

/// `okstra status --json` of `run`: its `run` line.
fn run_line_of(world: &Project, run: &Path) -> Value {
    let output = world
        .okstra()
        .args(["status", "--json"])
        .arg(run)
        .output()
        .unwrap();
    let board: Value = serde_json::from_slice(&output.stdout).unwrap();
    board["runs"][0]["run"].clone()
}

/// A host-led run the budget stopped while the host still held claude's
/// task: `status` says failed (the unanswered task keeps nothing alive),
/// `okstra cancel` closes the task, `status` says cancelled, `next` answers
/// `cancelled` and starts nothing, and `cleanup --older-than 0s` takes the
/// run as ended and removes what it left.
#[test]
fn a_cancelled_host_led_run_reads_cancelled_and_cleanup_removes_what_it_left() {
    let world = team_project();
    let run = hosted(&world, "claude-code", "claude,codex,report-writer");
    let (answer, _) = next_in(&world, &run, &["--max-tokens", "1"], &[]);
    assert_eq!(answer["state"], "host-work", "{answer}");
    let line = crate::support::wait_for(limit(), "the run to stop", || {
        let line = run_line_of(&world, &run);
        (line["state"] == "failed").then_some(line)
    });
    assert_eq!(line["active"], false, "{line}");
    let claude = attempts(&run, "claude-worker");
    assert!(claude[0]["ending"].is_null(), "{claude:?}");
    let cancel = world
        .okstra()
        .args(["cancel", "--json"])
        .arg(&run)
        .output()
        .unwrap();
    assert!(cancel.status.success(), "{cancel:?}");
    let cancelled: Value = serde_json::from_slice(&cancel.stdout).unwrap();
    assert_eq!(
        cancelled["stopped"],
        json!(["claude-worker"]),
        "{cancelled}"
    );
    assert!(
        cancelled["resume"].as_str().unwrap().contains("--resume"),
        "{cancelled}"
    );
    assert_eq!(attempts(&run, "claude-worker")[0]["ending"], "cancelled");
    let line = run_line_of(&world, &run);
    assert_eq!(line["state"], "cancelled", "{line}");
    assert_eq!(line["outcome"], "stopped", "{line}");
    let board = world.okstra().arg("status").arg(&run).output().unwrap();
    let text = String::from_utf8_lossy(&board.stdout);
    assert!(
        text.contains("run: stopped: cancelled with `okstra cancel`"),
        "{text}"
    );
    let paid = calls(&world);
    let (answer, code) = next_in(&world, &run, &[], &[]);
    assert_eq!(
        (answer["state"].as_str(), code),
        (Some("cancelled"), 1),
        "{answer}"
    );
    assert!(answer["tasks"].as_array().unwrap().is_empty(), "{answer}");
    assert_eq!(calls(&world), paid);
    // Ended: nothing of it is skipped, and its logs go.
    let log = run.join("prompts/codex-worker.log");
    assert!(log.is_file());
    let output = world
        .okstra()
        .args(["cleanup", "--older-than", "0s", "--execute", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["skipped"], json!([]), "{report}");
    assert!(!log.exists(), "{report}");
}

/// Ctrl-C of the background driver: it stops its workers, and a stopped
/// attempt's usage is what its log held — claude's per-step usage, counted
/// and marked `partial` (its CLI never printed its total).
#[test]
fn a_driver_stopped_by_ctrl_c_counts_its_cancelled_attempts_usage_from_their_logs() {
    let world = team_project();
    // A Codex host: claude runs as a wrapper the driver starts.
    let run = hosted(&world, "codex", "claude,codex,report-writer");
    let (answer, _) = next_in(
        &world,
        &run,
        &[],
        &[("FAKE_STEP_USAGE", "claude"), ("FAKE_SLEEP_CLAUDE", "60")],
    );
    assert_eq!(answer["state"], "host-work", "{answer}");
    let log = run.join("prompts/claude-worker.log");
    crate::support::wait_for(limit(), "claude's first step", || {
        fs::read_to_string(&log)
            .ok()
            .filter(|text| text.contains("step-1"))
    });
    let lease = read_json(&run.join("state/run.lease"));
    assert_eq!(lease["command"], "okstra __drive", "{lease}");
    let driver = i32::try_from(lease["pid"].as_i64().unwrap()).unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(driver),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let claude = crate::support::wait_for(limit(), "claude's attempt to end", || {
        let claude = attempts(&run, "claude-worker").remove(0);
        (!claude["ending"].is_null()).then_some(claude)
    });
    assert_eq!(claude["ending"], "cancelled", "{claude}");
    let usage = &claude["usage"];
    assert_eq!(usage["source"], "partial", "{usage}");
    assert_eq!(usage["inputTokens"], 1234, "{usage}");
    assert_eq!(usage["outputTokens"], 56, "{usage}");
    assert!(
        usage["reason"].as_str().unwrap().contains("lower bound"),
        "{usage}"
    );
    // The run says who stopped it.
    let line = crate::support::wait_for(limit(), "the driver to record it", || {
        let line = run_line_of(&world, &run);
        (line["state"] == "cancelled").then_some(line)
    });
    assert!(
        line["reason"]
            .as_str()
            .unwrap()
            .starts_with("interrupted by SIGINT"),
        "{line}"
    );
}

/// An error-analysis run whose report needs what only the person has:
/// its questions land in the report's `task.openQuestions`, `okstra next`
/// asks them once the report is done, and `--resume-clarification` takes
/// the answers the host lead submitted without asking again (no terminal
/// needed).
#[test]
fn an_error_analysis_runs_questions_reach_the_user_and_resume_from_their_answers() {
    let world = team_project();
    let run = world.render(&[
        "--task-type",
        "error-analysis",
        "--lead-runtime",
        "claude-code",
        "--workers",
        ROSTER,
    ]);
    let host = Host::new(&world, run.clone(), "claude", Via::Hook);
    let answer = loop {
        let (answer, _) = host.next(&["--wait", "--timeout", "60s"]);
        let tasks = answer["tasks"].as_array().cloned().unwrap_or_default();
        if tasks.iter().any(|t| t["kind"] == "ask-user") {
            break answer;
        }
        assert_eq!(answer["state"], "host-work", "{answer}");
        for task in &tasks {
            let message = host.play(task);
            assert_eq!(host.answer(task, &message), 0);
        }
    };
    let report = read_json(&run.join("report/data.json"));
    assert_eq!(
        report["task"]["openQuestions"][0],
        "Which version runs in production?"
    );
    let task = &answer["tasks"][0];
    assert_eq!(task["dispatchName"], "clarification", "{answer}");
    let questions = fs::read_to_string(task["promptPath"].as_str().unwrap()).unwrap();
    assert!(
        questions.contains("2. Do the production logs show two holds for one order?"),
        "{questions}"
    );
    let answers = "1. 2.4.1.\n2. Yes, two holds.\n";
    assert_eq!(
        run_line(&world, task["submit"].as_str().unwrap(), answers.as_bytes()),
        0
    );
    let (answer, code) = host.next(&[]);
    assert_eq!(
        (answer["state"].as_str(), code),
        (Some("done"), 0),
        "{answer}"
    );
    // The next run of the task continues from those answers.
    let next = world.render(&["--task-type", "error-analysis", "--resume-clarification"]);
    assert_eq!(
        fs::read_to_string(next.join("inputs/clarification-response.md")).unwrap(),
        answers
    );
    let task = read_json(&next.join("task-manifest.json"));
    assert_eq!(task["continuation"]["kind"], "resume-clarification");
    assert_eq!(task["continuation"]["previousRun"], json!(run));
}
