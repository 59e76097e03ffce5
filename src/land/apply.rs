//! The working-tree half of the landing gate, and the landing itself: the
//! change from the run's snapshot to the branch's tip, applied to the
//! user's working tree file by file.
//!
//! For each file the change touches, what is in the working tree now (W)
//! is compared with the snapshot (S), the user's `HEAD` (H) and the index:
//!
//! - W is S: nobody touched it since the run began: the tip's version (T)
//!   is written (or the file deleted);
//! - W is H and the index is H (no uncommitted edit), H is not S: only the
//!   user's new commits changed it: merged three-way (`git merge-file`,
//!   base S, ours H, theirs T); one that does not merge is a `conflict`;
//! - otherwise the file has uncommitted edits that differ from the
//!   snapshot: `dirty-overlap`.
//!
//! Everything is checked before anything is written ([`check`]);
//! [`write()`] then makes sure no file changed since the check, stages every
//! file's new content beside it (streamed from git: a file of any size
//! lands, none is held in memory), and only then replaces each one
//! atomically (`durable`). The index, `HEAD` and every ref are left as they
//! are: the user commits the change. A path beneath a symlink or a file in
//! the working tree, or under `.git` or `.okstra`, is never written, and a
//! symlink whose target leaves the project never lands (`symlink-outside`).

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::git::{self, Git};
use crate::run::team_state::ExecutorCommits;

use super::gate::{Blocker, short};
use crate::vocab::{Ancestry, FileAction, LandReason};

/// git's file modes.
const MODE_FILE: &str = "100644";
const MODE_EXECUTABLE: &str = "100755";
const MODE_SYMLINK: &str = "120000";
const MODE_GITLINK: &str = "160000";
/// What a landed file gets (git's own, under the usual umask 022).
const PERMISSIONS_FILE: u32 = 0o644;
const PERMISSIONS_EXECUTABLE: u32 = 0o755;

/// A file's content to land.
#[derive(Debug, Clone)]
enum Content {
    /// A blob, checked out through the repository's filters when it is
    /// written: streamed from git into the file, never held in memory, so
    /// a file of any size lands.
    File {
        oid: String,
        executable: bool,
    },
    Symlink(Vec<u8>),
    Absent,
}

/// One file of the change, checked.
#[derive(Debug, Clone)]
pub struct Landed {
    /// Relative to the repository's top level.
    pub path: PathBuf,
    pub action: FileAction,
    content: Content,
    /// The working tree's file as checked (`None`: absent).
    stamp: Option<Stamp>,
}

/// Enough of a file's metadata to see that it changed since the check.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    ino: u64,
    len: u64,
    mtime: i64,
    mtime_ns: i64,
    mode: u32,
}

impl Stamp {
    fn of(meta: &fs::Metadata) -> Stamp {
        Stamp {
            ino: meta.ino(),
            len: meta.len(),
            mtime: meta.mtime(),
            mtime_ns: meta.mtime_nsec(),
            mode: meta.mode(),
        }
    }
}

/// The working tree's half of the gate.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The repository's top level, where the change's paths start.
    pub toplevel: PathBuf,
    /// The user's `HEAD` now.
    pub head: Option<String>,
    pub ancestry: Ancestry,
    /// The snapshot is a commit as it was (the user had nothing
    /// uncommitted when the run began): merging the branch would carry
    /// only the Executor's change into history.
    pub mergeable: bool,
    pub files: Vec<Landed>,
    pub blockers: Vec<Blocker>,
}

/// A file's entry in a tree or the index: mode and object.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    mode: String,
    oid: String,
}

/// One path the change touches: its snapshot and tip entries.
struct Change {
    path: Vec<u8>,
    snapshot: Option<Entry>,
    tip: Option<Entry>,
}

