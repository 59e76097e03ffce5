//! Lifecycle: `okstra reap` — lost groups listed and killed alone, the
//! grace period, and recycled group ids never signalled.

use pretty_assertions::assert_eq;

use super::*;

use crate::support::limit;

/// A stand-in for the `codex` CLI that runs `body` (the reaper stops only
/// a group whose recorded command is a provider CLI's): its path.
fn fake_codex(project: &Project, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let dir = project.root().join(".bin");
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join("codex");
    fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path.to_string_lossy().into_owned()
}

/// `okstra reap --execute --json` over a project: its report.
fn reap_execute(project_root: &Path) -> Value {
    let output = okstra()
        .args(["reap", "--execute", "--json", "--project-root"])
        .arg(project_root)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&output).unwrap()
}

#[test]
fn a_group_whose_wrapper_died_is_lost_listed_and_reaped_alone() {
    let project = Project::new();
    let run = project.render(&["--task-type", "project-analysis"]);
    let codex = assignment(&run, "codex-worker");
    let claude = assignment(&run, "claude-worker");
    let writer = assignment(&run, "report-writer");

    let started = unix_now() - 1;
    let cli = fake_codex(&project, "sleep 300; exit 0");
    let mut orphan = Group::spawn(&[&cli]);
    let mut bystander = Group::spawn(&["sh", "-c", "sleep 300; exit 0"]);
    // Orphan: dead wrapper, live group.
    write_sidecar(
        &codex,
        &json!({"schemaVersion": 1, "wrapper": "okstra-codex-exec", "role": "analyser",
                "pid": dead_pid(), "pgid": orphan.pid(), "started_ts": started,
                "argv": [&cli],
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
    wait_for(limit(), "the orphan group to end", || {
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
    let cli = fake_codex(&project, script);
    let mut stubborn = Group::spawn(&[&cli]);
    write_sidecar(
        &codex,
        &json!({"schemaVersion": 1, "pid": dead_pid(), "pgid": stubborn.pid(),
                "started_ts": started, "argv": [&cli], "stage": "started"}),
    );
    let report = reap_execute(project.root());
    assert_eq!(report["actions"][0]["outcome"], "killed", "{report}");
    wait_for(limit(), "the stubborn group to end", || {
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
