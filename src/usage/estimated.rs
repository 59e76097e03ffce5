//! A run's estimate as `state/estimate.json` keeps it and the report's
//! `usageSummary.estimate` shows it (`crate::estimate` makes it).

use serde::{Deserialize, Serialize};

use crate::run::Run;
use crate::table::human;

/// Version of `state/estimate.json`.
pub const ESTIMATE_VERSION: u32 = 1;

/// Low and high ends of an estimate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Range<T> {
    pub low: T,
    pub high: T,
}

/// What the estimate rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Basis {
    /// This project's earlier runs (and the floor).
    EarlierRuns,
    /// The rendered prompts only: no earlier run to go by.
    Prompts,
}

/// The estimate of one run, as `state/estimate.json` keeps it and the
/// report's `usageSummary.estimate` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Estimate {
    pub schema_version: u32,
    pub tokens: Range<u64>,
    /// `None` when a model is missing from the price table.
    pub cost_usd: Option<Range<f64>>,
    pub basis: Basis,
    /// How many earlier runs of the project it was made from.
    pub earlier_runs: usize,
    /// The rendered prompts' tokens: the least the run can take.
    pub floor_tokens: u64,
    pub prices_as_of: String,
}

impl Estimate {
    /// `42k–180k tokens, $0.40–$2.10` (or `at least 12k tokens …`).
    pub fn line(&self) -> String {
        let cost = |range: &Range<f64>| {
            if (range.high - range.low).abs() < 0.005 {
                super::cost::dollars(range.low)
            } else {
                format!(
                    "{}–{}",
                    super::cost::dollars(range.low),
                    super::cost::dollars(range.high)
                )
            }
        };
        match self.basis {
            Basis::Prompts => format!(
                "at least {} tokens{} (the rendered prompts alone; no earlier run of this project to go by)",
                human(self.tokens.low),
                self.cost_usd.as_ref().map_or_else(
                    || ", unpriced".to_owned(),
                    |c| format!(", at least {}", cost(c))
                )
            ),
            Basis::EarlierRuns => format!(
                "{}–{} tokens{} (from {} earlier run{} of this project; the prompts alone are {})",
                human(self.tokens.low),
                human(self.tokens.high),
                self.cost_usd
                    .as_ref()
                    .map_or_else(|| ", unpriced".to_owned(), |c| format!(", {}", cost(c))),
                self.earlier_runs,
                if self.earlier_runs == 1 { "" } else { "s" },
                human(self.floor_tokens),
            ),
        }
    }
}

impl Estimate {
    /// The range alone: `30.0k–120.0k tokens, $0.30–$1.50`, or `at least
    /// 12.0k tokens` when the floor is all there is.
    pub fn short(&self) -> String {
        let cost = self.cost_usd.as_ref().map_or_else(String::new, |c| {
            if (c.high - c.low).abs() < 0.005 {
                format!(", {}", super::cost::dollars(c.low))
            } else {
                format!(
                    ", {}–{}",
                    super::cost::dollars(c.low),
                    super::cost::dollars(c.high)
                )
            }
        });
        match self.basis {
            Basis::Prompts => format!("at least {} tokens{cost}", human(self.tokens.low)),
            Basis::EarlierRuns => format!(
                "{}–{} tokens{cost}",
                human(self.tokens.low),
                human(self.tokens.high)
            ),
        }
    }
}

/// The run's kept estimate, if it has one.
pub fn read_estimate(run: &Run) -> Option<Estimate> {
    let path = run.layout().estimate();
    let bytes = crate::fsread::read_no_follow(&path, crate::fsread::Kind::Manifest).ok()?;
    serde_json::from_slice::<Estimate>(&bytes)
        .ok()
        .filter(|e| e.schema_version == ESTIMATE_VERSION)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_estimate_below_a_cent_does_not_read_as_free() {
        let estimate = Estimate {
            schema_version: ESTIMATE_VERSION,
            tokens: Range {
                low: 4_000,
                high: 9_000,
            },
            cost_usd: Some(Range {
                low: 0.0012,
                high: 0.0431,
            }),
            basis: Basis::EarlierRuns,
            earlier_runs: 2,
            floor_tokens: 4_000,
            prices_as_of: "2026-11-30".into(),
        };
        assert_eq!(
            estimate.line(),
            "4.0k–9.0k tokens, $0.0012–$0.04 (from 2 earlier runs of this project; the prompts alone are 4.0k)"
        );
        assert!(
            estimate.short().ends_with(", $0.0012–$0.04"),
            "{}",
            estimate.short()
        );
    }
}
