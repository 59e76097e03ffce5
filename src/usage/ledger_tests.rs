//! Unit tests of the ledger's pure parts (the whole of `okstra usage` is
//! tested through the binary in `tests/it/usage.rs`).

use std::path::Path;

use serde_json::json;

use super::*;

#[test]
fn the_two_schemas_define_usage_once_and_alike() {
    // The current report schema: v2.0's differs only by the estimate (a
    // report test holds v2.1 to v2.0 plus its additions).
    let report: Value =
        serde_json::from_str(crate::schema::text(crate::report::CURRENT.1).unwrap()).unwrap();
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

/// A run of `workers` (claude, codex, report-writer) led by `runtime`, in a
/// folder that does not exist: nothing is read from it.
fn run_of(runtime: &str) -> RunInfo {
    let assignment = |id: &str, role: &str, provider: &str, name: &str| {
        json!({"workerId": id, "role": role, "provider": provider, "dispatchName": name,
               "modelExecutionValue": "m", "wrapper": null})
    };
    let manifest = json!({
        "runId": "r-001", "taskKey": "p/g/t", "taskType": "project-analysis",
        "runDir": "/nowhere/run", "leadRuntime": runtime,
        "assignments": [
            assignment("claude", "analyser", "claude", "claude-worker"),
            assignment("codex", "analyser", "codex", "codex-worker"),
            assignment("report-writer", "report-writer", "claude", "report-writer"),
        ],
    });
    let run = Run::parse(Path::new("/nowhere/run"), manifest.to_string().as_bytes()).unwrap();
    RunInfo {
        project_root: run.project_root.clone(),
        lead_runtime: Some(run.lead_runtime.as_str().to_owned()),
        run,
    }
}

/// One attempt's record with `usage` recorded (no log: the record is kept).
fn dispatch(name: &str, worker: &str, provider: &str, attempt: u32, usage: &Value) -> Value {
    json!({"dispatchName": name, "dispatchKind": "initial", "attempt": attempt,
           "workerId": worker, "provider": provider, "usage": usage})
}

fn priced(provider: &str, input: u64, output: u64, cost: f64) -> Value {
    json!({"source": "cli-stream", "provider": provider, "model": "m", "inputTokens": input,
           "cacheReadTokens": 0, "cacheWriteTokens": 0, "outputTokens": output,
           "reasoningTokens": null, "costUsd": cost, "costSource": "price-table"})
}

/// What `okstra usage` computes and records, and the summary the records
/// give afterwards (what the report is written from and checked against),
/// are one and the same.
#[test]
fn the_records_give_back_the_summary_that_was_recorded() {
    for runtime in ["external", "claude-code"] {
        let info = run_of(runtime);
        let mut state = json!({"dispatches": [
            dispatch("claude-worker", "claude", "claude", 1, &priced("claude", 100, 20, 0.0123)),
            dispatch("codex-worker", "codex", "codex", 1, &json!(null)),
            dispatch("codex-worker", "codex", "codex", 2, &priced("codex", 90, 30, 0.002)),
            dispatch("report-writer", "report-writer", "claude", 1, &priced("claude", 7, 3, 0.0001)),
        ]});
        let env = |_: &str| None;
        let computed = compute(&info, &state, &Prices::embedded(), &env);
        apply(&mut state, &computed).unwrap();
        assert_eq!(
            serde_json::to_value(from_records(&info.run, &state)).unwrap(),
            serde_json::to_value(&computed.summary).unwrap(),
            "{runtime}"
        );
        let summary = &computed.summary;
        // Every attempt counted, the report writer's too; the totals are
        // their sum (the attempt whose usage was never read is unavailable).
        let writer = summary
            .workers
            .iter()
            .find(|w| w.worker_id == "report-writer")
            .unwrap();
        assert_eq!(writer.usage.input_tokens, Some(7));
        assert_eq!(summary.totals.input_tokens, Some(100 + 90 + 7), "{runtime}");
        if runtime == "external" {
            // No lead model: not applicable, and nothing is missing but
            // codex's first attempt.
            assert_eq!(summary.lead.source, Source::NotApplicable);
            assert_eq!(summary.lead.input_tokens, None);
            assert_eq!(summary.source, SummarySource::Partial);
        } else {
            assert_eq!(summary.lead.source, Source::Unavailable);
            assert_eq!(summary.source, SummarySource::Partial);
        }
    }
}

#[test]
fn a_run_with_every_part_read_and_no_lead_model_is_complete() {
    let info = run_of("external");
    let state = json!({"dispatches": [
        dispatch("claude-worker", "claude", "claude", 1, &priced("claude", 100, 20, 0.01)),
        dispatch("codex-worker", "codex", "codex", 1, &priced("codex", 90, 30, 0.02)),
        dispatch("report-writer", "report-writer", "claude", 1, &priced("claude", 7, 3, 0.001)),
    ]});
    let summary = from_records(&info.run, &state);
    assert_eq!(summary.source, SummarySource::Complete);
    assert_eq!(summary.totals.source, Source::CliStream);
    assert_eq!(summary.totals.input_tokens, Some(197));
    assert!(!summary.by_provider.contains_key("lead"));
    assert_eq!(
        serde_json::to_value(summary.source).unwrap(),
        json!("complete")
    );
    // A lead that reported its usage counts again.
    let info = run_of("codex");
    let mut state = state;
    state["leadUsage"] = priced("codex", 1000, 10, 0.5);
    let summary = from_records(&info.run, &state);
    assert_eq!(summary.totals.input_tokens, Some(1197));
    assert_eq!(summary.by_provider["codex"].input_tokens, Some(1090));
}
