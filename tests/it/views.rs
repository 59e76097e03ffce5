//! Every view from the same records: `okstra status` (rows, dispatch lines,
//! the run's line, `--active`, `--watch`) and `okstra await` agree with the
//! team state's attempt records, through the real binary.
//!
//! Runs are rendered with `--render-only` and given hand-written records
//! (one per ending), or carried out whole by `okstra run` with the fake
//! team (`tests/fixtures/workers/team.py`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::run::{run, run_dir, team_project};
use crate::support::{Project, limit, okstra_path, read_json, team_state_path, wait_for};

/// `okstra status --json <extra…>`; the document.
fn status(project: &Project, extra: &[&str]) -> Value {
    let output = project
        .okstra()
        .args(["status", "--json"])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The one run's board of `okstra status --json <run>`.
fn board(project: &Project, run: &Path) -> Value {
    status(project, &[run.to_str().unwrap()])["runs"][0].clone()
}

/// `okstra status <run>` as text.
fn text(project: &Project, run: &Path) -> String {
    let output = project.okstra().arg("status").arg(run).output().unwrap();
    assert!(output.status.success());
    String::from_utf8(output.stdout).unwrap()
}

fn worker<'a>(board: &'a Value, dispatch: &str) -> &'a Value {
    board["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["dispatchName"] == dispatch)
        .unwrap_or_else(|| panic!("no row `{dispatch}`: {board}"))
}

/// Every dispatch line of `dispatch`, in recorded order.
fn lines<'a>(board: &'a Value, dispatch: &str) -> Vec<&'a Value> {
    board["dispatches"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .filter(|r| r["dispatchName"] == dispatch)
                .collect()
        })
        .unwrap_or_default()
}

/// The run's assignments, by dispatch name.
fn assignments(run: &Path) -> Vec<Value> {
    crate::support::manifest(run)["assignments"]
        .as_array()
        .unwrap()
        .clone()
}

/// A record of attempt 1 of `assignment`'s own dispatch, ended `ending`
/// (or not ended, when `None`), as `okstra dispatch` writes one.
fn record(assignment: &Value, ending: Option<&str>) -> Value {
    let prompt = assignment["promptPath"].as_str().unwrap();
    let mut record = json!({
        "dispatchName": assignment["dispatchName"],
        "dispatchKind": "initial",
        "attempt": 1,
        "workerId": assignment["workerId"],
        "role": assignment["role"],
        "provider": assignment["provider"],
        "model": assignment["modelExecutionValue"],
        "runner": assignment["runner"],
        "promptPath": prompt,
        "resultPath": assignment["resultPath"],
        "workerResultsPath": assignment["workerResultsPath"],
        "errorPath": assignment["errorPath"],
        "startedAt": "2026-01-01T00:00:00Z",
    });
    if let Some(ending) = ending {
        record["ending"] = Value::from(ending);
        record["endedAt"] = Value::from("2026-01-01T00:01:00Z");
        record["detail"] = Value::from(format!("ended {ending}"));
    }
    record
}

/// Replace the team state's records with `records`.
fn put_records(run: &Path, records: &[Value]) {
    let path = team_state_path(run);
    let mut state = read_json(&path);
    state["dispatches"] = Value::Array(records.to_vec());
    fs::write(&path, serde_json::to_vec_pretty(&state).unwrap()).unwrap();
}

/// Every ending okstra records: the team state's schema lists exactly the
/// closed set of `src/ending.rs` (a unit test holds them equal).
fn every_ending() -> Vec<String> {
    let schema = read_json(&crate::support::repo_root().join("schemas/team-state.schema.json"));
    schema
        .pointer("/$defs/dispatch/properties/ending/enum")
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e.as_str().map(str::to_owned))
        .collect()
}

