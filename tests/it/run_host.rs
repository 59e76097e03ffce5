//! A host session leads a run with `okstra next`: a scripted host that only
//! loops `okstra next --json`, plays each native task with the fake team
//! (`team.py` run on the task file, as the host's sub-agent would be) and
//! returns the answer through the task's `submit` line or through the
//! sub-agent-stop hook, reaches `done` with the report a headless run
//! writes. The trust boundary refuses what is not a handed-out native
//! attempt's own answer; a host that stops half-way leaves a run `okstra
//! run` finishes.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::support::{Project, limit, read_json};

use super::{attempts, team_project};

/// `schemas/next-answer.schema.json`, compiled.
static ANSWER_SCHEMA: std::sync::LazyLock<jsonschema::Validator> = std::sync::LazyLock::new(|| {
    let schema = read_json(&crate::support::repo_root().join("schemas/next-answer.schema.json"));
    jsonschema::validator_for(&schema).unwrap()
});

/// How a native answer comes back.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Via {
    /// The task's `submit` line, the message on stdin.
    Submit,
    /// `okstra hook subagent-stop`, fed what Claude Code passes.
    Hook,
}

/// A scripted host lead: it knows nothing of okstra but `okstra next`'s
/// answer.
pub(super) struct Host<'a> {
    world: &'a Project,
    run: PathBuf,
    /// The provider CLI its native sub-agents are played with.
    binary: &'static str,
    via: Via,
    /// Environment for the sub-agents it plays.
    env: Vec<(&'static str, String)>,
    /// Play each task where its prompt's `**Project root:**` says (a
    /// sub-agent that obeys its prompt), not in the project.
    in_prompts_root: bool,
}

impl<'a> Host<'a> {
    pub(super) fn new(
        world: &'a Project,
        run: PathBuf,
        binary: &'static str,
        via: Via,
    ) -> Host<'a> {
        Host {
            world,
            run,
            binary,
            via,
            env: Vec::new(),
            in_prompts_root: false,
        }
    }

    /// `okstra next <run> --json` (with `extra`); the answer and exit code.
    pub(super) fn next(&self, extra: &[&str]) -> (Value, i32) {
        next_in(self.world, &self.run, extra, &[])
    }

    /// The final message the host's sub-agent gives on `task` (bounded in
    /// time, like every command here).
    pub(super) fn play(&self, task: &Value) -> String {
        let prompt_path = task["promptPath"].as_str().unwrap();
        let prompt = fs::File::open(prompt_path).unwrap();
        let mut cmd = self.world.command(self.world.path("bin").join(self.binary));
        if self.in_prompts_root {
            cmd.current_dir(prompts_root(prompt_path));
        }
        cmd.stdin(prompt)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .env("FAKE_PLAIN", "1");
        for (name, value) in &self.env {
            cmd.env(name, value);
        }
        let mut child = cmd.spawn().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut stdout, &mut text).unwrap();
            text
        });
        let status = crate::support::wait_for(limit(), "the sub-agent to answer", || {
            child.try_wait().unwrap()
        });
        assert!(status.success(), "{status}");
        reader.join().unwrap()
    }

    /// Give okstra `message` as the answer to `task`; the exit code.
    pub(super) fn answer(&self, task: &Value, message: &str) -> i32 {
        match self.via {
            Via::Submit => {
                let line = format!(
                    "{} --agent-id agent0{}",
                    task["submit"].as_str().unwrap(),
                    task["attempt"]
                );
                run_line(self.world, &line, message.as_bytes())
            }
            Via::Hook => {
                let input = json!({
                    "session_id": "lead-session-1",
                    "transcript_path": "/dev/null",
                    "cwd": self.world.root(),
                    "hook_event_name": "SubagentStop",
                    "stop_hook_active": false,
                    "agent_id": format!("agent0{}", task["attempt"]),
                    "agent_type": "general-purpose",
                    "agent_transcript_path": "/dev/null",
                    "last_assistant_message": message,
                });
                let mut cmd = self.world.command(crate::support::okstra_path());
                cmd.args(["hook", "subagent-stop"]);
                feed(cmd, input.to_string().as_bytes())
            }
        }
    }

    /// Loop `okstra next` until the run is done or failed, playing every
    /// native task; the last answer and its exit code.
    pub(super) fn drive(&mut self) -> (Value, i32) {
        for _ in 0..60 {
            let (answer, code) = self.next(&[]);
            match answer["state"].as_str().unwrap() {
                "done" | "failed" => return (answer, code),
                "waiting" => {
                    self.next(&["--wait", "--timeout", "60s"]);
                }
                "host-work" => {
                    for task in answer["tasks"].as_array().unwrap() {
                        assert_eq!(task["kind"], "native-worker", "{answer}");
                        let message = self.play(task);
                        assert_eq!(self.answer(task, &message), 0, "{task}");
                    }
                }
                other => panic!("unknown state {other}: {answer}"),
            }
        }
        panic!("the run did not end after 60 answers");
    }
}

