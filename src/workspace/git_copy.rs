//! A git copy: the files of one commit in a folder of their own, driven by
//! a git directory okstra owns, beside the copy and never inside it.
//!
//! okstra's git directory for a copy ([`super::Location::git_dir`]) is a
//! bare repository of its own whose index describes the copy's files, that
//! borrows the user's objects read-only (`objects/info/alternates`). Every
//! git okstra runs on the copy names it outright with the copy only as the
//! work tree (`git::Git::own`): whatever the worker leaves in the copy — a
//! `.git` with `core.worktree` pointing at the user's project, a `.git`
//! that is a symlink to the user's `.git`, an fsmonitor, a filter, hooks —
//! is never read by okstra's git, so it can not turn okstra against the
//! user's repository.
//!
//! The worker gets a `.git` of its own too, so that `git status` and
//! `git diff` work where it runs: made afresh by okstra each time the copy
//! is made or reused (whatever the worker left there is removed first,
//! never followed), with the same `HEAD` and index as okstra's and the same
//! borrowed objects. What a worker does to it changes nothing okstra reads.
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
//! back to its target in place through okstra's git directory
//! (`checkout --force`, `clean`), which costs a fraction of a fresh checkout.

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::git::{self, Git};
use crate::vocab::WorkspaceKind;

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
///
/// `shared`: the copy is another worker's, read (never written) by this
/// one — a verifier reading the Executor's copy under Landlock. Several such
/// readers may start at once, and one may start while another reads: the
/// copy is brought to `target` only when it is not there already (okstra
/// recorded what it last made it for a reader, [`VIEW`]), under a lock that
/// every maker of the copy takes. (Readers of one target never overlap
/// readers of another: the fix check starts only after the fix pass, which
/// starts only after every verifier and review round has ended.)
pub(super) fn make(
    location: &Location,
    snapshot: &Snapshot,
    target: &Target<'_>,
    marker: &Marker,
    project_root: &Path,
    shared: bool,
) -> Result<(), Error> {
    let root = &location.root;
    let _lock = lock(location)?;
    let view = view_of(target);
    let is_ours =
        || super::is_real_dir(root) && Marker::read(root).is_some_and(|found| found.is_for(marker));
    if shared && read_view(location).as_deref() == Some(view.as_str()) && is_ours() {
        return Ok(());
    }
    // Whatever happens next, the copy is no longer known to hold a view.
    forget_view(location)?;
    make_locked(location, snapshot, target, marker, project_root)?;
    if shared {
        write_file(&location.git_dir.join(VIEW), view.as_bytes())
    } else {
        Ok(())
    }
}

/// The file in okstra's git directory for a copy that says what the copy
/// holds for its readers (`<files> <head>`); absent when the copy's owner
/// may have changed it since.
const VIEW: &str = "okstra-view";
/// How long a maker waits for another making the same copy: copying a
/// large project and checking it out can take minutes.
const COPY_LOCK_WAIT: std::time::Duration = std::time::Duration::from_mins(15);

fn view_of(target: &Target<'_>) -> String {
    format!("{} {}\n", target.files, target.head.unwrap_or(target.files))
}

fn read_view(location: &Location) -> Option<String> {
    let path = location.git_dir.join(VIEW);
    crate::fsread::read_no_follow(&path, crate::fsread::Kind::Manifest)
        .ok()
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}

/// Forget what the copy at `location` holds for its readers: its owner is
/// about to change it (or has: the Executor's commit).
pub(super) fn forget_view(location: &Location) -> Result<(), Error> {
    remove_entry(&location.git_dir.join(VIEW))
}