/// Check the change `commits` records against the working tree of the
/// repository at `project`, and compute every file's new content.
pub fn check(project: &Path, commits: &ExecutorCommits) -> Result<Plan> {
    let git = Git::at(project);
    let toplevel = PathBuf::from(git.line(["rev-parse", "--show-toplevel"])?);
    let git = Git::at(&toplevel);
    let head = git.commit("HEAD")?;
    let base = git.commit(&format!("{}^", commits.snapshot))?;
    let mut blockers = Vec::new();
    let ancestry = match (&base, &head) {
        (Some(base), Some(head)) if !is_ancestor(&git, base, head)? => Ancestry::Diverged,
        (Some(_), None) => Ancestry::Diverged,
        (_, Some(head)) if is_ancestor(&git, &commits.tip, head)? => Ancestry::Merged,
        _ => Ancestry::Ahead,
    };
    if ancestry == Ancestry::Diverged {
        blockers.push(Blocker::new(
            LandReason::BaseNotAncestor,
            format!(
                "the run began on `{}`, which is not an ancestor of your `HEAD` (`{}`): the branch `{}` was made on another history",
                base.as_deref().map_or("(no commit)", short),
                head.as_deref().map_or("(no commit)", short),
                commits.branch.trim_start_matches("refs/heads/")
            ),
        ));
    }
    let mergeable = match &base {
        Some(base) => tree(&git, base)? == tree(&git, &commits.snapshot)?,
        None => false,
    };
    let changes = diff(&git, &commits.snapshot, &commits.tip)?;
    let head_tree = match &head {
        Some(head) => entries(
            &git,
            &["ls-tree", "-r", "-z", "--full-tree", head],
            &changes,
        )?,
        None => HashMap::new(),
    };
    let index = entries(&git, &["ls-files", "--stage", "-z"], &changes)?;
    let worktree = worktree(&git, &toplevel, &changes)?;
    let mut files = Vec::new();
    for change in &changes {
        let shown = String::from_utf8_lossy(&change.path).into_owned();
        if let Some(why) = unsafe_path(&toplevel, &change.path) {
            blockers.push(Blocker::new(
                LandReason::Conflict,
                format!("`{shown}` {why}"),
            ));
            continue;
        }
        let gitlink = |e: &Option<Entry>| e.as_ref().is_some_and(|e| e.mode == MODE_GITLINK);
        if gitlink(&change.snapshot) || gitlink(&change.tip) {
            blockers.push(Blocker::new(
                LandReason::Conflict,
                format!("`{shown}` is a submodule, which okstra does not land"),
            ));
            continue;
        }
        let (now, stamp) = worktree
            .get(&change.path)
            .cloned()
            .unwrap_or((Now::Absent, None));
        let now_entry = match &now {
            Now::Absent => None,
            Now::Entry(entry) => Some(entry.clone()),
            Now::Folder => {
                blockers.push(Blocker::new(
                    LandReason::DirtyOverlap,
                    format!("`{shown}` is a folder in your working tree"),
                ));
                continue;
            }
        };
        let in_head = head_tree.get(&change.path).cloned();
        let in_index = index.get(&change.path).cloned();
        if now_entry == change.snapshot {
            let content = content(&git, change.tip.as_ref())?;
            if let Content::Symlink(target) = &content
                && let Some(why) = leaves(&change.path, target)
            {
                blockers.push(Blocker::new(
                    LandReason::SymlinkOutside,
                    format!(
                        "`{shown}` is a symlink to `{}`, {why}",
                        String::from_utf8_lossy(target)
                    ),
                ));
                continue;
            }
            files.push(Landed {
                path: PathBuf::from(OsStr::from_bytes(&change.path)),
                action: if change.tip.is_some() {
                    FileAction::Write
                } else {
                    FileAction::Delete
                },
                content,
                stamp,
            });
            continue;
        }
        if now_entry != in_head || in_index != in_head {
            blockers.push(Blocker::new(
                LandReason::DirtyOverlap,
                format!(
                    "`{shown}` has uncommitted edits that differ from the snapshot the Executor worked on"
                ),
            ));
            continue;
        }
        // Only the user's new commits changed it since the snapshot.
        if in_head == change.tip {
            continue;
        }
        match merge(&git, &change.path, change.snapshot.as_ref(), in_head.as_ref(), change.tip.as_ref())? {
            Some(merged) => files.push(Landed {
                path: PathBuf::from(OsStr::from_bytes(&change.path)),
                action: FileAction::Merge,
                content: content(&git, Some(&merged))?,
                stamp,
            }),
            None => blockers.push(Blocker::new(
                LandReason::Conflict,
                format!(
                    "`{shown}` was changed both by your commits since the run began and by the Executor, and the two do not merge"
                ),
            )),
        }
    }
    Ok(Plan {
        toplevel,
        head,
        ancestry,
        mergeable,
        files,
        blockers,
    })
}

