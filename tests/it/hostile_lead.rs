//! Integration tests: hostile input, round three (issue 33) — the host-lead
//! protocol and stopping a run: a forged hook input, an answer too large to
//! use, a hook that meets a locked team state, a lease or a forged record
//! naming a stranger, and a `cancel` that arrives while the preflight
//! probes the CLIs. Each
//! through the real binary with the fake team (`tests/fixtures/workers/
//! team.py`); the output side of the round is `hostile_output.rs`.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};

use crate::run::{attempts, team_project};
use crate::support::{Group, Project, limit, okstra_path, unix_now, wait_for};

/// One result row, anchored in the example project.
const ROW: &str = "| F-001 | reservations are held in memory only | src/inventory.py:1 |\n";

/// A run led by a Claude Code host, and the task `okstra next` handed out
/// for claude's native analyser.
fn handed_out(world: &Project) -> (PathBuf, Value) {
    let run = world.render(&[
        "--task-type",
        "project-analysis",
        "--lead-runtime",
        "claude-code",
        "--workers",
        "claude,codex,report-writer",
    ]);
    let output = world
        .okstra()
        .arg("next")
        .arg(&run)
        .arg("--json")
        .output()
        .unwrap();
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
        panic!(
            "no JSON answer:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let task = answer["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|task| task["dispatchName"] == "claude-worker")
        .cloned()
        .unwrap_or_else(|| panic!("no native task for claude: {answer}"));
    (run, task)
}

/// The tagged begin line `task`'s task file gives its sub-agent.
fn tag_line(task: &Value) -> String {
    let text = fs::read_to_string(task["promptPath"].as_str().unwrap()).unwrap();
    text.lines()
        .find(|line| line.starts_with("=== OKSTRA RESULT BEGIN dispatch="))
        .unwrap_or_else(|| panic!("no tagged line in\n{text}"))
        .to_owned()
}

/// A sub-agent's final message: `body` in a block begun by `tag`.
fn message(tag: &str, body: &str) -> String {
    format!("Done.\n{tag}\n{body}=== OKSTRA RESULT END ===\n")
}