/// Hold the copy's lock (`<own git dir>.lock`, beside okstra's git
/// directory for it) until the guard is dropped: one maker at a time,
/// across processes.
fn lock(location: &Location) -> Result<crate::durable::Lock, Error> {
    let path = location.git_dir.with_extension("lock");
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(Error::io("create", parent))?;
    }
    // Never through a symlink someone left there (the lock's own rule).
    crate::durable::Lock::on(&path, format!("the git copy `{}`", location.root.display()))
        .wait(COPY_LOCK_WAIT)
        .acquire()
        .map_err(|err| Error::Io {
            action: "lock",
            path,
            source: err.into(),
        })
}

fn make_locked(
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
        let found = super::is_real_dir(root)
            .then(|| Marker::read(root))
            .flatten();
        match found {
            // The same run's copy of the same snapshot (an earlier attempt
            // or round of this worker): bring it to the target in place.
            Some(found) if found.is_for(marker) && super::is_real_dir(&location.git_dir) => {
                if refresh(location, snapshot, target).is_ok() {
                    ensure_project(location)?;
                    return Ok(());
                }
                super::remove(root, WorkspaceKind::GitCopy, project_root, &marker.run_dir)?;
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
    init_own(location, snapshot)?;
    let git = Git::own(&location.git_dir, Some(root));
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
    worker_git(location, snapshot)?;
    ensure_project(location)
}

/// okstra's git directory for the copy, made afresh: bare, no template (no
/// hooks, no sample config), the user's objects borrowed, the marker kept
/// out of every commit, and no path's `filter` attribute set whatever a
/// `.gitattributes` in the copy says (`info/attributes` takes precedence
/// over every one): no filter program runs on the copy's files.
fn init_own(location: &Location, snapshot: &Snapshot) -> Result<(), Error> {
    let own = &location.git_dir;
    remove_entry(own)?;
    let parent = own.parent().unwrap_or(own);
    std::fs::create_dir_all(parent).map_err(Error::io("create", parent))?;
    Git::at(parent)
        .run([
            "init".as_ref(),
            "--quiet".as_ref(),
            "--bare".as_ref(),
            "--template=".as_ref(),
            format!("--object-format={}", snapshot.object_format).as_ref(),
            own.as_os_str(),
        ])
        .map_err(|source| Error::GitCopy {
            path: location.root.clone(),
            source,
        })?;
    let mut alternates = snapshot.objects.as_os_str().as_bytes().to_vec();
    alternates.push(b'\n');
    write_file(&own.join("objects/info/alternates"), &alternates)?;
    write_file(&own.join("info/exclude"), format!("/{MARKER}\n").as_bytes())?;
    write_file(&own.join("info/attributes"), b"* -filter\n")
}

/// The `.git` the worker sees in its copy, made afresh from okstra's:
/// whatever was at `.git` (a folder, a file, a symlink to anywhere) is
/// removed without being followed or read; the new one has okstra's `HEAD`
/// and index, the user's objects and okstra's borrowed, an empty hooks
/// folder of its own (the user's global `core.hooksPath` does not reach
/// into the copy either) and no path's `filter` set.
fn worker_git(location: &Location, snapshot: &Snapshot) -> Result<(), Error> {
    let root = &location.root;
    let dot_git = root.join(".git");
    let failed = |source: git::Error| Error::GitCopy {
        path: root.clone(),
        source,
    };
    remove_entry(&dot_git)?;
    let parent = root.parent().unwrap_or(root);
    Git::at(parent)
        .run([
            "init".as_ref(),
            "--quiet".as_ref(),
            "--template=".as_ref(),
            format!("--object-format={}", snapshot.object_format).as_ref(),
            root.as_os_str(),
        ])
        .map_err(failed)?;
    let mut alternates = snapshot.objects.as_os_str().as_bytes().to_vec();
    alternates.push(b'\n');
    alternates.extend_from_slice(location.git_dir.join("objects").as_os_str().as_bytes());
    alternates.push(b'\n');
    write_file(&dot_git.join("objects/info/alternates"), &alternates)?;
    write_file(
        &dot_git.join("info/exclude"),
        format!("/{MARKER}\n").as_bytes(),
    )?;
    // The worker's own git runs no filter a `.gitattributes` in the copy
    // names either (the Executor's change may carry one into a verifier's
    // copy, and the user's global config may define it).
    write_file(&dot_git.join("info/attributes"), b"* -filter\n")?;
    let hooks = dot_git.join("hooks");
    std::fs::create_dir_all(&hooks).map_err(Error::io("create", &hooks))?;
    let worker = Git::own(&dot_git, None);
    worker
        .run([
            "config".as_ref(),
            "core.hooksPath".as_ref(),
            hooks.as_os_str(),
        ])
        .map_err(failed)?;
    let own = Git::own(&location.git_dir, None);
    let head = own
        .line(["rev-parse", "--verify", "HEAD"])
        .map_err(failed)?;
    worker
        .run(["update-ref", "--no-deref", "HEAD", &head])
        .map_err(failed)?;
    let index = location.git_dir.join("index");
    if super::is_real_file(&index) {
        std::fs::copy(&index, dot_git.join("index")).map_err(Error::io("copy", &index))?;
    }
    Ok(())
}

/// Bring a reused copy to `target` in place through okstra's git
/// directory: files, index and `HEAD`; everything not in `target.files`
/// (ignored files too) removed, the marker kept; the worker's `.git` made
/// afresh. A copy okstra's git can not bring back fails here and is
/// rebuilt.
fn refresh(location: &Location, snapshot: &Snapshot, target: &Target<'_>) -> Result<(), Error> {
    let git = Git::own(&location.git_dir, Some(&location.root));
    let failed = |source: git::Error| Error::GitCopy {
        path: location.root.clone(),
        source,
    };
    git.run(["checkout", "--quiet", "--force", "--detach", target.files])
        .map_err(failed)?;
    git.run(["clean", "-ffdxq", "-e", &format!("/{MARKER}")])
        .map_err(failed)?;
    match_head(&git, target).map_err(failed)?;
    worker_git(location, snapshot)
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

/// Give a copy an older okstra made (its git directory was the copy's own
/// `.git`, which okstra no longer reads) a git directory of okstra's, its
/// index and `HEAD` at `commit` (the commit the copy was made from), so
/// what changed since shows against it. The worker's `.git` is left alone.
pub(super) fn adopt(location: &Location, project: &Path, commit: &str) -> Result<(), Error> {
    let failed = |source: git::Error| Error::GitCopy {
        path: location.root.clone(),
        source,
    };
    let snapshot = super::snapshot::borrowed(&super::canonical(project), commit).map_err(failed)?;
    init_own(location, &snapshot)?;
    let git = Git::own(&location.git_dir, Some(&location.root));
    git.run(["read-tree", commit]).map_err(failed)?;
    git.run(["update-ref", "--no-deref", "HEAD", commit])
        .map_err(failed)?;
    Ok(())
}

/// Remove whatever is at `path` without following it: a symlink or file
/// is unlinked, a folder removed with everything in it (symlinks inside are
/// unlinked, not followed).
pub(super) fn remove_entry(path: &Path) -> Result<(), Error> {
    match path.symlink_metadata() {
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(Error::Io {
            action: "inspect",
            path: path.to_path_buf(),
            source,
        }),
        Ok(meta) if meta.is_dir() => {
            std::fs::remove_dir_all(path).map_err(Error::io("remove", path))
        }
        Ok(_) => std::fs::remove_file(path).map_err(Error::io("remove", path)),
    }
}

/// Write `bytes` to `path`, its folder made first.
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(Error::io("create", parent))?;
    }
    std::fs::write(path, bytes).map_err(Error::io("write", path))
}

/// The project's folder inside the copy exists even when the snapshot has
/// no file in it.
fn ensure_project(location: &Location) -> Result<(), Error> {
    std::fs::create_dir_all(&location.project).map_err(Error::io("create", &location.project))
}
