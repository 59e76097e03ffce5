//! The token and cost ledger: one normalised usage record per dispatch
//! attempt, whatever CLI ran it, plus the lead's Claude Code session.
//!
//! Every CLI counts differently (research/usage.md): claude's `input_tokens`
//! excludes cached tokens while codex's and gemini's include them, gemini's
//! output excludes thinking, codex reports thread-cumulative totals, Claude
//! Code repeats each assistant message once per content block. The parsers
//! here turn each into the same five disjoint-or-nested buckets:
//! `input` (uncached), `cache_read`, `cache_write`, `output` (reasoning
//! included), and `reasoning` (an informational subset of `output`, never
//! added to a total). A CLI that reports nothing gives
//! [`Source::Unavailable`] with the reason, never zeros.
//!
//! Submodules: `stream` parses the CLIs' stream output (the live [`stream::Meter`]
//! and [`from_log`]), `session` reads Claude Code session JSONL, `session_log`
//! reads a CLI's own session log (when its stream has no usage), `price` owns
//! the dated price table, `tally` adds priced records up and owns the wire
//! record, `ledger` computes a run's whole ledger from its team state,
//! `budget` decides when a run's recorded spend reached its budget, `cost`
//! says how a cost reads everywhere (`unpriced`, `≥ $X + unpriced`), `follow`
//! meters a growing log incrementally, `lines`
//! reads files line by line in bounded memory, and `command` is
//! `okstra usage`.
//!
//! Public API for the dispatch engine and `okstra status`:
//! - [`stream::Meter::new`], [`stream::Meter::feed_line`], [`stream::Meter::snapshot`] (live usage
//!   from lines you already have), or [`Follow::new`] and [`Follow::poll`]
//!   (live usage of a log still being written, reading only what was
//!   appended since the last look);
//! - [`from_log`] (a finished attempt's log; a CLI's session log too);
//! - [`Prices::load`] then [`Usage::priced`] → [`Record`] (what the team
//!   state stores as a dispatch's `usage`), [`Record::short`] for a table;
//! - [`Budget::is_spent`] with [`recorded_totals`] (the budget stop);
//! - [`record_usage`] (read every part now and record it in the team
//!   state) and [`summary_of`] (the summary those records give: the final
//!   report's `usageSummary`, derived by `derive::usage`).

mod across;
mod budget;
mod command;
mod cost;
mod estimated;
mod follow;
mod ids;
mod ledger;
mod lines;
mod price;
mod session;
mod session_log;
mod stream;
mod tally;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

// The API the dispatch engine and `okstra status` call; not all of it has a
// caller inside okstra yet (the lead engineer wires the budget flags and the
// live meter).
#[expect(
    unused_imports,
    reason = "API for the dispatch engine and `okstra status`, wired next"
)]
pub use budget::{Budget, Totals, recorded_parts, recorded_totals};
pub use command::{record as record_usage, usage_command};
pub use cost::{Cost, dollars, price_hint};
pub use estimated::{Basis, ESTIMATE_VERSION, Estimate, Range, read_estimate};
pub use follow::Follow;
pub use ids::is_valid_id;
pub use ledger::Summary;
pub use price::Prices;
pub use stream::from_log;
#[cfg_attr(
    not(test),
    expect(
        unused_imports,
        reason = "API for the dispatch engine and `okstra status`, wired next"
    )
)]
pub use tally::CostSource;
pub use tally::Record;
pub use tally::unpriced_models;

/// The run's `usageSummary` from its team state as written (`team_state`):
/// the usage `okstra usage` last recorded for each attempt and the lead,
/// summed by the one function that makes every summary.
pub fn summary_of(run: &crate::run::Run, team_state: &serde_json::Value) -> Summary {
    ledger::from_records(run, team_state)
}

/// Token counts in the normalised buckets, as the CLIs' decoders report them.
pub use crate::providers::Tokens;

/// Where a usage record's numbers came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// The CLI's own stream output (the wrapper log).
    CliStream,
    /// Claude Code session transcripts (`~/.claude/projects/…/*.jsonl`).
    ClaudeJsonl,
    /// A CLI's own session log ([`crate::providers::Descriptor::session_log`]). The
    /// word is the first such CLI's, and stays: records hold it.
    #[serde(rename = "kimi-session")]
    SessionLog,
    /// Totals the lead host showed the lead (`okstra event … lead-usage`).
    HostReport,
    /// An aggregate of parts with different sources, all available.
    Mixed,
    /// An aggregate where some parts are unavailable: a lower bound.
    Partial,
    /// Nothing could be read; every number is null and `reason` says why.
    Unavailable,
    /// Nothing to count: no model did this part (the lead of a headless
    /// `okstra run` is okstra itself). Every number is null, `reason` says
    /// why, and a sum leaves it out instead of becoming `partial`.
    NotApplicable,
}

/// A model as a usage record names it: the id the CLI reported, and whether
/// Claude's fast mode (priced with a multiplier) served it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ModelKey {
    pub id: String,
    pub fast: bool,
}

impl ModelKey {
    pub fn new(id: impl Into<String>) -> ModelKey {
        ModelKey {
            id: id.into(),
            fast: false,
        }
    }

    /// How the model is shown: `claude-opus-4-6 (fast)` for fast mode.
    pub fn label(&self) -> String {
        if self.fast {
            format!("{} (fast)", self.id)
        } else {
            self.id.clone()
        }
    }
}

/// The normalised usage of one attempt (or one session), before pricing.
#[derive(Debug, Clone, PartialEq)]
pub struct Usage {
    pub provider: String,
    pub source: Source,
    /// Why the numbers are unavailable (or what is odd about them).
    pub reason: Option<String>,
    /// Tokens per model; empty when unavailable.
    pub models: BTreeMap<ModelKey, Tokens>,
    /// The CLI's own cost estimate for the whole record, when it prints one.
    pub cli_cost_usd: Option<f64>,
}

impl Usage {
    /// A record that says why there are no numbers.
    pub fn unavailable(provider: &str, reason: impl Into<String>) -> Usage {
        Usage {
            provider: provider.to_owned(),
            source: Source::Unavailable,
            reason: Some(reason.into()),
            models: BTreeMap::new(),
            cli_cost_usd: None,
        }
    }

    /// A record of a part no model played (see [`Source::NotApplicable`]).
    pub fn not_applicable(provider: &str, reason: impl Into<String>) -> Usage {
        Usage {
            source: Source::NotApplicable,
            ..Usage::unavailable(provider, reason)
        }
    }

    /// The tokens of every model added up.
    pub fn tokens(&self) -> Tokens {
        let mut sum = Tokens::default();
        for tokens in self.models.values() {
            sum.add(tokens);
        }
        sum
    }

    /// Price the record (the CLI's own cost wins where it printed one) into
    /// its wire form; unknown models keep their tokens and get a warning.
    pub fn priced(&self, prices: &Prices) -> Record {
        tally::Tally::from_usage(self, prices).record()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_add_keeps_unknown_reasoning_unknown() {
        let mut a = Tokens {
            input: 1,
            output: 2,
            ..Tokens::default()
        };
        a.add(&Tokens::default());
        assert_eq!(a.reasoning, None);
        a.add(&Tokens {
            reasoning: Some(5),
            output: 5,
            ..Tokens::default()
        });
        assert_eq!((a.output, a.reasoning, a.total()), (7, Some(5), 8));
        let mut big = Tokens {
            input: u64::MAX,
            ..Tokens::default()
        };
        big.add(&a);
        assert_eq!(big.input, u64::MAX);
    }
}
