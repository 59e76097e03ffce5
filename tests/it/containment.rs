//! Integration tests: containment of the CLIs that have no read-only mode
//! (kimi, grok). Where Landlock works (these machines: Linux 6.18, ABI 7)
//! they read the project itself and can write nothing of it: no copy is
//! made. Contained by copies (`OKSTRA_CONTAINMENT=copies`, as on a machine
//! without Landlock) each works in its own copy of the project — a git copy
//! of the run's snapshot inside git, a file copy outside — whose path its
//! prompts name as the project root; nothing it does there reaches the
//! user's files, index or refs; a project too large to copy is refused
//! unless `--allow-unisolated`; `okstra reap --execute` removes the copy a
//! killed dispatcher left, and nothing else.
//!
//! The fake team (`tests/fixtures/workers/team.py`) with `FAKE_ESCAPE` plays
//! a CLI that obeys its prompt and approves every tool call: it writes
//! through the project root its prompt names and runs `git update-ref` and
//! `git checkout -b` where it runs.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::run::{IMPLEMENTATION, attempts, run, run_dir, run_with, team_project};
use crate::support::{
    Group, Project, commit_all, git, limit, manifest, okstra_path, read_json, team_state_path,
    wait_for,
};

/// Everything of the user's repository a CLI must not change: the working
/// tree's files (by content, mode and symlink target), `git status`, every
/// ref outside `refs/okstra/`, `HEAD`, the index and the config, byte for
/// byte.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct UserTree {
    pub files: Vec<(PathBuf, String)>,
    pub status: String,
    pub refs: String,
    pub git_files: Vec<(String, Vec<u8>)>,
}

impl UserTree {
    pub fn of(project: &Path) -> UserTree {
        let git_dir = project.join(".git");
        let in_git = git_dir.is_dir();
        UserTree {
            files: files(project),
            status: if in_git {
                // No optional locks: our own `git status` must not refresh
                // the index we compare.
                git(
                    project,
                    &[
                        "--no-optional-locks",
                        "status",
                        "--porcelain=v1",
                        "--untracked-files=all",
                        "--ignored",
                    ],
                )
                .lines()
                .filter(|line| !line.contains(".okstra/"))
                .collect::<Vec<_>>()
                .join("\n")
            } else {
                String::new()
            },
            refs: if in_git {
                git(
                    project,
                    &["for-each-ref", "--format=%(refname) %(objectname)"],
                )
                .lines()
                .filter(|line| {
                    !line.starts_with("refs/okstra/") && !line.starts_with("refs/heads/okstra/")
                })
                .collect::<Vec<_>>()
                .join("\n")
            } else {
                String::new()
            },
            git_files: ["HEAD", "index", "config", "packed-refs"]
                .iter()
                .map(|name| {
                    (
                        (*name).to_owned(),
                        fs::read(git_dir.join(name)).unwrap_or_default(),
                    )
                })
                .collect(),
        }
    }
}

/// Every file under `dir` but `.git/` and `.okstra/`: its path and a
/// fingerprint (the bytes' hash, its mode; a symlink's target).
fn files(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in fs::read_dir(&next).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if name == ".git" || name == ".okstra" {
                continue;
            }
            let meta = fs::symlink_metadata(&path).unwrap();
            let print = if meta.file_type().is_symlink() {
                format!("-> {}", fs::read_link(&path).unwrap().display())
            } else if meta.is_dir() {
                stack.push(path.clone());
                "dir".to_owned()
            } else {
                let bytes = fs::read(&path).unwrap();
                format!("{:o} {}", meta.mode(), blob_id(&bytes))
            };
            found.push((path.strip_prefix(dir).unwrap().to_path_buf(), print));
        }
    }
    found.sort();
    found
}

