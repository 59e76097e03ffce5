//! Integration tests: lifecycle — `okstra event`, `status`, `reap` and
//! resuming a task key, through the real binary against run folders made by
//! `okstra --render-only`, hand-written sidecars and real processes.
//!
//! Every spawned process is owned by a guard that kills its whole group on
//! drop, so a failing assertion never leaves a `sleep 300` behind.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::support::{
    Group, Project, manifest, okstra, okstra_path, read_json, unix_now, wait_for,
};

const LIMIT: Duration = Duration::from_secs(30);

/// The assignment with this dispatch name.
fn assignment(run: &Path, dispatch: &str) -> Value {
    manifest(run)["assignments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["dispatchName"] == dispatch)
        .unwrap_or_else(|| panic!("no assignment `{dispatch}`"))
        .clone()
}

fn path_of(assignment: &Value, field: &str) -> PathBuf {
    PathBuf::from(assignment[field].as_str().unwrap())
}

fn sidecar_path(assignment: &Value) -> PathBuf {
    PathBuf::from(format!(
        "{}.status.json",
        assignment["promptPath"].as_str().unwrap()
    ))
}

fn write_sidecar(assignment: &Value, value: &Value) {
    fs::write(sidecar_path(assignment), value.to_string()).unwrap();
}

/// Write both Result Paths of an assignment.
fn write_results(assignment: &Value) {
    for field in ["resultPath", "workerResultsPath"] {
        let path = path_of(assignment, field);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, "result\n").unwrap();
    }
}

/// The pid of a process that has exited and been reaped.
fn dead_pid() -> i32 {
    let mut child = Command::new("true").spawn().unwrap();
    child.wait().unwrap();
    i32::try_from(child.id()).unwrap()
}

/// `okstra --render-only --json` with the task key and `extra`, whatever happens.
fn launch(project: &Project, extra: &[&str]) -> assert_cmd::assert::Assert {
    project
        .render_command(&[&["--json"], extra].concat())
        .timeout(LIMIT)
        .assert()
}

/// `okstra status <run> --json`, the run's workers by dispatch name.
fn status_json(run: &Path) -> Value {
    let output = okstra()
        .args(["status", "--json"])
        .arg(run)
        .timeout(LIMIT)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let doc: Value = serde_json::from_slice(&output).unwrap();
    assert_eq!(doc["schemaVersion"], 1);
    doc["runs"][0].clone()
}

/// `okstra reap --execute --json` over a project: its report.
fn reap_execute(project_root: &Path) -> Value {
    let output = okstra()
        .args(["reap", "--execute", "--json", "--project-root"])
        .arg(project_root)
        .timeout(LIMIT)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&output).unwrap()
}

fn worker<'a>(run_status: &'a Value, dispatch: &str) -> &'a Value {
    run_status["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["dispatchName"] == dispatch)
        .unwrap()
}

