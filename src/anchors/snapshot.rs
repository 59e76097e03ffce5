//! The one snapshot of the project a run's anchors are checked against, so
//! a check never reads the live tree (which the user keeps editing) and
//! every check of the run reads the same bytes.
//!
//! [`Snapshot`] is all the checker needs: a project file's bytes, bounded,
//! confined to the project. Two implementations: [`GitSnapshot`] reads the
//! blobs of one commit through the git CLI (`git ls-tree`, `git cat-file
//! --batch`, one helper: [`crate::git`]); [`DirSnapshot`] reads a plain folder.
//! Symlinks are followed only while they stay inside the project.
//!
//! [`ensure`] takes the run's snapshot once and records it in
//! `state/snapshot.json`: in git, the run's one snapshot commit — the same
//! one every isolated worker's copy checks out (`workspace::Snapshots`,
//! kept under `refs/okstra/snapshots/…`); outside git, a bounded copy in
//! the run's `snapshot/` folder. The dispatch engine takes it before the
//! first reviewer's first attempt; a run that got there another way (a host
//! lead, hand-written results) takes it at its first check.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Component, Path, PathBuf};
use std::process::Stdio;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::fsread;
use crate::run::Run;

/// Version of `state/snapshot.json`.
const RECORD_VERSION: u32 = 1;
/// Most symlinks followed to reach one file (as the kernel's `ELOOP`).
const MAX_LINK_HOPS: u32 = 8;
/// Paths per `git ls-tree` call (argv stays far below its limits).
const LS_TREE_BATCH: usize = 256;
/// Most bytes of project files one check session reads from git.
const MAX_SESSION_BYTES: u64 = 256 * 1024 * 1024;
/// A copy outside git stops after this many files or bytes (the anchors of
/// files left out are then not resolvable, and say so).
const MAX_COPY_FILES: u64 = 20_000;
const MAX_COPY_BYTES: u64 = 256 * 1024 * 1024;
/// Folders never copied: okstra's own (runs, logs), and a VCS's store.
const NEVER_COPIED: [&str; 4] = [".okstra", ".git", ".hg", ".svn"];

/// Why a project file could not be read from a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreadable {
    /// Not in the snapshot.
    Missing,
    /// It leads outside the project (`..`, an absolute path elsewhere, a
    /// symlink out).
    Outside,
    Folder,
    /// Over the read limit (`fsread::Kind::Source`), with its size.
    TooLarge(u64),
    /// A FIFO, device, socket, or a git submodule: nothing to read.
    NotAFile(&'static str),
    /// The snapshot could not be read (git failed, too many links, …).
    Failed(String),
}

impl Unreadable {
    /// Why an anchor on `path` does not resolve, as one phrase.
    pub fn reason(&self, path: &str) -> String {
        match self {
            Unreadable::Missing => {
                format!("`{path}` is not in the run's snapshot of the project")
            }
            Unreadable::Outside => format!("`{path}` leads outside the project"),
            Unreadable::Folder => format!("`{path}` is a folder, not a file"),
            Unreadable::TooLarge(size) => format!(
                "`{path}` is {size} bytes, over the {} bytes okstra reads of a project file",
                fsread::Kind::Source.limit()
            ),
            Unreadable::NotAFile(what) => format!("`{path}` is {what}, not a file"),
            Unreadable::Failed(why) => format!("`{path}` could not be read: {why}"),
        }
    }
}

/// A project as one run saw it: what an anchor is checked against.
/// Paths are relative to the project root, `/`-separated, already
/// normalised (no `.`, no `..`, not absolute).
pub trait Snapshot {
    /// Read ahead every path a check is about to ask for (a no-op where a
    /// read is cheap; one or two git processes for a whole check).
    fn prefetch(&self, _paths: &[&str]) {}

    /// The bytes of `path`, at most `fsread::Kind::Source.limit()`.
    fn read(&self, path: &str) -> Result<Vec<u8>, Unreadable>;
}

/// A plain folder holding the project: reads are confined to it, symlinks
/// followed only while they stay inside.
pub struct DirSnapshot {
    root: PathBuf,
}

impl DirSnapshot {
    pub fn new(root: &Path) -> io::Result<DirSnapshot> {
        Ok(DirSnapshot {
            root: fs::canonicalize(root)?,
        })
    }
}

