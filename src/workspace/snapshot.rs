//! The run's one snapshot of the user's working tree, as a commit kept
//! under `refs/okstra/snapshots/…`.
//!
//! Made on a scratch copy of the index (`git add --all`, `write-tree`,
//! `commit-tree` on top of `HEAD`), so the user's index, `HEAD` and
//! branches are never touched; the one ref written is created, never moved
//! (`update-ref --stdin` `create`), and a ref that already exists — a
//! resumed run, or another dispatcher of the same run that got there
//! first — is used as it is. Every copy of the run checks out this commit.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::git::{self, Git};

use super::{Error, RunIdentity};

/// The snapshot commit and what a copy needs to borrow from its repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The snapshot commit.
    pub commit: String,
    /// Its parent: the user's `HEAD` when it was taken (`None` in a
    /// repository without a commit).
    pub base: Option<String>,
    /// The user's object store (absolute), which copies borrow from.
    pub objects: PathBuf,
    /// `sha1` or `sha256`: a copy must use the same.
    pub object_format: String,
}

/// The snapshot of one run, made at most once per process and shared by
/// every copy made in it (each `make` waits on the first).
#[derive(Debug)]
pub struct Snapshots {
    run: RunIdentity,
    reference: String,
    made: Mutex<Option<Snapshot>>,
}

impl Snapshots {
    pub fn new(run: RunIdentity) -> Snapshots {
        Snapshots {
            reference: super::snapshot_ref(&run),
            run,
            made: Mutex::new(None),
        }
    }

    /// The run's snapshot: the one already made, the one its ref names, or
    /// a new one.
    pub fn get(&self) -> Result<Snapshot, Error> {
        // A poisoned lock only means another copy's thread panicked; the
        // value inside is still a whole snapshot or none.
        let mut made = self
            .made
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(snapshot) = made.as_ref() {
            return Ok(snapshot.clone());
        }
        let project = super::canonical(&self.run.project_root);
        // The scratch index lives in the run folder, which the snapshot
        // never includes (`.okstra/` is left out).
        let snapshot = take(&project, &self.reference, &self.run.run_dir).map_err(|source| {
            Error::Snapshot {
                project: project.clone(),
                source,
            }
        })?;
        *made = Some(snapshot.clone());
        Ok(snapshot)
    }
}

/// Facts about the user's repository.
struct Repository {
    objects: PathBuf,
    index: PathBuf,
    object_format: String,
}

fn repository(git: &Git, project: &Path) -> Result<Repository, git::Error> {
    let lines = git.lines([
        "rev-parse",
        "--path-format=absolute",
        "--git-common-dir",
        "--git-path",
        "index",
        "--show-object-format",
    ])?;
    match lines.as_slice() {
        [common, index, format, ..] => Ok(Repository {
            objects: Path::new(common).join("objects"),
            index: PathBuf::from(index),
            object_format: format.clone(),
        }),
        _ => Err(git::Error::Unexpected {
            dir: project.to_path_buf(),
            args: "rev-parse --git-common-dir --git-path index --show-object-format".into(),
            what: "fewer lines than asked for",
        }),
    }
}

/// `commit` of the repository at `project` as a copy would borrow it (its
/// object store and format), whether or not it is a snapshot.
pub(super) fn borrowed(project: &Path, commit: &str) -> Result<Snapshot, git::Error> {
    let git = Git::at(project);
    let repo = repository(&git, project)?;
    Ok(Snapshot {
        commit: commit.to_owned(),
        base: None,
        objects: repo.objects,
        object_format: repo.object_format,
    })
}