/// `okstra next <run> --json` (with `extra`, and `env` for it and the
/// driver it starts); the answer, checked against its schema, and the exit
/// code.
pub(super) fn next_in(
    world: &Project,
    run: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (Value, i32) {
    let mut cmd = world.okstra();
    cmd.arg("next").arg(run).arg("--json").args(extra);
    for (name, value) in env {
        cmd.env(name, value);
    }
    let output = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let answer: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("no JSON answer; stderr:\n{stderr}"));
    // The answer's keys are a contract: every answer keeps its schema.
    let errors: Vec<String> = ANSWER_SCHEMA
        .iter_errors(&answer)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:?}\n{answer}");
    (answer, output.status.code().unwrap())
}

/// The project root the worker prompt behind the task file at `path`
/// names (its `**Project root:**` line).
fn prompts_root(path: &str) -> PathBuf {
    let task = fs::read_to_string(path).unwrap();
    let prompt = task
        .lines()
        .find_map(|line| {
            line.split('`').nth(1).filter(|p| {
                Path::new(p)
                    .extension()
                    .is_some_and(|ext| ext.eq_ignore_ascii_case("md"))
            })
        })
        .map_or_else(|| path.to_owned(), str::to_owned);
    let text = fs::read_to_string(&prompt).unwrap_or(task);
    let line = text
        .lines()
        .find(|line| line.starts_with("**Project root:**"))
        .unwrap_or_else(|| panic!("no project root in {prompt}"));
    PathBuf::from(line.split('`').nth(1).unwrap())
}

/// `line` (a command line okstra printed) run by `sh`, `stdin` fed; its
/// exit code.
pub(super) fn run_line(world: &Project, line: &str, stdin: &[u8]) -> i32 {
    let mut cmd = world.command("sh");
    cmd.arg("-c").arg(line);
    feed(cmd, stdin)
}

/// Run `cmd` with `stdin`, bounded; its exit code (its stderr is shown
/// when it is not 0).
#[expect(
    clippy::print_stderr,
    reason = "a refused answer's reason is the first thing to read when a test fails"
)]
fn feed(mut cmd: Command, stdin: &[u8]) -> i32 {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let status =
        crate::support::wait_for(limit(), "the command to end", || child.try_wait().unwrap());
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    if !status.success() {
        eprintln!("{cmd:?} exited {status}:\n{stderr}");
    }
    status.code().unwrap()
}

/// A run of `workers` on `runtime`, rendered for a host lead.
pub(super) fn hosted(world: &Project, runtime: &str, workers: &str) -> PathBuf {
    world.render(&[
        "--task-type",
        "project-analysis",
        "--lead-runtime",
        runtime,
        "--workers",
        workers,
    ])
}

