//! Durable file writes: the one place that knows how to replace a file so a
//! reader never sees half of it and a crash never leaves it truncated.
//!
//! A temp file with a unique name is created in the destination's own folder
//! (same filesystem, so the rename is atomic), written, fsynced, renamed over
//! the destination, and the folder is fsynced so the rename itself survives a
//! crash. JSONL logs are appended to, never replaced: [`append_line`] is
//! the one appender (locked, torn-line repair, one write, fsync).
//! [`Lock`] is the one lock (a `flock` with a bounded wait), in [`lock`].

use nix::libc;
use std::fs::{File, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub mod lock;

pub use lock::Lock;

/// Mode of files written for people to read and share (the derived reports):
/// what a plain `File::create` gives under the usual umask 022.
const PUBLIC_MODE: u32 = 0o644;
/// How long an appender waits for another to finish its line: one write
/// and one fsync, far less than this unless the disk stalls.
const APPEND_WAIT: Duration = Duration::from_mins(1);

/// Replace `path` with `bytes` atomically and durably. The file is private
/// (mode 0600, the temp file's): state and records are for okstra.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, bytes, None)
}

/// [`write_atomic`] for a file people read (a final report): mode 0644.
pub fn write_atomic_public(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, bytes, Some(Permissions::from_mode(PUBLIC_MODE)))
}

/// [`write_atomic`] with the file's mode `mode` (a file of the user's that
/// okstra rewrites keeps the mode it had).
pub fn write_atomic_mode(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    write_atomic_with(path, bytes, Some(Permissions::from_mode(mode)))
}

/// A file's new content written beside it, not yet in place: made by
/// [`stage`], put in place by [`Pending::commit`]; removed when dropped
/// uncommitted. For a change of several files that must not be half made:
/// stage them all, then commit them all.
pub struct Pending {
    staged: crate::beneath::Staged,
    path: PathBuf,
}

