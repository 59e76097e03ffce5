//! How a cost reads, wherever okstra shows one (the closing summary of
//! `okstra run`, `okstra usage`, the report's usage table, the pull-request
//! review, the budget stop), and the one hint that says how to give a model
//! a price.
//!
//! Tokens with no price are never worth `$0.00`: a cost with no priced part
//! reads `unpriced`, one with a priced part and an unpriced rest reads
//! `≥ $X + unpriced` (a floor), and a cent that was spent is never rounded
//! away (`$0.0042`).

use std::fmt;

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
}
