//! The lead runtimes: the hosts that run a lead session (Claude Code, Codex,
//! Antigravity, or an external lead), what each declares about itself, and
//! the variables a host's session sets for its children.
//!
//! A lead *host* is another thing than a provider *CLI* (`crate::providers`),
//! so this file names the hosts it is about; the provider CLI a host's own
//! native workers are is asked of the catalog through
//! [`LeadRuntime::host_provider`].

use serde::Serialize;

use crate::providers::Provider;

closed_set! {
    /// The host that runs the lead session (its adapter).
    LeadRuntime {
        ClaudeCode => "claude-code",
        Codex => "codex",
        Antigravity => "antigravity",
        External => "external",
    }
}

/// Variables a host agent session sets for its own children. A worker that
/// inherits them believes it is nested inside that session (a nested headless
/// claude that sees `CLAUDECODE` hangs, claude-octopus PR #480) or connects to
/// the host's IDE bridge. Removed for every provider, because any of them may
/// start a claude of its own. codex's `CODEX_SANDBOX*` are deliberately kept:
/// they describe a restriction that really applies to us (the sandbox is still
/// there), and hiding it would only make a nested codex fail later.
pub const HOST_SESSION_MARKERS: &[&str] = &[
    "CLAUDECODE",
    "CLAUDE_CODE_ENTRYPOINT",
    "CLAUDE_CODE_SSE_PORT",
];

/// What a lead runtime declares about itself (SPEC §2).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Capabilities {
    pub runtime: LeadRuntime,
    pub lead_role_label: &'static str,
    pub user_prompt_mode: &'static str,
    pub worker_dispatch_backend: &'static str,
    pub initial_prompt_delivery_mode: &'static str,
    pub session_accounting: &'static str,
    pub resume_mode: &'static str,
    pub teardown_mode: &'static str,
    pub lead_event_source: &'static str,
}

impl LeadRuntime {
    /// The provider whose own session is the lead, if the runtime is a known host.
    pub fn host_provider(self) -> Option<Provider> {
        match self {
            LeadRuntime::ClaudeCode => Some(Provider::Claude),
            LeadRuntime::Codex => Some(Provider::Codex),
            LeadRuntime::Antigravity => Some(Provider::Antigravity),
            LeadRuntime::External => None,
        }
    }

    /// Whether the host hands a finished sub-agent's final message to a
    /// sub-agent-stop hook (`okstra hook subagent-stop`): Claude Code and
    /// Codex do; agy's hooks are unstable and an external lead has none.
    pub fn has_subagent_stop_hook(self) -> bool {
        matches!(self, LeadRuntime::ClaudeCode | LeadRuntime::Codex)
    }

    /// The interactive CLI started on the handoff prompt, if okstra can launch one.
    pub fn interactive_binary(self) -> Option<&'static str> {
        self.host_provider().map(Provider::binary)
    }

    pub fn capabilities(self) -> Capabilities {
        let (label, prompt_mode, backend, delivery, accounting, resume, teardown) = match self {
            LeadRuntime::ClaudeCode => (
                "Claude lead",
                "native-question",
                "mixed",
                "lazy-path-reference",
                "claude-jsonl",
                "session-id",
                "task-stop",
            ),
            LeadRuntime::Codex => (
                "Codex lead",
                "host-text",
                "mixed",
                "eager-include",
                "artifact-only",
                "artifact-checkpoint",
                "process-cleanup",
            ),
            LeadRuntime::Antigravity => (
                "Antigravity lead",
                "host-text",
                "mixed",
                "eager-include",
                "artifact-only",
                "artifact-checkpoint",
                "process-cleanup",
            ),
            LeadRuntime::External => (
                "External lead",
                "host-text",
                "cli-wrapper",
                "eager-include",
                "artifact-only",
                "artifact-checkpoint",
                "process-cleanup",
            ),
        };
        Capabilities {
            runtime: self,
            lead_role_label: label,
            user_prompt_mode: prompt_mode,
            worker_dispatch_backend: backend,
            initial_prompt_delivery_mode: delivery,
            session_accounting: accounting,
            resume_mode: resume,
            teardown_mode: teardown,
            lead_event_source: "lead-events-jsonl",
        }
    }
}
