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

#[test]
fn a_missing_lead_cli_is_a_clear_error_and_the_bundle_is_kept() {
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
    assert!(
        stderr.contains("`claude`") && stderr.contains("--render-only"),
        "{stderr}"
    );
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        Path::new(stdout.trim()).is_file(),
        "the kept handoff path is printed"
    );
    assert!(
        project
            .run_dir("project-analysis", 1)
            .join("run-manifest.json")
            .is_file()
    );
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
