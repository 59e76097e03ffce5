//! Convergence: `okstra converge record` and `classify` — verdict tables,
//! bad rows, idempotence, failed reviewers and substitutes, and a
//! hand-written ledger recomputed.

use super::*;

/// The label a reviewer got for `item`.
fn label_of(plan: &Value, worker: &str, item: &str) -> String {
    reviewer(plan, worker)["labels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["itemId"] == item)
        .unwrap()["label"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn record_reads_tables_reports_bad_rows_and_is_idempotent() {
    let run = RunDir::render("claude,codex,kimi,report-writer");
    run.result("claude", &findings("claude", 2));
    run.result("codex", &findings("codex", 1));
    run.result(
        "kimi",
        "# kimi\n\n## 1. Findings\n\n- [K-1] kimi's only finding (src/k.rs:3)\n",
    );
    let plan = run.plan(1, &[]);
    let label = |worker: &str, item: &str| label_of(&plan, worker, item);
    let path = |worker: &str| reviewer(&plan, worker)["resultPath"].clone();

    // claude: agrees with codex:F-1, disagrees with kimi:K-1.
    write_verdicts(
        &path("claude"),
        &[
            (
                &label("claude", "codex:F-1"),
                "AGREE",
                "src/a.rs:1 shows it",
                "",
            ),
            (
                &label("claude", "kimi:K-1"),
                "DISAGREE",
                "`grep -n total src/k.rs` \"3: total = 0\"",
                "",
            ),
        ],
    );
    // codex: a malformed verdict for claude:F-1, claude:F-2 twice, nothing
    // for kimi:K-1.
    write_verdicts(
        &path("codex"),
        &[
            (&label("codex", "claude:F-1"), "PROBABLY", "src/a.rs:1", ""),
            (&label("codex", "claude:F-2"), "AGREE", "src/a.rs:2", ""),
            (&label("codex", "claude:F-2"), "AGREE", "src/a.rs:2", ""),
        ],
    );
    // kimi answers everything, one SUPPLEMENT without evidence (adversarial
    // mode: not counted).
    write_verdicts(
        &path("kimi"),
        &[
            (
                &label("kimi", "claude:F-1"),
                "AGREE",
                "src/a.rs:1 loops",
                "",
            ),
            (
                &label("kimi", "claude:F-2"),
                "SUPPLEMENT",
                "seems so",
                "also on refunds",
            ),
            (
                &label("kimi", "codex:F-1"),
                "AGREE",
                "`cargo test codex` passes",
                "",
            ),
        ],
    );
    let outcome = run.record(1);
    let problems: Vec<(String, Value)> = outcome["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["label"].as_str().unwrap().to_owned(), p["line"].clone()))
        .collect();
    let malformed = label("codex", "claude:F-1");
    let twice = label("codex", "claude:F-2");
    let missing = label("codex", "kimi:K-1");
    assert!(problems.contains(&(malformed, json!(5))), "{problems:?}");
    assert!(problems.contains(&(twice, json!(7))), "{problems:?}");
    assert!(problems.contains(&(missing, Value::Null)), "{problems:?}");
    assert_eq!(problems.len(), 3, "{problems:?}");

    let ledger = run.ledger();
    // kimi:K-1: one counted DISAGREE (claude), codex gave no answer: open.
    assert_eq!(item(&ledger, "kimi:K-1")["finalClass"], "contested");
    assert_eq!(item(&ledger, "kimi:K-1")["open"], true);
    // codex:F-1: two checked AGREEs: closed.
    assert_eq!(item(&ledger, "codex:F-1")["finalClass"], "full-consensus");
    assert_eq!(item(&ledger, "codex:F-1")["open"], false);
    // claude:F-2: codex answered twice (no answer), kimi's SUPPLEMENT cites
    // nothing: no counted verdict, and open because codex gave no answer.
    assert_eq!(item(&ledger, "claude:F-2")["finalClass"], "worker-unique");
    assert_eq!(item(&ledger, "claude:F-2")["open"], true);
    let mut open: Vec<&str> = outcome["open"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    open.sort_unstable();
    assert_eq!(open, ["claude:F-1", "claude:F-2", "kimi:K-1"]);
    assert_eq!(outcome["stoppedBecause"], Value::Null);

    // Recording the same round again changes nothing.
    let before = fs::read(run.dir.join("state/convergence-ledger.json")).unwrap();
    run.record(1);
    let after = fs::read(run.dir.join("state/convergence-ledger.json")).unwrap();
    assert_eq!(before, after);

    // Round 2: every open item goes to every analyser, owners included,
    // with the earlier verdicts; kimi withdraws its own item.
    let plan2 = run.plan(2, &[]);
    assert_eq!(reviewer_ids(&plan2), ["claude", "codex", "kimi"]);
    assert_eq!(
        batch(&plan2, "kimi"),
        ["claude:F-1", "claude:F-2", "kimi:K-1"]
    );
    let kimi_prompt =
        fs::read_to_string(reviewer(&plan2, "kimi")["promptPath"].as_str().unwrap()).unwrap();
    assert!(kimi_prompt.contains("(yours)"), "{kimi_prompt}");
    assert!(
        kimi_prompt.contains("another reviewer: `DISAGREE`"),
        "{kimi_prompt}"
    );
    let label2 = |worker: &str, item: &str| label_of(&plan2, worker, item);
    let path2 = |worker: &str| reviewer(&plan2, worker)["resultPath"].clone();
    write_verdicts(
        &path2("kimi"),
        &[
            (
                &label2("kimi", "kimi:K-1"),
                "DISAGREE",
                "src/k.rs:3 was misread",
                "",
            ),
            (&label2("kimi", "claude:F-1"), "AGREE", "src/a.rs:1", ""),
            (&label2("kimi", "claude:F-2"), "AGREE", "src/a.rs:2", ""),
        ],
    );
    write_verdicts(
        &path2("codex"),
        &[
            (&label2("codex", "kimi:K-1"), "AGREE", "src/k.rs:3", ""),
            (
                &label2("codex", "claude:F-1"),
                "DISAGREE",
                "src/a.rs:1 has a cap",
                "",
            ),
            (&label2("codex", "claude:F-2"), "AGREE", "src/a.rs:2", ""),
        ],
    );
    write_verdicts(
        &path2("claude"),
        &[
            (&label2("claude", "kimi:K-1"), "DISAGREE", "src/k.rs:3", ""),
            (&label2("claude", "claude:F-1"), "AGREE", "src/a.rs:1", ""),
            (&label2("claude", "claude:F-2"), "AGREE", "src/a.rs:2", ""),
        ],
    );
    let outcome = run.record(2);
    assert!(outcome["problems"].as_array().unwrap().is_empty());
    let ledger = run.ledger();
    // Withdrawn by its owner: refuted.
    assert_eq!(item(&ledger, "kimi:K-1")["withdrawn"], true);
    assert_eq!(item(&ledger, "kimi:K-1")["finalClass"], "refuted");
    // claude:F-1: kimi AGREE vs codex DISAGREE (round 2) → contested, open,
    // but round 2 is the last: convergence stops at max-rounds.
    assert_eq!(item(&ledger, "claude:F-1")["finalClass"], "contested");
    assert_eq!(item(&ledger, "claude:F-2")["finalClass"], "full-consensus");
    assert_eq!(outcome["stoppedBecause"], "max-rounds");
    assert_eq!(ledger["stoppedBecause"], "max-rounds");
    assert_eq!(ledger["roundsRun"], 2);
}

#[test]
fn a_failed_reviewer_keeps_nothing_open_and_a_substitute_never_counts() {
    let run = RunDir::render("claude,codex,kimi,report-writer");
    run.result("claude", &findings("claude", 1));
    run.result("codex", &findings("codex", 1));
    run.result("kimi", &findings("kimi", 1));
    let plan = run.plan(1, &[]);
    // kimi's reverify failed; codex's ran on another provider.
    run.dispatch(
        "kimi-worker-reverify-r1",
        "reverify-r1",
        "kimi",
        "auth",
        "kimi",
    );
    run.dispatch(
        "codex-worker-reverify-r1",
        "reverify-r1",
        "codex",
        "completed",
        "claude",
    );
    let path = |worker: &str| reviewer(&plan, worker)["resultPath"].clone();
    let label = |worker: &str, item: &str| label_of(&plan, worker, item);
    write_verdicts(
        &path("codex"),
        &[
            (&label("codex", "claude:F-1"), "DISAGREE", "src/a.rs:1", ""),
            (&label("codex", "kimi:F-1"), "DISAGREE", "src/a.rs:1", ""),
        ],
    );
    write_verdicts(
        &path("claude"),
        &[
            (&label("claude", "codex:F-1"), "AGREE", "src/a.rs:1", ""),
            (&label("claude", "kimi:F-1"), "AGREE", "src/a.rs:1", ""),
        ],
    );
    let outcome = run.record(1);
    assert_eq!(outcome["unavailable"][0]["workerId"], "kimi");
    assert_eq!(outcome["unavailable"][0]["terminalStatus"], "auth");
    let ledger = run.ledger();
    let f1 = item(&ledger, "claude:F-1");
    assert_eq!(f1["verdicts"][0]["substitute"], true);
    assert_eq!(f1["finalClass"], "worker-unique");
    assert_eq!(f1["open"], false);
    assert_eq!(item(&ledger, "kimi:F-1")["finalClass"], "full-consensus");
    // Two analysers left: still a quorum, and nothing open.
    assert_eq!(outcome["stoppedBecause"], "no-open-items");
}

// --------------------------------------------------------------- classify

#[test]
fn a_review_never_dispatched_is_not_called_empty_output() {
    let run = RunDir::render("claude,codex,kimi,report-writer");
    run.result("claude", &findings("claude", 1));
    run.result("codex", &findings("codex", 1));
    run.result("kimi", &findings("kimi", 1));
    let plan = run.plan(1, &[]);
    let path = |worker: &str| reviewer(&plan, worker)["resultPath"].clone();
    let label = |worker: &str, item: &str| label_of(&plan, worker, item);
    write_verdicts(
        &path("claude"),
        &[
            (&label("claude", "codex:F-1"), "AGREE", "src/a.rs:1", ""),
            (&label("claude", "kimi:F-1"), "AGREE", "src/a.rs:1", ""),
        ],
    );
    // codex's review ran and ended `completed`, but wrote nothing.
    run.dispatch(
        "codex-worker-reverify-r1",
        "reverify-r1",
        "codex",
        "completed",
        "codex",
    );
    fs::write(path("codex").as_str().unwrap(), "").unwrap();
    // kimi's review was never dispatched: no attempt, no result.
    let outcome = run.record(1);
    let words = |unavailable: &Value| -> Vec<(String, String, u64)> {
        unavailable
            .as_array()
            .unwrap()
            .iter()
            .map(|u| {
                (
                    u["workerId"].as_str().unwrap().to_owned(),
                    u["terminalStatus"].as_str().unwrap().to_owned(),
                    u["round"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let expected = [
        ("codex".to_owned(), "empty-output".to_owned(), 1),
        ("kimi".to_owned(), "not-dispatched".to_owned(), 1),
    ];
    assert_eq!(words(&outcome["unavailable"]), expected);
    assert_eq!(words(&run.ledger()["unavailable"]), expected);
}

#[test]
fn classify_recomputes_a_hand_written_ledger() {
    let run = RunDir::render("claude,codex,kimi,report-writer");
    for worker in ["claude", "codex", "kimi"] {
        run.result(worker, &findings(worker, 1));
    }
    let ledger = json!({
        "roundsRun": 1,
        "items": [
            {"itemId": "claude:F-1", "owner": "claude", "finalClass": "full-consensus", "verdicts": [
                {"round": 1, "reviewer": "codex", "verdict": "AGREE", "evidence": "src/a.rs:1"},
                {"round": 1, "reviewer": "kimi", "verdict": "DISAGREE", "evidence": "`rg max_attempts src` \"3: max_attempts = 3\""}
            ]},
            {"itemId": "codex:F-1", "owner": "codex", "verdicts": [
                {"round": 1, "reviewer": "claude", "verdict": "AGREE", "evidence": "trust me"},
                {"round": 1, "reviewer": "kimi", "verdict": "SUPPLEMENT", "evidence": "`rg total src` \"12: total\"", "addition": "and refunds"}
            ]},
            {"itemId": "kimi:F-1", "owner": "kimi", "verdicts": []}
        ]
    });
    fs::write(
        run.dir.join("state/convergence-ledger.json"),
        serde_json::to_vec(&ledger).unwrap(),
    )
    .unwrap();
    let out = run_classify(&run);
    assert_eq!(out["stoppedBecause"], Value::Null);
    assert_eq!(out["open"], json!(["claude:F-1"]));
    let written = run.ledger();
    assert_eq!(item(&written, "claude:F-1")["finalClass"], "contested");
    assert_eq!(item(&written, "codex:F-1")["finalClass"], "full-consensus");
    assert_eq!(item(&written, "kimi:F-1")["finalClass"], "worker-unique");
    assert_eq!(written["adversarial"], true);

    // Text output: one line per item.
    let text = self::run(&["converge", "classify", run.path()]);
    assert_eq!(text.code, 0);
    assert!(
        text.stdout.contains("claude:F-1\tcontested\topen"),
        "{}",
        text.stdout
    );

    // A ledger that breaks its schema is refused, and left as it is.
    let bad = run.dir.join("state/convergence-ledger.json");
    fs::write(
        &bad,
        r#"{"items": [{"itemId": "claude", "owner": "claude"}]}"#,
    )
    .unwrap();
    let out = self::run(&["converge", "classify", run.path()]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.starts_with("error: "), "{}", out.stderr);
    assert!(out.stderr.contains("/items/0"), "{}", out.stderr);
    assert!(
        fs::read_to_string(&bad)
            .unwrap()
            .contains(r#""itemId": "claude""#)
    );
}
