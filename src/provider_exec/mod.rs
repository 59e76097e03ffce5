//! `okstra provider-exec`: run one provider CLI headless under okstra's supervisor.
//!
//! ```text
//! okstra provider-exec <provider> <project-root> <model> <prompt-path> [worktree-path] [role] [idle-timeout-seconds]
//! okstra-<provider>-exec <project-root> <model> <prompt-path> [worktree-path] [role] [idle-timeout-seconds]
//! ```
//!
//! This module owns the reference wrapper's contract: argument order and
//! defaults, and the preflight exit codes (64 usage or unknown provider, 65
//! project root, 66 model, 67 prompt, 68 worktree, 69 idle timeout, 127 CLI
//! not on `PATH`), each checked before anything is started or written.
//! `provider` builds each CLI's command line, `supervise` runs it, `status`
//! owns the sidecar and `watchdog` the idle deadline.
//!
//! The wrapper is built twice: into `okstra` and alone, as
//! `okstra-provider-exec` (`src/bin/okstra-provider-exec.rs`, which includes
//! this folder and the few modules it reaches by path, so that a wrapper's
//! memory does not grow with okstra). What okstra starts is [`Launcher`]'s
//! choice. Nothing the wrapper reaches may import the launcher's modules
//! (command line, templates, schemas, HTTP): the small binary would not
//! build.
//!
//! Decisions beyond the reference (documented for hosts):
//! - An empty optional argument means its default, the idle timeout included
//!   (the reference rejected an empty timeout; no working host relied on that).
//! - The idle timeout is ASCII digits only: `-1`, `+5`, ` 5`, `1.5`, `5s` and
//!   values past `u64` are refused with 69.
//! - The prompt's bytes are never decoded: stdin providers receive them
//!   exactly (CRLF, invalid UTF-8 and NUL included), argv-only providers get
//!   a pointer to the file, so no prompt is refused for its content.
//! - The CLI gets an allowlisted environment, not ours (see `provider`):
//!   the neutral variables, its own provider's, and the names listed in
//!   `OKSTRA_PASS_ENV` (`--pass-env`); a bad entry there is refused with 64.

mod contain;
mod copy;
mod guardian;
mod provider;
pub mod sidecar;
pub mod status;
mod supervise;
mod watchdog;

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::catalog::Role;
use crate::catalog::{self, Provider};
use crate::cli_facts;
use crate::diag;
use crate::exit;

pub use provider::{CommandPlan, Invocation, PASS_ENV, check_pass_env, plan};

/// Prefix of every line we print, as in the reference.
const PROGRAM: diag::Program = diag::Program::new("okstra-provider-exec");

/// Default idle timeout for `executor` and `verifier`, seconds.
const LONG_IDLE_SECS: u64 = 1500;
/// Default idle timeout for every other role, seconds.
const DEFAULT_IDLE_SECS: u64 = 600;
/// Role when none (or an empty one) is given.
const DEFAULT_ROLE: &str = "worker";

/// The wrapper's own binary, installed beside `okstra`
/// (`src/bin/okstra-provider-exec.rs`).
pub const BINARY: &str = "okstra-provider-exec";

/// How okstra starts a wrapper: the wrapper's own binary when it sits
/// beside the running okstra (its peak memory does not grow with okstra),
/// else `okstra provider-exec` (a lone copied `okstra` still works). Both
/// take the same arguments after [`Launcher::lead`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launcher {
    pub program: PathBuf,
    /// The arguments before the provider.
    pub lead: &'static [&'static str],
}

impl Launcher {
    /// The launcher beside the running okstra.
    pub fn current() -> io::Result<Launcher> {
        std::env::current_exe().map(|okstra| Launcher::beside(&okstra))
    }

    /// The launcher for the okstra binary at `okstra`: [`BINARY`] in the
    /// same folder when it is an executable file there.
    pub fn beside(okstra: &Path) -> Launcher {
        use std::os::unix::fs::PermissionsExt;
        let small = okstra.with_file_name(BINARY);
        let executable = std::fs::metadata(&small)
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0);
        if executable {
            Launcher {
                program: small,
                lead: &[],
            }
        } else {
            Launcher {
                program: okstra.to_owned(),
                lead: &["provider-exec"],
            }
        }
    }
}

