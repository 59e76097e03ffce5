//! The copy loop: the CLI's merged output goes to the log first, then to our
//! stdout, until EOF. The log is written first so it stays complete when our
//! reader is slow or gone; a closed stdout (EPIPE: Rust ignores SIGPIPE) only
//! stops the stdout copy.
//!
//! On Linux the bytes never enter our address space: `tee(2)` duplicates what
//! is waiting in the CLI's pipe into a pipe of our own (page references, no
//! copy), `splice(2)` moves the CLI's pipe into the log, and our pipe into
//! stdout. That saves the copy out of the kernel and back for every chunk,
//! the largest part of the wrapper's own CPU after the log's page-cache copy.
//! Where a splice is refused (`EINVAL`: a terminal, an `O_APPEND` file), that
//! side falls back to a read and a write; where `tee` is refused, the whole
//! loop does. Either way the syscall count is bound by the CLI's writes.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicU64, Ordering};

use super::PROGRAM;
use super::watchdog::Activity;

/// Read size of the fallback loop: one default pipe's worth. (A 1 MiB pipe
/// with 256 KiB reads measured slower here: more cache misses, same syscall
/// count bound by the producer's writes.)
const CHUNK: usize = 64 * 1024;

/// What the copy thread saw.
#[derive(Debug, Default)]
pub struct CopyReport {
    pub stdout_closed: bool,
    pub problems: Vec<String>,
}

/// Where the copy goes: the log (until a write fails) and a duplicate of
/// fd 1 as a `File` (unbuffered writes, no line scanning).
struct Sinks {
    log: Option<File>,
    stdout: Option<File>,
    report: CopyReport,
}

impl Sinks {
    fn new(log: File) -> Self {
        let mut report = CopyReport::default();
        let stdout = match io::stdout().as_fd().try_clone_to_owned() {
            Ok(fd) => Some(File::from(fd)),
            Err(err) => {
                report.problems.push(format!("cannot use stdout: {err}"));
                None
            }
        };
        Self {
            log: Some(log),
            stdout,
            report,
        }
    }

    fn log_failed(&mut self, err: &io::Error) {
        eprintln!("{PROGRAM}: error: log write failed, output continues on stdout: {err}");
        self.report
            .problems
            .push(format!("log write failed: {err}"));
        self.log = None;
    }

    fn stdout_failed(&mut self, err: &io::Error) {
        if err.kind() == io::ErrorKind::BrokenPipe {
            self.report.stdout_closed = true;
        } else {
            self.report
                .problems
                .push(format!("stdout write failed: {err}"));
        }
        self.stdout = None;
    }

    /// Write one chunk to the log, then to stdout.
    fn write(&mut self, chunk: &[u8]) {
        if let Some(file) = self.log.as_mut()
            && let Err(err) = file.write_all(chunk)
        {
            self.log_failed(&err);
        }
        if let Some(out) = self.stdout.as_mut()
            && let Err(err) = out.write_all(chunk)
        {
            self.stdout_failed(&err);
        }
    }
}

/// Copy `pipe` to the log and stdout until EOF.
pub fn copy_output(
    pipe: io::PipeReader,
    log: File,
    activity: &Activity,
    copied: &AtomicU64,
) -> CopyReport {
    let mut sinks = Sinks::new(log);
    #[cfg(target_os = "linux")]
    let pipe = match zero_copy::run(pipe, &mut sinks, activity, copied) {
        zero_copy::Done::Finished => return sinks.report,
        zero_copy::Done::Rest(pipe) => pipe,
    };
    copy_with_buffer(pipe, &mut sinks, activity, copied);
    sinks.report
}

/// The portable loop: read a chunk, write it to each sink.
fn copy_with_buffer(
    mut pipe: io::PipeReader,
    sinks: &mut Sinks,
    activity: &Activity,
    copied: &AtomicU64,
) {
    let mut buf = vec![0_u8; CHUNK];
    loop {
        let n = match pipe.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => {
                sinks
                    .report
                    .problems
                    .push(format!("cannot read the CLI's output: {err}"));
                break;
            }
        };
        activity.touch();
        sinks.write(&buf[..n]);
        copied.fetch_add(n as u64, Ordering::Relaxed);
    }
}

#[cfg(target_os = "linux")]
mod zero_copy {
    use std::fs::File;
    use std::io::{self, Read, Write};
    use std::sync::atomic::{AtomicU64, Ordering};

    use nix::errno::Errno;
    use nix::fcntl::{FcntlArg, OFlag, SpliceFFlags, fcntl, splice, tee};
    use nix::unistd::pipe2;

    use super::{Activity, CHUNK, Sinks};

    /// How the zero-copy loop ended.
    pub enum Done {
        /// EOF (or a read error, reported): nothing left to copy.
        Finished,
        /// The rest goes through the portable loop: `tee` is refused, or
        /// stdout is gone and the log is all that is left.
        Rest(io::PipeReader),
    }

    /// Most bytes one `tee`/`splice` call moves (more than any pipe holds).
    const MOST: usize = 1 << 20;

