//! `okstra run <run-dir>` resumes any run at the step where it stopped and
//! never pays twice: after Ctrl-C, after SIGKILL of the driver (its live
//! wrappers adopted), with a second driver refused, after `okstra cancel`,
//! once a logged-out worker can log in, and on a run that is finished. The
//! fake team logs every call it gets in `fake/calls.log`: that log is what
//! was paid for.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use nix::sys::signal::Signal;
use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::support::{Group, Project, limit, read_json, wait_for};

use super::{attempts, team_project};

const ANALYSERS: &str = "claude,codex,antigravity,report-writer";

/// A headless run of `workers`, rendered and not started.
fn rendered(world: &Project, workers: &str) -> PathBuf {
    world.render(&[
        "--headless",
        "--task-type",
        "project-analysis",
        "--workers",
        workers,
    ])
}

/// Every call the fake team got, as `<worker> <role>`.
fn calls(world: &Project) -> Vec<String> {
    fs::read_to_string(world.path("fake/calls.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn count(calls: &[String], wanted: &str) -> usize {
    calls.iter().filter(|c| c.as_str() == wanted).count()
}

fn count_role(calls: &[String], role: &str) -> usize {
    calls
        .iter()
        .filter(|c| c.ends_with(&format!(" {role}")))
        .count()
}

/// `okstra run <run>` in the background with `env`, its stderr piped.
fn start(world: &Project, run: &Path, env: &[(&str, &str)]) -> Group {
    let mut cmd = world.command(crate::support::okstra_path());
    cmd.arg("run").arg(run).arg("--json");
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    for (name, value) in env {
        cmd.env(name, value);
    }
    Group::start(cmd)
}

/// `okstra run <run> --json` to the end: outcome, exit code, stderr.
fn resume(world: &Project, run: &Path, env: &[(&str, &str)]) -> (Value, i32, String) {
    let mut cmd = world.okstra();
    cmd.arg("run").arg(run).arg("--json");
    for (name, value) in env {
        cmd.env(name, value);
    }
    let output = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let outcome: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("no JSON outcome; stderr:\n{stderr}"));
    (outcome, output.status.code().unwrap(), stderr)
}

/// The team state's records.
fn records(run: &Path) -> Vec<Value> {
    read_json(&crate::support::team_state_path(run))["dispatches"]
        .as_array()
        .unwrap()
        .clone()
}

/// Whether every named dispatch's latest attempt has started and none
/// ended: recorded as started, and its wrapper running (its sidecar
/// written). The record is written just before the wrapper is spawned, so
/// a driver killed on the record alone may never have spawned it.
fn started(run: &Path, names: &[&str]) -> bool {
    let records = records(run);
    names.iter().all(|name| {
        records
            .iter()
            .rev()
            .find(|r| r["dispatchName"] == *name)
            .is_some_and(|r| {
                r["startedAt"].is_string()
                    && r["ending"].is_null()
                    && r["sidecarPath"]
                        .as_str()
                        .is_some_and(|sidecar| Path::new(sidecar).is_file())
            })
    })
}

/// Whether `pid` is gone: no such process, or a zombie its new parent has
/// not reaped yet (a wrapper whose driver was killed is re-parented).
fn gone(pid: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
}

const REVIEWERS_R1: [&str; 3] = [
    "claude-worker-reverify-r1",
    "codex-worker-reverify-r1",
    "antigravity-worker-reverify-r1",
];

#[test]
fn ctrl_c_during_convergence_then_resume_pays_no_analyser_twice() {
    let world = team_project();
    let run = rendered(&world, ANALYSERS);
    let mut driver = start(&world, &run, &[("FAKE_SLEEP_REVIEWER", "60")]);
    wait_for(limit(), "round 1's reviewers to start", || {
        started(&run, &REVIEWERS_R1).then_some(())
    });
    driver.signal(Signal::SIGINT);
    let status = driver.wait(limit());
    assert_eq!(status.code(), Some(130));
    let mut stderr = String::new();
    std::io::Read::read_to_string(driver.0.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    let resume_line = format!("resume with `okstra run {}`", run.display());
    assert!(stderr.contains(&resume_line), "{stderr}");
    // Said in words, never as a raw event line.
    assert!(!stderr.contains("PROGRESS:"), "{stderr}");
    for name in REVIEWERS_R1 {
        assert_eq!(attempts(&run, name)[0]["ending"], "cancelled", "{name}");
    }
    // The analysers' own work completed: their rows say so; the cancelled
    // reviews are the attempts' lines, and the run's line says it stopped.
    let board = world.okstra().arg("status").arg(&run).output().unwrap();
    let board = String::from_utf8_lossy(&board.stdout);
    for name in ["claude-worker ", "codex-worker ", "antigravity-worker "] {
        let row = board
            .lines()
            .find(|line| line.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no row for {name}:\n{board}"));
        assert!(
            row.contains(" completed ") && !row.contains("143"),
            "{row}\n{board}"
        );
    }
    assert!(
        board.contains("dispatch: claude-worker-reverify-r1 reverify-r1 attempt 1 cancelled"),
        "{board}"
    );
    assert!(
        board.contains("run: stopped: interrupted by SIGINT"),
        "{board}"
    );
    let before = calls(&world);
    assert_eq!(count_role(&before, "analyser"), 3);

    let (outcome, code, stderr) = resume(&world, &run, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(outcome["valid"], true);
    assert_eq!(outcome["crossVerified"], true, "{outcome}");
    assert_eq!(outcome["convergence"]["roundsRun"], 2);
    let after = calls(&world);
    // No analyser was paid for twice; the cancelled reviewers ran again
    // without spending their one retry.
    assert_eq!(count_role(&after, "analyser"), 3, "{after:?}");
    for name in ["claude-worker", "codex-worker", "antigravity-worker"] {
        assert_eq!(attempts(&run, name).len(), 1, "{name}");
    }
    for name in REVIEWERS_R1 {
        let tries = attempts(&run, name);
        assert_eq!(tries.len(), 2, "{name}");
        assert_eq!(tries[1]["ending"], "completed");
        assert_eq!(tries[1]["dispatchKind"], "reverify-r1");
    }
    assert!(read_json(&crate::support::team_state_path(&run))["workers"]["claude-worker"]["retriesUsed"].is_null());
}

#[test]
fn a_killed_driver_leaves_wrappers_the_next_one_adopts() {
    let world = team_project();
    let run = rendered(&world, ANALYSERS);
    let mut driver = start(&world, &run, &[("FAKE_SLEEP_REVIEWER", "3")]);
    wait_for(limit(), "round 1's reviewers to start", || {
        started(&run, &REVIEWERS_R1).then_some(())
    });
    // The driver only: its wrappers lead groups of their own and go on.
    driver.signal(Signal::SIGKILL);
    driver.wait(limit());
    let (outcome, code, stderr) = resume(&world, &run, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(outcome["valid"], true);
    assert!(stderr.contains("adopted"), "{stderr}");
    let after = calls(&world);
    assert_eq!(count_role(&after, "analyser"), 3, "{after:?}");
    // Each round-1 reviewer ran once: adopted, finished, not restarted.
    for name in REVIEWERS_R1 {
        let tries = attempts(&run, name);
        assert_eq!(tries.len(), 1, "{name}: {tries:?}");
        assert_eq!(tries[0]["ending"], "completed", "{name}");
    }
    assert_eq!(count(&after, "claude reviewer"), 2, "{after:?}");
}

#[test]
fn a_second_driver_waits_then_refuses_and_nothing_runs_twice() {
    let world = team_project();
    let run = rendered(&world, ANALYSERS);
    let mut first = start(&world, &run, &[("FAKE_SLEEP_ANALYSER", "15")]);
    wait_for(limit(), "the analysers to start", || {
        started(
            &run,
            &["claude-worker", "codex-worker", "antigravity-worker"],
        )
        .then_some(())
    });
    let second = world.okstra().arg("run").arg(&run).output().unwrap();
    assert_eq!(second.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(
        stderr.contains(&format!("waiting for pid {}", first.pid())),
        "{stderr}"
    );
    assert!(stderr.contains("another okstra drives"), "{stderr}");
    // A dispatch on the same run is refused the same way.
    world.okstra().arg("dispatch").arg(&run).assert().code(2);
    assert_eq!(first.wait(limit()).code(), Some(0));
    let all = calls(&world);
    assert_eq!(count_role(&all, "analyser"), 3, "{all:?}");
    assert_eq!(count_role(&all, "report"), 1, "{all:?}");
}

#[test]
fn a_finished_run_run_again_dispatches_nothing_and_keeps_its_report() {
    let world = team_project();
    let run = rendered(&world, ANALYSERS);
    let (first, code, stderr) = resume(&world, &run, &[]);
    assert_eq!(code, 0, "{stderr}");
    let report = fs::read(run.join("report/data.json")).unwrap();
    let paid = calls(&world);
    let (again, code, stderr) = resume(&world, &run, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(again["dispatched"], 0);
    assert_eq!(again["markdown"], first["markdown"]);
    assert_eq!(calls(&world), paid);
    assert_eq!(fs::read(run.join("report/data.json")).unwrap(), report);
}

#[test]
fn a_changed_prompt_re_runs_that_worker_and_what_was_built_on_it() {
    let world = team_project();
    let run = rendered(&world, ANALYSERS);
    let (_, code, stderr) = resume(&world, &run, &[]);
    assert_eq!(code, 0, "{stderr}");
    let paid = calls(&world);
    let prompt = run.join("prompts/codex-worker.md");
    let mut text = fs::read_to_string(&prompt).unwrap();
    text.push_str("\nAlso look again: FAKE-EXTRA-FINDING\n");
    fs::write(&prompt, text).unwrap();
    let (outcome, code, stderr) = resume(&world, &run, &[]);
    assert_eq!(code, 0, "{stderr}");
    let now = calls(&world);
    let new: Vec<&String> = now[paid.len()..].iter().collect();
    // codex alone was asked again; its new finding went to review, and the
    // report was written again from it.
    assert_eq!(count(&now, "codex analyser"), 2, "{new:?}");
    assert_eq!(count(&now, "claude analyser"), 1, "{new:?}");
    assert_eq!(count(&now, "antigravity analyser"), 1, "{new:?}");
    assert!(new.iter().any(|c| c.ends_with(" reviewer")), "{new:?}");
    assert!(new.iter().any(|c| c.ends_with(" report")), "{new:?}");
    assert_eq!(outcome["valid"], true);
    let ledger = read_json(&run.join("state/convergence-ledger.json"));
    assert!(
        ledger["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|item| item["itemId"] == "codex:F-009"),
        "{ledger}"
    );
}

#[test]
fn a_worker_that_was_logged_out_gets_a_fresh_attempt_on_resume() {
    let world = team_project();
    let run = rendered(&world, ANALYSERS);
    let (first, code, stderr) = resume(&world, &run, &[("FAKE_AUTH_FAIL", "codex")]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(first["valid"], true);
    assert_eq!(attempts(&run, "codex-worker")[0]["ending"], "auth");
    // Logged in now: one resume gives codex its attempt back.
    let (outcome, code, stderr) = resume(&world, &run, &[]);
    assert_eq!(code, 0, "{stderr}");
    let tries = attempts(&run, "codex-worker");
    assert_eq!(tries.len(), 2, "{tries:?}");
    assert_eq!(tries[1]["ending"], "completed");
    assert_eq!(outcome["valid"], true);
    let ledger = read_json(&run.join("state/convergence-ledger.json"));
    assert!(
        ledger["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|item| item["owner"] == "codex"),
        "{ledger}"
    );
}

#[test]
fn cancel_stops_a_detached_dispatch_and_the_run_resumes_after_it() {
    let world = team_project();
    let run = rendered(&world, ANALYSERS);
    let mut cmd = world.okstra();
    cmd.env("FAKE_SLEEP", "60")
        .arg("dispatch")
        .arg(&run)
        .arg("--detach");
    cmd.assert().success();
    let names = ["claude-worker", "codex-worker", "antigravity-worker"];
    wait_for(limit(), "the detached workers to start", || {
        started(&run, &names).then_some(())
    });
    let pids: Vec<i32> = names
        .iter()
        .map(|name| {
            let sidecar = run.join(format!("prompts/{name}.md.status.json"));
            wait_for(limit(), "a sidecar", || {
                fs::read(&sidecar)
                    .ok()
                    .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                    .and_then(|v| v["pid"].as_i64())
            })
        })
        .map(|pid| i32::try_from(pid).unwrap())
        .collect();
    let cancel = world
        .okstra()
        .arg("cancel")
        .arg(&run)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        cancel.status.success(),
        "{}",
        String::from_utf8_lossy(&cancel.stderr)
    );
    let cancelled: Value = serde_json::from_slice(&cancel.stdout).unwrap();
    assert!(cancelled["driver"].is_i64(), "{cancelled}");
    for pid in pids {
        assert!(gone(pid), "wrapper {pid} still runs");
    }
    for name in names {
        assert_eq!(attempts(&run, name)[0]["ending"], "cancelled", "{name}");
    }
    let (outcome, code, stderr) = resume(&world, &run, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(outcome["valid"], true);
    for name in names {
        let tries = attempts(&run, name);
        assert_eq!(tries.len(), 2, "{name}");
        assert_eq!(tries[1]["ending"], "completed");
    }
}

#[test]
fn reap_stops_the_wrappers_of_a_killed_driver_and_the_run_resumes() {
    let world = team_project();
    let run = rendered(&world, ANALYSERS);
    let mut driver = start(&world, &run, &[("FAKE_SLEEP_REVIEWER", "60")]);
    wait_for(limit(), "round 1's reviewers to start", || {
        started(&run, &REVIEWERS_R1).then_some(())
    });
    driver.signal(Signal::SIGKILL);
    driver.wait(limit());
    let listed = world.okstra().arg("reap").output().unwrap();
    let text = String::from_utf8_lossy(&listed.stdout);
    assert_eq!(text.matches("would stop wrapper").count(), 3, "{text}");
    let reaped = world
        .okstra()
        .args(["reap", "--execute", "--json"])
        .output()
        .unwrap();
    assert!(
        reaped.status.success(),
        "{}",
        String::from_utf8_lossy(&reaped.stderr)
    );
    let report: Value = serde_json::from_slice(&reaped.stdout).unwrap();
    let stopped: Vec<&Value> = report["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["action"] == "stop-wrapper")
        .collect();
    assert_eq!(stopped.len(), 3, "{report}");
    for action in stopped {
        let pid = i32::try_from(action["wrapperPid"].as_i64().unwrap()).unwrap();
        assert!(gone(pid), "wrapper {pid} still runs");
    }
    for name in REVIEWERS_R1 {
        assert_eq!(attempts(&run, name)[0]["ending"], "cancelled", "{name}");
    }
    let (outcome, code, stderr) = resume(&world, &run, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(outcome["valid"], true);
    assert_eq!(count_role(&calls(&world), "analyser"), 3);
}
