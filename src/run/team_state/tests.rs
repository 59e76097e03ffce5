//! Unit tests of the team state: records, edits, transactions and refusals.

use super::*;

/// A run folder with a team state holding one worker.
fn fixture() -> (tempfile::TempDir, Run) {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    std::fs::create_dir_all(run_dir.join("state")).unwrap();
    let manifest = serde_json::json!({
        "runId": "x-001", "createdAt": "2026-11-30T00:00:00Z", "taskKey": "p/g/t",
        "taskType": "project-analysis", "projectRoot": dir.path(), "runDir": run_dir,
        "leadRuntime": "external", "assignments": [],
        "leadEventsPath": run_dir.join("state/lead-events.jsonl"),
        "teamStatePath": run_dir.join("state/team-state-x.json"),
        "taskManifestPath": run_dir.join("task-manifest.json"),
        "finalReport": {"dataPath": run_dir.join("report/data.json")},
    });
    std::fs::write(run_dir.join("run-manifest.json"), manifest.to_string()).unwrap();
    let value = serde_json::json!({
        "schemaVersion": 1, "createdAt": "2026-11-30T00:00:00Z", "runId": "x-001",
        "taskKey": "p/g/t", "taskType": "project-analysis", "teamName": "t",
        "dispatches": [], "checkpoints": [{"kind": "kept"}], "leadUsage": null, "usageSummary": null,
        "workers": {"claude-worker": {"workerId": "claude", "role": "analyser",
            "provider": "claude", "runner": "cli-wrapper", "terminalStatus": null, "usage": null}}
    });
    std::fs::write(
        run_dir.join("state/team-state-x.json"),
        serde_json::to_vec(&value).unwrap(),
    )
    .unwrap();
    let run = Run::open(&run_dir).unwrap();
    (dir, run)
}

fn record(run: &Run, attempt: u32) -> DispatchRecord {
    let kind = if attempt == 1 {
        DispatchKind::Initial
    } else {
        DispatchKind::Retry
    };
    let paths = crate::run::roster::DispatchPaths {
        prompt_path: run.dir.join("prompts/claude-worker.md"),
        result_path: run.dir.join("results/claude-worker.md"),
        worker_results_path: run.dir.join("results/claude-worker.worker-results.md"),
        error_path: run.dir.join("results/claude-worker.error.md"),
        heartbeat_path: PathBuf::new(),
    };
    DispatchRecord {
        role: Some(Role::Analyser),
        provider: Some(Provider::Claude),
        model: Some("opus".into()),
        runner: Some(Runner::CliWrapper),
        dispatcher_pid: Some(1),
        ..DispatchRecord::queued("claude-worker", kind, attempt, "claude", &paths)
    }
}

#[test]
fn records_are_added_replaced_by_attempt_and_other_fields_kept() {
    let (_dir, run) = fixture();
    update(&run, &[Change::Put(&record(&run, 1))]).unwrap();
    let mut done = record(&run, 1);
    done.ending = Some(Ending::Network);
    update(
        &run,
        &[Change::Put(&done), Change::SpendRetry("claude-worker")],
    )
    .unwrap();
    let state = update(&run, &[Change::Put(&record(&run, 2))]).unwrap();
    assert_eq!(state.dispatches.len(), 2);
    assert_eq!(state.dispatches[0].ending, Some(Ending::Network));
    assert_eq!(state.latest("claude-worker").unwrap().attempt, 2);
    assert_eq!(state.latest_attempts().len(), 1);
    assert!(state.retry_spent("claude-worker"));
    let raw: Value = serde_json::from_slice(&std::fs::read(&run.team_state_path).unwrap()).unwrap();
    assert_eq!(raw["checkpoints"][0]["kind"], "kept");
}

#[test]
fn a_change_that_breaks_the_schema_writes_nothing() {
    let (_dir, run) = fixture();
    let before = std::fs::read(&run.team_state_path).unwrap();
    let mut bad = record(&run, 1);
    bad.model = Some(String::new());
    assert!(update(&run, &[Change::Put(&bad)]).is_err());
    assert_eq!(std::fs::read(&run.team_state_path).unwrap(), before);
}

#[test]
fn a_record_naming_a_file_outside_the_run_is_refused() {
    let (dir, run) = fixture();
    let mut planted = record(&run, 1);
    planted.result_path = dir.path().join("outside/victim.md");
    update(&run, &[Change::Put(&planted)]).unwrap_err();
    // Written by hand (the write above already refuses to read it back).
    let mut raw: Value =
        serde_json::from_slice(&std::fs::read(&run.team_state_path).unwrap()).unwrap();
    raw["dispatches"] = serde_json::json!([serde_json::to_value(&planted).unwrap()]);
    std::fs::write(&run.team_state_path, raw.to_string()).unwrap();
    let err = format!("{:#}", read(&run).unwrap_err());
    assert!(err.contains("is refused: record `dispatches[0]`"), "{err}");
    assert!(err.contains("`resultPath`"), "{err}");
}

#[test]
fn attempt_states_follow_the_record() {
    let (_dir, run) = fixture();
    let mut attempt = record(&run, 1);
    assert_eq!(attempt.state(), AttemptState::Queued);
    assert!(attempt.hold("waiting for 512 MiB of free memory"));
    assert!(!attempt.hold("waiting for 512 MiB of free memory"));
    assert_eq!(attempt.state(), AttemptState::Held);
    attempt.start();
    assert_eq!(attempt.state(), AttemptState::Started);
    assert_eq!(attempt.detail, None);
    attempt.end(Ending::Cancelled, "stopped".into());
    assert_eq!(attempt.state(), AttemptState::Ended(Ending::Cancelled));
    assert!(attempt.was_interrupted());
}

#[test]
fn a_record_with_words_this_okstra_does_not_know_still_reads() {
    let (_dir, run) = fixture();
    let mut written = serde_json::to_value(record(&run, 1)).unwrap();
    written["isolation"] = "chroot".into();
    written["workspace"] = serde_json::json!({"path": run.dir.join("copy"), "kind": "overlay"});
    written["recoveredFrom"] = "carrier-pigeon".into();
    let mut raw: Value =
        serde_json::from_slice(&std::fs::read(&run.team_state_path).unwrap()).unwrap();
    raw["dispatches"] = serde_json::json!([written]);
    std::fs::write(&run.team_state_path, raw.to_string()).unwrap();

    let state = read(&run).unwrap();
    let read_back = &state.dispatches[0];
    let isolation = read_back.isolation.as_ref().unwrap();
    assert_eq!(isolation.known(), None);
    assert_eq!(isolation.to_string(), "chroot");
    let workspace = read_back.workspace.as_ref().unwrap();
    assert_eq!(workspace.kind.to_string(), "overlay");
    let again = serde_json::to_value(read_back).unwrap();
    assert_eq!(again["isolation"], "chroot");
    assert_eq!(again["workspace"]["kind"], "overlay");
    let from = read_back.recovered_from.as_ref().unwrap();
    assert_eq!(from.known(), None);
    assert_eq!(again["recoveredFrom"], "carrier-pigeon");
}
