//! Unit tests of the status board: the state machine table, heartbeats,
//! the run files cache and the text layout.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::board::{WorkerStatus, log_tail};
use super::classify::{Anomaly, Evidence, classify};
use super::files::RunFiles;
use super::outcome::RunLine;
use super::*;
use crate::provider_exec::sidecar::{self, Sidecar};
use crate::vocab::BoardState;
use crate::vocab::Outcome;

const NOW: i64 = 1_800_000_000;

fn sidecar(json: &str) -> Sidecar {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.status.json");
    fs::write(&path, json).unwrap();
    sidecar::read(&path).unwrap().unwrap()
}

fn state(evidence: &Evidence) -> BoardState {
    classify(evidence, NOW).state
}

fn row<'a>(
    name: &'a str,
    model: &'a str,
    state: BoardState,
    exit_code: Option<i64>,
) -> WorkerStatus<'a> {
    WorkerStatus {
        dispatch_name: name,
        worker_id: name,
        role: "analyser",
        provider: "codex",
        model,
        runner: "cli-wrapper",
        state,
        reason: "".into(),
        exit_code,
        started_ts: Some(NOW - 600),
        ended_ts: None,
        elapsed_seconds: Some(600),
        last_activity_ts: Some(NOW - 5),
        wrapper_pid: None,
        pgid: None,
        phase: None,
        summary: None,
        blocker: None,
        changed_files: 0,
        missing_results: Vec::new(),
        sidecar_path: PathBuf::new(),
        log_path: PathBuf::new(),
        anomalies: Vec::new(),
        log_tail: None,
        attempt: None,
    }
}

#[test]
fn the_text_board_aligns_columns_without_trailing_blanks() {
    let run = RunStatus {
        run_id: "error-analysis-002",
        run_dir: Path::new("/p/.okstra/tasks/d/g/t/error-analysis-002"),
        task_key: "d/g/t",
        task_type: "error-analysis",
        workers: vec![
            row("codex-worker", "gpt-5.6-sol", BoardState::Running, None),
            row("w", "m", BoardState::Exited, Some(1)),
        ],
        counts: BTreeMap::from([("exited", 1), ("running", 1)]),
        all_terminal: false,
        attention: Vec::new(),
        dispatches: Vec::new(),
        all_terminal_by_kind: BTreeMap::new(),
        landing: None,
        run: RunLine {
            outcome: Outcome::Running,
            state: crate::derive::liveness::Outcome::Running,
            active: true,
            phase: Some("4".into()),
            round: None,
            verdict: None,
            cross_verified: None,
            report_path: None,
            reason: None,
        },
        team_state_error: None,
    };
    let text = render(std::slice::from_ref(&run), NOW, View::One, true);
    let expected = [
        "d/g/t error-analysis-002 (error-analysis)  /p/.okstra/tasks/d/g/t/error-analysis-002",
        "  DISPATCH      PROVIDER  MODEL        RUNNER       STATE    EXIT  ELAPSED  ACTIVITY",
        "  codex-worker  codex     gpt-5.6-sol  cli-wrapper  running  -     10m00s   5s ago",
        "  w             codex     m            cli-wrapper  exited   1     10m00s   5s ago",
        "  2 workers: 1 exited, 1 running",
        "  run: running; phase 4",
        "",
    ];
    assert_eq!(text, expected.join("\n"));
    // Many runs (drawn in parallel) come out in order, then the totals.
    let many: Vec<RunStatus> = (0..300).map(|_| run.clone()).collect();
    let text = render(&many, NOW, View::Boards, true);
    assert_eq!(text.matches("error-analysis-002 (").count(), 300);
    assert!(text.starts_with(expected[0]));
    assert!(text.ends_with("300 runs, 600 workers: 300 exited, 300 running; 0 need attention\n"));
}

