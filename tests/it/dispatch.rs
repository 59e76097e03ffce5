//! Integration tests: the run engine — `okstra dispatch` and `okstra await`
//! through the real binary, on runs made by `okstra --render-only`, with fake
//! provider CLIs (`tests/fixtures/workers/*.sh`) first on `PATH`.
//!
//! Every dispatcher a test starts is owned by a guard that kills its group
//! on drop, and every wait is bounded.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::support::{Group, Project, limit, okstra, okstra_path, team_state_path, wait_for};

/// Render a project analysis of `workers` with `runtime` as lead; its folder.
fn render(project: &Project, workers: &str, runtime: &str) -> PathBuf {
    project.render(&[
        "--task-type",
        "project-analysis",
        "--workers",
        workers,
        "--lead-runtime",
        runtime,
    ])
}

/// `okstra <args…>` with the fakes on PATH, to completion.
fn okstra_with(project: &Project, args: &[&str]) -> assert_cmd::assert::Assert {
    project
        .okstra()
        .env_remove("FAKE_SLEEP")
        .args(args)
        .assert()
}

/// `okstra <args…>` started in its own group, not waited for.
fn spawn(project: &Project, args: &[&str], extra_env: &[(&str, &str)]) -> Group {
    let mut cmd = project.command(okstra_path());
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    for (name, value) in extra_env {
        cmd.env(name, value);
    }
    Group::start(cmd)
}

fn team_state(run: &Path) -> Value {
    serde_json::from_slice(&fs::read(team_state_path(run)).unwrap()).unwrap()
}

fn records(run: &Path) -> Vec<Value> {
    team_state(run)["dispatches"].as_array().unwrap().clone()
}

fn stdout_json(assert: &assert_cmd::assert::Assert) -> Value {
    serde_json::from_slice(&assert.get_output().stdout).unwrap()
}

/// Every file under `dir`, with its bytes.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in fs::read_dir(&next).unwrap().flatten() {
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
            } else {
                files.push((path.clone(), fs::read(&path).unwrap_or_default()));
            }
        }
    }
    files.sort();
    files
}