/// Write every checked file of `plan`, after making sure none changed
/// since the check (then nothing is written).
pub fn write(plan: &Plan) -> Result<()> {
    for file in &plan.files {
        let path = plan.toplevel.join(&file.path);
        let now = path.symlink_metadata().ok().map(|meta| Stamp::of(&meta));
        if now != file.stamp {
            bail!(
                "`{}` changed while okstra was landing; nothing was written, run `okstra land` again",
                file.path.display()
            );
        }
    }
    // Every file's new content is staged beside it first (streamed from
    // git): a blob that cannot be checked out stops the landing before any
    // file of the user's is replaced.
    let git = Git::at(&plan.toplevel);
    let mut staged = Vec::new();
    for file in &plan.files {
        if let Content::File { oid, executable } = &file.content {
            let path = plan.toplevel.join(&file.path);
            let mode = if *executable {
                PERMISSIONS_EXECUTABLE
            } else {
                PERMISSIONS_FILE
            };
            make_parents(&path).with_context(|| format!("cannot land `{}`", path.display()))?;
            let pending =
                crate::durable::stage(&path, mode, |out| check_out(&git, &file.path, oid, out))
                    .with_context(|| format!("cannot land `{}`", path.display()))?;
            staged.push(pending);
        }
    }
    for pending in staged {
        let path = pending.path().to_path_buf();
        pending
            .commit()
            .with_context(|| format!("cannot land `{}`", path.display()))?;
    }
    for file in &plan.files {
        let path = plan.toplevel.join(&file.path);
        let failed = || format!("cannot land `{}`", path.display());
        match &file.content {
            Content::Absent => match fs::remove_file(&path) {
                Ok(()) => remove_empty_parents(&plan.toplevel, &path),
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => return Err(err).with_context(failed),
            },
            Content::File { .. } => {}
            Content::Symlink(target) => {
                make_parents(&path).with_context(failed)?;
                crate::durable::replace_with_symlink(&path, Path::new(OsStr::from_bytes(target)))
                    .with_context(failed)?;
            }
        }
    }
    Ok(())
}

/// Write blob `oid` as checked out at `path` (relative to the top level:
/// the repository's filters for that path apply) into `out`, streamed.
/// Like every git okstra runs: hooks off, no prompt, nothing steering it
/// to another repository (`Git::streaming`).
fn check_out(git: &Git, path: &Path, oid: &str, out: &mut fs::File) -> std::io::Result<()> {
    let mut arg = std::ffi::OsString::from("--path=");
    arg.push(path.as_os_str());
    stream(
        git,
        &[
            OsStr::new("cat-file"),
            OsStr::new("--filters"),
            &arg,
            OsStr::new(oid),
        ],
        out,
    )
}

/// Write blob `oid` as git stores it into `out`, streamed.
fn blob(git: &Git, oid: &str, out: &mut fs::File) -> std::io::Result<()> {
    stream(
        git,
        &[OsStr::new("cat-file"), OsStr::new("blob"), OsStr::new(oid)],
        out,
    )
}

/// `git args…` with its stdout going straight into `out`; git's words
/// (bounded) when it fails.
fn stream(git: &Git, args: &[&OsStr], out: &mut fs::File) -> std::io::Result<()> {
    let output = git
        .streaming(args)
        .stdout(out.try_clone()?)
        .stderr(std::process::Stdio::piped())
        .output()?;
    if output.status.success() {
        return Ok(());
    }
    let shown: Vec<_> = args.iter().map(|arg| arg.to_string_lossy()).collect();
    Err(std::io::Error::other(format!(
        "`git {}` failed ({}): {}",
        shown.join(" "),
        output.status,
        crate::fsread::clip(String::from_utf8_lossy(&output.stderr).trim(), 600)
    )))
}