#[test]
fn each_ending_is_the_same_state_in_the_row_and_the_dispatch_line() {
    let project = Project::new();
    let run = project.render(&[
        "--task-type",
        "project-analysis",
        "--workers",
        "claude,codex,report-writer",
        "--lead-runtime",
        "external",
    ]);
    let roster = assignments(&run);
    // The files say something else: the idle watchdog stopped codex (the
    // sidecar an idle-killed wrapper leaves). The records have the last word.
    let codex = roster
        .iter()
        .find(|a| a["dispatchName"] == "codex-worker")
        .unwrap();
    fs::write(
        format!("{}.status.json", codex["promptPath"].as_str().unwrap()),
        json!({"schemaVersion": 1, "stage": "exited", "exit_code": 124, "timeout": true,
               "terminated_by": "idle-watchdog", "started_ts": 1, "ended_ts": 2})
        .to_string(),
    )
    .unwrap();
    let endings = every_ending();
    assert!(endings.len() >= 12, "{endings:?}");
    for ending in &endings {
        let records: Vec<Value> = roster.iter().map(|a| record(a, Some(ending))).collect();
        put_records(&run, &records);
        let board = board(&project, &run);
        for assignment in &roster {
            let name = assignment["dispatchName"].as_str().unwrap();
            let row = worker(&board, name);
            let dispatch = lines(&board, name);
            assert_eq!(dispatch.len(), 1, "{ending}: {board}");
            assert_eq!(row["state"], dispatch[0]["state"], "{ending}: {row}");
            assert_eq!(row["state"], ending.as_str(), "{ending}: {row}");
            assert_eq!(dispatch[0]["terminal"], true, "{ending}");
            assert_eq!(row["attempt"]["attempt"], 1);
            let flagged = board["attention"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a["dispatchName"] == name);
            assert_eq!(flagged, ending != "completed", "{ending}: {board}");
        }
        // Every row ended, so the run's workers are all terminal; and the
        // per-kind flags say the same of its dispatch lines.
        assert_eq!(board["allTerminal"], true, "{ending}: {board}");
        assert_eq!(board["allTerminalByKind"], json!({"initial": true}));
        assert_eq!(
            board["counts"],
            json!({ending.as_str(): roster.len()}),
            "{ending}"
        );
    }

    // An attempt not ended is not terminal in either view: codex's record
    // is still open, its dispatcher and wrapper gone (`lost`), and the
    // report writer has no record at all (`pending`, from its files).
    let open = vec![record(&roster[0], Some("completed")), record(codex, None)];
    put_records(&run, &open);
    let board = board(&project, &run);
    let codex_row = worker(&board, "codex-worker");
    assert_eq!(
        codex_row["state"],
        lines(&board, "codex-worker")[0]["state"]
    );
    assert_eq!(codex_row["state"], "lost", "{codex_row}");
    assert_eq!(worker(&board, "report-writer")["state"], "pending");
    assert_eq!(worker(&board, "report-writer")["attempt"], Value::Null);
    assert_eq!(board["allTerminal"], false);
}

