//! Launcher: handing over to the lead CLI — exec in the project root, a
//! missing lead CLI, and the external runtime.

use super::*;

/// A folder of fake lead CLIs that record how they were started.
fn fake_leads(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    fs::create_dir_all(&bin).unwrap();
    let script = repo_root().join("tests/fixtures/lead/record-lead.sh");
    for name in ["claude", "codex", "agy"] {
        symlink(&script, bin.join(name)).unwrap();
    }
    bin
}

#[test]
fn launch_replaces_okstra_with_the_lead_cli_in_the_project_root() {
    for (runtime, binary, daemon_flag) in [
        ("claude-code", "claude", false),
        ("codex", "codex", true),
        ("antigravity", "agy", false),
    ] {
        let project = launcher_project();
        let tools = tempfile::tempdir().unwrap();
        let bin = fake_leads(tools.path());
        let record = tools.path().join("record.txt");
        let out = project
            .okstra()
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("OKSTRA_TEST_RECORD", &record)
            .args([
                "--yes",
                "--no-preflight",
                "--task-type",
                "project-analysis",
                "--lead-runtime",
                runtime,
            ])
            .args([
                "--task-key",
                "demo/perf/checkout",
                "--task-brief",
                "brief.md",
            ])
            .assert()
            .success();
        let handoff = String::from_utf8(out.get_output().stdout.clone()).unwrap();
        let handoff = handoff.trim();
        let recorded = fs::read_to_string(&record).unwrap();
        let lines: Vec<&str> = recorded.lines().collect();
        assert_eq!(lines[0], format!("name={binary}"), "{runtime}");
        assert_eq!(
            lines[1],
            format!("cwd={}", project.root().canonicalize().unwrap().display())
        );
        let args: Vec<&str> = lines[2..]
            .iter()
            .map(|l| l.strip_prefix("arg=").unwrap())
            .collect();
        // okstra's sub-agent-stop hook is in force for the session, on its
        // command line: Claude Code's `--settings`, Codex's `-c`; agy takes
        // none this way (its handoff names the fallback).
        let hook = format!(
            "'{}' hook subagent-stop >/dev/null 2>&1 || true",
            crate::support::okstra_path().display()
        );
        let before: Vec<String> = match binary {
            "claude" => vec![
                "--settings".to_owned(),
                serde_json::json!({"hooks": {"SubagentStop": [
                    {"hooks": [{"type": "command", "command": hook, "timeout": 60}]}
                ]}})
                .to_string(),
            ],
            "codex" => vec![
                "--no-daemon".to_owned(),
                "-c".to_owned(),
                format!(
                    "hooks.SubagentStop=[{{hooks=[{{type=\"command\",command=\"{hook}\",timeout=60}}]}}]"
                ),
            ],
            _ => Vec::new(),
        };
        assert_eq!(args[..args.len() - 1], before, "{runtime}");
        assert_eq!(daemon_flag, binary == "codex");
        let instruction = args.last().unwrap();
        assert!(instruction.contains(handoff), "{runtime}: {instruction}");
        assert!(
            instruction.len() < 400,
            "the prompt itself must not go in argv"
        );
        // The plan and the estimate came before the host started.
        let stderr = String::from_utf8_lossy(&out.get_output().stderr);
        assert!(stderr.contains("okstra: estimate:"), "{stderr}");
        // The user's own settings files are not touched.
        assert!(!project.path("home/.claude/settings.json").exists());
        assert!(!project.path("home/.codex/config.toml").exists());
    }
}

