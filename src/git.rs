//! Running git: the one place okstra starts `git`, and its typed errors.
//!
//! Every git okstra runs — render, snapshot, copies, the Executor's branch,
//! land, cleanup, anchors, change scopes — goes through [`Git`], which
//! makes git obey okstra alone:
//!
//! - nothing steers it elsewhere: `GIT_DIR`, `GIT_WORK_TREE`,
//!   `GIT_INDEX_FILE`, inherited `-c` settings and the like are removed from
//!   its environment ([`STEERING_ENV`]), and no system config is read
//!   (`GIT_CONFIG_NOSYSTEM`);
//! - it runs no program a repository names: hooks off
//!   (`core.hooksPath=/dev/null`), fsmonitor off, every filter driver the
//!   repository's config defines emptied (so `.gitattributes` cannot name
//!   one), no commit signing, no submodule recursion, no transport but
//!   local files, no housekeeping ([`overrides`]);
//! - it writes nothing it was not asked to: optional locks off, so a
//!   `git status` never rewrites an index.
//!
//! The overrides travel as `GIT_CONFIG_COUNT` entries, the command-line
//! scope, which beats every config file and is never misparsed, whatever a
//! filter's name holds.
//!
//! A git directory is found as git finds it ([`Git::at`], the user's own
//! repository), or named outright ([`Git::own`]): okstra's own git
//! directory and index for a worker's copy, outside anything the worker may
//! write, with the copy only as the work tree. A copy's own `.git` — its
//! config, hooks, `core.worktree`, a symlink to the user's `.git` — is then
//! never read.
//!
//! Each call runs through `child::run_captured` (its own process group,
//! stdin `/dev/null` unless bytes are fed, a wall-time limit, bounded
//! output). A failure keeps git's own words: [`Error::Failed`] carries its
//! stderr (bounded), so "not isolated" always says why.
//!
//! What okstra does with git (snapshots, copies) lives in `workspace`; this
//! module only runs it.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
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
/// Bytes of `git config` output read when listing filter drivers.
const FILTERS_LIMIT: usize = 1024 * 1024;

/// Variables that would point git at another repository, index, object
/// store or config than the one okstra names, or make it run a program:
/// git honours them before `-C` and before any config.
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
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_SYSTEM",
    "GIT_ATTR_SOURCE",
    "GIT_EXTERNAL_DIFF",
    "GIT_GRAFT_FILE",
    "GIT_SHALLOW_FILE",
    "GIT_REPLACE_REF_BASE",
    "GIT_QUARANTINE_PATH",
    "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_PREFIX",
];

/// Settings every git okstra runs gets, whatever any config file says.
const OVERRIDES: &[(&str, &str)] = &[
    // No hook of anybody's runs: not the user's, not a worker's.
    ("core.hooksPath", "/dev/null"),
    // `core.fsmonitor` names a program git runs on `status` and `add`.
    ("core.fsmonitor", "false"),
    // A split index would write a shared index beside the user's own.
    ("core.splitIndex", "false"),
    // `commit-tree` honours it: a signing program, maybe a passphrase prompt.
    ("commit.gpgSign", "false"),
    ("submodule.recurse", "false"),
    // No transport but the local files okstra fetches from.
    ("protocol.allow", "never"),
    ("protocol.file.allow", "always"),
    // No housekeeping of anybody's repository on the way.
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
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

/// Where git finds the repository a command works on.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Repository {
    /// As git finds it from the folder it runs in: the user's own
    /// repository (or none, for `init` and `hash-object`).
    Found,
    /// okstra's own git directory, named outright; the work tree, when
    /// there is one, is only ever that.
    Own {
        git_dir: PathBuf,
        work_tree: Option<PathBuf>,
    },
}

/// One git command line being described: where it runs, which repository,
/// extra environment and stdin bytes.
#[derive(Debug, Clone)]
pub struct Git {
    dir: PathBuf,
    repository: Repository,
    env: Vec<(OsString, OsString)>,
    input: Option<Vec<u8>>,
}

impl Git {
    /// git run in `dir` (`git -C <dir>`), on the repository git finds there.
    pub fn at(dir: &Path) -> Git {
        Git {
            dir: dir.to_path_buf(),
            repository: Repository::Found,
            env: Vec::new(),
            input: None,
        }
    }