/// The provider fixed by an `okstra-<provider>-exec` program name.
pub fn alias(arg0: &Path) -> Option<Provider> {
    let name = arg0.file_name()?.to_str()?;
    name.strip_prefix("okstra-")?
        .strip_suffix("-exec")?
        .parse()
        .ok()
}

/// The entries both binaries answer before anything else, from the whole
/// argv: an `okstra-<provider>-exec` program name runs the wrapper for that
/// provider, `sandbox-exec` confines itself and execs its CLI. When argv
/// is neither, `raw_args` is handed back untouched.
pub fn early_entry(raw_args: Vec<OsString>) -> Result<ExitCode, Vec<OsString>> {
    if let Some(provider) = raw_args.first().and_then(|arg0| alias(Path::new(arg0))) {
        return Ok(main(Some(provider), raw_args.into_iter().skip(1).collect()));
    }
    if raw_args
        .get(1)
        .is_some_and(|arg| arg == crate::sandbox::exec::SUBCOMMAND)
    {
        return Ok(crate::sandbox::exec::main(
            raw_args.into_iter().skip(2).collect(),
        ));
    }
    Err(raw_args)
}

/// Run the wrapper; `fixed` is the provider named by the program name, and
/// `args` are the arguments after `provider-exec` (or after argv\[0]).
#[expect(
    clippy::needless_pass_by_value,
    reason = "the entry point's signature is shared with `main.rs`"
)]
pub fn main(fixed: Option<Provider>, args: Vec<OsString>) -> ExitCode {
    if is_help_request(fixed, &args) {
        // Help is not a usage error: print it on stdout and succeed.
        let mut stdout = io::stdout().lock();
        return match io::Write::write_all(&mut stdout, help(fixed).as_bytes()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::from(exit::EXEC_USAGE),
        };
    }
    match preflight(fixed, &args) {
        Ok(ready) => ExitCode::from(supervise::run(ready)),
        Err(err) => {
            PROGRAM.error(&err);
            ExitCode::from(err.code())
        }
    }
}

/// A preflight refusal: nothing was started and nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum Preflight {
    #[error("expected {expected} arguments, got {got}; usage: {usage}")]
    Usage {
        expected: &'static str,
        got: usize,
        usage: String,
    },
    #[error("unknown provider `{given}`, expected one of `{known}`")]
    UnknownProvider { given: String, known: String },
    #[error("project root `{}` is missing or not a directory", .0.display())]
    ProjectRoot(PathBuf),
    #[error("model is empty")]
    Model,
    #[error("prompt `{}` {problem}", .path.display())]
    Prompt { path: PathBuf, problem: String },
    #[error("idle timeout `{}` is not a non-negative whole number of seconds", .0.to_string_lossy())]
    Timeout(OsString),
    #[error("worktree `{}` is not a directory", .0.display())]
    Worktree(PathBuf),
    #[error("`{0}` is not on `PATH`")]
    NotFound(&'static str),
    #[error("invalid `{PASS_ENV}`: {0}")]
    PassEnv(String),
    #[error("invalid `{name}`: {0}", name = crate::sandbox::WRITABLE_ENV)]
    Writable(String),
    #[error(
        "invalid `{name}`: `{0}`, expected `{value}`",
        name = crate::sandbox::CONFINE_ENV,
        value = crate::sandbox::CONFINE_LANDLOCK
    )]
    Confine(String),
    #[error("the `{binary}` at `{}` is {found}; okstra drives {expected} (see `okstra doctor`)", .path.display())]
    WrongCli {
        binary: &'static str,
        path: PathBuf,
        found: &'static str,
        expected: &'static str,
    },
}

impl Preflight {
    pub fn code(&self) -> u8 {
        match self {
            Preflight::Usage { .. }
            | Preflight::UnknownProvider { .. }
            | Preflight::WrongCli { .. }
            | Preflight::PassEnv(_)
            | Preflight::Writable(_)
            | Preflight::Confine(_) => exit::EXEC_USAGE,
            Preflight::ProjectRoot(_) => exit::EXEC_PROJECT_ROOT,
            Preflight::Model => exit::EXEC_MODEL,
            Preflight::Prompt { .. } => exit::EXEC_PROMPT,
            Preflight::Worktree(_) => exit::EXEC_WORKTREE,
            Preflight::Timeout(_) => exit::EXEC_TIMEOUT_ARG,
            Preflight::NotFound(_) => exit::NOT_FOUND,
        }
    }
}

