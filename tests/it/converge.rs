//! Integration tests: `okstra items` and `okstra converge plan | record |
//! classify`, driven through the real binary on rendered runs whose worker
//! results are written by hand; and `okstra validate`'s ledger checks.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{Project, copy_dir, okstra, repo_root};

/// A rendered project-analysis run in its own temporary project.
struct RunDir {
    _project: Project,
    dir: PathBuf,
    manifest: Value,
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(args: &[&str]) -> Out {
    let output = okstra().args(args).output().unwrap();
    Out {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

impl RunDir {
    fn render(workers: &str) -> RunDir {
        let project = Project::new()
            .brief("# Payments\n\nWhy are payments charged twice?\n")
            .key("p", "g", "t");
        let dir = project.render(&[
            "--task-type",
            "project-analysis",
            "--workers",
            workers,
            "--lead-runtime",
            "external",
        ]);
        let manifest: Value =
            serde_json::from_str(&fs::read_to_string(dir.join("run-manifest.json")).unwrap())
                .unwrap();
        RunDir {
            _project: project,
            dir,
            manifest,
        }
    }

    fn path(&self) -> &str {
        self.dir.to_str().unwrap()
    }

    fn assignment(&self, worker: &str) -> &Value {
        self.manifest["assignments"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["workerId"] == worker)
            .unwrap()
    }

    /// Write `worker`'s result at its manifest Result Path.
    fn result(&self, worker: &str, text: &str) {
        let path = self.assignment(worker)["resultPath"].as_str().unwrap();
        fs::write(path, text).unwrap();
    }

    /// Append a finished dispatch record to the team state.
    fn dispatch(&self, name: &str, kind: &str, worker: &str, ending: &str, provider: &str) {
        let path = PathBuf::from(self.manifest["teamStatePath"].as_str().unwrap());
        let mut state: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        state["dispatches"].as_array_mut().unwrap().push(json!({
            "dispatchName": name,
            "dispatchKind": kind,
            "workerId": worker,
            "provider": provider,
            "promptPath": "p", "resultPath": "r", "workerResultsPath": "w", "errorPath": "e",
            "ending": ending,
        }));
        fs::write(&path, serde_json::to_vec_pretty(&state).unwrap()).unwrap();
    }

    fn plan(&self, round: u32, extra: &[&str]) -> Value {
        let round = round.to_string();
        let mut args = vec!["converge", "plan", self.path(), "--round", &round, "--json"];
        args.extend_from_slice(extra);
        let out = run(&args);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let plan: Value = serde_json::from_str(&out.stdout).unwrap();
        let on_disk: Value = serde_json::from_str(
            &fs::read_to_string(self.dir.join(format!("state/round-plan-r{round}.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(plan, on_disk);
        plan
    }

    fn record(&self, round: u32) -> Value {
        let round = round.to_string();
        let out = run(&[
            "converge",
            "record",
            self.path(),
            "--round",
            &round,
            "--json",
        ]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        serde_json::from_str(&out.stdout).unwrap()
    }

    fn ledger(&self) -> Value {
        serde_json::from_str(
            &fs::read_to_string(self.dir.join("state/convergence-ledger.json")).unwrap(),
        )
        .unwrap()
    }
}

/// A result with `count` findings of `worker`, citing a file each.
fn findings(worker: &str, count: usize) -> String {
    let mut text = "# result\n\n## 1. Findings\n\n| ID | Finding |\n|---|---|\n".to_owned();
    for n in 1..=count {
        let _ = writeln!(
            text,
            "| F-{n} | finding {n} of this worker | `src/{}.rs:{n}` |",
            worker.len() * 100 + n
        );
    }
    text
}

fn reviewer<'a>(plan: &'a Value, worker: &str) -> &'a Value {
    plan["reviewers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["workerId"] == worker)
        .unwrap_or_else(|| panic!("no reviewer `{worker}` in {plan:#}"))
}

fn reviewer_ids(plan: &Value) -> Vec<&str> {
    plan["reviewers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["workerId"].as_str().unwrap())
        .collect()
}

/// The `worker:item` ids a reviewer was given, sorted.
fn batch(plan: &Value, worker: &str) -> Vec<String> {
    let mut ids: Vec<String> = reviewer(plan, worker)["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["itemId"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

fn write_verdicts(path: &Value, rows: &[(&str, &str, &str, &str)]) {
    let mut text =
        "# convergence round\n\n| Item | Verdict | Evidence | Addition |\n|---|---|---|---|\n"
            .to_owned();
    for (label, verdict, evidence, addition) in rows {
        let _ = writeln!(text, "| {label} | {verdict} | {evidence} | {addition} |");
    }
    fs::write(path.as_str().unwrap(), text).unwrap();
}

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

fn item<'a>(ledger: &'a Value, id: &str) -> &'a Value {
    ledger["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["itemId"] == id)
        .unwrap()
}

// ------------------------------------------------------------------ plans

#[test]
fn two_analysers_with_one_failed_have_no_quorum() {
    let run = RunDir::render("claude,codex,report-writer");
    run.result("claude", &findings("claude", 2));
    // codex never wrote its result.
    let plan = run.plan(1, &[]);
    assert_eq!(plan["stoppedBecause"], "quorum");
    assert!(plan["reviewers"].as_array().unwrap().is_empty());
    let out = run_classify(&run);
    assert_eq!(out["stoppedBecause"], "quorum");
    let ledger = run.ledger();
    assert_eq!(item(&ledger, "claude:F-1")["finalClass"], "worker-unique");
    assert_eq!(ledger["unavailable"][0]["workerId"], "codex");
    assert_eq!(ledger["unavailable"][0]["terminalStatus"], "empty-output");
    // Recording a round that did not run adds no round.
    let outcome = run.record(1);
    assert_eq!(outcome["stoppedBecause"], "quorum");
    assert_eq!(run.ledger()["roundsRun"], 0);
}

fn run_classify(run: &RunDir) -> Value {
    let out = self::run(&["converge", "classify", run.path(), "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
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

// ----------------------------------------------------------------- record

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
                "src/k.rs:3 does not",
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
    assert_eq!(item(&ledger, "kimi:K-1")["withdrawn"], true);
    assert_eq!(item(&ledger, "kimi:K-1")["finalClass"], "contested");
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
                {"round": 1, "reviewer": "kimi", "verdict": "DISAGREE", "evidence": "no"}
            ]},
            {"itemId": "codex:F-1", "owner": "codex", "verdicts": [
                {"round": 1, "reviewer": "claude", "verdict": "AGREE", "evidence": "trust me"},
                {"round": 1, "reviewer": "kimi", "verdict": "SUPPLEMENT", "evidence": "`rg total src` finds it", "addition": "and refunds"}
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

// ------------------------------------------------------------- bad input

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

fn run_args(args: &[&str]) -> Out {
    run(args)
}

// ------------------------------------------------------------------ items

#[test]
fn items_lists_every_completed_analysers_items_with_evidence() {
    let run = RunDir::render("claude,codex,kimi,report-writer");
    run.result(
        "claude",
        "# claude\n\n## 1. Findings\n\n| ID | Finding |\n|---|---|\n| F-001 | retries loop | `src/client.rs:88` |\n\n## 2. Reproduction\n\n- [R-1] run `cargo test retry` and see \"six requests\"\n",
    );
    run.result("codex", "## 1. Findings\n\n1. [1.1] no evidence here\n");
    let out = run_args(&["items", run.path(), "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let listed: Value = serde_json::from_str(&out.stdout).unwrap();
    let ids: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["itemId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["claude:F-001", "claude:R-1", "codex:1.1"]);
    let r1 = &listed["items"][1];
    assert_eq!(r1["owner"], "claude");
    assert_eq!(r1["section"], "2. Reproduction");
    assert_eq!(
        r1["evidence"],
        json!([{"kind": "command", "text": "cargo test retry"}, {"kind": "quote", "text": "six requests"}])
    );
    assert_eq!(
        listed["skipped"],
        json!([{"workerId": "kimi", "reason": "empty-output"}])
    );
    assert!(out.stderr.contains("skipped `kimi`"), "{}", out.stderr);
}

// --------------------------------------------------------------- validate

fn report_fixture(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures/reports").join(name)
}

fn validate_lines(target: &Path) -> (i32, Vec<String>) {
    let out = run(&["validate", target.to_str().unwrap()]);
    (out.code, out.stdout.lines().map(str::to_owned).collect())
}

#[test]
fn validate_checks_the_report_against_the_ledger() {
    let (code, lines) = validate_lines(&report_fixture("invalid-convergence"));
    assert_eq!(code, 1);
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines[0].starts_with("/consensus/2/convergence: [convergence] `partial-consensus`"));
    assert!(
        lines[1]
            .starts_with("/consensus/2/sourceItems/0: [convergence] `claude:F-003` is `contested`")
    );
    assert!(lines[2].starts_with("/differences: [convergence] `claude:F-003` is `contested`"));
}

#[test]
fn validate_checks_header_and_item_counts_against_the_run() {
    let (code, lines) = validate_lines(&report_fixture("invalid-header-run"));
    assert_eq!(code, 1);
    assert_eq!(
        lines,
        [
            "/header/runId: [header] `header.runId` is `error-analysis-002` but the run manifest says `error-analysis-001`",
            "/header/taskKey: [header] `header.taskKey` is `demo/payments/other` but the run manifest says `demo/payments/timeout-123`",
        ]
    );
    let (code, lines) = validate_lines(&report_fixture("invalid-coverage-count"));
    assert_eq!(code, 1);
    assert_eq!(
        lines,
        [
            "/workerCoverage/0/itemsReported: [coverage] worker `claude` reports 5 items but 6 are parsed from its result `results/claude-worker.md`"
        ]
    );
}

#[test]
fn a_report_consistent_with_its_ledger_is_valid() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&report_fixture("v2-valid"), dir.path());
    let classes = [
        ("claude:F-001", "full-consensus"),
        ("codex:1.1", "full-consensus"),
        ("claude:F-002", "full-consensus"),
        ("codex:1.2", "full-consensus"),
        ("claude:F-003", "partial-consensus"),
        ("codex:1.3", "partial-consensus"),
        ("claude:Q-1", "contested"),
        ("codex:2.1", "worker-unique"),
    ];
    let items: Vec<Value> = classes
        .iter()
        .map(|(id, class)| json!({"itemId": id, "owner": id.split(':').next().unwrap(), "verdicts": [], "finalClass": class}))
        .collect();
    fs::create_dir_all(dir.path().join("state")).unwrap();
    fs::write(
        dir.path().join("state/convergence-ledger.json"),
        serde_json::to_vec(&json!({"items": items})).unwrap(),
    )
    .unwrap();
    let out = run(&["validate", dir.path().to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);

    // A broken ledger is a problem of the report's run, named once.
    fs::write(dir.path().join("state/convergence-ledger.json"), "{").unwrap();
    let (code, lines) = validate_lines(dir.path());
    assert_eq!(code, 1);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("/: [convergence] the run's convergence ledger cannot be used"));
}

#[test]
fn hostile_files_are_refused_without_hanging() {
    let run = RunDir::render("claude,codex,kimi,report-writer");
    run.result("claude", &findings("claude", 1));
    run.result("codex", &findings("codex", 1));
    // kimi's Result Path is a symlink out of the project: never read.
    let kimi = PathBuf::from(run.assignment("kimi")["resultPath"].as_str().unwrap());
    std::os::unix::fs::symlink("/etc/hostname", &kimi).unwrap();
    let out = run_args(&["items", run.path(), "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let listed: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(listed["skipped"][0]["workerId"], "kimi");

    // A plan edited to send record to another file is refused.
    let plan = run.plan(1, &[]);
    let path = run.dir.join("state/round-plan-r1.json");
    let mut edited = plan.clone();
    edited["reviewers"][0]["dispatchName"] = json!("report-writer-reverify-r1");
    fs::write(&path, serde_json::to_vec(&edited).unwrap()).unwrap();
    let out = run_args(&["converge", "record", run.path(), "--round", "1"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("this run expects `claude-worker-reverify-r1`"),
        "{}",
        out.stderr
    );
    assert!(!run.dir.join("state/convergence-ledger.json").exists());

    // A FIFO where the ledger should be is refused at once, not waited on.
    let ledger = run.dir.join("state/convergence-ledger.json");
    nix::unistd::mkfifo(&ledger, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let out = run_args(&["converge", "classify", run.path()]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("not a regular file"), "{}", out.stderr);
}

#[test]
fn blind_round_two_prompt_snapshot() {
    let run = RunDir::render("claude,codex,kimi,report-writer");
    run.result(
        "claude",
        "## 1. Findings\n\n- [F-1] Retries never stop (`src/client.rs:88`).\n",
    );
    run.result(
        "codex",
        "## 1. Findings\n\n- [1.1] The timeout is 2 s, below the p99 (config/payments.toml:12).\n",
    );
    run.result("kimi", "## 1. Findings\n\n| ID | Finding |\n|---|---|\n| K-1 | One payment logged \"six requests\" |\n");
    let plan = run.plan(1, &["--seed", "3"]);
    for worker in ["claude", "codex", "kimi"] {
        let rows: Vec<(String, &str, &str, &str)> = reviewer(&plan, worker)["labels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                let disagree = l["itemId"] == "kimi:K-1" && worker == "claude";
                (
                    l["label"].as_str().unwrap().to_owned(),
                    if disagree { "DISAGREE" } else { "AGREE" },
                    if disagree {
                        "the log shows one request"
                    } else {
                        "src/client.rs:88 confirms"
                    },
                    "",
                )
            })
            .collect();
        let rows: Vec<(&str, &str, &str, &str)> = rows
            .iter()
            .map(|(l, v, e, a)| (l.as_str(), *v, *e, *a))
            .collect();
        write_verdicts(&reviewer(&plan, worker)["resultPath"], &rows);
    }
    run.record(1);
    let plan2 = run.plan(2, &["--seed", "3"]);
    assert_eq!(batch(&plan2, "kimi"), ["kimi:K-1"]);
    let prompt =
        fs::read_to_string(reviewer(&plan2, "kimi")["promptPath"].as_str().unwrap()).unwrap();
    let project = run.dir.ancestors().nth(6).unwrap();
    let shown = prompt
        .replace(run.path(), "[RUN]")
        .replace(project.to_str().unwrap(), "[PROJECT]");
    insta::assert_snapshot!("reverify_blind_round_2_kimi", shown);
}
