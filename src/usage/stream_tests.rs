//! Unit tests of the stream parsers, on the fixtures in `tests/fixtures/usage/`.

use std::path::PathBuf;

use super::*;
use crate::usage::price::Prices;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/usage")
        .join(name)
}

fn tokens(
    input: u64,
    cache_read: u64,
    cache_write: u64,
    output: u64,
    reasoning: Option<u64>,
) -> Tokens {
    Tokens {
        input,
        cache_read,
        cache_write,
        cache_write_1h: 0,
        output,
        reasoning,
    }
}

fn models(list: &[(&str, Tokens)]) -> BTreeMap<ModelKey, Tokens> {
    list.iter()
        .map(|(id, t)| (ModelKey::new(*id), *t))
        .collect()
}

#[test]
fn claude_result_line_is_authoritative_per_model_with_the_cli_cost() {
    let usage = from_log(
        Provider::Claude,
        Some("opus"),
        &fixture("claude-stream.jsonl"),
    );
    assert_eq!(usage.source, Source::CliStream);
    assert_eq!(
        usage.models,
        models(&[
            (
                "claude-opus-4-8[1m]",
                tokens(15, 46_559, 2_695, 2_090, None)
            ),
            ("claude-haiku-4-5-20251001", tokens(812, 0, 0, 45, None)),
        ])
    );
    assert_eq!(usage.cli_cost_usd, Some(0.138_746));
    let record = usage.priced(&Prices::embedded());
    assert_eq!(record.cost_usd, Some(0.138_746));
    assert_eq!(record.cost_source, Some(crate::usage::CostSource::Cli));
    assert_eq!(
        (
            record.input_tokens,
            record.cache_read_tokens,
            record.cache_write_tokens,
            record.output_tokens
        ),
        (Some(827), Some(46_559), Some(2_695), Some(2_135))
    );
}

#[test]
fn claude_live_meter_dedupes_assistant_messages_until_the_result() {
    let text = std::fs::read_to_string(fixture("claude-stream.jsonl")).unwrap();
    let mut meter = Meter::new(Provider::Claude);
    assert_eq!(meter.snapshot().source, Source::Unavailable);
    for line in text.lines().filter(|l| !l.contains("\"type\":\"result\"")) {
        meter.feed_line(line.as_bytes());
    }
    // No final line yet (or ever, for an attempt stopped now): a lower
    // bound, said so.
    let live = meter.snapshot();
    assert_eq!(live.source, Source::Partial);
    assert!(live.reason.is_some());
    let mut expected = tokens(15, 46_559, 2_695, 2_090, None);
    expected.cache_write_1h = 2_285;
    assert_eq!(
        live.models,
        BTreeMap::from([(ModelKey::new("claude-opus-4-8"), expected)])
    );
    assert_eq!(live.cli_cost_usd, None);
    let result = text
        .lines()
        .find(|l| l.contains("\"type\":\"result\""))
        .unwrap();
    meter.feed_line(format!("{result}\n").as_bytes());
    assert_eq!(meter.snapshot().cli_cost_usd, Some(0.138_746));
    assert_eq!(meter.snapshot().source, Source::CliStream);
}

#[test]
fn claude_without_a_result_sums_the_last_copy_of_each_message() {
    let usage = from_log(
        Provider::Claude,
        None,
        &fixture("claude-stream-crashed.jsonl"),
    );
    assert_eq!(
        usage.models,
        models(&[("claude-sonnet-4-6", tokens(10, 1_000, 1_000, 135, None))])
    );
    // 10 × $3 + 1000 × $0.30 + 1000 × $3.75 + 135 × $15 per million.
    assert_eq!(usage.priced(&Prices::embedded()).cost_usd, Some(0.006_105));
}

#[test]
fn claude_offline_run_reports_true_zeros_not_unavailable() {
    let usage = from_log(
        Provider::Claude,
        None,
        &fixture("claude-stream-offline.jsonl"),
    );
    assert_eq!(usage.source, Source::CliStream);
    assert_eq!(usage.tokens().total(), 0);
    assert_eq!(usage.priced(&Prices::embedded()).cost_usd, Some(0.0));
}

#[test]
fn codex_takes_the_latest_cumulative_snapshot_and_removes_cached_input() {
    let usage = from_log(Provider::Codex, Some("gpt-5"), &fixture("codex.jsonl"));
    assert_eq!(
        usage.models,
        models(&[("gpt-5", tokens(12_354, 48_896, 0, 1_544, Some(1_024)))])
    );
    // 12354 × 1.25 + 48896 × 0.125 + 1544 × 10 = 36994.5 per million.
    let record = usage.priced(&Prices::embedded());
    assert_eq!(record.cost_usd, Some(0.036_995));
    assert_eq!(record.reasoning_tokens, Some(1_024));
}