/// Stage the new content of `path` with mode `mode`: `fill` writes it into
/// a temp file in `path`'s folder (streamed, of any size), which is then
/// fsynced. Nothing is in place until [`Pending::commit`].
pub fn stage(
    path: &Path,
    mode: u32,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<Pending> {
    let mut staged = crate::beneath::Staged::new(path, Some(mode))?;
    fill(staged.file())?;
    staged.file().sync_all()?;
    Ok(Pending {
        staged,
        path: path.to_path_buf(),
    })
}

impl Pending {
    /// Where it goes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Rename it over its destination and flush the folder.
    pub fn commit(self) -> io::Result<()> {
        let dir = self.staged.commit()?;
        nix::unistd::fsync(&dir)?;
        Ok(())
    }
}

/// Replace `path` (whatever it is, but a folder) with a symlink to
/// `target`, atomically: the link is made under a unique name beside it and
/// renamed over it, and the folder is fsynced.
pub fn replace_with_symlink(path: &Path, target: &Path) -> io::Result<()> {
    let dir = parent_dir(path);
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let mut temp = std::ffi::OsString::from(".");
    temp.push(name);
    temp.push(format!(".okstra-{}.tmp", std::process::id()));
    let temp = dir.join(temp);
    let _ = std::fs::remove_file(&temp);
    std::os::unix::fs::symlink(target, &temp)?;
    if let Err(err) = std::fs::rename(&temp, path) {
        let _ = std::fs::remove_file(&temp);
        return Err(err);
    }
    sync_dir(dir)
}

/// Write `bytes` to `path` atomically unless it already holds exactly them
/// (a prompt or a plan rewritten with the same bytes must not look new).
/// Returns whether it wrote.
pub fn write_if_changed(path: &Path, bytes: &[u8]) -> io::Result<bool> {
    let same = crate::fsread::read_no_follow(path, crate::fsread::Kind::Result)
        .is_ok_and(|old| old == bytes);
    if same {
        return Ok(false);
    }
    write_atomic(path, bytes)?;
    Ok(true)
}

fn write_atomic_with(path: &Path, bytes: &[u8], mode: Option<Permissions>) -> io::Result<()> {
    // fchmod, not the open mode: the umask must not make a report private.
    crate::beneath::write_atomic(path, bytes, mode.map(|m| m.mode()))
}

/// Replace several files atomically and durably, as [`write_atomic`] does
/// one, but with every write started before the first fsync and each folder
/// fsynced once: a batch of prompts costs about one journal commit instead
/// of one per file. Each file is replaced whole or not at all; on an error,
/// files before it in `files` may already be replaced.
pub fn write_atomic_all(files: &[(PathBuf, &[u8])]) -> io::Result<()> {
    let mut staged = Vec::with_capacity(files.len());
    for (path, bytes) in files {
        let mut tmp = crate::beneath::Staged::new(path, None)?;
        tmp.file().write_all(bytes)?;
        start_writeback(tmp.file());
        staged.push((tmp, path));
    }
    for (tmp, _) in &mut staged {
        tmp.file().sync_all()?;
    }
    let mut dirs: Vec<(&Path, std::os::fd::OwnedFd)> = Vec::new();
    for (tmp, path) in staged {
        let dir = tmp.commit()?;
        let parent = parent_dir(path);
        if !dirs.iter().any(|(seen, _)| *seen == parent) {
            dirs.push((parent, dir));
        }
    }
    for (_, dir) in dirs {
        nix::unistd::fsync(&dir)?;
    }
    Ok(())
}

/// Append one line to the JSONL log at `path` and make it durable.
///
/// The log is opened without following a symlink or blocking on a FIFO
/// (anything but a regular file is refused) and held under an exclusive
/// [`Lock`] (waiting at most a minute), so concurrent writers append whole
/// lines in turn. `line` gets
/// the open log first (to read its tail, e.g. for the next sequence
/// number) and returns the line without its newline. A crash mid-append
/// can leave the last line without its newline: ours then starts on a
/// fresh line, so only the torn one is lost. The line goes out in one
/// `O_APPEND` write and is fsynced before the lock is released; a new log's
/// folder is fsynced too.
pub fn append_line<E: From<io::Error>>(
    path: &Path,
    line: impl FnOnce(&mut File) -> Result<Vec<u8>, E>,
) -> Result<(), E> {
    use std::io::{Read, Seek, SeekFrom};

    use nix::fcntl::OFlag;
    let file = crate::beneath::open(
        path,
        OFlag::O_RDWR | OFlag::O_APPEND | OFlag::O_CREAT | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK,
        nix::sys::stat::Mode::from_bits_truncate(0o666),
    )?;
    crate::fsread::check_regular(&file, path).map_err(io::Error::other)?;
    let mut log = Lock::on(path, format!("the log `{}`", path.display()))
        .wait(APPEND_WAIT)
        .acquire_open(file)
        .map_err(io::Error::from)?;
    let mut bytes = line(&mut log)?;
    let len = log.metadata()?.len();
    let mut out = Vec::with_capacity(bytes.len() + 2);
    if len > 0 {
        let mut last = [0_u8];
        log.seek(SeekFrom::Start(len - 1))?;
        log.read_exact(&mut last)?;
        if last[0] != b'\n' {
            out.push(b'\n');
        }
    }
    out.append(&mut bytes);
    out.push(b'\n');
    log.write_all(&out)?;
    log.sync_data()?;
    if len == 0 {
        sync_dir(parent_dir(path))?;
    }
    Ok(())
}

/// fsync a directory so that entries created or renamed in it are durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Create `files` (which must not exist yet) and make them durable, then
/// fsync `dirs`. Returns the first failure.
///
/// Every file is written and its write-back started first, then they are
/// fsynced: the filesystem gets all the data at once and can commit it in
/// one go (one journal commit on ext4 and xfs), instead of one commit per
/// fsync. (dpkg flushes the files it unpacks the same way.)
pub fn create_synced(files: &[(PathBuf, &[u8])], dirs: &[PathBuf]) -> io::Result<()> {
    let mut written = Vec::with_capacity(files.len());
    for (path, bytes) in files {
        let mut file = File::options().write(true).create_new(true).open(path)?;
        file.write_all(bytes)?;
        start_writeback(&file);
        written.push(file);
    }
    for file in &written {
        file.sync_all()?;
    }
    dirs.iter().try_for_each(|dir| sync_dir(dir))
}

/// Ask the kernel to start writing `file`'s data out now, without waiting.
/// Only a hint: on failure the later fsync does the work (and reports it).
#[cfg(target_os = "linux")]
#[expect(
    unsafe_code,
    reason = "sync_file_range has no safe wrapper in nix or rustix"
)]
fn start_writeback(file: &File) {
    use std::os::fd::AsRawFd;
    // SAFETY: a plain syscall on a descriptor `file` owns and keeps open for
    // the duration of the call; no memory is passed.
    unsafe {
        libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
    }
}

#[cfg(not(target_os = "linux"))]
fn start_writeback(_file: &File) {}

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
    fn public_files_are_0644_and_private_ones_0600() {
        let dir = tempfile::tempdir().unwrap();
        let public = dir.path().join("final-report.md");
        let private = dir.path().join("state.json");
        write_atomic_public(&public, b"report").unwrap();
        write_atomic(&private, b"{}").unwrap();
        let mode = |path: &Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&public), 0o644);
        assert_eq!(mode(&private), 0o600);
    }

    #[test]
    fn write_atomic_all_replaces_every_file_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("sub");
        fs::create_dir(&sub).unwrap();
        let files: Vec<(PathBuf, &[u8])> = vec![
            (dir.path().join("a"), b"one".as_slice()),
            (sub.join("b"), b"two".as_slice()),
        ];
        write_atomic_all(&files).unwrap();
        write_atomic_all(&[(dir.path().join("a"), b"three".as_slice())]).unwrap();
        assert_eq!(fs::read(dir.path().join("a")).unwrap(), b"three");
        assert_eq!(fs::read(sub.join("b")).unwrap(), b"two");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
        assert_eq!(fs::read_dir(&sub).unwrap().count(), 1);
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
