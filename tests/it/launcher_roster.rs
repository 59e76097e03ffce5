//! Launcher: the roster — critics and model overrides, environment defaults
//! under flags, and implementation rosters with one executor.

use super::*;

#[test]
fn wide_roster_with_critic_and_worker_model_override() {
    let project = launcher_project();
    render(
        &project,
        &[
            "--workers",
            "claude,codex,grok,kimi,report-writer",
            "--critic",
            "grok",
            "--worker-model",
            "kimi=kimi-k3",
        ],
    )
    .success();
    let manifest = manifest(&project.run_dir("project-analysis", 1));
    assert_eq!(
        roster(&manifest),
        vec![
            row(
                "claude-worker",
                "analyser",
                "claude",
                "opus",
                "native-session"
            ),
            row(
                "codex-worker",
                "analyser",
                "codex",
                "gpt-5.6-sol",
                "cli-wrapper"
            ),
            row(
                "grok-worker",
                "analyser",
                "grok",
                "grok-build-0.1",
                "cli-wrapper"
            ),
            row("kimi-worker", "analyser", "kimi", "kimi-k3", "cli-wrapper"),
            row(
                "grok-worker-critic",
                "critic",
                "grok",
                "grok-4.5",
                "cli-wrapper"
            ),
            row(
                "report-writer",
                "report-writer",
                "claude",
                "sonnet",
                "native-session"
            ),
        ]
    );
    assert_eq!(manifest["critic"]["modelExecutionValue"], "grok-4.5");
    let wrappers: Vec<_> = manifest["assignments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["wrapper"].as_str().unwrap_or("-").to_owned())
        .collect();
    assert_eq!(
        wrappers,
        [
            "-",
            "okstra-codex-exec",
            "okstra-grok-exec",
            "okstra-kimi-exec",
            "okstra-grok-exec",
            "-"
        ]
    );
}

#[test]
fn environment_defaults_and_flags_over_environment() {
    let project = launcher_project();
    let mut cmd = project.okstra();
    cmd.env("OKSTRA_DEFAULT_CLAUDE_MODEL", "sonnet")
        .env("OKSTRA_DEFAULT_CODEX_MODEL", "gpt-env")
        .env("OKSTRA_DEFAULT_REPORT_WRITER_MODEL", "haiku")
        .env("OKSTRA_DEFAULT_LEAD_MODEL", "opus-lead-env")
        .args(["--render-only", "--yes", "--task-type", "feature-analysis"])
        .args([
            "--task-key",
            "demo/perf/checkout",
            "--task-brief",
            "brief.md",
        ])
        .args(["--codex-model", "gpt-flag"])
        .assert()
        .success();
    let manifest = manifest(&project.run_dir("feature-analysis", 1));
    assert_eq!(
        roster(&manifest),
        vec![
            row(
                "claude-worker",
                "analyser",
                "claude",
                "sonnet",
                "native-session"
            ),
            row(
                "codex-worker",
                "analyser",
                "codex",
                "gpt-flag",
                "cli-wrapper"
            ),
            row(
                "report-writer",
                "report-writer",
                "claude",
                "haiku",
                "native-session"
            ),
        ]
    );
    assert_eq!(manifest["lead"]["model"], "opus-lead-env");
    // A flag beats the environment for the lead and the report writer too.
    project
        .okstra()
        .env("OKSTRA_DEFAULT_REPORT_WRITER_MODEL", "haiku")
        .env("OKSTRA_DEFAULT_LEAD_MODEL", "opus-lead-env")
        .args(["--render-only", "--yes", "--task-type", "feature-analysis"])
        .args([
            "--task-key",
            "demo/perf/checkout",
            "--task-brief",
            "brief.md",
        ])
        .args(["--lead-model", "fable", "--report-writer-model", "sonnet"])
        .assert()
        .success();
    let manifest = manifest_of(&project, "feature-analysis", 2);
    assert_eq!(manifest["lead"]["model"], "fable");
    assert_eq!(roster(&manifest)[2].3, "sonnet");
}

#[test]
fn implementation_rosters_have_one_executor_and_read_only_verifiers() {
    let project = launcher_project();
    crate::support::git_init(project.root());
    render(
        &project,
        &[
            "--task-type",
            "implementation",
            "--executor",
            "codex",
            "--workers",
            "claude,codex,antigravity",
        ],
    )
    .success();
    let manifest = manifest_of(&project, "implementation", 1);
    assert_eq!(
        roster(&manifest),
        vec![
            row(
                "codex-executor",
                "executor",
                "codex",
                "gpt-5.6-sol",
                "cli-wrapper"
            ),
            row(
                "claude-verifier",
                "verifier",
                "claude",
                "opus",
                "native-session"
            ),
            row(
                "antigravity-verifier",
                "verifier",
                "antigravity",
                "gemini-3.1-pro",
                "cli-wrapper"
            ),
        ]
    );
    let writers: Vec<bool> = manifest["assignments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["writesProject"].as_bool().unwrap())
        .collect();
    assert_eq!(writers, [true, false, false]);
    assert_eq!(manifest["convergence"]["adversarial"], false);
    assert!(
        project
            .run_dir("implementation", 1)
            .join("instruction-set/coding-conventions-preflight.md")
            .is_file()
    );

    // The executor comes from OKSTRA_DEFAULT_EXECUTOR when the flag is absent,
    // and is added even when it is not on --workers.
    project
        .okstra()
        .env("OKSTRA_DEFAULT_EXECUTOR", "antigravity")
        .args(["--render-only", "--yes", "--task-type", "implementation"])
        .args([
            "--task-key",
            "demo/perf/checkout",
            "--task-brief",
            "brief.md",
        ])
        .assert()
        .success();
    let manifest = manifest_of(&project, "implementation", 2);
    let names: Vec<String> = roster(&manifest).into_iter().map(|r| r.0).collect();
    assert_eq!(
        names,
        [
            "antigravity-executor",
            "claude-verifier",
            "codex-verifier",
            "report-writer"
        ]
    );
}
