//! The guardian: stops the CLI's whole process group when the wrapper dies
//! without doing it itself (SIGKILL, OOM kill).
//!
//! `PR_SET_PDEATHSIG` reaches only the wrapper's direct child; grandchildren
//! in the CLI's group would run on unsupervised. So before anything else
//! starts, the wrapper forks a small guardian that holds the read end of a
//! pipe whose only write end the wrapper keeps (close-on-exec, so the CLI
//! never inherits it). The wrapper sends the group id once the CLI is
//! spawned, and one "done" byte when it finishes normally. The guardian
//! blocks in `read` the whole time (no wake-ups while the CLI runs): EOF
//! without "done" means the wrapper died, and the guardian SIGKILLs the group.
//!
//! The guardian is a fork, not a new program: no exec, nothing loaded twice,
//! and its memory is its own, so it adds nothing to the wrapper's. It is
//! started once the CLI has run for [`START_AFTER`] (a fork and the
//! copy-on-write faults it causes cost a third of a millisecond, which a CLI
//! that exits at once should not pay; a CLI has no grandchildren that
//! early). It leads a process group of its own, so a signal to the
//! wrapper's group (a terminal's Ctrl-C, `kill -9 -<pgid>`) does not take it
//! down too, and it closes stdin, stdout and stderr so it never holds the
//! wrapper's output open.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use nix::fcntl::OFlag;
use nix::unistd::{Pid, pipe2};

use super::PROGRAM;

/// The byte that tells the guardian the wrapper finished on its own.
const DONE: u8 = b'd';

/// How long the CLI runs before the guardian is started.
pub const START_AFTER: std::time::Duration = std::time::Duration::from_millis(20);

/// The wrapper's end of the guardian.
pub struct Guardian {
    pid: Pid,
    pipe: File,
}

impl Guardian {
    /// Start the guardian for the CLI's process group `group`. `None` (with
    /// a warning) when it cannot be started: supervision goes on, only the
    /// SIGKILL case is then left to `okstra reap`.
    pub fn start(group: Pid) -> Option<Guardian> {
        let (read_end, write_end) = match pipe2(OFlag::O_CLOEXEC) {
            Ok(pair) => pair,
            Err(err) => {
                eprintln!("{PROGRAM}: warning: cannot start the guardian: {err}");
                return None;
            }
        };
        match fork_guardian(read_end, write_end) {
            Ok((pid, write_end)) => {
                let guardian = Guardian {
                    pid,
                    pipe: File::from(write_end),
                };
                guardian.watch(group);
                Some(guardian)
            }
            Err(err) => {
                eprintln!("{PROGRAM}: warning: cannot start the guardian: {err}");
                None
            }
        }
    }

    /// The guardian's pid (it is our child; not an orphan to stop).
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// Tell the guardian which group to stop if we die.
    fn watch(&self, group: Pid) {
        // Four bytes: one atomic pipe write.
        if let Err(err) = (&self.pipe).write_all(&group.as_raw().to_ne_bytes()) {
            eprintln!("{PROGRAM}: warning: the guardian did not get the group id: {err}");
        }
    }

    /// We finished normally: let the guardian go without stopping anything.
    /// It is not waited for (that would add a scheduling round trip to every
    /// run); the wrapper exits right after, and init reaps it.
    pub fn release(self) {
        let _ = (&self.pipe).write_all(&[DONE]);
    }
}

/// Fork the guardian; the child runs [`guard`] and exits.
#[expect(
    unsafe_code,
    reason = "the guardian is a forked child (no exec, nothing loaded twice) that may only make raw system calls"
)]
fn fork_guardian(read_end: OwnedFd, write_end: OwnedFd) -> io::Result<(Pid, OwnedFd)> {
    // SAFETY: other threads may exist (the copy thread), so the child may
    // only make async-signal-safe calls until it exits: it does. It closes
    // descriptors, reads a pipe, signals a group and `_exit`s, all as raw
    // system calls through rustix (no allocation, no lock, no `errno`).
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            drop(write_end);
            // SAFETY: the child's own copy of the fd table: closing
            // stdin, stdout and stderr there keeps the guardian from
            // holding the wrapper's output open.
            unsafe {
                for fd in 0..=2 {
                    rustix::io::close(fd);
                }
            }
            guard(read_end.as_fd());
            // SAFETY: ends the forked child without running the parent's
            // exit handlers or flushing its buffers a second time.
            unsafe { libc::_exit(0) }
        }
        child => {
            drop(read_end);
            Ok((Pid::from_raw(child), write_end))
        }
    }
}

/// The guardian's whole life: wait for the group id, then for "done" or EOF.
/// Only rustix calls (raw system calls, no `errno`), as a forked child of a
/// threaded process must.
fn guard(pipe: BorrowedFd<'_>) {
    let _ = rustix::process::setpgid(None, None);
    let mut id = [0_u8; 4];
    let mut got = 0;
    while got < id.len() {
        match rustix::io::read(pipe, &mut id[got..]) {
            Ok(0) => return, // the wrapper ended before it had a group
            Ok(n) => got += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return,
        }
    }
    let group = rustix::process::Pid::from_raw(i32::from_ne_bytes(id));
    let mut byte = [0_u8; 1];
    loop {
        match rustix::io::read(pipe, &mut byte) {
            Ok(0) => break,
            Ok(_) if byte[0] == DONE => return,
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(_) => break,
        }
    }
    // EOF (or a broken pipe): the wrapper is gone.
    if let Some(group) = group.filter(|group| group.as_raw_nonzero().get() > 1) {
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
}
