//! Launcher: the rendered bundle — help, what `--render-only` writes and
//! prints, refusals that write nothing, sequence numbers, byte-identical
//! renders, the bundled example and asking on a terminal.

use super::*;

#[test]
fn version_and_help_explain_flags_and_defaults() {
    okstra()
        .arg("--version")
        .assert()
        .success()
        .stdout(format!("okstra {}\n", env!("CARGO_PKG_VERSION")));
    let help = okstra().arg("--help").assert().success();
    let text = String::from_utf8(help.get_output().stdout.clone()).unwrap();
    for needle in [
        "--render-only",
        "--worker-model",
        "--report-writer-provider",
        "--lead-runtime",
        "--resume-clarification",
        "[default: claude,codex,report-writer]",
        "OKSTRA_DEFAULT_EXECUTOR",
        "gpt-5.6-sol",
        "Examples:",
    ] {
        assert!(text.contains(needle), "help lacks {needle:?}:\n{text}");
    }
    // The examples keep their lines: each continuation ends its own line.
    assert!(
        text.contains(
            "  okstra --render-only --yes --task-type project-analysis \\\n    --project-id demo"
        ),
        "examples are garbled:\n{text}"
    );
    for command in ["dispatch", "install", "doctor", "converge"] {
        let help = okstra().args([command, "--help"]).assert().success();
        let text = String::from_utf8(help.get_output().stdout.clone()).unwrap();
        assert!(
            text.contains(&format!("Examples:\n  okstra {command}")),
            "`okstra {command} --help` examples are garbled:\n{text}"
        );
    }
}

#[test]
fn render_only_writes_a_complete_validated_bundle() {
    let project = launcher_project();
    let out = render(&project, &[]).success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let run_dir = project.run_dir("project-analysis", 1);
    let handoff = run_dir.join("handoff.md");
    assert_eq!(
        stdout.trim_end(),
        handoff.canonicalize().unwrap().to_str().unwrap()
    );
    for file in [
        "handoff.md",
        "task-manifest.json",
        "run-manifest.json",
        "state/team-state-project-analysis-001.json",
        "state/lead-events.jsonl",
        "instruction-set/final-report-schema.json",
        "instruction-set/lead-contract.md",
        "instruction-set/profile.md",
        "instruction-set/adapter.md",
        "inputs/task-brief.md",
        "prompts/claude-worker.md",
        "prompts/codex-worker.md",
        "prompts/report-writer.md",
    ] {
        assert!(run_dir.join(file).is_file(), "missing {file}");
    }
    let manifest = manifest(&run_dir);
    assert_eq!(manifest["schemaVersion"], 1);
    assert_eq!(manifest["taskKey"], "demo/perf/checkout");
    assert_eq!(manifest["taskType"], "project-analysis");
    assert_eq!(manifest["leadRuntime"], "claude-code");
    assert_eq!(manifest["convergence"]["enabled"], true);
    assert_eq!(manifest["convergence"]["adversarial"], true);
    assert_eq!(manifest["convergence"]["effectiveMaxRounds"], 2);
    assert_eq!(
        manifest["leadEventsPath"].as_str().unwrap(),
        run_dir
            .canonicalize()
            .unwrap()
            .join("state/lead-events.jsonl")
            .to_str()
            .unwrap()
    );
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
                "report-writer",
                "report-writer",
                "claude",
                "sonnet",
                "native-session"
            ),
        ]
    );
    // Every assignment's prompt exists and its recorded hash matches its bytes.
    for assignment in manifest["assignments"].as_array().unwrap() {
        let prompt = fs::read(assignment["promptPath"].as_str().unwrap()).unwrap();
        let text = String::from_utf8(prompt.clone()).unwrap();
        assert!(text.contains(&format!(
            "**Model:** `{}`",
            assignment["modelExecutionValue"].as_str().unwrap()
        )));
        // The run folder once, every path in it relative to it.
        let run_dir = manifest["runDir"].as_str().unwrap();
        let result = assignment["resultPath"].as_str().unwrap();
        let relative = result
            .strip_prefix(run_dir)
            .unwrap()
            .trim_start_matches('/');
        assert!(
            text.contains(&format!("**Result Path:** `{relative}`")),
            "{text}"
        );
        assert!(!text.contains(result), "{text}");
        assert_eq!(assignment["promptSha256"].as_str().unwrap().len(), 64);
        for field in [
            "resultPath",
            "workerResultsPath",
            "errorPath",
            "heartbeatPath",
        ] {
            assert!(
                assignment[field].as_str().unwrap().starts_with('/'),
                "{field}"
            );
        }
    }
    let hashes = manifest["promptSha256"].as_object().unwrap();
    assert!(hashes.contains_key("handoff.md"));
    assert!(hashes.contains_key("prompts/codex-worker.md"));
    // Nothing is left in staging.
    let leftovers: Vec<_> = fs::read_dir(project.okstra_dir())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(".staging"))
        .collect();
    assert!(leftovers.is_empty());
}

