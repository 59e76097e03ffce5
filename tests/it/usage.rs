//! `okstra usage` through the real binary: a rendered run with fake CLI logs
//! at its dispatch records' log paths, a Claude lead transcript, the team
//! state it writes, the report it feeds, and the prompts that name it.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::support::{Project, copy_dir, okstra, read_json, repo_root};

const LEAD_SESSION: &str = "11111111-2222-4333-8444-555555555555";

fn fixture(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures/usage").join(name)
}

/// A rendered run of `workers` with `runtime` as lead, in a project at
/// `proj/`; returns (project, run dir).
fn render(workers: &str, runtime: &str) -> (Project, PathBuf) {
    let project = Project::in_folder("proj")
        .brief("# Why do payments retry forever?\n")
        .key("p", "g", "t");
    let run_dir = project.render(&[
        "--task-type",
        "project-analysis",
        "--workers",
        workers,
        "--lead-runtime",
        runtime,
    ]);
    (project, run_dir)
}

fn team_state_path(run_dir: &Path) -> PathBuf {
    PathBuf::from(
        read_json(&run_dir.join("run-manifest.json"))["teamStatePath"]
            .as_str()
            .unwrap(),
    )
}

/// `okstra usage` with a clean environment rooted in `home`.
fn usage(run_dir: &Path, home: &Path, json: bool) -> std::process::Output {
    let mut cmd = okstra();
    cmd.arg("usage").arg(run_dir);
    if json {
        cmd.arg("--json");
    }
    cmd.env("HOME", home)
        .env("CLAUDE_CONFIG_DIR", home.join("claude"))
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("OKSTRA_PRICES")
        .env_remove("CLAUDE_CODE_SESSION_ID")
        .output()
        .unwrap()
}

/// Write one dispatch record per assignment (what `okstra dispatch`
/// persists), a second codex attempt, and the fake logs at their paths.
fn dispatch_with_logs(run_dir: &Path) {
    let manifest = read_json(&run_dir.join("run-manifest.json"));
    let logs = [
        ("claude-worker", "claude-stream.jsonl"),
        ("codex-worker", "codex.jsonl"),
        ("antigravity-worker", "gemini.jsonl"),
        ("grok-worker", "grok-build.jsonl"),
        ("kimi-worker", "kimi.jsonl"),
        ("report-writer", "claude-stream-crashed.jsonl"),
    ];
    let mut dispatches = Vec::new();
    for assignment in manifest["assignments"].as_array().unwrap() {
        let name = assignment["dispatchName"].as_str().unwrap();
        let log = run_dir.join(format!("prompts/{name}.log"));
        let source = logs.iter().find(|(n, _)| *n == name).unwrap().1;
        fs::copy(fixture(source), &log).unwrap();
        let mut record = json!({
            "dispatchName": name,
            "dispatchKind": "initial",
            "attempt": 1,
            "workerId": assignment["workerId"],
            "role": assignment["role"],
            "provider": assignment["provider"],
            "model": assignment["modelExecutionValue"],
            "runner": assignment["runner"],
            "promptPath": assignment["promptPath"],
            "resultPath": assignment["resultPath"],
            "workerResultsPath": assignment["workerResultsPath"],
            "errorPath": assignment["errorPath"],
            "logPath": log,
            "usage": null,
        });
        dispatches.push(record.clone());
        if name == "codex-worker" {
            // The retry: the same worker, its own log, the same cumulative shape.
            let retry_log = run_dir.join("prompts/codex-worker.attempt-2.log");
            fs::copy(fixture("codex.jsonl"), &retry_log).unwrap();
            record["dispatchKind"] = json!("retry");
            record["attempt"] = json!(2);
            record["logPath"] = json!(retry_log);
            dispatches.push(record);
        }
    }
    let path = team_state_path(run_dir);
    let mut state = read_json(&path);
    state["dispatches"] = Value::Array(dispatches);
    fs::write(&path, serde_json::to_vec_pretty(&state).unwrap()).unwrap();
}

