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
//! down too, and it closes every descriptor but its pipe, so it never holds
//! the wrapper's output or a CLI's stdin open.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{BorrowedFd, IntoRawFd, OwnedFd};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::libc;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::{ForkResult, Pid, fork, pipe2, read, setpgid};

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
                PROGRAM.warning(format_args!("cannot start the guardian: {err}"));
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
                PROGRAM.warning(format_args!("cannot start the guardian: {err}"));
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
            PROGRAM.warning(format_args!("the guardian did not get the group id: {err}"));
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
    // SAFETY: other threads may exist (the copy and prompt threads), so the
    // child may only make async-signal-safe calls until it exits: it does.
    // It moves its pipe to fd 0, closes every other descriptor, reads the
    // pipe, signals a group and `_exit`s: plain system calls, no allocation,
    // no lock.
    match unsafe { fork() } {
        Err(err) => Err(err.into()),
        Ok(ForkResult::Child) => {
            let pipe = read_end.into_raw_fd();
            // SAFETY: the child's own copy of the fd table. Everything but
            // the guardian's pipe is closed: stdout and stderr (so it never
            // holds the wrapper's output open), and every pipe the wrapper
            // had open at the fork, above all the write end of a CLI's stdin
            // that the prompt thread is still filling, whose copy here would
            // keep the CLI from ever seeing EOF.
            unsafe {
                if pipe == 0 || libc::dup2(pipe, 0) == 0 {
                    close_from(1);
                    guard(BorrowedFd::borrow_raw(0));
                }
                // Ends the forked child without running the parent's exit
                // handlers or flushing its buffers a second time.
                libc::_exit(0)
            }
        }
        Ok(ForkResult::Parent { child }) => {
            drop(read_end);
            Ok((child, write_end))
        }
    }
}

/// Close every descriptor from `first` up: `close_range` where the kernel
/// has it (5.9+), else one `close` per possible descriptor.
#[expect(unsafe_code, reason = "raw system calls in the forked guardian")]
fn close_from(first: libc::c_int) {
    // SAFETY: plain system calls on the child's own fd table.
    unsafe {
        if libc::close_range(first.unsigned_abs(), libc::c_uint::MAX, 0) == 0 {
            return;
        }
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        let top = if libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) == 0 {
            libc::c_int::try_from(limit.rlim_cur.min(1 << 16)).unwrap_or(1 << 16)
        } else {
            1024
        };
        for fd in first..top {
            libc::close(fd);
        }
    }
}

/// The guardian's whole life: wait for the group id, then for "done" or EOF.
/// Only plain system calls, as a forked child of a threaded process must.
fn guard(pipe: BorrowedFd<'_>) {
    let _ = setpgid(Pid::from_raw(0), Pid::from_raw(0));
    let mut id = [0_u8; 4];
    let mut got = 0;
    while got < id.len() {
        match read(pipe, &mut id[got..]) {
            Ok(0) => return, // the wrapper ended before it had a group
            Ok(n) => got += n,
            Err(Errno::EINTR) => {}
            Err(_) => return,
        }
    }
    let group = i32::from_ne_bytes(id);
    let mut byte = [0_u8; 1];
    loop {
        match read(pipe, &mut byte) {
            Ok(0) => break,
            Ok(_) if byte[0] == DONE => return,
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => break,
        }
    }
    // EOF (or a broken pipe): the wrapper is gone.
    if group > 1 {
        let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
    }
}
