//! Where an attempt worked: how it was kept from changing the project (the
//! dispatch record's `isolation`) and what its workspace is
//! (`workspace.kind`), both in `schemas/team-state.schema.json`.

closed_set! {
    /// How an attempt was kept from changing the project.
    Isolation {
        /// The CLI's own read-only mode (claude `plan`, codex `read-only`,
        /// antigravity without write approval), or the one role allowed to write.
        CliSandbox => "cli-sandbox",
        /// A git copy of the run's snapshot.
        GitCopy => "git-copy",
        /// A file copy of a project outside git.
        FileCopy => "file-copy",
        /// Nothing: it ran in the project itself (`--allow-unisolated`).
        None => "none",
        /// A linked git worktree: what okstra did before copies (read only).
        GitWorktree => "git-worktree",
        /// Landlock: the CLI could write nothing but its own state, a scratch
        /// folder and (the Executor) its copy.
        Landlock => "landlock",
    }
}

closed_set! {
    /// What a workspace is.
    WorkspaceKind {
        GitCopy => "git-copy",
        FileCopy => "file-copy",
        /// The project itself, through a symlink at the copy's path.
        None => "none",
    }
}

impl WorkspaceKind {
    /// The isolation an attempt in such a workspace has.
    pub fn isolation(self) -> Isolation {
        match self {
            WorkspaceKind::GitCopy => Isolation::GitCopy,
            WorkspaceKind::FileCopy => Isolation::FileCopy,
            WorkspaceKind::None => Isolation::None,
        }
    }
}