impl Snapshot for DirSnapshot {
    fn read(&self, path: &str) -> Result<Vec<u8>, Unreadable> {
        let resolved = match fs::canonicalize(self.root.join(path)) {
            Ok(resolved) => resolved,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                // A dangling link that points outside is still "outside".
                return Err(if link_leaves(&self.root, path) {
                    Unreadable::Outside
                } else {
                    Unreadable::Missing
                });
            }
            Err(err) => return Err(Unreadable::Failed(err.to_string())),
        };
        if !resolved.starts_with(&self.root) {
            return Err(Unreadable::Outside);
        }
        fsread::read_no_follow(&resolved, fsread::Kind::Source).map_err(|err| match err {
            fsread::Error::TooLarge { size, .. } => Unreadable::TooLarge(size),
            fsread::Error::NotRegular {
                what: "a folder", ..
            } => Unreadable::Folder,
            fsread::Error::NotRegular { what, .. } => Unreadable::NotAFile(what),
            other if other.is_not_found() => Unreadable::Missing,
            other => Unreadable::Failed(format!("{other:#}")),
        })
    }
}

/// Whether `root/path`, or a folder on the way, is a symlink whose target
/// leaves `root` on its text (for a dangling link canonicalize cannot follow).
fn link_leaves(root: &Path, path: &str) -> bool {
    let mut at = root.to_path_buf();
    for part in path.split('/') {
        at.push(part);
        if let Ok(target) = fs::read_link(&at) {
            let joined = at.parent().unwrap_or(root).join(target);
            return !crate::confine::normalize(&joined).starts_with(root);
        }
    }
    false
}

/// One commit of a git repository, read through the git CLI. The project
/// may be a subfolder (`prefix`) of the repository.
pub struct GitSnapshot {
    repo: PathBuf,
    commit: String,
    /// The project's folder inside the repository: empty, or `svc/`.
    prefix: String,
    cache: RefCell<HashMap<String, Result<Vec<u8>, Unreadable>>>,
}

/// One entry `git ls-tree -l` lists.
struct TreeEntry {
    mode: String,
    oid: String,
    size: Option<u64>,
}

impl GitSnapshot {
    /// `repo` is any folder git works in (the project root); `prefix` is the
    /// project's place in the repository, with a trailing `/` unless empty.
    pub fn new(repo: &Path, commit: &str, prefix: &str) -> GitSnapshot {
        GitSnapshot {
            repo: repo.to_path_buf(),
            commit: commit.to_owned(),
            prefix: prefix.to_owned(),
            cache: RefCell::new(HashMap::new()),
        }
    }

    /// `path`'s entry (and every other path's) in the commit, by full
    /// repository path.
    fn ls_tree(&self, paths: &[String]) -> Result<HashMap<String, TreeEntry>, String> {
        let mut entries = HashMap::new();
        for chunk in paths.chunks(LS_TREE_BATCH) {
            let mut args: Vec<&str> = vec![
                // Literal: a path a model wrote is never a pathspec pattern.
                "--literal-pathspecs",
                "ls-tree",
                "-z",
                "-l",
                "--full-tree",
                &self.commit,
                "--",
            ];
            args.extend(chunk.iter().map(String::as_str));
            let stdout = crate::git::Git::at(&self.repo)
                .run(&args)
                .map_err(|err| format!("{err}"))?;
            for record in stdout.split(|b| *b == 0).filter(|r| !r.is_empty()) {
                let text = String::from_utf8_lossy(record);
                let Some((meta, path)) = text.split_once('\t') else {
                    continue;
                };
                let mut fields = meta.split_whitespace();
                let (Some(mode), Some(_kind), Some(oid), Some(size)) =
                    (fields.next(), fields.next(), fields.next(), fields.next())
                else {
                    continue;
                };
                entries.insert(
                    path.to_owned(),
                    TreeEntry {
                        mode: mode.to_owned(),
                        oid: oid.to_owned(),
                        size: size.parse().ok(),
                    },
                );
            }
        }
        Ok(entries)
    }