/// Claude Code's transcript folder for `project_root` under `home`.
fn slug_folder(home: &Path, project_root: &Path) -> PathBuf {
    let slug: String = project_root
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    home.join("claude/projects").join(slug)
}

/// The lead's transcript under `<home>/claude/projects/<slug>/`.
fn lead_transcript(home: &Path, project_root: &Path) {
    let folder = slug_folder(home, project_root);
    fs::create_dir_all(&folder).unwrap();
    fs::copy(
        fixture("claude-session.jsonl"),
        folder.join(format!("{LEAD_SESSION}.jsonl")),
    )
    .unwrap();
}

fn record_session(run_dir: &Path) {
    let out = okstra()
        .arg("event")
        .arg(run_dir)
        .args(["session", "--field", &format!("sessionId={LEAD_SESSION}")])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn usage_json_is_the_ledger_of_every_attempt_and_lands_in_the_team_state() {
    let (project, run_dir) = render(
        "claude,codex,antigravity,grok,kimi,report-writer",
        "external",
    );
    dispatch_with_logs(&run_dir);
    lead_transcript(&project.path("home"), project.root());
    record_session(&run_dir);

    let out = usage(&run_dir, &project.path("home"), true);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // Models with no list price in the table are named, never guessed at.
    assert!(
        stderr.contains("warning: no price for model `gpt-5.6-sol`"),
        "{stderr}"
    );
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();

    let worker = |id: &str| -> Value {
        summary["workers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["workerId"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no worker {id} in {summary:#}"))
    };
    // claude: the CLI's own cost and per-model result tokens.
    let claude = worker("claude");
    assert_eq!(claude["usage"]["costUsd"], json!(0.138_746));
    assert_eq!(claude["usage"]["costSource"], "cli");
    assert_eq!(claude["usage"]["inputTokens"], 827);
    assert_eq!(claude["usage"]["cacheWriteTokens"], 2_695);
    // codex: two attempts, cached input taken out of input, no price.
    let codex = worker("codex");
    assert_eq!(codex["attempts"], 2);
    assert_eq!(codex["usage"]["inputTokens"], 2 * 12_354);
    assert_eq!(codex["usage"]["cacheReadTokens"], 2 * 48_896);
    assert_eq!(codex["usage"]["reasoningTokens"], 2 * 1_024);
    assert_eq!(codex["usage"]["costUsd"], Value::Null);
    assert_eq!(codex["usage"]["costPartial"], true);
    // gemini thinking folded into output; grok's end line with its cost.
    assert_eq!(worker("antigravity")["usage"]["outputTokens"], 4_200);
    assert_eq!(worker("grok")["usage"]["costUsd"], json!(0.012_689));
    // kimi prints no usage and its session log is gone: unavailable with
    // the reason, no zeros.
    let kimi = worker("kimi");
    assert_eq!(kimi["usage"]["source"], "unavailable");
    assert_eq!(kimi["usage"]["inputTokens"], Value::Null);
    assert!(kimi["usage"]["reason"].as_str().unwrap().contains("kimi"));
    // The lead from its transcript, deduplicated and priced.
    assert_eq!(summary["lead"]["source"], "claude-jsonl");
    assert_eq!(summary["lead"]["costUsd"], json!(0.104_316));
    assert_eq!(summary["lead"]["inputTokens"], 13 + 40 + 900);
    // Totals include everyone; one part is unavailable, so partial.
    assert_eq!(summary["source"], "partial");
    assert_eq!(summary["totals"]["source"], "partial");
    let inputs: u64 = ["claude", "codex", "antigravity", "grok", "report-writer"]
        .iter()
        .map(|id| worker(id)["usage"]["inputTokens"].as_u64().unwrap())
        .sum::<u64>()
        + 953;
    assert_eq!(summary["totals"]["inputTokens"], inputs);
    assert_eq!(summary["byProvider"]["codex"], codex["usage"]);
    assert_eq!(summary["pricesAsOf"], "2026-11-30");

    // The team state holds the same numbers, attempt by attempt.
    let state = read_json(&team_state_path(&run_dir));
    assert_eq!(state["usageSummary"], summary);
    assert_eq!(state["leadUsage"], summary["lead"]);
    assert_eq!(state["workers"]["codex-worker"]["usage"], codex["usage"]);
    let attempts: Vec<&Value> = state["dispatches"].as_array().unwrap().iter().collect();
    assert_eq!(attempts.len(), 7);
    assert!(attempts.iter().all(|d| d["usage"].is_object()), "{state:#}");
    assert_eq!(attempts[2]["usage"]["inputTokens"], 12_354);
    // Nothing half-written: no temp file beside the team state.
    let leftovers: Vec<_> = fs::read_dir(run_dir.join("state"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty());

    // The same run as a compact table: a row per worker, the lead, the total …
    let table = usage(&run_dir, &project.path("home"), false);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(table.status.success());
    assert!(!text.contains("attempt codex-worker"), "{text}");
    assert!(
        text.contains("kimi: unavailable: kimi's stream output carries no token usage"),
        "{text}"
    );
    let total = text.lines().find(|l| l.starts_with("TOTAL")).unwrap();
    assert!(total.ends_with("≥ $0.36 + unpriced"), "{text}");
    // The table fits 100 columns (the model names give way); notes follow it.
    assert!(
        text.lines()
            .take_while(|l| !l.starts_with("TOTAL"))
            .all(|l| l.chars().count() <= 100),
        "{text}"
    );
    // … and every attempt and provider with `--attempts`.
    let all = okstra()
        .args(["usage", "--attempts"])
        .arg(&run_dir)
        .env("HOME", project.path("home"))
        .env("CLAUDE_CONFIG_DIR", project.path("home").join("claude"))
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("OKSTRA_PRICES")
        .env_remove("CLAUDE_CODE_SESSION_ID")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&all.stdout);
    assert!(text.contains("attempt codex-worker #2"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("total")), "{text}");
}

