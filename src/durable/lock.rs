//! The one lock: an advisory `flock` on a file (or a folder), taken with a
//! bounded wait.
//!
//! Every lock okstra takes goes through [`Lock::on`]: the run lease, the
//! team state's lock and its readers' shared lock, the `.okstra/` folder a
//! render holds, a git copy's lock, the provider slots and the JSONL logs.
//! A lock that is held is tried again every [`POLL`]; past [`MOMENT`] the
//! waiter says once on stderr `waiting for <holder> to release <what>`, and
//! past its bound it gives up with [`Error::Busy`], which names the lock
//! file and its holder. The holder is whoever the caller knows (the lease
//! file names its driver), else the process the kernel lists in
//! `/proc/locks` for the file (Linux), else "another process".
//!
//! A lock is never stale: the kernel releases a `flock` when its holder
//! dies, whatever the lock file still says, so a waiter behind a killed
//! holder takes the lock on its next try.

use std::fmt::Write as _;
use std::fs::File;
use std::io;
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg, OFlag};
use nix::sys::stat::Mode;

/// How often a waiter tries the lock again.
const POLL: Duration = Duration::from_millis(50);
/// How long a waiter waits before it says so: shorter waits are routine
/// (another writer's read-modify-write) and not worth a line.
pub const MOMENT: Duration = Duration::from_secs(1);
/// The longest a holder's command line is shown.
const SHOWN_COMMAND: usize = 200;

/// Whether a lock excludes every other holder or only exclusive ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// One holder, no reader (a writer).
    Exclusive,
    /// Any number of shared holders, no exclusive one (a reader).
    Shared,
}

/// What is locked, and how it is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// A regular file, created (mode 0600) when missing, never opened
    /// through a symlink.
    File,
    /// A regular file that must exist (a missing one is
    /// [`Error::is_missing`]), opened read-only, never through a symlink.
    Existing,
    /// The folder itself.
    Folder,
}

/// A held lock: released when dropped, or when the process ends. Derefs to
/// its open file (the lease writes its holder into it, a log appends).
#[derive(Debug)]
pub struct Lock {
    file: Flock<File>,
    path: PathBuf,
}

impl Lock {
    /// A lock on `path`, described as `what` in the waiting line and the
    /// error ("the team state `…`"). By default exclusive, on a regular
    /// file created if missing, given up at once when held: say how long
    /// to wait with [`Request::wait`].
    pub fn on(path: &Path, what: impl Into<String>) -> Request<'static> {
        Request {
            path: path.to_path_buf(),
            what: what.into(),
            access: Access::Exclusive,
            target: Target::File,
            wait: Duration::ZERO,
            holder: None,
            hint: None,
        }
    }

    /// The locked file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Deref for Lock {
    type Target = File;

    fn deref(&self) -> &File {
        &self.file
    }
}

impl DerefMut for Lock {
    fn deref_mut(&mut self) -> &mut File {
        &mut self.file
    }
}

/// A lock being asked for; [`Request::acquire`] takes it.
pub struct Request<'a> {
    path: PathBuf,
    what: String,
    access: Access,
    target: Target,
    wait: Duration,
    holder: Option<Box<dyn Fn() -> Option<String> + 'a>>,
    hint: Option<String>,
}

impl<'a> Request<'a> {
    /// Shared with other shared holders (a reader).
    pub fn shared(mut self) -> Self {
        self.access = Access::Shared;
        self
    }

    /// Lock a file that must already exist, opened read-only (a reader
    /// that writes nothing, not even a lock file).
    pub fn existing(mut self) -> Self {
        self.target = Target::Existing;
        self
    }

    /// Lock the folder at the path itself.
    pub fn folder(mut self) -> Self {
        self.target = Target::Folder;
        self
    }

    /// Wait up to `bound` for a holder to let go.
    pub fn wait(mut self, bound: Duration) -> Self {
        self.wait = bound;
        self
    }