#[test]
fn a_native_attempt_handed_to_the_host_is_with_host_in_status_and_await() {
    let project = Project::new();
    let run = project.render(&[
        "--task-type",
        "project-analysis",
        "--workers",
        "claude,codex,report-writer",
        "--lead-runtime",
        "claude-code",
    ]);
    let roster = assignments(&run);
    let claude = roster
        .iter()
        .find(|a| a["dispatchName"] == "claude-worker")
        .unwrap();
    assert_eq!(claude["runner"], "native-session");
    let mut handed = record(claude, None);
    handed["nonce"] = Value::from("0123456789abcdef");
    put_records(&run, &[handed]);
    let board = board(&project, &run);
    assert_eq!(worker(&board, "claude-worker")["state"], "with-host");
    assert_eq!(lines(&board, "claude-worker")[0]["state"], "with-host");
    assert_eq!(board["run"]["outcome"], "running");

    let output = project
        .okstra()
        .arg("await")
        .arg(&run)
        .args(["--timeout", "1s", "--json"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("timed out with 1 dispatch(es) not ended: claude-worker (host session)"),
        "{stderr}"
    );
    assert!(!stderr.contains("running"), "{stderr}");
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
    let row = &summary["dispatches"][0];
    assert_eq!(row["state"], "with-host", "{summary}");
    assert!(row["ending"].is_null());
}

#[test]
fn await_on_a_fresh_render_returns_at_once_naming_what_to_run() {
    let project = Project::new();
    for (runtime, command) in [
        ("claude-code", "okstra next"),
        ("external", "okstra dispatch"),
    ] {
        let run = project.render(&[
            "--task-type",
            "project-analysis",
            "--workers",
            "claude,codex,report-writer",
            "--lead-runtime",
            runtime,
        ]);
        // Without and with a timeout far beyond the test's own bound
        // ([`limit`](crate::support::limit)): either way it must come back at once.
        for extra in [&[][..], &["--timeout", "1h"][..]] {
            let output = project
                .okstra()
                .arg("await")
                .arg(&run)
                .args(extra)
                .output()
                .unwrap();
            assert_eq!(output.status.code(), Some(1), "{runtime} {extra:?}");
            assert!(output.stdout.is_empty());
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
            assert!(stderr.starts_with("error: nothing to await"), "{stderr}");
            assert!(
                stderr.contains(&format!("{command} {}", run.display())),
                "{runtime}: {stderr}"
            );
        }
    }
}

#[test]
fn await_names_a_native_worker_never_handed_out_not_started() {
    let project = Project::new();
    project.fake_cli("codex", "workers/codex.sh");
    let run = project.render(&[
        "--task-type",
        "project-analysis",
        "--workers",
        "claude,codex,report-writer",
        "--lead-runtime",
        "claude-code",
    ]);
    project
        .okstra()
        .args(["dispatch", "--workers", "codex"])
        .arg(&run)
        .assert()
        .success();
    let output = project
        .okstra()
        .arg("await")
        .arg(&run)
        .args(["--json", "--timeout", "1h"])
        .output()
        .unwrap();
    // codex completed; claude was never handed to the host: not waited for,
    // so the call returns at once, and not a success.
    assert_eq!(output.status.code(), Some(1));
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
    let row = |name: &str| {
        summary["dispatches"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["dispatchName"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(row("codex-worker")["state"], "completed");
    assert_eq!(row("claude-worker")["state"], "not started", "{summary}");
    assert!(row("claude-worker")["ending"].is_null());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("`claude-worker` never started"), "{stderr}");
    assert!(!stderr.contains("running"), "{stderr}");
    // status agrees: no record, nothing on disk.
    let board = board(&project, &run);
    assert_eq!(worker(&board, "claude-worker")["state"], "pending");
    assert_eq!(worker(&board, "codex-worker")["state"], "completed");
}

#[test]
fn a_finished_run_lists_every_attempt_and_says_its_report_is_valid() {
    let project = team_project();
    // The report writer's first report breaks a rule; its repair passes.
    let (outcome, code, stderr) = run(
        &project,
        "claude,codex,report-writer",
        &[("FAKE_BAD_REPORT", "1")],
    );
    assert_eq!(code, 0, "{stderr}");
    let run = run_dir(&outcome);
    let board = board(&project, &run);
    let writer = lines(&board, "report-writer");
    let attempts: Vec<(u64, bool)> = writer
        .iter()
        .map(|r| {
            (
                r["attempt"].as_u64().unwrap(),
                r["latest"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(attempts, vec![(1, false), (2, true)], "{board}");
    let row = worker(&board, "report-writer");
    assert_eq!(row["state"], "completed", "{row}");
    assert_eq!(row["attempt"]["attempt"], 2);
    for worker in board["workers"].as_array().unwrap() {
        assert_ne!(worker["state"], "pending", "{worker}");
    }
    assert_eq!(board["allTerminal"], true);
    let line = &board["run"];
    assert_eq!(line["outcome"], "report-valid", "{line}");
    assert_eq!(line["active"], false);
    let data = run.join("report/data.json");
    let verdict = read_json(&data)["finalVerdict"]["verdictToken"].clone();
    assert!(verdict.is_string());
    assert_eq!(line["verdict"], verdict, "{line}");
    assert_eq!(line["crossVerified"], outcome["crossVerified"]);
    assert_eq!(line["crossVerified"], true);
    assert_eq!(line["phase"], "6");
    assert!(line["round"].as_u64().unwrap() >= 1, "{line}");
    assert_eq!(line["reportPath"], data.to_str().unwrap());
    let shown = text(&project, &run);
    assert!(
        shown.contains(&format!(
            "  run: report valid, verdict {}, cross-verified; phase 6",
            verdict.as_str().unwrap()
        )),
        "{shown}"
    );
    assert!(
        shown.contains("dispatch: report-writer initial attempt 1 completed"),
        "{shown}"
    );

    // The same run, its report broken afterwards: invalid; then gone.
    let mut report = read_json(&data);
    report["finalVerdict"]["verdictToken"] = Value::from("NOT-A-VERDICT");
    fs::write(&data, serde_json::to_vec_pretty(&report).unwrap()).unwrap();
    let line = board_line(&project, &run);
    assert_eq!(line["outcome"], "report-invalid", "{line}");
    assert!(line["verdict"].is_null());
    assert!(
        text(&project, &run).contains("  run: report invalid: "),
        "{}",
        text(&project, &run)
    );
    fs::remove_file(&data).unwrap();
    let line = board_line(&project, &run);
    assert_eq!(line["outcome"], "ended-without-report", "{line}");
    assert!(line["reportPath"].is_null());
}

fn board_line(project: &Project, run: &Path) -> Value {
    board(project, run)["run"].clone()
}

#[test]
fn a_run_whose_report_writer_failed_ended_without_report() {
    let project = team_project();
    // The report writer is claude, which has no credentials; the analysers
    // (codex, kimi) do.
    let (outcome, code, stderr) = run(
        &project,
        "codex,kimi,report-writer",
        &[("FAKE_AUTH_FAIL", "claude")],
    );
    assert_eq!(code, 1, "{stderr}");
    let run = run_dir(&outcome);
    let board = board(&project, &run);
    assert_eq!(worker(&board, "report-writer")["state"], "auth");
    let line = &board["run"];
    assert_eq!(line["outcome"], "ended-without-report", "{line}");
    assert_eq!(line["reason"], "the report writer did not complete");
    assert_eq!(line["active"], false);
    assert!(
        text(&project, &run)
            .contains("  run: ended without report: the report writer did not complete; phase 6"),
        "{}",
        text(&project, &run)
    );
}

/// A project with a finished run (valid report) and a run that ended
/// without one before its report writer was ever dispatched (so a worker
/// is still `pending` in it); the two run folders.
fn ended_runs(project: &Project) -> (PathBuf, PathBuf) {
    let (done, code, stderr) = run(project, "claude,codex,report-writer", &[]);
    assert_eq!(code, 0, "{stderr}");
    // No analyser completes: the run ends at once, its writer never started.
    let (failed, code, stderr) = run(
        project,
        "codex,report-writer",
        &[("FAKE_AUTH_FAIL", "codex")],
    );
    assert_eq!(code, 1, "{stderr}");
    let failed = run_dir(&failed);
    assert_eq!(
        board(project, &failed)["run"]["outcome"],
        "ended-without-report"
    );
    assert_eq!(
        worker(&board(project, &failed), "report-writer")["state"],
        "pending"
    );
    (run_dir(&done), failed)
}

#[test]
fn active_keeps_only_runs_still_going_and_a_project_watch_ends_with_them() {
    let project = team_project();
    let (done, failed) = ended_runs(&project);
    let root = project.root().to_str().unwrap().to_owned();

    // Nothing is going: the active board is empty, and a project-wide
    // watch ends on its first look (the old rule waited for the pending
    // report writer of the failed run forever).
    let active = status(&project, &["--active", "--project-root", &root]);
    assert_eq!(active["runs"], json!([]), "{active}");
    let every = status(&project, &["--project-root", &root]);
    assert_eq!(every["runs"].as_array().unwrap().len(), 2);
    project
        .okstra()
        .args([
            "status",
            "--watch",
            "--json",
            "--interval",
            "50ms",
            "--project-root",
            &root,
        ])
        .assert()
        .success();
    // So does a watch of the failed run alone: a worker is pending for
    // ever, but the run has ended.
    project
        .okstra()
        .args(["status", "--watch", "--interval", "50ms"])
        .arg(&failed)
        .assert()
        .success();

    // A fresh render is going (nothing dispatched yet): `--active` keeps
    // it alone, and a project-wide watch waits for it, then ends with it.
    let fresh = project.render(&[
        "--task-type",
        "error-analysis",
        "--workers",
        "claude,codex,report-writer",
    ]);
    let active = status(&project, &["--active", "--project-root", &root]);
    let ids: Vec<&str> = active["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["runDir"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![fresh.to_str().unwrap()], "{active}");
    assert_eq!(active["runs"][0]["run"]["reason"], "nothing dispatched yet");
    for ended in [&done, &failed] {
        assert!(!ids.contains(&ended.to_str().unwrap()));
    }

    let mut watch = project.command(okstra_path());
    watch
        .args([
            "status",
            "--watch",
            "--json",
            "--interval",
            "50ms",
            "--project-root",
            &root,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut watcher = crate::support::Group::start(watch);
    let mut stdout = watcher.0.stdout.take().unwrap();
    let printed = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let sink = std::sync::Arc::clone(&printed);
    std::thread::spawn(move || {
        let mut chunk = [0_u8; 4096];
        while let Ok(n) = std::io::Read::read(&mut stdout, &mut chunk) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&chunk[..n]));
        }
    });
    let first = wait_for(limit(), "the first snapshot", || {
        let text = printed.lock().unwrap().clone();
        text.split_once('\n').map(|(line, _)| line.to_owned())
    });
    let first: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(first["runs"].as_array().unwrap().len(), 3);
    assert!(
        watcher.is_running(),
        "the watch ended while a run was going"
    );
    // The fresh run ends (its lead records the end): the watch ends too.
    let status = Command::new(okstra_path())
        .arg("event")
        .arg(&fresh)
        .args([
            "run-complete",
            "--field",
            "verdict=none",
            "--field",
            "reason=stopped by hand",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let ended = watcher.wait(limit());
    assert!(ended.success(), "{ended}");
    let line = board(&project, &fresh)["run"].clone();
    assert_eq!(line["outcome"], "ended-without-report");
    assert_eq!(line["reason"], "stopped by hand");
}
