//! Every exit code okstra defines, and nowhere else.
//!
//! Two policies live here. The launcher and its subcommands use a small set:
//! 0 success, 1 "the thing you asked me to check is wrong", 2 "okstra could not
//! do its job" (bad input, I/O, template error; clap's usage code too), and
//! 128+N when a signal stopped us. The gate (`okstra gate`, `okstra run
//! --fail-on`) adds 3: "there is no reliable answer to gate on" (the report
//! is invalid, or the run was not cross-verified, is still running or was
//! stopped by its budget). `provider-exec` is a transparent wrapper: it
//! exits with the CLI's own code, 124 after an idle kill, 128+N after a signal
//! to the wrapper, and the reference preflight codes 64–69 / 127 before
//! anything starts.

use std::process::ExitCode;

/// Launcher / subcommand outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// The job was done.
    Success,
    /// The job was done and the checked thing is wrong (e.g. an invalid report).
    Failure,
    /// okstra could not do its job.
    Error,
    /// The gate has no reliable answer to judge (see [`UNRELIABLE`]).
    Unreliable,
    /// A raw code decided elsewhere in this module (provider-exec passes the
    /// child's code through).
    Code(u8),
}

impl From<ExitStatus> for ExitCode {
    fn from(status: ExitStatus) -> Self {
        ExitCode::from(status.code())
    }
}

impl ExitStatus {
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Success => SUCCESS,
            ExitStatus::Failure => FAILURE,
            ExitStatus::Error => USAGE,
            ExitStatus::Unreliable => UNRELIABLE,
            ExitStatus::Code(code) => code,
        }
    }
}

/// Everything went as asked.
pub const SUCCESS: u8 = 0;
/// The checked artifact is invalid (`okstra validate`).
pub const FAILURE: u8 = 1;
/// Bad input or okstra could not do its job (a lock held past its bound
/// included); the same code clap uses for usage errors.
pub const USAGE: u8 = 2;
/// The gate found no reliable answer: the report does not validate, or the
/// run was not cross-verified, is still running or was stopped by its
/// budget. (1 stays "findings at or above the threshold", 2 bad input.)
pub const UNRELIABLE: u8 = 3;

/// provider-exec preflight: wrong argument count or unknown provider (sysexits `EX_USAGE`).
pub const EXEC_USAGE: u8 = 64;
/// provider-exec preflight: project root missing or not a directory.
pub const EXEC_PROJECT_ROOT: u8 = 65;
/// provider-exec preflight: empty model execution value.
pub const EXEC_MODEL: u8 = 66;
/// provider-exec preflight: prompt path missing, not a file, or unreadable.
pub const EXEC_PROMPT: u8 = 67;
/// provider-exec preflight: worktree given but not a directory.
pub const EXEC_WORKTREE: u8 = 68;
/// provider-exec preflight: idle timeout is not a non-negative integer.
pub const EXEC_TIMEOUT_ARG: u8 = 69;
/// provider-exec: the wrapper could not set up supervision (sysexits `EX_OSERR`).
pub const EXEC_OS_ERROR: u8 = 71;
/// provider-exec: the log or the status sidecar could not be created, so nothing
/// was started (sysexits `EX_CANTCREAT`).
pub const EXEC_CANT_CREATE: u8 = 73;
/// `okstra sandbox-exec` (through provider-exec): the kernel would not
/// confine the CLI with Landlock as asked, so it was not started
/// (sysexits `EX_NOPERM`).
pub const SANDBOX_REFUSED: u8 = 77;
/// The idle watchdog stopped the child; the same code `timeout(1)` uses.
pub const TIMED_OUT: u8 = 124;
/// provider-exec: the CLI was found but could not be executed (shell convention).
pub const CANNOT_EXECUTE: u8 = 126;
/// provider-exec preflight: the provider CLI is not on `PATH` (shell convention).
pub const NOT_FOUND: u8 = 127;

/// What each code means, as the manual page of `command` (a command path
/// such as `gate` or `publish github`; empty for okstra's own page) lists
/// them: `(code, meaning)`, in the order a reader looks them up.
pub fn manual(command: &str) -> Vec<(String, &'static str)> {
    match command {
        "provider-exec" => vec![
            (
                "the CLI's own".to_owned(),
                "the provider CLI exited by itself",
            ),
            (format!("{TIMED_OUT}"), "the idle watchdog stopped the CLI"),
            (
                format!("{EXEC_USAGE}"),
                "wrong number of arguments, an unknown provider, or a look-alike CLI okstra cannot drive",
            ),
            (
                format!("{EXEC_PROJECT_ROOT}"),
                "the project root is missing or not a folder",
            ),
            (format!("{EXEC_MODEL}"), "the model is empty"),
            (
                format!("{EXEC_PROMPT}"),
                "the prompt is missing, not a regular file, or unreadable",
            ),
            (
                format!("{EXEC_WORKTREE}"),
                "a worktree was given that is not a folder",
            ),
            (
                format!("{EXEC_TIMEOUT_ARG}"),
                "the idle timeout is not a non-negative whole number",
            ),
            (
                format!("{EXEC_OS_ERROR}"),
                "the wrapper could not set up supervision",
            ),
            (
                format!("{SANDBOX_REFUSED}"),
                "the kernel would not confine the CLI with Landlock as the dispatcher asked, so it was not started",
            ),
            (
                format!("{EXEC_CANT_CREATE}"),
                "the log or the status sidecar could not be created; nothing was started",
            ),
            (
                format!("{CANNOT_EXECUTE}"),
                "the CLI was found but could not be executed",
            ),
            (
                format!("{NOT_FOUND}"),
                "the CLI is not on PATH, or vanished before it could start",
            ),
            (
                "128+N".to_owned(),
                "the CLI was killed by signal N, or okstra received signal N and stopped it",
            ),
        ],
        "hook" => vec![
            (
                format!("{SUCCESS}"),
                "whatever the hook input held: a hook never blocks its host",
            ),
            (format!("{USAGE}"), "the command line does not parse"),
        ],
        _ => vec![
            (format!("{SUCCESS}"), "done"),
            (
                format!("{FAILURE}"),
                "the checked thing is wrong (an invalid report, a provider not ready, a dispatch that did not complete); for the gate, findings at or above --fail-on",
            ),
            (
                format!("{USAGE}"),
                "okstra could not do its job: bad input, a missing file, an I/O failure, a lock another process held past okstra's wait for it",
            ),
            (
                format!("{UNRELIABLE}"),
                "the gate (okstra gate, okstra run --fail-on) has no reliable answer: the report does not validate, or the run was not cross-verified, is still running or was stopped by its budget",
            ),
            ("128+N".to_owned(), "stopped by signal N"),
        ],
    }
}

/// The shell convention for "terminated by signal N": 128 + N.
pub fn from_signal(signal: i32) -> u8 {
    u8::try_from(128 + signal.clamp(1, 127)).unwrap_or(u8::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_map_to_128_plus_n() {
        assert_eq!(from_signal(15), 143);
        assert_eq!(from_signal(9), 137);
        assert_eq!(from_signal(2), 130);
    }

    #[test]
    fn status_codes_are_stable() {
        assert_eq!(ExitStatus::Success.code(), 0);
        assert_eq!(ExitStatus::Failure.code(), 1);
        assert_eq!(ExitStatus::Error.code(), 2);
        assert_eq!(ExitStatus::Unreliable.code(), 3);
        assert_eq!(ExitStatus::Code(124).code(), 124);
    }
}