/// Each item's final class, from the run's ledger.
fn classes(run: &Path) -> Vec<(String, String)> {
    let ledger = read_json(&run.join("state/convergence-ledger.json"));
    let mut classes: Vec<(String, String)> = ledger["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            (
                item["itemId"].as_str().unwrap().to_owned(),
                item["finalClass"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    classes.sort();
    classes
}

pub(super) const ROSTER: &str = "claude,codex,kimi,report-writer";

/// The same roster headless, for comparison.
fn headless(world: &Project) -> PathBuf {
    let output = world
        .task_command(
            &["run"],
            &[
                "--task-type",
                "project-analysis",
                "--workers",
                ROSTER,
                "--task-id",
                "headless",
                "--yes",
                "--json",
            ],
        )
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let outcome: Value = serde_json::from_slice(&output.stdout).unwrap();
    PathBuf::from(outcome["runDir"].as_str().unwrap())
}

fn assert_done_like_headless(world: &Project, run: &Path, answer: &Value, code: i32) {
    assert_eq!(code, 0, "{answer}");
    assert_eq!(answer["state"], "done", "{answer}");
    let report = &answer["report"];
    assert_eq!(report["crossVerified"], true, "{answer}");
    assert_eq!(report["verdict"], "HEALTHY-WITH-GAPS");
    assert!(Path::new(report["markdown"].as_str().unwrap()).is_file());
    assert!(Path::new(report["html"].as_str().unwrap()).is_file());
    world.okstra().arg("validate").arg(run).assert().success();
    // The same answers give the same classes as a headless run's.
    assert_eq!(classes(run), classes(&headless(world)));
}

#[test]
fn a_scripted_claude_code_host_reaches_done_through_submit() {
    let world = team_project();
    let run = hosted(&world, "claude-code", ROSTER);
    let mut host = Host::new(&world, run.clone(), "claude", Via::Submit);
    let (answer, code) = host.drive();
    assert_done_like_headless(&world, &run, &answer, code);
    // Every native answer was relayed, and coverage says so.
    let claude = attempts(&run, "claude-worker");
    assert_eq!(claude.len(), 1);
    assert_eq!(claude[0]["recoveredFrom"], "relayed");
    assert_eq!(claude[0]["agentId"], "agent01");
    let report = read_json(&run.join("report/data.json"));
    let coverage = report["workerCoverage"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["workerId"] == "claude")
        .unwrap()
        .clone();
    assert!(
        coverage["notes"][0]
            .as_str()
            .unwrap()
            .contains("reached okstra through `okstra submit`"),
        "{coverage}"
    );
    // okstra wrote the events a lead used to type.
    let events = fs::read_to_string(run.join("state/lead-events.jsonl")).unwrap();
    for kind in [
        "run-start",
        "phase-start",
        "worker-complete",
        "round-complete",
        "usage-collected",
        "report-validated",
        "run-complete",
        "session",
    ] {
        assert!(
            events.contains(&format!("\"kind\":\"{kind}\"")),
            "no {kind}"
        );
    }
}

#[test]
fn a_scripted_codex_host_reaches_done_through_the_hook() {
    let world = team_project();
    let run = hosted(&world, "codex", ROSTER);
    let mut host = Host::new(&world, run.clone(), "codex", Via::Hook);
    let (answer, code) = host.drive();
    assert_done_like_headless(&world, &run, &answer, code);
    // No answer was relayed: the hook took each from the final message,
    // with the sub-agent's id, and the lead's session came with it.
    let state = read_json(&crate::support::team_state_path(&run));
    for record in state["dispatches"].as_array().unwrap() {
        if record["runner"] == "native-session" {
            assert_eq!(record["recoveredFrom"], "hook", "{record}");
            assert!(record["agentId"].is_string(), "{record}");
        }
    }
    // okstra reads no Codex session: no session event points usage at one.
    let events = fs::read_to_string(run.join("state/lead-events.jsonl")).unwrap();
    assert!(!events.contains("\"kind\":\"session\""), "{events}");
}

#[test]
fn a_host_led_runs_anchors_are_checked_against_the_project_as_its_workers_got_it() {
    let world = team_project();
    // Only native analysers: no background driver takes it for them.
    let run = hosted(&world, "claude-code", "claude,report-writer");
    let host = Host::new(&world, run.clone(), "claude", Via::Submit);
    let (answer, _) = host.next(&[]);
    assert_eq!(answer["state"], "host-work", "{answer}");
    // Taken when the first analysers were handed out, not at the first
    // check after they answered: the user's later edits are not in it.
    let record = read_json(&run.join("state/snapshot.json"));
    assert_eq!(record["taken"], "first-dispatch", "{record}");
    let file = world.root().join("src/inventory.py");
    let before = fs::read_to_string(&file).unwrap();
    fs::write(&file, "edited while the workers ran\n").unwrap();
    let (answer, _) = host.next(&[]);
    assert_eq!(
        read_json(&run.join("state/snapshot.json")),
        record,
        "{answer}"
    );
    // The project is not in git: the snapshot is a copy in the run folder.
    assert_eq!(record["kind"], "directory", "{record}");
    let copy = run.join(record["path"].as_str().unwrap());
    assert_eq!(
        fs::read_to_string(copy.join("src/inventory.py")).unwrap(),
        before
    );
}

#[test]
fn the_hook_ignores_a_sub_agent_that_is_not_an_okstra_task() {
    let world = team_project();
    let run = hosted(&world, "claude-code", ROSTER);
    let before = fs::read(crate::support::team_state_path(&run)).unwrap();
    for input in [
        json!({"last_assistant_message": "=== OKSTRA RESULT BEGIN ===\nx\n=== OKSTRA RESULT END ===\n"}),
        json!({"hook_event_name": "SubagentStop"}),
        json!("not an object"),
    ] {
        let mut cmd = world.command(crate::support::okstra_path());
        cmd.args(["hook", "subagent-stop"]);
        assert_eq!(feed(cmd, input.to_string().as_bytes()), 0);
    }
    let mut cmd = world.command(crate::support::okstra_path());
    cmd.args(["hook", "subagent-stop"]);
    assert_eq!(feed(cmd, b"{ not json"), 0);
    assert_eq!(
        fs::read(crate::support::team_state_path(&run)).unwrap(),
        before
    );
}

#[test]
fn an_answer_without_markers_is_empty_output_and_the_retry_is_handed_out() {
    let world = team_project();
    let run = hosted(&world, "claude-code", ROSTER);
    let mut host = Host::new(&world, run.clone(), "claude", Via::Submit);
    let (answer, _) = host.next(&[]);
    let task = answer["tasks"][0].clone();
    assert_eq!(task["dispatchName"], "claude-worker");
    assert_eq!(task["attempt"], 1);
    // The sub-agent answers without a result block.
    assert_eq!(
        host.answer(&task, "I looked around and found nothing.\n"),
        1
    );
    let first = attempts(&run, "claude-worker");
    assert_eq!(first[0]["ending"], "empty-output", "{first:?}");
    assert_eq!(first[0]["logTail"][0], "I looked around and found nothing.");
    // `next` offers the one retry: attempt 2, a fresh nonce.
    let (answer, _) = host.next(&[]);
    let retry = answer["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["dispatchName"] == "claude-worker")
        .unwrap()
        .clone();
    assert_eq!(retry["attempt"], 2, "{answer}");
    assert_ne!(retry["promptPath"], task["promptPath"]);
    let state = read_json(&crate::support::team_state_path(&run));
    assert_eq!(state["workers"]["claude-worker"]["retriesUsed"], 1);
    // The retry completes and the run goes on to the end.
    let (answer, code) = host.drive();
    assert_eq!(code, 0, "{answer}");
    let tries = attempts(&run, "claude-worker");
    assert_eq!(tries.len(), 2);
    assert_eq!(tries[1]["dispatchKind"], "retry");
    assert_eq!(tries[1]["ending"], "completed");
}

#[test]
fn submit_refuses_what_is_not_the_handed_out_attempts_own_answer() {
    let world = team_project();
    let run = hosted(&world, "claude-code", ROSTER);
    let run_s = run.to_str().unwrap();
    let host = Host::new(&world, run.clone(), "claude", Via::Submit);
    let (answer, _) = host.next(&[]);
    let task = answer["tasks"][0].clone();
    let message = host.play(&task);
    let refused = |args: &[&str], stdin: &str, needle: &str| {
        let output = world
            .okstra()
            .args(args)
            .write_stdin(stdin.to_owned())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("error: "), "{stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    };
    // A wrapper dispatch: okstra takes its result from its CLI.
    refused(
        &["submit", run_s, "codex-worker", "-"],
        &message,
        "runs through okstra's wrapper",
    );
    // A dispatch that does not exist.
    refused(
        &["submit", run_s, "nobody-worker", "-"],
        &message,
        "has no attempt",
    );
    // Another attempt's nonce: an answer to another task.
    let nonce = attempts(&run, "claude-worker")[0]["nonce"]
        .as_str()
        .unwrap()
        .to_owned();
    let stale = message.replace(&nonce, &"0".repeat(32));
    refused(
        &["submit", run_s, "claude-worker", "-"],
        &stale,
        "it answers another task",
    );
    // An empty agent id.
    refused(
        &["submit", run_s, "claude-worker", "-", "--agent-id", ""],
        &message,
        "--agent-id",
    );
    assert!(attempts(&run, "claude-worker")[0]["ending"].is_null());
    // The right answer is taken; the same again is fine; another is not.
    assert_eq!(host.answer(&task, &message), 0);
    assert_eq!(host.answer(&task, &message), 0);
    let other = message.replace("F-004", "F-005");
    refused(
        &["submit", run_s, "claude-worker", "-"],
        &other,
        "already has a different answer",
    );
    let result = fs::read_to_string(run.join("results/claude-worker.md")).unwrap();
    assert!(result.contains("F-004") && !result.contains("F-005"));
}

#[test]
fn round_one_output_cannot_pass_for_round_two() {
    let world = team_project();
    let run = hosted(&world, "claude-code", ROSTER);
    let host = Host::new(&world, run.clone(), "claude", Via::Hook);
    // Play until round 2's task is handed out, keeping round 1's answer.
    let mut round_one = None;
    let task = loop {
        let (answer, _) = host.next(&["--wait", "--timeout", "60s"]);
        let tasks = answer["tasks"].as_array().cloned().unwrap_or_default();
        if let Some(task) = tasks
            .iter()
            .find(|t| t["dispatchName"] == "claude-worker-reverify-r2")
        {
            break task.clone();
        }
        for task in &tasks {
            let message = host.play(task);
            if task["dispatchName"] == "claude-worker-reverify-r1" {
                round_one = Some(message.clone());
            }
            assert_eq!(host.answer(task, &message), 0);
        }
    };
    let r1 = attempts(&run, "claude-worker-reverify-r1");
    let r2 = attempts(&run, "claude-worker-reverify-r2");
    let (r1_nonce, r2_nonce) = (
        r1[0]["nonce"].as_str().unwrap(),
        r2[0]["nonce"].as_str().unwrap(),
    );
    // Round 1's answer under round 2's name: its nonce gives it away. The
    // hook refuses it and says so in the run's events.
    let forged = round_one.unwrap().replace(
        "dispatch=claude-worker-reverify-r1",
        "dispatch=claude-worker-reverify-r2",
    );
    let mut cmd = world.command(crate::support::okstra_path());
    cmd.args(["hook", "subagent-stop"]);
    let input = json!({"last_assistant_message": forged, "agent_id": "again"});
    assert_eq!(feed(cmd, input.to_string().as_bytes()), 0);
    let events = fs::read_to_string(run.join("state/lead-events.jsonl")).unwrap();
    assert!(events.contains("\"kind\":\"result-refused\""), "{events}");
    // The hook gave usage the lead's session and each sub-agent's id.
    assert!(
        events.contains("\"sessionId\":\"lead-session-1\""),
        "{events}"
    );
    assert!(
        events.contains("\"sessionId\":\"agent01\",\"worker\":\"claude-worker\""),
        "{events}"
    );
    // Round 2's own answer carrying round 1's nonce: refused by submit.
    let message = host.play(&task).replace(r2_nonce, r1_nonce);
    let mut cmd = world.command(crate::support::okstra_path());
    cmd.args(["submit"])
        .arg(&run)
        .args(["claude-worker-reverify-r2", "-"]);
    assert_eq!(feed(cmd, message.as_bytes()), 2);
    assert!(attempts(&run, "claude-worker-reverify-r2")[0]["ending"].is_null());
    assert!(!run.join("results/claude-worker-reverify-r2.md").exists());
}

#[test]
fn a_host_that_stops_half_way_leaves_a_run_okstra_run_finishes() {
    let world = team_project();
    // Every analyser runs through a wrapper; the report writer (claude) is
    // the host's native session.
    let run = hosted(
        &world,
        "claude-code",
        "codex,kimi,antigravity,report-writer",
    );
    let host = Host::new(&world, run.clone(), "claude", Via::Submit);
    // The host answers the report writer's task, then stops for good.
    loop {
        let (answer, _) = host.next(&["--wait", "--timeout", "60s"]);
        assert_eq!(answer["state"], "host-work", "{answer}");
        let task = answer["tasks"][0].clone();
        let message = host.play(&task);
        assert_eq!(host.answer(&task, &message), 0);
        if task["dispatchName"] == "report-writer" {
            break;
        }
    }
    assert!(!run.join("report/final-report.md").exists());
    // `okstra run` takes what is left: okstra's blocks, validation, render.
    let output = world
        .okstra()
        .args(["run"])
        .arg(&run)
        .arg("--json")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let outcome: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(outcome["valid"], true);
    assert_eq!(outcome["crossVerified"], true);
    assert_eq!(outcome["dispatched"], 0, "{outcome}");
    assert!(run.join("report/final-report.md").is_file());
    // Nothing was paid for twice, and `next` agrees the run is done.
    for name in ["report-writer", "codex-worker", "kimi-worker-reverify-r1"] {
        assert_eq!(attempts(&run, name).len(), 1, "{name}");
    }
    let (answer, code) = host.next(&[]);
    assert_eq!(
        (answer["state"].as_str(), code),
        (Some("done"), 0),
        "{answer}"
    );
}

#[test]
fn a_run_okstra_run_could_not_finish_is_finished_by_a_host() {
    let world = team_project();
    let run = hosted(&world, "claude-code", ROSTER);
    // `okstra run` takes every step it can, then names the host's command.
    let output = world.okstra().args(["run"]).arg(&run).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("okstra next {}", run.display())),
        "{stderr}"
    );
    assert_eq!(attempts(&run, "codex-worker")[0]["ending"], "completed");
    let mut host = Host::new(&world, run.clone(), "claude", Via::Hook);
    let (answer, code) = host.drive();
    assert_eq!(
        (answer["state"].as_str(), code),
        (Some("done"), 0),
        "{answer}"
    );
    assert_eq!(attempts(&run, "codex-worker").len(), 1);
}

#[test]
fn an_implementation_run_without_a_plan_asks_the_user_before_the_executor() {
    let world = team_project();
    // An implementation run lands its change through git.
    crate::support::commit_all(world.root());
    let run = world.render(&[
        "--task-type",
        "implementation",
        "--lead-runtime",
        "claude-code",
        "--executor",
        "claude",
        "--workers",
        "codex,kimi,report-writer",
    ]);
    let host = Host::new(&world, run.clone(), "claude", Via::Submit);
    let (answer, code) = host.next(&[]);
    assert_eq!(code, 0);
    assert_eq!(answer["state"], "host-work", "{answer}");
    let task = &answer["tasks"][0];
    assert_eq!(task["kind"], "ask-user");
    assert_eq!(task["dispatchName"], "approval");
    let question = fs::read_to_string(task["promptPath"].as_str().unwrap()).unwrap();
    assert!(question.contains("claude-executor"), "{question}");
    assert!(attempts(&run, "claude-executor").is_empty());
    // Asking again asks the same question; nothing starts.
    let (again, _) = host.next(&[]);
    assert_eq!(again["tasks"], answer["tasks"]);
    // The user says no: nothing changed, the run failed and says why.
    assert_eq!(
        run_line(&world, task["submit"].as_str().unwrap(), b"no, not yet\n"),
        0
    );
    let (answer, code) = host.next(&[]);
    assert_eq!(code, 1);
    assert_eq!(answer["state"], "failed");
    assert!(
        answer["reason"]
            .as_str()
            .unwrap()
            .contains("did not approve"),
        "{answer}"
    );
    assert!(attempts(&run, "claude-executor").is_empty());
    // A second, different answer is refused.
    assert_eq!(
        run_line(&world, task["submit"].as_str().unwrap(), b"yes\n"),
        2
    );
}

#[test]
fn a_native_writers_invalid_report_gets_its_one_repair_as_a_host_task() {
    let world = team_project();
    let run = hosted(&world, "claude-code", ROSTER);
    let mut host = Host::new(&world, run.clone(), "claude", Via::Hook);
    // The host's report writer breaks one rule on its first report.
    host.env.push(("FAKE_BAD_REPORT", "1".to_owned()));
    let (answer, code) = host.drive();
    assert_eq!(
        (answer["state"].as_str(), code),
        (Some("done"), 0),
        "{answer}"
    );
    let tries = attempts(&run, "report-writer");
    assert_eq!(tries.len(), 2, "{tries:?}");
    assert!(
        tries[1]["promptPath"]
            .as_str()
            .unwrap()
            .ends_with("prompts/report-writer.repair.md"),
        "{tries:?}"
    );
    assert_eq!(tries[1]["recoveredFrom"], "hook");
    let repair = fs::read_to_string(run.join("prompts/report-writer.repair.md")).unwrap();
    assert!(repair.contains("## Repair: your report failed validation"));
    let events = fs::read_to_string(run.join("state/lead-events.jsonl")).unwrap();
    assert!(events.contains("\"kind\":\"report-repair\""), "{events}");
    assert!(events.contains("\"attempts\":\"2\""), "{events}");
}

#[test]
fn open_questions_are_asked_once_the_report_is_done_and_feed_the_next_run() {
    let world = team_project();
    let run = world.render(&[
        "--task-type",
        "requirements-discovery",
        "--lead-runtime",
        "claude-code",
        "--workers",
        ROSTER,
    ]);
    let host = Host::new(&world, run.clone(), "claude", Via::Hook);
    // The loop stops at the question: a host-work answer with an ask-user task.
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
    let task = &answer["tasks"][0];
    assert_eq!(task["dispatchName"], "clarification");
    assert!(run.join("report/final-report.md").is_file());
    let questions = fs::read_to_string(task["promptPath"].as_str().unwrap()).unwrap();
    assert!(
        questions.contains("1. Must a reservation survive"),
        "{questions}"
    );
    assert!(
        questions.contains("2. How long may a hold last?"),
        "{questions}"
    );
    let answers = "1. Only of the service.\n2. Fifteen minutes.\n";
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
    let response = PathBuf::from(answer["report"]["clarificationResponse"].as_str().unwrap());
    assert_eq!(fs::read_to_string(&response).unwrap(), answers);
    // The answers are what the next run takes.
    let next = world.render(&[
        "--task-type",
        "requirements-discovery",
        "--clarification-response",
        response.to_str().unwrap(),
    ]);
    assert_eq!(
        fs::read_to_string(next.join("inputs/clarification-response.md")).unwrap(),
        answers
    );
}

/// A host-led implementation run: the user approves, the host's own
/// Executor (a native sub-agent working where its prompt says) makes its
/// change and its fix pass, the verifiers check both, and the change
/// reaches the user's tree only through `okstra land`: okstra committed it
/// on the run's branch.
#[test]
fn a_host_led_executors_change_is_on_the_runs_branch_and_lands_only_through_land() {
    let world = team_project();
    crate::support::commit_all(world.root());
    let run = world.render(&[
        "--task-type",
        "implementation",
        "--lead-runtime",
        "claude-code",
        "--executor",
        "claude",
        "--workers",
        "codex,kimi,report-writer",
    ]);
    let mut host = Host::new(&world, run.clone(), "claude", Via::Submit);
    // Its change, and a fix pass that fixes what the verifiers confirm.
    host.env.push(("FAKE_EDIT", "1".to_owned()));
    host.env.push(("FAKE_FIX_EDIT", "1".to_owned()));
    host.in_prompts_root = true;
    let (answer, _) = host.next(&[]);
    let approval = &answer["tasks"][0];
    assert_eq!(approval["kind"], "ask-user", "{answer}");
    assert_eq!(
        run_line(&world, approval["submit"].as_str().unwrap(), b"yes\n"),
        0
    );
    let (answer, code) = host.drive();
    assert_eq!(
        (answer["state"].as_str(), code),
        (Some("done"), 0),
        "{answer}"
    );
    let source = world.root().join("src/inventory.py");
    let mark = "# okstra-fake-change";
    assert!(!fs::read_to_string(&source).unwrap().contains(mark));
    let branch = "refs/heads/okstra/demo/review/reservations/implementation-001";
    let shown = Command::new("git")
        .current_dir(world.root())
        .args(["show", &format!("{branch}:src/inventory.py")])
        .output()
        .unwrap();
    assert!(shown.status.success(), "{shown:?}");
    assert!(String::from_utf8_lossy(&shown.stdout).contains(mark));
    world
        .okstra()
        .args(["land", "--check"])
        .arg(&run)
        .assert()
        .success();
    assert!(!fs::read_to_string(&source).unwrap().contains(mark));
    world.okstra().arg("land").arg(&run).assert().success();
    assert!(fs::read_to_string(&source).unwrap().contains(mark));
}
