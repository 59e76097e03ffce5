//! Lifecycle: `okstra status` (and `--watch`) — staleness, heartbeats,
//! watch snapshots and timeouts, copied run folders, whole-project status.

use pretty_assertions::assert_eq;

use super::*;

use crate::support::limit;

/// Write both Result Paths of an assignment.
fn write_results(assignment: &Value) {
    for field in ["resultPath", "workerResultsPath"] {
        let path = path_of(assignment, field);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, "result\n").unwrap();
    }
}

#[test]
fn a_silent_worker_is_stale_and_activity_revives_it() {
    let project = Project::new();
    let run = project.render(&["--task-type", "project-analysis"]);
    let codex = assignment(&run, "codex-worker");
    let wrapper = Group::spawn(&["sh", "-c", "sleep 300; exit 0"]);
    let log = path_of(&codex, "promptPath").with_extension("log");
    fs::write(&log, "working\nstill working\n").unwrap();
    let old = SystemTime::now() - Duration::from_secs(700);
    fs::File::options()
        .write(true)
        .open(&log)
        .unwrap()
        .set_modified(old)
        .unwrap();
    write_sidecar(
        &codex,
        &json!({"schemaVersion": 1, "pid": wrapper.pid(), "pgid": wrapper.pid(),
                "started_ts": unix_now(), "stage": "started",
                "log_path": log}),
    );
    let board = status_json(&run);
    let codex_status = worker(&board, "codex-worker");
    assert_eq!(codex_status["state"], "stale", "{codex_status}");
    assert!(board["attention"].to_string().contains("codex-worker"));

    let text = okstra()
        .arg("status")
        .arg(&run)
        .args(["--log-tail", "1"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("| still working"), "{text}");
    assert!(!text.contains("| working"), "only one tail line: {text}");
    assert!(text.contains("attention: codex-worker stale"), "{text}");

    fs::File::options()
        .write(true)
        .open(&log)
        .unwrap()
        .set_modified(SystemTime::now())
        .unwrap();
    assert_eq!(
        worker(&status_json(&run), "codex-worker")["state"],
        "running"
    );
}

#[test]
fn a_future_heartbeat_is_an_anomaly_and_not_trusted() {
    let project = Project::new();
    let run = project.render(&["--task-type", "project-analysis"]);
    let claude = assignment(&run, "claude-worker");
    let heartbeat = path_of(&claude, "heartbeatPath");
    fs::create_dir_all(heartbeat.parent().unwrap()).unwrap();
    let future =
        humantime::format_rfc3339_seconds(SystemTime::now() + Duration::from_hours(24)).to_string();
    fs::write(
        &heartbeat,
        format!(
            "{}\n",
            json!({"ts": future, "phase": "analysis", "summary": "reading code",
                   "changedFiles": [], "blocker": null})
        ),
    )
    .unwrap();
    let now = unix_now();
    let board = status_json(&run);
    let claude_status = worker(&board, "claude-worker");
    assert_eq!(claude_status["state"], "running");
    assert_eq!(claude_status["summary"], "reading code");
    let anomalies = claude_status["anomalies"].as_array().unwrap();
    assert_eq!(anomalies.len(), 1);
    assert_eq!(anomalies[0]["kind"], "future_heartbeat_timestamp");
    assert_eq!(anomalies[0]["observed"], future);
    let last = claude_status["lastActivityTs"].as_i64().unwrap();
    assert!(
        last <= now + 60,
        "a day-ahead timestamp was trusted: {last}"
    );
    assert!(
        board["attention"]
            .to_string()
            .contains("future_heartbeat_timestamp")
    );

    // A blocker in the latest heartbeat makes it `blocked`.
    fs::write(
        &heartbeat,
        format!(
            "{}\n",
            json!({"ts": humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
                   "phase": "analysis", "blocker": "needs repository access"})
        ),
    )
    .unwrap();
    let board = status_json(&run);
    assert_eq!(worker(&board, "claude-worker")["state"], "blocked");
    assert_eq!(
        worker(&board, "claude-worker")["blocker"],
        "needs repository access"
    );
}

/// Collects a child's stdout on a thread.
fn collect_stdout(child: &mut Child) -> Arc<Mutex<String>> {
    let buffer = Arc::new(Mutex::new(String::new()));
    let mut stdout = child.stdout.take().unwrap();
    let sink = Arc::clone(&buffer);
    std::thread::spawn(move || {
        let mut chunk = [0_u8; 4096];
        while let Ok(n) = stdout.read(&mut chunk) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&chunk[..n]));
        }
    });
    buffer
}

