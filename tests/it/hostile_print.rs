//! Integration tests: hostile input, round two — printing. Text okstra
//! prints from a worker's file or a CLI's output (an item's heading and
//! text, a transcript's model name, a failing `--version` line) carries an
//! OSC 52 clipboard write, a clear-screen, BEL and NUL; none of those bytes
//! may reach the terminal, in text output or on stderr, and JSON output
//! stays JSON.

use std::fs;
use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use crate::support::{Project, read_json, repo_root, team_state_path};

/// An OSC 52 write of "hacked" to the clipboard, a clear-screen, BEL, NUL.
const HOSTILE: &str = "\u{1b}]52;c;aGFja2Vk\u{7}\u{1b}[2J\u{7}\u{0}";

/// Panic if `bytes` holds ESC, BEL or NUL.
fn assert_inert(bytes: &[u8], what: &str) {
    for (byte, name) in [(0x1b_u8, "ESC"), (0x07, "BEL"), (0x00, "NUL")] {
        assert!(
            !bytes.contains(&byte),
            "raw {name} in {what}:\n{}",
            String::from_utf8_lossy(bytes)
        );
    }
}

fn assert_output_inert(output: &Output, what: &str) {
    assert_inert(&output.stdout, &format!("{what} stdout"));
    assert_inert(&output.stderr, &format!("{what} stderr"));
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A project-analysis run of claude and codex with `external` as lead.
fn analysis(project: &Project) -> std::path::PathBuf {
    project.render(&[
        "--task-type",
        "project-analysis",
        "--workers",
        "claude,codex,report-writer",
        "--lead-runtime",
        "external",
    ])
}

fn assignment(run: &Path, worker: &str) -> Value {
    read_json(&run.join("run-manifest.json"))["assignments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["workerId"] == worker)
        .unwrap()
        .clone()
}

#[test]
fn items_never_print_a_headings_or_texts_terminal_escapes() {
    let project = Project::new();
    let run = analysis(&project);
    let result = assignment(&run, "claude")["resultPath"]
        .as_str()
        .unwrap()
        .to_owned();
    fs::write(
        &result,
        format!(
            "# claude\n\n## Findings {HOSTILE}\n\n| ID | Finding |\n|---|---|\n\
             | F-001 | wipe {HOSTILE} the screen at src/a.rs:1 |\n"
        ),
    )
    .unwrap();

    let output = project.okstra().arg("items").arg(&run).output().unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_output_inert(&output, "items");
    let stdout = text(&output.stdout);
    assert!(
        stdout.starts_with("claude:F-001\tFindings \\e]52;c;aGFja2Vk\\u{7}\\e[2J\\u{7}\\u{0}\t"),
        "{stdout}"
    );
    assert_eq!(stdout.lines().count(), 1, "{stdout}");

    // JSON stays JSON: the same text, escaped by the JSON encoder.
    let output = project
        .okstra()
        .args(["items", "--json"])
        .arg(&run)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_output_inert(&output, "items --json");
    let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        listed["items"][0]["section"],
        json!(format!("Findings {HOSTILE}"))
    );
}

#[test]
fn usage_never_prints_a_transcripts_model_name_raw() {
    let project = Project::new();
    let run = analysis(&project);
    let claude = assignment(&run, "claude");
    // The model as the stream carries it: JSON-escaped in the log line,
    // the raw bytes once parsed.
    let hostile_json = serde_json::to_string(&format!("opus{HOSTILE}")).unwrap();
    let stream = fs::read_to_string(repo_root().join("tests/fixtures/usage/claude-stream.jsonl"))
        .unwrap()
        .replace("claude-opus-4-8", hostile_json.trim_matches('"'));
    let log = run.join("prompts/claude-worker.log");
    fs::write(&log, stream).unwrap();
    let state_path = team_state_path(&run);
    let mut state = read_json(&state_path);
    state["dispatches"] = json!([{
        "dispatchName": "claude-worker",
        "dispatchKind": "initial",
        "attempt": 1,
        "workerId": "claude",
        "role": claude["role"],
        "provider": "claude",
        "model": claude["modelExecutionValue"],
        "runner": claude["runner"],
        "promptPath": claude["promptPath"],
        "resultPath": claude["resultPath"],
        "workerResultsPath": claude["workerResultsPath"],
        "errorPath": claude["errorPath"],
        "logPath": log,
        "usage": null,
    }]);
    fs::write(&state_path, serde_json::to_vec_pretty(&state).unwrap()).unwrap();

    let output = project.okstra().arg("usage").arg(&run).output().unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_output_inert(&output, "usage");
    // The table with every attempt shows the model's name whole, escaped.
    let output = project
        .okstra()
        .args(["usage", "--attempts"])
        .arg(&run)
        .output()
        .unwrap();
    assert_output_inert(&output, "usage --attempts");
    assert!(
        text(&output.stdout).contains("opus\\e]52;c;aGFja2Vk\\u{7}\\e[2J"),
        "{}",
        text(&output.stdout)
    );
    let output = project
        .okstra()
        .args(["usage", "--json"])
        .arg(&run)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_output_inert(&output, "usage --json");
    assert!(serde_json::from_slice::<Value>(&output.stdout).is_ok());
}

/// Every string in `value`, recursively.
fn strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(text) => out.push(text.clone()),
        Value::Array(items) => items.iter().for_each(|item| strings(item, out)),
        Value::Object(map) => map.values().for_each(|item| strings(item, out)),
        _ => {}
    }
}

#[test]
fn doctor_never_prints_or_caches_a_failing_version_line_raw() {
    let project = Project::new();
    project.copy_cli("claude", "doctor/hostile-version.sh");
    // Twice: the first asks the CLI (and caches), the second reads the cache.
    for pass in ["fresh", "cached"] {
        let output = project
            .okstra()
            .args(["doctor", "--json", "--provider", "claude"])
            .output()
            .unwrap();
        assert_output_inert(&output, &format!("{pass} --json"));
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(report["providers"][0]["cached"], json!(pass == "cached"));
        let output = project
            .okstra()
            .args(["doctor", "--provider", "claude"])
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(1),
            "{pass}: {}",
            text(&output.stderr)
        );
        assert_output_inert(&output, pass);
        let stdout = text(&output.stdout);
        assert!(
            stdout.contains("claude: `claude --version` failed (exit 1): \\e]52;c;aGFja2Vk"),
            "{pass}: {stdout}"
        );
    }
    let cache = read_json(&project.path("cache/okstra/doctor.json"));
    let mut all = Vec::new();
    strings(&cache, &mut all);
    assert!(
        all.iter().any(|s| s.contains("failed (exit 1)")),
        "{cache:#}"
    );
    for text in all {
        assert!(!text.chars().any(char::is_control), "cached raw: {text:?}");
    }
}
