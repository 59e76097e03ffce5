//! What a run will roughly cost, said before anything is spent, and the plan
//! `okstra run` / `okstra ask` shows before dispatching: every worker with
//! its provider, model and runner, the account or key each CLI will use (by
//! name), and the estimate.
//!
//! The estimate is a range of tokens (and dollars, where the price table
//! knows every model): from this project's earlier runs' ledgers when there
//! are any (their usage per rostered worker, times this run's workers), and
//! never below the floor — the rendered prompts alone, read once as input.
//! Without an earlier run the floor is all there is, and the plan says so.
//!
//! It is kept in `state/estimate.json` so `okstra usage` (and through it the
//! report's `usageSummary.estimate`) can show it beside what was spent.

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::Value;

use crate::run::Run;
use crate::usage::ESTIMATE_VERSION;
pub use crate::usage::{Basis, Estimate, Range, read_estimate as read};
use crate::usage::{ModelKey, Prices, Tokens};

/// Bytes of prompt per token: the usual rule of thumb for English and code.
const BYTES_PER_TOKEN: u64 = 4;
/// Earlier runs read at most: the newest ones say the most.
const MAX_EARLIER_RUNS: usize = 50;

/// One earlier run's spend per rostered worker.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PerWorker {
    pub tokens: f64,
    pub cost_usd: Option<f64>,
}

/// Estimate `run`, with `prices`: the floor from its prompts, the range
/// from the project's other runs.
pub fn estimate(run: &Run, prices: &Prices) -> Estimate {
    let (floor_tokens, floor_cost) = floor(run, prices);
    let earlier = earlier_runs(&run.project_root, &run.dir);
    combine(
        floor_tokens,
        floor_cost,
        &earlier,
        run.assignments.len(),
        &prices.as_of,
    )
}

/// The pure part of [`estimate`]: the floor and the earlier runs' spend per
/// worker, scaled to `workers`.
pub fn combine(
    floor_tokens: u64,
    floor_cost: Option<f64>,
    earlier: &[PerWorker],
    workers: usize,
    prices_as_of: &str,
) -> Estimate {
    #[expect(clippy::cast_precision_loss, reason = "a worker count")]
    let workers = workers.max(1) as f64;
    let scaled: Vec<f64> = earlier.iter().map(|e| e.tokens * workers).collect();
    let (tokens, basis) = if scaled.is_empty() {
        (
            Range {
                low: floor_tokens,
                high: floor_tokens,
            },
            Basis::Prompts,
        )
    } else {
        let low = to_tokens(scaled.iter().copied().fold(f64::INFINITY, f64::min)).max(floor_tokens);
        let high = to_tokens(scaled.iter().copied().fold(0.0, f64::max)).max(low);
        (Range { low, high }, Basis::EarlierRuns)
    };
    let cost_usd = if earlier.is_empty() {
        floor_cost.map(|c| Range { low: c, high: c })
    } else {
        let costs: Option<Vec<f64>> = earlier
            .iter()
            .map(|e| e.cost_usd.map(|c| c * workers))
            .collect();
        costs.map(|costs| {
            let low = costs
                .iter()
                .copied()
                .fold(f64::INFINITY, f64::min)
                .max(floor_cost.unwrap_or(0.0));
            let high = costs.iter().copied().fold(0.0, f64::max).max(low);
            Range { low, high }
        })
    };
    Estimate {
        schema_version: ESTIMATE_VERSION,
        tokens,
        cost_usd,
        basis,
        earlier_runs: earlier.len(),
        floor_tokens,
        prices_as_of: prices_as_of.to_owned(),
    }
}

#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a non-negative token estimate, rounded"
)]
fn to_tokens(value: f64) -> u64 {
    value.max(0.0).round() as u64
}

/// The rendered prompts as input tokens, and what that input costs at
/// each assignment's model (`None` when a model has no price).
fn floor(run: &Run, prices: &Prices) -> (u64, Option<f64>) {
    let mut tokens = 0_u64;
    let mut micros = Some(0_u64);
    for assignment in &run.assignments {
        let bytes = std::fs::metadata(&assignment.paths.prompt_path).map_or(0, |m| m.len());
        let input = bytes.div_ceil(BYTES_PER_TOKEN);
        tokens = tokens.saturating_add(input);
        let cost = prices
            .cost(
                &ModelKey::new(assignment.model_execution_value.clone()),
                &Tokens {
                    input,
                    ..Tokens::default()
                },
            )
            .ok();
        micros = micros.zip(cost).map(|(a, b)| a.saturating_add(b));
    }
    #[expect(clippy::cast_precision_loss, reason = "dollars for display")]
    let cost = micros.map(|m| m as f64 / 1e6);
    (tokens, cost)
}

