//! Running git: the one place okstra starts `git`, and its typed errors.
//!
//! Every call goes through [`Git::run`]: `git -C <dir>` through
//! `child::run_captured` (its own process group, stdin `/dev/null` unless
//! bytes are fed, a wall-time limit, bounded output), with what could steer
//! git elsewhere removed from the environment (`GIT_DIR`, `GIT_WORK_TREE`,
//! `GIT_INDEX_FILE` … inherited from a hook or a shell) and hooks switched
//! off (`core.hooksPath=/dev/null`: okstra's own git calls run nobody's
//! hooks). A failure keeps git's own words: [`Error::Failed`] carries its
//! stderr (bounded), so "not isolated" always says why.
//!
//! What okstra does with git (snapshots, copies) lives in `workspace`; this
//! module only runs it.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::child;

/// How long one git command may take: a first `git add` of a large working
/// tree hashes every file.
const LIMIT: Duration = Duration::from_mins(10);
/// stdout kept from one command (path lists can be long; more is an error).
const STDOUT_LIMIT: usize = 64 * 1024 * 1024;
/// stderr kept for the error message.
const STDERR_LIMIT: usize = 8 * 1024;
/// Characters of stderr shown in one error line.
const STDERR_SHOWN: usize = 600;
/// Characters of the argument list shown in messages.
const ARGS_SHOWN: usize = 160;

/// Variables that would point git at another repository, index or object
/// store than the one `-C` names; git honours them before `-C`.
const STEERING_ENV: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
];

/// Why a git command did not give okstra what it needed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot run `git {args}` in `{}`", .dir.display())]
    Start {
        dir: PathBuf,
        args: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`git {args}` in `{}` did not finish within {} s", .dir.display(), LIMIT.as_secs())]
    TimedOut { dir: PathBuf, args: String },
    #[error("`git {args}` in `{}` failed ({status}){}", .dir.display(), shown(.stderr))]
    Failed {
        dir: PathBuf,
        args: String,
        /// `exit N` or `signal N`.
        status: String,
        /// git's stderr, at most [`STDERR_LIMIT`] bytes.
        stderr: String,
    },
    #[error("`git {args}` in `{}` printed more than {} MiB", .dir.display(), STDOUT_LIMIT >> 20)]
    TooMuchOutput { dir: PathBuf, args: String },
    #[error("`git {args}` in `{}` printed {what}", .dir.display())]
    Unexpected {
        dir: PathBuf,
        args: String,
        what: &'static str,
    },
}

/// `: <stderr on one line>`, or nothing when git said nothing.
fn shown(stderr: &str) -> String {
    let line = stderr
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    if line.is_empty() {
        return String::new();
    }
    let mut cut: String = line.chars().take(STDERR_SHOWN).collect();
    if cut.len() < line.len() {
        cut.push('…');
    }
    format!(": {cut}")
}

/// git in one folder (`git -C <dir>`), with optional extra environment and
/// stdin bytes.
#[derive(Debug, Clone)]
pub struct Git {
    dir: PathBuf,
    env: Vec<(OsString, OsString)>,
    input: Option<Vec<u8>>,
}

impl Git {
    /// git run in `dir`.
    pub fn at(dir: &Path) -> Git {
        Git {
            dir: dir.to_path_buf(),
            env: Vec::new(),
            input: None,
        }
    }