#[test]
fn kimi_usage_comes_from_the_session_log_its_stream_names() {
    let (project, run_dir) = render("claude,codex,kimi,report-writer", "external");
    dispatch_with_logs(&run_dir);
    // `kimi.jsonl` ends with the resume hint of session `k-7f3a`.
    let agents = project
        .path("home")
        .join(".kimi-code/sessions/wd-9c1/k-7f3a/agents/main");
    fs::create_dir_all(&agents).unwrap();
    fs::write(
        agents.join("wire.jsonl"),
        concat!(
            r#"{"type":"usage.record","model":"kimi-k2.6","usage":{"inputOther":1000,"output":200,"inputCacheRead":30000,"inputCacheCreation":0},"usageScope":"turn","time":1}"#,
            "\n",
            r#"{"type":"usage.record","model":"kimi-k2.6","usage":{"inputOther":500,"output":100,"inputCacheRead":0,"inputCacheCreation":2000},"usageScope":"session","time":2}"#,
            "\n",
        ),
    )
    .unwrap();
    let out = usage(&run_dir, &project.path("home"), true);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    let kimi = &summary["byProvider"]["kimi"];
    assert_eq!(kimi["source"], "kimi-session");
    assert_eq!(kimi["inputTokens"], 1_500);
    assert_eq!(kimi["cacheWriteTokens"], 2_000);
    // 1500 × 0.95 + 30000 × 0.16 + 2000 × 1.1875 + 300 × 4 = 9800 per million.
    assert_eq!(kimi["costUsd"], json!(0.0098));
}