#[test]
fn codex_default_model_has_tokens_but_no_invented_price() {
    let usage = from_log(
        Provider::Codex,
        Some("gpt-5.6-sol"),
        &fixture("codex.jsonl"),
    );
    let record = usage.priced(&Prices::embedded());
    assert_eq!(record.input_tokens, Some(12_354));
    assert_eq!(record.cost_usd, None);
    assert!(record.cost_partial);
    let tally = crate::usage::tally::Tally::from_usage(&usage, &Prices::embedded());
    assert!(
        tally.warnings[0].contains("`gpt-5.6-sol`"),
        "{:?}",
        tally.warnings
    );
}

#[test]
fn codex_cache_writes_come_out_of_input() {
    let mut meter = Meter::new(Provider::Codex).with_model(Some("gpt-6.2-sol"));
    meter.feed_line(br#"{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":600,"cache_write_input_tokens":300,"output_tokens":5}}"#);
    assert_eq!(meter.snapshot().tokens(), tokens(100, 600, 300, 5, None));
}

#[test]
fn gemini_stats_per_model_fold_thinking_into_output() {
    let usage = from_log(Provider::Antigravity, None, &fixture("gemini.jsonl"));
    assert_eq!(
        usage.models,
        models(&[
            (
                "gemini-3.1-pro-preview",
                tokens(21_000, 30_000, 0, 4_000, Some(2_700))
            ),
            ("gemini-3.5-flash-lite", tokens(1_000, 0, 0, 200, Some(100))),
        ])
    );
    // The pro model is priced ($0.096); the flash-lite one is not known.
    let record = usage.priced(&Prices::embedded());
    assert_eq!(record.cost_usd, Some(0.096));
    assert!(record.cost_partial);
}

#[test]
fn antigravity_result_is_used_and_step_updates_are_not_added() {
    let usage = from_log(
        Provider::Antigravity,
        Some("gemini-3.1-pro"),
        &fixture("antigravity.jsonl"),
    );
    assert_eq!(
        usage.models,
        models(&[("gemini-3.1-pro", tokens(278, 30_214, 0, 4, None))])
    );
    assert_eq!(usage.priced(&Prices::embedded()).cost_usd, Some(0.006_647));
}

#[test]
fn grok_build_end_line_replaces_the_per_response_lines() {
    let text = std::fs::read_to_string(fixture("grok-build.jsonl")).unwrap();
    let mut meter = Meter::new(Provider::Grok).with_model(Some("grok-build-0.1"));
    for line in text.lines().filter(|l| !l.contains("\"type\":\"end\"")) {
        meter.feed_line(line.as_bytes());
    }
    let live = meter.snapshot();
    assert_eq!(live.tokens(), tokens(7_210, 41_000, 0, 1_893, Some(412)));
    assert_eq!(live.cli_cost_usd, None);
    let usage = from_log(
        Provider::Grok,
        Some("grok-build-0.1"),
        &fixture("grok-build.jsonl"),
    );
    assert_eq!(
        usage.models,
        models(&[("grok-build", tokens(7_210, 41_000, 0, 1_893, Some(412)))])
    );
    assert_eq!(usage.priced(&Prices::embedded()).cost_usd, Some(0.012_689));
}

#[test]
fn grok_all_zero_end_is_unknown_not_zero() {
    let mut meter = Meter::new(Provider::Grok);
    meter.feed_line(
        br#"{"type":"end","stopReason":"end_turn","usage":{"input_tokens":0,"output_tokens":0}}"#,
    );
    let usage = meter.snapshot();
    assert_eq!(usage.source, Source::Unavailable);
    assert!(usage.reason.unwrap().contains("all-zero"));
}

#[test]
fn clis_that_print_no_usage_are_unavailable_with_a_reason() {
    let vibe = from_log(
        Provider::Grok,
        Some("grok-4.5"),
        &fixture("grok-vibe.jsonl"),
    );
    assert_eq!(vibe.source, Source::Unavailable);
    assert!(vibe.reason.as_deref().unwrap().contains("vibe-kit"));
    let record = vibe.priced(&Prices::embedded());
    assert_eq!((record.input_tokens, record.cost_usd), (None, None));
    let text = std::fs::read_to_string(fixture("kimi.jsonl")).unwrap();
    let mut meter = Meter::new(Provider::Kimi);
    for line in text.lines() {
        meter.feed_line(line.as_bytes());
    }
    assert_eq!(meter.logged_session(), Some("k-7f3a"));
    assert_eq!(meter.snapshot().source, Source::Unavailable);
    let missing = from_log(Provider::Codex, None, &fixture("no-such.log"));
    assert!(missing.reason.unwrap().contains("does not exist"));
    let folder = from_log(Provider::Codex, None, &fixture(""));
    assert_eq!(folder.source, Source::Unavailable);
}

#[test]
fn garbage_lines_are_ignored() {
    let mut meter = Meter::new(Provider::Codex);
    for line in [
        &b"\xff\xfe"[..],
        b"{",
        b"[1,2]",
        b"{\"type\":7}",
        b"   ",
        b"{\"type\":\"turn.completed\",\"usage\":\"x\"}",
    ] {
        meter.feed_line(line);
    }
    assert_eq!(meter.snapshot().source, Source::Unavailable);
}
