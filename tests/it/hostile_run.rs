//! Integration tests: hostile run folders, round two (issue 27 items 1, 2
//! and 6): team-state records naming files outside the run, run folders
//! with a symlink planted in place of `results/`, `prompts/` or `state/`,
//! and two dispatchers started together. Each through the real binary,
//! with the fake team; "outside/" stands for the user's other files.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{Project, read_json, team_state_path};

/// A project with the fake team, one rendered headless run of claude and
/// codex, and an `outside/` folder beside the project.
fn world() -> (Project, PathBuf, PathBuf) {
    let project = Project::new().credentials();
    for binary in ["claude", "codex"] {
        project.fake_cli(binary, "workers/team.py");
    }
    let run = project.render(&[
        "--headless",
        "--task-type",
        "project-analysis",
        "--workers",
        "claude,codex,report-writer",
    ]);
    let outside = project.path("outside");
    fs::create_dir_all(&outside).unwrap();
    (project, run, outside)
}

/// Every call the fake team got.
fn calls(project: &Project) -> String {
    fs::read_to_string(project.path("fake/calls.log")).unwrap_or_default()
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Put a symlink to `outside` where the run's `folder` was.
fn plant(run: &Path, folder: &str, outside: &Path) {
    let path = run.join(folder);
    let moved = run.join(format!("{folder}.real"));
    fs::rename(&path, &moved).unwrap();
    symlink(outside, &path).unwrap();
}

#[test]
fn a_symlinked_run_folder_is_refused_before_anything_is_read_or_written() {
    for folder in ["results", "prompts", "state"] {
        let (project, run, outside) = world();
        fs::write(outside.join("keep.md"), "the user's file\n").unwrap();
        if folder == "state" {
            // A planted state/ must hold what okstra looks for.
            copy(&run.join("state"), &outside);
        }
        plant(&run, folder, &outside);
        let before = names(&outside);
        let run_s = run.to_str().unwrap();
        for args in [
            vec!["dispatch", run_s],
            vec!["run", run_s],
            vec!["items", run_s],
            vec!["converge", "plan", run_s, "--round", "1"],
            vec!["cancel", run_s],
        ] {
            let (code, _, stderr) = project.outcome(&args);
            assert_eq!(code, 2, "{folder} {args:?}: {stderr}");
            assert_eq!(stderr.lines().count(), 1, "{folder} {args:?}: {stderr}");
            assert!(
                stderr.contains("is refused") && stderr.contains(&format!("/{folder}`")),
                "{folder} {args:?}: {stderr}"
            );
        }
        assert_eq!(
            names(&outside),
            before,
            "{folder}: something was written outside"
        );
        assert_eq!(calls(&project), "", "{folder}: a CLI was started");
    }
}

#[test]
fn a_file_planted_as_a_link_under_okstra_is_never_read_or_written_through() {
    let (project, run, outside) = world();
    fs::write(outside.join("secret.md"), "| F-001 | a secret | x.py:1 |\n").unwrap();
    // Both analysers complete first.
    let (code, _, stderr) = project.outcome(&["dispatch", run.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    // Then a worker plants its result as a link to the user's file.
    let result = run.join("results/codex-worker.md");
    fs::remove_file(&result).unwrap();
    symlink(outside.join("secret.md"), &result).unwrap();
    let (code, stdout, stderr) = project.outcome(&["items", run.to_str().unwrap(), "--json"]);
    assert!(!stdout.contains("a secret"), "{stdout}");
    // Not a result at all: codex is listed as not having completed.
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("skipped `codex`"), "{stderr}");
    // Writing through it is refused too: the user's file is untouched.
    let (_, _, _) = project.outcome(&["converge", "plan", run.to_str().unwrap(), "--round", "1"]);
    assert_eq!(
        fs::read_to_string(outside.join("secret.md")).unwrap(),
        "| F-001 | a secret | x.py:1 |\n"
    );
}

#[test]
fn a_record_naming_a_file_outside_the_run_is_refused_by_every_command() {
    let (project, run, outside) = world();
    let run_s = run.to_str().unwrap();
    let (code, _, stderr) = project.outcome(&["dispatch", run_s, "--workers", "claude"]);
    assert_eq!(code, 0, "{stderr}");
    fs::write(outside.join("secret.md"), "the user's secret\n").unwrap();
    fs::write(outside.join("victim.md"), "the user's file\n").unwrap();
    let path = team_state_path(&run);
    let mut state = read_json(&path);
    let record = &mut state["dispatches"][0];
    record["promptPath"] = outside.join("secret.md").to_string_lossy().into();
    record["resultPath"] = outside.join("victim.md").to_string_lossy().into();
    record["logPath"] = outside.join("secret.md").to_string_lossy().into();
    record["ending"] = Value::from("network");
    fs::write(&path, serde_json::to_vec_pretty(&state).unwrap()).unwrap();
    let calls_before = calls(&project);
    for args in [
        vec!["dispatch", run_s, "--kind", "retry", "--workers", "claude"],
        vec!["dispatch", run_s],
        vec!["await", run_s],
        vec!["run", run_s],
        vec!["usage", run_s],
        vec!["coverage", run_s],
        vec!["status", run_s],
    ] {
        let (code, stdout, stderr) = project.outcome(&args);
        assert!(!stdout.contains("the user's secret"), "{args:?}: {stdout}");
        if args[0] == "status" {
            // The board reports, it does not fail: the run is shown as unreadable.
            continue;
        }
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(
            stderr.contains("is refused: record `dispatches[0]`")
                && stderr.contains("is outside the run folder"),
            "{args:?}: {stderr}"
        );
    }
    assert_eq!(calls(&project), calls_before, "a CLI was started");
    assert_eq!(
        fs::read_to_string(outside.join("victim.md")).unwrap(),
        "the user's file\n"
    );
}

#[test]
fn two_dispatchers_started_together_start_every_worker_once() {
    let (project, run, _outside) = world();
    let run_s = run.to_str().unwrap().to_owned();
    let spawn = || {
        let mut cmd = project.okstra();
        cmd.env("FAKE_SLEEP_ANALYSER", "2")
            .args(["dispatch", &run_s]);
        std::thread::spawn(move || cmd.output().unwrap())
    };
    let (a, b) = (spawn(), spawn());
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    let codes = [a.status.code(), b.status.code()];
    // One dispatched; the other waited for it, then found nothing left to
    // start (or, had it waited past its limit, refused): never both.
    assert!(codes.contains(&Some(0)), "{codes:?}");
    let calls = calls(&project);
    assert_eq!(calls.matches("claude analyser").count(), 1, "{calls}");
    assert_eq!(calls.matches("codex analyser").count(), 1, "{calls}");
    let state = read_json(&team_state_path(&run));
    assert_eq!(state["dispatches"].as_array().unwrap().len(), 2, "{state}");
}

/// Copy the files of folder `from` into `to`.
fn copy(from: &Path, to: &Path) {
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}