#[test]
fn json_output_names_the_four_paths() {
    let project = launcher_project();
    let out = render(&project, &["--json"]).success();
    let value: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let run_dir = project
        .run_dir("project-analysis", 1)
        .canonicalize()
        .unwrap();
    assert_eq!(value["runDir"].as_str().unwrap(), run_dir.to_str().unwrap());
    for (key, file) in [
        ("handoffPrompt", "handoff.md"),
        ("runManifest", "run-manifest.json"),
        ("taskManifest", "task-manifest.json"),
    ] {
        assert_eq!(
            value[key].as_str().unwrap(),
            run_dir.join(file).to_str().unwrap()
        );
    }
}

#[test]
fn every_refusal_exits_2_names_the_value_and_writes_nothing() {
    let cases: &[(&[&str], &str)] = &[
        (&["--task-type", "audit"], "`audit`"),
        (&["--workers", "claude,gemini"], "`gemini`"),
        (
            &["--workers", "claude,codex,claude"],
            "`claude` is listed twice",
        ),
        (
            &["--workers", "claude,report-writer,report-writer"],
            "`report-writer` is listed twice",
        ),
        (&["--report-writer-provider", "grok"], "`grok`"),
        (&["--executor", "kimi"], "`kimi`"),
        (&["--critic", "maybe"], "`maybe`"),
        (&["--critic", "grok"], "`--critic grok`"),
        (&["--lead-runtime", "vim"], "`vim`"),
        (
            &["--lead-runtime", "codex", "--lead-provider", "claude"],
            "`--lead-provider claude`",
        ),
        (
            &["--lead-runtime", "external", "--lead-provider", "codex"],
            "`--lead-provider codex`",
        ),
        (&["--worker-model", "grok"], "`grok`"),
        (&["--worker-model", "grok=a,gemini=b"], "`gemini`"),
        (&["--worker-model", "kimi="], "`` for `--worker-model`"),
        (&["--fix-cycle", "maybe"], "`maybe`"),
        (
            &[
                "--resume-clarification",
                "--clarification-response",
                "brief.md",
            ],
            "--resume-clarification",
        ),
        (
            &["--resume-clarification", "--approved-plan", "brief.md"],
            "--resume-clarification",
        ),
        (&["--task-brief", "missing.md"], "missing.md"),
        (&["--task-brief", "empty.md"], "empty.md"),
        (&["--task-brief", "."], "for `--task-brief`"),
        (&["--project-id", "../x"], "`../x`"),
        (&["--task-group", "/abs"], "`/abs`"),
        (&["--task-id", ""], "`` for `--task-id`"),
        (&["--task-id", &"a".repeat(129)], "for `--task-id`"),
        (&["--task-id", "Upper"], "`Upper`"),
        (&["--claude-model", "gpt-5"], "`gpt-5`"),
        (&["--codex-model", "has space"], "`has space`"),
        (&["--work-category", "fun"], "`fun`"),
        (&["--related-tasks", "ok,../bad"], "`../bad`"),
        (&["--project-root", "nowhere"], "nowhere"),
    ];
    for (args, expected) in cases {
        let project = launcher_project();
        fs::write(project.root().join("empty.md"), "  \n").unwrap();
        let out = render(&project, args).code(2);
        let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        assert_eq!(
            stderr.lines().count(),
            1,
            "{args:?}: one line expected, got {stderr}"
        );
        assert!(
            stderr.contains(expected),
            "{args:?}: {stderr} should name {expected}"
        );
        assert!(!project.okstra_dir().exists(), "{args:?} wrote `.okstra/`");
        assert!(
            out.get_output().stdout.is_empty(),
            "{args:?} printed to stdout"
        );
    }
}