    /// The contents of blobs `oids` (one `git cat-file --batch`), at most
    /// [`MAX_SESSION_BYTES`] together.
    fn cat_blobs(&self, oids: &[String]) -> Result<HashMap<String, Vec<u8>>, String> {
        let mut blobs = HashMap::new();
        if oids.is_empty() {
            return Ok(blobs);
        }
        let mut child = crate::git::Git::at(&self.repo)
            .streaming(["cat-file", "--batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|err| format!("cannot run git: {err}"))?;
        let mut stdin = child.stdin.take().ok_or("git has no stdin")?;
        let stdout = child.stdout.take().ok_or("git has no stdout")?;
        let request = oids.iter().fold(String::new(), |mut request, oid| {
            request.push_str(oid);
            request.push('\n');
            request
        });
        // Written on its own thread: git answers while it reads, and a full
        // pipe on both sides would wait forever.
        let read = std::thread::scope(|scope| {
            scope.spawn(move || {
                let _ = stdin.write_all(request.as_bytes());
            });
            let mut reader = BufReader::new(stdout);
            let mut total = 0u64;
            for _ in oids {
                let mut header = String::new();
                if reader.read_line(&mut header).map_err(|e| e.to_string())? == 0 {
                    break;
                }
                let mut fields = header.split_whitespace();
                let (Some(oid), Some(_kind), Some(size)) =
                    (fields.next(), fields.next(), fields.next())
                else {
                    continue; // `<oid> missing`
                };
                let size: u64 = size.parse().map_err(|_| "bad `git cat-file` header")?;
                total += size;
                if total > MAX_SESSION_BYTES {
                    return Err(format!(
                        "okstra reads at most {MAX_SESSION_BYTES} bytes of project files per check"
                    ));
                }
                let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
                (&mut reader)
                    .take(size + 1)
                    .read_to_end(&mut bytes)
                    .map_err(|e| e.to_string())?;
                bytes.truncate(usize::try_from(size).unwrap_or(usize::MAX));
                blobs.insert(oid.to_owned(), bytes);
            }
            Ok(())
        });
        let _ = child.kill();
        let _ = child.wait();
        read.map(|()| blobs)
    }

    /// Resolve `paths` to blobs, following symlinks inside the project.
    fn resolve(&self, paths: &[String]) -> HashMap<String, Result<TreeEntry, Unreadable>> {
        let mut done = HashMap::new();
        // (asked, where it leads now)
        let mut pending: Vec<(String, String)> =
            paths.iter().map(|p| (p.clone(), p.clone())).collect();
        for _ in 0..=MAX_LINK_HOPS {
            if pending.is_empty() {
                break;
            }
            let full: Vec<String> = pending
                .iter()
                .map(|(_, at)| format!("{}{at}", self.prefix))
                .collect();
            let entries = match self.ls_tree(&full) {
                Ok(entries) => entries,
                Err(why) => {
                    for (asked, _) in pending.drain(..) {
                        done.insert(asked, Err(Unreadable::Failed(why.clone())));
                    }
                    break;
                }
            };
            // Symlinks to read: (asked, the link's project path, the rest
            // of the path after it).
            let mut links: Vec<(String, String, String, String)> = Vec::new();
            let mut missing: Vec<(String, String)> = Vec::new();
            for ((asked, at), full) in pending.drain(..).zip(&full) {
                match entries.get(full) {
                    Some(entry) if entry.mode == "120000" => {
                        links.push((asked, at, String::new(), entry.oid.clone()));
                    }
                    Some(entry) if entry.mode == "040000" => {
                        done.insert(asked, Err(Unreadable::Folder));
                    }
                    Some(entry) if entry.mode == "160000" => {
                        done.insert(asked, Err(Unreadable::NotAFile("a git submodule")));
                    }
                    Some(entry) => match entry.size {
                        Some(size) if size > fsread::Kind::Source.limit() => {
                            done.insert(asked, Err(Unreadable::TooLarge(size)));
                        }
                        _ => {
                            done.insert(
                                asked,
                                Ok(TreeEntry {
                                    mode: entry.mode.clone(),
                                    oid: entry.oid.clone(),
                                    size: entry.size,
                                }),
                            );
                        }
                    },
                    None => missing.push((asked, at)),
                }
            }
            // A path through a symlinked folder is not listed: look for the
            // link among its folders.
            let ancestors: Vec<String> = missing
                .iter()
                .flat_map(|(_, at)| folders_of(at))
                .map(|folder| format!("{}{folder}", self.prefix))
                .collect::<HashSet<_>>()
                .into_iter()
                .collect();
            let folder_entries = self.ls_tree(&ancestors).unwrap_or_default();
            for (asked, at) in missing {
                let link = folders_of(&at).into_iter().find_map(|folder| {
                    let entry = folder_entries.get(&format!("{}{folder}", self.prefix))?;
                    (entry.mode == "120000").then(|| (folder, entry.oid.clone()))
                });
                match link {
                    Some((folder, oid)) => {
                        let rest = at[folder.len()..].trim_start_matches('/').to_owned();
                        links.push((asked, folder, rest, oid));
                    }
                    None => {
                        done.insert(asked, Err(Unreadable::Missing));
                    }
                }
            }
            if links.is_empty() {
                break;
            }
            let oids: Vec<String> = links.iter().map(|l| l.3.clone()).collect();
            let targets = match self.cat_blobs(&oids) {
                Ok(targets) => targets,
                Err(why) => {
                    for (asked, ..) in links {
                        done.insert(asked, Err(Unreadable::Failed(why.clone())));
                    }
                    break;
                }
            };
            for (asked, link, rest, oid) in links {
                let target = targets
                    .get(&oid)
                    .map(|t| String::from_utf8_lossy(t).into_owned())
                    .unwrap_or_default();
                let parent = link.rsplit_once('/').map_or("", |(parent, _)| parent);
                let joined = if target.starts_with('/') {
                    None
                } else {
                    let parts: Vec<&str> = [parent, target.as_str(), rest.as_str()]
                        .into_iter()
                        .filter(|part| !part.is_empty())
                        .collect();
                    normalise(&parts.join("/"))
                };
                match joined {
                    Some(next) if !next.is_empty() => pending.push((asked, next)),
                    _ => {
                        done.insert(asked, Err(Unreadable::Outside));
                    }
                }
            }
        }
        for (asked, _) in pending {
            done.insert(
                asked,
                Err(Unreadable::Failed("too many symbolic links".to_owned())),
            );
        }
        done
    }
}

/// The folders on the way to `path`: `a`, `a/b` for `a/b/c`.
fn folders_of(path: &str) -> Vec<String> {
    let mut folders = Vec::new();
    let mut at = 0;
    while let Some(offset) = path[at..].find('/') {
        folders.push(path[..at + offset].to_owned());
        at += offset + 1;
    }
    folders
}

impl Snapshot for GitSnapshot {
    fn prefetch(&self, paths: &[&str]) {
        let wanted: Vec<String> = {
            let cache = self.cache.borrow();
            let mut seen = HashSet::new();
            paths
                .iter()
                .filter(|p| !cache.contains_key(**p) && seen.insert(**p))
                .map(|p| (*p).to_owned())
                .collect()
        };
        if wanted.is_empty() {
            return;
        }
        let resolved = self.resolve(&wanted);
        let oids: Vec<String> = resolved
            .values()
            .filter_map(|r| r.as_ref().ok().map(|e| e.oid.clone()))
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        let blobs = self.cat_blobs(&oids);
        let mut cache = self.cache.borrow_mut();
        for path in wanted {
            let read = match resolved.get(&path) {
                Some(Ok(entry)) => match &blobs {
                    Ok(blobs) => blobs
                        .get(&entry.oid)
                        .cloned()
                        .ok_or_else(|| Unreadable::Failed("git did not return it".to_owned())),
                    Err(why) => Err(Unreadable::Failed(why.clone())),
                },
                Some(Err(why)) => Err(why.clone()),
                None => Err(Unreadable::Missing),
            };
            cache.insert(path, read);
        }
    }

    fn read(&self, path: &str) -> Result<Vec<u8>, Unreadable> {
        if !self.cache.borrow().contains_key(path) {
            self.prefetch(&[path]);
        }
        self.cache
            .borrow()
            .get(path)
            .cloned()
            .unwrap_or(Err(Unreadable::Missing))
    }
}

/// `path` with `.` and `..` resolved on its text, `/`-separated; `None` when
/// it climbs above its root.
pub fn normalise(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str()?),
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts.join("/"))
}

