//! Integration tests: the two kinds of provider limit — a brief
//! `rate-limit` waited out on the CLI's retry-after without spending the
//! shared retry, and a spent `quota` that is not retried and is reported
//! `unavailable`.
//!
//! The fake team (`tests/fixtures/workers/team.py`) plays each CLI's own
//! limit messages (`FAKE_RATE_LIMIT`, `FAKE_QUOTA`). Nothing here asserts on
//! a duration: only on order.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::support::{Group, Project, limit, okstra_path, read_json, team_state_path};

/// A project with the fake team as claude and codex, and a rendered
/// project analysis of both (an external lead); its run folder.
fn rendered() -> (Project, PathBuf) {
    let project = Project::new();
    project
        .fake_cli("claude", "workers/team.py")
        .fake_cli("codex", "workers/team.py");
    let run = project.render(&[
        "--task-type",
        "project-analysis",
        "--workers",
        "claude,codex,report-writer",
        "--lead-runtime",
        "external",
    ]);
    (project, run)
}

/// `okstra dispatch <run> <args…>` in its own group, with `env`.
fn dispatch(project: &Project, run: &Path, args: &[&str], env: &[(&str, &str)]) -> Group {
    let mut cmd = project.command(okstra_path());
    cmd.arg("dispatch")
        .arg(run)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (name, value) in env {
        cmd.env(name, value);
    }
    Group::start(cmd)
}

/// Wait for `group` to exit; its exit code and stderr.
fn finish(mut group: Group) -> (i32, String) {
    let mut stderr = group.0.stderr.take().expect("stderr is piped");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        text
    });
    let status = group.wait(limit());
    let text = reader.join().unwrap();
    (status.code().unwrap_or(-1), text)
}

fn records(run: &Path, name: &str) -> Vec<Value> {
    read_json(&team_state_path(run))["dispatches"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["dispatchName"] == name)
        .cloned()
        .collect()
}