#[test]
fn the_default_board_fits_80_columns_with_paths_aside() {
    let long_dir = format!(
        "/home/someone/work/{}/.okstra/tasks/d/g/t/x-001",
        "deep".repeat(20)
    );
    let mut worker = row(
        "antigravity-worker-reverify-r2",
        "gemini-3.1-pro-preview-long-name",
        BoardState::IdleKilled,
        Some(124),
    );
    worker.provider = "antigravity";
    let run = RunStatus {
        run_id: "implementation-planning-012",
        run_dir: Path::new(&long_dir),
        task_key: "a-rather-long-project/with-a-group/and-a-task-id-that-goes-on",
        task_type: "implementation-planning",
        workers: vec![worker, row("w", "m", BoardState::Running, None)],
        counts: BTreeMap::from([("idle-killed", 1), ("running", 1)]),
        all_terminal: false,
        attention: Vec::new(),
        dispatches: Vec::new(),
        all_terminal_by_kind: BTreeMap::new(),
        run: RunLine {
            outcome: Outcome::Running,
            state: crate::derive::liveness::Outcome::Running,
            active: true,
            phase: Some("5.5".into()),
            round: Some(2),
            verdict: None,
            cross_verified: None,
            report_path: None,
            reason: None,
        },
        team_state_error: None,
        landing: None,
    };
    let text = render(std::slice::from_ref(&run), NOW, View::One, false);
    for line in text.lines() {
        if line.trim_start().starts_with("in /") {
            assert_eq!(line, format!("  in {long_dir}"));
            continue;
        }
        assert!(
            line.chars().count() <= 80,
            "{} columns: {line}",
            line.chars().count()
        );
    }
    // The run's own line is there too, fitted like the rest.
    assert!(text.contains("\n  run: running; phase 5.5"), "{text}");
    // The CLI column gives way first; the dispatch name stays whole here.
    assert!(
        text.contains("antigravity-worker-reverify-r2  antigravit…"),
        "{text}"
    );
    assert!(text.contains("idle-killed"), "{text}");
    assert!(!text.contains("RUNNER"), "{text}");
    // `--wide` keeps every cell whole.
    let wide = render(std::slice::from_ref(&run), NOW, View::One, true);
    assert!(wide.contains("antigravity-worker-reverify-r2") && wide.contains("RUNNER"));
}

#[test]
fn run_files_sees_files_and_symlinks_inside_and_outside_the_run() {
    let run = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let results = run.path().join("results");
    fs::create_dir_all(results.join("sub")).unwrap();
    fs::write(results.join("a.md"), "a").unwrap();
    std::os::unix::fs::symlink(results.join("a.md"), results.join("b.md")).unwrap();
    std::os::unix::fs::symlink(results.join("gone.md"), results.join("c.md")).unwrap();
    fs::write(outside.path().join("x.md"), "x").unwrap();

    let mut files = RunFiles::new(run.path());
    let is_file = |files: &mut RunFiles<'_>, name: &str| files.is_file(&results.join(name));
    assert!(is_file(&mut files, "a.md"));
    assert!(is_file(&mut files, "b.md"), "a symlink to a file counts");
    assert!(!is_file(&mut files, "c.md"), "a dangling symlink does not");
    assert!(!is_file(&mut files, "sub"), "a folder is not a file");
    assert!(!is_file(&mut files, "missing.md"));
    assert!(files.is_file(&outside.path().join("x.md")));
    assert!(!files.is_file(&outside.path().join("y.md")));
    assert!(!files.is_file(&run.path().join("no-such-folder/a.md")));

    let mut text = String::new();
    files
        .open(&results.join("b.md"))
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    assert_eq!(text, "a");
    assert!(files.open(&outside.path().join("x.md")).is_ok());
    let now = clock::unix_now();
    let mtime = files.mtime(&results.join("a.md")).unwrap();
    assert!((now - mtime).abs() < 60, "{mtime} vs {now}");
    assert_eq!(files.mtime(&results.join("missing.md")), None);
}

#[test]
fn nothing_yet_is_pending() {
    let evidence = Evidence {
        missing_results: vec!["/r/a.md".into()],
        ..Evidence::default()
    };
    assert_eq!(state(&evidence), BoardState::Pending);
}