/// Everything the supervisor needs once preflight has passed.
#[derive(Debug)]
pub struct Ready {
    pub invocation: Invocation,
    pub plan: CommandPlan,
    /// The resolved CLI executable.
    pub program: PathBuf,
    /// The prompt, opened (and so known readable) during preflight.
    pub prompt: File,
    /// The prompt path as given (the sidecar and log sit beside it).
    pub prompt_as_given: PathBuf,
    /// Which attempt of a dispatch this is (`okstra dispatch` sets it
    /// through [`status::ATTEMPT_ENV`]); it picks the log and sidecar names.
    pub attempt: u32,
    /// The CLI's version from the doctor's cache, or `unknown` (never asked
    /// here: a node CLI takes 0.3–3 s to answer `--version`).
    pub cli_version: String,
    /// The project root as given.
    pub project_root: PathBuf,
    /// The role may write (the Executor): its worktree is writable under
    /// Landlock.
    pub may_write: bool,
    /// The dispatcher asked for Landlock (`sandbox::CONFINE_ENV`).
    pub confine: bool,
    /// Folders every confined CLI may also write (`sandbox::WRITABLE_ENV`).
    pub writable: Vec<PathBuf>,
}

fn usage(fixed: Option<Provider>) -> String {
    let head = fixed.map_or_else(
        || "okstra provider-exec <provider>".to_owned(),
        Provider::wrapper,
    );
    format!(
        "{head} <project-root> <model> <prompt-path> [worktree-path] [role] [idle-timeout-seconds]"
    )
}

/// `-h` or `--help` alone (after the provider, for `okstra provider-exec`).
fn is_help_request(fixed: Option<Provider>, args: &[OsString]) -> bool {
    let is_help = |arg: &OsString| arg == "-h" || arg == "--help";
    match (fixed, args) {
        (_, [only]) => is_help(only),
        (None, [_, second]) => is_help(second),
        _ => false,
    }
}

/// The wrapper's help text: its positional contract and exit codes.
fn help(fixed: Option<Provider>) -> String {
    format!(
        "Run one provider CLI headless under okstra's supervisor.

Usage: {usage}

Arguments:
  <provider>               {providers} (fixed by the name `okstra-<provider>-exec`)
  <project-root>           the folder the CLI runs in
  <model>                  the exact model value passed to the CLI
  <prompt-path>            the prompt file; the log and status sidecar are written beside it
  [worktree-path]          run in this folder instead of the project root
  [role]                   the worker's role (default `{DEFAULT_ROLE}`; `executor` and `verifier` get {LONG_IDLE_SECS} s)
  [idle-timeout-seconds]   stop the CLI after this long without output (default {DEFAULT_IDLE_SECS})

Exit codes: the CLI's own code; {timed_out} idle timeout; 128+N stopped by signal N;
{usage_code} usage or unknown provider; {root} project root; {model} model; {prompt} prompt;
{worktree} worktree; {timeout} idle timeout argument; {not_found} the CLI is not on PATH.
",
        usage = usage(fixed),
        providers = catalog::one_of(Provider::ALL),
        timed_out = exit::TIMED_OUT,
        usage_code = exit::EXEC_USAGE,
        root = exit::EXEC_PROJECT_ROOT,
        model = exit::EXEC_MODEL,
        prompt = exit::EXEC_PROMPT,
        worktree = exit::EXEC_WORKTREE,
        timeout = exit::EXEC_TIMEOUT_ARG,
        not_found = exit::NOT_FOUND,
    )
}

