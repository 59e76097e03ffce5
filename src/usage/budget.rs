//! The budget stop: has a run's recorded spend reached its budget?
//!
//! Pure: [`recorded_totals`] reads the usage already written into the team
//! state (each dispatch's `usage` and `leadUsage`, as `okstra usage` and the
//! dispatch engine record them), and [`Budget::is_spent`] compares. Tokens
//! count input, cache reads, cache writes and output (reasoning is inside
//! output). A cost that is only partly known counts what is known: a budget
//! never stops on a guess, and the reason says when the figure is a floor.

use serde_json::Value;

use super::Source;
use super::cost::Cost;
use super::tally::{Record, Tally, to_micros};

/// Limits given as `--max-cost <usd>` and `--max-tokens <n>`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Budget {
    pub max_cost_usd: Option<f64>,
    pub max_tokens: Option<u64>,
}

/// A run's recorded spend.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Totals {
    /// Billed tokens of every record with numbers.
    pub tokens: u64,
    /// Known cost in dollars (microdollar-exact).
    pub cost_usd: f64,
    /// Some tokens have no cost (unknown model), or some records no numbers.
    pub cost_partial: bool,
    /// Records whose usage is unavailable.
    pub unavailable: usize,
}

impl Totals {
    /// The recorded cost as okstra shows it (`$1.20`, `≥ $1.20 + unpriced`,
    /// `unpriced`).
    pub fn cost(&self) -> Cost {
        Cost::new(Some(self.cost_usd), self.cost_partial)
    }
}

impl Budget {
    /// `Some(why)` once `totals` reached a limit; `None` while under it.
    pub fn is_spent(&self, totals: &Totals) -> Option<String> {
        if let Some(max) = self.max_tokens
            && totals.tokens >= max
        {
            return Some(format!(
                "recorded tokens {} reached --max-tokens {max}",
                totals.tokens
            ));
        }
        if let Some(max) = self.max_cost_usd
            && to_micros(totals.cost_usd) >= to_micros(max)
        {
            // The limit as given, four decimals below a cent as every
            // amount okstra shows: `--max-cost 0.0005`, never `0.00`.
            return Some(format!(
                "recorded cost {} reached --max-cost {}",
                totals.cost(),
                super::cost::dollars(max).trim_start_matches('$')
            ));
        }
        None
    }
}

/// The spend recorded in a team state: every `dispatches[].usage` plus
/// `leadUsage`; when no dispatch has usage, every `workers.*.usage` instead
/// (a run whose lead dispatched by hand).
pub fn recorded_totals(team_state: &Value) -> Totals {
    let parts = recorded_parts(team_state);
    let mut sum = Tally::default();
    let mut unavailable = 0;
    // A part no model did (a headless run's lead) spent nothing and is not
    // a gap in what is known.
    for record in parts.iter().filter(|r| r.source != Source::NotApplicable) {
        if record.input_tokens.is_none() {
            unavailable += 1;
        }
        sum.add(&record.to_tally());
    }
    let cost = sum.record();
    Totals {
        tokens: sum.tokens.map_or(0, |t| t.total()),
        cost_usd: cost.cost_usd.unwrap_or(0.0),
        cost_partial: sum.cost_partial || unavailable > 0,
        unavailable,
    }
}

