//! What okstra knows of one provider CLI apart from its stream: one
//! [`Descriptor`] per CLI, filled in that CLI's own file. The readers —
//! the command line's environment, the workspace's choice of a copy, the
//! sandbox's write set, the doctor's credential check, the advice after a
//! failure, the usage meter — take their facts from here instead of
//! matching on the provider themselves.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Provider, Tokens};

/// One provider CLI, as okstra drives it.
#[derive(Debug, Clone, Copy)]
pub struct Descriptor {
    /// The executable its CLI installs, looked up on `PATH`.
    pub binary: &'static str,
    /// The program okstra drives under that name, as the doctor shows it.
    pub program: &'static str,
    /// How a worker that may not write is kept from writing the project.
    pub read_only: ReadOnly,
    /// The credential and configuration variables the CLI reads
    /// (research/provider-clis.md, hosts.md): only these, besides the
    /// catalog's neutral ones, reach it, so no CLI is handed another
    /// provider's key. A name ending in `*` is a prefix.
    pub env: &'static [&'static str],
    /// Its default models, by role.
    pub models: Models,
    /// The variable that overrides its worker model default, if any.
    pub model_env: Option<&'static str>,
    /// The long flag (without its dashes) that names its worker model, if
    /// it has one of its own beside `--worker-model`; its help names
    /// `model_env` and the default.
    pub model_flag: Option<&'static str>,
    /// The roles it may take beyond an analyser's, and which it takes when
    /// no flag says.
    pub duties: Duties,
    /// How a lead session this CLI hosts names the model of a worker it
    /// runs natively.
    pub native_model: NativeModel,
    /// Where the CLI keeps its own state.
    pub state: State,
    /// Whether okstra confines the CLI with Landlock (its write set is its
    /// state folder, its scratch and a copy it owns).
    pub landlock: bool,
    /// Where its credentials are seen, by name only.
    pub credentials: Credentials,
    /// How many calls to it one user's okstra runs make at once by default
    /// (`--provider-slots` overrides): enough for a run's analyser and its
    /// reviews beside a second run, few enough that two runs on one
    /// subscription do not trip its rate limit together.
    pub default_slots: u32,
    /// How its CLI is installed: one line, commands in backticks.
    pub install: &'static str,
    /// How its CLI is given credentials: one line, names only.
    pub log_in: &'static str,
    /// Why a log of it holds no usage, when it holds none.
    pub usage_missing: &'static str,
    /// Where its usage is read when its stream has none: its own session
    /// log, whose id its stream names.
    pub session_log: Option<SessionLog>,
    /// The variable whose non-empty value means env-key auth, which changes
    /// how its command line names the model ([`Request::env_auth`]).
    pub env_auth: Option<&'static str>,
    /// Variables set to `1` for every program the doctor starts, so that no
    /// CLI updates itself while it is only asked its version.
    pub no_update_env: &'static [&'static str],
    /// What the doctor adds about a CLI it found, from its configuration.
    pub model_note: Option<ModelNote>,
    /// How the doctor tells this CLI from another program installed under
    /// its name.
    pub identity: Identity,
    /// Its headless command line: a pure function, pinned per CLI by the
    /// wrapper's tests (`provider_exec::provider`).
    pub argv: fn(&Request<'_>) -> Argv,
}

/// A CLI's default models: the worker's, and the critic's and report
/// writer's where they differ from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Models {
    pub worker: &'static str,
    pub critic: Option<&'static str>,
    pub report_writer: Option<&'static str>,
}

/// What a CLI's headless command line is built from.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub model: &'a OsStr,
    /// The prompt's absolute path.
    pub prompt_path: &'a Path,
    /// The folder the CLI works in; absolute.
    pub execution_root: &'a Path,
    /// The role may write (only the Executor); any other runs read-only.
    pub may_write: bool,
    /// `None` when the idle watchdog is disabled.
    pub idle_timeout_secs: Option<u64>,
    /// The CLI's env-key auth is set ([`Descriptor::env_auth`]): some CLIs
    /// then name the model through a variable instead of a flag.
    pub env_auth: bool,
    /// Which program answers to the binary name, when okstra knows
    /// (`Identity`: the doctor's cache or the install path).
    pub program: Option<Program>,
}