/// Validate the arguments in the reference's order and resolve the CLI.
pub fn preflight(fixed: Option<Provider>, args: &[OsString]) -> Result<Ready, Preflight> {
    let (provider, rest) = if let Some(provider) = fixed {
        (provider, args)
    } else {
        let Some((first, rest)) = args.split_first().filter(|_| (4..=7).contains(&args.len()))
        else {
            return Err(Preflight::Usage {
                expected: "4 to 7",
                got: args.len(),
                usage: usage(None),
            });
        };
        let provider = first
            .to_str()
            .and_then(|name| name.parse().ok())
            .ok_or_else(|| Preflight::UnknownProvider {
                given: first.to_string_lossy().into_owned(),
                known: catalog::one_of(Provider::ALL),
            })?;
        (provider, rest)
    };
    if !(3..=6).contains(&rest.len()) {
        return Err(Preflight::Usage {
            expected: if fixed.is_some() { "3 to 6" } else { "4 to 7" },
            got: args.len(),
            usage: usage(fixed),
        });
    }
    let given = |index: usize| rest.get(index).filter(|arg| !arg.is_empty());
    let project_root = PathBuf::from(&rest[0]);
    let project_root_as_given = project_root.clone();
    if rest[0].is_empty() || !project_root.is_dir() {
        return Err(Preflight::ProjectRoot(project_root));
    }
    let model = rest[1].clone();
    if model.is_empty() {
        return Err(Preflight::Model);
    }
    let prompt_as_given = PathBuf::from(&rest[2]);
    let prompt = open_prompt(&prompt_as_given)?;
    let role = given(4).map_or_else(
        || DEFAULT_ROLE.to_owned(),
        |role| role.to_string_lossy().into_owned(),
    );
    let idle_timeout_secs = match given(5) {
        Some(raw) => parse_idle_timeout(raw).ok_or_else(|| Preflight::Timeout(raw.clone()))?,
        None if role.parse::<Role>().is_ok_and(Role::runs_long) => LONG_IDLE_SECS,
        None => DEFAULT_IDLE_SECS,
    };
    let execution_root = match given(3) {
        Some(raw) => {
            let worktree = PathBuf::from(raw);
            if !worktree.is_dir() {
                return Err(Preflight::Worktree(worktree));
            }
            worktree
        }
        None => project_root,
    };
    let pass_env = std::env::var_os(PASS_ENV)
        .map(|raw| {
            raw.to_str()
                .ok_or_else(|| "it is not UTF-8".to_owned())
                .and_then(provider::parse_pass_env)
        })
        .transpose()
        .map_err(Preflight::PassEnv)?
        .unwrap_or_default();
    let confine = match std::env::var_os(crate::sandbox::CONFINE_ENV) {
        None => false,
        Some(value) if value == crate::sandbox::CONFINE_LANDLOCK => true,
        Some(value) if value.is_empty() => false,
        Some(value) => return Err(Preflight::Confine(value.to_string_lossy().into_owned())),
    };
    let writable = std::env::var_os(crate::sandbox::WRITABLE_ENV)
        .map(|raw| crate::sandbox::rules::parse_writable(&raw))
        .transpose()
        .map_err(Preflight::Writable)?
        .unwrap_or_default();
    let program =
        which::which(provider.binary()).map_err(|_| Preflight::NotFound(provider.binary()))?;
    let cached = cli_facts::lookup(provider, &program);
    let cached_program = cached.as_ref().map(|entry| entry.program);
    let identity = provider.descriptor().identity;
    let identified = identity.of(&program, cached_program);
    if let Some(refused) = identity.refuses(identified) {
        return Err(Preflight::WrongCli {
            binary: provider.binary(),
            path: program,
            found: refused.found,
            expected: refused.expected,
        });
    }
    let may_write = role.parse::<Role>().is_ok_and(Role::may_write);
    let invocation = Invocation {
        provider,
        model,
        prompt_path: absolute(&prompt_as_given),
        execution_root: absolute(&execution_root),
        role,
        idle_timeout_secs: (idle_timeout_secs > 0).then_some(idle_timeout_secs),
        env_auth: provider
            .descriptor()
            .env_auth
            .and_then(std::env::var_os)
            .is_some_and(|key| !key.is_empty()),
        program: identified,
        pass_env,
    };
    let plan = plan(&invocation);
    // Anything but a whole number ≥ 2 means the first attempt: a stray
    // value must never move a direct call's files away from the reference names.
    let attempt = std::env::var(status::ATTEMPT_ENV)
        .ok()
        .and_then(|value| value.parse::<u32>().ok())
        .filter(|attempt| *attempt >= 2)
        .unwrap_or(1);
    Ok(Ready {
        invocation,
        plan,
        program,
        prompt,
        prompt_as_given,
        attempt,
        cli_version: cached
            .and_then(|entry| entry.version)
            .unwrap_or_else(|| cli_facts::UNKNOWN_VERSION.to_owned()),
        project_root: absolute(&project_root_as_given),
        may_write,
        confine,
        writable,
    })
}

