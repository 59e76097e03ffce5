//! Both snapshot readers on real files and a real git repository: what they
//! read, what they refuse, and that a snapshot does not change when the
//! user edits the project after it was taken.

use std::os::unix::fs::symlink;
use std::process::Command;

use super::*;

fn git_in(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// A project with a source file, a folder, a link inside, a link out, a
/// dangling link out, a link to a folder, and a large file.
fn project() -> (tempfile::TempDir, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret.txt"), "outside\n").unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join("src/deep")).unwrap();
    fs::write(root.join("src/a.py"), "x = 1\ny = 2\n").unwrap();
    fs::write(root.join("src/deep/b.py"), "z = 3\n").unwrap();
    symlink("a.py", root.join("src/inside.py")).unwrap();
    symlink(outside.path().join("secret.txt"), root.join("src/out.txt")).unwrap();
    symlink("../../nowhere/x", root.join("src/dangling.txt")).unwrap();
    symlink("deep", root.join("src/linked")).unwrap();
    let big = fs::File::create(root.join("big.bin")).unwrap();
    big.set_len(fsread::Kind::Source.limit() + 1).unwrap();
    (dir, outside)
}

fn expect_reads(snapshot: &dyn Snapshot) {
    snapshot.prefetch(&[
        "src/a.py",
        "src/inside.py",
        "src/linked/b.py",
        "src/out.txt",
    ]);
    assert_eq!(snapshot.read("src/a.py").unwrap(), b"x = 1\ny = 2\n");
    assert_eq!(snapshot.read("src/inside.py").unwrap(), b"x = 1\ny = 2\n");
    assert_eq!(snapshot.read("src/linked/b.py").unwrap(), b"z = 3\n");
    assert_eq!(snapshot.read("src/out.txt"), Err(Unreadable::Outside));
    assert_eq!(snapshot.read("src/dangling.txt"), Err(Unreadable::Outside));
    assert_eq!(snapshot.read("src/none.py"), Err(Unreadable::Missing));
    assert_eq!(snapshot.read("src/deep"), Err(Unreadable::Folder));
    assert_eq!(
        snapshot.read("big.bin"),
        Err(Unreadable::TooLarge(fsread::Kind::Source.limit() + 1))
    );
}

#[test]
fn a_folder_snapshot_reads_inside_the_project_only() {
    let (dir, _outside) = project();
    let snapshot = DirSnapshot::new(dir.path()).unwrap();
    expect_reads(&snapshot);
    nix::unistd::mkfifo(&dir.path().join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    assert_eq!(snapshot.read("fifo"), Err(Unreadable::NotAFile("a FIFO")));
}

#[test]
fn a_git_snapshot_reads_the_commit_not_the_working_tree() {
    let (dir, _outside) = project();
    let root = dir.path();
    git_in(root, &["init", "-q"]);
    git_in(root, &["add", "-A"]);
    git_in(root, &["commit", "-q", "-m", "one"]);
    let commit = git_in(root, &["rev-parse", "HEAD"]);
    fs::write(root.join("src/a.py"), "edited after the snapshot\n").unwrap();
    fs::remove_file(root.join("src/deep/b.py")).unwrap();
    let snapshot = GitSnapshot::new(root, &commit, "");
    expect_reads(&snapshot);
    // A path given as a pathspec pattern is a file name, nothing more.
    assert_eq!(snapshot.read("src/*.py"), Err(Unreadable::Missing));
    assert!(matches!(
        GitSnapshot::new(root, "0000000000000000000000000000000000000000", "").read("src/a.py"),
        Err(Unreadable::Failed(_))
    ));
}

#[test]
fn a_git_snapshot_of_a_project_in_a_subfolder_stays_in_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join("svc/src")).unwrap();
    fs::write(root.join("top.txt"), "repository, not project\n").unwrap();
    fs::write(root.join("svc/src/m.rs"), "fn main() {}\n").unwrap();
    symlink("../../top.txt", root.join("svc/src/up.txt")).unwrap();
    git_in(root, &["init", "-q"]);
    git_in(root, &["add", "-A"]);
    git_in(root, &["commit", "-q", "-m", "one"]);
    let commit = git_in(root, &["rev-parse", "HEAD"]);
    let snapshot = GitSnapshot::new(&root.join("svc"), &commit, "svc/");
    assert_eq!(snapshot.read("src/m.rs").unwrap(), b"fn main() {}\n");
    assert_eq!(snapshot.read("src/up.txt"), Err(Unreadable::Outside));
    assert_eq!(snapshot.read("top.txt"), Err(Unreadable::Missing));
}

/// A run of `project` with the fewest manifest fields okstra reads.
fn minimal_run(project: &Path) -> Run {
    let dir = project.join(".okstra/tasks/p/g/t/runs/project-analysis-001");
    fs::create_dir_all(dir.join("state")).unwrap();
    let manifest = serde_json::json!({
        "runId": "project-analysis-001",
        "createdAt": "2026-12-01T00:00:00Z",
        "taskKey": "p/g/t",
        "taskType": "project-analysis",
        "projectRoot": project,
        "assignments": [],
    });
    fs::write(dir.join("run-manifest.json"), manifest.to_string()).unwrap();
    Run::open(&dir).unwrap()
}

