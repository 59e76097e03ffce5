//! Workspaces: where a worker works when not in the project, so that
//! nothing it does can change the user's files, index or refs.
//!
//! kimi's `-p` and the community `grok` approve every tool call
//! (research/provider-clis.md §12), yet every analyser, verifier, critic and
//! reviewer must leave the project as it was; and an implementation run's
//! Executor changes code the user may be editing, so its change goes onto a
//! branch (`branch`) and reaches the project only through `okstra land`,
//! while every verifier needs the Executor's change, which the project does
//! not have ([`needs_copy`]). Each such attempt works in a **copy** of the
//! project, and its prompt names the copy as its project root (the bundle
//! and `converge plan` both ask [`locate`] where it is):
//!
//! - **Inside git:** the working tree is snapshotted once per run
//!   (`snapshot`: tracked changes and untracked files that are not ignored,
//!   nothing under `.okstra/`, made on a scratch copy of the index) and kept
//!   reachable under `refs/okstra/snapshots/…` in the user's repository —
//!   the only ref okstra writes there. Each copy (`git_copy`) is a repository
//!   of its own (`git init`: its own `.git`, refs, config, no hooks) that
//!   borrows the user's objects read-only through `objects/info/alternates`,
//!   with the snapshot checked out. Unlike a linked worktree it shares no
//!   ref, config or hook with the user's repository: a CLI that runs
//!   `git checkout -b` or `git update-ref` there changes only the copy.
//! - **Outside git:** a plain file copy (`file_copy`), honouring the
//!   project's ignore rules, skipping `.okstra/` and `.git`, and bounded by
//!   [`MAX_COPY_FILES`] and [`MAX_COPY_BYTES`]; a larger project is refused.
//! - **In place** only with `--allow-unisolated`, when no copy can be made:
//!   the copy's path is then a symlink to the project, so the prompt still
//!   names a real folder.
//!
//! A copy lives at a path fixed by the run and the worker ([`locate`]:
//! `${XDG_STATE_HOME:-$HOME/.local/state}/okstra/workspaces/<16 hex of the
//! project root's SHA-256>/<project>/<group>/<task>/<run-id>/<worker-id>/`),
//! outside the project (a nested `.git` would show in the user's
//! `git status`) and the same every time, so a resumed run's prompts stay
//! byte for byte the same. Its root holds a marker ([`MARKER`]) naming the
//! project, the run folder and the worker; a copy that exists with a
//! matching marker is reused (reset in place to the commit its attempt
//! needs, [`Checkout`]), else rebuilt, and only a folder beneath the
//! workspaces folder, reached through no symlink, whose marker names the run
//! and the worker it is named for is ever removed ([`remove`]). A native Executor, which okstra
//! cannot confine, is checked afterwards against the user's repository as
//! it was (`guard`).

pub mod branch;
mod file_copy;
mod git_copy;
pub mod guard;
mod removal;
mod snapshot;

use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::catalog::{Provider, Role, Runner};
use crate::git;
use crate::run::team_state::WorkspaceRecord;
use crate::vocab::{Containment, WorkspaceKind};

pub use removal::{owned, removable, remove};
pub use snapshot::Snapshots;

/// A file copy refuses a project with more files than this after its ignore
/// rules (a large service is a few thousand; twenty thousand is a monorepo
/// that belongs in git).
pub const MAX_COPY_FILES: u64 = 20_000;
/// … or more bytes than this (512 MiB): copying more per worker costs more
/// disk and seconds than an analysis is worth.
pub const MAX_COPY_BYTES: u64 = 512 * 1024 * 1024;
/// The marker file at a copy's root.
pub const MARKER: &str = ".okstra-workspace.json";
/// The folder beside a run's copies holding okstra's own git directory for
/// each (`<run folder>/.okstra-git/<worker-id>`): out of every copy, and
/// never a copy itself (a worker id is a slug, which never starts with a
/// dot).
const OWN_GIT_DIRS: &str = ".okstra-git";
/// Version of the marker's format.
const MARKER_VERSION: u32 = 1;
/// Hex digits of the project root's SHA-256 in the path: enough to tell
/// projects apart, short enough for a path.
const PROJECT_HASH_LEN: usize = 16;

