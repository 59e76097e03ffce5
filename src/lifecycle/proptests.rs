//! Property tests of the lifecycle parsers (run manifest, sidecar,
//! heartbeat, lead events): whatever the bytes, no panic, bounded time, and
//! a manifest that loads never names a path outside its run.

use std::path::Path;

use proptest::prelude::*;

use super::{Run, status};
use crate::fuzz::{bounded, bytes, config, damaged, json_value};
use crate::provider_exec::sidecar;
use crate::run::events as event;

const MANIFEST: &[u8] = br#"{"schemaVersion":1,"runId":"project-analysis-001","createdAt":"2026-11-30T10:00:00Z","runDir":"/old/run","projectRoot":"/old","leadRuntime":"external","taskKey":"p/g/t","taskType":"project-analysis","leadEventsPath":"/old/run/state/lead-events.jsonl","teamStatePath":"state/team-state.json","taskManifestPath":"/old/run/task-manifest.json","finalReport":{"dataPath":"report/data.json"},"assignments":[{"dispatchName":"codex-worker","workerId":"codex","role":"analyser","provider":"codex","modelExecutionValue":"gpt","hostModel":"inherit","runner":"cli-wrapper","wrapper":"okstra-codex-exec","writesProject":false,"promptPath":"/old/run/prompts/codex.md","resultPath":"results/codex.md","workerResultsPath":"/old/run/results/codex.worker-results.md","errorPath":"results/codex.error.md","heartbeatPath":"state/heartbeats/codex.jsonl"}]}"#;
const SIDECAR: &[u8] = br#"{"schemaVersion":1,"wrapper":"okstra-codex-exec","role":"worker","pid":42,"pgid":43,"started_ts":1700000000,"log_path":"/r/p.log","argv":["codex","exec"],"stage":"exited","exit_code":0,"ended_ts":1700000009,"duration_ms":9000,"reason":"exited"}"#;
const HEARTBEAT: &[u8] = b"{\"ts\":\"2026-11-30T10:00:00Z\",\"phase\":\"analysis\",\"summary\":\"reading\"}\n{\"ts\":1700000000,\"blocker\":\"creds\",\"changedFiles\":[\"a\"]}\n";
const EVENTS: &[u8] = b"{\"schemaVersion\":1,\"seq\":1,\"ts\":\"2026-11-30T10:00:00Z\",\"kind\":\"worker-dispatched\",\"runId\":\"r\",\"fields\":{\"dispatchName\":\"codex-worker\"}}\n{\"seq\":2}\n";

fn check_manifest(input: &[u8]) {
    let dir = Path::new("/tmp/okstra-proptest/run");
    if let Ok(run) = bounded(|| Run::parse(dir, input)) {
        let mut paths = vec![
            &run.lead_events_path,
            &run.team_state_path,
            &run.task_manifest_path,
            &run.report_data_path,
        ];
        for assignment in &run.assignments {
            let p = &assignment.paths;
            paths.extend([
                &p.prompt_path,
                &p.result_path,
                &p.worker_results_path,
                &p.error_path,
                &p.heartbeat_path,
            ]);
        }
        for path in paths {
            assert!(crate::confine::is_inside(path, dir), "{}", path.display());
        }
    }
}

#[test]
fn the_seed_manifest_loads() {
    // Else the damaged-manifest property would check nothing.
    assert!(Run::parse(Path::new("/tmp/okstra-proptest/run"), MANIFEST).is_ok());
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn manifests_never_panic_and_stay_inside(input in damaged(MANIFEST)) {
        check_manifest(&input);
    }

    #[test]
    fn manifest_shaped_json_never_panics(value in json_value()) {
        check_manifest(value.to_string().as_bytes());
        let wrapped = serde_json::json!({"runId": "r", "assignments": [value]});
        check_manifest(wrapped.to_string().as_bytes());
    }

    #[test]
    fn sidecars_never_panic(input in damaged(SIDECAR), noise in bytes()) {
        let _ = bounded(|| sidecar::parse(Path::new("/r/p.md.status.json"), &input));
        let _ = bounded(|| sidecar::parse(Path::new("/r/p.md.status.json"), &noise));
    }

    #[test]
    fn heartbeats_never_panic(input in damaged(HEARTBEAT), now in any::<i64>()) {
        let text = String::from_utf8_lossy(&input);
        let _ = bounded(|| status::parse_heartbeat(&text, now));
    }

    #[test]
    fn lead_events_never_panic(input in damaged(EVENTS), noise in bytes(), head in any::<bool>()) {
        let _ = bounded(|| event::newest_seq(&input, head));
        let _ = bounded(|| event::newest_seq(&noise, head));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lead-events.jsonl");
        std::fs::write(&path, &input).unwrap();
        let _ = bounded(|| status::dispatch_times(&path));
    }
}
