//! How a cost reads, wherever okstra shows one (the closing summary of
//! `okstra run`, `okstra usage`, the report's usage table, the pull-request
//! review, the budget stop), and the one hint that says how to give a model
//! a price.
//!
//! Tokens with no price are never worth `$0.00`: a cost with no priced part
//! reads `unpriced`, one with a priced part and an unpriced rest reads
//! `≥ $X + unpriced` (a floor), and a cent that was spent is never rounded
//! away (`$0.0042`).

use std::collections::BTreeSet;
use std::fmt;

use super::price::Prices;
use super::tally::Record;

/// A cost as known: the dollars of the priced part, and whether some
/// tokens (or some parts' usage) have no price.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cost {
    /// The priced part; `None` when no token was priced.
    pub priced_usd: Option<f64>,
    /// Some tokens have no price, or some part reported no usage at all.
    pub unpriced: bool,
}

impl Cost {
    pub fn new(priced_usd: Option<f64>, unpriced: bool) -> Cost {
        Cost {
            priced_usd,
            unpriced,
        }
    }

    /// A usage record's cost: its tokens with no cost at all are unpriced.
    pub fn of(record: &Record) -> Cost {
        let read = record.input_tokens.is_some() || record.output_tokens.is_some();
        Cost {
            priced_usd: record.cost_usd,
            unpriced: record.cost_partial || (read && record.cost_usd.is_none()),
        }
    }
}

impl fmt::Display for Cost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.priced_usd, self.unpriced) {
            (Some(cost), true) if cost > 0.0 => write!(f, "≥ {} + unpriced", dollars(cost)),
            (_, true) => f.write_str("unpriced"),
            (cost, false) => f.write_str(&dollars(cost.unwrap_or(0.0))),
        }
    }
}

/// Dollars as okstra shows them: `$1.23`, or four decimals below a cent
/// (`$0.0042`) so a cheap run does not read as free.
pub fn dollars(cost: f64) -> String {
    if cost > 0.0 && cost < 0.01 {
        format!("${cost:.4}")
    } else {
        format!("${cost:.2}")
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
        if !Cost::of(record).unpriced || record.input_tokens.is_none() {
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

/// The one hint for `models` with no price: how to give them one (the
/// file's shape included, so it needs no page to follow).
pub fn price_hint(models: &[String], prices_as_of: &str) -> String {
    let named: Vec<String> = models.iter().map(|m| format!("`{m}`")).collect();
    let first = models.first().map_or("<model>", String::as_str);
    format!(
        "okstra's price table ({prices_as_of}) has no price for {}; to give one, point `OKSTRA_PRICES` at a JSON file such as `{{\"models\": {{\"{first}\": {{\"input\": …, \"cacheRead\": …, \"output\": …}}}}}}` (USD per million tokens)",
        named.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unpriced_tokens_never_read_as_zero_dollars() {
        let cases = [
            (Cost::new(Some(1.234), false), "$1.23"),
            (Cost::new(Some(0.0042), false), "$0.0042"),
            (Cost::new(Some(0.0), false), "$0.00"),
            (Cost::new(None, false), "$0.00"),
            (Cost::new(None, true), "unpriced"),
            (Cost::new(Some(0.0), true), "unpriced"),
            (Cost::new(Some(0.5), true), "≥ $0.50 + unpriced"),
            (Cost::new(Some(0.0012), true), "≥ $0.0012 + unpriced"),
        ];
        for (cost, expected) in cases {
            assert_eq!(cost.to_string(), expected, "{cost:?}");
        }
    }

    #[test]
    fn a_record_with_tokens_and_no_cost_is_unpriced() {
        let record = |cost_usd: Option<f64>, cost_partial: bool, tokens: Option<u64>| Record {
            source: super::super::Source::CliStream,
            provider: None,
            model: Some("gpt-5.6-sol, claude-opus-4-8".into()),
            input_tokens: tokens,
            cache_read_tokens: None,
            cache_write_tokens: None,
            output_tokens: tokens,
            reasoning_tokens: None,
            cost_usd,
            cost_source: None,
            cost_partial,
            reason: None,
        };
        assert_eq!(
            Cost::of(&record(None, false, Some(5))).to_string(),
            "unpriced"
        );
        assert_eq!(
            Cost::of(&record(Some(0.2), false, Some(5))).to_string(),
            "$0.20"
        );
        assert_eq!(
            Cost::of(&record(Some(0.2), true, Some(5))).to_string(),
            "≥ $0.20 + unpriced"
        );
        // Only the model the table does not know is named.
        let prices = Prices::embedded();
        assert_eq!(
            unpriced_models(&[record(Some(0.2), true, Some(5))], &prices),
            ["gpt-5.6-sol"]
        );
        assert!(unpriced_models(&[record(Some(0.2), false, Some(5))], &prices).is_empty());
        let hint = price_hint(&["gpt-5.6-sol".to_owned()], "2026-11-30");
        assert!(
            hint.contains("`gpt-5.6-sol`") && hint.contains("`OKSTRA_PRICES`"),
            "{hint}"
        );
    }
}
