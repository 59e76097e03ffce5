//! Priced usage, added up: a [`Tally`] is the sum of any number of priced
//! records (one attempt, a worker's attempts, a provider, the run), and a
//! [`Record`] is its wire form — the `TokenUsage` of the final report schema
//! and of the team state (`dispatches[].usage`, `workers.*.usage`,
//! `leadUsage`).
//!
//! Unknown numbers stay unknown: a record with no readable part has null
//! tokens and `source: "unavailable"`; an aggregate with some unreadable
//! parts is `partial` (a lower bound); a cost that could not be computed for
//! some tokens makes `costPartial` true, and `costUsd` is null only when no
//! token at all was priced.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::cost::Cost;
use super::price::Prices;
use super::{Source, Tokens, Usage};

/// Microdollars in a dollar.
const MICROS: f64 = 1e6;

/// Where a record's cost came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CostSource {
    /// The CLI's own estimate (claude `total_cost_usd`, Grok Build's).
    Cli,
    /// Tokens × the dated price table.
    PriceTable,
    /// Both, in an aggregate.
    Mixed,
}

/// One usage record on the wire (camelCase, as the schemas spell it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    pub source: Source,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_read_tokens: Option<u64>,
    #[serde(default)]
    pub cache_write_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub reasoning_tokens: Option<u64>,
    #[serde(default)]
    pub cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_source: Option<CostSource>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cost_partial: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Record {
    /// Its cost as it reads: tokens with no cost at all are unpriced.
    pub fn cost(&self) -> Cost {
        let read = self.input_tokens.is_some() || self.output_tokens.is_some();
        Cost::new(
            self.cost_usd,
            self.cost_partial || (read && self.cost_usd.is_none()),
        )
    }

    /// One short cell for a table: `in 1.2k · cache r 30k w 2k · out 900 · $0.0123`
    /// (or `· unpriced`, `· ≥ $0.0123 + unpriced`).
    pub fn short(&self) -> String {
        let Some(input) = self.input_tokens else {
            return "unavailable".to_owned();
        };
        let mut text = format!("in {}", crate::table::human(input));
        let (read, write) = (
            self.cache_read_tokens.unwrap_or(0),
            self.cache_write_tokens.unwrap_or(0),
        );
        if read > 0 || write > 0 {
            let _ = write!(
                text,
                " · cache r {} w {}",
                crate::table::human(read),
                crate::table::human(write)
            );
        }
        let _ = write!(
            text,
            " · out {}",
            crate::table::human(self.output_tokens.unwrap_or(0))
        );
        let _ = write!(text, " · {}", self.cost());
        text
    }

    /// The record as a tally again (for totals over recorded usage).
    pub fn to_tally(&self) -> Tally {
        let mut tally = Tally {
            sources: BTreeSet::from([self.source]),
            provider: self.provider.clone().into_iter().collect(),
            models: self
                .model
                .iter()
                .flat_map(|m| m.split(", "))
                .map(str::to_owned)
                .collect(),
            reasons: self.reason.clone().into_iter().collect(),
            ..Tally::default()
        };
        if let (Some(input), Some(output)) = (self.input_tokens, self.output_tokens) {
            tally.tokens = Some(Tokens {
                input,
                cache_read: self.cache_read_tokens.unwrap_or(0),
                cache_write: self.cache_write_tokens.unwrap_or(0),
                cache_write_1h: 0,
                output,
                reasoning: self.reasoning_tokens,
            });
        }
        tally.cost_micros = self.cost_usd.map(to_micros);
        tally.cost_partial = self.cost_partial;
        tally.cost_sources = self.cost_source.into_iter().collect();
        tally
    }
}

/// Dollars as a whole number of microdollars.
pub fn to_micros(usd: f64) -> u64 {
    if usd.is_finite() && usd > 0.0 {
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "positive and finite; saturates above u64::MAX"
        )]
        let micros = (usd * MICROS).round() as u64;
        micros
    } else {
        0
    }
}

/// Microdollars as dollars (exact to the microdollar for any real spend).
fn to_usd(micros: u64) -> f64 {
    #[expect(
        clippy::cast_precision_loss,
        reason = "exact below 2^53 microdollars ($9 billion)"
    )]
    let usd = micros as f64 / MICROS;
    usd
}

/// A sum of priced usage records.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    pub sources: BTreeSet<Source>,
    pub provider: BTreeSet<String>,
    pub models: BTreeSet<String>,
    /// `None` when no part had readable numbers.
    pub tokens: Option<Tokens>,
    /// `None` when no token was priced.
    pub cost_micros: Option<u64>,
    /// Some tokens could not be priced.
    pub cost_partial: bool,
    pub cost_sources: BTreeSet<CostSource>,
    /// Why parts are unavailable, and pricing warnings.
    pub reasons: Vec<String>,
    pub warnings: Vec<String>,
}

impl Tally {
    /// A record with no numbers (`unavailable`, `not-applicable`): nothing
    /// to price.
    pub fn without_numbers(usage: &Usage) -> Tally {
        Tally {
            sources: BTreeSet::from([usage.source]),
            provider: BTreeSet::from([usage.provider.clone()]),
            models: usage.models.keys().map(super::ModelKey::label).collect(),
            reasons: usage.reason.clone().into_iter().collect(),
            ..Tally::default()
        }
    }

