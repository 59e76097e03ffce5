//! Unit tests of priced sums and the wire record.

use std::collections::BTreeMap;

use super::*;
use crate::usage::ModelKey;

fn usage(model: &str, input: u64, output: u64, cost: Option<f64>) -> Usage {
    Usage {
        provider: "claude".into(),
        source: Source::CliStream,
        reason: None,
        models: BTreeMap::from([(
            ModelKey::new(model),
            Tokens {
                input,
                output,
                ..Tokens::default()
            },
        )]),
        cli_cost_usd: cost,
    }
}

#[test]
fn sums_keep_sources_costs_and_unknowns_apart() {
    let prices = Prices::embedded();
    let mut sum = Tally::default();
    assert_eq!(sum.record().source, Source::Unavailable);
    sum.add(&Tally::from_usage(
        &usage("opus", 1_000_000, 0, None),
        &prices,
    ));
    assert_eq!(sum.record().cost_usd, Some(5.0));
    assert_eq!(sum.record().source, Source::CliStream);
    sum.add(&Tally::from_usage(
        &usage("x", 10, 10, Some(0.125)),
        &prices,
    ));
    let record = sum.record();
    assert_eq!(record.cost_usd, Some(5.125));
    assert_eq!(record.cost_source, Some(CostSource::Mixed));
    assert!(!record.cost_partial);
    assert_eq!(record.model.as_deref(), Some("opus, x"));
    sum.add(&Tally::from_usage(&usage("kimi-k3", 5, 5, None), &prices));
    let record = sum.record();
    assert_eq!((record.cost_usd, record.cost_partial), (Some(5.125), true));
    assert_eq!(record.input_tokens, Some(1_000_015));
    sum.add(&Tally::from_usage(
        &Usage::unavailable("kimi", "no usage"),
        &prices,
    ));
    let record = sum.record();
    assert_eq!(record.source, Source::Partial);
    assert_eq!(record.reason.as_deref(), Some("no usage"));
    assert_eq!(record.provider, None);
}

#[test]
fn unavailable_records_have_null_numbers_on_the_wire() {
    let record = Tally::from_usage(
        &Usage::unavailable("kimi", "prints none"),
        &Prices::embedded(),
    )
    .record();
    let wire = serde_json::to_value(&record).unwrap();
    assert_eq!(
        wire,
        serde_json::json!({"source": "unavailable", "provider": "kimi", "model": null,
            "inputTokens": null, "cacheReadTokens": null, "cacheWriteTokens": null,
            "outputTokens": null, "reasoningTokens": null, "costUsd": null, "reason": "prints none"})
    );
    assert_eq!(record.short(), "unavailable");
    let back: Record = serde_json::from_value(wire).unwrap();
    assert_eq!(back, record);
}

#[test]
fn records_round_trip_through_tallies() {
    let prices = Prices::embedded();
    let record = Tally::from_usage(&usage("sonnet", 2_000, 300, None), &prices).record();
    assert_eq!(record.cost_usd, Some(0.007));
    assert_eq!(record.to_tally().record(), record);
    assert_eq!(record.short(), "in 2.0k · out 300 · $0.0070");
    assert_eq!(to_micros(f64::NAN), 0);
    assert_eq!(to_micros(-1.0), 0);
}

#[test]
fn mixed_sources_are_mixed_and_partial_parts_stay_partial() {
    let mut a = Tally::default();
    a.sources.insert(Source::CliStream);
    a.sources.insert(Source::ClaudeJsonl);
    assert_eq!(a.source(), Source::Mixed);
    a.sources.insert(Source::Partial);
    assert_eq!(a.source(), Source::Partial);
}

#[test]
fn a_record_with_tokens_and_no_cost_is_unpriced() {
    let record = |cost_usd: Option<f64>, cost_partial: bool, tokens: Option<u64>| Record {
        source: crate::usage::Source::CliStream,
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
    assert_eq!(record(None, false, Some(5)).cost().to_string(), "unpriced");
    assert_eq!(
        record(Some(0.2), false, Some(5)).cost().to_string(),
        "$0.20"
    );
    assert_eq!(
        record(Some(0.2), true, Some(5)).cost().to_string(),
        "≥ $0.20 + unpriced"
    );
    // Only the model the table does not know is named.
    let prices = Prices::embedded();
    assert_eq!(
        unpriced_models(&[record(Some(0.2), true, Some(5))], &prices),
        ["gpt-5.6-sol"]
    );
    assert!(unpriced_models(&[record(Some(0.2), false, Some(5))], &prices).is_empty());
    let hint = crate::usage::price_hint(&["gpt-5.6-sol".to_owned()], "2026-11-30");
    assert!(
        hint.contains("`gpt-5.6-sol`") && hint.contains("`OKSTRA_PRICES`"),
        "{hint}"
    );
}