#[test]
fn missing_argument_without_terminal_is_a_usage_error() {
    let project = launcher_project();
    let out = project
        .okstra()
        .args([
            "--render-only",
            "--task-type",
            "project-analysis",
            "--project-id",
            "demo",
        ])
        .args(["--task-group", "perf", "--task-brief", "brief.md"])
        .write_stdin("")
        .assert()
        .code(2);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.contains("`--task-id`") && stderr.contains("no terminal"),
        "{stderr}"
    );
    let out = project
        .okstra()
        .args([
            "--render-only",
            "--yes",
            "--project-id",
            "demo",
            "--task-group",
            "perf",
        ])
        .args(["--task-id", "x", "--task-brief", "brief.md"])
        .assert()
        .code(2);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.contains("`--task-type`") && stderr.contains("--yes"),
        "{stderr}"
    );
    assert!(!project.okstra_dir().exists());
}

#[test]
fn concurrent_renders_never_share_a_sequence_number() {
    let project = launcher_project();
    let children: Vec<_> = (0..8)
        .map(|_| {
            project
                .command(okstra_path())
                .args(["--render-only", "--yes", "--task-type", "error-analysis"])
                .args([
                    "--task-key",
                    "demo/perf/checkout",
                    "--task-brief",
                    "brief.md",
                ])
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut handoffs: Vec<String> = children
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success());
            String::from_utf8(out.stdout).unwrap().trim().to_owned()
        })
        .collect();
    handoffs.sort();
    handoffs.dedup();
    assert_eq!(handoffs.len(), 8);
    for sequence in 1..=8 {
        assert!(
            project
                .run_dir("error-analysis", sequence)
                .join("run-manifest.json")
                .is_file()
        );
    }
}

#[test]
fn sequence_numbers_are_never_reused_after_a_run_is_deleted() {
    let project = launcher_project();
    render(&project, &[]).success();
    render(&project, &[]).success();
    fs::remove_dir_all(project.run_dir("project-analysis", 2)).unwrap();
    render(&project, &[]).success();
    assert!(project.run_dir("project-analysis", 3).is_dir());
    assert!(!project.run_dir("project-analysis", 2).exists());
    // Another task type counts on its own.
    render(&project, &["--task-type", "error-analysis"]).success();
    assert!(project.run_dir("error-analysis", 1).is_dir());
}