/// Whether `provider` in `role` works in a copy of its own when the run is
/// contained by copies (or runs natively, where okstra confines nothing):
/// the CLIs with no read-only mode (their descriptor's `read_only`),
/// whatever their role; and, in an implementation run, the Executor (whose
/// change goes onto a branch and reaches the project only through `okstra
/// land`) and every verifier (whose copy holds the Executor's change, which
/// the project does not).
pub fn needs_copy(provider: Provider, role: Role) -> bool {
    !provider.descriptor().read_only.exists() || matches!(role, Role::Executor | Role::Verifier)
}

/// Whose copy a worker works in, if any: the worker id of the copy's owner
/// (`executor`: the run's Executor's, when it has one).
///
/// Under Landlock a wrapper's CLI cannot write the project, so only the
/// Executor, which must write, gets a copy; every verifier reads the
/// Executor's copy (the Executor's change is there, and nowhere in the
/// project); everyone else works in the project itself. Contained by
/// copies, and for a host's native session (which okstra cannot confine),
/// each worker that [`needs_copy`] works in a copy of its own.
pub fn copy_owner<'a>(
    worker: &Worker<'a>,
    containment: Containment,
    executor: Option<&'a str>,
) -> Option<&'a str> {
    let landlock = containment == Containment::Landlock && worker.runner == Runner::CliWrapper;
    match (landlock, worker.role) {
        (true, Role::Executor) => Some(worker.id),
        (true, Role::Verifier) => Some(executor.unwrap_or(worker.id)),
        (true, _) => None,
        (false, _) => needs_copy(worker.provider, worker.role).then_some(worker.id),
    }
}

/// A worker, as far as where it works goes.
#[derive(Debug, Clone, Copy)]
pub struct Worker<'a> {
    pub id: &'a str,
    pub provider: Provider,
    pub role: Role,
    pub runner: Runner,
}

impl<'a> Worker<'a> {
    /// The worker a run's assignment names.
    pub fn of(assignment: &'a crate::run::roster::Assignment) -> Worker<'a> {
        Worker {
            id: &assignment.worker_id,
            provider: assignment.provider,
            role: assignment.role,
            runner: assignment.runner,
        }
    }
}

/// The project root a worker's prompt names: its copy's project folder
/// when it works in one ([`copy_owner`]), else `None` (the project).
pub fn prompt_root(
    project_root: &Path,
    task_key: &str,
    run_id: &str,
    worker: &Worker<'_>,
    containment: Containment,
    executor: Option<&str>,
) -> Result<Option<PathBuf>, Error> {
    copy_owner(worker, containment, executor)
        .map(|owner| locate(project_root, task_key, run_id, owner).map(|at| at.project))
        .transpose()
}

/// Whether `project` lies in a git repository (a `.git` at or above it),
/// from the file system alone, so a render can ask.
pub fn in_git(project: &Path) -> bool {
    repository_prefix(&canonical(project)).is_some()
}

/// A commit a copy is made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rev {
    /// The run's snapshot of the working tree.
    Snapshot,
    /// The snapshot's parent: the user's `HEAD` when it was taken.
    Base,
    /// A commit of the user's repository (an Executor's commit).
    Commit(String),
}

/// What a git copy holds: the files of one commit, and `HEAD` at another,
/// so `git status` and `git diff` there show the change between them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkout {
    pub files: Rev,
    pub head: Rev,
}

impl Checkout {
    /// A reviewer's: the snapshot, shown as the user's uncommitted change
    /// against their `HEAD`.
    pub fn snapshot() -> Checkout {
        Checkout {
            files: Rev::Snapshot,
            head: Rev::Base,
        }
    }

    /// `commit` itself, nothing shown as changed: where an Executor starts.
    pub fn clean(commit: Rev) -> Checkout {
        Checkout {
            files: commit.clone(),
            head: commit,
        }
    }

    /// `files`, shown as the change from `head`: a verifier's view of the
    /// Executor's commit.
    pub fn change(files: &str, head: Rev) -> Checkout {
        Checkout {
            files: Rev::Commit(files.to_owned()),
            head,
        }
    }
}

