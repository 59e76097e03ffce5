//! Files under a project's `.okstra/` folder, reached through no symlink.
//!
//! Everything below `.okstra/` is okstra's: run folders, their `state/`,
//! `prompts/`, `results/`, `report/`. A worker that can write into a run
//! folder (an Executor, a CLI with no read-only mode running unisolated)
//! could plant a symlink there — `results/` pointing at the user's home — and
//! every later write through it would land outside the project. So a path
//! with a `.okstra` component is opened *beneath* the project root (the
//! folder holding `.okstra`): the root is opened once, following whatever
//! links lead to it (a project that itself lives under a symlinked folder
//! keeps working), and the rest is resolved with `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS)`, or, where the kernel lacks it, one component at a
//! time with `O_NOFOLLOW`. A symlink anywhere below the root is refused
//! (`ELOOP`), for reads and writes alike.
//!
//! `fsread` and `durable` route every open through [`open`], so callers need
//! nothing of this; a path outside any `.okstra/` is opened as before.

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::Mode;

use crate::confine::OKSTRA_DIR;

/// Set once `openat2` turned out to be missing (old kernel, seccomp).
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);
/// Makes temp names unique within this process.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A project root and a path beneath it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Beneath {
    /// The folder holding `.okstra` (opened following links).
    pub root: PathBuf,
    /// The rest, starting with `.okstra`, with no `.` or `..`.
    pub rest: PathBuf,
}

/// `path` split at its last `.okstra` component, when it has one: the
/// trusted root above it and the rest, which must hold no symlink. The
/// path is made absolute and normalised on its text first.
pub fn split(path: &Path) -> Option<Beneath> {
    let path = crate::confine::normalize(path);
    let components: Vec<Component<'_>> = path.components().collect();
    let at = components
        .iter()
        .rposition(|c| matches!(c, Component::Normal(name) if *name == OKSTRA_DIR))?;
    let root: PathBuf = components[..at].iter().collect();
    let rest: PathBuf = components[at..].iter().collect();
    Some(Beneath { root, rest })
}

/// Open `path` with `flags` (and `mode` when creating): beneath its project
/// root through no symlink when it lies under a `.okstra/`, else as `open(2)`
/// with `flags` alone.
pub fn open(path: &Path, flags: OFlag, mode: Mode) -> io::Result<File> {
    let flags = flags | OFlag::O_CLOEXEC;
    match split(path) {
        Some(beneath) => {
            let root = open_root(&beneath.root)?;
            open_at(&root, &beneath.rest, flags, mode).map(File::from)
        }
        None => nix::fcntl::open(path, flags, mode)
            .map(File::from)
            .map_err(io::Error::from),
    }
}

/// Open `path` to read: never blocking on a FIFO, never through a symlink.
pub fn open_read(path: &Path) -> io::Result<File> {
    open(
        path,
        OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOFOLLOW,
        Mode::empty(),
    )
}

/// Open (create, mode 0600) `path` to lock and write in place.
pub fn open_lock(path: &Path) -> io::Result<File> {
    open(
        path,
        OFlag::O_RDWR | OFlag::O_CREAT | OFlag::O_NONBLOCK | OFlag::O_NOFOLLOW,
        Mode::from_bits_truncate(0o600),
    )
}

/// Open (create) `path` to append to.
pub fn open_append(path: &Path) -> io::Result<File> {
    open(
        path,
        OFlag::O_WRONLY | OFlag::O_APPEND | OFlag::O_CREAT | OFlag::O_NONBLOCK | OFlag::O_NOFOLLOW,
        Mode::from_bits_truncate(0o666),
    )
}

/// The folder `dir` for `*at` calls and `fsync`: beneath its project root
/// when it lies under a `.okstra/`.
pub fn open_dir(dir: &Path) -> io::Result<OwnedFd> {
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
    match split(dir) {
        Some(beneath) => {
            let root = open_root(&beneath.root)?;
            open_at(&root, &beneath.rest, flags, Mode::empty())
        }
        None => nix::fcntl::open(dir, flags, Mode::empty()).map_err(io::Error::from),
    }
}