/// `okstra status` of `project`, all of it (stdout and stderr).
fn status_of(project: &Project) -> String {
    let out = project.okstra().args(["status", "--all"]).output().unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_missing_lead_cli_is_a_clear_error_and_nothing_is_rendered() {
    let project = launcher_project();
    let empty = tempfile::tempdir().unwrap();
    let out = project
        .okstra()
        .env("PATH", empty.path())
        .args(["--yes", "--task-type", "project-analysis"])
        .args([
            "--task-key",
            "demo/perf/checkout",
            "--task-brief",
            "brief.md",
        ])
        .assert()
        .code(2);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    for says in [
        "`claude`",
        "nothing was rendered",
        "okstra ask",
        "--render-only",
    ] {
        assert!(stderr.contains(says), "{says}: {stderr}");
    }
    assert!(out.get_output().stdout.is_empty());
    // No run is left for `okstra status` to take for one in progress.
    assert!(!project.okstra_dir().join("tasks").exists());
    assert!(!status_of(&project).contains("running"));
}

/// A lead CLI on PATH that cannot be started (its interpreter is missing):
/// the run is rendered, and then records that its lead never started, so
/// status calls it stopped, never running.
#[test]
fn a_lead_that_fails_to_start_leaves_a_stopped_run() {
    let project = launcher_project();
    let bin = project.path("lead-bin");
    fs::create_dir_all(&bin).unwrap();
    let claude = bin.join("claude");
    fs::write(&claude, "#!/nonexistent/interpreter\n").unwrap();
    fs::set_permissions(&claude, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = project
        .okstra()
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .args(["--yes", "--no-preflight", "--task-type", "project-analysis"])
        .args([
            "--task-key",
            "demo/perf/checkout",
            "--task-brief",
            "brief.md",
        ])
        .assert()
        .code(2);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("error: cannot start `claude`"), "{stderr}");
    let status = status_of(&project);
    assert!(
        status.contains("run: stopped: failed: cannot start `claude`"),
        "{status}"
    );
    assert!(!status.contains("running"), "{status}");
}

/// `okstra` with no argument says which path it takes, and the README's.
#[test]
fn bare_okstra_says_which_path_it_takes() {
    let project = launcher_project();
    let out = okstra()
        .current_dir(project.root())
        .write_stdin("")
        .assert()
        .code(2);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    let first = stderr.lines().next().unwrap();
    assert!(
        first.starts_with(
            "okstra: no command: the launcher prepares a run and starts a lead session"
        ) && first.contains("`okstra ask \"<question>\"`"),
        "{stderr}"
    );
    // No terminal to ask on: the missing argument, nothing rendered.
    assert!(
        stderr.contains("error: missing required argument"),
        "{stderr}"
    );
    assert!(!project.okstra_dir().join("tasks").exists());
}

#[test]
fn external_runtime_renders_and_explains_how_to_proceed() {
    let project = launcher_project();
    let out = project
        .okstra()
        .env("PATH", "/nonexistent")
        .args([
            "--yes",
            "--task-type",
            "project-analysis",
            "--lead-runtime",
            "external",
        ])
        .args([
            "--task-key",
            "demo/perf/checkout",
            "--task-brief",
            "brief.md",
        ])
        .assert()
        .success();
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("handoff"), "{stderr}");
    let manifest = manifest_of(&project, "project-analysis", 1);
    // With no host provider every worker runs through its wrapper.
    assert!(roster(&manifest).iter().all(|r| r.4 == "cli-wrapper"));
    assert_eq!(manifest["lead"]["provider"], Value::Null);
}

/// Bare `okstra` runs the preflight a headless run gets before the host
/// starts: a wrapper worker with no credentials okstra can see (codex, no
/// key and no login) is refused, nothing is rendered, and no lead session
/// starts.
#[test]
fn a_launch_refuses_a_roster_the_preflight_refuses_before_the_host_starts() {
    let project = launcher_project();
    let tools = tempfile::tempdir().unwrap();
    let bin = fake_leads(tools.path());
    let record = tools.path().join("record.txt");
    let out = project
        .okstra()
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("OKSTRA_TEST_RECORD", &record)
        .args(["--yes", "--task-type", "project-analysis"])
        .args([
            "--task-key",
            "demo/perf/checkout",
            "--task-brief",
            "brief.md",
        ])
        .assert()
        .code(2);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("error: codex: no credentials"), "{stderr}");
    assert!(stderr.contains("--no-preflight"), "{stderr}");
    // (The preflight asked codex its `--version`; claude never started.)
    let recorded = fs::read_to_string(&record).unwrap_or_default();
    assert!(
        !recorded.contains("name=claude"),
        "the lead started: {recorded}"
    );
    assert!(!project.okstra_dir().join("tasks").exists());
}