/// Why a workspace could not be placed, made or removed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "neither `XDG_STATE_HOME` nor `HOME` names an absolute folder, so there is nowhere to put isolated copies"
    )]
    NoStateHome,
    #[error("`{value}` is not a valid {what} for a workspace path: expected a slug")]
    Name { what: &'static str, value: String },
    #[error("cannot snapshot the working tree of `{}`", .project.display())]
    Snapshot {
        project: PathBuf,
        #[source]
        source: git::Error,
    },
    #[error("cannot make a git copy at `{}`", .path.display())]
    GitCopy {
        path: PathBuf,
        #[source]
        source: git::Error,
    },
    #[error(
        "the project `{}` has more than {limit} after its ignore rules, too much to copy for an isolated worker",
        .project.display()
    )]
    TooLarge { project: PathBuf, limit: String },
    #[error("cannot {action} `{}`", .path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot read the project `{}` to copy it", .path.display())]
    Walk {
        path: PathBuf,
        #[source]
        source: ignore::Error,
    },
    #[error("`{}` is not an okstra workspace of this run ({why}), so it is left alone", .path.display())]
    Foreign { path: PathBuf, why: String },
}

impl Error {
    fn io(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> Error {
        let path = path.to_path_buf();
        move |source| Error::Io {
            action,
            path,
            source,
        }
    }
}

/// The run a workspace belongs to, as its manifest records it.
#[derive(Debug, Clone)]
pub struct RunIdentity {
    pub project_root: PathBuf,
    /// `project/group/task`.
    pub task_key: String,
    pub run_id: String,
    /// The run folder (canonical).
    pub run_dir: PathBuf,
    /// The manifest's `createdAt`: tells a run from an earlier one that had
    /// the same id (after `.okstra/` was deleted).
    pub created_at: String,
}

impl RunIdentity {
    /// The identity of `run`, its folder resolved.
    pub fn of(run: &crate::run::Run) -> RunIdentity {
        RunIdentity {
            project_root: run.project_root.clone(),
            task_key: run.task_key.clone(),
            run_id: run.run_id.clone(),
            run_dir: std::fs::canonicalize(&run.dir).unwrap_or_else(|_| run.dir.clone()),
            created_at: run.created_at.clone(),
        }
    }
}

/// Where one worker's copy lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The copy's root: its marker, and its `.git` for a git copy.
    pub root: PathBuf,
    /// The project inside the copy, the worker's project root: the root
    /// itself, or the project's subfolder when the project lies in a
    /// subfolder of its repository.
    pub project: PathBuf,
    /// Whether the project lies in a git repository (a `.git` above it).
    pub in_git: bool,
    /// okstra's own git directory for a git copy, beside the copy: the only
    /// repository okstra's git uses there (`git_copy`).
    pub git_dir: PathBuf,
}

/// Where isolated copies live: `${XDG_STATE_HOME:-$HOME/.local/state}/okstra/workspaces`.
/// A relative or empty value is ignored, as the XDG spec says.
pub fn workspaces_root(env: &dyn Fn(&str) -> Option<OsString>) -> Result<PathBuf, Error> {
    crate::user_dirs::state_dir(env)
        .map(|state| state.join("workspaces"))
        .ok_or(Error::NoStateHome)
}

/// The one path function: where `worker_id`'s copy for run `run_id` of
/// `task_key` (`project/group/task`) in `project_root` lives. The bundle
/// (initial prompts), `converge plan` (reverify prompts) and the engine
/// (which makes the copy) all ask here, so they always agree.
pub fn locate(
    project_root: &Path,
    task_key: &str,
    run_id: &str,
    worker_id: &str,
) -> Result<Location, Error> {
    let workspaces = workspaces_root(&|name| std::env::var_os(name))?;
    locate_in(&workspaces, project_root, task_key, run_id, worker_id)
}

fn locate_in(
    workspaces: &Path,
    project_root: &Path,
    task_key: &str,
    run_id: &str,
    worker_id: &str,
) -> Result<Location, Error> {
    let project = canonical(project_root);
    let run_folder = run_folder_in(workspaces, &project, task_key, run_id)?;
    let root = run_folder.join(slug("worker id", worker_id)?);
    let prefix = repository_prefix(&project);
    Ok(Location {
        git_dir: own_git_dir(&root),
        project: match prefix.as_deref() {
            Some(prefix) if !prefix.as_os_str().is_empty() => root.join(prefix),
            _ => root.clone(),
        },
        in_git: prefix.is_some(),
        root,
    })
}

