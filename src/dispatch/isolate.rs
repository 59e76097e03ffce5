//! Read-only for CLIs that cannot be made read-only: kimi's `-p` and the
//! community `grok` approve every tool call and have no read-only mode
//! (research/provider-clis.md §12), yet the contract promises that every
//! analyser, verifier, critic and reviewer leaves the project untouched.
//!
//! Such an attempt runs in a throwaway detached git worktree of the project
//! (what it may scribble on is a copy), removed when the attempt ends. The
//! worktree holds the working tree as it is, not `HEAD`: uncommitted
//! changes (the Executor's, which a verifier must see) and untracked files
//! that are not ignored, taken as a snapshot commit that touches neither
//! the user's index nor `HEAD` nor any ref. A project that is not a git
//! repository cannot be isolated this way: the attempt runs in the project
//! itself, and the record says so (its `isolation` is `none`), which the
//! report's coverage repeats.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::catalog::{Provider, Role};

/// How an attempt was kept from changing the project.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// The CLI's own read-only mode (claude `plan`, codex `read-only`,
    /// antigravity without write approval), or a role allowed to write.
    Cli,
    /// A detached git worktree of the working tree as it is.
    Worktree,
    /// Nothing could: the project is not a git repository.
    None,
}

impl Isolation {
    pub fn as_str(self) -> &'static str {
        match self {
            Isolation::Cli => "cli-sandbox",
            Isolation::Worktree => "git-worktree",
            Isolation::None => "none",
        }
    }
}

/// Whether `provider` in `role` needs a worktree to stay read-only.
pub fn needs_worktree(provider: Provider, role: Role) -> bool {
    matches!(provider, Provider::Kimi | Provider::Grok) && role != Role::Executor
}

/// A worktree that is removed when dropped.
#[derive(Debug)]
pub struct Worktree {
    project: PathBuf,
    /// Holds the folder the worktree lives in; removed after git lets go.
    dir: tempfile::TempDir,
    /// The project's place inside its repository (`git rev-parse
    /// --show-prefix`): a project in a subfolder of a repository runs in
    /// the same subfolder of the worktree.
    prefix: PathBuf,
}

impl Worktree {
    /// The worktree's root.
    fn root(&self) -> PathBuf {
        self.dir.path().join("tree")
    }

    /// The folder the CLI runs in: the project's copy inside the worktree.
    pub fn path(&self) -> PathBuf {
        self.root().join(&self.prefix)
    }
}

impl Drop for Worktree {
    fn drop(&mut self) {
        let tree = self.root();
        let _ = git(&self.project)
            .args(["worktree", "remove", "--force"])
            .arg(&tree)
            .status();
        let _ = git(&self.project).args(["worktree", "prune"]).status();
    }
}

/// A detached worktree of `project`'s working tree as it is (see
/// [`snapshot`]; `HEAD` when no snapshot can be made), or the reason when
/// the project is not a git repository with a commit.
pub fn worktree(project: &Path) -> Result<Worktree, String> {
    let inside = git(project)
        .args(["rev-parse", "--verify", "--quiet", "HEAD"])
        .status()
        .is_ok_and(|status| status.success());
    if !inside {
        return Err(format!(
            "`{}` is not a git repository with a commit, so the CLI ran in the project itself",
            project.display()
        ));
    }
    let prefix = git(project)
        .args(["rev-parse", "--show-prefix"])
        .stdout(Stdio::piped())
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
        .unwrap_or_default();
    let dir = tempfile::Builder::new()
        .prefix("okstra-readonly-")
        .tempdir()
        .map_err(|err| format!("cannot make a folder for a worktree: {err}"))?;
    let worktree = Worktree {
        project: project.to_path_buf(),
        dir,
        prefix,
    };
    let commit = snapshot(project, worktree.dir.path()).unwrap_or_else(|| "HEAD".to_owned());
    let added = git(project)
        .args(["worktree", "add", "--detach", "--quiet"])
        .arg(worktree.root())
        .arg(&commit)
        .status();
    match added {
        Ok(status) if status.success() => Ok(worktree),
        Ok(status) => Err(format!("`git worktree add` failed ({status})")),
        Err(err) => Err(format!("cannot run git: {err}")),
    }
}

/// A commit of the working tree as it is now: tracked files with their
/// changes (staged or not) and untracked files that are not ignored, but
/// nothing under a `.okstra/` folder. It is
/// made on a copy of the index in `scratch` (`git add -A`, `write-tree`,
/// `commit-tree` on top of `HEAD`), so the user's index, `HEAD` and refs
/// are never touched; the commit is unreferenced and git collects it in
/// time. `None` when any step fails.
fn snapshot(project: &Path, scratch: &Path) -> Option<String> {
    let index = PathBuf::from(output(git(project).args([
        "rev-parse",
        "--git-path",
        "index",
    ]))?);
    let index = if index.is_absolute() {
        index
    } else {
        project.join(index)
    };
    let scratch_index = scratch.join("index");
    if index.is_file() {
        std::fs::copy(&index, &scratch_index).ok()?;
    }
    let mut add = git(project);
    // Never okstra's own folders: run logs can be gigabytes, and a worker
    // reaches its run folder by absolute path anyway.
    add.args(["add", "--all", "--", ":/", ":(exclude,glob)**/.okstra/**"])
        .env("GIT_INDEX_FILE", &scratch_index);
    if !add.status().is_ok_and(|status| status.success()) {
        return None;
    }
    let mut write_tree = git(project);
    write_tree
        .arg("write-tree")
        .env("GIT_INDEX_FILE", &scratch_index);
    let tree = output(&mut write_tree)?;
    let mut commit = git(project);
    commit
        .args([
            "commit-tree",
            &tree,
            "-p",
            "HEAD",
            "-m",
            "okstra: the working tree, read-only copy",
        ])
        .env("GIT_AUTHOR_NAME", "okstra")
        .env("GIT_AUTHOR_EMAIL", "okstra@localhost")
        .env("GIT_COMMITTER_NAME", "okstra")
        .env("GIT_COMMITTER_EMAIL", "okstra@localhost");
    output(&mut commit)
}

