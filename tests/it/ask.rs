//! `okstra ask`: the first real run in one line, with the fake team of
//! `tests/fixtures/team/` standing in for the provider CLIs; and the
//! questions bare `okstra` and `okstra ask` put on a terminal, under a
//! pseudo-terminal (`script(1)` from util-linux).

use std::fs;
use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::run::team_project;
use crate::support::{Project, read_json};

const QUESTION: &str = "How do reservations work?";

fn output(cmd: &mut assert_cmd::Command) -> (i32, String, String) {
    let output = cmd.output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The task folder `okstra ask` picks in `world` for a question.
fn task_dir(world: &Project, task_id: &str) -> PathBuf {
    world.okstra_dir().join("tasks/project/ask").join(task_id)
}

#[test]
fn one_line_reaches_a_rendered_run_with_everything_defaulted() {
    let world = team_project();
    let (code, stdout, stderr) = output(world.okstra().args(["ask", "--render-only", QUESTION]));
    assert_eq!(code, 0, "{stderr}");
    let run = task_dir(&world, "how-do-reservations-work").join("project-analysis-001");
    assert_eq!(stdout, format!("{}\n", run.join("handoff.md").display()));
    assert!(
        stderr.starts_with(
            "okstra: profile: project-analysis, because the question asks for neither defects nor why something fails (`--task-type` and `--focus` choose another)\nokstra: asking: project-analysis run `project/ask/how-do-reservations-work` in "
        ),
        "{stderr}"
    );
    let manifest = read_json(&run.join("run-manifest.json"));
    let workers: Vec<&str> = manifest["assignments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["workerId"].as_str().unwrap())
        .collect();
    assert_eq!(workers, ["claude", "codex", "report-writer"]);
    assert!(
        manifest["assignments"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["runner"] == "cli-wrapper")
    );
    // The question is the brief; its copy is its source.
    let task = read_json(&run.join("task-manifest.json"));
    assert_eq!(task["taskBrief"]["source"], task["taskBrief"]["copy"]);
    assert_eq!(
        fs::read_to_string(run.join("inputs/task-brief.md")).unwrap(),
        format!("{QUESTION}\n")
    );
    // Asked again, the same question gets a task of its own.
    let (code, stdout, _) = output(world.okstra().args(["ask", "--render-only", QUESTION]));
    assert_eq!(code, 0);
    assert!(
        stdout.contains("/ask/how-do-reservations-work-2/"),
        "{stdout}"
    );
}

#[test]
fn one_line_runs_headless_to_a_report_and_reads_stdin() {
    let world = team_project();
    let (code, stdout, stderr) = output(world.okstra().args(["ask", QUESTION]));
    assert_eq!(code, 0, "{stderr}");
    let run = task_dir(&world, "how-do-reservations-work").join("project-analysis-001");
    assert!(run.join("report/final-report.html").is_file(), "{stderr}");
    assert!(
        stdout.contains(&run.join("report/final-report.md").display().to_string()),
        "{stdout}"
    );
    // `-` reads the question from stdin; --json prints run's outcome.
    let (code, stdout, stderr) = output(
        world
            .okstra()
            .args(["ask", "-", "--json", "--workers", "claude,report-writer"])
            .write_stdin("Where is stock reserved?\nAnd for how long?\n"),
    );
    assert_eq!(code, 0, "{stderr}");
    let outcome: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(outcome["valid"], true);
    let run = PathBuf::from(outcome["runDir"].as_str().unwrap());
    assert!(
        run.starts_with(task_dir(&world, "where-is-stock-reserved")),
        "{run:?}"
    );
    assert_eq!(
        fs::read_to_string(run.join("inputs/task-brief.md")).unwrap(),
        "Where is stock reserved?\nAnd for how long?\n"
    );
}

/// A question that asks for bugs gets the defect hunt, one that asks why
/// something fails gets error-analysis, any other the map; `ask` says which
/// and why, and a flag overrides it.
#[test]
fn a_defect_question_gets_the_defect_hunt_and_ask_says_why() {
    let world = team_project();
    let ask = |args: &[&str]| output(world.okstra().arg("ask").arg("--render-only").args(args));
    let profile_line = |stderr: &str| stderr.lines().next().unwrap_or_default().to_owned();

    let (code, stdout, stderr) = ask(&["Find bugs in src/inventory.py"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        profile_line(&stderr),
        "okstra: profile: project-analysis (defect hunt), because the question asks for defects (\"bugs\") (`--task-type` and `--focus` choose another)"
    );
    let run = PathBuf::from(stdout.trim()).parent().unwrap().to_path_buf();
    assert_eq!(
        read_json(&run.join("run-manifest.json"))["focus"],
        "defects"
    );
    let prompt = fs::read_to_string(run.join("prompts/claude-worker.md")).unwrap();
    assert!(
        prompt.contains("2. **Defects** *(claims: cross-checked)*"),
        "{prompt}"
    );
    assert!(prompt.contains("Input → actual → expected"));
    for tour in [
        "strengths",
        "Breadth first",
        "Components",
        "Recommendations",
    ] {
        assert!(!prompt.contains(tour), "the defect hunt asks for `{tour}`");
    }
    assert!(
        fs::read_to_string(run.join("instruction-set/profile.md"))
            .unwrap()
            .starts_with("# Phase profile: `project-analysis` — defect hunt")
    );

    let (code, stdout, stderr) = ask(&[QUESTION]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        profile_line(&stderr),
        "okstra: profile: project-analysis, because the question asks for neither defects nor why something fails (`--task-type` and `--focus` choose another)"
    );
    let run = PathBuf::from(stdout.trim()).parent().unwrap().to_path_buf();
    assert!(
        read_json(&run.join("run-manifest.json"))
            .get("focus")
            .is_none()
    );
    let prompt = fs::read_to_string(run.join("prompts/claude-worker.md")).unwrap();
    assert!(prompt.contains("2. **Components**"), "{prompt}");

    let (code, stdout, stderr) = ask(&["Why are reservations oversold?"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        profile_line(&stderr),
        "okstra: profile: error-analysis, because the question asks why something fails (\"why\", \"oversold\") (`--task-type` and `--focus` choose another)"
    );
    assert!(stdout.contains("/error-analysis-001/"), "{stdout}");

    // `--task-type` overrides the choice; `--focus` is for project-analysis.
    let (code, stdout, stderr) = ask(&[
        "--task-type",
        "project-analysis",
        "Find bugs in src/server.py",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        profile_line(&stderr),
        "okstra: profile: project-analysis, as the flags say (`--task-type` and `--focus` choose another)"
    );
    let run = PathBuf::from(stdout.trim()).parent().unwrap().to_path_buf();
    assert!(
        read_json(&run.join("run-manifest.json"))
            .get("focus")
            .is_none()
    );
    let (code, stdout, stderr) = ask(&[
        "--task-type",
        "error-analysis",
        "--focus",
        "defects",
        QUESTION,
    ]);
    assert_eq!((code, stdout.as_str()), (2, ""));
    assert_eq!(
        stderr,
        "error: `--focus defects` is a variant of `project-analysis`, not of `error-analysis`: drop `--focus` or pass `--task-type project-analysis`\n"
    );
}

#[test]
fn a_missing_or_doubled_question_is_one_clear_line() {
    let world = team_project();
    let (code, stdout, stderr) = output(world.okstra().args(["ask"]));
    assert_eq!((code, stdout.as_str()), (2, ""));
    assert_eq!(
        stderr,
        "error: missing the question: give it inline (`okstra ask \"Why are reservations oversold?\"`), as `-` to read it from stdin, or as `--task-brief FILE`\n"
    );
    let (code, _, stderr) =
        output(
            world
                .okstra()
                .args(["ask", "why?", "--task-brief", "brief.md"]),
        );
    assert_eq!(code, 2);
    assert!(
        stderr.starts_with("error: the question is given twice"),
        "{stderr}"
    );
    let (code, _, stderr) = output(world.okstra().args(["ask", "-"]).write_stdin(" \n"));
    assert_eq!(code, 2);
    assert!(
        stderr.starts_with("error: the question is empty"),
        "{stderr}"
    );
    assert!(!world.okstra_dir().join("tasks").exists());
}

/// `script(1)` running `okstra args…` in `world` on a pseudo-terminal, with
/// `typed` as the keyboard: everything the terminal showed, and the code.
fn on_a_terminal(world: &Project, args: &[&str], typed: &str) -> (i32, String) {
    let okstra = crate::support::okstra_path();
    let command = std::iter::once(okstra.to_str().unwrap())
        .chain(args.iter().copied())
        .map(shell_word)
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        Path::new("/usr/bin/script").is_file() || which("script"),
        "these tests need `script` (util-linux) for a pseudo-terminal"
    );
    let mut cmd = crate::support::bounded(world.command("script"));
    cmd.args(["-q", "-e", "-c", &command, "/dev/null"])
        .write_stdin(typed);
    let output = cmd.output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).replace("\r\n", "\n"),
    )
}

fn which(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

fn shell_word(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

#[test]
fn bare_okstra_on_a_terminal_lists_choices_and_defaults_and_asks_again() {
    let world = team_project();
    // The question, Enter for the project id and the group, a bad task id
    // (refused, asked again), Enter for the one made from the question,
    // then the task type by its number.
    let typed = format!("{QUESTION}\n\n\nfirst look\n\n2\n");
    let (code, screen) = on_a_terminal(&world, &["--render-only"], &typed);
    assert_eq!(code, 0, "{screen}");
    for shown in [
        "task-brief (a file with the question, or the question itself): ",
        "project-id (lowercase letters, digits, `.`, `_`, `-`) [project]: ",
        "task-group (lowercase letters, digits, `.`, `_`, `-`) [ask]: ",
        "invalid value `first look` for `--task-id`: expected a safe slug matching ^[a-z0-9][a-z0-9._-]{0,127}$; try again",
        "task-id (lowercase letters, digits, `.`, `_`, `-`) [how-do-reservations-work]: ",
        "  4) project-analysis (default)",
        "task-type [project-analysis]: ",
    ] {
        assert!(screen.contains(shown), "{shown:?} not in:\n{screen}");
    }
    // Every earlier answer was kept through the refusal.
    let run = task_dir(&world, "how-do-reservations-work").join("error-analysis-001");
    assert!(run.join("handoff.md").is_file(), "{screen}");
}

#[test]
fn ask_on_a_terminal_shows_the_plan_and_starts_only_when_told() {
    let world = team_project();
    // Enter takes project-analysis; `n` declines the plan.
    let (code, screen) = on_a_terminal(&world, &["ask", QUESTION], "\nn\n");
    assert_eq!(code, 1, "{screen}");
    for shown in [
        "  4) project-analysis (default)",
        "task-type [project-analysis]: ",
        "okstra: plan: project-analysis run `project-analysis-001`",
        "okstra: estimate: at least ",
        "start the run? [Y/n] ",
        "note: not started; start it later with `okstra run ",
    ] {
        assert!(screen.contains(shown), "{shown:?} not in:\n{screen}");
    }
    assert!(!world.path("fake/calls.log").exists(), "a model was called");
}