/// When a run's snapshot was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Taken {
    /// Before the first attempt of the run's first reviewer (analysers, or
    /// the verifiers after the Executor).
    FirstDispatch,
    /// When the first anchor was checked (no dispatch went through okstra).
    FirstCheck,
}

/// What the snapshot is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum Source {
    /// A commit of the project's repository.
    Git {
        commit: String,
        /// The ref that keeps it (`refs/okstra/snapshots/…`), when one could
        /// be made.
        reference: Option<String>,
        /// The project's folder inside the repository (empty, or `svc/`).
        prefix: String,
    },
    /// A copy of a project outside git, in the run folder.
    Directory {
        /// Relative to the run folder.
        path: String,
        files: u64,
        bytes: u64,
        /// False when the copy stopped at its caps.
        complete: bool,
    },
}

/// `state/snapshot.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    pub schema_version: u32,
    #[serde(flatten)]
    pub source: Source,
    pub taken_at: String,
    pub taken: Taken,
}

impl Record {
    /// One short name for the snapshot, for the anchors it checked.
    pub fn id(&self) -> String {
        match &self.source {
            Source::Git { commit, .. } => format!("git:{commit}"),
            Source::Directory { path, .. } => format!("directory:{path}@{}", self.taken_at),
        }
    }
}

/// The run's snapshot record; `None` when none was taken. A record that
/// cannot be read is an error, never a reason to take another snapshot
/// silently: the anchors checked so far were checked against it.
pub fn record(run: &Run) -> Result<Option<Record>> {
    let path = run.layout().snapshot_record();
    let Some(bytes) = fsread::read_no_follow_if_exists(&path, fsread::Kind::Manifest)
        .with_context(|| format!("cannot read the run's snapshot record `{}`", path.display()))?
    else {
        return Ok(None);
    };
    serde_json::from_slice::<Record>(&bytes)
        .ok()
        .filter(|r| r.schema_version == RECORD_VERSION)
        .map(Some)
        .with_context(|| {
            format!(
                "`{}` is not a snapshot record okstra can read; remove it to take a new snapshot \
                 of the project",
                path.display()
            )
        })
}