/// Why a symlink at `path` (relative to the top level) to `target` leads
/// out of the project, if it does: an absolute target, or a relative one
/// that climbs above the top level (read on its text: the link is not
/// there yet).
fn leaves(path: &[u8], target: &[u8]) -> Option<&'static str> {
    let target = Path::new(OsStr::from_bytes(target));
    if target.is_absolute() {
        return Some("an absolute path, which okstra does not land");
    }
    let mut depth = Path::new(OsStr::from_bytes(path))
        .parent()
        .map_or(0, |dir| dir.components().count());
    for component in target.components() {
        match component {
            Component::ParentDir if depth == 0 => {
                return Some("which is outside the project");
            }
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    None
}

fn make_parents(path: &Path) -> std::io::Result<()> {
    match path.parent() {
        Some(parent) => fs::create_dir_all(parent),
        None => Ok(()),
    }
}

/// Remove the folders a deletion left empty, up to the top level (as git
/// does); a folder that is not empty stays.
fn remove_empty_parents(toplevel: &Path, path: &Path) {
    let mut dir = path.parent();
    while let Some(folder) = dir {
        if folder == toplevel || !folder.starts_with(toplevel) || fs::remove_dir(folder).is_err() {
            break;
        }
        dir = folder.parent();
    }
}

/// Why okstra will not write at `path` (relative, as bytes) under
/// `toplevel`: a component git would never write, a newline (paths are
/// handed to git one a line), or a folder on the way that is a symlink or a
/// file.
fn unsafe_path(toplevel: &Path, path: &[u8]) -> Option<String> {
    if path.contains(&b'\n') {
        return Some("has a newline in its name, which okstra does not land".into());
    }
    let relative = Path::new(OsStr::from_bytes(path));
    let mut at = toplevel.to_path_buf();
    let components: Vec<Component<'_>> = relative.components().collect();
    for (index, component) in components.iter().enumerate() {
        let Component::Normal(name) = component else {
            return Some("is not a plain relative path".into());
        };
        if *name == ".git" || *name == crate::confine::OKSTRA_DIR {
            return Some(format!(
                "lies under `{}`, which okstra never writes",
                name.to_string_lossy()
            ));
        }
        at.push(name);
        if index + 1 == components.len() {
            break;
        }
        match at.symlink_metadata() {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Some(format!(
                    "lies beneath `{}`, which is not a folder in your working tree",
                    at.strip_prefix(toplevel).unwrap_or(&at).display()
                ));
            }
            Err(_) => break,
        }
    }
    None
}

/// Whether `ancestor` is an ancestor of `of` (`merge-base --is-ancestor`
/// exits 1, without a word, when it is not).
fn is_ancestor(git: &Git, ancestor: &str, of: &str) -> Result<bool, git::Error> {
    match git.run(["merge-base", "--is-ancestor", ancestor, of]) {
        Ok(_) => Ok(true),
        Err(git::Error::Failed { status, .. }) if status == "exit 1" => Ok(false),
        Err(err) => Err(err),
    }
}

fn tree(git: &Git, commit: &str) -> Result<String, git::Error> {
    git.line(["rev-parse", &format!("{commit}^{{tree}}")])
}

/// The files the change from `from` to `to` touches.
fn diff(git: &Git, from: &str, to: &str) -> Result<Vec<Change>> {
    let raw = git.run(["diff-tree", "-r", "-z", "--raw", "--no-renames", from, to])?;
    let mut fields = raw.split(|b| *b == 0).filter(|f| !f.is_empty());
    let mut changes = Vec::new();
    while let Some(meta) = fields.next() {
        let path = fields
            .next()
            .context("`git diff-tree` printed an entry without a path")?;
        // `:<old mode> <new mode> <old id> <new id> <status>`
        let meta = String::from_utf8_lossy(meta.strip_prefix(b":").unwrap_or(meta)).into_owned();
        let parts: Vec<&str> = meta.split_whitespace().collect();
        let [old_mode, new_mode, old_id, new_id, ..] = parts.as_slice() else {
            bail!("`git diff-tree` printed an entry okstra cannot read: `{meta}`");
        };
        let entry = |mode: &str, oid: &str| {
            (!oid.bytes().all(|b| b == b'0')).then(|| Entry {
                mode: mode.to_owned(),
                oid: oid.to_owned(),
            })
        };
        changes.push(Change {
            path: path.to_vec(),
            snapshot: entry(old_mode, old_id),
            tip: entry(new_mode, new_id),
        });
    }
    Ok(changes)
}

