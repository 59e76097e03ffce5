//! The wire's vocabulary: every closed set of words okstra writes into its
//! records and reads back, in one leaf that imports only serde.
//!
//! Each set is an enum made by [`closed_set!`](crate::closed_set), the one
//! macro that gives every variant exactly one spelling, used for serde,
//! `FromStr` (with the accepted words in the error) and `Display` (the board
//! state and the journal's steps, which carry a value, spell theirs by
//! hand). What a word *means* to a module (how a severity is read from a
//! worker's result, how an item's anchors add up to a status) stays in that
//! module; here are only the words, so that a module that needs a word does
//! not import the module that computes it. Each set a schema lists is held
//! to that list by a test (`tests.rs`).
//!
//! A record read back from disk may carry a word this okstra does not know
//! (written by a newer one, or an older one's word since retired); a field
//! typed [`Word<T>`] keeps such a word as it was and writes it back
//! unchanged.
//!
//! - `board.rs`: a worker's state on the board, a run's outcome.
//! - `containment.rs`: how a run keeps its CLIs from the project.
//! - `convergence.rs`: an item's verdicts, its final class, why convergence
//!   stopped, why a verdict was not counted.
//! - `ending.rs`: how a dispatch attempt ended, and what each ending reads
//!   as in the final report; why a worker has no ending (it was not
//!   dispatched, or its attempt has not ended); where its result came from.
//! - `finding.rs`: the severity ladder, an anchor's status, why a run was not
//!   cross-verified, a finding's rule, a report check's level.
//! - `host.rs`: the hosts `okstra install` writes into.
//! - `land.rs`: where a change stands at the landing gate, why it may not
//!   land, how `HEAD` stands to it, what landing does to a file.
//! - `run.rs`: how a run continues an earlier one, the states `okstra next`
//!   answers with, the step journal's steps, the lead events, the questions
//!   a run asks its user.
//! - `sidecar.rs`: a wrapper's status sidecar: its stage, why the CLI
//!   ended, who stopped it.
//! - `workspace.rs`: an attempt's isolation and its workspace's kind.
//! - `word.rs`: [`Word<T>`].

/// Joins the accepted values of a closed set for error messages: `a|b|c`.
pub fn one_of<T: std::fmt::Display>(values: &[T]) -> String {
    values
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("|")
}

#[macro_export]
macro_rules! closed_set {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl From<$name> for &'static str {
            fn from(value: $name) -> &'static str {
                value.as_str()
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;

            fn from_str(text: &str) -> Result<Self, Self::Err> {
                match text {
                    $($text => Ok($name::$variant),)+
                    _ => Err($crate::vocab::one_of($name::ALL)),
                }
            }
        }
    };
}

mod board;
mod containment;
mod convergence;
mod ending;
mod finding;
mod host;
mod land;
mod run;
mod sidecar;
mod word;
mod workspace;

pub use self::board::{BoardState, Outcome};
pub use self::containment::Containment;
pub use self::convergence::{FinalClass, StopReason, Uncounted, Verdict, parse_class};
pub use self::ending::{Ending, NoEnding, Provenance, Recovery, ReportStatus, Shortfall};
pub use self::finding::{AnchorStatus, Level, ReliabilityReason, Rule, Severity, parse_threshold};
pub use self::host::Host;
pub use self::land::{Ancestry, FileAction, LandOutcome, LandReason, LandingState};
pub use self::run::{ContinuationKind, EventKind, JournalStep, NextState, Question};
pub use self::sidecar::{Reason, Stage, TerminatedBy};
pub use self::word::Word;
pub use self::workspace::{Isolation, WorkspaceKind};

#[cfg(test)]
mod tests;
