//! The catalog: roles, task types, dispatch kinds, and what okstra gives
//! every provider CLI. The lead runtimes (the hosts) are in
//! `crate::lead_runtime`, re-exported here.
//!
//! This is data, kept in one place. The providers themselves — which exist,
//! what binary antigravity uses, what model a grok critic gets by default —
//! are listed and described in `crate::providers` (one file per CLI);
//! [`Provider`] is re-exported here with the catalog's own questions about
//! it. Resolution (flags > env > catalog) lives in `settings`; this module
//! only knows the catalog's own defaults.

use std::fmt;

use serde::Serialize;

pub use crate::vocab::one_of;

pub use crate::providers::Provider;

pub use crate::lead_runtime::{Capabilities, HOST_SESSION_MARKERS, LeadRuntime};

closed_set! {
    /// A phase profile: what kind of question the run answers.
    TaskType {
        RequirementsDiscovery => "requirements-discovery",
        ErrorAnalysis => "error-analysis",
        ImplementationPlanning => "implementation-planning",
        ProjectAnalysis => "project-analysis",
        FeatureAnalysis => "feature-analysis",
        ChangeImpactAnalysis => "change-impact-analysis",
        Implementation => "implementation",
    }
}

closed_set! {
    /// A variant of a task type's profile, made for one kind of question
    /// (`--focus`, `okstra ask`'s choice): see `crate::profile`.
    Focus {
        /// The defect hunt of `project-analysis`: every claim a defect.
        Defects => "defects",
    }
}

closed_set! {
    /// What a worker does in the run.
    Role {
        Analyser => "analyser",
        ReportWriter => "report-writer",
        Executor => "executor",
        Verifier => "verifier",
        Critic => "critic",
    }
}

closed_set! {
    /// How an assignment is executed on the lead's host.
    Runner {
        NativeSession => "native-session",
        CliWrapper => "cli-wrapper",
    }
}

closed_set! {
    /// The kind of work the task is, recorded for routing and reporting.
    WorkCategory {
        Feature => "feature",
        Bugfix => "bugfix",
        Refactor => "refactor",
        Performance => "performance",
        Security => "security",
        Reliability => "reliability",
        Docs => "docs",
        Tests => "tests",
        Build => "build",
        Chore => "chore",
    }
}

/// The kind of one dispatch (`--kind`, the team state's `dispatchKind`):
/// a worker's own work, the critic's, a retry, a convergence round's
/// reverification, or an implementation run's verifiers checking the
/// Executor's fix pass against the defects it claims to fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DispatchKind {
    Initial,
    Critic,
    Retry,
    Reverify(u32),
    FixCheck,
}

impl std::str::FromStr for DispatchKind {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        DispatchKind::parse(text)
    }
}

impl fmt::Display for DispatchKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.as_string())
    }
}

/// A dispatch kind travels as its word (`reverify-r2`) in records and plans.
impl Serialize for DispatchKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.as_string())
    }
}

impl<'de> serde::Deserialize<'de> for DispatchKind {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        DispatchKind::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl DispatchKind {
    pub fn parse(text: &str) -> Result<DispatchKind, String> {
        match text {
            "initial" => Ok(DispatchKind::Initial),
            "critic" => Ok(DispatchKind::Critic),
            "retry" => Ok(DispatchKind::Retry),
            "fix-check" => Ok(DispatchKind::FixCheck),
            _ => text
                .strip_prefix("reverify-r")
                .and_then(|n| n.parse::<u32>().ok())
                .filter(|n| *n >= 1 && !text.ends_with("r0"))
                .map(DispatchKind::Reverify)
                .ok_or_else(|| {
                    "expected initial, critic, retry, reverify-r<N> or fix-check".to_owned()
                }),
        }
    }

    pub fn as_string(self) -> String {
        match self {
            DispatchKind::Initial => "initial".into(),
            DispatchKind::Critic => "critic".into(),
            DispatchKind::Retry => "retry".into(),
            DispatchKind::Reverify(round) => format!("reverify-r{round}"),
            DispatchKind::FixCheck => "fix-check".into(),
        }
    }

    /// The dispatch name of this kind of dispatch for the worker whose own
    /// dispatch is `base`: a reverify dispatch gets its own name (and so its
    /// own prompt and files), and so does a fix check; every other kind
    /// keeps the worker's.
    pub fn dispatch_name(self, base: &str) -> String {
        match self {
            DispatchKind::Reverify(round) => format!("{base}-reverify-r{round}"),
            DispatchKind::FixCheck => format!("{base}-fix-check"),
            DispatchKind::Initial | DispatchKind::Critic | DispatchKind::Retry => base.to_owned(),
        }
    }

    /// Whether `dispatch_name` is a fix check's (a first attempt or its
    /// retry).
    pub fn is_fix_check(dispatch_name: &str) -> bool {
        dispatch_name.ends_with("-fix-check")
    }

    /// The start every reverify dispatch name of the worker whose own
    /// dispatch is `base` shares, whatever its round.
    pub fn reverify_prefix(base: &str) -> String {
        format!("{base}-reverify-r")
    }