/// The folder holding every copy of `run` (and the scratch files of its
/// snapshot).
pub fn run_folder(run: &RunIdentity) -> Result<PathBuf, Error> {
    let workspaces = workspaces_root(&|name| std::env::var_os(name))?;
    run_folder_in(
        &workspaces,
        &canonical(&run.project_root),
        &run.task_key,
        &run.run_id,
    )
}

/// The folder holding every copy of one run.
fn run_folder_in(
    workspaces: &Path,
    project: &Path,
    task_key: &str,
    run_id: &str,
) -> Result<PathBuf, Error> {
    let parts: Vec<&str> = task_key.split('/').collect();
    let [project_id, task_group, task_id] = parts.as_slice() else {
        return Err(Error::Name {
            what: "task key",
            value: task_key.to_owned(),
        });
    };
    Ok(workspaces
        .join(project_hash(project))
        .join(slug("project id", project_id)?)
        .join(slug("task group", task_group)?)
        .join(slug("task id", task_id)?)
        .join(slug("run id", run_id)?))
}

fn slug<'a>(what: &'static str, value: &'a str) -> Result<&'a str, Error> {
    if crate::slug::is_slug(value) {
        Ok(value)
    } else {
        Err(Error::Name {
            what,
            value: value.to_owned(),
        })
    }
}

/// okstra's own git directory for the copy at `root`
/// (`<run folder>/.okstra-git/<worker-id>`).
fn own_git_dir(root: &Path) -> PathBuf {
    let parent = root.parent().unwrap_or(root);
    let name = root.file_name().unwrap_or_default();
    parent.join(OWN_GIT_DIRS).join(name)
}

/// Whether `path` is a folder itself, not a symlink to one.
fn is_real_dir(path: &Path) -> bool {
    path.symlink_metadata().is_ok_and(|meta| meta.is_dir())
}

/// Whether `path` is a regular file itself, not a symlink to one.
fn is_real_file(path: &Path) -> bool {
    path.symlink_metadata().is_ok_and(|meta| meta.is_file())
}

/// The project root resolved (symlinks, `..`), or as given when it cannot be.
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The first hex digits of the SHA-256 of the canonical project root.
fn project_hash(project: &Path) -> String {
    let mut hex = crate::digest::sha256_hex(project.as_os_str().as_bytes());
    hex.truncate(PROJECT_HASH_LEN);
    hex
}

/// Where `project` lies in its git repository: the path from the nearest
/// folder above it (itself included) that holds a `.git`, or `None` outside
/// git. Read from the file system only (no git runs), so a render can ask.
pub fn repository_prefix(project: &Path) -> Option<PathBuf> {
    project
        .ancestors()
        .find(|dir| dir.join(".git").symlink_metadata().is_ok())
        .and_then(|top| project.strip_prefix(top).ok())
        .map(Path::to_path_buf)
}

/// The branch the Executor's change of run `run` is kept on in the user's
/// repository: `refs/heads/okstra/<project>/<group>/<task>/<run-id>`, the
/// one branch okstra creates. Each part is a slug; one git would not take
/// in a ref name (`..`, a trailing `.` or `.lock`) is refused.
pub fn branch_ref(run: &RunIdentity) -> Result<String, Error> {
    let mut name = String::from("refs/heads/okstra");
    for (what, part) in [("task key", run.task_key.as_str()), ("run id", &run.run_id)] {
        for part in part.split('/') {
            // Slugs are lower case, so a case-sensitive `.lock` is git's.
            let bad = part.contains("..")
                || part.ends_with('.')
                || part.rsplit_once('.').is_some_and(|(_, ext)| ext == "lock")
                || !crate::slug::is_slug(part);
            if bad {
                return Err(Error::Name {
                    what,
                    value: part.to_owned(),
                });
            }
            name.push('/');
            name.push_str(part);
        }
    }
    Ok(name)
}

/// The ref that keeps run `run`'s snapshot in the user's repository:
/// `refs/okstra/snapshots/<run-id>-<16 hex>`, the hex from the project,
/// task key, run id and creation time, so two runs never share one.
pub fn snapshot_ref(run: &RunIdentity) -> String {
    let identity = [
        canonical(&run.project_root).as_os_str().as_bytes(),
        run.task_key.as_bytes(),
        run.run_id.as_bytes(),
        run.created_at.as_bytes(),
    ]
    .join(&0);
    let mut hex = crate::digest::sha256_hex(&identity);
    hex.truncate(PROJECT_HASH_LEN);
    // Only characters git allows anywhere in a ref name.
    let name: String = run
        .run_id
        .chars()
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
        .collect();
    format!("refs/okstra/snapshots/{name}-{hex}")
}