#[test]
fn a_runs_git_snapshot_is_the_one_its_workers_copies_check_out_and_touches_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = &fs::canonicalize(dir.path()).unwrap();
    fs::write(root.join("a.txt"), "committed\n").unwrap();
    git_in(root, &["init", "-q"]);
    git_in(root, &["add", "-A"]);
    git_in(root, &["commit", "-q", "-m", "one"]);
    fs::write(root.join("a.txt"), "changed, not committed\n").unwrap();
    fs::write(root.join("new.txt"), "untracked\n").unwrap();
    let run = minimal_run(root);
    fs::write(root.join(".okstra/log"), "okstra's own\n").unwrap();
    let before = git_in(root, &["status", "--porcelain", "--branch"]);
    let head = git_in(root, &["rev-parse", "HEAD"]);
    let record = ensure(&run, Taken::FirstCheck).unwrap();
    let Source::Git {
        commit,
        reference,
        prefix,
    } = &record.source
    else {
        panic!("no git snapshot: {record:?}")
    };
    assert_eq!(prefix, "");
    // One snapshot per run: the ref and commit the workers' copies use.
    let identity = crate::workspace::RunIdentity::of(&run);
    let shared = crate::workspace::Snapshots::new(identity.clone())
        .get()
        .unwrap();
    assert_eq!(
        reference.as_deref(),
        Some(crate::workspace::snapshot_ref(&identity).as_str())
    );
    assert_eq!(&shared.commit, commit);
    let refs = git_in(
        root,
        &["for-each-ref", "--format=%(refname)", "refs/okstra/"],
    );
    assert_eq!(refs.lines().count(), 1, "{refs}");
    assert_eq!(git_in(root, &["status", "--porcelain", "--branch"]), before);
    assert_eq!(git_in(root, &["rev-parse", "HEAD"]), head);
    // Recorded: a second call reads the record, takes nothing new.
    assert_eq!(ensure(&run, Taken::FirstDispatch).unwrap(), record);
    // The user goes on editing; the snapshot is the tree as it was.
    fs::write(root.join("a.txt"), "edited later\n").unwrap();
    let snapshot = GitSnapshot::new(root, commit, prefix);
    assert_eq!(snapshot.read("a.txt").unwrap(), b"changed, not committed\n");
    assert_eq!(snapshot.read("new.txt").unwrap(), b"untracked\n");
    assert_eq!(snapshot.read(".okstra/log"), Err(Unreadable::Missing));
}

#[test]
fn outside_git_a_run_snapshots_a_copy_in_its_folder() {
    let dir = tempfile::tempdir().unwrap();
    let root = &fs::canonicalize(dir.path()).unwrap();
    fs::write(root.join("a.txt"), "plain\n").unwrap();
    let run = minimal_run(root);
    let record = ensure(&run, Taken::FirstCheck).unwrap();
    assert!(
        matches!(&record.source, Source::Directory { path, files: 1, complete: true, .. } if path == "snapshot"),
        "{record:?}"
    );
}

#[test]
fn a_copy_outside_git_is_the_project_as_it_was_then() {
    let (dir, _outside) = project();
    let root = dir.path();
    let run_dir = root.join(".okstra/tasks/p/g/t/run-001");
    fs::create_dir_all(&run_dir).unwrap();
    fs::write(root.join(".okstra/tasks/p/g/t/x.txt"), "okstra's\n").unwrap();
    let Source::Directory {
        path,
        files,
        complete,
        ..
    } = copy_project(root, &run_dir).unwrap()
    else {
        panic!("not a copy")
    };
    assert_eq!((path.as_str(), files, complete), ("snapshot", 2, true));
    fs::write(root.join("src/a.py"), "edited after the snapshot\n").unwrap();
    let snapshot = DirSnapshot::new(&run_dir.join("snapshot")).unwrap();
    assert_eq!(snapshot.read("src/a.py").unwrap(), b"x = 1\ny = 2\n");
    assert_eq!(snapshot.read("src/inside.py").unwrap(), b"x = 1\ny = 2\n");
    assert_eq!(snapshot.read("src/out.txt"), Err(Unreadable::Outside));
    // The large file was not copied (no anchor can be checked in it), and
    // okstra's own folder never is.
    assert_eq!(snapshot.read("big.bin"), Err(Unreadable::Missing));
    assert!(!run_dir.join("snapshot/.okstra").exists());
}

#[test]
fn paths_normalise_on_their_text() {
    assert_eq!(normalise("a/./b/../c").as_deref(), Some("a/c"));
    assert_eq!(normalise("../x"), None);
    assert_eq!(normalise("/etc/passwd"), None);
    assert_eq!(normalise("a/.."), Some(String::new()));
    assert_eq!(folders_of("a/b/c"), vec!["a", "a/b"]);
}
