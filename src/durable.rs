//! Durable file writes: the one place that knows how to replace a file so a
//! reader never sees half of it and a crash never leaves it truncated.
//!
//! A temp file with a unique name is created in the destination's own folder
//! (same filesystem, so the rename is atomic), written, fsynced, renamed over
//! the destination, and the folder is fsynced so the rename itself survives a
//! crash.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Replace `path` with `bytes` atomically and durably.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = parent_dir(path);
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(
            ".{}.",
            path.file_name()
                .map_or_else(|| "okstra".into(), |name| name.to_string_lossy())
        ))
        .suffix(".tmp")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|err| err.error)?;
    sync_dir(dir)
}

/// fsync a directory so that entries created or renamed in it are durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// fsync many files and folders at once. The calls run concurrently so the
/// filesystem can commit them together (ext4 and xfs batch concurrent
/// fsyncs into one journal commit), which costs about one fsync instead of
/// one per file. Returns the first failure.
pub fn sync_all(paths: &[PathBuf]) -> io::Result<()> {
    /// More threads than this buys nothing on a two-core machine's disk queue.
    const MAX_THREADS: usize = 16;
    let chunk = paths.len().div_ceil(MAX_THREADS).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = paths
            .chunks(chunk)
            .map(|group| {
                scope.spawn(move || {
                    group
                        .iter()
                        .try_for_each(|path| File::open(path)?.sync_all())
                })
            })
            .collect();
        handles.into_iter().try_for_each(|handle| {
            handle
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("an fsync thread panicked")))
        })
    })
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn replaces_contents_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("status.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn sync_all_flushes_files_and_folders_and_reports_missing_ones() {
        let dir = tempfile::tempdir().unwrap();
        let mut paths = vec![dir.path().to_path_buf()];
        for index in 0..40 {
            let path = dir.path().join(format!("f{index}"));
            fs::write(&path, b"x").unwrap();
            paths.push(path);
        }
        sync_all(&paths).unwrap();
        paths.push(dir.path().join("missing"));
        assert!(sync_all(&paths).is_err());
    }
}
