//! Lifecycle: resuming a task key — the next phase, clarification and plan
//! continuations, the task-key form, and deleted or copied runs.

use pretty_assertions::assert_eq;

use super::*;

/// `okstra --render-only --json` with the task key and `extra`, whatever happens.
fn launch(project: &Project, extra: &[&str]) -> assert_cmd::assert::Assert {
    project
        .render_command(&[&["--json"], extra].concat())
        .assert()
}

#[test]
fn next_phase_chains_task_types_and_explicit_flags_win() {
    let project = Project::new();
    let first = project.render(&["--task-type", "project-analysis"]);
    fs::write(
        first.join("report/data.json"),
        json!({"workflow": {"nextRecommendedPhase": "implementation-planning"}}).to_string(),
    )
    .unwrap();

    let second = project.render(&[]);
    assert!(
        second.ends_with("implementation-planning-001"),
        "{second:?}"
    );
    assert_eq!(manifest(&second)["taskType"], "implementation-planning");
    assert_eq!(manifest(&second)["continues"], json!(first));
    let task = read_json(&second.join("task-manifest.json"));
    assert_eq!(task["continuation"]["previousRun"], json!(first));

    let third = project.render(&["--task-type", "error-analysis"]);
    assert!(third.ends_with("error-analysis-001"), "{third:?}");
    assert_eq!(manifest(&third)["continues"], json!(second));

    // A report naming an unknown phase is refused, with the way out.
    fs::write(
        first.join("report/data.json"),
        json!({"workflow": {"nextRecommendedPhase": "lunch"}}).to_string(),
    )
    .unwrap();
    let assert = launch(&project, &[]).code(2);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(
        stderr.contains("`lunch`") && stderr.contains("--task-type"),
        "{stderr}"
    );
}

#[test]
fn clarification_and_plan_continuations_link_the_run_they_continue() {
    let project = Project::new();
    crate::support::git_init(project.root());
    // Nothing to continue yet.
    let assert = launch(
        &project,
        &[
            "--task-type",
            "requirements-discovery",
            "--resume-clarification",
        ],
    )
    .code(2);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(stderr.contains("demo/g/t"), "{stderr}");

    let discovery = project.render(&["--task-type", "requirements-discovery"]);
    let planning = project.render(&["--task-type", "implementation-planning"]);
    fs::write(project.root().join("answers.md"), "use postgres\n").unwrap();
    fs::write(project.root().join("plan.md"), "1. do it\n").unwrap();

    // Answers continue the clarification run, not the latest run.
    let answered = project.render(&[
        "--task-type",
        "requirements-discovery",
        "--clarification-response",
        "answers.md",
    ]);
    assert_eq!(manifest(&answered)["continues"], json!(discovery));
    let task = read_json(&answered.join("task-manifest.json"));
    assert_eq!(task["continuation"]["kind"], "clarification-response");
    assert_eq!(task["continuation"]["previousRun"], json!(discovery));
    assert_eq!(
        fs::read_to_string(answered.join("inputs/clarification-response.md")).unwrap(),
        "use postgres\n"
    );

    // An approved plan continues the latest planning run.
    let implementing = project.render(&[
        "--task-type",
        "implementation",
        "--approved-plan",
        "plan.md",
    ]);
    assert_eq!(manifest(&implementing)["continues"], json!(planning));
    let task = read_json(&implementing.join("task-manifest.json"));
    assert_eq!(task["continuation"]["kind"], "approved-plan");

    // --resume-clarification asks on a terminal; without one it says how else.
    let assert = launch(
        &project,
        &[
            "--task-type",
            "requirements-discovery",
            "--resume-clarification",
        ],
    )
    .code(2);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(stderr.contains("--clarification-response"), "{stderr}");

    // Mutually exclusive continuations are refused before anything is written.
    let runs_before = fs::read_dir(discovery.parent().unwrap()).unwrap().count();
    launch(
        &project,
        &[
            "--task-type",
            "requirements-discovery",
            "--resume-clarification",
            "--approved-plan",
            "plan.md",
        ],
    )
    .code(2);
    assert_eq!(
        fs::read_dir(discovery.parent().unwrap()).unwrap().count(),
        runs_before
    );
}

#[test]
fn task_key_form_resumes_the_same_task() {
    let project = Project::new();
    let first = project.render(&["--task-type", "project-analysis"]);
    let output = project
        .okstra()
        .args([
            "--render-only",
            "--yes",
            "--json",
            "--task-key",
            "demo/g/t",
            "--task-brief",
            "brief.md",
            "--task-type",
            "project-analysis",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let paths: Value = serde_json::from_slice(&output).unwrap();
    let second = PathBuf::from(paths["runDir"].as_str().unwrap());
    assert!(second.ends_with("project-analysis-002"), "{second:?}");
    assert_eq!(manifest(&second)["continues"], json!(first));
}

#[test]
fn continuations_skip_deleted_runs_and_see_runs_copied_in() {
    let project = Project::new();
    fs::write(project.root().join("answers.md"), "use postgres\n").unwrap();
    let analysis = project.render(&["--task-type", "project-analysis"]);
    let errors = project.render(&["--task-type", "error-analysis"]);

    // A deleted run is not continued, and its number is not handed out again.
    fs::remove_dir_all(&errors).unwrap();
    let next = project.render(&["--task-type", "project-analysis"]);
    assert_eq!(manifest(&next)["continues"], json!(analysis));
    let again = project.render(&["--task-type", "error-analysis"]);
    assert!(again.ends_with("error-analysis-002"), "{again:?}");
    fs::remove_dir_all(&again).unwrap();

    // A run folder okstra did not make here (copied in from elsewhere) is
    // still a run: it is continued, and its number is not reused either.
    let copied = analysis.with_file_name("requirements-discovery-007");
    fs::create_dir(&copied).unwrap();
    let mut head = manifest(&analysis);
    head["taskType"] = json!("requirements-discovery");
    head["createdAt"] = json!("2999-01-01T00:00:00.000Z");
    fs::write(copied.join("run-manifest.json"), head.to_string()).unwrap();
    let answered = project.render(&["--clarification-response", "answers.md"]);
    assert!(
        answered.ends_with("requirements-discovery-008"),
        "{answered:?}"
    );
    assert_eq!(manifest(&answered)["continues"], json!(copied));
}

#[test]
fn continuations_supply_the_task_type_when_none_is_given() {
    let project = Project::new();
    crate::support::git_init(project.root());
    fs::write(project.root().join("answers.md"), "use postgres\n").unwrap();
    fs::write(project.root().join("plan.md"), "1. do it\n").unwrap();
    let analysis = project.render(&["--task-type", "error-analysis"]);
    project.render(&["--task-type", "project-analysis"]);

    // Answers continue the phase that asked, not the latest run's type.
    let answered = project.render(&["--clarification-response", "answers.md"]);
    assert_eq!(manifest(&answered)["taskType"], "error-analysis");
    assert_eq!(manifest(&answered)["continues"], json!(analysis));

    // An approved plan is carried out by an implementation run...
    let implementing = project.render(&["--approved-plan", "plan.md"]);
    assert_eq!(manifest(&implementing)["taskType"], "implementation");

    // ...and by nothing else.
    let refused = launch(
        &project,
        &[
            "--approved-plan",
            "plan.md",
            "--task-type",
            "project-analysis",
        ],
    )
    .code(2);
    let stderr = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    assert!(stderr.contains("--task-type project-analysis"), "{stderr}");
}
