//! Confinement: okstra reads and writes only inside the project's `.okstra/`
//! folder and, for paths a run records, inside that run's folder.
//!
//! Two rules, documented in docs/hostile-files.md:
//! - `.okstra` and the task folders under it (`tasks/<project>/<group>/<task>`)
//!   must be real folders, not symlinks: a link would carry the whole run,
//!   or the reaper, outside the project. A symlinked one is refused (exit 2),
//!   never resolved.
//! - Every path taken from a run manifest or a sidecar (after `run::paths`
//!   re-roots it) must lie inside the run folder, or the `.okstra/` folder
//!   that holds it. The check is lexical (`..` is resolved on the text), which
//!   costs no system call; the commands that write through such a path or
//!   read it for validation also refuse a symlink on the way
//!   ([`check_no_links`]).

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// The folder, under a project root, that holds every okstra run.
pub const OKSTRA_DIR: &str = ".okstra";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "`{}` is a symlink; okstra keeps runs inside the project and follows no symlinked \
         folder below the project (make it a real folder)",
        .path.display()
    )]
    Symlink { path: PathBuf },
    #[error("`{}` is not a folder", .path.display())]
    NotAFolder { path: PathBuf },
    #[error("cannot inspect `{}`", .path.display())]
    Inspect {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "{what} `{}` is outside the run folder `{}`; okstra reads and writes only inside it",
        .path.display(), .run_dir.display()
    )]
    Outside {
        what: String,
        path: PathBuf,
        run_dir: PathBuf,
    },
}

/// Refuse a symlink (or a non-folder) at any existing component of
/// `root/relative`. Components that do not exist yet are fine (they will be
/// created as real folders).
pub fn check_no_links(root: &Path, relative: &Path) -> Result<(), Error> {
    let mut path = root.to_path_buf();
    for component in relative.components() {
        path.push(component);
        match path.symlink_metadata() {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(Error::Symlink { path });
            }
            Ok(_) => {}
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(source) => return Err(Error::Inspect { path, source }),
        }
    }
    Ok(())
}

/// `<project_root>/.okstra`, refused when it is a symlink or not a folder.
/// It may not exist yet.
pub fn okstra_dir(project_root: &Path) -> Result<PathBuf, Error> {
    let path = project_root.join(OKSTRA_DIR);
    match path.symlink_metadata() {
        Ok(meta) if meta.file_type().is_symlink() => Err(Error::Symlink { path }),
        Ok(meta) if !meta.is_dir() => Err(Error::NotAFolder { path }),
        Ok(_) => Ok(path),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(path),
        Err(source) => Err(Error::Inspect { path, source }),
    }
}