/// git's blob id of `bytes` (what `git hash-object` prints).
fn blob_id(bytes: &[u8]) -> String {
    let mut child = Command::new("git")
        .args(["hash-object", "--stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), bytes).unwrap();
    let output = child.wait_with_output().unwrap();
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// The paths a `FAKE_ESCAPE` CLI wrote to, and where it ran git.
fn escapes(world: &Project, binary: &str) -> Vec<String> {
    fs::read_to_string(world.path(&format!("fake/escape-{binary}.log")))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The `**Project root:**` a prompt names.
fn named_root(prompt: &str) -> String {
    prompt
        .lines()
        .find_map(|line| line.strip_prefix("**Project root:** `"))
        .and_then(|rest| rest.strip_suffix('`'))
        .unwrap_or_else(|| panic!("no project root in:\n{prompt}"))
        .to_owned()
}

/// Assert `prompt` names `copy` as the project root and mentions the real
/// project only for okstra's own files (its run folder under `.okstra/`).
fn assert_names_only_its_copy(prompt: &str, copy: &str, project: &Path) {
    assert_eq!(named_root(prompt), copy);
    let project = project.to_str().unwrap();
    for (at, _) in prompt.match_indices(project) {
        let after = &prompt[at + project.len()..];
        assert!(
            after.starts_with("/.okstra/"),
            "the prompt names the project itself: …{}…",
            &prompt[at..(at + project.len() + 40).min(prompt.len())]
        );
    }
}

/// The one ref okstra keeps in the user's repository for a run.
fn snapshot_refs(project: &Path) -> Vec<String> {
    git(
        project,
        &["for-each-ref", "--format=%(refname)", "refs/okstra/"],
    )
    .lines()
    .map(str::to_owned)
    .collect()
}

/// The user's project in the middle of work: committed, with a change not
/// staged, a staged new file, an untracked file and an ignored one.
fn mid_work(world: &Project) -> PathBuf {
    let project = world.root().to_path_buf();
    commit_all(&project);
    fs::write(
        project.join("src/inventory.py"),
        fs::read_to_string(project.join("src/inventory.py")).unwrap() + "# not yet committed\n",
    )
    .unwrap();
    fs::write(project.join("staged.txt"), "staged\n").unwrap();
    git(&project, &["add", "staged.txt"]);
    fs::write(project.join("draft.md"), "untracked\n").unwrap();
    fs::write(project.join(".gitignore"), ".okstra/\nsecret.env\n").unwrap();
    fs::write(project.join("secret.env"), "TOKEN=ignored\n").unwrap();
    project
}

#[test]
fn a_cli_with_no_read_only_mode_cannot_touch_the_users_files_index_or_refs() {
    let world = team_project();
    let project = mid_work(&world);
    let before = UserTree::of(&project);

    let (outcome, code, stderr) = run(
        &world,
        "claude,codex,kimi,grok,report-writer",
        &[("FAKE_ESCAPE", "kimi,grok")],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(UserTree::of(&project), before, "the user's tree changed");
    let run = run_dir(&outcome);
    assert_eq!(manifest(&run)["containment"], "landlock");
    assert!(!stderr.contains("containment: copies"), "{stderr}");

    // Each tried to write through its prompt's root (the project), into the
    // folder it ran in (the project) and to move refs with git: the kernel
    // refused every one, and nothing reached the project.
    for binary in ["kimi", "grok"] {
        let tried = escapes(&world, binary);
        let root = project.to_str().unwrap();
        for target in ["escaped.txt", "src/inventory.py", "escaped-cwd.txt"] {
            let line = format!("denied EACCES {root}/{target}");
            assert!(
                tried.contains(&line),
                "{binary} was not refused {target}: {tried:?}"
            );
        }
        assert!(
            tried
                .iter()
                .any(|line| line == "denied EACCES git update-ref"),
            "{binary}: {tried:?}"
        );
        assert!(tried.contains(&format!("git in {root}")), "{tried:?}");
        assert!(
            tried
                .iter()
                .all(|line| line.starts_with("denied ") || line.starts_with("git in ")),
            "{binary} wrote something: {tried:?}"
        );
        for name in [
            format!("{binary}-worker"),
            format!("{binary}-worker-reverify-r1"),
        ] {
            let record = &attempts(&run, &name)[0];
            assert_eq!(record["isolation"], "landlock", "{record}");
            assert!(record.get("workspace").is_none(), "{record}");
            let prompt = fs::read_to_string(run.join(format!("prompts/{name}.md"))).unwrap();
            assert_eq!(named_root(&prompt), root);
        }
    }
    for binary in ["escaped.txt", "escaped-cwd.txt"] {
        assert!(!project.join(binary).exists());
    }
    // No copy at all: every reviewer read the project itself.
    assert_eq!(
        world.copies_of("project-analysis-001"),
        Vec::<PathBuf>::new()
    );
    // codex keeps its own sandbox; claude is under Landlock too.
    assert_eq!(
        attempts(&run, "codex-worker")[0]["isolation"],
        "cli-sandbox"
    );
    assert_eq!(attempts(&run, "claude-worker")[0]["isolation"], "landlock");
    let report = read_json(&run.join("report/data.json"));
    let note = |worker: &str| -> String {
        report["workerCoverage"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["workerId"] == worker)
            .unwrap()["notes"][0]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(
        note("kimi"),
        "kimi read the project itself under Landlock, which let it write only its own state folders and a scratch folder, never the project"
    );
    assert!(
        note("codex").contains("read-only mode"),
        "{}",
        note("codex")
    );
}

#[test]
fn contained_by_copies_such_a_cli_works_in_its_own_copy_and_says_so() {
    let world = team_project().copies();
    let project = mid_work(&world);
    let before = UserTree::of(&project);

    let (outcome, code, stderr) = run(
        &world,
        "claude,codex,kimi,grok,report-writer",
        &[("FAKE_ESCAPE", "kimi,grok")],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(UserTree::of(&project), before, "the user's tree changed");
    let run = run_dir(&outcome);
    // Said once for the run.
    let said: Vec<&str> = stderr
        .lines()
        .filter(|line| line.starts_with("warning: containment: copies"))
        .collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(
        said[0].contains("`OKSTRA_CONTAINMENT=copies` asks for them"),
        "{stderr}"
    );
    assert_eq!(manifest(&run)["containment"], "copies");

    // Every write went through the prompt's root into the copy, and git ran
    // in the copy; the copies are gone once their attempts ended.
    let workspaces = world.workspaces();
    for binary in ["kimi", "grok"] {
        let wrote = escapes(&world, binary);
        assert!(
            wrote.len() >= 6,
            "{binary} tried less than expected: {wrote:?}"
        );
        for line in &wrote {
            let path = line.strip_prefix("git in ").unwrap_or(line);
            assert!(
                Path::new(path).starts_with(&workspaces),
                "{binary} wrote outside its copy: {line}"
            );
        }
        for name in [
            format!("{binary}-worker"),
            format!("{binary}-worker-reverify-r1"),
        ] {
            let record = &attempts(&run, &name)[0];
            assert_eq!(record["isolation"], "git-copy", "{record}");
            assert_eq!(record["workspace"]["kind"], "git-copy", "{record}");
            let copy = record["workspace"]["path"].as_str().unwrap();
            assert!(Path::new(copy).starts_with(&workspaces), "{copy}");
            assert!(!Path::new(copy).exists(), "{copy} was left behind");
            let prompt = fs::read_to_string(run.join(format!("prompts/{name}.md"))).unwrap();
            assert_names_only_its_copy(&prompt, copy, &project);
        }
    }
    // A CLI with a read-only mode works in the project.
    let codex = &attempts(&run, "codex-worker")[0];
    assert_eq!(codex["isolation"], "cli-sandbox");
    assert!(codex.get("workspace").is_none());
    // One snapshot for the run, kept under refs/okstra/ and recorded.
    let refs = snapshot_refs(&project);
    assert_eq!(refs.len(), 1, "{refs:?}");
    assert_eq!(
        attempts(&run, "kimi-worker")[0]["workspace"]["snapshotRef"],
        refs[0].as_str()
    );
    // The snapshot is the working tree as it was: the unstaged change, the
    // staged and untracked files, not the ignored one nor `.okstra/`.
    let tree = git(&project, &["ls-tree", "-r", "--name-only", &refs[0]]);
    for present in ["draft.md", "staged.txt", "src/inventory.py"] {
        assert!(
            tree.lines().any(|l| l == present),
            "{present} missing: {tree}"
        );
    }
    assert!(!tree.contains("secret.env") && !tree.contains(".okstra"));
    let inventory = git(
        &project,
        &["show", &format!("{}:src/inventory.py", refs[0])],
    );
    assert!(inventory.ends_with("# not yet committed\n"));
    // The report says how each worker was kept from the project.
    let report = read_json(&run.join("report/data.json"));
    let note = |worker: &str| -> String {
        report["workerCoverage"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["workerId"] == worker)
            .unwrap()["notes"][0]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(note("kimi").contains("git copy"), "{}", note("kimi"));
    assert!(note("kimi").contains(&refs[0]), "{}", note("kimi"));
    assert!(
        note("codex").contains("read-only mode"),
        "{}",
        note("codex")
    );
}

/// Every verifier sees the Executor's change, which `git diff` where it
/// runs shows as a change; the project itself does not get the change (it
/// reaches it only through `okstra land`). Under Landlock the Executor's
/// copy is the one copy of the run, and every verifier reads it; contained
/// by copies each verifier has its own.
#[test]
fn every_verifier_sees_the_executors_change_and_the_project_does_not() {
    for copies in [false, true] {
        let world = if copies {
            team_project().copies()
        } else {
            team_project()
        };
        let project = world.root().to_path_buf();
        commit_all(&project);
        let (outcome, code, stderr) = run_with(&world, IMPLEMENTATION, &[("FAKE_EDIT", "1")]);
        assert_eq!(code, 0, "{stderr}");
        let run = run_dir(&outcome);
        let executor = &attempts(&run, "claude-executor")[0];
        let executor_copy = executor["workspace"]["path"].as_str().unwrap();
        for name in ["codex-verifier", "kimi-verifier"] {
            let result = fs::read_to_string(run.join(format!("results/{name}.md"))).unwrap();
            assert!(result.contains("saw-executor-change"), "{result}");
            assert!(
                result.contains("git-diff-shows-executor-change"),
                "{result}"
            );
            let record = &attempts(&run, name)[0];
            assert_eq!(
                record["workspace"]["commit"], executor["branch"]["commit"],
                "{record}"
            );
            let path = record["workspace"]["path"].as_str().unwrap();
            if copies {
                assert_eq!(record["isolation"], "git-copy", "{record}");
                assert_ne!(path, executor_copy);
            } else {
                // codex keeps its own sandbox; kimi is under Landlock.
                let isolation = if name == "kimi-verifier" {
                    "landlock"
                } else {
                    "git-copy"
                };
                assert_eq!(record["isolation"], isolation, "{record}");
                assert_eq!(path, executor_copy, "{record}");
            }
        }
        // The copies made, as recorded; the Executor's stays once the run
        // ended (a verifier's own copy does not).
        let state = read_json(&team_state_path(&run));
        let made: std::collections::BTreeSet<&str> = state["dispatches"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|record| record["workspace"]["path"].as_str())
            .collect();
        assert_eq!(made.len(), if copies { 3 } else { 1 }, "{made:?}");
        assert_eq!(
            world.copies_of("implementation-001"),
            vec![PathBuf::from(executor_copy)]
        );
        assert_eq!(
            executor["isolation"],
            if copies { "git-copy" } else { "landlock" }
        );
        assert!(
            !fs::read_to_string(project.join("src/inventory.py"))
                .unwrap()
                .contains("okstra-fake-change"),
            "the Executor's change reached the project without `okstra land`"
        );
    }
}

/// Under Landlock the Executor writes its copy and nothing else: not the
/// project through its absolute path.
#[test]
fn the_executor_cannot_write_the_project_through_its_absolute_path() {
    let world = team_project();
    let project = world.root().to_path_buf();
    commit_all(&project);
    let before = UserTree::of(&project);
    let (outcome, code, stderr) = run_with(
        &world,
        IMPLEMENTATION,
        &[
            ("FAKE_EDIT", "1"),
            ("FAKE_ESCAPE", "claude"),
            ("FAKE_FIND_PROJECT", "1"),
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(UserTree::of(&project), before, "the user's tree changed");
    let run = run_dir(&outcome);
    let copy = attempts(&run, "claude-executor")[0]["workspace"]["path"]
        .as_str()
        .unwrap()
        .to_owned();
    let tried = escapes(&world, "claude");
    let root = project.to_str().unwrap();
    // Its prompt names its copy, where it may write; the project's own
    // path, found through the copy's repository, the kernel refuses.
    assert!(
        tried.contains(&format!("{copy}/escaped-cwd.txt")),
        "{tried:?}"
    );
    assert!(
        tried.contains(&format!("denied EACCES {root}/escaped.txt")),
        "{tried:?}"
    );
    assert!(!project.join("escaped.txt").exists());
    let executor = &attempts(&run, "claude-executor")[0];
    assert_eq!(executor["isolation"], "landlock", "{executor}");
}

#[test]
fn a_project_outside_git_gives_such_a_cli_a_file_copy() {
    let world = team_project().copies();
    let project = world.root().to_path_buf();
    fs::write(project.join(".gitignore"), "secret.env\n").unwrap();
    fs::write(project.join("secret.env"), "TOKEN=ignored\n").unwrap();
    let before = UserTree::of(&project);
    let (outcome, code, stderr) = run(
        &world,
        "claude,codex,kimi,report-writer",
        &[("FAKE_ESCAPE", "kimi")],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(UserTree::of(&project), before, "the user's files changed");
    let workspaces = world.workspaces();
    let wrote = escapes(&world, "kimi");
    assert!(!wrote.is_empty());
    for line in &wrote {
        let path = line.strip_prefix("git in ").unwrap_or(line);
        assert!(Path::new(path).starts_with(&workspaces), "{line}");
    }
    let run = run_dir(&outcome);
    let record = &attempts(&run, "kimi-worker")[0];
    assert_eq!(record["isolation"], "file-copy", "{record}");
    assert_eq!(record["workspace"]["kind"], "file-copy");
    assert_eq!(record["workspace"]["snapshotRef"], Value::Null);
    let copy = record["workspace"]["path"].as_str().unwrap();
    let prompt = fs::read_to_string(run.join("prompts/kimi-worker-reverify-r1.md")).unwrap();
    assert_names_only_its_copy(&prompt, copy, &project);
    // The copy honoured the ignore rules and left okstra's folder out.
    let seen = fs::read_to_string(world.path("fake/cwd-kimi.txt")).unwrap();
    assert!(seen.lines().any(|name| name == "src"), "{seen}");
    assert!(
        !seen
            .lines()
            .any(|name| name == "secret.env" || name == ".okstra"),
        "{seen}"
    );
    let report = read_json(&run.join("report/data.json"));
    let kimi = report["workerCoverage"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["workerId"] == "kimi")
        .unwrap()
        .clone();
    assert!(
        kimi["notes"][0].as_str().unwrap().contains("file copy"),
        "{kimi}"
    );
    let markdown = fs::read_to_string(run.join("report/final-report.md")).unwrap();
    assert!(markdown.contains("file copy of the project"), "{markdown}");
}

/// A project outside git, one kimi analyser on the fake team, contained by
/// copies.
fn kimi_project(task_id: &str) -> (Project, PathBuf) {
    let world = Project::new().key("demo", "big", task_id).copies();
    world.fake_cli("kimi", "workers/team.py");
    fs::create_dir(world.root().join("src")).unwrap();
    fs::write(world.root().join("src/a.py"), "print('a')\n").unwrap();
    let run = world.render(&[
        "--task-type",
        "project-analysis",
        "--workers",
        "kimi",
        "--lead-runtime",
        "external",
    ]);
    (world, run)
}

/// A sparse file of `bytes`: as large as it says, without the disk.
fn sparse(path: &Path, bytes: u64) {
    fs::File::create(path).unwrap().set_len(bytes).unwrap();
}

#[test]
fn a_project_outside_git_too_large_to_copy_is_refused_unless_allowed() {
    const OVER: u64 = 600 * 1024 * 1024;
    // Ignored, the big file does not count: the copy is made.
    let (world, run) = kimi_project("ignored");
    fs::write(world.root().join(".ignore"), "data/\n").unwrap();
    fs::create_dir(world.root().join("data")).unwrap();
    sparse(&world.root().join("data/dump.bin"), OVER);
    let done = world
        .okstra()
        .args(["dispatch", "--workers", "kimi"])
        .arg(&run)
        .output()
        .unwrap();
    assert_eq!(
        done.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert_eq!(attempts(&run, "kimi-worker")[0]["isolation"], "file-copy");

    // Counted, it is refused with one line, and nothing is started or copied.
    let (world, run) = kimi_project("refused");
    sparse(&world.root().join("dump.bin"), OVER);
    let refused = world
        .okstra()
        .args(["dispatch", "--workers", "kimi"])
        .arg(&run)
        .env("FAKE_SCRIBBLE", "kimi")
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("cannot isolate"))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains("more than 512 MiB after its ignore rules")
            && lines[0].contains("pass `--allow-unisolated`"),
        "{stderr}"
    );
    let record = &attempts(&run, "kimi-worker")[0];
    assert_eq!(record["ending"], "usage-error", "{record}");
    assert!(
        record["detail"]
            .as_str()
            .unwrap()
            .contains("--allow-unisolated")
    );
    assert!(!Path::new(record["workspace"]["path"].as_str().unwrap()).exists());
    assert!(!world.path("fake/escape-kimi.log").exists());
    assert!(
        !world.root().join("scribbled.txt").exists(),
        "kimi never ran"
    );

    // `--allow-unisolated`: it runs in the project itself, and says so.
    let (world, run) = kimi_project("allowed");
    sparse(&world.root().join("dump.bin"), OVER);
    let allowed = world
        .okstra()
        .args(["dispatch", "--workers", "kimi", "--allow-unisolated"])
        .arg(&run)
        .env("FAKE_SCRIBBLE", "kimi")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&allowed.stderr);
    assert_eq!(allowed.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("not isolated (`--allow-unisolated`)"),
        "{stderr}"
    );
    let record = &attempts(&run, "kimi-worker")[0];
    assert_eq!(record["isolation"], "none", "{record}");
    assert_eq!(record["workspace"]["kind"], "none", "{record}");
    assert!(world.root().join("scribbled.txt").is_file());
    let link = Path::new(record["workspace"]["path"].as_str().unwrap());
    assert!(
        link.symlink_metadata().is_err(),
        "the in-place link is gone"
    );
}

/// Lets a `waits-for-go.sh` CLI finish when dropped, so a failing test
/// leaves no wrapper waiting.
struct Go(PathBuf);

impl Drop for Go {
    fn drop(&mut self) {
        let _ = fs::write(&self.0, "");
    }
}

/// A sidecar's JSON, once it exists and parses.
fn sidecar(path: &Path) -> Option<Value> {
    serde_json::from_slice(&fs::read(path).ok()?).ok()
}

#[test]
fn reap_removes_the_copy_a_killed_dispatcher_left_and_nothing_else() {
    let world = Project::new().key("demo", "reap", "t").copies();
    world.fake_cli("kimi", "providers/waits-for-go.sh");
    fs::write(world.root().join("a.txt"), "tracked\n").unwrap();
    commit_all(world.root());
    let run = world.render(&[
        "--task-type",
        "project-analysis",
        "--workers",
        "kimi",
        "--lead-runtime",
        "external",
    ]);
    let mut command = world.command(okstra_path());
    command
        .args(["dispatch", "--workers", "kimi"])
        .arg(&run)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let go = Go(world.path("fake/go"));
    let mut dispatcher = Group::start(command);
    let side = run.join("prompts/kimi-worker.md.status.json");
    let (copy, wrapper) = wait_for(limit(), "kimi to start in its copy", || {
        let status = sidecar(&side)?;
        status.get("child_pid")?;
        let state = read_json(&team_state_path(&run));
        let copy = state["dispatches"][0]["workspace"]["path"]
            .as_str()?
            .to_owned();
        Path::new(&copy)
            .join(".okstra-workspace.json")
            .is_file()
            .then(|| (PathBuf::from(copy), status["pid"].as_i64().unwrap()))
    });
    // The dispatcher is killed outright; its wrapper (own group) goes on.
    dispatcher.signal(nix::sys::signal::Signal::SIGKILL);
    dispatcher.wait(limit());
    let before = UserTree::of(world.root());

    // Decoys the reaper must leave alone: another folder among the run's
    // copies, and a record (as a hostile file could hold) that names a
    // folder without a marker, with a dead dispatcher.
    let neighbour = copy.with_file_name("someone-else");
    fs::create_dir_all(&neighbour).unwrap();
    fs::write(neighbour.join("keep.txt"), "mine\n").unwrap();
    let decoy = world.path("decoy");
    fs::create_dir_all(&decoy).unwrap();
    fs::write(decoy.join("keep.txt"), "mine\n").unwrap();
    let state_path = team_state_path(&run);
    let mut state = read_json(&state_path);
    let mut ghost = state["dispatches"][0].clone();
    ghost["dispatchName"] = "ghost".into();
    ghost["dispatcherPid"] = 999_999_999.into();
    ghost["sidecarPath"] = Value::Null;
    ghost["workspace"]["path"] = decoy.to_str().unwrap().into();
    state["dispatches"].as_array_mut().unwrap().push(ghost);
    fs::write(&state_path, serde_json::to_vec_pretty(&state).unwrap()).unwrap();

    let reap = |world: &Project, execute: bool| {
        let mut args = vec!["reap", "--json"];
        if execute {
            args.push("--execute");
        }
        let output = world.okstra().args(&args).output().unwrap();
        serde_json::from_slice::<Value>(&output.stdout).unwrap()
    };
    // While its wrapper still runs in it, the copy stays: a dry run plans to
    // stop the wrapper its dead dispatcher left, not to remove the copy.
    let first = reap(&world, false);
    assert!(copy.is_dir(), "removed while in use: {first}");
    assert!(
        !first["copies"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["path"] == copy.to_str().unwrap()),
        "{first}"
    );
    assert!(
        first["actions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["action"] == "stop-wrapper" && a["wrapperPid"] == wrapper),
        "{first}"
    );
    // Carried out: the orphaned wrapper is stopped (its attempt recorded
    // cancelled, so a resume runs it again), then its copy removed.
    let second = reap(&world, true);
    drop(go);
    assert_eq!(
        read_json(&state_path)["dispatches"][0]["ending"],
        "cancelled",
        "{second}"
    );
    let copies = second["copies"].as_array().unwrap();
    let mine = copies
        .iter()
        .find(|c| c["path"] == copy.to_str().unwrap())
        .unwrap_or_else(|| panic!("the copy was not reaped: {second}"));
    assert_eq!(mine["outcome"], "removed", "{second}");
    assert!(!copy.exists());
    let ghost = copies
        .iter()
        .find(|c| c["path"] == decoy.to_str().unwrap())
        .unwrap_or_else(|| panic!("the decoy was not considered: {second}"));
    assert!(
        ghost["outcome"].as_str().unwrap().starts_with("skipped: "),
        "{second}"
    );
    assert_eq!(
        fs::read_to_string(decoy.join("keep.txt")).unwrap(),
        "mine\n"
    );
    assert_eq!(
        fs::read_to_string(neighbour.join("keep.txt")).unwrap(),
        "mine\n"
    );
    assert_eq!(UserTree::of(world.root()), before);
    assert_eq!(
        snapshot_refs(world.root()).len(),
        1,
        "the snapshot ref stays"
    );
}

/// The issue's SIGKILL case for `okstra cleanup`: once the wrapper a killed
/// dispatcher left has ended, `cleanup --execute` removes the copy and the
/// run's snapshot ref, and nothing else: not a neighbouring folder, not a
/// file, ref, index entry or `HEAD` of the user's.
#[test]
fn cleanup_removes_the_copy_a_killed_dispatcher_left_and_nothing_else() {
    let world = Project::new().key("demo", "cleanup", "t").copies();
    world.fake_cli("kimi", "providers/waits-for-go.sh");
    fs::write(world.root().join("a.txt"), "tracked\n").unwrap();
    commit_all(world.root());
    let run = world.render(&[
        "--task-type",
        "project-analysis",
        "--workers",
        "kimi",
        "--lead-runtime",
        "external",
    ]);
    let mut command = world.command(okstra_path());
    command
        .args(["dispatch", "--workers", "kimi"])
        .arg(&run)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let go = Go(world.path("fake/go"));
    let mut dispatcher = Group::start(command);
    let side = run.join("prompts/kimi-worker.md.status.json");
    let copy = wait_for(limit(), "kimi to start in its copy", || {
        sidecar(&side)?.get("child_pid")?;
        let state = read_json(&team_state_path(&run));
        let copy = PathBuf::from(state["dispatches"][0]["workspace"]["path"].as_str()?);
        copy.join(".okstra-workspace.json")
            .is_file()
            .then_some(copy)
    });
    dispatcher.signal(nix::sys::signal::Signal::SIGKILL);
    dispatcher.wait(limit());
    let neighbour = copy.with_file_name("someone-else");
    fs::create_dir_all(&neighbour).unwrap();
    fs::write(neighbour.join("keep.txt"), "mine\n").unwrap();
    let cleanup = |execute: bool| -> Value {
        let mut args = vec!["cleanup", "--json", "--older-than", "0s"];
        if execute {
            args.push("--execute");
        }
        let output = world.okstra().args(&args).output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).unwrap()
    };
    // While the orphaned wrapper runs, the run is skipped, copy and all.
    let busy = cleanup(false);
    assert!(busy["items"].as_array().unwrap().is_empty(), "{busy}");
    assert!(
        busy["skipped"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("has not ended"),
        "{busy}"
    );
    drop(go);
    let listed = wait_for(limit(), "the orphaned wrapper to end", || {
        let listed = cleanup(false);
        (!listed["items"].as_array().unwrap().is_empty()).then_some(listed)
    });
    assert!(copy.is_dir(), "a dry run removed the copy: {listed}");
    let before = UserTree::of(world.root());
    let removed = cleanup(true);
    let kinds: Vec<&str> = removed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            assert_eq!(item["outcome"], "removed", "{removed}");
            item["kind"].as_str().unwrap()
        })
        .collect();
    assert!(
        kinds.contains(&"copy") && kinds.contains(&"snapshot-ref"),
        "{removed}"
    );
    assert!(!copy.exists());
    assert!(snapshot_refs(world.root()).is_empty());
    assert_eq!(
        fs::read_to_string(neighbour.join("keep.txt")).unwrap(),
        "mine\n"
    );
    assert_eq!(UserTree::of(world.root()), before);
    assert!(
        run.join("run-manifest.json").is_file(),
        "the run folder went"
    );
}

#[test]
fn pass_env_reaches_every_cli_through_dispatch() {
    let world = Project::new().key("demo", "env", "t");
    world.fake_cli("kimi", "providers/record.sh");
    let run = world.render(&[
        "--task-type",
        "project-analysis",
        "--workers",
        "kimi",
        "--lead-runtime",
        "external",
    ]);
    let output = world
        .okstra()
        .args([
            "dispatch",
            "--workers",
            "kimi",
            "--pass-env",
            "FAKE_DIR",
            "--pass-env",
            "GITHUB_TOKEN",
        ])
        .arg(&run)
        .env("GITHUB_TOKEN", "ghp")
        .env("OPENAI_API_KEY", "sk-openai")
        .env("MOONSHOT_API_KEY", "moon")
        .output()
        .unwrap();
    assert!(output.status.code().is_some());
    let env = fs::read_to_string(world.path("fake/env")).unwrap();
    for kept in ["GITHUB_TOKEN=ghp", "MOONSHOT_API_KEY=moon"] {
        assert!(env.lines().any(|l| l == kept), "{kept} missing:\n{env}");
    }
    assert!(!env.contains("OPENAI_API_KEY"), "{env}");
    // A name that is not one is refused before anything starts.
    let refused = world
        .okstra()
        .args(["dispatch", "--workers", "kimi", "--pass-env", "NOT-A-NAME"])
        .arg(&run)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&refused.stderr),
        "error: invalid value for `--pass-env`: `NOT-A-NAME` is not an environment variable name: expected one like `AWS_PROFILE`, or a prefix ending in `*` like `AWS_*`\n"
    );
}