/// The marker at a copy's root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Marker {
    schema_version: u32,
    project_root: PathBuf,
    run_dir: PathBuf,
    worker_id: String,
    kind: WorkspaceKind,
    snapshot_ref: Option<String>,
    created_at: String,
}

impl Marker {
    /// Whether a copy with marker `self` is the one `wanted` describes (the
    /// creation time aside).
    fn is_for(&self, wanted: &Marker) -> bool {
        self.project_root == wanted.project_root
            && self.run_dir == wanted.run_dir
            && self.worker_id == wanted.worker_id
            && self.kind == wanted.kind
            && self.snapshot_ref == wanted.snapshot_ref
    }

    fn write(&self, root: &Path) -> Result<(), Error> {
        let mut bytes = serde_json::to_vec_pretty(self).map_err(|err| Error::Io {
            action: "write the marker of",
            path: root.to_path_buf(),
            source: io::Error::other(err),
        })?;
        bytes.push(b'\n');
        crate::durable::write_atomic(&root.join(MARKER), &bytes)
            .map_err(Error::io("write the marker of", root))
    }

    /// The marker at `root`, when there is a regular file that reads as one.
    fn read(root: &Path) -> Option<Marker> {
        let bytes =
            crate::fsread::read_no_follow(&root.join(MARKER), crate::fsread::Kind::Manifest)
                .ok()?;
        serde_json::from_slice(&bytes).ok()
    }
}

/// One attempt's workspace as decided before anything is made: cheap (no
/// git runs, no copying), so the engine records it first.
#[derive(Debug, Clone)]
pub struct Plan {
    pub kind: WorkspaceKind,
    pub location: Location,
    pub snapshot_ref: Option<String>,
    /// What a git copy holds.
    pub checkout: Checkout,
    project_root: PathBuf,
    marker: Marker,
    /// Another worker's copy, read by this one ([`Plan::shared`]).
    shared: bool,
}

/// Decide `worker_id`'s workspace in `run` (the copy `worker_id` owns): a
/// git copy of `checkout` inside git, a file copy outside.
pub fn plan(run: &RunIdentity, worker_id: &str, checkout: Checkout) -> Result<Plan, Error> {
    let location = locate(&run.project_root, &run.task_key, &run.run_id, worker_id)?;
    let kind = if location.in_git {
        WorkspaceKind::GitCopy
    } else {
        WorkspaceKind::FileCopy
    };
    let snapshot_ref = (kind == WorkspaceKind::GitCopy).then(|| snapshot_ref(run));
    let project_root = canonical(&run.project_root);
    Ok(Plan {
        marker: Marker {
            schema_version: MARKER_VERSION,
            project_root: project_root.clone(),
            run_dir: canonical(&run.run_dir),
            worker_id: worker_id.to_owned(),
            kind,
            snapshot_ref: snapshot_ref.clone(),
            created_at: crate::clock::rfc3339_now(),
        },
        kind,
        location,
        snapshot_ref,
        checkout,
        project_root,
        shared: false,
    })
}

impl Plan {
    /// The same copy, read by another worker (its owner's view brought to
    /// `checkout` only when it is not there yet).
    pub fn shared(mut self) -> Plan {
        self.shared = true;
        self
    }

    /// What the dispatch record says before the copy is made.
    pub fn record(&self) -> WorkspaceRecord {
        WorkspaceRecord {
            path: self.location.root.clone(),
            snapshot_ref: self.snapshot_ref.clone(),
            kind: self.kind.into(),
            snapshot_ms: None,
            copy_ms: None,
            commit: match &self.checkout.files {
                Rev::Commit(commit) => Some(commit.clone()),
                Rev::Snapshot | Rev::Base => None,
            },
            head: None,
        }
    }
}

/// A workspace that exists.
#[derive(Debug, Clone)]
pub struct Made {
    pub kind: WorkspaceKind,
    /// What the record names (the copy's root, or the in-place symlink).
    pub path: PathBuf,
    /// The worker's project root (its working folder).
    pub project: PathBuf,
    /// Why no copy could be made, when it runs in place.
    pub fallback: Option<String>,
    /// Time spent on the run's snapshot (making or waiting for it).
    pub snapshot_ms: Option<u64>,
    /// Time spent making the copy.
    pub copy_ms: u64,
    /// The commit whose files a git copy holds, and the one its `HEAD` names.
    pub commit: Option<String>,
    pub head: Option<String>,
}

