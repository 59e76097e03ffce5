//! The preflight of `okstra run`: before anything is rendered or spent,
//! every rostered provider's CLI must be on `PATH`, be the program okstra
//! drives, and have credentials; one line per provider says how to fix it.
//! The fake team answers `--version` as the real CLIs do and logs each such
//! probe in `fake/probes.log`; a model call would go to `fake/calls.log`.

use std::fs;

use pretty_assertions::assert_eq;

use crate::support::Project;

use super::{team_project, team_without_credentials};

const DEFAULT: &[&str] = &[
    "--task-type",
    "project-analysis",
    "--workers",
    "claude,codex,report-writer",
    "--yes",
    "--json",
];

/// `okstra run` with `flags` and `env`: exit code, stdout, stderr.
fn run(world: &Project, flags: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = world.task_command(&["run"], flags);
    for (name, value) in env {
        cmd.env(name, value);
    }
    let output = cmd.output().unwrap();
    (
        output.status.code().unwrap(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn log(world: &Project, name: &str) -> Vec<String> {
    fs::read_to_string(world.path(&format!("fake/{name}")))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// When leaving a provider out would leave one reviewer, a ready CLI off
/// the roster takes its place in the suggested roster, so two reviewers
/// still check each other.
#[test]
fn the_suggested_roster_keeps_two_reviewers_when_a_ready_cli_can_take_the_place() {
    let world = team_without_credentials();
    let (code, _, stderr) = run(
        &world,
        DEFAULT,
        &[("OPENAI_API_KEY", "x"), ("KIMI_MODEL_API_KEY", "x")],
    );
    assert_eq!(code, 2, "{stderr}");
    let first = stderr.lines().next().unwrap();
    assert!(
        first.ends_with(
            "or leave it out: `--workers kimi,codex,report-writer --report-writer-provider codex`"
        ),
        "{stderr}"
    );
}

#[test]
fn a_provider_without_credentials_is_refused_before_anything_is_spent() {
    let world = team_without_credentials();
    let (code, stdout, stderr) = run(&world, DEFAULT, &[("OPENAI_API_KEY", "x")]);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(stdout, "");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert_eq!(
        lines[0],
        "error: claude: no credentials found (a login kept in a system keychain is not visible; `--no-preflight` runs anyway); fix: run `claude` once and `/login`, or set `ANTHROPIC_API_KEY` (or `CLAUDE_CODE_OAUTH_TOKEN`); or leave it out: `--workers codex,report-writer --report-writer-provider codex` (one reviewer would be left: nothing would be cross-verified; no other provider's CLI is ready to take its place)"
    );
    assert!(
        lines[1].starts_with(
            "error: preflight: 1 of 2 providers cannot run headless, so nothing was started"
        ),
        "{stderr}"
    );
    // Nothing rendered, no model called: only the CLIs' `--version`.
    assert!(!world.okstra_dir().join("tasks").exists());
    assert!(log(&world, "calls.log").is_empty());
    let mut probes = log(&world, "probes.log");
    probes.sort();
    assert_eq!(probes, ["claude --version", "codex --version"]);

    // The same, asked again: the doctor's cache knows both CLIs by now.
    let (code, _, _) = run(&world, DEFAULT, &[("OPENAI_API_KEY", "x")]);
    assert_eq!(code, 2);
    assert_eq!(
        log(&world, "probes.log").len(),
        2,
        "a cached CLI was asked again"
    );

    // `--no-preflight` starts anyway (the fakes need no key).
    let (code, _, stderr) = run(
        &world,
        &[DEFAULT, &["--no-preflight"]].concat(),
        &[("OPENAI_API_KEY", "x")],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("account: none found"), "{stderr}");
}

#[test]
fn a_missing_cli_and_a_look_alike_get_one_line_each() {
    let world = team_without_credentials();
    fs::remove_file(world.path("bin/agy")).unwrap();
    fs::remove_file(world.path("bin/kimi")).unwrap();
    world.copy_cli("kimi", "doctor/kimi-legacy.sh");
    let (code, _, stderr) = run(
        &world,
        &[
            "--task-type",
            "project-analysis",
            "--workers",
            "claude,antigravity,kimi,report-writer",
            "--yes",
        ],
        &crate::support::FAKE_CREDENTIALS,
    );
    assert_eq!(code, 2, "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 3, "{stderr}");
    assert!(
        lines[0].starts_with(
            "error: antigravity: `agy` is not on PATH; fix: install Antigravity's `agy`"
        ) && lines[0].ends_with("or leave it out: `--workers claude,kimi,report-writer`"),
        "{stderr}"
    );
    assert!(
        lines[1].starts_with("error: kimi: this is the archived PyPI `kimi-cli`")
            && lines[1].contains("fix: uninstall the archived PyPI `kimi-cli`"),
        "{stderr}"
    );
    assert!(
        lines[2].contains("2 of 3 providers cannot run headless"),
        "{stderr}"
    );
    assert!(
        !world.path("fake/bare-kimi").exists(),
        "kimi was started bare"
    );
}

#[test]
fn the_fake_team_passes_and_the_plan_names_every_account_and_the_estimate() {
    let world = team_project();
    let (code, _, stderr) = run(&world, DEFAULT, &[]);
    assert_eq!(code, 0, "{stderr}");
    for line in [
        "okstra: plan: project-analysis run `project-analysis-001` of `demo/review/reservations`, 3 workers",
        "claude opus via cli-wrapper (claude-code 2.1.197); account: key ANTHROPIC_API_KEY",
        "codex gpt-5.6-sol via cli-wrapper (codex-cli 0.171.0); account: key OPENAI_API_KEY",
        "okstra: estimate: at least ",
        "no earlier run of this project to go by",
    ] {
        assert!(stderr.contains(line), "{line} not in:\n{stderr}");
    }
    // The second run of the project estimates from the first one's ledger,
    // and its report shows the estimate beside what was spent.
    let (code, stdout, stderr) = run(&world, &[DEFAULT, &["--task-id", "again"]].concat(), &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("(from 1 earlier run of this project"),
        "{stderr}"
    );
    let outcome: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let run_dir = std::path::PathBuf::from(outcome["runDir"].as_str().unwrap());
    let report = crate::support::read_json(&run_dir.join("report/data.json"));
    assert_eq!(
        report["usageSummary"]["estimate"]["basis"], "earlier-runs",
        "{report}"
    );
    let markdown = fs::read_to_string(run_dir.join("report/final-report.md")).unwrap();
    assert!(
        markdown.contains("Before the run: estimated ") && markdown.contains("; took "),
        "{markdown}"
    );
}

#[test]
fn a_resumed_run_is_checked_again_and_its_roster_is_fixed() {
    let world = team_project();
    let run_dir = world.render(&[
        "--headless",
        "--task-type",
        "project-analysis",
        "--workers",
        "claude,codex,report-writer",
    ]);
    let mut cmd = world.command(crate::support::okstra_path());
    cmd.arg("run").arg(&run_dir).env_remove("ANTHROPIC_API_KEY");
    let output = crate::support::bounded(cmd).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr
            .lines()
            .next()
            .unwrap()
            .ends_with("this run's roster is fixed: render a new run to leave it out"),
        "{stderr}"
    );
    assert!(log(&world, "calls.log").is_empty());
}
