//! The hosts `okstra install` writes okstra's skills, commands and hooks
//! into (`--host`).

closed_set! {
    /// A host okstra can be installed into.
    Host {
        ClaudeCode => "claude-code",
        Codex => "codex",
        Antigravity => "antigravity",
    }
}