/// The entries `args` lists (`ls-tree -r -z` or `ls-files --stage -z`,
/// `<mode> <type or id> <id or stage>\t<path>`), for the changed paths
/// only; an index entry in conflict (stage ≠ 0) reads as a mode of its own.
fn entries(git: &Git, args: &[&str], changes: &[Change]) -> Result<HashMap<Vec<u8>, Entry>> {
    let wanted: std::collections::HashSet<&[u8]> =
        changes.iter().map(|c| c.path.as_slice()).collect();
    let raw = git.run(args)?;
    let mut found = HashMap::new();
    for record in raw.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        let Some(tab) = record.iter().position(|b| *b == b'\t') else {
            continue;
        };
        let path = &record[tab + 1..];
        if !wanted.contains(path) {
            continue;
        }
        let meta = String::from_utf8_lossy(&record[..tab]).into_owned();
        let parts: Vec<&str> = meta.split_whitespace().collect();
        let entry = match parts.as_slice() {
            // ls-tree: mode type id
            [mode, kind, oid] if kind.chars().all(|c| c.is_ascii_alphabetic()) => Entry {
                mode: (*mode).to_owned(),
                oid: (*oid).to_owned(),
            },
            // ls-files --stage: mode id stage
            [mode, oid, stage] => Entry {
                mode: if *stage == "0" {
                    (*mode).to_owned()
                } else {
                    format!("{mode}:stage-{stage}")
                },
                oid: (*oid).to_owned(),
            },
            _ => continue,
        };
        found.insert(path.to_vec(), entry);
    }
    Ok(found)
}

/// What the working tree holds at a changed path, and its stamp.
type Seen = (Now, Option<Stamp>);

/// A changed path in the working tree now.
#[derive(Debug, Clone)]
enum Now {
    Absent,
    Entry(Entry),
    Folder,
}

/// What the working tree holds at each changed path: as git would store
/// it (`hash-object`, with the repository's filters), and its stamp.
fn worktree(git: &Git, toplevel: &Path, changes: &[Change]) -> Result<BTreeMap<Vec<u8>, Seen>> {
    let mut found = BTreeMap::new();
    let mut regular: Vec<(Vec<u8>, bool)> = Vec::new();
    for change in changes {
        if change.path.contains(&b'\n') {
            continue;
        }
        let path = toplevel.join(OsStr::from_bytes(&change.path));
        let Ok(meta) = path.symlink_metadata() else {
            found.insert(change.path.clone(), (Now::Absent, None));
            continue;
        };
        let stamp = Some(Stamp::of(&meta));
        if meta.file_type().is_symlink() {
            let target = fs::read_link(&path)
                .with_context(|| format!("cannot read the symlink `{}`", path.display()))?;
            let oid = git
                .clone()
                .input(target.as_os_str().as_bytes().to_vec())
                .line(["hash-object", "--stdin"])?;
            found.insert(
                change.path.clone(),
                (
                    Now::Entry(Entry {
                        mode: MODE_SYMLINK.to_owned(),
                        oid,
                    }),
                    stamp,
                ),
            );
        } else if meta.is_dir() {
            found.insert(change.path.clone(), (Now::Folder, stamp));
        } else {
            let executable = meta.permissions().mode() & 0o111 != 0;
            regular.push((change.path.clone(), executable));
            found.insert(change.path.clone(), (Now::Absent, stamp));
        }
    }
    if regular.is_empty() {
        return Ok(found);
    }
    let mut input = Vec::new();
    for (path, _) in &regular {
        input.extend_from_slice(path);
        input.push(b'\n');
    }
    let oids = git
        .clone()
        .input(input)
        .lines(["hash-object", "--stdin-paths"])?;
    if oids.len() != regular.len() {
        bail!(
            "`git hash-object` named {} objects for {} files",
            oids.len(),
            regular.len()
        );
    }
    for ((path, executable), oid) in regular.into_iter().zip(oids) {
        let mode = if executable {
            MODE_EXECUTABLE
        } else {
            MODE_FILE
        };
        if let Some(slot) = found.get_mut(&path) {
            slot.0 = Now::Entry(Entry {
                mode: mode.to_owned(),
                oid,
            });
        }
    }
    Ok(found)
}