#[test]
fn the_report_written_from_usage_json_validates() {
    let (project, run_dir) = render("claude,codex,report-writer", "external");
    dispatch_with_logs(&run_dir);
    let out = usage(&run_dir, &project.path("home"), true);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    // An `external` lead that reported nothing is a program: no model, no
    // tokens, and the summary is not partial for it. The crashed report
    // writer's is: its CLI never printed its total, so what its log held
    // is a lower bound.
    assert_eq!(summary["lead"]["source"], "not-applicable");
    assert_eq!(summary["source"], "partial");
    let sources: Vec<(&str, &str)> = summary["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["workerId"].as_str().unwrap(),
                w["usage"]["source"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        sources,
        [
            ("claude", "cli-stream"),
            ("codex", "cli-stream"),
            ("report-writer", "partial")
        ]
    );

    // The example's report folder alone (its run's records would reject
    // another run's usage): the summary fits the report schema.
    let report = project.path("home").join("report");
    copy_dir(&repo_root().join("examples/report/report"), &report);
    let data_path = report.join("data.json");
    let mut data = read_json(&data_path);
    data["usageSummary"] = summary;
    fs::write(&data_path, serde_json::to_vec_pretty(&data).unwrap()).unwrap();
    let check = okstra().arg("validate").arg(&report).output().unwrap();
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
}

#[test]
fn without_dispatch_records_logs_and_native_sessions_count() {
    // A Claude Code lead: the claude worker and the report writer are
    // native sessions, codex runs under its wrapper.
    let (project, run_dir) = render("claude,codex,report-writer", "claude-code");
    fs::copy(
        fixture("codex.jsonl"),
        run_dir.join("prompts/codex-worker.log"),
    )
    .unwrap();
    let root = project.root();
    lead_transcript(&project.path("home"), root);
    let session_dir = slug_folder(&project.path("home"), root)
        .join(LEAD_SESSION)
        .join("subagents");
    fs::create_dir_all(&session_dir).unwrap();
    fs::copy(
        fixture("claude-subagent.jsonl"),
        session_dir.join("agent-a7c3.jsonl"),
    )
    .unwrap();
    let out = okstra()
        .arg("event")
        .arg(&run_dir)
        .args([
            "session",
            "--field",
            "worker=claude-worker",
            "--field",
            "sessionId=a7c3",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    // The lead running `okstra usage` has its session id in the
    // environment; no event is needed for it.
    let out = okstra()
        .arg("usage")
        .arg(&run_dir)
        .arg("--json")
        .env("HOME", project.path("home"))
        .env("CLAUDE_CONFIG_DIR", project.path("home").join("claude"))
        .env("CLAUDE_CODE_SESSION_ID", LEAD_SESSION)
        .env_remove("OKSTRA_PRICES")
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<(&str, u64)> = summary["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["workerId"].as_str().unwrap(),
                w["attempts"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(ids, vec![("claude", 1), ("codex", 1), ("report-writer", 1)]);
    let claude = &summary["workers"][0]["usage"];
    assert_eq!(claude["source"], "claude-jsonl");
    assert_eq!(claude["outputTokens"], 3_000);
    assert_eq!(summary["workers"][1]["usage"]["inputTokens"], 12_354);
    let writer = &summary["workers"][2]["usage"];
    assert_eq!(writer["source"], "unavailable");
    assert!(
        writer["reason"]
            .as_str()
            .unwrap()
            .contains("worker=report-writer")
    );
    // The claimed sub-agent is the worker's, not the lead's.
    assert_eq!(summary["lead"]["source"], "claude-jsonl");
    assert_eq!(summary["lead"]["inputTokens"], 953);
    assert_eq!(summary["byProvider"]["claude"]["source"], "partial");
    let state = read_json(&team_state_path(&run_dir));
    assert_eq!(state["workers"]["claude-worker"]["usage"], *claude);
}

#[test]
fn bad_input_is_one_error_line_and_changes_nothing() {
    let scratch = tempfile::tempdir().unwrap();
    let out = usage(&scratch.path().join("missing"), scratch.path(), true);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    // Across runs: a `--since` or `--project-root` that cannot be used.
    for (args, expected) in [
        (
            ["--since", "last week"],
            "error: invalid value `last week` for `--since`: expected a duration like `7d` or `24h`, or a day like `2026-11-01`",
        ),
        (
            ["--project-root", "/nonexistent/okstra-project"],
            "error: invalid value `/nonexistent/okstra-project` for `--project-root`: expected an existing directory",
        ),
    ] {
        let out = okstra()
            .arg("usage")
            .args(args)
            .env("HOME", scratch.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.starts_with(expected), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(out.stdout.is_empty());
    }

    let (project, run_dir) = render("claude,codex,report-writer", "external");
    let before = fs::read(team_state_path(&run_dir)).unwrap();
    let prices = project.path("home").join("prices.json");
    fs::write(&prices, r#"{"models":{"x":{"input":"cheap","output":1}}}"#).unwrap();
    let out = okstra()
        .arg("usage")
        .arg(&run_dir)
        .env("OKSTRA_PRICES", &prices)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("prices.json"), "{stderr}");
    assert_eq!(fs::read(team_state_path(&run_dir)).unwrap(), before);

    // A user price file prices what the table lacks.
    dispatch_with_logs(&run_dir);
    fs::write(
        &prices,
        r#"{"asOf":"2027-01-05","models":{"gpt-5.6-sol":{"input":1,"cacheRead":0.1,"output":8}}}"#,
    )
    .unwrap();
    let out = okstra()
        .arg("usage")
        .arg(&run_dir)
        .arg("--json")
        .env("HOME", project.path("home"))
        .env("OKSTRA_PRICES", &prices)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["pricesAsOf"], "2027-01-05");
    // 2 × (12354 × $1 + 48896 × $0.10 + 1544 × $8 = $0.0295956 → 0.029596).
    assert_eq!(summary["byProvider"]["codex"]["costUsd"], json!(0.059_192));
}

/// Every camelCase name a rendered prompt mentions next to "usage" or
/// "tokens" is a field of the report schema's or team state's usage shapes.
#[test]
fn every_usage_field_the_prompts_name_exists_in_the_schemas() {
    let report: Value = read_json(&repo_root().join("schemas/final-report-v2.2.schema.json"));
    let state: Value = read_json(&repo_root().join("schemas/team-state.schema.json"));
    let mut fields = BTreeSet::new();
    // Any field of the report may share a line with usage (the lead copies
    // `workerCoverage` and `usageSummary` together); each must exist.
    collect_properties(&report, &mut fields);
    collect_properties(&state, &mut fields);
    fields.insert("usageSummary".to_owned());
    // Event field names the prompts give okstra (`okstra event … session`).
    fields.insert("sessionId".to_owned());

    for runtime in ["external", "claude-code", "codex"] {
        let (_project, run_dir) = render("claude,codex,report-writer", runtime);
        let mut files: Vec<PathBuf> = fs::read_dir(run_dir.join("instruction-set"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        files.push(run_dir.join("prompts/report-writer.md"));
        files.push(run_dir.join("handoff.md"));
        let mut named = BTreeSet::new();
        for file in &files {
            let text = fs::read_to_string(file).unwrap();
            for line in text.lines() {
                let lower = line.to_lowercase();
                if lower.contains("usage") || lower.contains("tokens") {
                    named.extend(camel_case_names(line));
                }
            }
        }
        // The report writer's prompt names the usage it copies.
        assert!(named.contains("usageSummary"), "{runtime}: {named:?}");
        let unknown: Vec<&String> = named
            .iter()
            .filter(|name| !fields.contains(*name))
            .collect();
        assert!(
            unknown.is_empty(),
            "{runtime}: prompt names {unknown:?}, not in the schemas"
        );
    }
}

fn collect_properties(schema: &Value, into: &mut BTreeSet<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Object(props)) = map.get("properties") {
                into.extend(props.keys().cloned());
            }
            map.values().for_each(|v| collect_properties(v, into));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_properties(v, into)),
        _ => {}
    }
}

/// Identifiers inside backticks or JSON strings that start lowercase and
/// hold an uppercase letter (`cacheReadTokens`, `usageSummary`).
fn camel_case_names(line: &str) -> Vec<String> {
    let mut names = Vec::new();
    let quoted = line
        .split('`')
        .skip(1)
        .step_by(2)
        .chain(line.split('"').skip(1).step_by(2));
    // Paths are not field names.
    for span in quoted.filter(|span| !span.contains('/')) {
        for word in span.split(|c: char| !c.is_ascii_alphanumeric()) {
            let camel = word.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                && word.chars().any(|c| c.is_ascii_uppercase());
            if camel {
                names.push(word.to_owned());
            }
        }
    }
    names
}

/// Three headless runs of the fake team in one project and one in another,
/// under one HOME: `okstra usage --since` finds them through the per-user
/// index of runs, per day and provider; `--project-root` narrows to one
/// project. Reading takes no lock: a run whose team-state lock cannot be
/// taken is still counted and shown.
#[test]
fn usage_across_runs_per_day_and_provider() {
    let world = crate::run::team_project();
    for (task, workers) in [
        ("one", "claude,codex,report-writer"),
        ("two", "claude,codex,report-writer"),
        ("three", "claude,report-writer"),
    ] {
        let output = world
            .task_command(
                &["run"],
                &[
                    "--task-type",
                    "project-analysis",
                    "--task-id",
                    task,
                    "--workers",
                    workers,
                    "--yes",
                    "--json",
                ],
            )
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let other = world.path("other");
    crate::support::copy_dir(
        &crate::support::repo_root().join("examples/tiny-service"),
        &other,
    );
    let output = world
        .task_command(
            &["run"],
            &[
                "--task-type",
                "project-analysis",
                "--task-id",
                "elsewhere",
                "--workers",
                "claude,report-writer",
                "--yes",
                "--json",
            ],
        )
        .arg("--project-root")
        .arg(&other)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let daily = |extra: &[&str]| -> Value {
        let output = world
            .okstra()
            .args(["usage", "--since", "7d", "--json"])
            .args(extra)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).unwrap()
    };
    let all = daily(&[]);
    assert_eq!(all["runs"], 4, "{all:#}");
    let days = all["days"].as_array().unwrap();
    let today = &days[0]["date"];
    assert!(days.iter().all(|d| d["date"] == *today), "{all:#}");
    let provider = |name: &str| days.iter().find(|d| d["provider"] == name).unwrap().clone();
    // Each run's analyser and writer (and reviewers) counted on the day:
    // claude in all four runs, codex in two.
    assert_eq!(provider("claude")["runCount"], 4);
    assert_eq!(provider("codex")["runCount"], 2);
    assert!(provider("codex")["inputTokens"].as_u64().unwrap() > 0);
    let root = world.root().to_str().unwrap().to_owned();
    let mine = daily(&["--project-root", &root]);
    assert_eq!(mine["runs"], 3, "{mine:#}");

    // The table: a row per day and provider, then the total.
    let table = world
        .okstra()
        .args(["usage", "--since", "7d"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.starts_with("DATE"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("TOTAL")), "{text}");
    assert!(text.contains("\n4 runs since "), "{text}");

    // No write lock is needed to read one run: its lock cannot even be
    // opened here, and the ledger is still shown (and not recorded).
    let run = world
        .okstra_dir()
        .join("tasks/demo/review/one/project-analysis-001");
    let lock = run.join("state/.team-state.lock");
    let _ = fs::remove_file(&lock);
    fs::create_dir(&lock).unwrap();
    let output = world
        .okstra()
        .args(["usage", "--json"])
        .arg(&run)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        !String::from_utf8_lossy(&output.stderr).contains("error"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        summary["totals"]["inputTokens"].as_u64().unwrap() > 0,
        "{summary:#}"
    );
}

/// The example run's records give exactly its report's `usageSummary`
/// (okstra wrote it from them), and `report/` alone has no run around it:
/// it prints the report's own `usageSummary`, with a warning. Each exits 0
/// and writes nothing.
#[test]
fn a_report_whose_usage_summary_is_no_object_is_refused_in_one_line() {
    let project = Project::new();
    let report = project.path("report");
    fs::create_dir_all(&report).unwrap();
    fs::write(
        report.join("data.json"),
        r#"{"schemaVersion": "2.2", "usageSummary": "free"}"#,
    )
    .unwrap();
    let (code, stdout, stderr) = project.outcome(&["usage", "--json", report.to_str().unwrap()]);
    crate::support::assert_refused(code, &stdout, &stderr, "has no `usageSummary` object");
}

#[test]
fn usage_of_a_report_without_records_prints_its_usage_summary() {
    let project = Project::new();
    crate::support::copy_dir(
        &crate::support::repo_root().join("examples/report"),
        &project.path("example"),
    );
    let example = project.path("example");
    let data = read_json(&example.join("report/data.json"));
    let before = fs::read(example.join("state/team-state-error-analysis-001.json")).unwrap();
    for target in [
        example.clone(),
        example.join("report"),
        example.join("report/data.json"),
    ] {
        let output = project
            .okstra()
            .args(["usage", "--json"])
            .arg(&target)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(printed, data["usageSummary"], "{target:?}");
    }
    let table = project
        .okstra()
        .arg("usage")
        .arg(example.join("report"))
        .output()
        .unwrap();
    assert!(
        table.status.success(),
        "{}",
        String::from_utf8_lossy(&table.stderr)
    );
    assert!(String::from_utf8_lossy(&table.stdout).contains("TOTAL"));
    assert_eq!(
        fs::read(example.join("state/team-state-error-analysis-001.json")).unwrap(),
        before
    );
    // A read creates nothing, not even the team state's lock file.
    assert!(
        !example.join("state/.team-state.lock").exists(),
        "a read created the team-state lock"
    );
}

/// The per-user index of runs is read bounded and never followed: a
/// symlink to `/dev/zero` or a FIFO in its place is one warning and no
/// run, exit 0; a line naming a folder outside a project's `.okstra/` is
/// not read.
#[test]
fn usage_across_runs_survives_a_hostile_index() {
    let project = Project::new();
    let index_dir = project.path("home").join(".local/state/okstra");
    fs::create_dir_all(&index_dir).unwrap();
    let index = index_dir.join("runs.jsonl");
    let across = || {
        let output = project
            .okstra()
            .args(["usage", "--since", "7d", "--json"])
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let document: Value = serde_json::from_slice(&output.stdout).unwrap();
        (
            document,
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    std::os::unix::fs::symlink("/dev/zero", &index).unwrap();
    let (document, stderr) = across();
    assert_eq!(document["runs"], 0);
    assert!(
        stderr.starts_with("warning: the index of runs cannot be read"),
        "{stderr}"
    );
    fs::remove_file(&index).unwrap();
    nix::unistd::mkfifo(&index, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let (document, stderr) = across();
    assert_eq!(document["runs"], 0);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    fs::remove_file(&index).unwrap();
    // A copy of the example run outside any `.okstra/`, named by a line.
    let outside = project.path("outside");
    crate::support::copy_dir(
        &crate::support::repo_root().join("examples/report"),
        &outside,
    );
    let line = serde_json::json!({
        "schemaVersion": 1, "runDir": outside, "projectRoot": project.root(),
        "taskKey": "a/b/c", "taskType": "error-analysis",
        "createdAt": "2026-12-01T10:00:00.000Z",
    });
    fs::write(&index, format!("{line}\n")).unwrap();
    let (document, stderr) = across();
    assert_eq!(document["runs"], 0, "{document:#}");
    assert_eq!(stderr, "");
}
