//! Anchors: where in the code a worker's claim is, checked by okstra.
//!
//! A worker anchors a claim with `path:line` or `path:start-end`, each
//! optionally followed by the code it points at as a backticked excerpt
//! (`grammar`). okstra checks every anchor once, when a result is accepted
//! into convergence, against the one snapshot of the project recorded for
//! the run (`snapshot`), never the live tree: the file exists, the line
//! range is in it, the excerpt is there after whitespace is normalised
//! (`check`). The outcome is persisted (`store`, `state/anchors.json`, keyed
//! by the result's digest) and never re-resolved: later reads return what
//! was checked.
//!
//! An item's [`AnchorStatus`] sums up its anchors: `verified` when every anchor
//! is, `moved` when an excerpt was found on other lines (and none failed),
//! `unanchored` when any failed, `none` when it cites no anchor. A claim
//! whose status is `unanchored` or `none` is not evidence: convergence
//! classifies it `unverifiable`, and the report lists it apart.
//!
//! Not here: which items are claims (`converge::claims`), what the
//! classification does with a status (`converge::classify`).

mod check;
pub mod grammar;
pub mod snapshot;
mod store;

use serde::{Deserialize, Serialize};

use crate::vocab::AnchorStatus;

pub use self::grammar::{Anchor, parse};
pub use self::store::{ItemToCheck, ResultToCheck, check_anchors, check_results, check_texts};

impl AnchorStatus {
    /// The status of an item with these checked anchors.
    pub fn of(anchors: &[Checked]) -> AnchorStatus {
        if anchors.is_empty() {
            AnchorStatus::None
        } else if anchors.iter().any(|a| a.status == AnchorStatus::Unanchored) {
            AnchorStatus::Unanchored
        } else if anchors.iter().any(|a| a.status == AnchorStatus::Moved) {
            AnchorStatus::Moved
        } else {
            AnchorStatus::Verified
        }
    }
}

/// One anchor after okstra checked it: as written, how it resolved, and
/// where the excerpt really is when it moved. The worker's text is never
/// rewritten; `found_at` sits beside `lines`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Checked {
    /// The path as written.
    pub path: String,
    /// `18` or `18-22`, as written.
    pub lines: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt: Option<String>,
    /// SHA-256 of the excerpt with its whitespace normalised (absent when
    /// there is no excerpt, or one too short to identify anything).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt_sha256: Option<String>,
    /// `verified`, `moved` or `unanchored`.
    pub status: AnchorStatus,
    /// Where the excerpt was found, for a `moved` anchor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found_at: Option<String>,
    /// Why an `unanchored` anchor did not resolve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Checked {
    /// `src/cart.rs:18-22`, as written.
    pub fn location(&self) -> String {
        format!("{}:{}", self.path, self.lines)
    }
}

/// An item's (or a verdict's) anchors, checked, and their sum.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Anchoring {
    pub anchor_status: AnchorStatus,
    pub anchors: Vec<Checked>,
}

impl Anchoring {
    pub fn new(anchors: Vec<Checked>) -> Anchoring {
        Anchoring {
            anchor_status: AnchorStatus::of(&anchors),
            anchors,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(status: AnchorStatus) -> Checked {
        Checked {
            path: "a.rs".into(),
            lines: "1".into(),
            excerpt: None,
            excerpt_sha256: None,
            status,
            found_at: None,
            reason: None,
        }
    }

    #[test]
    fn an_items_status_is_its_worst_anchor() {
        use AnchorStatus::{Moved, None, Unanchored, Verified};
        assert_eq!(AnchorStatus::of(&[]), None);
        assert_eq!(AnchorStatus::of(&[checked(Verified)]), Verified);
        assert_eq!(
            AnchorStatus::of(&[checked(Verified), checked(Moved)]),
            Moved
        );
        assert_eq!(
            AnchorStatus::of(&[checked(Moved), checked(Unanchored), checked(Verified)]),
            Unanchored
        );
        assert!(Verified.is_anchored() && Moved.is_anchored());
        assert!(!Unanchored.is_anchored() && !None.is_anchored());
    }
}