impl Made {
    /// The record with the figures of what was made.
    pub fn record(&self, plan: &Plan) -> WorkspaceRecord {
        WorkspaceRecord {
            path: self.path.clone(),
            snapshot_ref: plan.snapshot_ref.clone(),
            kind: self.kind.into(),
            snapshot_ms: self.snapshot_ms,
            copy_ms: Some(self.copy_ms),
            commit: self.commit.clone(),
            head: self.head.clone(),
        }
    }
}

/// Make `plan`'s workspace (blocking: run it off the engine's event loop).
/// With `allow_unisolated`, a copy that cannot be made becomes the project
/// itself (a symlink at the copy's path); without, its error.
pub fn make(plan: &Plan, snapshots: &Snapshots, allow_unisolated: bool) -> Result<Made, Error> {
    let mut snapshot_ms = None;
    let mut commits = (None, None);
    let started = Instant::now();
    let made = match plan.kind {
        WorkspaceKind::GitCopy => {
            let waited = Instant::now();
            let snapshot = snapshots.get();
            snapshot_ms = Some(millis(waited));
            snapshot.and_then(|snapshot| {
                let files = resolve(&plan.checkout.files, &snapshot)
                    .unwrap_or_else(|| snapshot.commit.clone());
                let head = resolve(&plan.checkout.head, &snapshot);
                let made = git_copy::make(
                    &plan.location,
                    &snapshot,
                    &git_copy::Target {
                        files: &files,
                        head: head.as_deref(),
                    },
                    &plan.marker,
                    &plan.project_root,
                    plan.shared,
                );
                commits = (Some(files), head);
                made
            })
        }
        WorkspaceKind::FileCopy => {
            file_copy::make(&plan.project_root, &plan.location, &plan.marker)
        }
        WorkspaceKind::None => Ok(()),
    };
    let (commit, head) = commits;
    let copy_ms = millis(started).saturating_sub(snapshot_ms.unwrap_or(0));
    let made_as = |kind: WorkspaceKind, path: PathBuf, fallback: Option<String>| Made {
        kind,
        path,
        project: plan.location.project.clone(),
        fallback,
        snapshot_ms,
        copy_ms,
        commit: commit.clone(),
        head: head.clone(),
    };
    match made {
        Ok(()) if plan.kind != WorkspaceKind::None => {
            Ok(made_as(plan.kind, plan.location.root.clone(), None))
        }
        Ok(()) => in_place(plan)
            .map(|()| made_as(WorkspaceKind::None, plan.location.project.clone(), None)),
        Err(err) => {
            // A half-made copy carries our marker; nothing else is touched.
            let _ = remove(
                &plan.location.root,
                plan.kind,
                &plan.project_root,
                &plan.marker.run_dir,
            );
            if !allow_unisolated {
                return Err(err);
            }
            let why = format!("{:#}", anyhow::Error::from(err));
            in_place(plan)?;
            Ok(made_as(
                WorkspaceKind::None,
                plan.location.project.clone(),
                Some(why),
            ))
        }
    }
}

/// The commit `rev` names for `snapshot` (`None`: the base of a
/// repository that had no commit).
fn resolve(rev: &Rev, snapshot: &snapshot::Snapshot) -> Option<String> {
    match rev {
        Rev::Snapshot => Some(snapshot.commit.clone()),
        Rev::Base => snapshot.base.clone(),
        Rev::Commit(commit) => Some(commit.clone()),
    }
}

/// The project itself at the copy's path: a symlink, so the prompt's project
/// root leads to it.
fn in_place(plan: &Plan) -> Result<(), Error> {
    let link = &plan.location.project;
    if let Some(parent) = link.parent() {
        std::fs::create_dir_all(parent).map_err(Error::io("create", parent))?;
    }
    match std::fs::read_link(link) {
        Ok(target) if target == plan.project_root => return Ok(()),
        Ok(_) => std::fs::remove_file(link).map_err(Error::io("replace", link))?,
        Err(_) => {}
    }
    std::os::unix::fs::symlink(&plan.project_root, link).map_err(Error::io("link", link))
}

fn millis(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