    /// Who holds the lock, as the caller knows better than the kernel (a
    /// lease file names its driver); `None` falls back to `/proc/locks`.
    pub fn holder<'b>(self, holder: impl Fn() -> Option<String> + 'b) -> Request<'b>
    where
        'a: 'b,
    {
        Request {
            path: self.path,
            what: self.what,
            access: self.access,
            target: self.target,
            wait: self.wait,
            holder: Some(Box::new(holder)),
            hint: self.hint,
        }
    }

    /// What the user can do when the wait runs out, added to the error.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Open the target and take the lock, waiting up to the bound.
    pub fn acquire(self) -> Result<Lock, Error> {
        let file = self.open()?;
        self.acquire_open(file)
    }

    /// Take the lock on `file`, which the caller opened itself (a log opened
    /// to append), waiting up to the bound.
    pub fn acquire_open(self, file: File) -> Result<Lock, Error> {
        let started = Instant::now();
        let mut said = false;
        let mut file = file;
        loop {
            file = match self.try_lock(file)? {
                Ok(lock) => return Ok(lock),
                Err(back) => back,
            };
            let waited = started.elapsed();
            if waited >= self.wait {
                return Err(Error::Busy {
                    what: self.what.clone(),
                    path: self.path.clone(),
                    holder: self.describe_holder(&file),
                    waited: self.wait,
                    hint: self.hint.clone(),
                });
            }
            if !said && waited >= MOMENT {
                crate::diag::progress(format_args!(
                    "waiting for {} to release {} (giving up after {})",
                    self.describe_holder(&file),
                    self.what,
                    seconds(self.wait)
                ));
                said = true;
            }
            std::thread::sleep(POLL.min(self.wait.saturating_sub(waited)));
        }
    }

    /// Take the lock if it is free now: `Ok(None)` when someone holds it.
    pub fn try_acquire(self) -> Result<Option<Lock>, Error> {
        let file = self.open()?;
        Ok(self.try_lock(file)?.ok())
    }

    /// One try: the lock, or the file back when it is held.
    fn try_lock(&self, file: File) -> Result<Result<Lock, File>, Error> {
        let arg = match self.access {
            Access::Exclusive => FlockArg::LockExclusiveNonblock,
            Access::Shared => FlockArg::LockSharedNonblock,
        };
        match Flock::lock(file, arg) {
            Ok(file) => Ok(Ok(Lock {
                file,
                path: self.path.clone(),
            })),
            Err((back, Errno::EWOULDBLOCK)) => Ok(Err(back)),
            Err((_, errno)) => Err(Error::Lock {
                path: self.path.clone(),
                source: io::Error::from(errno),
            }),
        }
    }

    fn open(&self) -> Result<File, Error> {
        let opened = match self.target {
            Target::File => crate::beneath::open_lock(&self.path),
            Target::Existing => crate::beneath::open(
                &self.path,
                OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOFOLLOW,
                Mode::empty(),
            ),
            Target::Folder => File::open(&self.path),
        };
        let file = opened.map_err(|source| Error::Open {
            path: self.path.clone(),
            source,
        })?;
        let kind = file.metadata().map_err(|source| Error::Open {
            path: self.path.clone(),
            source,
        })?;
        let right = match self.target {
            Target::File | Target::Existing => kind.is_file(),
            Target::Folder => kind.is_dir(),
        };
        if !right {
            return Err(Error::Kind {
                path: self.path.clone(),
                expected: if self.target == Target::Folder {
                    "a folder"
                } else {
                    "a regular file"
                },
            });
        }
        Ok(file)
    }

    fn describe_holder(&self, file: &File) -> String {
        self.holder
            .as_ref()
            .and_then(|holder| holder())
            .or_else(|| kernel_holder(file).map(describe_pid))
            .unwrap_or_else(|| "another process".to_owned())
    }
}

