//! Integration tests: `okstra items` and `okstra converge plan | record |
//! classify`, driven through the real binary on rendered runs whose worker
//! results are written by hand; and `okstra validate`'s ledger checks.
//! This file holds the shared run builder and helpers (and the blind
//! round-two prompt snapshot); the tests live in `plan`, `record` and
//! `validate`.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{Project, copy_dir, hide_workspaces, okstra, repo_root};

#[path = "converge_anchors.rs"]
mod anchors;
#[path = "converge_plan.rs"]
mod plan;
#[path = "converge_record.rs"]
mod record;
#[path = "converge_review.rs"]
mod review;
#[path = "converge_validate.rs"]
mod validate;

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
        // The files the reviewers' verdicts cite: their anchors resolve.
        for file in [
            "src/a.rs",
            "src/k.rs",
            "src/client.rs",
            "config/payments.toml",
        ] {
            source_file(project.root(), file, 100);
        }
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

    /// Write `worker`'s result at its manifest Result Path, and every
    /// project file it cites (`path:line`), long enough for its anchors to
    /// resolve. A test of anchors that do not resolve cites an excerpt the
    /// file does not hold, or a file it removes before the first plan.
    fn result(&self, worker: &str, text: &str) {
        for word in text.split(|c: char| c.is_whitespace() || "`()|,;".contains(c)) {
            let word = word.trim_end_matches(['.', ':']);
            if let Some((file, line)) = word.rsplit_once(':')
                && file.contains('.')
                && !file.starts_with('/')
                && !file.contains("..")
                && let Ok(line) = line.split('-').next_back().unwrap_or("").parse::<usize>()
            {
                let root = self.dir.ancestors().nth(6).unwrap();
                source_file(root, file, line.max(100));
            }
        }
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

/// Write `lines` numbered lines (`line 1` …) to `file` in the project
/// `root`, unless it is there already.
fn source_file(root: &Path, file: &str, lines: usize) {
    let path = root.join(file);
    if path.exists() {
        return;
    }
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let text = (1..=lines).fold(String::new(), |mut text, n| {
        let _ = writeln!(text, "line {n}");
        text
    });
    fs::write(path, text).unwrap();
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

fn item<'a>(ledger: &'a Value, id: &str) -> &'a Value {
    ledger["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["itemId"] == id)
        .unwrap()
}

fn run_classify(run: &RunDir) -> Value {
    let out = self::run(&["converge", "classify", run.path(), "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

fn run_args(args: &[&str]) -> Out {
    run(args)
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
    run.result(
        "kimi",
        "## 1. Findings\n\n| ID | Finding |\n|---|---|\n| K-1 | One payment logged \"six requests\" \
         (src/client.rs:88 `line 88`) |\n",
    );
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
                        "`grep -c request app.log` \"1 request\""
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
    let shown = hide_workspaces(
        &prompt
            .replace(run.path(), "[RUN]")
            .replace(project.to_str().unwrap(), "[PROJECT]"),
    );
    insta::assert_snapshot!("reverify_blind_round_2_kimi", shown);
}