/// A whole number of seconds: ASCII digits only, fitting in `u64`.
fn parse_idle_timeout(raw: &OsStr) -> Option<u64> {
    let text = raw.to_str()?;
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Open the prompt for reading; a FIFO or folder is refused before opening
/// (opening a FIFO would block until someone writes to it).
fn open_prompt(path: &Path) -> Result<File, Preflight> {
    let refuse = |problem: String| Preflight::Prompt {
        path: path.to_owned(),
        problem,
    };
    if path.as_os_str().is_empty() {
        return Err(refuse("is empty".into()));
    }
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => {}
        Ok(_) => return Err(refuse("is not a regular file".into())),
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            return Err(refuse("does not exist".into()));
        }
        Err(err) => return Err(refuse(format!("cannot be inspected: {err}"))),
    }
    File::open(path).map_err(|err| refuse(format!("cannot be read: {err}")))
}

/// Absolute without resolving symlinks; falls back to the path as given.
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wrapper_binary_beside_okstra_is_started_when_it_can_be() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let okstra = dir.path().join("okstra");
        std::fs::write(&okstra, "").unwrap();
        let alone = Launcher {
            program: okstra.clone(),
            lead: &["provider-exec"],
        };
        assert_eq!(Launcher::beside(&okstra), alone);
        let small = dir.path().join(BINARY);
        std::fs::write(&small, "").unwrap();
        // Not executable: okstra itself.
        assert_eq!(Launcher::beside(&okstra), alone);
        std::fs::set_permissions(&small, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(
            Launcher::beside(&okstra),
            Launcher {
                program: small.clone(),
                lead: &[],
            }
        );
        // A folder of that name is not a binary.
        std::fs::remove_file(&small).unwrap();
        std::fs::create_dir(&small).unwrap();
        assert_eq!(Launcher::beside(&okstra), alone);
    }

    #[test]
    fn idle_timeouts_are_plain_digits() {
        for good in ["0", "5", "007", "18446744073709551615"] {
            assert!(parse_idle_timeout(OsStr::new(good)).is_some(), "{good}");
        }
        for bad in [
            "",
            "-1",
            "+5",
            " 5",
            "5 ",
            "1.5",
            "5s",
            "1e3",
            "18446744073709551616",
            "٣",
        ] {
            assert!(parse_idle_timeout(OsStr::new(bad)).is_none(), "{bad}");
        }
    }

    #[test]
    fn alias_reads_the_program_name() {
        assert_eq!(
            alias(Path::new("/x/okstra-grok-exec")),
            Some(Provider::Grok)
        );
        assert_eq!(
            alias(Path::new("okstra-antigravity-exec")),
            Some(Provider::Antigravity)
        );
        assert_eq!(alias(Path::new("okstra-gemini-exec")), None);
        assert_eq!(alias(Path::new("okstra")), None);
    }

    #[test]
    fn usage_errors_name_the_contract() {
        let err = preflight(None, &[]).unwrap_err();
        assert_eq!(err.code(), exit::EXEC_USAGE);
        assert!(err.to_string().contains("<prompt-path> [worktree-path]"));
        let err = preflight(Some(Provider::Kimi), &vec![OsString::from("a"); 7]).unwrap_err();
        assert!(err.to_string().contains("okstra-kimi-exec <project-root>"));
    }

    #[test]
    fn unknown_provider_is_a_usage_error() {
        let args: Vec<OsString> = ["gemini", "/", "m", "/p"].map(OsString::from).to_vec();
        let err = preflight(None, &args).unwrap_err();
        assert_eq!(err.code(), 64);
        assert_eq!(
            err.to_string(),
            "unknown provider `gemini`, expected one of `claude|codex|antigravity|grok|kimi`"
        );
    }
}
