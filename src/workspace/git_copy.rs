//! A git copy: a repository of its own at the workspace's root that borrows
//! the user's objects read-only (`objects/info/alternates`) and has the
//! run's snapshot (or a commit made on it) checked out.
//!
//! It is not a linked worktree: its `.git` is a folder with its own refs,
//! config and (empty) hooks, so `git checkout -b`, `git update-ref` or
//! `git config` run in it change the copy alone. git never writes into an
//! alternate object store; what a CLI commits lands in the copy's own.
//!
//! A copy holds the files of one commit ([`Target::files`]) with `HEAD` at
//! another ([`Target::head`]), the index holding `HEAD`'s version of every
//! path that differs, so `git status` and `git diff` show the change
//! between them: a reviewer's copy holds the snapshot with `HEAD` at the
//! user's `HEAD` (their uncommitted work shows as a change); a verifier's
//! holds the Executor's commit with `HEAD` at the snapshot (exactly the
//! Executor's change shows); an Executor's holds its starting commit, clean.
//! Only the differing paths lose their index stat data.
//!
//! A copy is reused for the same worker's later attempts and rounds: brought
//! back to its target in place (`checkout --force`, `clean`), which costs a
//! fraction of a fresh checkout.

use std::path::Path;

use crate::git::{self, Git};

use super::snapshot::Snapshot;
use super::{Error, Location, MARKER, Marker};

/// The commits a copy is made of.
pub(super) struct Target<'a> {
    /// Whose files it holds.
    pub files: &'a str,
    /// What its `HEAD` names (`None`: the base of a repository without a
    /// commit; `HEAD` stays at `files`).
    pub head: Option<&'a str>,
}

/// Make (or reuse) the git copy at `location` of `target`, borrowing the
/// objects of `snapshot`'s repository.
pub(super) fn make(
    location: &Location,
    snapshot: &Snapshot,
    target: &Target<'_>,
    marker: &Marker,
    project_root: &Path,
) -> Result<(), Error> {
    let root = &location.root;
    let failed = |source: git::Error| Error::GitCopy {
        path: root.clone(),
        source,
    };
    if root.symlink_metadata().is_ok() {
        match Marker::read(root) {
            // The same run's copy of the same snapshot (an earlier attempt
            // or round of this worker): bring it to the target in place.
            Some(found) if found.is_for(marker) && root.join(".git").is_dir() => {
                if refresh(root, target).is_ok() {
                    ensure_project(location)?;
                    return Ok(());
                }
                super::remove(root, super::Kind::GitCopy, project_root, &marker.run_dir)?;
            }
            // Ours, of an earlier run with this id or another snapshot.
            Some(found) if found.project_root == marker.project_root => {
                std::fs::remove_dir_all(root).map_err(Error::io("remove", root))?;
            }
            _ => {
                return Err(Error::Foreign {
                    path: root.clone(),
                    why: "something else is where its copy belongs".into(),
                });
            }
        }
    }
    std::fs::create_dir_all(root).map_err(Error::io("create", root))?;
    // The marker first: a copy half made when we are killed is still ours
    // to remove.
    marker.write(root)?;
    let git = Git::at(root);
    git.run([
        "init",
        "--quiet",
        "--template=",
        &format!("--object-format={}", snapshot.object_format),
    ])
    .map_err(failed)?;
    let dot_git = root.join(".git");
    let alternates = dot_git.join("objects/info");
    std::fs::create_dir_all(&alternates).map_err(Error::io("create", &alternates))?;
    let mut line = snapshot.objects.as_os_str().to_owned();
    line.push("\n");
    std::fs::write(
        alternates.join("alternates"),
        std::os::unix::ffi::OsStrExt::as_bytes(line.as_os_str()),
    )
    .map_err(Error::io("write", &alternates.join("alternates")))?;
    let info = dot_git.join("info");
    std::fs::create_dir_all(&info).map_err(Error::io("create", &info))?;
    std::fs::write(info.join("exclude"), format!("/{MARKER}\n"))
        .map_err(Error::io("write", &info.join("exclude")))?;
    // Its own empty hooks folder, named in its own config: the user's
    // global `core.hooksPath` does not reach into the copy either.
    let hooks = dot_git.join("hooks");
    std::fs::create_dir_all(&hooks).map_err(Error::io("create", &hooks))?;
    git.run([
        std::ffi::OsStr::new("config"),
        "core.hooksPath".as_ref(),
        hooks.as_os_str(),
    ])
    .map_err(failed)?;
    // Writing the files is nearly all of a copy's cost, and it is the
    // kernel's (file creation): git's parallel checkout, one worker a core,
    // cut it by a quarter to a third on this project's machines.
    git.run([
        "-c",
        "checkout.workers=0",
        "checkout",
        "--quiet",
        "--force",
        "--detach",
        target.files,
    ])
    .map_err(failed)?;
    match_head(&git, target).map_err(failed)?;
    ensure_project(location)
}

/// Bring a reused copy to `target` in place: files, index and `HEAD`;
/// everything not in `target.files` (ignored files too) removed, the
/// marker kept. A copy whose `.git` was damaged fails here and is rebuilt.
fn refresh(root: &Path, target: &Target<'_>) -> Result<(), git::Error> {
    let git = Git::at(root);
    git.run(["checkout", "--quiet", "--force", "--detach", target.files])?;
    git.run(["clean", "-ffdxq", "-e", &format!("/{MARKER}")])?;
    match_head(&git, target)
}

/// `HEAD` at `target.head`, and the index at `HEAD` for the paths that
/// differ from `target.files`, so `git status` and `git diff` show the
/// change between them.
fn match_head(git: &Git, target: &Target<'_>) -> Result<(), git::Error> {
    let Some(base) = target.head.filter(|head| *head != target.files) else {
        return Ok(());
    };
    git.run(["update-ref", "--no-deref", "HEAD", base])?;
    let changed = git.run([
        "diff-tree",
        "-r",
        "-z",
        "--name-only",
        "--no-renames",
        base,
        target.files,
    ])?;
    if changed.is_empty() {
        return Ok(());
    }
    git.clone()
        .env("GIT_LITERAL_PATHSPECS", "1")
        .input(changed)
        .run([
            "reset",
            "--quiet",
            base,
            "--pathspec-from-file=-",
            "--pathspec-file-nul",
        ])?;
    Ok(())
}

/// The project's folder inside the copy exists even when the snapshot has
/// no file in it.
fn ensure_project(location: &Location) -> Result<(), Error> {
    std::fs::create_dir_all(&location.project).map_err(Error::io("create", &location.project))
}