/// The lines of `calls.log` of `project`'s fakes.
fn calls(project: &Project) -> Vec<String> {
    fs::read_to_string(project.path("fake/calls.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_rate_limit_with_a_short_retry_after_is_waited_out_without_spending_the_retry() {
    let (project, run) = rendered();
    // Each CLI's first call is refused for a second, in its own words:
    // claude's `rate_limit_event`, codex's "Please try again in 1s.".
    let group = dispatch(
        &project,
        &run,
        &["--workers", "claude,codex", "--retry-cooldown", "0s"],
        &[("FAKE_RATE_LIMIT", "claude:1,codex:1")],
    );
    let (code, stderr) = finish(group);
    assert_eq!(code, 0, "{stderr}");
    let state = read_json(&team_state_path(&run));
    for (cli, name) in [("claude", "claude-worker"), ("codex", "codex-worker")] {
        let attempts = records(&run, name);
        assert_eq!(attempts.len(), 2, "{name}: {attempts:#?}");
        assert_eq!(attempts[0]["ending"], "rate-limit");
        let detail = attempts[0]["detail"].as_str().unwrap();
        assert!(detail.starts_with("retry after "), "{detail}");
        assert_eq!(attempts[1]["ending"], "completed");
        // The same dispatch run again, not the shared retry, which is left.
        assert_eq!(attempts[1]["attempt"], 2);
        assert_eq!(attempts[1]["dispatchKind"], "initial");
        let retries = &state["workers"][name]["retriesUsed"];
        assert!(retries.is_null() || *retries == 0, "{name}: {retries}");
        assert!(
            stderr.contains(&format!("{name}: waiting "))
                && stderr.contains("the retry is not spent"),
            "{stderr}"
        );
        assert_eq!(
            calls(&project)
                .iter()
                .filter(|c| c.starts_with(&format!("{cli} ")))
                .count(),
            2
        );
    }
    let events = fs::read_to_string(run.join("state/lead-events.jsonl")).unwrap();
    assert!(events.contains(r#""reason":"rate-limit""#), "{events}");
}

#[test]
fn a_spent_quota_is_not_retried_and_is_reported_unavailable() {
    let world = crate::run::team_project();
    let (outcome, code, stderr) = crate::run::run(
        &world,
        "claude,codex,antigravity,kimi,report-writer",
        &[("FAKE_QUOTA", "codex")],
    );
    assert_eq!(code, 0, "{stderr}");
    let run = PathBuf::from(outcome["runDir"].as_str().unwrap());
    // One codex call: no retry, no wait, and no review rounds for codex.
    let codex_calls: Vec<String> = calls(&world)
        .into_iter()
        .filter(|c| c.starts_with("codex "))
        .collect();
    assert_eq!(codex_calls, ["codex analyser"]);
    let attempts = records(&run, "codex-worker");
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0]["ending"], "quota");
    let state = read_json(&team_state_path(&run));
    assert_eq!(state["workers"]["codex-worker"]["terminalStatus"], "quota");
    assert!(state["workers"]["codex-worker"]["retriesUsed"].is_null());
    let report = read_json(&run.join("report/data.json"));
    let coverage = report["workerCoverage"].as_array().unwrap();
    let codex = coverage.iter().find(|w| w["workerId"] == "codex").unwrap();
    assert_eq!(codex["terminalStatus"], "unavailable");
    assert_eq!(codex["failure"]["reason"], "quota");
    assert!(
        codex["failure"]["detail"]
            .as_str()
            .unwrap()
            .contains("You've hit your usage limit"),
        "{codex}"
    );
    // The others' work stands.
    for worker in ["claude", "antigravity", "kimi"] {
        let entry = coverage.iter().find(|w| w["workerId"] == worker).unwrap();
        assert_eq!(entry["terminalStatus"], "completed", "{entry}");
    }
}

/// The `[start, end]` of each call of `worker` in a `FAKE_TIMES` file.
fn intervals(times: &str, worker: &str) -> Vec<(u128, u128)> {
    let mut open: Vec<(String, u128)> = Vec::new();
    let mut done = Vec::new();
    for line in times.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [event, who, pid, ns] = fields[..] else {
            panic!("bad FAKE_TIMES line {line:?}")
        };
        if who != worker {
            continue;
        }
        let ns: u128 = ns.parse().unwrap();
        match event {
            "start" => open.push((pid.to_owned(), ns)),
            "end" => {
                let at = open.iter().position(|(p, _)| p == pid).unwrap();
                done.push((open.remove(at).1, ns));
            }
            other => panic!("bad event {other}"),
        }
    }
    assert!(open.is_empty(), "calls that never ended: {open:?}");
    done.sort_unstable();
    done
}

#[test]
fn two_runs_of_one_user_with_a_cap_of_one_never_call_the_provider_together() {
    let project = Project::new();
    project.fake_cli("claude", "workers/team.py");
    let render = |task: &str| {
        project.render(&[
            "--task-type",
            "project-analysis",
            "--task-id",
            task,
            "--workers",
            "claude,report-writer",
            "--lead-runtime",
            "external",
        ])
    };
    let (first, second) = (render("first"), render("second"));
    let times = project.path("fake/times.log");
    let times_env = times.to_str().unwrap();
    let env = [
        ("FAKE_TIMES", times_env),
        ("FAKE_SLEEP", "1"),
        ("OKSTRA_PROVIDER_SLOTS", "claude=1"),
    ];
    let one = dispatch(&project, &first, &["--workers", "claude"], &env);
    let two = dispatch(&project, &second, &["--workers", "claude"], &env);
    let (code_one, stderr_one) = finish(one);
    let (code_two, stderr_two) = finish(two);
    assert_eq!((code_one, code_two), (0, 0), "{stderr_one}\n{stderr_two}");
    let calls = intervals(&fs::read_to_string(&times).unwrap(), "claude");
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(
        calls[0].1 <= calls[1].0,
        "the two runs' claude calls overlapped: {calls:?}"
    );
    // The one that waited said so, and its record said so while it waited.
    let both = format!("{stderr_one}{stderr_two}");
    assert!(both.contains("waiting for a free `claude` slot"), "{both}");
    for run in [&first, &second] {
        assert_eq!(records(run, "claude-worker")[0]["ending"], "completed");
    }
}

#[test]
fn a_bad_provider_slots_value_is_refused_naming_it() {
    let (project, run) = rendered();
    let (code, stderr) = finish(dispatch(
        &project,
        &run,
        &["--workers", "claude", "--provider-slots", "claude=many"],
        &[],
    ));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("invalid value `claude=many` for `--provider-slots`"),
        "{stderr}"
    );
    assert!(calls(&project).is_empty());
}
