//! The Executor's branch: what the Executor left in its copy, committed by
//! okstra (its message naming the task and the run) on the commit the
//! attempt started from, and fetched into the user's repository as
//! `refs/heads/okstra/<task key>/<run id>` ([`super::branch_ref`]).
//!
//! The commit is made in the copy (its own index, its own object store);
//! the user's repository receives its objects by `git fetch` from the copy
//! (no ref, no `FETCH_HEAD`, no tag written), then okstra's branch is set
//! with a compare-and-swap: only while it names the commit okstra recorded
//! last (or, the first time, only while it does not exist). A branch of
//! that name someone else made or moved makes the call fail with git's own
//! words, and nothing is moved.

use std::path::Path;

use crate::git::{self, Git};

use super::snapshot::as_okstra;

/// The copy's own ref the user's repository fetches from.
const COPY_REF: &str = "refs/heads/okstra-change";

/// Commit the working tree of the copy at `root` (tracked and untracked
/// files that are not ignored, nothing under a `.okstra/` folder) on
/// `parent` with `message`. A tree equal to `parent`'s gives `parent` back
/// unless `always` (an Executor's first attempt always gets its commit).
/// The copy's `HEAD` ends at the commit, so it is clean again.
pub fn commit(
    root: &Path,
    parent: &str,
    message: &str,
    always: bool,
) -> Result<String, git::Error> {
    let git = Git::at(root);
    git.run([
        "add",
        "--all",
        "--",
        ":/",
        ":(top,exclude,glob)**/.okstra/**",
    ])?;
    let tree = git.line(["write-tree"])?;
    let parent_tree = git.line(["rev-parse", &format!("{parent}^{{tree}}")])?;
    let commit = if tree == parent_tree && !always {
        parent.to_owned()
    } else {
        as_okstra(&git).line(["commit-tree", &tree, "-p", parent, "-m", message])?
    };
    git.run(["update-ref", COPY_REF, &commit])?;
    git.run(["update-ref", "--no-deref", "HEAD", &commit])?;
    Ok(commit)
}

/// Bring `commit` (the copy's [`COPY_REF`]) from the copy at `root` into
/// the repository of `project` (`git fetch` of the objects, no ref
/// written), then point `branch` at it only while it still names `old`
/// (`None`: only while it does not exist) — `update-ref` checks and moves
/// under git's own lock, so a branch someone else moved or made is left
/// as it is and the call fails with git's words.
pub fn publish(
    project: &Path,
    root: &Path,
    branch: &str,
    commit: &str,
    old: Option<&str>,
) -> Result<(), git::Error> {
    let git = Git::at(project);
    git.run([
        // No housekeeping of the user's repository on the way.
        std::ffi::OsStr::new("-c"),
        "gc.auto=0".as_ref(),
        "-c".as_ref(),
        "maintenance.auto=false".as_ref(),
        "fetch".as_ref(),
        "--quiet".as_ref(),
        "--no-tags".as_ref(),
        "--no-write-fetch-head".as_ref(),
        "--no-recurse-submodules".as_ref(),
        root.as_os_str(),
        COPY_REF.as_ref(),
    ])?;
    // The null id of the repository's hash length: "must not exist".
    let absent = "0".repeat(commit.len());
    git.run([
        "update-ref",
        "-m",
        "okstra: the Executor's change",
        branch,
        commit,
        old.unwrap_or(&absent),
    ])?;
    Ok(())
}

/// The commit `branch` names in the repository of `project`, if any.
pub fn tip(project: &Path, branch: &str) -> Result<Option<String>, git::Error> {
    Git::at(project).commit(branch)
}

/// Delete `branch` from the repository of `project` only while it still
/// names `expected` (`update-ref -d <ref> <old>`: git checks and deletes
/// under its lock).
pub fn delete(project: &Path, branch: &str, expected: &str) -> Result<(), git::Error> {
    Git::at(project).run(["update-ref", "-d", branch, expected])?;
    Ok(())
}
