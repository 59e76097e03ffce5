//! Durable file writes: the one place that knows how to replace a file so a
//! reader never sees half of it and a crash never leaves it truncated.
//!
//! A temp file with a unique name is created in the destination's own folder
//! (same filesystem, so the rename is atomic), written, fsynced, renamed over
//! the destination, and the folder is fsynced so the rename itself survives a
//! crash.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;

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

/// Write a file that must not exist yet, durably (used while assembling a
/// fresh folder that nobody else can see).
pub fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
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
    fn write_new_refuses_existing_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a");
        write_new(&path, b"x").unwrap();
        assert!(write_new(&path, b"y").is_err());
    }
}
