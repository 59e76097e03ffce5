//! The words of convergence: a reviewer's verdict on an item, the item's
//! class once convergence is over, and why convergence stopped
//! (`schemas/convergence-ledger.schema.json`, and the report's copies).

closed_set! {
    /// A reviewer's answer to one item.
    Verdict {
        Agree => "AGREE",
        Disagree => "DISAGREE",
        Supplement => "SUPPLEMENT",
    }
}

impl Verdict {
    /// `AGREE` and `SUPPLEMENT` both say the item holds.
    pub fn agrees(self) -> bool {
        self != Verdict::Disagree
    }
}

closed_set! {
    /// An item's class once convergence is over.
    FinalClass {
        FullConsensus => "full-consensus",
        PartialConsensus => "partial-consensus",
        Contested => "contested",
        WorkerUnique => "worker-unique",
        /// A claim whose anchor does not resolve in the run's snapshot, or
        /// that has none: whatever the verdicts, it is not evidence, and the
        /// report lists it apart.
        Unverifiable => "unverifiable",
        /// A claim its owner withdrew, or that a quorum of reviewers refuted
        /// with evidence and nobody verified: never an alert, never ranked,
        /// listed apart with its refutation.
        Refuted => "refuted",
    }
}

closed_set! {
    /// Why convergence stopped.
    StopReason {
        NoOpenItems => "no-open-items",
        MaxRounds => "max-rounds",
        Quorum => "quorum",
        SingleWorker => "single-worker",
    }
}

/// One `--classes` value: a convergence class word.
pub fn parse_class(word: &str) -> Result<FinalClass, String> {
    word.trim().parse::<FinalClass>().ok().ok_or_else(|| {
        format!(
            "`{word}` is not a convergence class; expected one of \
             `full-consensus|partial-consensus|contested|worker-unique`"
        )
    })
}

closed_set! {
    /// Why a verdict was not counted.
    Uncounted {
        /// The claim's own owner answered it.
        Owner => "owner",
        /// A worker that reported the same finding (a merged claim)
        /// answered it: a finder never verifies its own finding.
        Finder => "finder",
        /// A later verdict of the same reviewer on the same finding counts
        /// instead.
        Superseded => "superseded",
        /// A stand-in for the rostered provider or model gave it.
        Substitute => "substitute",
        /// Its reviewer is not one of the run's rostered reviewers.
        Unrostered => "unrostered",
        /// An anchor it cites does not resolve in the run's snapshot.
        Unresolved => "unresolved",
        /// It cites no command with output and no anchor.
        NoEvidence => "no-evidence",
        /// Its only anchors are the claim's own, re-quoted.
        OwnAnchors => "own-anchors",
    }
}
