//! The words a finding carries: its rung on the severity ladder, how its
//! anchors resolved, and why a run's findings were not cross-verified.
//! How a worker's own severity words map onto the ladder is
//! `crate::severity`; how anchors add up to a status is `crate::anchors`.

closed_set! {
    /// One rung of the severity ladder (the report schema's
    /// `$defs/Severity`), lowest first (so `Ord` ranks them).
    Severity {
        Info => "info",
        Low => "low",
        Medium => "medium",
        High => "high",
        Critical => "critical",
    }
}

impl Severity {
    /// The SARIF `level` of a result at this rung.
    pub fn sarif_level(self) -> &'static str {
        match self {
            Severity::Critical | Severity::High => "error",
            Severity::Medium => "warning",
            Severity::Low | Severity::Info => "note",
        }
    }
}

/// `--fail-on`'s value: one rung of the ladder, by its report word.
pub fn parse_threshold(word: &str) -> Result<Severity, String> {
    word.parse::<Severity>()
        .map_err(|one_of| format!("`{word}` is not a severity; expected one of `{one_of}`"))
}

closed_set! {
    /// How an anchor, or an item's anchors together, resolved.
    AnchorStatus {
        Verified => "verified",
        Moved => "moved",
        Unanchored => "unanchored",
        /// No anchor at all (items only).
        None => "none",
    }
}

impl AnchorStatus {
    /// Whether the claim is anchored in the code: every anchor was found
    /// (where written, or moved). A claim with no anchor is not.
    pub fn is_anchored(self) -> bool {
        matches!(self, AnchorStatus::Verified | AnchorStatus::Moved)
    }
}

closed_set! {
    /// Why a run was not cross-verified.
    ReliabilityReason {
        /// One reviewer was rostered: nobody could check it, by design.
        SingleReviewer => "single-reviewer",
        /// Two or more were rostered but fewer than two completed their own work.
        QuorumLost => "quorum-lost",
        /// Convergence was switched off for the run.
        ConvergenceDisabled => "convergence-disabled",
        /// Convergence was on but no round ran (stopped, or interrupted).
        ConvergenceNotRun => "convergence-not-run",
        /// Round 1 left some reviewer's items without another reviewer's answer.
        ReviewersFailed => "reviewers-failed",
    }
}

closed_set! {
    /// The kind of claim a finding is: its SARIF rule.
    Rule {
        Finding => "finding",
        RootCause => "root-cause",
        Risk => "risk",
        Defect => "defect",
    }
}

closed_set! {
    /// How far a report was checked.
    Level {
        /// The JSON Schema and the report's own invariants: all a report folder
        /// without its run allows.
        Schema => "schema",
        /// Also against the run's records: roster, worker results, team state,
        /// convergence ledger.
        Records => "records",
    }
}