/// Kills a spawned okstra on drop.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn watch_appends_a_snapshot_per_change_and_ends_when_all_are_terminal() {
    let project = Project::new();
    let run = project.render(&["--task-type", "project-analysis"]);
    let codex = assignment(&run, "codex-worker");
    let wrapper = Group::spawn(&["sh", "-c", "sleep 300; exit 0"]);
    let started = unix_now();
    write_sidecar(
        &codex,
        &json!({"schemaVersion": 1, "pid": wrapper.pid(), "pgid": wrapper.pid(),
                "started_ts": started, "stage": "started"}),
    );
    // The native workers are finished already.
    for dispatch in ["claude-worker", "report-writer"] {
        let native = assignment(&run, dispatch);
        write_results(&native);
        let heartbeat = path_of(&native, "heartbeatPath");
        fs::create_dir_all(heartbeat.parent().unwrap()).unwrap();
        fs::write(
            heartbeat,
            format!(
                "{}\n",
                json!({"ts": humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
                       "phase": "complete", "summary": "done"})
            ),
        )
        .unwrap();
    }

    let mut child = Command::new(okstra_path())
        .arg("status")
        .arg(&run)
        .args(["--watch", "--interval", "50ms", "--timeout", "60s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let output = collect_stdout(&mut child);
    let mut child = Killed(child);
    wait_for(limit(), "the first snapshot", || {
        output.lock().unwrap().contains("1 running").then_some(())
    });
    // Several intervals pass with no change: still one snapshot. Evidence,
    // not a pause: a second watcher looks every 50 ms until its timeout
    // and prints only the first snapshot.
    let quiet = okstra()
        .arg("status")
        .arg(&run)
        .args(["--watch", "--interval", "50ms", "--timeout", "400ms"])
        .output()
        .unwrap();
    assert_eq!(quiet.status.code(), Some(1));
    let quiet = String::from_utf8_lossy(&quiet.stdout);
    assert_eq!(quiet.matches("--- ").count(), 1, "{quiet}");
    assert_eq!(output.lock().unwrap().matches("--- ").count(), 1);

    write_results(&codex);
    write_sidecar(
        &codex,
        &json!({"schemaVersion": 1, "pid": wrapper.pid(), "pgid": wrapper.pid(),
                "started_ts": started, "stage": "exited", "exit_code": 0,
                "ended_ts": unix_now(), "duration_ms": 1500}),
    );
    let status = wait_for(limit(), "watch to end", || child.0.try_wait().unwrap());
    assert!(status.success());
    let text = wait_for(limit(), "the last snapshot", || {
        let text = output.lock().unwrap().clone();
        text.contains("3 workers: 3 done").then_some(text)
    });
    assert_eq!(text.matches("--- ").count(), 2, "{text}");
    assert!(
        !text.contains('\x1b'),
        "no terminal control codes in a pipe"
    );
}

#[test]
fn status_and_event_follow_a_run_folder_that_was_copied() {
    let project = Project::new();
    let run = project.render(&["--task-type", "project-analysis"]);
    let codex = assignment(&run, "codex-worker");
    let log = run.join("prompts/codex-worker.log");
    fs::write(&log, "old place\n").unwrap();
    write_sidecar(
        &codex,
        &json!({"schemaVersion": 1, "pid": dead_pid(), "pgid": dead_pid(),
                "started_ts": unix_now() - 60, "ended_ts": unix_now(), "stage": "exited",
                "exit_code": 0, "log_path": log}),
    );
    for dispatch in ["claude-worker", "codex-worker", "report-writer"] {
        write_results(&assignment(&run, dispatch));
    }

    // Copy the whole project; the original stays, with different files.
    let copy = tempfile::tempdir().unwrap();
    let status = Command::new("cp")
        .arg("-a")
        .arg(project.root())
        .arg(copy.path().join("moved"))
        .status()
        .unwrap();
    assert!(status.success());
    let moved = copy
        .path()
        .join("moved")
        .join(run.strip_prefix(project.root()).unwrap());
    fs::write(moved.join("prompts/codex-worker.log"), "new place\n").unwrap();
    fs::remove_file(moved.join("results/codex-worker.md")).unwrap();

    let here = status_json(&moved);
    assert_eq!(worker(&here, "codex-worker")["state"], "exited");
    assert_eq!(worker(&here, "claude-worker")["state"], "done");
    assert_eq!(worker(&status_json(&run), "codex-worker")["state"], "done");
    let tail = okstra()
        .args(["status", "--log-tail", "1"])
        .arg(&moved)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let tail = String::from_utf8(tail).unwrap();
    assert!(
        tail.contains("| new place") && !tail.contains("old place"),
        "{tail}"
    );

    okstra()
        .arg("event")
        .arg(&moved)
        .arg("phase-started")
        .assert()
        .success();
    let events = |dir: &Path| fs::read_to_string(dir.join("state/lead-events.jsonl")).unwrap();
    assert_eq!(events(&moved).lines().count(), 1);
    assert_eq!(events(&run), "");
}

#[test]
fn watch_gives_up_at_its_timeout_with_exit_1() {
    let project = Project::new();
    let run = project.render(&["--task-type", "project-analysis"]);
    okstra()
        .arg("status")
        .arg(&run)
        .args([
            "--watch",
            "--json",
            "--interval",
            "50ms",
            "--timeout",
            "300ms",
        ])
        .assert()
        .code(1)
        .stderr("error: `--timeout` expired before every worker finished\n");
}

#[test]
fn a_dispatched_worker_that_never_starts_needs_attention() {
    let project = Project::new();
    let run = project.render(&["--task-type", "project-analysis"]);
    let log = run.join("state/lead-events.jsonl");
    let long_ago =
        humantime::format_rfc3339_seconds(SystemTime::now() - Duration::from_mins(10)).to_string();
    let recently = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let events = [
        json!({"schemaVersion": 1, "seq": 1, "ts": long_ago, "kind": "worker-dispatched",
               "runId": "project-analysis-001", "fields": {"dispatchName": "codex-worker"}}),
        json!({"schemaVersion": 1, "seq": 2, "ts": recently, "kind": "worker-dispatched",
               "runId": "project-analysis-001", "fields": {"dispatchName": "claude-worker"}}),
    ];
    let text = events
        .iter()
        .map(|e| e.to_string() + "\n")
        .collect::<String>();
    fs::write(&log, text).unwrap();
    let board = status_json(&run);
    assert_eq!(worker(&board, "codex-worker")["state"], "pending");
    let attention = board["attention"].as_array().unwrap();
    assert_eq!(attention.len(), 1, "{attention:?}");
    assert_eq!(attention[0]["dispatchName"], "codex-worker");
    assert!(
        attention[0]["reason"]
            .as_str()
            .unwrap()
            .starts_with("not started")
    );
}

#[test]
fn project_status_covers_every_run() {
    let project = Project::new();
    project.render(&["--task-type", "project-analysis"]);
    project.render(&["--task-type", "error-analysis"]);
    let output = okstra()
        .args(["status", "--json", "--project-root"])
        .arg(project.root())
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let doc: Value = serde_json::from_slice(&output).unwrap();
    let ids: Vec<&str> = doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["runId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec!["error-analysis-001", "project-analysis-001"]);
    okstra()
        .args(["status", "--project-root"])
        .arg(project.root().join("missing"))
        .assert()
        .code(2);
}

/// Over a project, `okstra status` is one line per run and a total, counted
/// in the right number; `--all` draws every run's workers.
#[test]
fn project_status_is_one_line_per_run_and_all_draws_every_board() {
    let project = Project::new();
    let text = |args: &[&str]| {
        let out = project.okstra().arg("status").args(args).output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    project.render(&["--task-type", "project-analysis"]);
    let one = text(&[]);
    assert!(
        one.contains("\n1 run, 3 workers: 3 pending; 0 need attention\n"),
        "{one}"
    );
    for _ in 1..10 {
        project.render(&["--task-type", "project-analysis"]);
    }
    let lines = text(&[]);
    let rows: Vec<&str> = lines
        .lines()
        .filter(|line| line.contains("/project-analysis-0"))
        .collect();
    assert_eq!(rows.len(), 10, "{lines}");
    assert!(
        rows.iter()
            .all(|row| row.contains("3 pending") && row.contains("running: nothing dispatched yet")),
        "{lines}"
    );
    assert!(lines.starts_with("RUN "), "{lines}");
    assert!(lines.contains("\n10 runs, 30 workers: "), "{lines}");
    assert!(lines.contains("okstra status --all"), "{lines}");
    assert_eq!(lines.lines().count(), 13, "{lines}");
    // The long form: each run's board, its workers and its run line.
    let all = text(&["--all"]);
    assert_eq!(all.matches("\n  run: ").count(), 10, "{all}");
    assert_eq!(all.matches("  codex-worker ").count(), 10, "{all}");
    assert!(all.contains("\n10 runs, 30 workers: "), "{all}");
    // One run's board is whole without `--all`.
    let run = project.run_dir("project-analysis", 1);
    let board = text(&[run.to_str().unwrap()]);
    assert!(board.contains("  codex-worker "), "{board}");
    assert!(board.contains("3 workers: 3 pending"), "{board}");
}