    /// Also set `name=value` for this command (e.g. `GIT_INDEX_FILE`).
    pub fn env(mut self, name: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Git {
        self.env
            .push((name.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// Feed `bytes` on stdin, then EOF.
    pub fn input(mut self, bytes: Vec<u8>) -> Git {
        self.input = Some(bytes);
        self
    }

    /// A `std::process::Command` for a long-lived git (`cat-file --batch`)
    /// the caller streams through itself: the same `-C`, hooks off, no
    /// prompt and no steering variables as [`Git::run`]; stdin, stdout and
    /// stderr null until the caller says otherwise.
    pub fn streaming(&self) -> std::process::Command {
        let mut command = std::process::Command::new("git");
        command
            .arg("-C")
            .arg(&self.dir)
            .args(["-c", "core.hooksPath=/dev/null"])
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        for name in STEERING_ENV {
            command.env_remove(name);
        }
        for (name, value) in &self.env {
            command.env(name, value);
        }
        command
    }

    /// Run `git args…`; its stdout when it exits 0.
    pub fn run<I, S>(&self, args: I) -> Result<Vec<u8>, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let shown_args = describe_args(&args);
        let mut builder = child::Builder::new("git");
        builder
            .arg("-C")
            .arg(&self.dir)
            .args(["-c", "core.hooksPath=/dev/null"])
            .args(&args)
            .env("GIT_TERMINAL_PROMPT", "0");
        for name in STEERING_ENV {
            builder.env_remove(name);
        }
        for (name, value) in &self.env {
            builder.env(name, value);
        }
        let capture = child::Capture {
            limit: LIMIT,
            keep: STDOUT_LIMIT,
            merge: false,
            input: self.input.clone(),
        };
        let captured =
            child::run_captured(builder, &capture, None).map_err(|source| Error::Start {
                dir: self.dir.clone(),
                args: shown_args.clone(),
                source,
            })?;
        if captured.timed_out {
            return Err(Error::TimedOut {
                dir: self.dir.clone(),
                args: shown_args,
            });
        }
        if !captured.success() {
            let mut stderr = captured.stderr.clone();
            stderr.truncate(STDERR_LIMIT);
            return Err(Error::Failed {
                dir: self.dir.clone(),
                args: shown_args,
                status: captured.describe_status(),
                stderr: String::from_utf8_lossy(&stderr).into_owned(),
            });
        }
        if captured.stdout_truncated {
            return Err(Error::TooMuchOutput {
                dir: self.dir.clone(),
                args: shown_args,
            });
        }
        Ok(captured.stdout)
    }

    /// The lines of `git args…`'s stdout, each trimmed of its line end.
    pub fn lines<I, S>(&self, args: I) -> Result<Vec<String>, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let stdout = self.run(&args)?;
        let text = String::from_utf8(stdout).map_err(|_| Error::Unexpected {
            dir: self.dir.clone(),
            args: describe_args(&args),
            what: "output that is not UTF-8",
        })?;
        Ok(text.lines().map(str::to_owned).collect())
    }

    /// The first line of `git args…`'s stdout, which must not be empty.
    pub fn line<I, S>(&self, args: I) -> Result<String, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        self.lines(&args)?
            .into_iter()
            .next()
            .map(|line| line.trim().to_owned())
            .filter(|line| !line.is_empty())
            .ok_or_else(|| Error::Unexpected {
                dir: self.dir.clone(),
                args: describe_args(&args),
                what: "nothing",
            })
    }

    /// The commit `rev` names, or `None` when it names none
    /// (`rev-parse --verify --quiet`, which exits 1 without a word).
    pub fn commit(&self, rev: &str) -> Result<Option<String>, Error> {
        let spec = format!("{rev}^{{commit}}");
        match self.line(["rev-parse", "--verify", "--quiet", spec.as_str()]) {
            Ok(oid) => Ok(Some(oid)),
            Err(Error::Failed { stderr, status, .. })
                if status == "exit 1" && stderr.trim().is_empty() =>
            {
                Ok(None)
            }
            Err(err) => Err(err),
        }
    }
}

/// The arguments as one line for messages, shortened.
fn describe_args(args: &[OsString]) -> String {
    let joined = args
        .iter()
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let mut cut: String = joined.chars().take(ARGS_SHOWN).collect();
    if cut.len() < joined.len() {
        cut.push('…');
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_keeps_gits_own_words() {
        let dir = tempfile::tempdir().unwrap();
        let err = Git::at(dir.path())
            .run(["rev-parse", "--show-toplevel"])
            .unwrap_err();
        let Error::Failed { stderr, .. } = &err else {
            panic!("git ran and failed: {err:?}");
        };
        assert!(stderr.contains("not a git repository"), "{stderr}");
        let message = err.to_string();
        assert!(
            message.starts_with(&format!(
                "`git rev-parse --show-toplevel` in `{}` failed (exit 128): fatal: not a git repository",
                dir.path().display()
            )),
            "{message}"
        );
        assert!(!message.contains('\n'));
    }

    #[test]
    fn a_missing_revision_is_none_and_a_broken_one_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let git = Git::at(dir.path());
        git.run(["init", "-q"]).unwrap();
        assert_eq!(git.commit("HEAD").unwrap(), None);
        assert!(matches!(
            Git::at(&dir.path().join("missing")).commit("HEAD"),
            Err(Error::Failed { .. })
        ));
    }

    #[test]
    fn stdin_is_fed() {
        let dir = tempfile::tempdir().unwrap();
        let oid = Git::at(dir.path())
            .input(b"hello\n".to_vec())
            .line(["hash-object", "--stdin"])
            .unwrap();
        assert_eq!(oid, "ce013625030ba8dba906f756967f9e9ca394464a");
    }

    #[test]
    fn long_stderr_is_cut_to_one_line() {
        let text = format!("fatal: {}\nhint: more\n", "x".repeat(2000));
        let line = shown(&text);
        assert!(line.starts_with(": fatal: x"));
        assert!(line.ends_with('…'));
        assert!(!line.contains('\n'));
        assert_eq!(shown("  \n"), "");
    }
}
