//! Integration tests: every command's `--json` answer on one finished
//! headless run leads with its `schemaVersion`, comes once on stdout, and
//! passes its schema (a debug build refuses an answer that breaks it, exit
//! 2); stderr says the same with or without `--json`.

use serde_json::Value;

use crate::run::{run, team_project};
use crate::support::{Project, assert_refused};

/// The keys of a JSON object in the order they were written.
fn first_key(text: &str) -> String {
    let rest = text.trim_start().strip_prefix('{').unwrap_or_default();
    let rest = rest.trim_start().strip_prefix('"').unwrap_or_default();
    rest.split('"').next().unwrap_or_default().to_owned()
}

#[test]
fn every_json_answer_of_a_finished_run_leads_with_its_version_and_passes_its_schema() {
    let project = team_project();
    let (outcome, code, stderr) = run(&project, "claude,codex,kimi,report-writer", &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(outcome["schemaVersion"], 1, "{outcome}");
    let run_dir = outcome["runDir"].as_str().unwrap().to_owned();
    let root = project.root().to_string_lossy().into_owned();
    let cases: Vec<(Vec<&str>, i32)> = vec![
        (vec!["status", &run_dir, "--json"], 0),
        (vec!["status", "--project-root", &root, "--json"], 0),
        (vec!["items", &run_dir, "--json"], 0),
        (vec!["converge", "classify", &run_dir, "--json"], 0),
        (vec!["validate", &run_dir, "--json"], 0),
        (vec!["report", &run_dir, "--json"], 0),
        (vec!["report", &run_dir, "--format", "sarif", "--json"], 0),
        (vec!["gate", &run_dir, "--fail-on", "critical", "--json"], 0),
        (vec!["usage", "--project-root", &root, "--json"], 0),
        (vec!["dispatch", &run_dir, "--dry-run", "--json"], 0),
        (vec!["await", &run_dir, "--json"], 0),
        (vec!["next", &run_dir, "--json"], 0),
        // Last: the run is cancelled from here on.
        (vec!["cancel", &run_dir, "--json"], 0),
        (vec!["reap", "--project-root", &root, "--json"], 0),
        (vec!["cleanup", "--project-root", &root, "--json"], 0),
    ];
    for (args, expected) in &cases {
        let (code, stdout, stderr) = project.outcome(args);
        assert_eq!(code, *expected, "okstra {args:?}\n{stderr}");
        // One document, and nothing else on stdout.
        let answer: Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|err| panic!("okstra {args:?}: {err}\n{stdout}"));
        assert!(answer.is_object(), "okstra {args:?}: {stdout}");
        assert_eq!(
            first_key(&stdout),
            "schemaVersion",
            "okstra {args:?}: {stdout}"
        );
        assert!(
            answer["schemaVersion"].is_u64(),
            "okstra {args:?}: {stdout}"
        );
    }
    // A run's usage is the report's `usageSummary`, as the report holds it.
    let (code, stdout, stderr) = project.outcome(&["usage", &run_dir, "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let usage: Value = serde_json::from_str(&stdout).unwrap();
    let report =
        crate::support::read_json(&std::path::Path::new(&run_dir).join("report/data.json"));
    assert_eq!(usage["totals"], report["usageSummary"]["totals"]);
    assert!(usage.get("schemaVersion").is_none(), "{stdout}");
}

#[test]
fn stderr_is_the_same_with_or_without_json() {
    let project = team_project();
    let (outcome, code, stderr) = run(&project, "claude,codex,report-writer", &[]);
    assert_eq!(code, 0, "{stderr}");
    let run_dir = outcome["runDir"].as_str().unwrap().to_owned();
    for args in [
        vec!["gate", &run_dir, "--fail-on", "critical"],
        vec!["coverage", &run_dir],
        vec!["validate", &run_dir],
    ] {
        let (text_code, text, text_err) = project.outcome(&args);
        let (json_code, json, json_err) = project.outcome(&[&args[..], &["--json"]].concat());
        assert_eq!(text_code, json_code, "okstra {args:?}");
        assert_eq!(text_err, json_err, "okstra {args:?}");
        assert_ne!(text, json, "okstra {args:?}");
        assert!(!json_err.is_empty(), "okstra {args:?}: says nothing");
    }
}

#[test]
fn a_reader_that_stops_reading_is_no_error() {
    // stdout is a pipe nobody reads: every write to it fails with EPIPE.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let output = std::process::Command::new(crate::support::okstra_path())
        .args(["completions", "bash"])
        .stdout(writer)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
}

#[test]
fn okstra_schema_prints_each_schema_docs_answers_names_as_the_repository_holds_it() {
    let listed = okstra_out(&["schema"]);
    let docs =
        std::fs::read_to_string(crate::support::repo_root().join("docs/answers.md")).unwrap();
    let named: Vec<&str> = docs
        .split('`')
        .filter(|word| word.ends_with(".schema.json"))
        .collect();
    assert!(named.len() >= 20, "{named:?}");
    for file in named {
        let name = file.trim_end_matches(".schema.json");
        assert!(
            listed
                .lines()
                .any(|line| line.split_whitespace().next() == Some(name)),
            "`okstra schema` does not list `{name}`:\n{listed}"
        );
        let printed = okstra_out(&["schema", name]);
        let on_disk =
            std::fs::read_to_string(crate::support::repo_root().join("schemas").join(file))
                .unwrap();
        assert_eq!(printed.trim_end(), on_disk.trim_end(), "{file}");
        // The file name works as well.
        assert_eq!(okstra_out(&["schema", file]), printed, "{file}");
    }
    let (code, stdout, stderr) = Project::new().outcome(&["schema", "gate"]);
    assert_refused(
        code,
        &stdout,
        &stderr,
        "no embedded schema `gate`; expected one of: ",
    );
    assert!(stderr.contains("gate-answer"), "{stderr}");
}

/// `okstra <args>` that succeeds: its stdout.
fn okstra_out(args: &[&str]) -> String {
    let (code, stdout, stderr) = Project::new().outcome(args);
    assert_eq!(code, 0, "okstra {args:?}: {stderr}");
    stdout
}

/// `okstra <args>` in `project` with stdout and stderr on one pipe, as a
/// terminal shows them: its exit code and the lines in the order written.
fn interleaved(project: &Project, args: &[&str]) -> (i32, Vec<String>) {
    use std::io::Read;
    let (mut reader, writer) = std::io::pipe().unwrap();
    let mut cmd = project.command(crate::support::okstra_path());
    cmd.args(args)
        .stdout(writer.try_clone().unwrap())
        .stderr(writer);
    let mut child = cmd.spawn().unwrap();
    // The command holds the only write ends now.
    drop(cmd);
    let mut text = String::new();
    reader.read_to_string(&mut text).unwrap();
    let code = child.wait().unwrap().code().unwrap_or(-1);
    (code, text.lines().map(str::to_owned).collect())
}

#[test]
fn the_closing_lines_come_after_the_answer_they_sum_up() {
    let project = team_project();
    // One reviewer: not cross-verified, which the last line says.
    let (code, lines) = interleaved(
        &project,
        &[
            "run",
            "--project-id",
            "demo",
            "--task-group",
            "g",
            "--task-id",
            "t",
            "--task-brief",
            "brief.md",
            "--task-type",
            "project-analysis",
            "--workers",
            "claude,report-writer",
            "--yes",
        ],
    );
    assert_eq!(code, 0, "{lines:#?}");
    let summary = lines
        .iter()
        .position(|line| line.starts_with("okstra: project-analysis run `project-analysis-001`"))
        .unwrap_or_else(|| panic!("no closing summary: {lines:#?}"));
    assert!(
        lines
            .last()
            .unwrap()
            .starts_with("note: not cross-verified"),
        "{lines:#?}"
    );
    assert!(summary < lines.len() - 1, "{lines:#?}");
    let run = project
        .root()
        .join(".okstra/tasks/demo/g/t/project-analysis-001");
    let run = run.to_str().unwrap();
    // The gate: the findings it counted, then its decision.
    let (code, lines) = interleaved(&project, &["gate", run, "--fail-on", "info"]);
    assert_eq!(code, 3, "{lines:#?}");
    assert!(
        lines.last().unwrap().starts_with("error: gate failed: "),
        "{lines:#?}"
    );
    // validate: the verdict's line last.
    let (code, lines) = interleaved(&project, &["validate", run]);
    assert_eq!(code, 0, "{lines:#?}");
    assert!(
        lines.last().unwrap().contains("is a valid v2.2 report"),
        "{lines:#?}"
    );
}