/// The content to land for `entry` (`None`: the file goes): a symlink's
/// target (a short blob), or the blob a file is checked out from when it
/// is written ([`check_out`]).
fn content(git: &Git, entry: Option<&Entry>) -> Result<Content> {
    let Some(entry) = entry else {
        return Ok(Content::Absent);
    };
    if entry.mode == MODE_SYMLINK {
        return Ok(Content::Symlink(git.run(["cat-file", "blob", &entry.oid])?));
    }
    Ok(Content::File {
        oid: entry.oid.clone(),
        executable: entry.mode == MODE_EXECUTABLE,
    })
}

/// The three-way merge at `path` of `ours` (the user's `HEAD`) and
/// `theirs` (the branch's tip) from `base` (the snapshot), as an entry;
/// `None` when they do not merge.
fn merge(
    git: &Git,
    path: &[u8],
    base: Option<&Entry>,
    ours: Option<&Entry>,
    theirs: Option<&Entry>,
) -> Result<Option<Entry>> {
    let (Some(base), Some(ours), Some(theirs)) = (base, ours, theirs) else {
        // Added on both sides, or deleted on one and changed on the other.
        return Ok(None);
    };
    if [base, ours, theirs].iter().any(|e| e.mode == MODE_SYMLINK) {
        return Ok(None);
    }
    let mode = if base.mode == ours.mode {
        theirs.mode.clone()
    } else if base.mode == theirs.mode || ours.mode == theirs.mode {
        ours.mode.clone()
    } else {
        return Ok(None);
    };
    // `merge-file` merges files: the three versions as git stores them,
    // in a scratch folder of our own.
    let scratch = tempfile::Builder::new()
        .prefix("okstra-land-")
        .tempdir()
        .context("cannot make a scratch folder for a three-way merge")?;
    let mut files = Vec::new();
    for (name, entry) in [("yours", ours), ("snapshot", base), ("okstra", theirs)] {
        let file = scratch.path().join(name);
        // As git stores it (no filter), streamed: a file of any size merges.
        let mut out = fs::File::create(&file)
            .with_context(|| format!("cannot write `{}`", file.display()))?;
        blob(git, &entry.oid, &mut out)
            .with_context(|| format!("cannot write `{}`", file.display()))?;
        files.push(file);
    }
    let label = String::from_utf8_lossy(path).into_owned();
    // Merged in place into the first file (no `--stdout`: the result is
    // never held in memory).
    let merged = git.run([
        OsStr::new("merge-file"),
        OsStr::new("-L"),
        OsStr::new(&format!("{label} (yours)")),
        OsStr::new("-L"),
        OsStr::new(&format!("{label} (snapshot)")),
        OsStr::new("-L"),
        OsStr::new(&format!("{label} (okstra)")),
        files[0].as_os_str(),
        files[1].as_os_str(),
        files[2].as_os_str(),
    ]);
    match merged {
        Ok(_) => {
            // Stored as a blob (as git stores it, no filter), so it is
            // checked out like every other file.
            let oid = git.line([
                OsStr::new("hash-object"),
                OsStr::new("-w"),
                OsStr::new("--no-filters"),
                files[0].as_os_str(),
            ])?;
            Ok(Some(Entry { mode, oid }))
        }
        // A positive exit is the number of conflicts.
        Err(git::Error::Failed { status, .. })
            if status
                .strip_prefix("exit ")
                .and_then(|n| n.parse::<i32>().ok())
                .is_some_and(|n| (1..=127).contains(&n)) =>
        {
            Ok(None)
        }
        Err(err) => Err(err.into()),
    }
}
