//! Integration tests: an implementation run's Executor works on a branch,
//! and its change reaches the user's working tree only through
//! `okstra land`'s gate; `okstra cleanup` removes what okstra left and
//! nothing else. Real git in temporary repositories; the fake team
//! (`tests/fixtures/workers/team.py`) plays every CLI.

use std::fs;
use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::containment::UserTree;
use crate::run::{IMPLEMENTATION, attempts, run_dir, run_with, team_project};
use crate::support::{Group, Project, commit_all, git, limit, read_json, team_state_path};

/// The branch of the first implementation run of the team project.
const BRANCH: &str = "refs/heads/okstra/demo/review/reservations/implementation-001";

/// The team project in git, with work of the user's own in flight (an
/// untracked file), and an implementation run carried out: the Executor
/// changes `src/inventory.py` and `src/server.py`, its fix pass changes
/// `src/inventory.py` once more, the verifiers check the fix.
fn landable(env: &[(&str, &str)]) -> (Project, PathBuf) {
    let world = team_project();
    commit_all(world.root());
    fs::write(world.root().join("notes.md"), "mine, not committed\n").unwrap();
    let env = [&[("FAKE_EDIT", "2"), ("FAKE_FIX_EDIT", "1")], env].concat();
    let (outcome, code, stderr) = run_with(&world, IMPLEMENTATION, &env);
    assert_eq!(code, 0, "{stderr}");
    // The fix check is said in words, as every lead event is.
    assert!(
        stderr.contains("okstra: fix check: 2 verifier(s) check the Executor's fix of "),
        "{stderr}"
    );
    assert!(!stderr.contains("PROGRESS:"), "{stderr}");
    (world, run_dir(&outcome))
}