/// Why a lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot open the lock `{}`", .path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("the lock `{}` is not {expected}", .path.display())]
    Kind {
        path: PathBuf,
        expected: &'static str,
    },
    #[error("cannot lock `{}`", .path.display())]
    Lock {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// Still held when the bound ran out.
    #[error("{}", busy_message(what, path, holder, *waited, hint.as_deref()))]
    Busy {
        what: String,
        path: PathBuf,
        holder: String,
        waited: Duration,
        hint: Option<String>,
    },
}

impl Error {
    /// Whether the lock was held past the bound.
    pub fn is_busy(&self) -> bool {
        matches!(self, Error::Busy { .. })
    }

    /// Whether an [`Request::existing`] lock file does not exist.
    pub fn is_missing(&self) -> bool {
        matches!(self, Error::Open { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }
}

impl From<Error> for io::Error {
    fn from(err: Error) -> io::Error {
        let kind = match &err {
            Error::Open { source, .. } | Error::Lock { source, .. } => source.kind(),
            Error::Kind { .. } => io::ErrorKind::InvalidInput,
            Error::Busy { .. } => io::ErrorKind::WouldBlock,
        };
        io::Error::new(kind, err)
    }
}

/// "gave up waiting for the team state `…` after 1m: `….lock` is locked by
/// pid 12 (`okstra dispatch …`); the hint" (a try without a wait names no
/// wait).
fn busy_message(
    what: &str,
    path: &Path,
    holder: &str,
    waited: Duration,
    hint: Option<&str>,
) -> String {
    let mut message = if waited.is_zero() {
        format!("{what}: ")
    } else {
        format!("gave up waiting for {what} after {}: ", seconds(waited))
    };
    let _ = write!(message, "`{}` is locked by {holder}", path.display());
    if let Some(hint) = hint {
        message.push_str("; ");
        message.push_str(hint);
    }
    message
}

/// `5s`, `2m`: a bound as the messages show it.
fn seconds(duration: Duration) -> String {
    humantime::format_duration(Duration::from_secs(duration.as_secs())).to_string()
}

/// `pid 123 (`okstra dispatch …`)`, or just the pid when its command line
/// cannot be read.
fn describe_pid(pid: i32) -> String {
    match crate::process_group::proc_command(pid) {
        Some((cmdline, _)) if !cmdline.is_empty() => format!(
            "pid {pid} (`{}`)",
            crate::fsread::escape(&crate::fsread::clip(&cmdline.join(" "), SHOWN_COMMAND))
        ),
        _ => format!("pid {pid}"),
    }
}

/// The process holding a `flock` on `file`, as `/proc/locks` lists it
/// (Linux; its pids are those of our pid namespace, 0 for a holder outside
/// it).
fn kernel_holder(file: &File) -> Option<i32> {
    use std::os::unix::fs::MetadataExt;
    let meta = file.metadata().ok()?;
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    holder_in(
        &locks,
        nix::sys::stat::major(meta.dev()),
        nix::sys::stat::minor(meta.dev()),
        meta.ino(),
    )
}

/// The first holder (not a waiter) of a `flock` on the file
/// `major:minor:inode` in the text of `/proc/locks`, whose lines read
/// `1: FLOCK  ADVISORY  WRITE 1234 08:02:131 0 EOF` (device numbers in hex;
/// a waiter's have `->` after the number).
fn holder_in(locks: &str, major: u64, minor: u64, inode: u64) -> Option<i32> {
    locks.lines().find_map(|line| {
        let words: Vec<&str> = line.split_whitespace().collect();
        let [_, "FLOCK", _, _, pid, id, ..] = words.as_slice() else {
            return None;
        };
        let mut parts = id.split(':');
        let found_major = u64::from_str_radix(parts.next()?, 16).ok()?;
        let found_minor = u64::from_str_radix(parts.next()?, 16).ok()?;
        let found_inode: u64 = parts.next()?.parse().ok()?;
        let pid: i32 = pid.parse().ok()?;
        (found_major == major && found_minor == minor && found_inode == inode && pid > 0)
            .then_some(pid)
    })
}

#[cfg(test)]
#[path = "lock_tests.rs"]
mod tests;