/// The spend per rostered worker of the project's other runs that recorded
/// usage (newest first, at most [`MAX_EARLIER_RUNS`]).
fn earlier_runs(project_root: &Path, this_run: &Path) -> Vec<PerWorker> {
    let Ok(mut dirs) = crate::lifecycle::run_dirs(project_root) else {
        return Vec::new();
    };
    let this = std::fs::canonicalize(this_run).unwrap_or_else(|_| this_run.to_path_buf());
    dirs.retain(|dir| std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone()) != this);
    let mut found: Vec<(String, PerWorker)> = dirs
        .iter()
        .filter_map(|dir| {
            let run = Run::open(dir).ok()?;
            let state = crate::run::team_state::read_raw(&run).ok()?;
            per_worker(&state, run.assignments.len()).map(|p| (run.created_at.clone(), p))
        })
        .collect();
    found.sort_by(|a, b| b.0.cmp(&a.0));
    found.truncate(MAX_EARLIER_RUNS);
    found.into_iter().map(|(_, p)| p).collect()
}

/// One team state's recorded totals per rostered worker, if it recorded any.
pub fn per_worker(team_state: &Value, workers: usize) -> Option<PerWorker> {
    let totals = team_state.pointer("/usageSummary/totals")?;
    let count = |key: &str| totals.get(key).and_then(Value::as_u64).unwrap_or(0);
    let tokens = count("inputTokens")
        + count("cacheReadTokens")
        + count("cacheWriteTokens")
        + count("outputTokens");
    if tokens == 0 {
        return None;
    }
    #[expect(clippy::cast_precision_loss, reason = "token counts for an estimate")]
    let (tokens, workers) = (tokens as f64, workers.max(1) as f64);
    let partial = totals.get("costPartial").and_then(Value::as_bool) == Some(true);
    Some(PerWorker {
        tokens: tokens / workers,
        cost_usd: totals
            .get("costUsd")
            .and_then(Value::as_f64)
            .filter(|_| !partial)
            .map(|c| c / workers),
    })
}

/// The run's estimate: the kept one, else made now and kept.
pub fn ensure(run: &Run, prices: &Prices) -> Result<Estimate> {
    if let Some(kept) = read(run) {
        return Ok(kept);
    }
    let made = estimate(run, prices);
    let path = run.layout().estimate();
    let mut bytes = serde_json::to_vec_pretty(&made).context("cannot serialise the estimate")?;
    bytes.push(b'\n');
    crate::durable::write_atomic(&path, &bytes)
        .with_context(|| format!("cannot write `{}`", path.display()))?;
    Ok(made)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_earlier_runs_the_floor_is_the_estimate() {
        let e = combine(12_000, Some(0.06), &[], 3, "2026-11-30");
        assert_eq!(e.basis, Basis::Prompts);
        assert_eq!(
            e.tokens,
            Range {
                low: 12_000,
                high: 12_000
            }
        );
        assert_eq!(
            e.line(),
            "at least 12.0k tokens, at least $0.06 (the rendered prompts alone; no earlier run of this project to go by)"
        );
    }

    #[test]
    fn earlier_runs_give_the_range_per_worker_never_below_the_floor() {
        let earlier = [
            PerWorker {
                tokens: 10_000.0,
                cost_usd: Some(0.10),
            },
            PerWorker {
                tokens: 40_000.0,
                cost_usd: Some(0.50),
            },
        ];
        let e = combine(5_000, Some(0.01), &earlier, 3, "2026-11-30");
        assert_eq!(e.basis, Basis::EarlierRuns);
        assert_eq!(
            e.tokens,
            Range {
                low: 30_000,
                high: 120_000
            }
        );
        let cost = e.cost_usd.unwrap();
        assert!((cost.low - 0.30).abs() < 1e-9 && (cost.high - 1.50).abs() < 1e-9);
        assert_eq!(
            e.line(),
            "30.0k–120.0k tokens, $0.30–$1.50 (from 2 earlier runs of this project; the prompts alone are 5.0k)"
        );
        // A floor above the earlier runs lifts the low end.
        let e = combine(50_000, None, &earlier, 1, "d");
        assert_eq!(
            e.tokens,
            Range {
                low: 50_000,
                high: 50_000
            }
        );
        // One earlier run without a cost: no dollars at all.
        let unpriced = [PerWorker {
            tokens: 1.0,
            cost_usd: None,
        }];
        assert_eq!(combine(1, Some(1.0), &unpriced, 1, "d").cost_usd, None);
    }

    #[test]
    fn per_worker_reads_the_recorded_totals() {
        let state = serde_json::json!({"usageSummary": {"totals": {
            "inputTokens": 100, "cacheReadTokens": 50, "cacheWriteTokens": 0,
            "outputTokens": 50, "costUsd": 0.4}}});
        assert_eq!(
            per_worker(&state, 2),
            Some(PerWorker {
                tokens: 100.0,
                cost_usd: Some(0.2)
            })
        );
        assert_eq!(per_worker(&serde_json::json!({}), 2), None);
        let partial = serde_json::json!({"usageSummary": {"totals": {
            "inputTokens": 1, "outputTokens": 1, "costUsd": 0.4, "costPartial": true}}});
        assert_eq!(per_worker(&partial, 1).unwrap().cost_usd, None);
    }
}
