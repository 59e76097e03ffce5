//! Integration tests: okstra's own git obeys okstra alone. A worker's copy
//! is driven through a git directory okstra owns, so an Executor that
//! rewrites its copy's `.git` (a `core.worktree` aimed at the user's
//! project, an fsmonitor and a filter that run a program, the `.git`
//! replaced by a symlink to the user's) changes nothing of the user's and
//! runs nothing; and the user's own hooks, fsmonitor and filters never run
//! from okstra's git, whether it renders, snapshots, copies, commits the
//! Executor's change, lands it or cleans up.
//!
//! The fake team (`tests/fixtures/workers/team.py`) with `FAKE_SUBVERT`
//! plays the hostile Executor; real git in temporary repositories.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;

use crate::containment::UserTree;
use crate::run::{IMPLEMENTATION, run_dir, run_with, team_project};
use crate::support::{Node, Project, commit_all, git, tree};

/// The branch of the first implementation run of the team project.
const BRANCH: &str = "refs/heads/okstra/demo/review/reservations/implementation-001";
/// Hooks a user may have, every one of which okstra's git could fire.
const HOOKS: [&str; 14] = [
    "pre-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "post-checkout",
    "post-merge",
    "pre-rebase",
    "post-rewrite",
    "pre-auto-gc",
    "post-index-change",
    "reference-transaction",
    "pre-push",
    "push-to-checkout",
    "fsmonitor-watchman",
];

/// The team project committed, with what a user has beside their code:
/// ignored files (`secrets.env`, `build/`), an untracked draft, and an
/// earlier run's folder under `.okstra/`.
fn lived_in() -> (Project, PathBuf) {
    let world = team_project();
    let project = world.root().to_path_buf();
    commit_all(&project);
    fs::write(
        project.join(".gitignore"),
        ".okstra/\nsecrets.env\nbuild/\n",
    )
    .unwrap();
    git(&project, &["add", ".gitignore"]);
    git(&project, &["commit", "-q", "-m", "ignore what is mine"]);
    fs::write(project.join("secrets.env"), "TOKEN=mine\n").unwrap();
    fs::create_dir(project.join("build")).unwrap();
    fs::write(project.join("build/app.bin"), [0_u8, 1, 2, 3]).unwrap();
    fs::write(project.join("draft.md"), "not yet committed\n").unwrap();
    let earlier = world.render(&[
        "--task-type",
        "project-analysis",
        "--workers",
        "claude,codex",
    ]);
    (world, earlier)
}

/// What a user would miss: the files git shows (ignored ones too), the
/// index, `HEAD`, refs and config, and every earlier run's files.
#[derive(Debug, PartialEq, Eq)]
struct Everything {
    tree: UserTree,
    ignored: Vec<(String, Vec<u8>)>,
    earlier: std::collections::BTreeMap<PathBuf, Node>,
}

fn everything(project: &Path, earlier: &Path) -> Everything {
    Everything {
        tree: UserTree::of(project),
        ignored: ["secrets.env", "build/app.bin"]
            .iter()
            .map(|name| {
                (
                    (*name).to_owned(),
                    fs::read(project.join(name)).unwrap_or_default(),
                )
            })
            .collect(),
        earlier: tree(earlier),
    }
}

/// The lines the fake's planted program wrote: empty when nothing ran it.
fn planted_ran(world: &Project) -> String {
    fs::read_to_string(world.path("fake/planted-ran.log")).unwrap_or_default()
}