/// A git command's first stdout line, when it succeeds.
fn output(command: &mut Command) -> Option<String> {
    let out = command.stdout(Stdio::piped()).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let line = text.lines().next()?.trim();
    (out.status.success() && !line.is_empty()).then(|| line.to_owned())
}

fn git(project: &Path) -> Command {
    let mut command = Command::new("git");
    command
        .arg("-C")
        .arg(project)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_clis_without_a_read_only_mode_need_a_worktree() {
        assert!(needs_worktree(Provider::Kimi, Role::Analyser));
        assert!(needs_worktree(Provider::Grok, Role::Critic));
        assert!(!needs_worktree(Provider::Claude, Role::Analyser));
        assert!(!needs_worktree(Provider::Codex, Role::Verifier));
    }

    #[test]
    fn a_worktree_is_a_detached_copy_of_the_working_tree_and_goes_away() {
        let project = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| {
            assert!(
                Command::new("git")
                    .arg("-C")
                    .arg(project.path())
                    .args(args)
                    .env("GIT_AUTHOR_NAME", "t")
                    .env("GIT_AUTHOR_EMAIL", "t@t")
                    .env("GIT_COMMITTER_NAME", "t")
                    .env("GIT_COMMITTER_EMAIL", "t@t")
                    .stdout(Stdio::null())
                    .status()
                    .unwrap()
                    .success()
            );
        };
        assert!(worktree(project.path()).is_err(), "not a repository yet");
        run(&["init", "-q"]);
        std::fs::write(project.path().join("a.txt"), "committed\n").unwrap();
        run(&["add", "a.txt"]);
        run(&["commit", "-q", "-m", "one"]);
        let tree = worktree(project.path()).unwrap();
        let path = tree.path();
        assert_eq!(
            std::fs::read_to_string(path.join("a.txt")).unwrap(),
            "committed\n"
        );
        std::fs::write(path.join("a.txt"), "scribbled\n").unwrap();
        drop(tree);
        assert!(!path.exists());
        assert_eq!(
            std::fs::read_to_string(project.path().join("a.txt")).unwrap(),
            "committed\n"
        );
        // The copy is the working tree as it is: an uncommitted change and an
        // untracked file are in it, an ignored file is not, and the user's
        // index and HEAD are untouched.
        std::fs::write(project.path().join("a.txt"), "changed, not committed\n").unwrap();
        std::fs::write(project.path().join("new.txt"), "untracked\n").unwrap();
        std::fs::write(project.path().join(".gitignore"), "secret.txt\n").unwrap();
        std::fs::write(project.path().join("secret.txt"), "ignored\n").unwrap();
        std::fs::create_dir(project.path().join(".okstra")).unwrap();
        std::fs::write(project.path().join(".okstra/run.log"), "a run's log\n").unwrap();
        let status = || {
            Command::new("git")
                .arg("-C")
                .arg(project.path())
                .args(["status", "--porcelain", "--branch"])
                .output()
                .unwrap()
                .stdout
        };
        let before = status();
        let tree = worktree(project.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(tree.path().join("a.txt")).unwrap(),
            "changed, not committed\n"
        );
        assert!(tree.path().join("new.txt").is_file());
        assert!(!tree.path().join("secret.txt").exists());
        assert!(
            !tree.path().join(".okstra").exists(),
            "okstra's folders stay out"
        );
        drop(tree);
        assert_eq!(status(), before, "the user's index and HEAD are untouched");
        run(&["checkout", "-q", "--", "a.txt"]);
        for name in ["new.txt", ".gitignore", "secret.txt"] {
            std::fs::remove_file(project.path().join(name)).unwrap();
        }
        std::fs::remove_dir_all(project.path().join(".okstra")).unwrap();
        // A project in a subfolder of its repository runs in that subfolder.
        std::fs::create_dir(project.path().join("svc")).unwrap();
        std::fs::write(project.path().join("svc/b.txt"), "sub\n").unwrap();
        run(&["add", "svc/b.txt"]);
        run(&["commit", "-q", "-m", "two"]);
        let tree = worktree(&project.path().join("svc")).unwrap();
        assert_eq!(
            std::fs::read_to_string(tree.path().join("b.txt")).unwrap(),
            "sub\n"
        );
        let root = tree.root();
        drop(tree);
        assert!(!root.exists());
    }
}