/// Replace `path` with `bytes`: a temp file created beside it (in the same
/// folder, opened through no symlink), written, fsynced, renamed over
/// `path`, the folder fsynced. `mode` is applied with `fchmod`, so the umask
/// cannot make a report private.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: Option<u32>) -> io::Result<()> {
    let mut staged = Staged::new(path, mode)?;
    io::Write::write_all(staged.file(), bytes)?;
    staged.file().sync_all()?;
    let dir = staged.commit()?;
    nix::unistd::fsync(&dir)?;
    Ok(())
}

/// A temp file beside its destination, not yet renamed over it; removed
/// when dropped uncommitted.
pub struct Staged {
    dir: OwnedFd,
    tmp: OsString,
    name: OsString,
    file: File,
    committed: bool,
}

impl Staged {
    /// A new temp file in `path`'s folder (reached through no symlink under
    /// `.okstra/`), mode 0600, or `mode` when given.
    pub fn new(path: &Path, mode: Option<u32>) -> io::Result<Staged> {
        let (dir, name) = parent_and_name(path)?;
        let dir = open_dir(&dir)?;
        let tmp = temp_name(&name);
        let fd = nix::fcntl::openat(
            &dir,
            tmp.as_os_str(),
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(0o600),
        )?;
        let staged = Staged {
            dir,
            tmp,
            name,
            file: File::from(fd),
            committed: false,
        };
        if let Some(mode) = mode {
            use std::os::unix::fs::PermissionsExt;
            staged
                .file
                .set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        Ok(staged)
    }

    /// The temp file, to write and sync.
    pub fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// Rename the temp file over its destination; returns the folder, for
    /// the caller to fsync (once per folder in a batch).
    pub fn commit(mut self) -> io::Result<OwnedFd> {
        nix::fcntl::renameat(
            &self.dir,
            self.tmp.as_os_str(),
            &self.dir,
            self.name.as_os_str(),
        )?;
        self.committed = true;
        self.dir.try_clone()
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            let _ = nix::unistd::unlinkat(
                &self.dir,
                self.tmp.as_os_str(),
                nix::unistd::UnlinkatFlags::NoRemoveDir,
            );
        }
    }
}

/// Remove the file `path` (not a folder), reached through no symlink under
/// `.okstra/`: a symlink in its place is removed itself, never its target.
pub fn unlink(path: &Path) -> io::Result<()> {
    let (dir, name) = parent_and_name(path)?;
    let dir = open_dir(&dir)?;
    nix::unistd::unlinkat(
        &dir,
        name.as_os_str(),
        nix::unistd::UnlinkatFlags::NoRemoveDir,
    )
    .map_err(io::Error::from)
}

/// The folder of `path` and its file name.
fn parent_and_name(path: &Path) -> io::Result<(PathBuf, OsString)> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"))?
        .to_owned();
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((dir, name))
}

/// `.<name>.<pid>-<n>.tmp`: hidden, unique in this process, never a name
/// okstra reads.
fn temp_name(name: &OsString) -> OsString {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut tmp = OsString::from(".");
    tmp.push(name);
    tmp.push(format!(".{}-{n}.tmp", std::process::id()));
    tmp
}

fn open_root(root: &Path) -> io::Result<OwnedFd> {
    nix::fcntl::open(
        root,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(io::Error::from)
}

/// Open `rest` beneath the folder `root`, refusing any symlink on the way.
fn open_at(root: &impl AsFd, rest: &Path, flags: OFlag, mode: Mode) -> io::Result<OwnedFd> {
    if !NO_OPENAT2.load(Ordering::Relaxed) {
        let how = OpenHow::new()
            .flags(flags)
            .mode(mode)
            .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS);
        match nix::fcntl::openat2(root, rest, how) {
            Ok(fd) => return Ok(fd),
            // Not there (an old kernel) or filtered (a seccomp sandbox).
            Err(Errno::ENOSYS | Errno::EPERM) => NO_OPENAT2.store(true, Ordering::Relaxed),
            Err(errno) => return Err(refusal(errno, rest)),
        }
    }
    walk(root, rest, flags, mode)
}