/// What the hostile Executor did, as it logged it.
fn subverted(world: &Project) -> Vec<String> {
    fs::read_to_string(world.path("fake/subvert-claude.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn an_executor_that_rewrites_its_copys_git_config_touches_nothing_of_the_users() {
    let (world, earlier) = lived_in();
    let project = world.root().to_path_buf();
    let before = everything(&project, &earlier);
    // The user's global config defines the filter the Executor's
    // `.gitattributes` names: okstra's git must not run it either.
    let planted = world.path("fake/planted.sh");
    fs::create_dir_all(world.path("home")).unwrap();
    fs::write(
        world.path("home/.gitconfig"),
        format!(
            "[filter \"evil\"]\n\tclean = {0}\n\tsmudge = {0}\n",
            planted.display()
        ),
    )
    .unwrap();
    // The Executor's first attempt and its fix pass each aim the copy's
    // repository at the user's project and plant an fsmonitor and a filter.
    let (outcome, code, stderr) = run_with(
        &world,
        IMPLEMENTATION,
        &[("FAKE_EDIT", "1"), ("FAKE_SUBVERT", "claude:config")],
    );
    assert_eq!(code, 0, "{stderr}");
    let done = subverted(&world);
    assert!(
        done.len() >= 2,
        "the Executor did not subvert twice: {done:?}"
    );
    assert!(
        done.iter().all(|line| line.starts_with("config in ")),
        "{done:?}"
    );
    assert_eq!(planted_ran(&world), "", "a planted program ran");
    assert_eq!(
        everything(&project, &earlier),
        before,
        "the user's repository changed"
    );
    // The Executor's change is on its branch all the same, made on the
    // snapshot (the user's draft is in it), never with ignored files.
    let run = run_dir(&outcome);
    assert!(run.join("report/data.json").is_file());
    let inventory = git(&project, &["show", &format!("{BRANCH}:src/inventory.py")]);
    assert!(inventory.contains("okstra-fake-change"), "{inventory}");
    let files = git(&project, &["ls-tree", "-r", "--name-only", BRANCH]);
    for absent in ["secrets.env", "build/app.bin"] {
        assert!(
            !files.lines().any(|f| f == absent),
            "{absent} on the branch: {files}"
        );
    }
}

#[test]
fn an_executor_that_links_its_copys_git_to_the_users_moves_nothing() {
    let (world, earlier) = lived_in();
    let project = world.root().to_path_buf();
    let before = everything(&project, &earlier);
    let head = fs::read(project.join(".git/HEAD")).unwrap();
    let (_, code, stderr) = run_with(
        &world,
        IMPLEMENTATION,
        &[("FAKE_EDIT", "1"), ("FAKE_SUBVERT", "claude:symlink")],
    );
    assert_eq!(code, 0, "{stderr}");
    let done = subverted(&world);
    assert!(
        done.iter().any(|line| line.starts_with("symlink in ")),
        "{done:?}"
    );
    assert_eq!(
        fs::read(project.join(".git/HEAD")).unwrap(),
        head,
        "HEAD moved"
    );
    assert_eq!(
        everything(&project, &earlier),
        before,
        "the user's repository changed"
    );
    let refs = git(&project, &["for-each-ref", "--format=%(refname)"]);
    assert!(!refs.contains("okstra-change"), "{refs}");
    let inventory = git(&project, &["show", &format!("{BRANCH}:src/inventory.py")]);
    assert!(inventory.contains("okstra-fake-change"), "{inventory}");
}

/// A program that records that it ran (and passes its input through, as
/// a filter must).
fn plant(world: &Project) -> PathBuf {
    let program = world.path("planted-by-user.sh");
    fs::write(
        &program,
        format!(
            "#!/bin/sh\necho \"ran $0 $*\" >> '{}'\ncat\n",
            world.path("fake/planted-ran.log").display()
        ),
    )
    .unwrap();
    fs::set_permissions(&program, fs::Permissions::from_mode(0o755)).unwrap();
    program
}

#[test]
fn okstra_runs_none_of_the_users_hooks_fsmonitor_or_filters() {
    let (world, _) = lived_in();
    let project = world.root().to_path_buf();
    let program = plant(&world);
    let hooks = project.join(".git/hooks");
    fs::create_dir_all(&hooks).unwrap();
    for hook in HOOKS {
        fs::copy(&program, hooks.join(hook)).unwrap();
    }
    let program = program.to_str().unwrap();
    for (key, value) in [
        ("core.fsmonitor", program),
        ("filter.mine.clean", program),
        ("filter.mine.smudge", program),
    ] {
        git(&project, &["config", key, value]);
    }
    // From here on, the test's own git would fire them too: only okstra's runs.
    fs::write(project.join(".gitattributes"), "*.py filter=mine\n").unwrap();

    // Render (which reads the project's state with git), a run whose
    // kimi reviewer works in a copy, an implementation run, its landing
    // and a cleanup.
    let (_, code, stderr) = run_with(
        &world,
        &[
            "--task-type",
            "project-analysis",
            "--workers",
            "claude,kimi,report-writer",
        ],
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    let (outcome, code, stderr) = run_with(
        &world,
        IMPLEMENTATION,
        &[("FAKE_EDIT", "1"), ("FAKE_FIX_EDIT", "1")],
    );
    assert_eq!(code, 0, "{stderr}");
    let run = run_dir(&outcome);
    let landed = world.okstra().arg("land").arg(&run).output().unwrap();
    assert_eq!(
        landed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&landed.stderr)
    );
    assert!(
        fs::read_to_string(project.join("src/inventory.py"))
            .unwrap()
            .contains("okstra-fake-fix")
    );
    let cleaned = world
        .okstra()
        .args(["cleanup", "--older-than", "0s", "--execute"])
        .output()
        .unwrap();
    assert_eq!(
        cleaned.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&cleaned.stderr)
    );
    assert_eq!(
        planted_ran(&world),
        "",
        "a program of the user's repository ran"
    );
}