/// Use the snapshot `reference` names, or take one and create it.
/// `scratch` is a folder of ours for the scratch index.
fn take(project: &Path, reference: &str, scratch: &Path) -> Result<Snapshot, git::Error> {
    let git = Git::at(project);
    let repo = repository(&git, project)?;
    let snapshot = |commit: String, base: Option<String>| Snapshot {
        commit,
        base,
        objects: repo.objects.clone(),
        object_format: repo.object_format.clone(),
    };
    if let Some(commit) = git.commit(reference)? {
        let base = git.commit(&format!("{commit}^"))?;
        return Ok(snapshot(commit, base));
    }
    let head = git.commit("HEAD")?;
    let commit = commit_working_tree(&git, &repo, head.as_deref(), scratch)?;
    let created = git
        .clone()
        .input(format!("create {reference} {commit}\n").into_bytes())
        .run(["update-ref", "--stdin"]);
    match created {
        Ok(_) => Ok(snapshot(commit, head)),
        // Another dispatcher of this run created it first: use theirs.
        Err(err) => match git.commit(reference)? {
            Some(theirs) => {
                let base = git.commit(&format!("{theirs}^"))?;
                Ok(snapshot(theirs, base))
            }
            None => Err(err),
        },
    }
}

/// A commit of the working tree as it is: tracked files with their changes
/// (staged or not) and untracked files that are not ignored, nothing under
/// a `.okstra/` folder (run logs can be gigabytes, and a worker reaches its
/// run folder by absolute path), with `head` as its parent.
fn commit_working_tree(
    git: &Git,
    repo: &Repository,
    head: Option<&str>,
    scratch: &Path,
) -> Result<String, git::Error> {
    let tree = working_tree(git, repo, scratch)?;
    let mut args = vec!["commit-tree".to_owned(), tree];
    if let Some(head) = head {
        args.extend(["-p".to_owned(), head.to_owned()]);
    }
    args.extend([
        "-m".to_owned(),
        "okstra: snapshot of the working tree for isolated workers".to_owned(),
    ]);
    as_okstra(git).line(&args)
}

/// `git add` of what a snapshot holds: the whole working tree (tracked
/// changes, untracked files that are not ignored), nothing under any
/// `.okstra/`. The snapshot and an Executor's branch stage the same.
pub(super) const ADD_SNAPSHOT: [&str; 5] = [
    "add",
    "--all",
    "--",
    ":/",
    ":(top,exclude,glob)**/.okstra/**",
];

/// git run as okstra's own author and committer.
pub(super) fn as_okstra(git: &Git) -> Git {
    git.clone()
        .env("GIT_AUTHOR_NAME", "okstra")
        .env("GIT_AUTHOR_EMAIL", "okstra@localhost")
        .env("GIT_COMMITTER_NAME", "okstra")
        .env("GIT_COMMITTER_EMAIL", "okstra@localhost")
}

/// The tree of the working tree of the repository at `project`, taken as a
/// snapshot takes it (see [`commit_working_tree`]), on a scratch index in
/// `scratch`: the user's index is never written.
pub(super) fn tree_of_working_tree(project: &Path, scratch: &Path) -> Result<String, git::Error> {
    let git = Git::at(project);
    let repo = repository(&git, project)?;
    working_tree(&git, &repo, scratch)
}

/// The working tree's tree, written from a scratch copy of the index.
fn working_tree(git: &Git, repo: &Repository, scratch: &Path) -> Result<String, git::Error> {
    let io_error = |source: std::io::Error| git::Error::Start {
        dir: scratch.to_path_buf(),
        args: "add (the scratch index)".into(),
        source,
    };
    std::fs::create_dir_all(scratch).map_err(io_error)?;
    let folder = tempfile::Builder::new()
        .prefix(".okstra-snapshot-")
        .tempdir_in(scratch)
        .map_err(io_error)?;
    let index = folder.path().join("index");
    if repo.index.is_file() {
        std::fs::copy(&repo.index, &index).map_err(io_error)?;
    }
    let scratch_git = git.clone().env("GIT_INDEX_FILE", &index);
    scratch_git.run(ADD_SNAPSHOT)?;
    scratch_git.line(["write-tree"])
}