    /// The kind a retry of the dispatch `dispatch_name` counts as: the
    /// reverify round or fix check it retries, else `initial`.
    pub fn retried(dispatch_name: &str) -> String {
        if DispatchKind::is_fix_check(dispatch_name) {
            return DispatchKind::FixCheck.as_string();
        }
        dispatch_name.rsplit_once("-reverify-").map_or_else(
            || DispatchKind::Initial.as_string(),
            |(_, round)| format!("reverify-{round}"),
        )
    }
}

/// What every provider CLI is given from okstra's environment whatever its
/// provider: what a program needs to run at all (`PATH`, `HOME`, the user,
/// shell, terminal, locale, time zone and temp folder), the XDG folders,
/// the proxy variables in both spellings, the CA bundles a TLS client
/// reads, and a codex host's sandbox description. A name ending in `*` is
/// a prefix. Nothing here is a credential.
/// Each provider adds its own ([`Provider::env_names`]); the user adds more
/// with `--pass-env` (docs/engine.md, "What a CLI sees").
pub const NEUTRAL_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TZ",
    "TMPDIR",
    "XDG_*",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    // Inside a codex host's sandbox: a restriction that really applies to
    // every child (see `HOST_SESSION_MARKERS`).
    "CODEX_SANDBOX*",
];

/// The worker id that names the report writer in `--workers`.
pub const REPORT_WRITER: &str = "report-writer";

/// The default roster when `--workers` is not given: the catalog's default
/// analysers and the report writer.
pub fn default_workers() -> String {
    Provider::default_analysers()
        .iter()
        .map(|provider| provider.as_str())
        .chain([REPORT_WRITER])
        .collect::<Vec<_>>()
        .join(",")
}

/// Analysis rounds in Phase 5.5 when convergence is enabled.
pub const CONVERGENCE_MAX_ROUNDS: u32 = 2;

impl Provider {
    /// The per-provider wrapper entry point (`okstra-<provider>-exec`).
    pub fn wrapper(self) -> String {
        format!("okstra-{}-exec", self.as_str())
    }

    /// The default model for this provider in `role` (its descriptor's).
    pub fn default_model(self, role: Role) -> &'static str {
        let models = self.descriptor().models;
        let special = match role {
            Role::Critic => models.critic,
            Role::ReportWriter => models.report_writer,
            Role::Analyser | Role::Executor | Role::Verifier => None,
        };
        special.unwrap_or(models.worker)
    }

    /// The default model of a lead session hosted by this provider: its
    /// worker model.
    pub fn default_lead_model(self) -> &'static str {
        self.descriptor().models.worker
    }
}

impl Role {
    /// Whether this role reviews the others' findings in convergence
    /// (analysers, or verifiers in `implementation`).
    pub fn reviews(self) -> bool {
        matches!(self, Role::Analyser | Role::Verifier)
    }

    /// The one role whose CLI may write to the project; every other runs
    /// in its CLI's read-only mode.
    pub fn may_write(self) -> bool {
        self == Role::Executor
    }

    /// Roles whose work runs long (editing, or checking the edits): their
    /// CLIs get provider-exec's long default idle timeout.
    pub fn runs_long(self) -> bool {
        matches!(self, Role::Executor | Role::Verifier)
    }
}

impl TaskType {
    /// The six analysis task types run convergence in adversarial mode.
    pub fn is_analysis(self) -> bool {
        self != TaskType::Implementation
    }

    /// Task types whose runs can be resumed with a clarification response.
    pub fn takes_clarification(self) -> bool {
        matches!(
            self,
            TaskType::RequirementsDiscovery | TaskType::ErrorAnalysis
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatch_kinds_name_their_dispatches() {
        for kind in [
            DispatchKind::Initial,
            DispatchKind::Critic,
            DispatchKind::Retry,
            DispatchKind::Reverify(2),
        ] {
            assert_eq!(DispatchKind::parse(&kind.as_string()), Ok(kind));
        }
        let reverify = DispatchKind::Reverify(2).dispatch_name("codex-worker");
        assert_eq!(reverify, "codex-worker-reverify-r2");
        assert!(reverify.starts_with(&DispatchKind::reverify_prefix("codex-worker")));
        assert_eq!(
            DispatchKind::Retry.dispatch_name("codex-worker"),
            "codex-worker"
        );
        assert_eq!(DispatchKind::retried(&reverify), "reverify-r2");
        assert_eq!(DispatchKind::retried("codex-worker"), "initial");
        let reviewers: Vec<Role> = Role::ALL.iter().copied().filter(|r| r.reviews()).collect();
        assert_eq!(reviewers, [Role::Analyser, Role::Verifier]);
    }

    #[test]
    fn closed_sets_round_trip() {
        for task in TaskType::ALL {
            assert_eq!(task.as_str().parse::<TaskType>().unwrap(), *task);
        }
        assert_eq!(
            "nope".parse::<Provider>().unwrap_err(),
            "claude|codex|antigravity|grok|kimi"
        );
    }

    #[test]
    fn grok_and_kimi_have_distinct_critic_models() {
        assert_eq!(
            Provider::Grok.default_model(Role::Analyser),
            "grok-build-0.1"
        );
        assert_eq!(Provider::Grok.default_model(Role::Critic), "grok-4.5");
        assert_eq!(
            Provider::Kimi.default_model(Role::Analyser),
            "kimi-k2.7-code"
        );
        assert_eq!(Provider::Kimi.default_model(Role::Critic), "kimi-k3");
        assert_eq!(Provider::Claude.default_model(Role::ReportWriter), "sonnet");
    }

    #[test]
    fn only_analysis_types_are_adversarial() {
        assert_eq!(TaskType::ALL.iter().filter(|t| t.is_analysis()).count(), 6);
    }
}