#[test]
fn one_hundred_concurrent_events_get_distinct_sequence_numbers() {
    let project = Project::new();
    let run = project.render(&["--task-type", "project-analysis"]);
    let mut children: Vec<Child> = (0..100)
        .map(|n| {
            Command::new(okstra_path())
                .arg("event")
                .arg(&run)
                .arg("worker-dispatched")
                .args(["--field", &format!("n={n}"), "--field", "worker=codex"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let statuses = wait_for(LIMIT, "100 `okstra event` processes", || {
        let done: Vec<_> = children
            .iter_mut()
            .filter_map(|c| c.try_wait().unwrap())
            .collect();
        (done.len() == 100).then_some(done)
    });
    assert!(statuses.iter().all(std::process::ExitStatus::success));

    let log = fs::read_to_string(run.join("state/lead-events.jsonl")).unwrap();
    let lines: Vec<Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 100);
    let mut seqs: Vec<u64> = lines.iter().map(|l| l["seq"].as_u64().unwrap()).collect();
    // Appended in sequence order, so the file order already is 1..=100.
    assert_eq!(seqs, (1..=100).collect::<Vec<_>>());
    seqs.dedup();
    assert_eq!(seqs.len(), 100);
    let mut ns: Vec<u64> = lines
        .iter()
        .map(|l| l["fields"]["n"].as_str().unwrap().parse().unwrap())
        .collect();
    ns.sort_unstable();
    assert_eq!(ns, (0..100).collect::<Vec<_>>());
    for line in &lines {
        assert_eq!(line["kind"], "worker-dispatched");
        assert_eq!(line["runId"], "project-analysis-001");
        assert_eq!(line["schemaVersion"], 1);
        assert!(line["ts"].as_str().unwrap().ends_with('Z'));
    }
}

#[test]
fn event_prints_the_progress_line_and_refuses_bad_input() {
    let project = Project::new();
    let run = project.render(&["--task-type", "project-analysis"]);
    okstra()
        .arg("event")
        .arg(&run)
        .args([
            "phase-start",
            "--field",
            "phase=4",
            "--field",
            "note=two words",
        ])
        .timeout(LIMIT)
        .assert()
        .success()
        .stdout("PROGRESS: phase-start note=\"two words\" phase=4\n");

    for (args, named) in [
        (vec!["Phase Start"], "`Phase Start`"),
        (vec!["ok", "--field", "novalue"], "`novalue`"),
        (vec!["ok", "--field", "9key=v"], "`9key`"),
        (vec!["ok", "--field", "k=a\nb"], "`k`"),
    ] {
        let assert = okstra()
            .arg("event")
            .arg(&run)
            .args(&args)
            .timeout(LIMIT)
            .assert()
            .code(2)
            .stdout("");
        let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("error: "), "{stderr}");
        assert!(stderr.contains(named), "{stderr} should name {named}");
    }
    let log = fs::read_to_string(run.join("state/lead-events.jsonl")).unwrap();
    assert_eq!(log.lines().count(), 1, "refused events are not written");

    // A torn last line (a writer killed mid-write) does not break numbering.
    fs::write(
        run.join("state/lead-events.jsonl"),
        format!("{log}{{\"seq\":2,\"ki"),
    )
    .unwrap();
    okstra()
        .arg("event")
        .arg(&run)
        .arg("phase-end")
        .timeout(LIMIT)
        .assert()
        .success();
    let log = fs::read_to_string(run.join("state/lead-events.jsonl")).unwrap();
    let last: Value = serde_json::from_str(log.lines().last().unwrap()).unwrap();
    assert_eq!(last["seq"], 2);
    assert_eq!(last["kind"], "phase-end");
}

#[test]
fn a_group_whose_wrapper_died_is_lost_listed_and_reaped_alone() {
    let project = Project::new();
    let run = project.render(&["--task-type", "project-analysis"]);
    let codex = assignment(&run, "codex-worker");
    let claude = assignment(&run, "claude-worker");
    let writer = assignment(&run, "report-writer");

    let started = unix_now() - 1;
    let mut orphan = Group::spawn(&["sh", "-c", "sleep 300; exit 0"]);
    let mut bystander = Group::spawn(&["sh", "-c", "sleep 300; exit 0"]);
    // Orphan: dead wrapper, live group.
    write_sidecar(
        &codex,
        &json!({"schemaVersion": 1, "wrapper": "okstra-codex-exec", "role": "analyser",
                "pid": dead_pid(), "pgid": orphan.pid(), "started_ts": started,
                "argv": ["sh", "-c", "sleep 300; exit 0"],
                "log_path": path_of(&codex, "promptPath").with_extension("log"),
                "stage": "started"}),
    );
    // Lost: dead wrapper, group long gone.
    write_sidecar(
        &claude,
        &json!({"schemaVersion": 1, "pid": dead_pid(), "pgid": dead_pid(),
                "started_ts": started, "stage": "started"}),
    );
    // Healthy: its wrapper (the bystander itself) is alive.
    write_sidecar(
        &writer,
        &json!({"schemaVersion": 1, "pid": bystander.pid(), "pgid": bystander.pid(),
                "started_ts": unix_now(), "stage": "started"}),
    );

    let board = status_json(&run);
    assert_eq!(worker(&board, "codex-worker")["state"], "lost");
    assert_eq!(worker(&board, "claude-worker")["state"], "lost");
    assert_eq!(worker(&board, "report-writer")["state"], "running");
    let attention: Vec<&str> = board["attention"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["dispatchName"].as_str().unwrap())
        .collect();
    assert_eq!(attention, vec!["claude-worker", "codex-worker"]);

    // Dry run: lists, kills nothing, writes nothing.
    let before = fs::read(sidecar_path(&codex)).unwrap();
    let output = okstra()
        .args(["reap", "--project-root"])
        .arg(project.root())
        .timeout(LIMIT)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(output).unwrap();
    assert!(
        text.contains(&format!("would stop group {}", orphan.pid())),
        "{text}"
    );
    assert!(text.contains("would mark lost"), "{text}");
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(orphan.is_running());
    assert_eq!(fs::read(sidecar_path(&codex)).unwrap(), before);

    // Execute: the orphan group ends, the bystander does not.
    let report = reap_execute(project.root());
    let actions = report["actions"].as_array().unwrap();
    assert_eq!(actions.len(), 2, "{report}");
    let stop = actions
        .iter()
        .find(|a| a["action"] == "stop-group")
        .unwrap();
    assert_eq!(stop["pgid"], orphan.pid());
    assert_eq!(stop["outcome"], "terminated");
    wait_for(LIMIT, "the orphan group to end", || {
        (!orphan.is_running()).then_some(())
    });
    assert!(
        bystander.is_running(),
        "reap must not touch a live wrapper's group"
    );

    let codex_after = read_json(&sidecar_path(&codex));
    assert_eq!(codex_after["stage"], "exited");
    assert_eq!(codex_after["terminated_by"], "reaper");
    assert_eq!(codex_after["reason"], "orphaned-group-stopped");
    assert_eq!(
        codex_after["wrapper"], "okstra-codex-exec",
        "unknown fields kept"
    );
    assert!(codex_after["ended_ts"].as_i64().unwrap() >= started);
    let claude_after = read_json(&sidecar_path(&claude));
    assert_eq!(claude_after["reason"], "wrapper-lost");
    assert_eq!(claude_after["terminated_by"], "reaper");
    assert_eq!(read_json(&sidecar_path(&writer))["stage"], "started");

    // Lost stays lost, and there is nothing left to reap.
    let board = status_json(&run);
    assert_eq!(worker(&board, "codex-worker")["state"], "lost");
    okstra()
        .args(["reap", "--project-root"])
        .arg(project.root())
        .timeout(LIMIT)
        .assert()
        .success()
        .stdout("");
}

#[test]
fn a_group_that_ignores_sigterm_is_killed_after_the_grace_period() {
    let project = Project::new();
    let run = project.render(&["--task-type", "project-analysis"]);
    let codex = assignment(&run, "codex-worker");
    let started = unix_now() - 1;
    // An ignored signal stays ignored across exec, so `sleep` ignores it too.
    let script = "trap '' TERM; while :; do sleep 1; done";
    let mut stubborn = Group::spawn(&["sh", "-c", script]);
    write_sidecar(
        &codex,
        &json!({"schemaVersion": 1, "pid": dead_pid(), "pgid": stubborn.pid(),
                "started_ts": started, "argv": ["sh", "-c", script], "stage": "started"}),
    );
    let report = reap_execute(project.root());
    assert_eq!(report["actions"][0]["outcome"], "killed", "{report}");
    wait_for(LIMIT, "the stubborn group to end", || {
        (!stubborn.is_running()).then_some(())
    });
    let after = read_json(&sidecar_path(&codex));
    assert_eq!(after["killed"], true);
    assert_eq!(after["reason"], "orphaned-group-stopped");
}

#[test]
fn a_recycled_group_id_is_never_signalled() {
    let project = Project::new();
    let run = project.render(&["--task-type", "project-analysis"]);
    let codex = assignment(&run, "codex-worker");
    let mut stranger = Group::spawn(&["sh", "-c", "sleep 300; exit 0"]);
    // The sidecar claims this pgid an hour before the stranger started.
    write_sidecar(
        &codex,
        &json!({"schemaVersion": 1, "pid": dead_pid(), "pgid": stranger.pid(),
                "started_ts": unix_now() - 3600, "stage": "started"}),
    );
    let report = reap_execute(project.root());
    assert_eq!(report["actions"][0]["action"], "mark-lost", "{report}");
    assert!(stranger.is_running());
    assert_eq!(read_json(&sidecar_path(&codex))["reason"], "wrapper-lost");
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
        .timeout(LIMIT)
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
    wait_for(LIMIT, "the first snapshot", || {
        output.lock().unwrap().contains("1 running").then_some(())
    });
    // Several intervals pass with no change: still one snapshot.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(output.lock().unwrap().matches("--- ").count(), 1);

    write_results(&codex);
    write_sidecar(
        &codex,
        &json!({"schemaVersion": 1, "pid": wrapper.pid(), "pgid": wrapper.pid(),
                "started_ts": started, "stage": "exited", "exit_code": 0,
                "ended_ts": unix_now(), "duration_ms": 1500}),
    );
    let status = wait_for(LIMIT, "watch to end", || child.0.try_wait().unwrap());
    assert!(status.success());
    let text = wait_for(LIMIT, "the last snapshot", || {
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
        .timeout(LIMIT)
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
        .timeout(LIMIT)
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
        .timeout(LIMIT)
        .assert()
        .code(1);
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
        .timeout(LIMIT)
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
        .timeout(LIMIT)
        .assert()
        .code(2);
}

#[test]
fn next_phase_chains_task_types_and_explicit_flags_win() {
    let project = Project::new();
    let first = project.render(&["--task-type", "project-analysis"]);
    fs::write(
        first.join("report/data.json"),
        json!({"workflow": {"nextRecommendedPhase": "implementation-planning"}}).to_string(),
    )
    .unwrap();

    let second = project.render(&[]);
    assert!(
        second.ends_with("implementation-planning-001"),
        "{second:?}"
    );
    assert_eq!(manifest(&second)["taskType"], "implementation-planning");
    assert_eq!(manifest(&second)["continues"], json!(first));
    let task = read_json(&second.join("task-manifest.json"));
    assert_eq!(task["continuation"]["previousRun"], json!(first));

    let third = project.render(&["--task-type", "error-analysis"]);
    assert!(third.ends_with("error-analysis-001"), "{third:?}");
    assert_eq!(manifest(&third)["continues"], json!(second));

    // A report naming an unknown phase is refused, with the way out.
    fs::write(
        first.join("report/data.json"),
        json!({"workflow": {"nextRecommendedPhase": "lunch"}}).to_string(),
    )
    .unwrap();
    let assert = launch(&project, &[]).code(2);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(
        stderr.contains("`lunch`") && stderr.contains("--task-type"),
        "{stderr}"
    );
}

#[test]
fn clarification_and_plan_continuations_link_the_run_they_continue() {
    let project = Project::new();
    // Nothing to continue yet.
    let assert = launch(
        &project,
        &[
            "--task-type",
            "requirements-discovery",
            "--resume-clarification",
        ],
    )
    .code(2);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(stderr.contains("demo/g/t"), "{stderr}");

    let discovery = project.render(&["--task-type", "requirements-discovery"]);
    let planning = project.render(&["--task-type", "implementation-planning"]);
    fs::write(project.root().join("answers.md"), "use postgres\n").unwrap();
    fs::write(project.root().join("plan.md"), "1. do it\n").unwrap();

    // Answers continue the clarification run, not the latest run.
    let answered = project.render(&[
        "--task-type",
        "requirements-discovery",
        "--clarification-response",
        "answers.md",
    ]);
    assert_eq!(manifest(&answered)["continues"], json!(discovery));
    let task = read_json(&answered.join("task-manifest.json"));
    assert_eq!(task["continuation"]["kind"], "clarification-response");
    assert_eq!(task["continuation"]["previousRun"], json!(discovery));
    assert_eq!(
        fs::read_to_string(answered.join("inputs/clarification-response.md")).unwrap(),
        "use postgres\n"
    );

    // An approved plan continues the latest planning run.
    let implementing = project.render(&[
        "--task-type",
        "implementation",
        "--approved-plan",
        "plan.md",
    ]);
    assert_eq!(manifest(&implementing)["continues"], json!(planning));
    let task = read_json(&implementing.join("task-manifest.json"));
    assert_eq!(task["continuation"]["kind"], "approved-plan");

    // --resume-clarification asks on a terminal; without one it says how else.
    let assert = launch(
        &project,
        &[
            "--task-type",
            "requirements-discovery",
            "--resume-clarification",
        ],
    )
    .code(2);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(stderr.contains("--clarification-response"), "{stderr}");

    // Mutually exclusive continuations are refused before anything is written.
    let runs_before = fs::read_dir(discovery.parent().unwrap()).unwrap().count();
    launch(
        &project,
        &[
            "--task-type",
            "requirements-discovery",
            "--resume-clarification",
            "--approved-plan",
            "plan.md",
        ],
    )
    .code(2);
    assert_eq!(
        fs::read_dir(discovery.parent().unwrap()).unwrap().count(),
        runs_before
    );
}

#[test]
fn task_key_form_resumes_the_same_task() {
    let project = Project::new();
    let first = project.render(&["--task-type", "project-analysis"]);
    let output = project
        .okstra()
        .args([
            "--render-only",
            "--yes",
            "--json",
            "--task-key",
            "demo/g/t",
            "--task-brief",
            "brief.md",
            "--task-type",
            "project-analysis",
        ])
        .timeout(LIMIT)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let paths: Value = serde_json::from_slice(&output).unwrap();
    let second = PathBuf::from(paths["runDir"].as_str().unwrap());
    assert!(second.ends_with("project-analysis-002"), "{second:?}");
    assert_eq!(manifest(&second)["continues"], json!(first));
}

#[test]
fn continuations_skip_deleted_runs_and_see_runs_copied_in() {
    let project = Project::new();
    fs::write(project.root().join("answers.md"), "use postgres\n").unwrap();
    let analysis = project.render(&["--task-type", "project-analysis"]);
    let errors = project.render(&["--task-type", "error-analysis"]);

    // A deleted run is not continued, and its number is not handed out again.
    fs::remove_dir_all(&errors).unwrap();
    let next = project.render(&["--task-type", "project-analysis"]);
    assert_eq!(manifest(&next)["continues"], json!(analysis));
    let again = project.render(&["--task-type", "error-analysis"]);
    assert!(again.ends_with("error-analysis-002"), "{again:?}");
    fs::remove_dir_all(&again).unwrap();

    // A run folder okstra did not make here (copied in from elsewhere) is
    // still a run: it is continued, and its number is not reused either.
    let copied = analysis.with_file_name("requirements-discovery-007");
    fs::create_dir(&copied).unwrap();
    let mut head = manifest(&analysis);
    head["taskType"] = json!("requirements-discovery");
    head["createdAt"] = json!("2999-01-01T00:00:00.000Z");
    fs::write(copied.join("run-manifest.json"), head.to_string()).unwrap();
    let answered = project.render(&["--clarification-response", "answers.md"]);
    assert!(
        answered.ends_with("requirements-discovery-008"),
        "{answered:?}"
    );
    assert_eq!(manifest(&answered)["continues"], json!(copied));
}

#[test]
fn continuations_supply_the_task_type_when_none_is_given() {
    let project = Project::new();
    fs::write(project.root().join("answers.md"), "use postgres\n").unwrap();
    fs::write(project.root().join("plan.md"), "1. do it\n").unwrap();
    let analysis = project.render(&["--task-type", "error-analysis"]);
    project.render(&["--task-type", "project-analysis"]);

    // Answers continue the phase that asked, not the latest run's type.
    let answered = project.render(&["--clarification-response", "answers.md"]);
    assert_eq!(manifest(&answered)["taskType"], "error-analysis");
    assert_eq!(manifest(&answered)["continues"], json!(analysis));

    // An approved plan is carried out by an implementation run...
    let implementing = project.render(&["--approved-plan", "plan.md"]);
    assert_eq!(manifest(&implementing)["taskType"], "implementation");

    // ...and by nothing else.
    let refused = launch(
        &project,
        &[
            "--approved-plan",
            "plan.md",
            "--task-type",
            "project-analysis",
        ],
    )
    .code(2);
    let stderr = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    assert!(stderr.contains("--task-type project-analysis"), "{stderr}");
}
