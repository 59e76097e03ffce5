//! The words of landing an implementation run's change: where the change
//! stands, why it may not land, how the user's `HEAD` stands to it, and
//! what landing does to each file (the report's `landing`, the team
//! state's `landing`, `okstra land --json`).

closed_set! {
    /// Where an implementation run's change stands at the landing gate.
    LandingState {
        /// Verification allows it (`okstra land` checks the working tree).
        Landable => "landable",
        Blocked => "blocked",
        Landed => "landed",
    }
}

closed_set! {
    /// What `okstra land` answers of the change (`okstra land --json`'s
    /// `state`): where it stands, or that it landed before.
    LandOutcome {
        /// It can land (`--check`): `okstra land` applies it.
        Landable => "landable",
        /// Something keeps it from landing (the reasons say what).
        Blocked => "blocked",
        /// This call wrote it into the working tree.
        Landed => "landed",
        /// An earlier call landed this very commit; nothing was written.
        AlreadyLanded => "already-landed",
    }
}

closed_set! {
    /// Why a change may not land, in the gate's stable words.
    LandReason {
        /// The Executor's change is not committed, or not every verifier has
        /// checked it, or its defects are not classified.
        VerificationIncomplete => "verification-incomplete",
        /// The fix pass changed the code, and its change was not checked.
        FixUnverified => "fix-unverified",
        /// A confirmed `blocking` or `major` defect is not fixed.
        DefectsOpen => "defects-open",
        /// The snapshot's base is no longer an ancestor of the user's `HEAD`.
        BaseNotAncestor => "base-not-ancestor",
        /// A file changed by the user's new commits does not merge.
        Conflict => "conflict",
        /// A file has uncommitted edits that differ from the snapshot.
        DirtyOverlap => "dirty-overlap",
        /// The change adds a symlink whose target leaves the project.
        SymlinkOutside => "symlink-outside",
    }
}

closed_set! {
    /// How the user's `HEAD` stands to the run's base and the branch.
    Ancestry {
        /// The base is an ancestor of `HEAD`; the branch is not yet in it.
        Ahead => "ahead",
        /// The branch's tip is already an ancestor of `HEAD`.
        Merged => "merged",
        /// The base is not an ancestor of `HEAD`.
        Diverged => "diverged",
    }
}

closed_set! {
    /// What landing does to one file.
    FileAction {
        /// Write the tip's version (the file was as the snapshot had it).
        Write => "write",
        /// Write the three-way merge of the user's commits and the change.
        Merge => "merge",
        /// Delete the file (the change deletes it).
        Delete => "delete",
    }
}