#[test]
fn four_wrappers_run_at_once_and_each_result_is_recovered_from_its_stream() {
    let world = Project::new();
    world
        .fake_cli("claude", "workers/claude.sh")
        .fake_cli("codex", "workers/codex.sh")
        .fake_cli("agy", "workers/agy.sh")
        .fake_cli("kimi", "workers/kimi.sh");
    let run = render(
        &world,
        "claude,codex,antigravity,kimi,report-writer",
        "external",
    );
    let run_s = run.to_str().unwrap();
    let assert = okstra_with(&world, &["dispatch", run_s, "--json"]).success();
    let summary = stdout_json(&assert);
    assert_eq!(summary["allCompleted"], true);
    let names: Vec<&str> = summary["dispatches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["dispatchName"].as_str().unwrap())
        .collect();
    // The report writer waits until it is named.
    assert_eq!(
        names,
        [
            "claude-worker",
            "codex-worker",
            "antigravity-worker",
            "kimi-worker"
        ]
    );
    for (name, who, line) in [
        ("claude-worker", "claude", 3),
        ("codex-worker", "codex", 4),
        ("antigravity-worker", "agy", 5),
        ("kimi-worker", "kimi", 6),
    ] {
        let result = fs::read_to_string(run.join("results").join(format!("{name}.md"))).unwrap();
        assert_eq!(
            result,
            format!("## 1. Findings\n| F-001 | {who} sees it | src/a.py:{line} |\n")
        );
    }
    assert_eq!(
        fs::read_to_string(run.join("results/claude-worker.worker-results.md")).unwrap(),
        "## 1. What I examined\nsrc/a.py\n"
    );
    let records = records(&run);
    assert_eq!(records.len(), 4);
    for record in &records {
        assert_eq!(record["ending"], "completed");
        assert_eq!(record["attempt"], 1);
        assert_eq!(record["recoveredFrom"], "stream");
        assert_eq!(record["promptSha256"].as_str().unwrap().len(), 64);
        assert_eq!(record["resultSha256"].as_str().unwrap().len(), 64);
        assert!(record["startedAt"].is_string() && record["endedAt"].is_string());
    }
    assert_eq!(
        team_state(&run)["workers"]["codex-worker"]["terminalStatus"],
        "completed"
    );
    // A second call has nothing left to start, and await agrees at once.
    okstra_with(&world, &["dispatch", run_s]).success();
    assert_eq!(records.len(), self::records(&run).len());
    okstra_with(&world, &["await", run_s]).success();
}

#[test]
fn the_engine_starts_the_wrappers_own_binary_beside_okstra() {
    let world = Project::new();
    world.fake_cli("claude", "workers/parent.sh");
    let run = render(&world, "claude,report-writer", "external");
    let assert = okstra_with(&world, &["dispatch", run.to_str().unwrap(), "--json"]).success();
    assert_eq!(stdout_json(&assert)["allCompleted"], true);
    let parent = fs::read_to_string(world.path("fake/parent")).unwrap();
    let own = Path::new(env!("CARGO_BIN_EXE_okstra-provider-exec"));
    assert_eq!(
        fs::canonicalize(parent.trim_end()).unwrap(),
        fs::canonicalize(own).unwrap()
    );
}

#[test]
fn a_fast_failure_is_retried_once_and_both_attempts_keep_their_files() {
    let world = Project::new();
    world
        .fake_cli("claude", "workers/flaky.sh")
        .fake_cli("codex", "workers/codex.sh");
    let run = render(&world, "claude,codex,report-writer", "external");
    let run_s = run.to_str().unwrap();
    okstra_with(&world, &["dispatch", run_s]).success();
    let records = records(&run);
    let claude: Vec<&Value> = records
        .iter()
        .filter(|r| r["dispatchName"] == "claude-worker")
        .collect();
    assert_eq!(claude.len(), 2);
    assert_eq!(claude[0]["attempt"], 1);
    assert_eq!(claude[0]["ending"], "crash");
    assert_eq!(claude[1]["attempt"], 2);
    assert_eq!(claude[1]["dispatchKind"], "retry");
    assert_eq!(claude[1]["ending"], "completed");
    let prompts = run.join("prompts");
    assert!(prompts.join("claude-worker.log").is_file());
    assert!(prompts.join("claude-worker.md.status.json").is_file());
    assert!(prompts.join("claude-worker.attempt-2.log").is_file());
    let second: Value = serde_json::from_slice(
        &fs::read(prompts.join("claude-worker.md.attempt-2.status.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(second["exit_code"], 0);
    let first: Value =
        serde_json::from_slice(&fs::read(prompts.join("claude-worker.md.status.json")).unwrap())
            .unwrap();
    assert_eq!(first["exit_code"], 1, "the first attempt's sidecar is kept");
    assert_eq!(
        team_state(&run)["workers"]["claude-worker"]["retriesUsed"],
        1
    );
    // The retry is spent: asking again refuses it.
    let assert = okstra_with(
        &world,
        &["dispatch", run_s, "--kind", "retry", "--workers", "claude"],
    )
    .success();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(stderr.contains("its last attempt completed"), "{stderr}");
}

#[test]
fn an_auth_failure_is_classified_and_not_retried_and_a_missing_cli_ends_at_once() {
    let world = Project::new();
    world.fake_cli("claude", "workers/auth.sh");
    // codex is not installed at all.
    let run = render(&world, "claude,codex,report-writer", "external");
    let run_s = run.to_str().unwrap();
    let assert = okstra_with(&world, &["dispatch", run_s, "--json"]).code(1);
    let summary = stdout_json(&assert);
    let by_name = |name: &str| {
        summary["dispatches"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["dispatchName"] == name)
            .unwrap()
            .clone()
    };
    let claude = by_name("claude-worker");
    assert_eq!(claude["ending"], "auth");
    assert_eq!(claude["terminalStatus"], "unavailable");
    assert_eq!(claude["failureReason"], "auth");
    let codex = by_name("codex-worker");
    assert_eq!(codex["ending"], "cli-missing");
    assert_eq!(codex["exitCode"], 127);
    let records = records(&run);
    assert_eq!(records.len(), 2, "neither ending is retried");
    let claude_record = records
        .iter()
        .find(|r| r["dispatchName"] == "claude-worker")
        .unwrap();
    assert!(
        claude_record["logTail"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l.as_str().unwrap().contains("Not logged in"))
    );
    // await returns at once with the same verdict.
    let assert = okstra_with(&world, &["await", run_s, "--json"]).code(1);
    assert_eq!(stdout_json(&assert)["allCompleted"], false);
}

#[test]
fn dry_run_prints_the_argv_and_writes_nothing() {
    let world = Project::new();
    world
        .fake_cli("claude", "workers/claude.sh")
        .fake_cli("codex", "workers/codex.sh");
    let run = render(&world, "claude,codex,report-writer", "external");
    let before = snapshot(&run);
    let assert = okstra_with(
        &world,
        &["dispatch", run.to_str().unwrap(), "--dry-run", "--json"],
    )
    .success();
    let planned = stdout_json(&assert)["wouldStart"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(planned.len(), 2);
    let argv: Vec<&str> = planned[0]["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(argv[0], "claude");
    assert!(argv.contains(&"--permission-mode"));
    let prompt = fs::read_to_string(run.join("prompts/claude-worker.md")).unwrap();
    assert!(argv.iter().all(|a| !prompt.contains(a) || a.len() < 40));
    assert_eq!(snapshot(&run), before);
}

#[test]
fn sigint_stops_every_worker_and_records_every_ending() {
    let world = Project::new();
    world
        .fake_cli("claude", "workers/silent.sh")
        .fake_cli("codex", "workers/silent.sh");
    let run = render(&world, "claude,codex,report-writer", "external");
    let run_s = run.to_str().unwrap();
    let mut dispatcher = spawn(&world, &["dispatch", run_s], &[]);
    let children: Vec<i32> = wait_for(limit(), "both CLIs running", || {
        let pids: Vec<i32> = ["claude-worker", "codex-worker"]
            .iter()
            .filter_map(|name| {
                let sidecar = run.join("prompts").join(format!("{name}.md.status.json"));
                let value: Value = serde_json::from_slice(&fs::read(sidecar).ok()?).ok()?;
                value["child_pid"]
                    .as_i64()
                    .map(|p| i32::try_from(p).unwrap())
            })
            .collect();
        (pids.len() == 2).then_some(pids)
    });
    dispatcher.signal(Signal::SIGINT);
    assert_eq!(dispatcher.wait(limit()).code(), Some(130));
    for pid in children {
        let gone = kill(Pid::from_raw(pid), None).is_err()
            || fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z "));
        assert!(gone, "CLI {pid} survived");
    }
    for record in records(&run) {
        assert_eq!(record["ending"], "cancelled", "{record}");
    }
}

#[test]
fn a_closed_memory_gate_holds_the_start_back_and_says_so() {
    let world = Project::new();
    world.fake_cli("claude", "workers/claude.sh");
    let run = render(&world, "claude,report-writer", "external");
    let run_s = run.to_str().unwrap();
    let mut dispatcher = spawn(
        &world,
        &["dispatch", run_s, "--min-free-memory", "1000T"],
        &[],
    );
    let detail = wait_for(limit(), "a held record", || {
        records(&run)
            .first()
            .and_then(|r| r["detail"].as_str().map(str::to_owned))
    });
    assert!(
        detail.starts_with("waiting for the memory gate"),
        "{detail}"
    );
    assert!(records(&run)[0]["startedAt"].is_null());
    assert!(!run.join("prompts/claude-worker.md.status.json").exists());
    dispatcher.signal(Signal::SIGTERM);
    assert_eq!(dispatcher.wait(limit()).code(), Some(143));
    assert_eq!(records(&run)[0]["ending"], "cancelled");
}

#[test]
fn await_waits_for_native_and_wrapper_workers_alike() {
    let world = Project::new();
    world.fake_cli("codex", "workers/codex.sh");
    // On the claude-code runtime the claude worker is a native session.
    let run = render(&world, "claude,codex,report-writer", "claude-code");
    let run_s = run.to_str().unwrap();
    let assert = okstra_with(&world, &["dispatch", run_s, "--json"]).success();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(
        stderr.contains("`claude-worker` runs in the host's own session"),
        "{stderr}"
    );
    // The batch is not all completed while its native worker is not done.
    let summary: Value = serde_json::from_slice(&assert.get_output().stdout).unwrap();
    assert_eq!(summary["allCompleted"], false, "{summary}");
    let native = summary["dispatches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["dispatchName"] == "claude-worker")
        .unwrap()
        .clone();
    assert!(native["ending"].is_null(), "{native}");
    assert_eq!(native["runner"], "native-session");
    let mut waiter = spawn(&world, &["await", run_s, "--json"], &[]);
    // Evidence, not a pause: await says what it waits for on its first look.
    let mut stderr = std::io::BufReader::new(waiter.0.stderr.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stderr, &mut line).unwrap();
    assert!(
        line.contains("waiting for 1 dispatch(es): claude-worker (host session)"),
        "{line}"
    );
    assert!(
        waiter.0.try_wait().unwrap().is_none(),
        "await ended before the native worker"
    );
    fs::write(run.join("results/claude-worker.md"), "## 1. Findings\n").unwrap();
    let status = wait_for(limit(), "await to end", || waiter.0.try_wait().unwrap());
    assert_eq!(status.code(), Some(0));
    let mut out = String::new();
    std::io::Read::read_to_string(waiter.0.stdout.as_mut().unwrap(), &mut out).unwrap();
    let summary: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(summary["dispatches"].as_array().unwrap().len(), 2);
    // Nothing is left of the first batch: okstra dispatch says what can
    // run instead, and when.
    let assert = okstra_with(&world, &["dispatch", run_s]).success();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(
        stderr.contains("nothing to dispatch of kind `initial`"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("`okstra converge plan {run_s} --round 1`")),
        "{stderr}"
    );
    assert!(stderr.contains("`--workers report-writer`"), "{stderr}");
    assert!(
        stderr.contains(&format!("`okstra next {run_s}`")),
        "{stderr}"
    );
}

#[test]
fn await_finishes_a_record_whose_dispatcher_died() {
    let world = Project::new();
    world.fake_cli("claude", "workers/claude.sh");
    let run = render(&world, "claude,report-writer", "external");
    let run_s = run.to_str().unwrap();
    let mut dispatcher = spawn(&world, &["dispatch", run_s], &[("FAKE_SLEEP", "2")]);
    wait_for(limit(), "the attempt to start", || {
        run.join("prompts/claude-worker.md.status.json")
            .exists()
            .then_some(())
    });
    // SIGKILL the dispatcher only: its wrapper goes on and finishes.
    kill(
        Pid::from_raw(i32::try_from(dispatcher.0.id()).unwrap()),
        Signal::SIGKILL,
    )
    .unwrap();
    let _ = dispatcher.0.wait();
    assert!(records(&run)[0]["ending"].is_null());
    let assert = okstra_with(&world, &["await", run_s, "--json"]).success();
    assert_eq!(stdout_json(&assert)["dispatches"][0]["ending"], "completed");
    assert_eq!(records(&run)[0]["ending"], "completed");
    assert!(run.join("results/claude-worker.md").is_file());
}

#[test]
fn bad_input_is_named_on_the_first_line_and_exit_2() {
    let world = Project::new();
    let run = render(&world, "claude,codex,report-writer", "external");
    let run_s = run.to_str().unwrap();
    for (args, needle) in [
        (
            vec!["dispatch", run_s, "--kind", "later"],
            "invalid value 'later' for '--kind <KIND>'",
        ),
        (
            vec!["dispatch", run_s, "--workers", "gemini"],
            "invalid value `gemini` for `--workers`",
        ),
        (
            vec!["dispatch", run_s, "--kind", "reverify-r1"],
            "okstra converge plan",
        ),
        (
            vec!["dispatch", run_s, "--min-free-disk", "lots"],
            "--min-free-disk",
        ),
        (
            vec!["dispatch", "/nonexistent/run"],
            "is not an okstra run folder",
        ),
    ] {
        let assert = okstra_with(&world, &args).code(2);
        let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
        // One line, or clap's whole refusal (a value its parser refused,
        // then where to read on) opening with that line.
        let first = stderr.lines().next().unwrap_or_default();
        assert!(first.contains(needle), "{args:?}: {stderr}");
        assert!(
            stderr.lines().count() == 1 || stderr.contains("try '--help'"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn status_lists_retry_and_reverify_dispatches_with_terminal_flags_per_kind() {
    let world = Project::new();
    world
        .fake_cli("claude", "workers/flaky.sh")
        .fake_cli("codex", "workers/codex.sh");
    let run = render(&world, "claude,codex,report-writer", "external");
    let run_s = run.to_str().unwrap();
    okstra_with(&world, &["dispatch", run_s]).success();
    // A round plan as `okstra converge plan` writes it, for one reviewer.
    let prompt = run.join("prompts/codex-worker-reverify-r1.md");
    fs::write(&prompt, "Review item 1.\n").unwrap();
    let plan = serde_json::json!({
        "round": 1,
        "reviewers": [{
            "workerId": "codex",
            "dispatchName": "codex-worker-reverify-r1",
            "promptPath": prompt,
            "resultPath": run.join("results/codex-worker-reverify-r1.md"),
            "workerResultsPath": run.join("results/codex-worker-reverify-r1.worker-results.md"),
            "errorPath": run.join("results/codex-worker-reverify-r1.error.md"),
            "heartbeatPath": run.join("state/heartbeats/codex-worker-reverify-r1.jsonl"),
        }],
    });
    fs::write(run.join("state/round-plan-r1.json"), plan.to_string()).unwrap();
    okstra_with(&world, &["dispatch", run_s, "--kind", "reverify-r1"]).success();
    let assert = okstra_with(&world, &["status", run_s, "--json"]).success();
    let board = stdout_json(&assert);
    let rows = board["runs"][0]["dispatches"].as_array().unwrap();
    // Every attempt has a row; each dispatch's latest is marked.
    let row = |name: &str| {
        rows.iter()
            .find(|r| r["dispatchName"] == name && r["latest"] == true)
            .unwrap()
    };
    assert_eq!(row("claude-worker")["attempt"], 2);
    assert_eq!(row("claude-worker")["kind"], "retry");
    assert_eq!(row("claude-worker")["state"], "completed");
    assert_eq!(row("codex-worker-reverify-r1")["kind"], "reverify-r1");
    assert_eq!(
        board["runs"][0]["allTerminalByKind"],
        serde_json::json!({"initial": true, "reverify-r1": true})
    );
    // The retried worker's row reads its latest attempt's sidecar.
    let workers = board["runs"][0]["workers"].as_array().unwrap();
    let claude = workers
        .iter()
        .find(|w| w["dispatchName"] == "claude-worker")
        .unwrap();
    assert!(
        claude["sidecarPath"]
            .as_str()
            .unwrap()
            .ends_with("claude-worker.md.attempt-2.status.json")
    );
    // Its latest attempt's ending is its state, as on its dispatch line.
    assert_eq!(claude["state"], "completed");
    let text = okstra_with(&world, &["status", run_s]).success();
    let text = String::from_utf8_lossy(&text.get_output().stdout).into_owned();
    assert!(
        text.contains("dispatch: codex-worker-reverify-r1 reverify-r1 attempt 1 completed"),
        "{text}"
    );
}

#[test]
fn status_shows_a_running_workers_usage_live() {
    let world = Project::new();
    world.fake_cli("claude", "workers/metered.sh");
    let run = render(&world, "claude,report-writer", "external");
    let run_s = run.to_str().unwrap();
    let _dispatcher = spawn(&world, &["dispatch", run_s], &[]);
    let usage = wait_for(limit(), "live usage in status", || {
        let output = okstra().args(["status", run_s, "--json"]).output().unwrap();
        let board: Value = serde_json::from_slice(&output.stdout).ok()?;
        let row = board["runs"][0]["dispatches"][0].clone();
        (row["state"] == "running" && row["usage"]["inputTokens"].is_u64())
            .then_some(row["usage"].clone())
    });
    assert_eq!(usage["inputTokens"], 1200);
    assert_eq!(usage["cacheReadTokens"], 300);
    assert_eq!(usage["outputTokens"], 80);
    let text = okstra().args(["status", run_s]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(
        text.contains("dispatch: claude-worker initial attempt 1 running [in 1.2k"),
        "{text}"
    );
}

#[test]
fn a_spent_budget_starts_no_further_attempt() {
    let world = Project::new();
    world
        .fake_cli("claude", "workers/claude.sh")
        .fake_cli("codex", "workers/codex.sh")
        .fake_cli("kimi", "workers/kimi.sh");
    let run = render(&world, "claude,codex,kimi,report-writer", "external");
    let run_s = run.to_str().unwrap();
    // claude.sh reports 10 input + 5 output tokens: past a 10-token budget.
    let assert = okstra_with(
        &world,
        &[
            "dispatch",
            run_s,
            "--max-parallel",
            "1",
            "--max-tokens",
            "10",
            "--json",
        ],
    )
    .code(1);
    let summary = stdout_json(&assert);
    let endings: Vec<(&str, &str)> = summary["dispatches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["dispatchName"].as_str().unwrap(),
                d["ending"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        endings,
        [
            ("claude-worker", "completed"),
            ("codex-worker", "budget"),
            ("kimi-worker", "budget")
        ]
    );
    assert!(!run.join("prompts/codex-worker.md.status.json").exists());
    assert!(!run.join("prompts/kimi-worker.md.status.json").exists());
    let state = team_state(&run);
    assert_eq!(state["workers"]["kimi-worker"]["terminalStatus"], "budget");
    let claude = records(&run)
        .into_iter()
        .find(|r| r["dispatchName"] == "claude-worker")
        .unwrap();
    assert_eq!(claude["usage"]["inputTokens"], 10);
    assert_eq!(claude["usage"]["outputTokens"], 5);
    let detail = summary["dispatches"][2]["detail"].as_str().unwrap();
    assert!(detail.contains("--max-tokens 10"), "{detail}");
    assert_eq!(summary["dispatches"][2]["failureReason"], "budget");
    assert_eq!(state["budget"]["maxTokens"], 10);
    let events = fs::read_to_string(run.join("state/lead-events.jsonl")).unwrap();
    assert!(events.contains("\"kind\":\"budget-stop\""), "{events}");
}

#[test]
fn detach_returns_once_the_dispatches_are_recorded_and_await_sees_them_end() {
    let world = Project::new();
    world
        .fake_cli("claude", "workers/claude.sh")
        .fake_cli("codex", "workers/codex.sh");
    let run = render(&world, "claude,codex,report-writer", "external");
    let run_s = run.to_str().unwrap();
    let mut cmd = world.okstra();
    let assert = cmd
        .args(["dispatch", run_s, "--detach", "--json"])
        .env("FAKE_SLEEP", "2")
        .assert()
        .success();
    let detached = stdout_json(&assert);
    let pid = detached["pid"].as_i64().unwrap();
    // Back before the 2 s workers could have ended, with both recorded.
    let records = records(&run);
    assert_eq!(records.len(), 2);
    for record in &records {
        assert_eq!(record["dispatcherPid"], pid);
        assert!(record["ending"].is_null());
    }
    let assert = okstra_with(&world, &["await", run_s, "--json"]).success();
    assert_eq!(stdout_json(&assert)["allCompleted"], true);
    let log = fs::read_to_string(run.join("state/dispatch.log")).unwrap();
    // A normal end is said plainly: no reason that reads like a repair.
    assert!(
        log.contains("okstra: claude-worker completed after "),
        "{log}"
    );
    assert!(!log.contains("recovered"), "{log}");
}

#[test]
fn the_executors_one_fix_pass_carries_the_defects_in_its_prompt() {
    let world = Project::new();
    crate::support::commit_all(world.root());
    world
        .fake_cli("claude", "workers/claude.sh")
        .fake_cli("codex", "workers/codex.sh");
    let run = world.render(&[
        "--task-type",
        "implementation",
        "--task-id",
        "fix",
        "--workers",
        "claude,codex,report-writer",
        "--executor",
        "claude",
        "--lead-runtime",
        "external",
    ]);
    let run_s = run.to_str().unwrap();
    let request = world.path("fix-request.md");
    fs::write(
        &request,
        "- codex:F-001 at src/a.py:4: the total skips discounts\n",
    )
    .unwrap();
    let fix = request.to_str().unwrap();
    // Nothing to fix before the Executor completed.
    okstra_with(
        &world,
        &["dispatch", run_s, "--workers", "claude", "--fix", fix],
    )
    .code(2);
    okstra_with(&world, &["dispatch", run_s]).success();
    let refused = okstra_with(
        &world,
        &["dispatch", run_s, "--workers", "codex", "--fix", fix],
    )
    .code(2);
    assert!(String::from_utf8_lossy(&refused.get_output().stderr).contains("--workers claude"));
    okstra_with(
        &world,
        &["dispatch", run_s, "--workers", "claude", "--fix", fix],
    )
    .success();
    let prompt = fs::read_to_string(run.join("prompts/claude-executor.fix.md")).unwrap();
    assert!(
        prompt.starts_with(&fs::read_to_string(run.join("prompts/claude-executor.md")).unwrap())
    );
    assert!(prompt.contains("## Fix pass"));
    assert!(prompt.contains("the total skips discounts"));
    let executor: Vec<Value> = records(&run)
        .into_iter()
        .filter(|r| r["dispatchName"] == "claude-executor")
        .collect();
    assert_eq!(executor.len(), 2);
    assert_eq!(executor[1]["attempt"], 2);
    assert_eq!(executor[1]["dispatchKind"], "retry");
    assert_eq!(executor[1]["ending"], "completed");
    // One fix pass per run; and the failure retry was not spent.
    let again = okstra_with(
        &world,
        &["dispatch", run_s, "--workers", "claude", "--fix", fix],
    )
    .code(2);
    assert!(String::from_utf8_lossy(&again.get_output().stderr).contains("one fix pass"));
    assert!(team_state(&run)["workers"]["claude-executor"]["retriesUsed"].is_null());
}
