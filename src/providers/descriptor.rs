//! What okstra knows of one provider CLI apart from its stream: one
//! [`Descriptor`] per CLI, filled in that CLI's own file. The readers —
//! the command line's environment, the workspace's choice of a copy, the
//! sandbox's write set, the doctor's credential check, the advice after a
//! failure, the usage meter — take their facts from here instead of
//! matching on the provider themselves.

use std::path::{Path, PathBuf};

/// One provider CLI, as okstra drives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// The variable that overrides its worker model default, if any.
    pub model_env: Option<&'static str>,
    /// Where the CLI keeps its own state.
    pub state: State,
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
    /// Whether its usage is read from its own session log, whose id its
    /// stream names, rather than from the stream.
    pub usage_in_session_log: bool,
}

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