/// The usage records [`recorded_totals`] adds up: every `dispatches[].usage`
/// (or, when none has one, every `workers.*.usage`) and `leadUsage`.
pub fn recorded_parts(team_state: &Value) -> Vec<Record> {
    let records = |items: Vec<&Value>| -> Vec<Record> {
        items
            .into_iter()
            .filter(|v| !v.is_null())
            .filter_map(|v| serde_json::from_value::<Record>(v.clone()).ok())
            .collect()
    };
    let dispatches: Vec<&Value> = team_state
        .get("dispatches")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(|d| d.get("usage")).collect())
        .unwrap_or_default();
    let mut parts = records(dispatches);
    if parts.is_empty() {
        let workers: Vec<&Value> = team_state
            .get("workers")
            .and_then(Value::as_object)
            .map(|map| map.values().filter_map(|w| w.get("usage")).collect())
            .unwrap_or_default();
        parts = records(workers);
    }
    parts.extend(records(team_state.get("leadUsage").into_iter().collect()));
    parts
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn usage(input: u64, output: u64, cost: Option<f64>) -> Value {
        json!({"source": "cli-stream", "inputTokens": input, "cacheReadTokens": 1000,
               "cacheWriteTokens": 0, "outputTokens": output, "reasoningTokens": null,
               "costUsd": cost})
    }

    #[test]
    fn totals_add_dispatches_and_the_lead_and_flag_unknowns() {
        let state = json!({
            "dispatches": [
                {"dispatchName": "a", "usage": usage(100, 10, Some(0.25))},
                {"dispatchName": "b", "usage": usage(200, 20, Some(0.5))},
                {"dispatchName": "c", "usage": null},
                {"dispatchName": "d", "usage": {"source": "unavailable", "inputTokens": null,
                                                "outputTokens": null, "reason": "no log"}},
            ],
            "workers": {"w": {"usage": usage(9_999, 9_999, Some(99.0))}},
            "leadUsage": usage(1_000, 100, None),
        });
        let totals = recorded_totals(&state);
        assert_eq!(totals.tokens, 100 + 10 + 200 + 20 + 1_000 + 100 + 3 * 1000);
        assert!((totals.cost_usd - 0.75).abs() < 1e-9);
        assert!(totals.cost_partial);
        assert_eq!(totals.unavailable, 1);
    }

    #[test]
    fn without_dispatch_usage_the_workers_count() {
        let state = json!({"dispatches": [], "workers": {"w": {"usage": usage(1, 2, Some(0.1))}},
                           "leadUsage": null});
        let totals = recorded_totals(&state);
        assert_eq!((totals.tokens, totals.cost_partial), (1003, false));
        assert_eq!(recorded_totals(&json!({})), Totals::default());
    }

    #[test]
    fn a_lead_no_model_played_is_no_gap() {
        let state = json!({"dispatches": [{"dispatchName": "a", "usage": usage(1, 2, Some(0.1))}],
                           "leadUsage": {"source": "not-applicable", "inputTokens": null,
                                         "outputTokens": null, "reason": "okstra led"}});
        let totals = recorded_totals(&state);
        assert_eq!((totals.tokens, totals.cost_partial), (1003, false));
        assert_eq!(totals.unavailable, 0);
    }

    #[test]
    fn a_budget_is_spent_at_its_limit_not_before() {
        let totals = Totals {
            tokens: 5_000,
            cost_usd: 1.999_999,
            cost_partial: false,
            unavailable: 0,
        };
        let none = Budget::default();
        assert_eq!(none.is_spent(&totals), None);
        let tokens = Budget {
            max_tokens: Some(5_000),
            ..Budget::default()
        };
        assert_eq!(
            tokens.is_spent(&totals).as_deref(),
            Some("recorded tokens 5000 reached --max-tokens 5000")
        );
        assert_eq!(
            Budget {
                max_tokens: Some(5_001),
                ..Budget::default()
            }
            .is_spent(&totals),
            None
        );
        let cost = Budget {
            max_cost_usd: Some(2.0),
            ..Budget::default()
        };
        assert_eq!(cost.is_spent(&totals), None);
        let spent = Totals {
            cost_usd: 2.0,
            cost_partial: true,
            ..totals
        };
        assert_eq!(
            cost.is_spent(&spent).as_deref(),
            Some("recorded cost ≥ $2.00 + unpriced reached --max-cost 2.00")
        );
        // A limit below a cent is said as given, not rounded to nothing.
        let tiny = Budget {
            max_cost_usd: Some(0.0005),
            ..Budget::default()
        };
        let cent = Totals {
            cost_usd: 0.001,
            cost_partial: false,
            ..totals
        };
        assert_eq!(
            tiny.is_spent(&cent).as_deref(),
            Some("recorded cost $0.0010 reached --max-cost 0.0005")
        );
    }
}