/// The run's snapshot: the recorded one, or one taken now (`taken` says
/// when) and recorded.
pub fn ensure(run: &Run, taken: Taken) -> Result<Record> {
    if let Some(record) = record(run)? {
        return Ok(record);
    }
    let source = match take_git(run) {
        Some(source) => source,
        None => copy_project(&run.project_root, &run.dir)?,
    };
    let record = Record {
        schema_version: RECORD_VERSION,
        source,
        taken_at: crate::clock::rfc3339_now(),
        taken,
    };
    let path = run.layout().snapshot_record();
    let mut bytes = serde_json::to_vec_pretty(&record)?;
    bytes.push(b'\n');
    crate::durable::write_atomic(&path, &bytes)
        .with_context(|| format!("cannot write `{}`", path.display()))?;
    Ok(record)
}

/// The reader of the run's snapshot (taken now if it has none).
pub fn open(run: &Run) -> Result<(Record, Box<dyn Snapshot>)> {
    let record = ensure(run, Taken::FirstCheck)?;
    let reader: Box<dyn Snapshot> = match &record.source {
        Source::Git { commit, prefix, .. } => {
            Box::new(GitSnapshot::new(&run.project_root, commit, prefix))
        }
        Source::Directory { path, .. } => {
            let root = run
                .confine(&run.dir.join(path), "the snapshot's `path`")
                .context("`state/snapshot.json` is refused")?;
            Box::new(
                DirSnapshot::new(&root)
                    .with_context(|| format!("cannot open the snapshot `{}`", root.display()))?,
            )
        }
    };
    Ok((record, reader))
}

