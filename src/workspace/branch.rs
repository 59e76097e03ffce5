//! The Executor's branch: what the Executor left in its copy, committed by
//! okstra (its message naming the task and the run) on the commit the
//! attempt started from, and fetched into the user's repository as
//! `refs/heads/okstra/<task key>/<run id>` ([`super::branch_ref`]).
//!
//! The commit is made through okstra's own git directory for the copy
//! (`git_copy`: its own index and object store, the copy only as the work
//! tree), never through a `.git` the Executor could have rewritten; a
//! nested repository the Executor made is left out of the commit. The
//! user's repository receives the objects by `git fetch` from okstra's git
//! directory (no ref, no `FETCH_HEAD`, no tag written), then okstra's
//! branch is set with a compare-and-swap: only while it names the commit
//! okstra recorded last (or, the first time, only while it does not exist).
//! A branch of that name someone else made or moved makes the call fail
//! with git's own words, and nothing is moved.

use std::ffi::OsStr;
use std::path::Path;

use crate::git::{self, Git};

use super::snapshot::{ADD_SNAPSHOT, as_okstra};
use super::{Error, Location};

/// The ref in okstra's git directory the user's repository fetches from.
const COPY_REF: &str = "refs/heads/okstra-change";
/// git's mode of a gitlink (a nested repository's commit).
const MODE_GITLINK: &[u8] = b"160000";

/// Commit the working tree of the copy at `copy` (tracked and untracked
/// files that are not ignored, nothing under a `.okstra/` folder, no
/// nested repository the Executor made) on `parent` with `message`,
/// through okstra's own git directory. A tree equal to `parent`'s gives
/// `parent` back unless `always` (an Executor's first attempt always gets
/// its commit). okstra's `HEAD` for the copy ends at the commit.
///
/// `project` is the user's project: a copy an older okstra made has no git
/// directory of okstra's beside it, which is then made from `parent`.
pub fn commit(
    copy: &Location,
    project: &Path,
    parent: &str,
    message: &str,
    always: bool,
) -> Result<String, Error> {
    let failed = |source: git::Error| Error::GitCopy {
        path: copy.root.clone(),
        source,
    };
    if !super::is_real_dir(&copy.git_dir) {
        super::git_copy::adopt(copy, project, parent)?;
    }
    super::git_copy::forget_view(copy)?;
    let git = Git::own(&copy.git_dir, Some(&copy.root));
    let base = git.run(["ls-tree", "-r", "-z", parent]).map_err(failed)?;
    git.run(ADD_SNAPSHOT).map_err(failed)?;
    let staged = git.run(["ls-files", "--stage", "-z"]).map_err(failed)?;
    let nested = new_gitlinks(&base, &staged);
    if !nested.is_empty() {
        let mut list = Vec::new();
        for path in nested {
            list.extend_from_slice(path);
            list.push(0);
        }
        git.clone()
            .env("GIT_LITERAL_PATHSPECS", "1")
            .input(list)
            .run([
                "rm",
                "--cached",
                "--quiet",
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
            ])
            .map_err(failed)?;
    }
    let tree = git.line(["write-tree"]).map_err(failed)?;
    let parent_tree = git
        .line(["rev-parse", &format!("{parent}^{{tree}}")])
        .map_err(failed)?;
    let commit = if tree == parent_tree && !always {
        parent.to_owned()
    } else {
        as_okstra(&git)
            .line(["commit-tree", &tree, "-p", parent, "-m", message])
            .map_err(failed)?
    };
    git.run(["update-ref", COPY_REF, &commit]).map_err(failed)?;
    git.run(["update-ref", "--no-deref", "HEAD", &commit])
        .map_err(failed)?;
    Ok(commit)
}

/// The paths of index entries (`ls-files --stage -z`) that are gitlinks
/// the base tree (`ls-tree -r -z`) does not hold: repositories the Executor
/// made or cloned inside its copy, whose commits the user's repository does
/// not have.
fn new_gitlinks<'a>(base: &[u8], staged: &'a [u8]) -> Vec<&'a [u8]> {
    let known: std::collections::HashSet<&[u8]> = gitlinks(base).collect();
    gitlinks(staged)
        .filter(|path| !known.contains(path))
        .collect()
}

/// The paths of the gitlinks in a `-z` listing of `<mode> … \t<path>`.
fn gitlinks(listing: &[u8]) -> impl Iterator<Item = &[u8]> {
    listing
        .split(|b| *b == 0)
        .filter(|record| record.starts_with(MODE_GITLINK))
        .filter_map(|record| {
            let tab = record.iter().position(|b| *b == b'\t')?;
            Some(&record[tab + 1..])
        })
}

/// Bring `commit` ([`COPY_REF`] of okstra's git directory for the copy
/// `copy`) into the repository of `project` (`git fetch` of the objects, no
/// ref written), then point `branch` at it only while it still names `old`
/// (`None`: only while it does not exist) — `update-ref` checks and moves
/// under git's own lock, so a branch someone else moved or made is left
/// as it is and the call fails with git's words.
pub fn publish(
    project: &Path,
    copy: &Location,
    branch: &str,
    commit: &str,
    old: Option<&str>,
) -> Result<(), git::Error> {
    let git = Git::at(project);
    git.run([
        OsStr::new("fetch"),
        "--quiet".as_ref(),
        "--no-tags".as_ref(),
        "--no-write-fetch-head".as_ref(),
        "--no-recurse-submodules".as_ref(),
        copy.git_dir.as_os_str(),
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
