//! The hosts `okstra install` writes okstra's skills, commands and hooks
//! into (`--host`).
//!
//! A host is the program a person runs the lead in, not a provider CLI
//! (`crate::providers`), so it keeps its own names here.

closed_set! {
    /// A host okstra can be installed into.
    Host {
        ClaudeCode => "claude-code",
        Codex => "codex",
        Antigravity => "antigravity",
    }
}