    /// git on okstra's own git directory `git_dir`, with `work_tree` as its
    /// work tree (`None`: bare). Whatever lies in the work tree — a `.git`
    /// of its own, a `core.worktree`, hooks — is never consulted.
    pub fn own(git_dir: &Path, work_tree: Option<&Path>) -> Git {
        Git {
            dir: work_tree.unwrap_or(git_dir).to_path_buf(),
            repository: Repository::Own {
                git_dir: git_dir.to_path_buf(),
                work_tree: work_tree.map(Path::to_path_buf),
            },
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

    /// The child for `git args…`: the repository named, the environment
    /// scrubbed and the overrides in force (see the module's docs).
    fn builder(&self, args: &[OsString]) -> child::Builder {
        let mut builder = child::Builder::new("git");
        builder.arg("-C").arg(&self.dir);
        if let Repository::Own { git_dir, work_tree } = &self.repository {
            let mut flag = OsString::from("--git-dir=");
            flag.push(git_dir);
            builder.arg(flag);
            if let Some(work_tree) = work_tree {
                let mut flag = OsString::from("--work-tree=");
                flag.push(work_tree);
                builder.arg(flag);
            }
        }
        builder.args(args);
        for name in STEERING_ENV {
            builder.env_remove(name);
        }
        builder
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_OPTIONAL_LOCKS", "0")
            .env("GIT_NO_REPLACE_OBJECTS", "1");
        let filters = self.filter_drivers(args);
        let settings = overrides(&filters);
        builder.env("GIT_CONFIG_COUNT", settings.len().to_string());
        for (index, (key, value)) in settings.iter().enumerate() {
            builder.env(format!("GIT_CONFIG_KEY_{index}"), key);
            builder.env(format!("GIT_CONFIG_VALUE_{index}"), value);
        }
        for (name, value) in &self.env {
            builder.env(name, value);
        }
        builder
    }

    /// A `std::process::Command` for a long-lived git (`cat-file --batch`)
    /// the caller streams through itself: the same repository, environment
    /// and overrides as [`Git::run`], in a process group of its own; stdin,
    /// stdout and stderr null until the caller says otherwise.
    pub fn streaming<I, S>(&self, args: I) -> std::process::Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let mut builder = self.builder(&args);
        builder
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        builder.into_std()
    }

    /// Run `git args…`; its stdout when it exits 0.
    pub fn run<I, S>(&self, args: I) -> Result<Vec<u8>, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let shown_args = describe_args(&args);
        let capture = child::Capture {
            limit: LIMIT,
            keep: STDOUT_LIMIT,
            merge: false,
            input: self.input.clone(),
        };
        let captured =
            child::run_captured(self.builder(&args), &capture, None).map_err(|source| {
                Error::Start {
                    dir: self.dir.clone(),
                    args: shown_args.clone(),
                    source,
                }
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

    /// The names of the filter drivers the config of the repository found
    /// from this command's folder defines (global and repository config; no
    /// system config is read), listed once per folder and process, and
    /// again after okstra itself ran `git init` or `git config` there. A
    /// folder outside git, or a config git cannot read, has none. okstra's
    /// own git directories need no list: their `info/attributes` unsets
    /// every path's `filter` (see `workspace::git_copy`).
    fn filter_drivers(&self, args: &[OsString]) -> Arc<[OsString]> {
        static FOUND: OnceLock<Mutex<HashMap<PathBuf, Arc<[OsString]>>>> = OnceLock::new();
        if matches!(self.repository, Repository::Own { .. }) {
            return Arc::from(Vec::new());
        }
        let found = FOUND.get_or_init(|| Mutex::new(HashMap::new()));
        let mut found = found
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let changes_config = args
            .iter()
            .find(|arg| !arg.to_string_lossy().starts_with('-'))
            .is_some_and(|command| command == "init" || command == "config");
        if changes_config {
            found.remove(&self.dir);
        } else if let Some(names) = found.get(&self.dir) {
            return Arc::clone(names);
        }
        let names: Arc<[OsString]> = self.list_filter_drivers().into();
        if !changes_config {
            found.insert(self.dir.clone(), Arc::clone(&names));
        }
        names
    }

    /// `git config --get-regexp '^filter\.'`, read as driver names. Run
    /// with the same scrubbed environment; reading config runs nothing.
    fn list_filter_drivers(&self) -> Vec<OsString> {
        let mut builder = child::Builder::new("git");
        builder.arg("-C").arg(&self.dir);
        builder.args([
            "config",
            "--null",
            "--name-only",
            "--get-regexp",
            r"^filter\.",
        ]);
        for name in STEERING_ENV {
            builder.env_remove(name);
        }
        builder
            .env_remove("GIT_CONFIG_COUNT")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0");
        let capture = child::Capture {
            limit: LIMIT,
            keep: FILTERS_LIMIT,
            merge: false,
            input: None,
        };
        match child::run_captured(builder, &capture, None) {
            Ok(captured) if captured.success() => driver_names(&captured.stdout),
            _ => Vec::new(),
        }
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

/// Every setting of [`OVERRIDES`], and for each filter driver in
/// `filters` its programs emptied and its `required` off: a driver with
/// no program leaves the content as it is.
fn overrides(filters: &[OsString]) -> Vec<(OsString, OsString)> {
    let mut settings: Vec<(OsString, OsString)> = OVERRIDES
        .iter()
        .map(|(key, value)| (OsString::from(key), OsString::from(value)))
        .collect();
    for name in filters {
        for (key, value) in [
            ("clean", ""),
            ("smudge", ""),
            ("process", ""),
            ("required", "false"),
        ] {
            let mut full = OsString::from("filter.");
            full.push(name);
            full.push(".");
            full.push(key);
            settings.push((full, OsString::from(value)));
        }
    }
    settings
}

/// The driver names in `git config --null --name-only` output: each entry
/// is `filter.<name>.<key>`, and a key never holds a dot.
fn driver_names(output: &[u8]) -> Vec<OsString> {
    use std::os::unix::ffi::OsStrExt;
    let mut names: Vec<OsString> = output
        .split(|b| *b == 0)
        .filter_map(|entry| {
            let rest = entry.strip_prefix(b"filter.")?;
            let dot = rest.iter().rposition(|b| *b == b'.')?;
            (dot > 0).then(|| OsStr::from_bytes(&rest[..dot]).to_owned())
        })
        .collect();
    names.sort();
    names.dedup();
    names
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

    /// A program that appends a line to `log` when run, passing its
    /// input through (as a filter must).
    fn planted(dir: &Path, log: &Path) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let program = dir.join("planted.sh");
        std::fs::write(
            &program,
            format!("#!/bin/sh\necho ran >> '{}'\ncat\n", log.display()),
        )
        .unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        program
    }

    #[test]
    fn a_repositorys_hooks_fsmonitor_and_filters_never_run() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("ran.log");
        let program = planted(dir.path(), &log);
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        let git = Git::at(&repo);
        git.run(["init", "-q"]).unwrap();
        let program = program.to_str().unwrap();
        // A driver whose name holds what `-c` would split on.
        for (key, value) in [
            ("core.fsmonitor", program),
            ("filter.odd=name.clean", program),
            ("filter.odd=name.smudge", program),
            ("filter.odd=name.required", "true"),
            ("filter.plain.process", program),
        ] {
            git.run(["config", key, value]).unwrap();
        }
        for hook in ["post-index-change", "reference-transaction", "pre-commit"] {
            std::fs::create_dir_all(repo.join(".git/hooks")).unwrap();
            std::fs::copy(program, repo.join(".git/hooks").join(hook)).unwrap();
        }
        std::fs::write(
            repo.join(".gitattributes"),
            "a.txt filter=odd=name\nb.txt filter=plain\n",
        )
        .unwrap();
        std::fs::write(repo.join("a.txt"), "a\n").unwrap();
        std::fs::write(repo.join("b.txt"), "b\n").unwrap();
        git.run(["add", "--all"]).unwrap();
        git.run(["status", "--porcelain"]).unwrap();
        let tree = git.line(["write-tree"]).unwrap();
        let commit = git
            .clone()
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .line(["commit-tree", &tree, "-m", "m"])
            .unwrap();
        git.run(["update-ref", "refs/heads/main", &commit]).unwrap();
        git.run([
            "cat-file",
            "--filters",
            "--path=a.txt",
            &format!("{commit}:a.txt"),
        ])
        .unwrap();
        assert!(!log.exists(), "{}", std::fs::read_to_string(&log).unwrap());
    }

    #[test]
    fn an_own_git_dir_never_reads_the_work_trees_git() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::create_dir(&victim).unwrap();
        std::fs::write(victim.join("kept.txt"), "mine\n").unwrap();
        let copy = dir.path().join("copy");
        std::fs::create_dir(&copy).unwrap();
        // The copy's own `.git` aims at the victim.
        Git::at(&copy).run(["init", "-q"]).unwrap();
        Git::at(&copy)
            .run(["config", "core.worktree", victim.to_str().unwrap()])
            .unwrap();
        std::fs::write(copy.join("new.txt"), "new\n").unwrap();
        let own = dir.path().join("own.git");
        Git::at(dir.path())
            .run(["init", "-q", "--bare", own.to_str().unwrap()])
            .unwrap();
        let git = Git::own(&own, Some(&copy));
        git.run(["add", "--all"]).unwrap();
        let listed = git.lines(["ls-files"]).unwrap();
        assert_eq!(listed, ["new.txt"]);
        git.run(["clean", "-ffdxq"]).unwrap();
        assert!(victim.join("kept.txt").exists());
    }

    #[test]
    fn filter_driver_names_are_read_whole() {
        let output =
            b"filter.lfs.clean\0filter.lfs.smudge\0filter.a.b=c.clean\0filter.x\0other.y.z\0";
        assert_eq!(
            driver_names(output),
            [OsString::from("a.b=c"), OsString::from("lfs")]
        );
        let settings = overrides(&[OsString::from("lfs")]);
        assert!(settings.contains(&(OsString::from("filter.lfs.clean"), OsString::new())));
        assert!(settings.contains(&(
            OsString::from("filter.lfs.required"),
            OsString::from("false")
        )));
        assert!(settings.contains(&(
            OsString::from("core.hooksPath"),
            OsString::from("/dev/null")
        )));
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