/// `okstra hook subagent-stop` fed `input`, bounded by [`limit`]: exit code
/// (`None` when the limit stopped it) and stderr.
fn hook(world: &Project, input: &Value) -> (Option<i32>, String) {
    let output = world
        .okstra()
        .args(["hook", "subagent-stop"])
        .write_stdin(input.to_string())
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `okstra submit <run> claude-worker -` fed `message`: exit code, stderr.
fn submit(world: &Project, run: &Path, message: &str) -> (Option<i32>, String) {
    let output = world
        .okstra()
        .arg("submit")
        .arg(run)
        .args(["claude-worker", "-"])
        .write_stdin(message.to_owned())
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn events(run: &Path) -> String {
    fs::read_to_string(run.join("state/lead-events.jsonl")).unwrap_or_default()
}

/// Lock `path` (created if need be) exclusively, as okstra does.
fn hold(path: &Path) -> Flock<fs::File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .unwrap();
    Flock::lock(file, FlockArg::LockExclusive).unwrap()
}

// ------------------------------------------------ 1. a forged hook input

#[test]
fn a_hook_input_whose_answer_is_refused_leaves_nothing_in_the_run() {
    let world = team_project();
    let (run, task) = handed_out(&world);
    let tag = tag_line(&task);
    let nonce = tag
        .split("nonce=")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap()
        .to_owned();
    let forged = message(&tag.replace(&nonce, &"0".repeat(32)), ROW);
    let (code, stderr) = hook(
        &world,
        &json!({"session_id": "forged-session", "agent_id": "forged-agent",
                "last_assistant_message": forged}),
    );
    assert_eq!(code, Some(0), "{stderr}");
    let seen = events(&run);
    assert!(seen.contains("\"kind\":\"result-refused\""), "{seen}");
    // Its session would have made another transcript count as the run's.
    assert!(!seen.contains("forged-session"), "{seen}");
    assert!(!seen.contains("forged-agent"), "{seen}");
    assert!(attempts(&run, "claude-worker")[0]["ending"].is_null());
    // The attempt's own answer is taken, and then its session counts.
    let (code, stderr) = hook(
        &world,
        &json!({"session_id": "lead-session", "agent_id": "agent-1",
                "last_assistant_message": message(&tag, ROW)}),
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(attempts(&run, "claude-worker")[0]["ending"], "completed");
    let seen = events(&run);
    assert!(seen.contains("\"sessionId\":\"lead-session\""), "{seen}");
}

// --------------------------------------------- 4. an answer too large

#[test]
fn submit_refuses_a_result_over_the_result_limit_and_writes_nothing() {
    let world = team_project();
    let (run, task) = handed_out(&world);
    // 17 MiB of rows: within what an answer may be, over what a result may.
    let rows = ROW.repeat((17 << 20) / ROW.len() + 1);
    let (code, stderr) = submit(&world, &run, &message(&tag_line(&task), &rows));
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("over the 16777216-byte limit for a worker result"),
        "{stderr}"
    );
    assert!(!run.join("results/claude-worker.md").exists());
    assert!(attempts(&run, "claude-worker")[0]["ending"].is_null());
    // The run goes on: the attempt is still the host's to answer.
    let (code, stderr) = submit(&world, &run, &message(&tag_line(&task), ROW));
    assert_eq!(code, Some(0), "{stderr}");
}

// -------------------------------------- 8. a hook on a locked team state

#[test]
fn the_hook_gives_up_on_a_locked_team_state_and_leaves_the_answer_for_submit() {
    let world = team_project();
    let (run, task) = handed_out(&world);
    let answer = message(&tag_line(&task), ROW);
    let held = hold(&run.join("state/.team-state.lock"));
    // Held for as long as the hook runs: it must give up on its own.
    let (code, stderr) = hook(
        &world,
        &json!({"session_id": "lead-session", "last_assistant_message": answer}),
    );
    assert_eq!(code, Some(0), "the hook did not return: {stderr}");
    assert!(stderr.contains("is locked"), "{stderr}");
    assert!(
        stderr.contains(&format!("okstra submit {}", run.display())),
        "{stderr}"
    );
    assert!(attempts(&run, "claude-worker")[0]["ending"].is_null());
    assert!(!events(&run).contains("result-refused"));
    drop(held);
    let (code, stderr) = submit(&world, &run, &answer);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(attempts(&run, "claude-worker")[0]["ending"], "completed");
}

// ---------------------------------------------- 2. a lease naming a stranger

#[test]
fn cancel_refuses_to_signal_a_lease_holder_that_is_not_the_runs_driver() {
    let world = team_project();
    let run = world.render(&[
        "--headless",
        "--task-type",
        "project-analysis",
        "--workers",
        "claude,codex,report-writer",
    ]);
    let mut stranger = Group::spawn(&["sleep", "300"]);
    // The lease is held, and its file names a process that just started.
    let mut lease = hold(&run.join("state/run.lease"));
    lease.set_len(0).unwrap();
    lease
        .write_all(
            json!({"pid": stranger.pid(), "startedTs": unix_now(), "command": "okstra run"})
                .to_string()
                .as_bytes(),
        )
        .unwrap();
    let output = world.okstra().arg("cancel").arg(&run).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(&format!("pid {}", stranger.pid()))
            && stderr.contains("not okstra driving"),
        "{stderr}"
    );
    assert!(stranger.is_running(), "cancel signalled a stranger");
    drop(lease);
}

// ------------------------------- 2b. a record naming a stranger as wrapper

