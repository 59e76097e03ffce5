//! The copy loop: the CLI's merged output goes to the log first, then to our
//! stdout, until EOF. The log is written first so it stays complete when our
//! reader is slow or gone; a closed stdout (EPIPE: Rust ignores SIGPIPE) only
//! stops the stdout copy.
//!
//! When our stdout is `/dev/null` (as `okstra dispatch` runs us), the log is
//! the only copy and the write to stdout is skipped: one system call less
//! per chunk. Zero-copy was measured and rejected: `tee(2)` + two
//! `splice(2)`s cost 0.95 s/GiB against 0.72 for read + writes, and even a
//! lone `splice` into a tmpfs log costs more (0.83) than read + write: the
//! page-cache copy stays, and the per-call work grows.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicU64, Ordering};

use super::PROGRAM;
use super::watchdog::Activity;

/// Read size of the loop: one default pipe's worth. (A 1 MiB pipe
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
        PROGRAM.error(format_args!(
            "log write failed, output continues on stdout: {err}"
        ));
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
    mut pipe: io::PipeReader,
    log: File,
    activity: &Activity,
    copied: &AtomicU64,
) -> CopyReport {
    let mut sinks = Sinks::new(log);
    if sinks.stdout.as_ref().is_some_and(is_dev_null) {
        // Nobody reads our stdout (`okstra dispatch` runs us so).
        sinks.stdout = None;
    }
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
    sinks.report
}

/// Whether `file` is the null device (the same character device as `/dev/null`).
fn is_dev_null(file: &File) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let (Ok(ours), Ok(null)) = (file.metadata(), std::fs::metadata("/dev/null")) else {
        return false;
    };
    ours.file_type().is_char_device() && ours.rdev() == null.rdev()
}