    /// Which sinks take a splice (a refused one copies through `Scratch`).
    struct Modes {
        log_splices: bool,
        stdout_splices: bool,
    }

    /// A buffer for the fallbacks, allocated on first use only.
    #[derive(Default)]
    struct Scratch(Vec<u8>);

    impl Scratch {
        fn get(&mut self, len: usize) -> &mut [u8] {
            if self.0.is_empty() {
                self.0 = vec![0; CHUNK];
            }
            &mut self.0[..len.min(CHUNK)]
        }
    }

    pub fn run(
        pipe: io::PipeReader,
        sinks: &mut Sinks,
        activity: &Activity,
        copied: &AtomicU64,
    ) -> Done {
        let Ok((side_read, side_write)) = pipe2(OFlag::O_CLOEXEC) else {
            return Done::Rest(pipe);
        };
        // The side pipe must hold all that one `tee` duplicates.
        if let Ok(size) = fcntl(&pipe, FcntlArg::F_GETPIPE_SZ) {
            let _ = fcntl(&side_write, FcntlArg::F_SETPIPE_SZ(size));
        }
        let side_read = File::from(side_read);
        let mut modes = Modes {
            log_splices: true,
            stdout_splices: true,
        };
        let mut scratch = Scratch::default();
        let mut first = true;
        while sinks.stdout.is_some() {
            let n = match tee(&pipe, &side_write, MOST, SpliceFFlags::empty()) {
                Ok(0) => return Done::Finished,
                Ok(n) => n,
                Err(Errno::EINTR) => continue,
                Err(Errno::EINVAL | Errno::ENOSYS) if first => return Done::Rest(pipe),
                Err(err) => {
                    sinks
                        .report
                        .problems
                        .push(format!("cannot read the CLI's output: {err}"));
                    return Done::Finished;
                }
            };
            first = false;
            activity.touch();
            to_log(&pipe, sinks, &mut modes, &mut scratch, n);
            to_stdout(&side_read, sinks, &mut modes, &mut scratch, n);
            copied.fetch_add(n as u64, Ordering::Relaxed);
        }
        drop(side_write);
        Done::Rest(pipe)
    }

    /// Move exactly `left` bytes (already duplicated into the side pipe)
    /// from the CLI's pipe into the log, or drop them once the log failed.
    fn to_log(
        pipe: &io::PipeReader,
        sinks: &mut Sinks,
        modes: &mut Modes,
        scratch: &mut Scratch,
        mut left: usize,
    ) {
        while left > 0 {
            let Some(log) = sinks.log.as_ref() else {
                drop_bytes(pipe, scratch, left);
                return;
            };
            let moved = if modes.log_splices {
                splice(pipe, None, log, None, left, SpliceFFlags::empty())
            } else {
                copy_through(pipe, log, scratch, left)
            };
            match moved {
                Ok(0) => {
                    drop_bytes(pipe, scratch, left);
                    return;
                }
                Ok(m) => left -= m,
                Err(Errno::EINTR) => {}
                Err(Errno::EINVAL) if modes.log_splices => modes.log_splices = false,
                Err(err) => sinks.log_failed(&err.into()),
            }
        }
    }

    /// Move exactly `left` bytes from the side pipe to stdout, or drop them
    /// once stdout failed (the side pipe must be empty before the next `tee`).
    fn to_stdout(
        side: &File,
        sinks: &mut Sinks,
        modes: &mut Modes,
        scratch: &mut Scratch,
        mut left: usize,
    ) {
        while left > 0 {
            let Some(out) = sinks.stdout.as_ref() else {
                drop_bytes(side, scratch, left);
                return;
            };
            let moved = if modes.stdout_splices {
                splice(side, None, out, None, left, SpliceFFlags::empty())
            } else {
                copy_through(side, out, scratch, left)
            };
            match moved {
                Ok(0) => return,
                Ok(m) => left -= m,
                Err(Errno::EINTR) => {}
                Err(Errno::EINVAL) if modes.stdout_splices => modes.stdout_splices = false,
                Err(err) => sinks.stdout_failed(&err.into()),
            }
        }
    }

    /// Read up to `left` bytes from `from` and write them all to `to`.
    fn copy_through(
        mut from: impl Read,
        mut to: impl Write,
        scratch: &mut Scratch,
        left: usize,
    ) -> nix::Result<usize> {
        let buf = scratch.get(left);
        let n = from.read(buf).map_err(|err| errno(&err))?;
        to.write_all(&buf[..n]).map_err(|err| errno(&err))?;
        Ok(n)
    }

    /// Read and drop exactly `left` bytes that are known to be waiting.
    fn drop_bytes(mut from: impl Read, scratch: &mut Scratch, mut left: usize) {
        while left > 0 {
            match from.read(scratch.get(left)) {
                Ok(0) => return,
                Ok(n) => left -= n,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }

    fn errno(err: &io::Error) -> Errno {
        err.raw_os_error().map_or(Errno::EIO, Errno::from_raw)
    }
}
