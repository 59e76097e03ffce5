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
//! The guardian is a fork, not a new program: no exec, no second copy of the
//! binary mapped, its pages shared with the wrapper's until either writes.
//! It leads a process group of its own, so a signal to the wrapper's group
//! (a terminal's Ctrl-C, `kill -9 -<pgid>`) does not take it down too, and it
//! closes stdin, stdout and stderr so it never holds the wrapper's output
//! open.

use std::fs::File;
use std::io::Write;
use std::os::fd::OwnedFd;

use nix::fcntl::OFlag;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::{ForkResult, Pid, fork, pipe2, setpgid};

use super::PROGRAM;

/// The byte that tells the guardian the wrapper finished on its own.
const DONE: u8 = b'd';

/// The wrapper's end of the guardian.
pub struct Guardian {
    pid: Pid,
    pipe: File,
}

impl Guardian {
    /// Fork the guardian. Must be called while the process has one thread.
    /// `None` (with a warning) when it cannot be started: supervision goes
    /// on, only the SIGKILL case is then left to `okstra reap`.
    pub fn start() -> Option<Guardian> {
        let (read_end, write_end) = match pipe2(OFlag::O_CLOEXEC) {
            Ok(pair) => pair,
            Err(err) => {
                eprintln!("{PROGRAM}: warning: cannot start the guardian: {err}");
                return None;
            }
        };
        match fork_guardian(read_end, write_end) {
            Ok((pid, write_end)) => Some(Guardian {
                pid,
                pipe: File::from(write_end),
            }),
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
    pub fn watch(&self, group: Pid) {
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

/// Fork; the child becomes the guardian and never returns.
#[expect(
    unsafe_code,
    reason = "the guardian must be forked (a new program could not share the pipe as cheaply), and the forked child may only make raw system calls until it exits"
)]
fn fork_guardian(read_end: OwnedFd, write_end: OwnedFd) -> nix::Result<(Pid, OwnedFd)> {
    // SAFETY: called from `supervise::run` before the tokio runtime or any
    // other thread exists, so the child is a copy of a single-threaded
    // process and no lock can be held by a thread that is not there. The
    // child then only makes async-signal-safe system calls (close, setpgid,
    // read, kill, _exit) and never returns into Rust code that allocates.
    match unsafe { fork() }? {
        ForkResult::Parent { child } => {
            drop(read_end);
            Ok((child, write_end))
        }
        ForkResult::Child => {
            drop(write_end);
            guard(&read_end);
            // SAFETY: `_exit` ends the forked child without running the
            // parent's atexit handlers or flushing its buffers twice.
            unsafe { libc::_exit(0) }
        }
    }
}

/// The guardian's whole life: wait for the group id, then for "done" or EOF.
fn guard(pipe: &OwnedFd) {
    let _ = setpgid(Pid::from_raw(0), Pid::from_raw(0));
    for fd in 0..=2 {
        // Closing by number: nothing else in this process owns these.
        let _ = nix::unistd::close(fd);
    }
    let mut id = [0_u8; 4];
    let mut got = 0;
    while got < id.len() {
        match nix::unistd::read(pipe, &mut id[got..]) {
            Ok(0) => return, // the wrapper ended before it had a group
            Ok(n) => got += n,
            Err(nix::errno::Errno::EINTR) => {}
            Err(_) => return,
        }
    }
    let group = Pid::from_raw(i32::from_ne_bytes(id));
    let mut byte = [0_u8; 1];
    loop {
        match nix::unistd::read(pipe, &mut byte) {
            Ok(0) => {}
            Ok(_) if byte[0] == DONE => return,
            Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => {}
        }
        // EOF (or a broken pipe): the wrapper is gone.
        if group.as_raw() > 1 {
            let _ = killpg(group, Signal::SIGKILL);
        }
        return;
    }
}