/// One component at a time, each folder opened with `O_NOFOLLOW`.
fn walk(root: &impl AsFd, rest: &Path, flags: OFlag, mode: Mode) -> io::Result<OwnedFd> {
    let parts: Vec<&std::ffi::OsStr> = rest
        .components()
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{}` leaves its folder", rest.display()),
            )),
        })
        .collect::<io::Result<_>>()?;
    let Some((last, folders)) = parts.split_last() else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "an empty path"));
    };
    let mut current: Option<OwnedFd> = None;
    for folder in folders {
        let next = {
            let at: &dyn AsFd = current
                .as_ref()
                .map_or(root as &dyn AsFd, |fd| fd as &dyn AsFd);
            nix::fcntl::openat(
                at.as_fd(),
                *folder,
                OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
                Mode::empty(),
            )
            .map_err(|errno| refusal(errno, rest))?
        };
        current = Some(next);
    }
    let at: &dyn AsFd = current
        .as_ref()
        .map_or(root as &dyn AsFd, |fd| fd as &dyn AsFd);
    nix::fcntl::openat(at.as_fd(), *last, flags | OFlag::O_NOFOLLOW, mode)
        .map_err(|errno| refusal(errno, rest))
}

/// An errno from a beneath-open, said in okstra's words where it is ours. A
/// symlink on the way stays `ELOOP` (callers tell it apart).
fn refusal(errno: Errno, rest: &Path) -> io::Error {
    match errno {
        Errno::EXDEV => io::Error::other(format!(
            "`{}` leads outside its project",
            String::from_utf8_lossy(rest.as_os_str().as_bytes())
        )),
        other => io::Error::from(other),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    #[test]
    fn paths_split_at_the_last_okstra_folder() {
        let split = split(Path::new("/p/.okstra/tasks/a/../b/run/x.md")).unwrap();
        assert_eq!(split.root, Path::new("/p"));
        assert_eq!(split.rest, Path::new(".okstra/tasks/b/run/x.md"));
        assert!(super::split(Path::new("/home/u/.cache/okstra/x")).is_none());
        assert!(super::split(Path::new("/p/.okstra-evil/x")).is_none());
    }

    /// A project with a run folder, and a folder outside it.
    fn world() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("p/.okstra/tasks/a/b/c/run");
        std::fs::create_dir_all(run.join("results")).unwrap();
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        (dir, run, outside)
    }

    #[test]
    fn a_symlinked_folder_below_okstra_is_refused_for_writes_and_reads() {
        for fallback in [false, true] {
            NO_OPENAT2.store(fallback, Ordering::Relaxed);
            let (_dir, run, outside) = world();
            std::fs::remove_dir(run.join("results")).unwrap();
            symlink(&outside, run.join("results")).unwrap();
            let victim = run.join("results/r.md");
            let err = write_atomic(&victim, b"x", None).unwrap_err();
            // The walk sees a link where a folder must be (`ENOTDIR`);
            // `openat2` says `ELOOP`: both refuse.
            assert!(
                matches!(
                    err.raw_os_error(),
                    Some(nix::libc::ELOOP | nix::libc::ENOTDIR)
                ),
                "{err}"
            );
            assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
            std::fs::write(outside.join("r.md"), "secret").unwrap();
            assert!(open(&victim, OFlag::O_RDONLY, Mode::empty()).is_err());
            // A symlinked file is refused too.
            symlink(outside.join("r.md"), run.join("link.md")).unwrap();
            assert!(open(&run.join("link.md"), OFlag::O_RDONLY, Mode::empty()).is_err());
        }
        NO_OPENAT2.store(false, Ordering::Relaxed);
    }

    #[test]
    fn a_project_under_a_symlinked_folder_keeps_working() {
        let (dir, run, _outside) = world();
        let alias = dir.path().join("alias");
        symlink(dir.path().join("p"), &alias).unwrap();
        let through = alias.join(run.strip_prefix(dir.path().join("p")).unwrap());
        write_atomic(&through.join("results/r.md"), b"kept", Some(0o644)).unwrap();
        assert_eq!(std::fs::read(run.join("results/r.md")).unwrap(), b"kept");
        let names: Vec<_> = std::fs::read_dir(run.join("results")).unwrap().collect();
        assert_eq!(names.len(), 1, "no temp file left");
    }
}