/// The run's one snapshot in git — the commit the isolated workers' copies
/// check out (`workspace::Snapshots`), taken now if no dispatch took it —
/// and where the project lies in its repository; `None` outside git.
///
/// In an implementation run the reviewers are the verifiers, and what they
/// review is the Executor's change: their copies hold the Executor's commit
/// (made on that same snapshot, kept on the run's branch), so their anchors
/// are checked against that commit once it exists.
fn take_git(run: &Run) -> Option<Source> {
    let project = &run.project_root;
    let git = crate::git::Git::at(project);
    let inside = git.lines(["rev-parse", "--is-inside-work-tree"]).ok()?;
    if inside.first().map(String::as_str) != Some("true") {
        return None;
    }
    // Empty at the repository's top.
    let prefix = git
        .lines(["rev-parse", "--show-prefix"])
        .ok()?
        .into_iter()
        .next()
        .unwrap_or_default();
    let identity = crate::workspace::RunIdentity::of(run);
    let snapshot = match crate::workspace::Snapshots::new(identity.clone()).get() {
        Ok(snapshot) => snapshot,
        Err(err) => {
            crate::diag::warning(format_args!(
                "cannot take the run's git snapshot; a copy of the project stands in: {err}"
            ));
            return None;
        }
    };
    if let Some(change) = reviewed_change(run) {
        return Some(Source::Git {
            commit: change.first,
            reference: Some(change.branch),
            prefix,
        });
    }
    Some(Source::Git {
        commit: snapshot.commit,
        reference: Some(crate::workspace::snapshot_ref(&identity)),
        prefix,
    })
}

/// The Executor's committed change an implementation run's verifiers
/// review, once there is one.
fn reviewed_change(run: &Run) -> Option<crate::run::team_state::ExecutorCommits> {
    if run.task_type != crate::catalog::TaskType::Implementation {
        return None;
    }
    let executor = run.in_role(crate::catalog::Role::Executor).next()?;
    run.team_state()
        .ok()?
        .executor_commits(&executor.dispatch_name, &executor.paths.prompt_path)
}

/// A bounded copy of a project outside git into the `snapshot/` folder of
/// the run in `run_dir`: regular files (each within the read limit) and
/// symlinks as they are; okstra's folders and VCS stores never.
fn copy_project(project: &Path, run_dir: &Path) -> Result<Source> {
    let dest = crate::run::layout::RunLayout::of(run_dir).snapshot_copy();
    let staging = run_dir.join(format!(".snapshot-{}", std::process::id()));
    let _ = fs::remove_dir_all(&staging);
    fs::create_dir_all(&staging)
        .with_context(|| format!("cannot create `{}`", staging.display()))?;
    let mut copied = Copied::default();
    copy_tree(project, &staging, &mut copied)
        .with_context(|| format!("cannot copy the project into `{}`", staging.display()))?;
    let _ = fs::remove_dir_all(&dest);
    fs::rename(&staging, &dest)
        .with_context(|| format!("cannot move the snapshot to `{}`", dest.display()))?;
    Ok(Source::Directory {
        path: "snapshot".to_owned(),
        files: copied.files,
        bytes: copied.bytes,
        complete: !copied.capped,
    })
}

#[derive(Default)]
struct Copied {
    files: u64,
    bytes: u64,
    capped: bool,
}

fn copy_tree(from: &Path, to: &Path, copied: &mut Copied) -> io::Result<()> {
    let mut entries: Vec<fs::DirEntry> = fs::read_dir(from)?.flatten().collect();
    entries.sort_by_key(fs::DirEntry::file_name);
    for entry in entries {
        let name = entry.file_name();
        if NEVER_COPIED.iter().any(|never| name == *never) {
            continue;
        }
        let source = entry.path();
        let target = to.join(&name);
        let Ok(meta) = fs::symlink_metadata(&source) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            if let Ok(link) = fs::read_link(&source) {
                std::os::unix::fs::symlink(link, &target)?;
            }
        } else if meta.is_dir() {
            fs::create_dir(&target)?;
            copy_tree(&source, &target, copied)?;
        } else if meta.is_file() && meta.len() <= fsread::Kind::Source.limit() {
            if copied.files >= MAX_COPY_FILES || copied.bytes + meta.len() > MAX_COPY_BYTES {
                copied.capped = true;
                continue;
            }
            // Bounded, never a FIFO, never through a link swapped in.
            let Ok(bytes) = fsread::read_no_follow(&source, fsread::Kind::Source) else {
                continue;
            };
            fs::write(&target, &bytes)?;
            copied.files += 1;
            copied.bytes += bytes.len() as u64;
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "snapshot_tests.rs"]
mod tests;