/// `path` made absolute (from the current folder) with `.` and `..`
/// resolved on the text alone.
pub fn normalize(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    for component in absolute.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                // `/..` is `/`; a relative path keeps a leading `..`.
                if !out.pop() && !out.has_root() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// The folders a path recorded by the run in `run_dir` may point into: the
/// run folder and, when the run lives in one, the `.okstra/` folder above it.
fn allowed_roots(run_dir: &Path) -> (PathBuf, Option<PathBuf>) {
    let run = normalize(run_dir);
    let okstra = run
        .ancestors()
        .skip(1)
        .find(|dir| dir.file_name().is_some_and(|name| name == OKSTRA_DIR))
        .map(Path::to_path_buf);
    (run, okstra)
}

/// Whether `path` (already re-rooted) lies inside the run folder or its
/// `.okstra/` folder, on the text alone.
pub fn is_inside(path: &Path, run_dir: &Path) -> bool {
    // The usual case, a path okstra wrote itself, costs no allocation (the
    // board checks tens of thousands).
    if is_plain(path) && is_plain(run_dir) && starts_with_text(path, run_dir) {
        return true;
    }
    let path = normalize(path);
    let (run, okstra) = allowed_roots(run_dir);
    path.starts_with(&run) || okstra.is_some_and(|okstra| path.starts_with(okstra))
}

/// Absolute, with no `.` or `..` component: its text is what it names
/// (symlinks aside).
/// Checked on the bytes: walking `components()` was a measurable share of
/// the board.
fn is_plain(path: &Path) -> bool {
    let bytes = path.as_os_str().as_bytes();
    bytes.first() == Some(&b'/')
        && !bytes
            .split(|byte| *byte == b'/')
            .any(|part| part == b"." || part == b"..")
}

/// `dir` is `path` or one of its folders, comparing bytes (a doubled `/`
/// only makes this say no; the slow path then decides).
fn starts_with_text(path: &Path, dir: &Path) -> bool {
    let path = path.as_os_str().as_bytes();
    let dir = dir.as_os_str().as_bytes();
    let dir = dir.strip_suffix(b"/").unwrap_or(dir);
    path.starts_with(dir) && (path.len() == dir.len() || path.get(dir.len()) == Some(&b'/'))
}

/// `path` (normalized) when it lies inside the run folder (see
/// [`is_inside`]), else an error naming `what` it is (e.g.
/// "`leadEventsPath`"). Takes the path by value: it is returned as it is in
/// the usual case.
pub fn inside(path: PathBuf, run_dir: &Path, what: &str) -> Result<PathBuf, Error> {
    if !is_inside(&path, run_dir) {
        return Err(Error::Outside {
            what: what.to_owned(),
            path,
            run_dir: run_dir.to_path_buf(),
        });
    }
    Ok(if is_plain(&path) {
        path
    } else {
        normalize(&path)
    })
}

/// [`inside`], and no existing component between the run folder (or
/// `.okstra/`) and the file is a symlink: for paths written through, or
/// read as evidence.
pub fn inside_no_links(path: &Path, run_dir: &Path, what: &str) -> Result<PathBuf, Error> {
    let path = inside(path.to_path_buf(), run_dir, what)?;
    let (run, okstra) = allowed_roots(run_dir);
    let root = if path.starts_with(&run) {
        run
    } else {
        okstra.unwrap_or(run)
    };
    let relative = path.strip_prefix(&root).unwrap_or(Path::new(""));
    check_no_links(&root, relative)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_confined_on_their_text() {
        let run = Path::new("/p/.okstra/tasks/a/b/c/run-001");
        assert!(is_inside(&run.join("state/lead-events.jsonl"), run));
        assert!(is_inside(
            Path::new("/p/.okstra/tasks/a/b/c/runs.jsonl"),
            run
        ));
        assert!(!is_inside(&run.join("../../../../../../outside/x"), run));
        assert!(!is_inside(Path::new("/etc/passwd"), run));
        assert!(!is_inside(Path::new("/p/.okstra-evil/x"), run));
        assert!(is_inside(Path::new("/q/run/x"), Path::new("/q/run")));
        assert!(!is_inside(Path::new("/q/runx/x"), Path::new("/q/run")));
        assert!(!is_inside(Path::new("/q/x"), Path::new("/q/run")));
        assert_eq!(normalize(Path::new("/a/./b/../c")), Path::new("/a/c"));
        assert_eq!(normalize(Path::new("/../a")), Path::new("/a"));
        // A relative run folder is not an empty prefix that holds everything.
        assert!(!is_inside(Path::new("/etc/passwd"), Path::new(".")));
        assert!(is_inside(Path::new("./results/a.md"), Path::new(".")));
        assert!(is_inside(Path::new("/q/run/"), Path::new("/q/run")));
        assert!(is_inside(Path::new("/q//run/x"), Path::new("/q/run/")));
        assert!(!is_inside(Path::new("/q/run/../x"), Path::new("/q/run")));
        assert!(!is_inside(Path::new("/q/run/x"), Path::new("/q/run/x/y")));
    }

    #[test]
    fn symlinked_folders_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert!(okstra_dir(root).is_ok());
        std::fs::create_dir(root.join("out")).unwrap();
        std::os::unix::fs::symlink(root.join("out"), root.join(".okstra")).unwrap();
        assert!(matches!(okstra_dir(root), Err(Error::Symlink { .. })));
        assert!(matches!(
            check_no_links(root, Path::new(".okstra/tasks")),
            Err(Error::Symlink { .. })
        ));
        assert!(check_no_links(root, Path::new("out/none/deeper")).is_ok());
    }
}