    /// Price one usage record.
    pub fn from_usage(usage: &Usage, prices: &Prices) -> Tally {
        let mut tally = Tally::without_numbers(usage);
        if matches!(usage.source, Source::Unavailable | Source::NotApplicable) {
            return tally;
        }
        tally.tokens = Some(usage.tokens());
        if let Some(cost) = usage.cli_cost_usd {
            tally.cost_micros = Some(to_micros(cost));
            tally.cost_sources.insert(CostSource::Cli);
            return tally;
        }
        let mut micros: Option<u64> = None;
        for (model, tokens) in &usage.models {
            match prices.cost(model, tokens) {
                Ok(cost) => micros = Some(micros.unwrap_or(0).saturating_add(cost)),
                Err(why) => {
                    if tokens.total() > 0 {
                        tally.cost_partial = true;
                        tally.warnings.push(why.to_string());
                    }
                }
            }
        }
        if micros.is_none() && !tally.cost_partial {
            // Nothing to price (no models, or all at zero): zero is the truth.
            micros = Some(0);
        }
        tally.cost_micros = micros;
        if micros.is_some() {
            tally.cost_sources.insert(CostSource::PriceTable);
        }
        tally
    }

    /// Add another tally into this one.
    pub fn add(&mut self, other: &Tally) {
        // A part with tokens but no cost at all makes the sum partial too.
        let unpriced =
            |t: &Tally| t.cost_partial || (t.tokens.is_some() && t.cost_micros.is_none());
        let partial = unpriced(self) || unpriced(other);
        self.sources.extend(other.sources.iter().copied());
        self.provider.extend(other.provider.iter().cloned());
        self.models.extend(other.models.iter().cloned());
        self.tokens = match (self.tokens, other.tokens) {
            (None, None) => None,
            (a, b) => {
                let mut sum = a.unwrap_or_default();
                sum.add(&b.unwrap_or_default());
                Some(sum)
            }
        };
        self.cost_micros = match (self.cost_micros, other.cost_micros) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
        };
        self.cost_partial = partial;
        self.cost_sources.extend(other.cost_sources.iter().copied());
        self.reasons.extend(other.reasons.iter().cloned());
        for warning in &other.warnings {
            if !self.warnings.contains(warning) {
                self.warnings.push(warning.clone());
            }
        }
    }

    /// The source of the whole: one source, `mixed`, `partial` or
    /// `unavailable` (`not-applicable` only when no part had a model at
    /// all; such a part never makes a sum partial).
    pub fn source(&self) -> Source {
        let available: Vec<Source> = self
            .sources
            .iter()
            .copied()
            .filter(|s| !matches!(s, Source::Unavailable | Source::NotApplicable))
            .collect();
        match (
            available.as_slice(),
            self.sources.contains(&Source::Unavailable),
        ) {
            ([], false) if self.sources.contains(&Source::NotApplicable) => Source::NotApplicable,
            ([], _) => Source::Unavailable,
            (_, true) => Source::Partial,
            ([one], false) => *one,
            (_, false) => {
                if available.contains(&Source::Partial) {
                    Source::Partial
                } else {
                    Source::Mixed
                }
            }
        }
    }

    /// The wire form.
    pub fn record(&self) -> Record {
        let source = self.source();
        let tokens = self
            .tokens
            .filter(|_| !matches!(source, Source::Unavailable | Source::NotApplicable));
        let cost_source = match self.cost_sources.len() {
            0 => None,
            1 => self.cost_sources.iter().next().copied(),
            _ => Some(CostSource::Mixed),
        };
        let reason = match source {
            Source::Unavailable | Source::Partial | Source::NotApplicable
                if !self.reasons.is_empty() =>
            {
                let mut unique: Vec<&str> = Vec::new();
                for reason in &self.reasons {
                    if !unique.contains(&reason.as_str()) {
                        unique.push(reason);
                    }
                }
                Some(unique.join("; "))
            }
            _ => None,
        };
        Record {
            source,
            provider: (self.provider.len() == 1)
                .then(|| self.provider.iter().next().cloned())
                .flatten(),
            model: (!self.models.is_empty())
                .then(|| self.models.iter().cloned().collect::<Vec<_>>().join(", ")),
            input_tokens: tokens.map(|t| t.input),
            cache_read_tokens: tokens.map(|t| t.cache_read),
            cache_write_tokens: tokens.map(|t| t.cache_write),
            output_tokens: tokens.map(|t| t.output),
            reasoning_tokens: tokens.and_then(|t| t.reasoning),
            cost_usd: tokens.and(self.cost_micros).map(to_usd),
            cost_source: tokens.and(cost_source),
            cost_partial: tokens.is_some() && self.cost_partial,
            reason,
        }
    }
}

/// The models of `records` that have tokens but no price in `prices`, in
/// order, each once.
pub fn unpriced_models<'a>(
    records: impl IntoIterator<Item = &'a Record>,
    prices: &Prices,
) -> Vec<String> {
    let mut models = BTreeSet::new();
    for record in records {
        if !record.cost().unpriced || record.input_tokens.is_none() {
            continue;
        }
        for model in record.model.iter().flat_map(|m| m.split(", ")) {
            if prices.resolve(model).is_none() {
                models.insert(model.to_owned());
            }
        }
    }
    models.into_iter().collect()
}

#[cfg(test)]
#[path = "tally_tests.rs"]
mod tests;