/// A CLI's headless command line, before the environment okstra gives
/// every CLI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Argv {
    pub args: Vec<OsString>,
    /// The prompt's bytes go to its stdin (else stdin is `/dev/null` and
    /// argv names the prompt's path).
    pub prompt_on_stdin: bool,
    /// Variables set for it.
    pub env_set: Vec<(&'static str, OsString)>,
}

/// The short instruction argv-only CLIs get instead of the prompt itself:
/// the prompt's own bytes never go into argv (Linux caps one argument at
/// 128 KiB).
pub fn pointer_prompt(prompt_path: &Path) -> OsString {
    let mut text = OsString::from("Read the task in ");
    text.push(prompt_path.as_os_str());
    text.push(" and follow it.");
    text
}

/// `items` as arguments.
pub fn os(items: &[&str]) -> Vec<OsString> {
    items.iter().map(OsString::from).collect()
}

/// How a CLI is told from a look-alike, from what `--version` (and, when
/// `reads_help`, `--help` after a `--version` that succeeded) printed.
#[derive(Debug, Clone, Copy)]
pub struct Identity {
    pub reads_help: bool,
    /// The other program the outputs show, if they show one; `help` is
    /// `None` when it was not read.
    pub look_alike: fn(version: &str, help: Option<&str>) -> Option<LookAlike>,
    /// The other program the binary's resolved path shows without starting
    /// it (an npm package's folder), if it shows one.
    pub installed_as: fn(real_path: &Path) -> Option<Program>,
    /// A look-alike the wrapper refuses to start, and what to install
    /// instead.
    pub refused: Option<Refused>,
    /// Words its `--version` output holds when the CLI crashed at start-up,
    /// and what that says.
    pub crash: Option<Crash>,
}

/// A start-up crash the doctor recognises in a CLI's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crash {
    pub needle: &'static str,
    pub detail: &'static str,
}

/// A look-alike okstra cannot drive at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    pub program: Program,
    /// What it is, and why it cannot run a worker.
    pub found: &'static str,
    /// What to install in its place.
    pub expected: &'static str,
    /// The advice: how to remove it and install the CLI (one line,
    /// commands in backticks).
    pub fix: &'static str,
}

impl Identity {
    /// Which program answers at `program` (a resolved binary path) by what
    /// okstra can tell without starting it: its install path first, else
    /// what the doctor found (`cached`).
    pub fn of(&self, program: &Path, cached: Option<Program>) -> Option<Program> {
        std::fs::canonicalize(program)
            .ok()
            .and_then(|real| (self.installed_as)(&real))
            .or(cached)
    }

    /// The refusal for `program`, when it is the look-alike this CLI's
    /// wrapper will not start.
    pub fn refuses(&self, program: Option<Program>) -> Option<Refused> {
        self.refused
            .filter(|refused| program == Some(refused.program))
    }
}

/// Another program than the CLI okstra drives, and why it is taken for one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LookAlike {
    pub program: Program,
    pub detail: &'static str,
}

/// Which program answers to the provider's binary name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Program {
    /// The CLI okstra drives (Claude Code, Codex CLI, agy, Grok Build, Kimi Code).
    Expected,
    /// The community `@vibe-kit/grok-cli`: driven with the flags it has.
    VibeKitGrok,
    /// The archived `PyPI` `kimi-cli` stub: refused (it runs nothing headless).
    LegacyKimiCli,
    /// `--version` failed or timed out, or `--help` matched nothing we know.
    Unrecognised,
}

impl Program {
    /// A short name for tables and warnings.
    pub fn label(self, provider: Provider) -> &'static str {
        match self {
            Program::Expected => provider.descriptor().program,
            Program::VibeKitGrok => "vibe-kit-grok",
            Program::LegacyKimiCli => "legacy-kimi-cli",
            Program::Unrecognised => "unrecognised",
        }
    }

    /// Whether okstra can drive this program at all.
    pub fn is_usable(self) -> bool {
        matches!(self, Program::Expected | Program::VibeKitGrok)
    }
}