#[test]
fn same_inputs_render_the_same_bytes() {
    let first = launcher_project();
    let second = launcher_project();
    // Same absolute project path is needed for byte equality: render twice in
    // one project and compare run 1 with run 2 after masking the run number.
    render(&first, &["--critic", "codex"]).success();
    render(&first, &["--critic", "codex"]).success();
    drop(second);
    let one = first.run_dir("project-analysis", 1);
    let two = first.run_dir("project-analysis", 2);
    let mask = |text: String| {
        let masked = text
            .replace("project-analysis-002", "project-analysis-00N")
            .replace("project-analysis-001", "project-analysis-00N");
        masked
            .lines()
            .filter(|line| !line.contains("\"createdAt\""))
            .map(|line| {
                if line.contains("\"sequence\"") {
                    "SEQ"
                } else {
                    line
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut compared = 0;
    for entry in walk(&one) {
        let relative = entry.strip_prefix(&one).unwrap();
        let relative_two = PathBuf::from(
            relative
                .to_string_lossy()
                .replace("project-analysis-001", "project-analysis-002"),
        );
        let a = mask(fs::read_to_string(&entry).unwrap());
        let b = mask(fs::read_to_string(two.join(&relative_two)).unwrap());
        if relative.starts_with("prompts") || relative.ends_with("handoff.md") {
            // Prompts differ only by the run folder name inside paths.
            assert_eq!(a, b, "{} differs", relative.display());
        } else if !relative.to_string_lossy().ends_with(".json") {
            assert_eq!(a, b, "{} differs", relative.display());
        }
        compared += 1;
    }
    assert!(compared >= 12);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

#[test]
fn a_failed_render_leaves_nothing_behind() {
    let project = launcher_project();
    // `.okstra` is a file, so the bundle cannot be created.
    fs::write(project.okstra_dir(), "not a folder").unwrap();
    let out = render(&project, &[]).code(2);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains(".okstra"), "{stderr}");
    assert_eq!(
        fs::read_to_string(project.okstra_dir()).unwrap(),
        "not a folder"
    );
}

#[test]
fn the_bundled_example_renders() {
    let project = Project::new();
    let example = project.root().join("tiny-service");
    crate::support::copy_dir(&repo_root().join("examples/tiny-service"), &example);
    project
        .okstra()
        .args(["--render-only", "--yes", "--task-type", "project-analysis"])
        .args([
            "--project-id",
            "example",
            "--task-group",
            "review",
            "--task-id",
            "reservations",
        ])
        .arg("--task-brief")
        .arg(repo_root().join("examples/brief.md"))
        .arg("--project-root")
        .arg(&example)
        .assert()
        .success();
    assert!(
        example
            .join(".okstra/tasks/example/review/reservations/project-analysis-001/handoff.md")
            .is_file()
    );
}

#[test]
fn on_a_terminal_missing_arguments_are_asked_for() {
    // `script` gives okstra a pseudo-terminal; our answers arrive on it.
    let Ok(script) = which_script() else {
        panic!("`script` (util-linux) is needed to give okstra a terminal in this test");
    };
    let project = launcher_project();
    let command = format!(
        "{} --render-only --task-type project-analysis --task-brief brief.md",
        okstra_path().display()
    );
    let out = project
        .command(script)
        .args(["-qec", &command, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(b"demo\nperf\ncheckout\n")?;
            child.wait_with_output()
        })
        .unwrap();
    let transcript = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{transcript}");
    for question in [
        "project-id (lowercase letters, digits, `.`, `_`, `-`) [project]: ",
        "task-group (lowercase letters, digits, `.`, `_`, `-`) [ask]: ",
        "task-id (lowercase letters, digits, `.`, `_`, `-`): ",
    ] {
        assert!(transcript.contains(question), "{transcript}");
    }
    assert!(
        project
            .run_dir("project-analysis", 1)
            .join("handoff.md")
            .is_file()
    );
}

fn which_script() -> Result<PathBuf, ()> {
    ["/usr/bin/script", "/bin/script"]
        .iter()
        .map(PathBuf::from)
        .find(|path| path.is_file())
        .ok_or(())
}

/// In a git repository that does not ignore `.okstra/`, a render says how
/// to keep the runs out of `git status` (and changes nothing); once
/// ignored, or outside git, it says nothing.
#[test]
fn an_untracked_okstra_folder_gets_one_hint() {
    const HINT: &str =
        "note: git lists `.okstra/` as untracked: add `.okstra/` to the project's `.gitignore`";
    let stderr = |project: &Project| {
        let out = render(project, &[]).success();
        String::from_utf8(out.get_output().stderr.clone()).unwrap()
    };
    let outside = launcher_project();
    assert!(!stderr(&outside).contains("note: git lists"));

    let project = launcher_project();
    crate::support::git_init(project.root());
    let said = stderr(&project);
    assert_eq!(said.matches(HINT).count(), 1, "{said}");
    assert!(!project.root().join(".gitignore").exists());
    assert!(
        crate::support::git(project.root(), &["status", "--porcelain"]).contains("?? .okstra/")
    );
    fs::write(project.root().join(".gitignore"), ".okstra/\n").unwrap();
    assert!(!stderr(&project).contains("note: git lists"));
}
