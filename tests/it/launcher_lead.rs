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
        if daemon_flag {
            assert_eq!(args[0], "--no-daemon");
        }
        let instruction = args.last().unwrap();
        assert!(instruction.contains(handoff), "{runtime}: {instruction}");
        assert!(
            instruction.len() < 400,
            "the prompt itself must not go in argv"
        );
        assert_eq!(args.len(), if daemon_flag { 2 } else { 1 });
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
