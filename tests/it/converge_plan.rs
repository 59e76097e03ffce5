//! Convergence: `okstra converge plan` — quorum, who reviews whom, blind
//! prompts that leak nobody, and rounds out of order.

use super::*;

#[test]
fn two_analysers_with_one_failed_have_no_quorum() {
    let run = RunDir::render("claude,codex,report-writer");
    run.result("claude", &findings("claude", 2));
    // codex was never dispatched: no attempt of it, and no result.
    let plan = run.plan(1, &[]);
    assert_eq!(plan["stoppedBecause"], "quorum");
    assert!(plan["reviewers"].as_array().unwrap().is_empty());
    let out = run_classify(&run);
    assert_eq!(out["stoppedBecause"], "quorum");
    let ledger = run.ledger();
    assert_eq!(item(&ledger, "claude:F-1")["finalClass"], "worker-unique");
    assert_eq!(ledger["unavailable"][0]["workerId"], "codex");
    assert_eq!(ledger["unavailable"][0]["terminalStatus"], "not-dispatched");
    // Recording a round that did not run adds no round.
    let outcome = run.record(1);
    assert_eq!(outcome["stoppedBecause"], "quorum");
    assert_eq!(run.ledger()["roundsRun"], 0);
}

#[test]
fn three_analysers_with_one_failed_review_each_other_only() {
    let run = RunDir::render("claude,codex,kimi,report-writer");
    run.result("claude", &findings("claude", 2));
    run.result("codex", &findings("codex", 1));
    run.result("kimi", &findings("kimi", 3));
    // kimi wrote a result, but its dispatch ended in an auth failure.
    run.dispatch("kimi-worker", "initial", "kimi", "auth", "kimi");
    let plan = run.plan(1, &[]);
    assert_eq!(plan["stoppedBecause"], Value::Null);
    assert_eq!(reviewer_ids(&plan), ["claude", "codex"]);
    assert_eq!(batch(&plan, "claude"), ["codex:F-1"]);
    assert_eq!(batch(&plan, "codex"), ["claude:F-1", "claude:F-2"]);
    let codex = reviewer(&plan, "codex");
    assert_eq!(codex["dispatchName"], "codex-worker-reverify-r1");
    assert_eq!(codex["dispatchKind"], "reverify-r1");
    assert_eq!(
        codex["model"],
        run.assignment("codex")["modelExecutionValue"]
    );
    assert_eq!(codex["runner"], run.assignment("codex")["runner"]);
    let prompt = fs::read(codex["promptPath"].as_str().unwrap()).unwrap();
    let digest = sha256(&prompt);
    assert_eq!(codex["promptSha256"], digest);
    assert!(
        codex["resultPath"]
            .as_str()
            .unwrap()
            .ends_with("results/codex-worker-reverify-r1.md")
    );
}

fn sha256(bytes: &[u8]) -> String {
    use std::process::{Command, Stdio};
    // sha256sum keeps the test independent of okstra's own hashing code.
    let mut child = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    text.split_whitespace().next().unwrap().to_owned()
}

const FIVE: [&str; 5] = ["claude", "codex", "kimi", "grok", "antigravity"];

#[test]
fn five_analysers_with_one_failed_and_blind_prompts_leak_nobody() {
    let run = RunDir::render("claude,codex,kimi,grok,antigravity,report-writer");
    for worker in FIVE {
        run.result(worker, &findings(worker, 3));
    }
    run.dispatch("grok-worker", "initial", "grok", "rate-limit", "grok");
    run.dispatch("grok-worker", "retry", "grok", "idle-timeout", "grok");
    let plan = run.plan(1, &["--seed", "7"]);
    assert_eq!(plan["seed"], 7);
    assert_eq!(plan["blind"], true);
    let live = ["claude", "codex", "kimi", "antigravity"];
    assert_eq!(reviewer_ids(&plan), live);
    for worker in live {
        let mut expected: Vec<String> = live
            .iter()
            .filter(|other| **other != worker)
            .flat_map(|other| (1..=3).map(move |n| format!("{other}:F-{n}")))
            .collect();
        expected.sort();
        assert_eq!(batch(&plan, worker), expected, "{worker}");
    }
    // Blind: no reviewer's prompt names another analyser, its provider or
    // its model (the failed one included).
    for worker in live {
        let prompt =
            fs::read_to_string(reviewer(&plan, worker)["promptPath"].as_str().unwrap()).unwrap();
        assert!(prompt.contains("### Item 9"), "{worker}");
        for other in FIVE.iter().filter(|other| **other != worker) {
            let assignment = run.assignment(other);
            for secret in [
                assignment["workerId"].as_str().unwrap(),
                assignment["provider"].as_str().unwrap(),
                assignment["modelExecutionValue"].as_str().unwrap(),
            ] {
                assert!(
                    !prompt.contains(secret),
                    "{worker}'s reverify prompt names `{secret}`"
                );
            }
        }
    }
    // Shuffled per reviewer: the same seed gives the same plan, and not
    // every reviewer sees its items in plan order.
    let again = run.plan(1, &["--seed", "7"]);
    assert_eq!(again["reviewers"], plan["reviewers"]);
    let in_plan_order = live.iter().filter(|worker| {
        let ids: Vec<&str> = reviewer(&plan, worker)["labels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["itemId"].as_str().unwrap())
            .collect();
        ids.windows(2).all(|pair| {
            let position = |id: &str| {
                plan["items"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .position(|i| i["itemId"] == id)
            };
            position(pair[0]) < position(pair[1])
        })
    });
    assert!(in_plan_order.count() < live.len());

    // --no-blind shows owners and ids.
    let open = run.plan(1, &["--no-blind"]);
    assert_eq!(open["blind"], false);
    let prompt =
        fs::read_to_string(reviewer(&open, "claude")["promptPath"].as_str().unwrap()).unwrap();
    assert!(prompt.contains("Author: `codex` (`codex:F-1`)"), "{prompt}");
}

#[test]
fn rounds_out_of_order_are_refused() {
    let run = RunDir::render("claude,codex,report-writer");
    run.result("claude", &findings("claude", 1));
    run.result("codex", &findings("codex", 1));
    for (args, fragment) in [
        (
            vec!["converge", "plan", run.path(), "--round", "2"],
            "next round is 1",
        ),
        (
            vec!["converge", "plan", run.path(), "--round", "3"],
            "invalid round `3`",
        ),
        (
            vec!["converge", "record", run.path(), "--round", "1"],
            "has no plan",
        ),
        (
            vec!["converge", "plan", "/nonexistent/run", "--round", "1"],
            "/nonexistent/run",
        ),
    ] {
        let out = run_args(&args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.starts_with("error: "), "{}", out.stderr);
        assert!(out.stderr.contains(fragment), "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    }
    assert!(!run.dir.join("state/round-plan-r2.json").exists());
    let out = run_args(&["converge", "plan", run.path(), "--round", "0"]);
    assert_eq!(out.code, 2);
}