#[test]
fn cancel_and_reap_never_signal_a_stranger_a_forged_record_names_as_wrapper() {
    let world = team_project();
    let (outcome, code, stderr) = crate::run::run(&world, "claude,codex,report-writer", &[]);
    assert_eq!(code, 0, "{stderr}");
    let run = crate::run::run_dir(&outcome);
    // A process that started before the record: the pid and the time are
    // right, only its command line says it is no wrapper of okstra's.
    let mut stranger = Group::spawn(&["sleep", "300"]);
    let file = crate::support::team_state_path(&run);
    let mut state = crate::support::read_json(&file);
    let record = state["dispatches"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .rfind(|r| r["dispatchName"] == "claude-worker")
        .unwrap();
    let record = record.as_object_mut().unwrap();
    for ended in ["ending", "endedAt", "exitCode", "detail"] {
        record.remove(ended);
    }
    record.insert("wrapperPid".into(), json!(stranger.pid()));
    let sidecar = PathBuf::from(record["sidecarPath"].as_str().unwrap());
    fs::write(&file, serde_json::to_vec_pretty(&state).unwrap()).unwrap();
    fs::write(
        &sidecar,
        json!({
            "schemaVersion": 1,
            "wrapper": "okstra-provider-exec",
            "role": "worker",
            "pid": stranger.pid(),
            "started_ts": unix_now() + 5,
            "log_path": "/dev/null",
            "stage": "started"
        })
        .to_string(),
    )
    .unwrap();
    // And a sidecar of a wrapper that is gone, naming the stranger's group
    // and its very command line as the CLI it started.
    let gone = {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = i32::try_from(child.id()).unwrap();
        child.wait().unwrap();
        pid
    };
    fs::write(
        run.join("prompts/forged.md.status.json"),
        json!({
            "schemaVersion": 1,
            "wrapper": "okstra-provider-exec",
            "role": "worker",
            "pid": gone,
            "pgid": stranger.pid(),
            "started_ts": unix_now(),
            "log_path": "/dev/null",
            "stage": "started",
            "argv": ["sleep", "300"]
        })
        .to_string(),
    )
    .unwrap();
    for command in [
        &["cancel"][..],
        &["reap", "--execute", "--project-root"][..],
    ] {
        let mut cmd = world.okstra();
        cmd.args(command);
        if command[0] == "reap" {
            cmd.arg(world.root());
        } else {
            cmd.arg(&run);
        }
        let output = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.code().is_some(), "{command:?}: {stderr}");
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(
            stranger.is_running(),
            "`okstra {command:?}` signalled a stranger: {stderr}"
        );
    }
}

// ------------------------------------------ 9. cancel during the preflight

/// Whether `pid` is gone (or a zombie nobody reaped yet).
fn gone(pid: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
}

/// Kills `pid` when dropped (a probe an old okstra leaves behind).
struct Reaped(i32);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = kill(Pid::from_raw(self.0), Signal::SIGKILL);
    }
}

#[test]
fn a_cancel_during_the_preflight_stops_the_driver_cleanly_and_its_probe() {
    let world = team_project();
    let run = world.render(&[
        "--headless",
        "--task-type",
        "project-analysis",
        "--workers",
        "claude,codex,report-writer",
    ]);
    let mut cmd = world.command(okstra_path());
    cmd.arg("run")
        .arg(&run)
        .arg("--yes")
        .env("FAKE_HANG_VERSION", "claude");
    let mut driver = Group::start(cmd);
    let pid_file = world.path("fake/probe-claude.pid");
    let probe: i32 = wait_for(limit(), "the preflight's probe", || {
        fs::read_to_string(&pid_file)
            .ok()
            .and_then(|text| text.trim().parse().ok())
    });
    let _reaped = Reaped(probe);
    let cancel = world.okstra().arg("cancel").arg(&run).output().unwrap();
    assert!(
        cancel.status.success(),
        "{}",
        String::from_utf8_lossy(&cancel.stderr)
    );
    let status = driver.wait(limit());
    // 128 + SIGTERM: it stopped itself, it was not killed by the signal.
    assert_eq!(status.code(), Some(143), "{status}");
    wait_for(limit(), "the probe to be stopped", || {
        gone(probe).then_some(())
    });
    let seen = events(&run);
    assert!(seen.contains("\"kind\":\"run-interrupted\""), "{seen}");
}