/// `okstra land <run> [extra…]`: exit code, stdout, stderr.
fn land(world: &Project, run: &Path, extra: &[&str]) -> (i32, String, String) {
    let output = world
        .okstra()
        .arg("land")
        .arg(run)
        .args(extra)
        .output()
        .unwrap();
    (
        output.status.code().unwrap(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The reason words of `okstra land`'s stdout.
fn reasons(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter_map(|line| line.split_once(": ").map(|(word, _)| word))
        .collect()
}

/// What `commit` holds at `path` in the user's repository.
fn at(project: &Path, commit: &str, path: &str) -> String {
    git(project, &["show", &format!("{commit}:{path}")])
}

#[test]
fn an_executor_change_reaches_the_project_only_through_land() {
    let world = team_project();
    let project = world.root().to_path_buf();
    commit_all(&project);
    fs::write(project.join("notes.md"), "mine, not committed\n").unwrap();
    let before = UserTree::of(&project);
    let (outcome, code, stderr) = run_with(
        &world,
        IMPLEMENTATION,
        &[("FAKE_EDIT", "2"), ("FAKE_FIX_EDIT", "1")],
    );
    assert_eq!(code, 0, "{stderr}");
    let run = run_dir(&outcome);
    assert_eq!(
        UserTree::of(&project),
        before,
        "the run changed the user's tree"
    );

    // The Executor worked in its copy (confined to it by Landlock), whose
    // path its prompt names, and okstra put its change on the run's branch.
    let executor = attempts(&run, "claude-executor");
    assert_eq!(executor[0]["isolation"], "landlock", "{executor:?}");
    assert_eq!(executor[0]["workspace"]["kind"], "git-copy", "{executor:?}");
    let copy = executor[0]["workspace"]["path"].as_str().unwrap();
    let prompt = fs::read_to_string(run.join("prompts/claude-executor.md")).unwrap();
    assert!(
        prompt.contains(&format!("**Project root:** `{copy}`")),
        "{prompt}"
    );
    assert_eq!(executor[0]["branch"]["name"], BRANCH);
    let first = executor[0]["branch"]["commit"].as_str().unwrap().to_owned();
    let tip = executor[1]["branch"]["commit"].as_str().unwrap().to_owned();
    assert_ne!(first, tip, "the fix pass changed the code");
    assert_eq!(git(&project, &["rev-parse", BRANCH]).trim(), tip);
    let message = git(&project, &["log", "-1", "--format=%B", &first]);
    assert!(
        message.starts_with("okstra: demo/review/reservations implementation-001"),
        "{message}"
    );
    // Each verifier checked exactly the Executor's first commit, shown as
    // the change from the snapshot, reading the Executor's copy (kimi under
    // Landlock, codex under its own sandbox).
    for (name, isolation) in [
        ("codex-verifier", "git-copy"),
        ("kimi-verifier", "landlock"),
    ] {
        let record = &attempts(&run, name)[0];
        assert_eq!(record["isolation"], isolation, "{record}");
        assert_eq!(record["workspace"]["path"], copy, "{record}");
        assert_eq!(record["workspace"]["commit"], first.as_str(), "{record}");
        let result = fs::read_to_string(run.join(format!("results/{name}.md"))).unwrap();
        assert!(
            result.contains("git-diff-shows-executor-change"),
            "{result}"
        );
    }
    // The fix pass changed the code, so each verifier checked its diff, on
    // its commit, before the report was written.
    for name in ["codex-verifier-fix-check", "kimi-verifier-fix-check"] {
        let record = &attempts(&run, name)[0];
        assert_eq!(record["ending"], "completed", "{record}");
        assert_eq!(record["dispatchKind"], "fix-check", "{record}");
        assert_eq!(record["workspace"]["commit"], tip.as_str(), "{record}");
        let result = fs::read_to_string(run.join(format!("results/{name}.md"))).unwrap();
        assert!(result.contains("| FIXED | git-diff-shows-fix"), "{result}");
    }
    let events = fs::read_to_string(run.join("state/lead-events.jsonl")).unwrap();
    let position = |needle: &str| {
        events
            .find(needle)
            .unwrap_or_else(|| panic!("no {needle}:\n{events}"))
    };
    assert!(position("\"fix-pass\"") < position("\"fix-check\""));
    assert!(position("\"fix-check\"") < position("codex-verifier-fix-check"));
    assert!(position("codex-verifier-fix-check") < position("\"usage-collected\""));
    assert_eq!(outcome["landing"]["state"], "landable", "{outcome}");
    let report = read_json(&run.join("report/data.json"));
    assert_eq!(report["landing"]["state"], "landable", "{report}");

    // The gate: landable, the two files written, nothing else.
    let (code, stdout, stderr) = land(&world, &run, &["--check"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(stdout, "write src/inventory.py\nwrite src/server.py\n");
    assert_eq!(UserTree::of(&project), before, "--check wrote");
    // The same, as the versioned answer a script reads.
    let (code, stdout, stderr) = land(&world, &run, &["--check", "--json"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let answer: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(answer["schemaVersion"], 1, "{answer}");
    assert_eq!(answer["state"], "landable", "{answer}");
    assert_eq!(answer["ancestry"], "ahead", "{answer}");
    assert_eq!(answer["reasons"], serde_json::json!([]), "{answer}");
    assert_eq!(
        answer["files"],
        serde_json::json!([
            {"path": "src/inventory.py", "action": "write"},
            {"path": "src/server.py", "action": "write"}
        ]),
        "{answer}"
    );
    let (code, stdout, stderr) = land(&world, &run, &[]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    for path in ["src/inventory.py", "src/server.py"] {
        assert_eq!(
            fs::read_to_string(project.join(path)).unwrap(),
            at(&project, &tip, path),
            "{path}"
        );
    }
    let after = UserTree::of(&project);
    let changed: Vec<&PathBuf> = after
        .files
        .iter()
        .filter(|file| !before.files.contains(file))
        .map(|(path, _)| path)
        .collect();
    assert_eq!(
        changed,
        [Path::new("src/inventory.py"), Path::new("src/server.py")]
    );
    assert_eq!(after.files.len(), before.files.len());
    assert_eq!(after.refs, before.refs, "a ref outside okstra's moved");
    assert_eq!(
        after.git_files, before.git_files,
        "HEAD, index or config changed"
    );
    let state = read_json(&team_state_path(&run));
    assert_eq!(state["landing"]["state"], "landed");
    assert_eq!(state["landing"]["commit"], tip.as_str());
    let report = read_json(&run.join("report/data.json"));
    assert_eq!(report["landing"]["state"], "landed", "{report}");
    let status = world.okstra().arg("status").arg(&run).output().unwrap();
    let board = String::from_utf8_lossy(&status.stdout);
    assert!(
        board.contains("landing: landed `okstra/demo/review/reservations/implementation-001`"),
        "{board}"
    );
    // Landing again lands nothing more, and says so: no `write <file>`
    // line for a file it did not write.
    let (code, stdout, stderr) = land(&world, &run, &[]);
    assert_eq!(code, 0);
    assert_eq!(stdout, "", "{stdout}");
    assert!(
        stderr.contains("has already landed (2 files then); nothing was written now"),
        "{stderr}"
    );
    let (code, stdout, stderr) = land(&world, &run, &["--json"]);
    assert_eq!(code, 0, "{stderr}");
    let answer: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(answer["state"], "already-landed", "{answer}");
    assert_eq!(answer["commit"], tip.as_str(), "{answer}");
    assert_eq!(
        answer["files"].as_array().map(Vec::len),
        Some(2),
        "{answer}"
    );
}

#[test]
fn an_uncommitted_edit_to_a_changed_file_blocks_landing_and_nothing_is_written() {
    let (world, run) = landable(&[]);
    let project = world.root();
    let server = project.join("src/server.py");
    fs::write(
        &server,
        fs::read_to_string(&server).unwrap() + "# the user's edit\n",
    )
    .unwrap();
    let before = UserTree::of(project);
    let (code, stdout, stderr) = land(&world, &run, &[]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert_eq!(reasons(&stdout), ["dirty-overlap"], "{stdout}");
    assert!(stdout.starts_with("dirty-overlap: `src/server.py` has uncommitted edits"));
    assert!(stderr.contains("error: nothing landed from"), "{stderr}");
    let (code, stdout, _) = land(&world, &run, &["--json"]);
    assert_eq!(code, 1, "{stdout}");
    let answer: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(answer["state"], "blocked", "{answer}");
    assert_eq!(answer["reasons"][0]["reason"], "dirty-overlap", "{answer}");
    assert_eq!(UserTree::of(project), before, "something was written");
    assert!(read_json(&team_state_path(&run)).get("landing").is_none());
}

#[test]
fn a_switch_to_an_unrelated_history_blocks_landing() {
    let (world, run) = landable(&[]);
    let project = world.root();
    git(project, &["checkout", "-q", "--orphan", "elsewhere"]);
    git(project, &["rm", "-q", "-r", "--cached", "."]);
    fs::write(project.join("other.txt"), "another history\n").unwrap();
    git(project, &["add", "other.txt"]);
    git(project, &["commit", "-q", "-m", "unrelated"]);
    let before = UserTree::of(project);
    let (code, stdout, _) = land(&world, &run, &["--check"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(reasons(&stdout).contains(&"base-not-ancestor"), "{stdout}");
    let (code, stdout, _) = land(&world, &run, &[]);
    assert_eq!(code, 1, "{stdout}");
    assert_eq!(UserTree::of(project), before);
}

#[test]
fn a_user_commit_to_a_changed_file_is_merged_three_way_or_refused_as_a_conflict() {
    let (world, run) = landable(&[]);
    let project = world.root().to_path_buf();
    let inventory = project.join("src/inventory.py");
    let original = fs::read_to_string(&inventory).unwrap();
    // A commit that appends where the Executor appended: no merge.
    fs::write(
        &inventory,
        original.clone() + "# the user's own last line\n",
    )
    .unwrap();
    git(&project, &["commit", "-q", "-am", "append"]);
    let before = UserTree::of(&project);
    let (code, stdout, stderr) = land(&world, &run, &[]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert_eq!(reasons(&stdout), ["conflict"], "{stdout}");
    assert!(stdout.contains("`src/inventory.py`"), "{stdout}");
    assert_eq!(UserTree::of(&project), before, "something was written");

    // A commit that changes the first line instead merges.
    git(&project, &["reset", "-q", "--hard", "HEAD~1"]);
    let retitled = original.replacen("In-memory", "In-memory (v2)", 1);
    assert_ne!(retitled, original);
    fs::write(&inventory, &retitled).unwrap();
    git(&project, &["commit", "-q", "-am", "retitle"]);
    let (code, stdout, stderr) = land(&world, &run, &[]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(stdout, "merge src/inventory.py\nwrite src/server.py\n");
    let merged = fs::read_to_string(&inventory).unwrap();
    assert!(merged.starts_with("\"\"\"In-memory (v2)"), "{merged}");
    assert!(
        merged.ends_with("# okstra-fake-change\n# okstra-fake-fix\n"),
        "{merged}"
    );
    // The user's commit stays the user's: nothing was committed.
    assert_eq!(
        git(&project, &["log", "-1", "--format=%s"]).trim(),
        "retitle"
    );
}

/// A verifier confirms a `blocking` defect; the fix pass changes the code
/// but the verifiers find it not fixed: the change may not land.
#[test]
fn a_confirmed_blocking_defect_the_fix_pass_does_not_fix_keeps_the_change_out() {
    let (world, run) = landable(&[("FAKE_BLOCKING", "1"), ("FAKE_FIX_CHECK", "not-fixed")]);
    let request = fs::read_to_string(run.join("state/fix-request.md")).unwrap();
    assert!(request.contains("| blocking |"), "{request}");
    let before = UserTree::of(world.root());
    let (code, stdout, _) = land(&world, &run, &[]);
    assert_eq!(code, 1, "{stdout}");
    assert_eq!(reasons(&stdout), ["defects-open"], "{stdout}");
    assert!(stdout.contains("`codex:D-001`"), "{stdout}");
    assert_eq!(UserTree::of(world.root()), before);
    let report = read_json(&run.join("report/data.json"));
    assert_eq!(report["landing"]["state"], "blocked", "{report}");
    assert_eq!(report["landing"]["reasons"][0]["reason"], "defects-open");
}

/// A fix pass that changed nothing fixed nothing: its defects stay open,
/// and there is no fix check to run.
#[test]
fn a_fix_pass_that_changes_nothing_leaves_its_defects_open() {
    let world = team_project();
    commit_all(world.root());
    let (outcome, code, stderr) = run_with(&world, IMPLEMENTATION, &[("FAKE_EDIT", "1")]);
    assert_eq!(code, 0, "{stderr}");
    let run = run_dir(&outcome);
    assert!(attempts(&run, "codex-verifier-fix-check").is_empty());
    let (code, stdout, _) = land(&world, &run, &["--check"]);
    assert_eq!(code, 1, "{stdout}");
    assert_eq!(
        stdout,
        "defects-open: 2 confirmed blocking or major defects are not fixed: `codex:D-001`, `kimi:D-001`\n"
    );
}

/// A fix pass whose check did not run yet: `fix-unverified`.
#[test]
fn a_fix_pass_whose_change_nobody_checked_is_not_landable() {
    let (world, run) = landable(&[]);
    // As if the check had never run: its records and plan gone.
    let path = team_state_path(&run);
    let mut state = read_json(&path);
    state["dispatches"]
        .as_array_mut()
        .unwrap()
        .retain(|r| !r["dispatchName"].as_str().unwrap().ends_with("-fix-check"));
    fs::write(&path, serde_json::to_vec_pretty(&state).unwrap()).unwrap();
    fs::remove_file(run.join("state/fix-check.json")).unwrap();
    let (code, stdout, _) = land(&world, &run, &["--check"]);
    assert_eq!(code, 1, "{stdout}");
    assert_eq!(reasons(&stdout), ["fix-unverified"], "{stdout}");
}

#[test]
fn an_implementation_run_outside_git_is_refused_when_rendered() {
    let world = team_project();
    let output = world.render_command(&IMPLEMENTATION[..4]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: an implementation run needs a git repository: "),
        "{stderr}"
    );
    assert!(!world.okstra_dir().join("tasks").exists());
}

/// A native Executor runs in the host's session: okstra makes its copy
/// when the dispatch is recorded, names it in its prompt, and fails the
/// attempt when the user's tree changed meanwhile.
#[test]
fn a_native_executor_that_writes_into_the_users_tree_fails() {
    let world = team_project();
    let project = world.root().to_path_buf();
    commit_all(&project);
    let flags = [
        "--task-type",
        "implementation",
        "--lead-runtime",
        "claude-code",
        "--executor",
        "claude",
        "--workers",
        "codex,report-writer",
    ];
    // One attempt that keeps to its copy, one that does not.
    for (task, escapes) in [("keeps", false), ("escapes", true)] {
        let run = world.render(&[&flags[..], &["--task-id", task]].concat());
        let manifest = read_json(&run.join("run-manifest.json"));
        let executor = manifest["assignments"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["role"] == "executor")
            .unwrap()
            .clone();
        assert_eq!(executor["runner"], "native-session");
        let dispatched = world.okstra().arg("dispatch").arg(&run).output().unwrap();
        assert_eq!(
            dispatched.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&dispatched.stderr)
        );
        let record = attempts(&run, "claude-executor")[0].clone();
        let copy = PathBuf::from(record["workspace"]["path"].as_str().unwrap());
        assert!(copy.join(".okstra-workspace.json").is_file(), "{record}");
        let prompt = fs::read_to_string(executor["promptPath"].as_str().unwrap()).unwrap();
        assert!(
            prompt.contains(&format!("**Project root:** `{}`", copy.display())),
            "{prompt}"
        );
        // The host's session does its work.
        let target = if escapes { &project } else { &copy };
        let file = target.join("src/inventory.py");
        fs::write(
            &file,
            fs::read_to_string(&file).unwrap() + "# the native Executor\n",
        )
        .unwrap();
        fs::write(
            executor["resultPath"].as_str().unwrap(),
            "# claude — implementation result (Executor)\n",
        )
        .unwrap();
        let awaited = world
            .okstra()
            .args(["await", "--workers", "claude", "--json"])
            .arg(&run)
            .output()
            .unwrap();
        let record = attempts(&run, "claude-executor")[0].clone();
        if escapes {
            assert_eq!(awaited.status.code(), Some(1));
            assert_eq!(record["ending"], "crash", "{record}");
            let detail = record["detail"].as_str().unwrap();
            assert!(
                detail.starts_with("the Executor changed the user's repository (its working tree)"),
                "{detail}"
            );
            assert!(record["branch"].get("commit").is_none(), "{record}");
            assert_eq!(
                git(
                    &project,
                    &["for-each-ref", "refs/heads/okstra/demo/review/escapes/"]
                )
                .trim(),
                "",
                "a branch was made"
            );
            let (code, stdout, _) = land(&world, &run, &["--check"]);
            assert_eq!(code, 1);
            assert_eq!(reasons(&stdout), ["verification-incomplete"], "{stdout}");
        } else {
            assert_eq!(awaited.status.code(), Some(0), "{record}");
            assert_eq!(record["ending"], "completed", "{record}");
            let tip = record["branch"]["commit"].as_str().unwrap();
            assert!(at(&project, tip, "src/inventory.py").ends_with("# the native Executor\n"));
        }
    }
}

/// `okstra cleanup` lists, then removes, a finished run's copy, snapshot
/// ref and landed branch; it never touches a user branch, a run branch
/// whose tip moved, or a run whose lease is held.
#[test]
fn cleanup_removes_what_okstra_left_and_never_a_user_branch() {
    let (world, landed) = landable(&[]);
    let project = world.root().to_path_buf();
    let (code, stdout, stderr) = land(&world, &landed, &[]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    git(&project, &["branch", "feature"]);
    // A second run whose branch the user took over (committed on it).
    fs::remove_file(project.join("src/inventory.py")).unwrap();
    git(&project, &["checkout", "-q", "--", "src/inventory.py"]);
    let (outcome, code, stderr) = run_with(
        &world,
        IMPLEMENTATION,
        &[("FAKE_EDIT", "1"), ("FAKE_FIX_EDIT", "1")],
    );
    assert_eq!(code, 0, "{stderr}");
    let taken = run_dir(&outcome);
    let taken_branch = "refs/heads/okstra/demo/review/reservations/implementation-002";
    let tip = git(&project, &["rev-parse", taken_branch])
        .trim()
        .to_owned();
    let tree = git(&project, &["rev-parse", &format!("{tip}^{{tree}}")])
        .trim()
        .to_owned();
    let moved = git(&project, &["commit-tree", &tree, "-p", &tip, "-m", "mine"])
        .trim()
        .to_owned();
    git(&project, &["update-ref", taken_branch, &moved]);

    let copy = |run: &Path| {
        PathBuf::from(
            attempts(run, "claude-executor")[0]["workspace"]["path"]
                .as_str()
                .unwrap(),
        )
    };
    let snapshot_refs = || {
        git(
            &project,
            &["for-each-ref", "--format=%(refname)", "refs/okstra/"],
        )
    };
    assert!(copy(&landed).is_dir() && copy(&taken).is_dir());
    assert_eq!(snapshot_refs().lines().count(), 2);
    // By default a run that just finished keeps its logs (they say what
    // happened): only a run idle for `--older-than` loses them.
    let fresh = world.okstra().arg("cleanup").output().unwrap();
    let fresh = String::from_utf8_lossy(&fresh.stdout);
    assert!(!fresh.contains("would remove log "), "{fresh}");
    assert!(
        fresh.contains("kept the logs of 2 finished runs active within `--older-than`"),
        "{fresh}"
    );
    let cleanup = |extra: &[&str]| -> Value {
        let output = world
            .okstra()
            .args([&["cleanup", "--json", "--older-than", "0s"], extra].concat())
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).unwrap()
    };
    let targets = |report: &Value, kind: &str| -> Vec<String> {
        report["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["kind"] == kind)
            .map(|i| i["target"].as_str().unwrap().to_owned())
            .collect()
    };

    // The second run's lease is held: it is left alone.
    let lease = taken.join("state/run.lease");
    let holder = Group::spawn(&["flock", lease.to_str().unwrap(), "sleep", "120"]);
    crate::support::wait_for(limit(), "the lease to be taken", || {
        let status = world.okstra().args(["cleanup", "--json"]).output().unwrap();
        let report: Value = serde_json::from_slice(&status.stdout).unwrap();
        report["skipped"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["reason"].as_str().unwrap().contains("lease is held"))
            .then_some(())
    });
    let listed = cleanup(&[]);
    assert!(
        !listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["runDir"] == taken.to_str().unwrap()),
        "{listed}"
    );
    // A dry run lists, and removes nothing.
    assert_eq!(targets(&listed, "copy"), [copy(&landed).to_str().unwrap()]);
    assert_eq!(targets(&listed, "branch"), [BRANCH]);
    assert_eq!(targets(&listed, "snapshot-ref").len(), 1);
    assert!(copy(&landed).is_dir());
    assert!(
        git(&project, &["rev-parse", "--verify", "-q", BRANCH])
            .trim()
            .len()
            >= 40
    );
    let removed = cleanup(&["--execute"]);
    for item in removed["items"].as_array().unwrap() {
        assert_eq!(item["outcome"], "removed", "{removed}");
    }
    assert!(!copy(&landed).exists());
    assert!(copy(&taken).is_dir(), "the leased run was touched");
    assert_eq!(snapshot_refs().lines().count(), 1);
    // The whole group: `sleep` holds the lock `flock` took.
    drop(holder);

    // Free again: its copy and snapshot ref go; its branch, moved since
    // okstra made it, stays, and so does every branch of the user's.
    let removed = cleanup(&["--execute"]);
    assert_eq!(targets(&removed, "copy"), [copy(&taken).to_str().unwrap()]);
    assert!(targets(&removed, "branch").is_empty(), "{removed}");
    assert!(!copy(&taken).exists());
    // No empty folder is left where the copies were.
    let copies_folder = copy(&taken).ancestors().nth(5).unwrap().to_path_buf();
    assert!(!copies_folder.exists(), "{removed}");
    assert!(!targets(&removed, "folder").is_empty(), "{removed}");
    assert_eq!(snapshot_refs(), "");
    let branches = git(
        &project,
        &["for-each-ref", "--format=%(refname)", "refs/heads/"],
    );
    assert_eq!(
        branches.lines().collect::<Vec<_>>(),
        ["refs/heads/feature", "refs/heads/main", taken_branch]
    );
    assert_eq!(git(&project, &["rev-parse", taken_branch]).trim(), moved);
}