#[test]
fn exited_sidecars_map_to_terminal_states() {
    let base = |json: &str, missing: bool| Evidence {
        sidecar: Some(sidecar(json)),
        missing_results: if missing {
            vec!["/r/a.md".into()]
        } else {
            vec![]
        },
        ..Evidence::default()
    };
    let ok = r#"{"stage":"exited","exit_code":0}"#;
    assert_eq!(state(&base(ok, false)), BoardState::Done);
    assert_eq!(state(&base(ok, true)), BoardState::Exited);
    assert_eq!(
        state(&base(r#"{"stage":"exited","exit_code":3}"#, false)),
        BoardState::Exited
    );
    assert_eq!(
        state(&base(
            r#"{"stage":"exited","exit_code":124,"timeout":true,"terminated_by":"idle-watchdog"}"#,
            false
        )),
        BoardState::IdleKilled
    );
    assert_eq!(
        state(&base(
            r#"{"stage":"exited","exit_code":143,"terminated_by":"signal","signal":"SIGTERM"}"#,
            false
        )),
        BoardState::Signalled
    );
    assert_eq!(
        state(&base(
            r#"{"stage":"exited","terminated_by":"reaper","reason":"wrapper-lost"}"#,
            false
        )),
        BoardState::Lost
    );
}

#[test]
fn started_sidecars_are_lost_running_or_stale() {
    let json = format!(
        r#"{{"stage":"started","pid":42,"started_ts":{}}}"#,
        NOW - 900
    );
    let mut evidence = Evidence {
        sidecar: Some(sidecar(&json)),
        wrapper_alive: Some(false),
        missing_results: vec!["/r/a.md".into()],
        ..Evidence::default()
    };
    assert_eq!(state(&evidence), BoardState::Lost);
    evidence.wrapper_alive = Some(true);
    evidence.log_mtime = Some(NOW - 10);
    assert_eq!(state(&evidence), BoardState::Running);
    evidence.log_mtime = Some(NOW - STALE_SECS - 1);
    assert_eq!(state(&evidence), BoardState::Stale);
    // No log at all: the start time is the last sign of life.
    evidence.log_mtime = None;
    assert_eq!(state(&evidence), BoardState::Stale);
}

#[test]
fn heartbeats_drive_native_workers() {
    let text = format!(
        "{{\"ts\":\"{}\",\"phase\":\"analysis\",\"summary\":\"reading\"}}\nnot json\n{{\"ts\":\"{}\",\"phase\":\"analysis\",\"blocker\":\"need creds\",\"changedFiles\":[\"a\",\"b\"]}}\n",
        clock::rfc3339(NOW - 100),
        clock::rfc3339(NOW - 50)
    );
    let beat = parse_heartbeat(&text, NOW);
    assert_eq!(beat.count, 2);
    assert_eq!(beat.first_ts, Some(NOW - 100));
    assert_eq!(beat.last_ts, Some(NOW - 50));
    assert_eq!(beat.summary.as_deref(), Some("reading"));
    assert_eq!(beat.changed_files, 2);
    let mut evidence = Evidence {
        heartbeat: beat,
        missing_results: vec!["/r/a.md".into()],
        ..Evidence::default()
    };
    assert_eq!(state(&evidence), BoardState::Blocked);
    evidence.heartbeat.blocker = None;
    assert_eq!(state(&evidence), BoardState::Running);
    evidence.heartbeat.phase = Some("complete".into());
    assert_eq!(state(&evidence), BoardState::Exited);
    evidence.missing_results.clear();
    assert_eq!(state(&evidence), BoardState::Done);
}

#[test]
fn future_heartbeats_are_anomalies_not_activity() {
    let far = clock::rfc3339(NOW + 3600);
    let near = clock::rfc3339(NOW + 30);
    let text = format!("{{\"ts\":\"{far}\",\"phase\":\"x\"}}\n");
    let beat = parse_heartbeat(&text, NOW);
    assert_eq!(beat.last_ts, None);
    assert_eq!(
        beat.anomalies,
        vec![Anomaly {
            kind: "future_heartbeat_timestamp",
            observed: far,
            clamped_ts: Some(NOW + FUTURE_SKEW_SECS),
        }]
    );
    let beat = parse_heartbeat(&format!("{{\"ts\":\"{near}\"}}\n"), NOW);
    assert_eq!(beat.last_ts, Some(NOW + 30));
    assert!(beat.anomalies.is_empty());
}

#[test]
fn terminal_and_attention_sets() {
    for s in [
        BoardState::Exited,
        BoardState::IdleKilled,
        BoardState::Signalled,
        BoardState::Lost,
        BoardState::Done,
        BoardState::Ended(crate::vocab::Ending::Network),
    ] {
        assert!(s.is_terminal());
    }
    for s in [
        BoardState::Pending,
        BoardState::Queued,
        BoardState::Held,
        BoardState::WithHost,
        BoardState::Running,
        BoardState::Stale,
        BoardState::Blocked,
    ] {
        assert!(!s.is_terminal());
    }
    assert!(!BoardState::Done.needs_attention());
    assert!(BoardState::Stale.needs_attention());
}

#[test]
fn log_tail_returns_the_last_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.log");
    let text = (1..=100).fold(String::new(), |mut text, i| {
        writeln!(text, "line {i}").unwrap();
        text
    });
    fs::write(&path, text).unwrap();
    assert_eq!(log_tail(&path, 2), vec!["line 99", "line 100"]);
    assert!(log_tail(&dir.path().join("none"), 3).is_empty());
}

#[test]
fn a_recorded_ending_is_the_state_whatever_the_files_say() {
    use super::classify::{Attempt, classify_attempt};
    use crate::derive::liveness::{self, Live};
    use crate::run::team_state::AttemptState;
    use crate::vocab::Ending;

    // The files say the idle watchdog stopped it; the record says `network`.
    let idle = Evidence {
        sidecar: Some(sidecar(
            r#"{"stage":"exited","exit_code":124,"timeout":true,"terminated_by":"idle-watchdog"}"#,
        )),
        ..Evidence::default()
    };
    for ending in Ending::ALL {
        for evidence in [None, Some(&idle)] {
            let verdict = classify_attempt(
                &Attempt {
                    state: AttemptState::Ended(*ending),
                    life: liveness::attempt_state(Some(*ending), false, Live::Nothing),
                    detail: Some("why"),
                    evidence,
                },
                NOW,
            );
            assert_eq!(verdict.state, BoardState::Ended(*ending));
            assert_eq!(verdict.state.as_str(), ending.as_str());
            assert!(verdict.state.is_terminal());
            assert_eq!(verdict.reason, "why");
            assert_eq!(
                verdict.state.needs_attention(),
                *ending != Ending::Completed
            );
        }
    }
}

#[test]
fn an_attempt_not_ended_is_refined_by_what_still_runs() {
    use super::classify::{Attempt, classify_attempt};
    use crate::derive::liveness::{self, Live};
    use crate::run::team_state::AttemptState;

    let attempt = |state, native, live, evidence| {
        classify_attempt(
            &Attempt {
                state,
                life: liveness::attempt_state(None, native, live),
                detail: Some("waiting for 512 MiB of free memory"),
                evidence,
            },
            NOW,
        )
        .state
    };
    let exited = Evidence {
        sidecar: Some(sidecar(r#"{"stage":"exited","exit_code":0}"#)),
        ..Evidence::default()
    };
    let silent = Evidence {
        sidecar: Some(sidecar(&format!(
            r#"{{"stage":"started","pid":42,"started_ts":{}}}"#,
            NOW - 900
        ))),
        wrapper_alive: Some(true),
        ..Evidence::default()
    };
    let nothing = Evidence::default();
    // A native attempt handed out is with the host, never running, even
    // when its files look finished.
    for live in [Live::Nothing, Live::Driver] {
        assert_eq!(
            attempt(AttemptState::Started, true, live, Some(&exited)),
            BoardState::WithHost
        );
    }
    assert_eq!(
        attempt(AttemptState::Queued, false, Live::Driver, None),
        BoardState::Queued
    );
    assert_eq!(
        attempt(AttemptState::Held, false, Live::Driver, None),
        BoardState::Held
    );
    assert_eq!(
        attempt(AttemptState::Held, false, Live::Nothing, None),
        BoardState::Lost
    );
    assert_eq!(
        attempt(AttemptState::Started, false, Live::Nothing, Some(&silent)),
        BoardState::Lost
    );
    assert_eq!(
        attempt(AttemptState::Started, false, Live::Wrapper, Some(&silent)),
        BoardState::Stale
    );
    assert_eq!(
        attempt(AttemptState::Started, false, Live::Driver, Some(&nothing)),
        BoardState::Running
    );
    // A wrapper that finished while its dispatcher records the ending is
    // still running: the record has the last word.
    assert_eq!(
        attempt(AttemptState::Started, false, Live::Driver, Some(&exited)),
        BoardState::Running
    );
    for state in [
        BoardState::Queued,
        BoardState::Held,
        BoardState::WithHost,
        BoardState::Running,
        BoardState::Stale,
        BoardState::Blocked,
    ] {
        assert!(state.is_live() && !state.is_terminal(), "{state:?}");
    }
    assert!(!BoardState::Lost.is_live() && BoardState::Lost.is_terminal());
}
