//! Unit tests of the ledger's pure parts (the whole of `okstra usage` is
//! tested through the binary in `tests/it/usage.rs`).

use serde_json::json;

use super::*;

#[test]
fn the_two_schemas_define_usage_once_and_alike() {
    // The current report schema: v2.0's differs only by the estimate (a
    // report test holds v2.1 to v2.0 plus its additions).
    let report: Value =
        serde_json::from_str(crate::schema::text("final-report-v2.1.schema.json").unwrap())
            .unwrap();
    let state: Value =
        serde_json::from_str(crate::schema::text("team-state.schema.json").unwrap()).unwrap();
    for def in [
        "TokenUsage",
        "UsageSummary",
        "WorkerId",
        "UsageEstimate",
        "EstimateRange",
    ] {
        assert_eq!(report["$defs"][def], state["$defs"][def], "{def}");
    }
}

#[test]
fn records_and_summaries_validate_against_the_report_schema() {
    let prices = Prices::embedded();
    let usage = Usage {
        provider: "codex".into(),
        source: Source::CliStream,
        reason: None,
        models: BTreeMap::from([(
            ModelKey::new("gpt-5"),
            Tokens {
                input: 5,
                output: 7,
                reasoning: Some(3),
                ..Tokens::default()
            },
        )]),
        cli_cost_usd: None,
    };
    let tally = Tally::from_usage(&usage, &prices);
    let lead = Tally::from_usage(&Usage::unavailable("claude", "none recorded"), &prices);
    let mut totals = tally.clone();
    totals.add(&lead);
    let summary = Summary {
        lead: lead.record(),
        workers: vec![WorkerLine {
            worker_id: "codex".into(),
            provider: "codex".into(),
            attempts: 1,
            usage: tally.record(),
        }],
        by_provider: BTreeMap::from([("codex".to_owned(), tally.record())]),
        totals: totals.record(),
        source: SummarySource::Partial,
        prices_as_of: prices.as_of.clone(),
        warnings: vec!["w".into()],
        estimate: Some(crate::estimate::combine(
            1200,
            None,
            &[crate::estimate::PerWorker {
                tokens: 900.0,
                cost_usd: Some(0.25),
            }],
            2,
            "2026-11-30",
        )),
    };
    let value = serde_json::to_value(&summary).unwrap();
    let schema: Value =
        serde_json::from_str(crate::schema::text("final-report-v2.1.schema.json").unwrap())
            .unwrap();
    let mut wrapped = schema.clone();
    wrapped["$ref"] = json!("#/$defs/UsageSummary");
    for key in [
        "type",
        "required",
        "properties",
        "additionalProperties",
        "allOf",
        "if",
        "then",
        "else",
    ] {
        wrapped.as_object_mut().unwrap().remove(key);
    }
    let validator = jsonschema::validator_for(&wrapped).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}\n{value:#}");
    assert_eq!(value["totals"]["source"], "partial");
    assert_eq!(value["workers"][0]["usage"]["reasoningTokens"], 3);
    assert_eq!(
        value["estimate"]["tokens"],
        json!({"low": 1800, "high": 1800})
    );
}

#[test]
fn host_reports_need_input_and_output() {
    let fields: BTreeMap<String, String> = [
        ("inputTokens", "100"),
        ("outputTokens", "20"),
        ("cacheReadTokens", "5000"),
        ("model", "gpt-6.2-sol"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let usage = host_usage(&fields, "codex");
    assert_eq!(usage.source, Source::HostReport);
    assert_eq!(usage.tokens().cache_read, 5_000);
    let mut partial = fields.clone();
    partial.remove("outputTokens");
    assert_eq!(host_usage(&partial, "codex").source, Source::Unavailable);
}

#[test]
fn lead_events_name_sessions_and_ignore_unsafe_ids() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lead-events.jsonl");
    std::fs::write(
        &path,
        concat!(
            r#"{"seq":1,"kind":"session","fields":{"sessionId":"s-1"}}"#,
            "\n",
            r#"{"seq":2,"kind":"session","fields":{"sessionId":"s-1"}}"#,
            "\n",
            r#"{"seq":3,"kind":"session","fields":{"sessionId":"a9","worker":"claude-worker"}}"#,
            "\n",
            r#"{"seq":4,"kind":"session","fields":{"sessionId":"../../etc/passwd"}}"#,
            "\n",
            "torn {\n",
            r#"{"seq":5,"kind":"lead-usage","fields":{"inputTokens":"1","outputTokens":"2"}}"#,
            "\n",
        ),
    )
    .unwrap();
    let events = read_events(&path);
    assert_eq!(events.lead_sessions, vec!["s-1".to_owned()]);
    assert_eq!(
        events.worker_sessions,
        vec![("claude-worker".to_owned(), "a9".to_owned())]
    );
    assert_eq!(events.ignored.len(), 1);
    assert!(events.host_report.is_some());
    assert!(
        read_events(&dir.path().join("none"))
            .lead_sessions
            .is_empty()
    );
}
