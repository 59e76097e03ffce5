//! One run folder opened once: files read relative to it, each folder listed
//! once, so a project board of a thousand runs stays cheap.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::dir::{Dir, Type};
use nix::fcntl::{AtFlags, OFlag, openat};
use nix::sys::stat::{Mode, fstatat};

use crate::clock;
use crate::fsread;

/// One run folder, opened once: the files a board reads for a run (about
/// fifteen) are opened relative to it, a path walk of two or three
/// components instead of ten. It also remembers which files exist, one
/// folder listing per folder instead of one `stat` per path: a run's
/// workers share a handful of folders (results, heartbeats), so a large
/// project costs a few `getdents` per run. Paths outside the run folder
/// (hand-made manifests) are used as they are.
#[derive(Debug)]
pub(super) struct RunFiles<'a> {
    dir: &'a Path,
    fd: Option<OwnedFd>,
    /// Listed folders and their files; `None` if a folder cannot be listed.
    folders: Vec<(PathBuf, Option<Listing>)>,
}

/// A folder's regular files and symlinks, by name.
pub(super) type Listing = HashMap<OsString, Entry>;

/// What a listed name is: a regular file, or a symlink (to be resolved
/// when asked, since it may point at a file or not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Entry {
    File,
    Symlink,
}

impl<'a> RunFiles<'a> {
    pub(super) fn new(dir: &'a Path) -> RunFiles<'a> {
        // A handle for `*at` calls only; `O_PATH` needs no read permission.
        #[cfg(any(target_os = "linux", target_os = "android"))]
        const HANDLE: OFlag = OFlag::O_PATH;
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        const HANDLE: OFlag = OFlag::O_RDONLY;
        let flags = HANDLE | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        RunFiles {
            dir,
            fd: nix::fcntl::open(dir, flags, Mode::empty()).ok(),
            folders: Vec::new(),
        }
    }

    /// The open run folder and `path` relative to it, when it is inside.
    pub(super) fn inside<'p>(&self, path: &'p Path) -> Option<(&OwnedFd, &'p Path)> {
        let fd = self.fd.as_ref()?;
        let relative = path.strip_prefix(self.dir).ok()?;
        (!relative.as_os_str().is_empty()).then_some((fd, relative))
    }

    pub(super) fn open(&self, path: &Path) -> io::Result<File> {
        match self.inside(path) {
            Some((fd, relative)) => {
                // Never block on a FIFO; readers then refuse it (`fsread`).
                let flags = OFlag::O_RDONLY | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK;
                Ok(File::from(openat(fd, relative, flags, Mode::empty())?))
            }
            None => fsread::open_raw(path),
        }
    }

    /// Modification time, Unix seconds.
    pub(super) fn mtime(&self, path: &Path) -> Option<i64> {
        match self.inside(path) {
            Some((fd, relative)) => fstatat(fd, relative, AtFlags::empty())
                .ok()
                .map(|stat| stat.st_mtime),
            None => fs::metadata(path)
                .and_then(|m| m.modified())
                .ok()
                .map(clock::to_unix),
        }
    }

    /// Whether `path` is a regular file (or a symlink to one).
    pub(super) fn is_file(&mut self, path: &Path) -> bool {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return false;
        };
        let index = self
            .folders
            .iter()
            .position(|(dir, _)| dir == parent)
            .unwrap_or_else(|| {
                let names = self.list_files(parent);
                self.folders.push((parent.to_path_buf(), names));
                self.folders.len() - 1
            });
        match self.folders[index].1.as_ref().map(|names| names.get(name)) {
            Some(Some(Entry::File)) => true,
            Some(Some(Entry::Symlink)) | None => path.is_file(),
            Some(None) => false,
        }
    }

    /// The regular files and symlinks in `dir`; `None` if it cannot be
    /// listed.
    pub(super) fn list_files(&self, dir: &Path) -> Option<Listing> {
        let mut names = Listing::new();
        let mut add = |name: OsString, file: bool, symlink: bool| {
            if symlink {
                names.insert(name, Entry::Symlink);
            } else if file {
                names.insert(name, Entry::File);
            }
        };
        if let Some((fd, relative)) = self.inside(dir) {
            let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
            let opened = openat(fd, relative, flags, Mode::empty()).ok()?;
            for entry in Dir::from_fd(opened).ok()? {
                let entry = entry.ok()?;
                let kind = entry.file_type();
                add(
                    OsStr::from_bytes(entry.file_name().to_bytes()).to_owned(),
                    kind == Some(Type::File),
                    kind == Some(Type::Symlink),
                );
            }
        } else {
            for entry in fs::read_dir(dir).ok()?.flatten() {
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                add(entry.file_name(), kind.is_file(), kind.is_symlink());
            }
        }
        Some(names)
    }
}