/// The identity of a CLI no other program is known to take the name of.
pub const UNIQUE: Identity = Identity {
    reads_help: false,
    look_alike: |_, _| None,
    installed_as: |_| None,
    refused: None,
    crash: None,
};

/// A CLI's way of not writing the project.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadOnly {
    /// Its own read-only mode, as okstra asks for it.
    Mode(&'static str),
    /// None okstra can rely on (why): each of its workers works in a copy
    /// of the project.
    Missing(&'static str),
}

/// The folder a CLI keeps its state in: `home` under `$HOME`, unless the
/// variable `relocated_by` names another; and a file it keeps beside that
/// folder in `$HOME` when it is not relocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct State {
    pub home: &'static str,
    pub relocated_by: Option<&'static str>,
    pub file_beside: Option<&'static str>,
}

/// Where a CLI's credentials are: variables, and a file in its state folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Credentials {
    pub env: &'static [&'static str],
    pub file: &'static str,
}

impl State {
    /// The state folder in the environment `env` (a variable set empty
    /// counts as unset), `home` the user's home folder.
    pub fn folder(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
        home: Option<&Path>,
    ) -> Option<PathBuf> {
        self.relocated_by
            .and_then(env)
            .filter(|value| !value.is_empty())
            .map(PathBuf::from)
            .or_else(|| home.map(|home| home.join(self.home)))
    }
}

impl ReadOnly {
    /// Whether the CLI has a read-only mode okstra relies on.
    pub fn exists(self) -> bool {
        matches!(self, ReadOnly::Mode(_))
    }
}

/// Whether a CLI may take a role: not at all, when asked, or also when no
/// flag names one (the default; one CLI of the catalog is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Duty {
    Never,
    Allowed,
    ByDefault,
}

/// The roles a CLI takes beyond an analyser's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Duties {
    /// It is one of the analysers of the default roster (`--workers`).
    pub default_analyser: bool,
    /// It may write the report (`--report-writer-provider`).
    pub report_writer: Duty,
    /// It may be an implementation run's Executor (`--executor`).
    pub executor: Duty,
}

/// How a native session of a lead this CLI hosts takes a worker's model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NativeModel {
    /// As okstra names it.
    AsGiven,
    /// Only as one of these family tokens, found among the parts of the
    /// model's name (`claude-opus-4-8` → `opus`).
    FamilyToken(&'static [&'static str]),
}

impl NativeModel {
    /// The model a native session is given for `model`; `None` when it has
    /// no family token.
    pub fn of(self, model: &str) -> Option<&str> {
        match self {
            NativeModel::AsGiven => Some(model),
            NativeModel::FamilyToken(tokens) => {
                let lower = model.to_ascii_lowercase();
                tokens.iter().copied().find(|token| {
                    lower == *token || lower.split(['-', '[', '.']).any(|part| part == *token)
                })
            }
        }
    }
}

/// A CLI's session log: where its usage is when its stream has none.
#[derive(Debug, Clone, Copy)]
pub struct SessionLog {
    /// The log files of `session` in the CLI's state folder `state`, in the
    /// order they are read (none when it has no log there). `session` is a
    /// plain name (the caller checks).
    pub files: fn(state: &Path, session: &str) -> Vec<PathBuf>,
    /// Bytes every usage line holds (lines without them are skipped unread).
    pub needle: &'static str,
    /// One line's usage: the model it names, if any, and its tokens.
    pub usage: fn(line: &[u8]) -> Option<LoggedUsage>,
}

/// One usage line of a session log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedUsage {
    /// The model it names, if any.
    pub model: Option<String>,
    pub tokens: Tokens,
}

/// A lookup of environment variables by name.
pub type Lookup<'a> = dyn Fn(&str) -> Option<String> + 'a;

/// The doctor's note on a CLI's configuration: `note` is given the
/// environment and the home folder and returns the note, if any; `fix` is
/// what to do about it.
#[derive(Debug, Clone, Copy)]
pub struct ModelNote {
    pub note: fn(env: &Lookup<'_>, home: Option<&Path>) -> Option<String>,
    pub fix: &'static str,
}
