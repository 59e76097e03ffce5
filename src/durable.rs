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

/// Create `files` (which must not exist yet) and fsync them, then fsync
/// `dirs`. The work runs on a few threads at once so the filesystem can
/// commit the fsyncs together (ext4 and xfs batch concurrent fsyncs into one
/// journal commit) instead of waiting for one commit per file. Each file is
/// written and flushed through one descriptor. Returns the first failure.
pub fn create_synced(files: &[(PathBuf, &[u8])], dirs: &[PathBuf]) -> io::Result<()> {
    let create = |(path, bytes): &(PathBuf, &[u8])| -> io::Result<()> {
        let mut file = File::options().write(true).create_new(true).open(path)?;
        file.write_all(bytes)?;
        file.sync_all()
    };
    in_parallel(files, create)?;
    in_parallel(dirs, |dir| File::open(dir)?.sync_all())
}

/// Run `work` over `items` on up to `MAX_THREADS` scoped threads.
fn in_parallel<T: Sync>(items: &[T], work: impl Fn(&T) -> io::Result<()> + Sync) -> io::Result<()> {
    /// Enough to overlap the fsyncs of one run folder; more threads only
    /// cost start-up time.
    const MAX_THREADS: usize = 4;
    if items.len() <= 1 {
        return items.iter().try_for_each(&work);
    }
    let chunk = items.len().div_ceil(MAX_THREADS);
    let work = &work;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|group| scope.spawn(move || group.iter().try_for_each(work)))
            .collect();
        handles.into_iter().try_for_each(|handle| {
            handle
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("a file-writing thread panicked")))
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
    fn create_synced_writes_every_file_and_refuses_existing_ones() {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<(PathBuf, &[u8])> = (0..40)
            .map(|index| (dir.path().join(format!("f{index}")), b"x".as_slice()))
            .collect();
        create_synced(&files, &[dir.path().to_path_buf()]).unwrap();
        for (path, _) in &files {
            assert_eq!(fs::read(path).unwrap(), b"x");
        }
        let again = [(dir.path().join("f3"), b"y".as_slice())];
        assert!(create_synced(&again, &[]).is_err());
        assert_eq!(fs::read(dir.path().join("f3")).unwrap(), b"x");
        let missing = [dir.path().join("missing")];
        assert!(create_synced(&[], &missing).is_err());
    }
}
