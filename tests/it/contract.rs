//! The bundle tells the truth: every instruction a lead or worker reads
//! agrees with the binary and the schemas.
//!
//! Every task type × lead runtime is rendered by the real binary, and every
//! rendered document (handoff, instruction set, worker prompts) is checked:
//! - every `okstra …` command line it gives parses against the real CLI
//!   (`okstra __check-args` runs clap's parser on it and nothing else),
//!   placeholders filled with sample values, optional parts expanded and
//!   each alternative of `a|b` tried;
//! - every JSON field path it names (`verdictCard.verdictToken`,
//!   `dispatches[].usage`, `usageSummary`) exists in the schemas the bundle
//!   ships, and every JSON example it shows validates against its schema;
//! - every run-folder path it points to exists in the bundle, or is
//!   produced by a command (or worker) the bundle names;
//! - every closed list it states (ending classes, report statuses, verdict
//!   tokens, convergence classes and stop reasons) equals the schema's enum.
//!
//! The checker is a plain function over (file name, text) pairs, so the
//! tests at the bottom run it on deliberately broken copies of a rendered
//! document and assert that it reports each break.

#[path = "contract_check.rs"]
pub mod check;
#[path = "contract_schema.rs"]
mod schema_walk;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use check::{Checker, command_variants};

use crate::support::Project;

const TASK_TYPES: [&str; 7] = [
    "requirements-discovery",
    "error-analysis",
    "implementation-planning",
    "project-analysis",
    "feature-analysis",
    "change-impact-analysis",
    "implementation",
];

/// Rosters rendered for each combination: the default, and a full one with
/// three analysers (convergence on) and a critic.
const ROSTERS: [&[&str]; 2] = [
    &[],
    &[
        "--workers",
        "claude,codex,kimi,report-writer",
        "--critic",
        "kimi",
    ],
];

/// A rendered run in its own temporary project.
struct Bundle {
    _project: Project,
    run_dir: PathBuf,
    label: String,
}

impl Bundle {
    fn render(task_type: &str, runtime: &str, roster: &[&str]) -> Bundle {
        // A project root as long as a real one (`/home/<user>/src/<name>`),
        // so the reading budget holds for the paths users have.
        let project = Project::in_folder("home-user-src-shop-service")
            .brief("# Checkout is slow\n\nWhy is the cart total slow?\n")
            .key("demo", "shop", "t1");
        if task_type == "implementation" {
            crate::support::git_init(project.root());
        }
        let output = project
            .render_command(
                &[
                    &["--task-type", task_type, "--lead-runtime", runtime],
                    roster,
                ]
                .concat(),
            )
            .output()
            .unwrap();
        let label = format!("{task_type} × {runtime} {roster:?}");
        assert!(
            output.status.success(),
            "render failed for {label}:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let handoff = PathBuf::from(String::from_utf8(output.stdout).unwrap().trim());
        let run_dir = handoff.parent().unwrap().to_path_buf();
        Bundle {
            _project: project,
            run_dir,
            label,
        }
    }

    /// Every rendered Markdown document, relative to the run folder.
    fn documents(&self) -> Vec<(String, String)> {
        let mut docs = vec![("handoff.md".to_owned(), self.read("handoff.md"))];
        for dir in ["instruction-set", "prompts"] {
            let mut names: Vec<String> = fs::read_dir(self.run_dir.join(dir))
                .unwrap()
                .map(|entry| entry.unwrap().file_name().into_string().unwrap())
                .filter(|name| Path::new(name).extension().is_some_and(|ext| ext == "md"))
                .collect();
            names.sort();
            for name in names {
                let relative = format!("{dir}/{name}");
                let text = self.read(&relative);
                docs.push((relative, text));
            }
        }
        docs
    }

    /// Give every analyser (or verifier) a completed dispatch and a result
    /// with two items (under a heading no profile describes, so they are
    /// claims of any task type), then run `okstra converge plan --round 1`, so the
    /// round's reverify prompts exist and are checked like the rest.
    fn plan_round_one(&self) {
        let manifest: Value = serde_json::from_str(&self.read("run-manifest.json")).unwrap();
        let state_path = PathBuf::from(manifest["teamStatePath"].as_str().unwrap());
        let mut state: Value =
            serde_json::from_str(&fs::read_to_string(&state_path).unwrap()).unwrap();
        for assignment in manifest["assignments"].as_array().unwrap() {
            if !["analyser", "verifier"].contains(&assignment["role"].as_str().unwrap()) {
                continue;
            }
            let worker = assignment["workerId"].as_str().unwrap();
            let result = format!(
                "# {worker}\n\n## Findings\n\n| ID | Finding | Evidence |\n|---|---|---|\n\
                 | F-001 | the total ignores discounts | `src/cart.rs:88` |\n\
                 | F-002 | the cache key ignores the locale | `src/cache.rs:12` |\n"
            );
            fs::write(assignment["resultPath"].as_str().unwrap(), result).unwrap();
            state["dispatches"]
                .as_array_mut()
                .unwrap()
                .push(serde_json::json!({
                    "dispatchName": assignment["dispatchName"],
                    "dispatchKind": "initial",
                    "workerId": worker,
                    "provider": assignment["provider"],
                    "promptPath": assignment["promptPath"],
                    "resultPath": assignment["resultPath"],
                    "workerResultsPath": assignment["workerResultsPath"],
                    "errorPath": assignment["errorPath"],
                    "ending": "completed",
                }));
        }
        fs::write(&state_path, serde_json::to_vec_pretty(&state).unwrap()).unwrap();
        let output = crate::support::okstra()
            .args(["converge", "plan"])
            .arg(&self.run_dir)
            .args(["--round", "1"])
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "converge plan failed for {}:\n{}",
            self.label,
            String::from_utf8_lossy(&output.stderr)
        );
    }

    fn read(&self, relative: &str) -> String {
        fs::read_to_string(self.run_dir.join(relative)).unwrap()
    }

    fn checker(&self) -> Checker {
        Checker::new(&self.run_dir)
    }
}

/// The closed lists every bundle must state (so deleting one fails).
const REQUIRED_LISTS: [&str; 6] = [
    "verdict tokens",
    "directions",
    "ending classes",
    "report statuses",
    "convergence classes",
    "stop reasons",
];

/// Every profile: each task type's own, and the defect hunt of
/// project-analysis (`--focus defects`), as (task type, extra flags).
fn profiles() -> Vec<(&'static str, &'static [&'static str])> {
    let mut all: Vec<(&str, &[&str])> = TASK_TYPES.iter().map(|t| (*t, &[][..])).collect();
    all.push(("project-analysis", &["--focus", "defects"]));
    all
}

fn check_runtime(runtime: &str) {
    let mut failures = Vec::new();
    for (task_type, focus) in profiles() {
        for roster in ROSTERS {
            let bundle = Bundle::render(task_type, runtime, &[roster, focus].concat());
            let manifest: Value = serde_json::from_str(&bundle.read("run-manifest.json")).unwrap();
            let convergence = manifest["convergence"]["enabled"] == true;
            if convergence {
                bundle.plan_round_one();
                assert!(
                    bundle
                        .documents()
                        .iter()
                        .any(|(name, _)| name.contains("-reverify-r1.md")),
                    "no reverify prompt for {}",
                    bundle.label
                );
            }
            let mut checker = bundle.checker();
            for problem in checker.check(&bundle.documents()) {
                failures.push(format!("[{}] {problem}", bundle.label));
            }
            for list in REQUIRED_LISTS {
                let needed = convergence || !list.contains("convergence") && list != "stop reasons";
                if needed && !checker.lists_seen.contains(list) {
                    failures.push(format!("[{}] the bundle states no {list}", bundle.label));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} problems:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn claude_code_bundles_agree_with_the_binary_and_the_schemas() {
    check_runtime("claude-code");
}

#[test]
fn codex_bundles_agree_with_the_binary_and_the_schemas() {
    check_runtime("codex");
}

#[test]
fn antigravity_bundles_agree_with_the_binary_and_the_schemas() {
    check_runtime("antigravity");
}

#[test]
fn external_bundles_agree_with_the_binary_and_the_schemas() {
    check_runtime("external");
}

/// The most bytes a prompt of each kind may have, rendered for the
/// three-analyser roster with a critic, in a project at a path as long as a
/// real one, with a 50-byte brief and (for a reviewer) round 1 of four
/// two-item results: what a prompt costs before the question and the
/// claims make it longer. A prompt that grows past its budget fails here,
/// so the prompts cannot drift back to what they were (about 7 400 bytes
/// for an analyser, 16 600 for the report writer, 17 300 for its repair).
/// An Executor run through its CLI has the coding-conventions preflight
/// appended (about 2 000 bytes).
const PROMPT_BUDGETS: [(&str, usize); 6] = [
    ("analyser", 5_000),
    ("executor", 7_100),
    ("verifier", 5_200),
    ("critic", 4_500),
    ("report-writer", 10_400),
    ("reverify", 4_000),
];

/// The kind of the prompt `file` (`prompts/<dispatch name>.md`).
fn prompt_kind(file: &str) -> Option<&'static str> {
    let name = file.strip_prefix("prompts/")?.strip_suffix(".md")?;
    Some(if name.contains("-reverify-r") {
        "reverify"
    } else if name == "report-writer" {
        "report-writer"
    } else if name.ends_with("-worker-critic") {
        "critic"
    } else if name.ends_with("-executor") {
        "executor"
    } else if name.ends_with("-verifier") {
        "verifier"
    } else {
        "analyser"
    })
}

#[test]
fn every_prompt_keeps_to_the_budget_of_its_kind() {
    let mut over = Vec::new();
    let mut largest: std::collections::BTreeMap<&str, (usize, String)> =
        std::collections::BTreeMap::default();
    for runtime in ["claude-code", "codex"] {
        for (task_type, focus) in profiles() {
            let bundle = Bundle::render(task_type, runtime, &[ROSTERS[1], focus].concat());
            bundle.plan_round_one();
            for (file, text) in bundle.documents() {
                let Some(kind) = prompt_kind(&file) else {
                    continue;
                };
                let budget = PROMPT_BUDGETS.iter().find(|(k, _)| *k == kind).unwrap().1;
                let entry = largest.entry(kind).or_default();
                if text.len() > entry.0 {
                    *entry = (text.len(), bundle.label.clone());
                }
                if text.len() > budget {
                    over.push(format!(
                        "[{}] {file}: {} bytes, over the {kind} budget of {budget}",
                        bundle.label,
                        text.len()
                    ));
                }
            }
        }
    }
    // Every kind was measured.
    assert_eq!(largest.len(), PROMPT_BUDGETS.len(), "{largest:?}");
    assert!(
        over.is_empty(),
        "{}\nlargest: {largest:#?}",
        over.join("\n")
    );
}

/// Run the checker on a copy of the bundle's documents where `file` has
/// `from` replaced by `to`; return the problems the change added.
fn problems_after(bundle: &Bundle, file: &str, from: &str, to: &str) -> Vec<String> {
    let docs = bundle.documents();
    let before: BTreeSet<String> = bundle.checker().check(&docs).into_iter().collect();
    let mutated: Vec<(String, String)> = docs
        .into_iter()
        .map(|(name, text)| {
            if name == file {
                assert!(text.contains(from), "`{from}` is not in {file}");
                let text = text.replace(from, to);
                (name, text)
            } else {
                (name, text)
            }
        })
        .collect();
    bundle
        .checker()
        .check(&mutated)
        .into_iter()
        .filter(|problem| !before.contains(problem))
        .collect()
}

#[track_caller]
fn assert_reported(problems: &[String], needle: &str) {
    assert!(
        problems.iter().any(|problem| problem.contains(needle)),
        "no problem mentions `{needle}`: {problems:#?}"
    );
}

#[test]
fn the_checker_catches_a_broken_template() {
    let bundle = Bundle::render("project-analysis", "claude-code", ROSTERS[1]);
    let lead = "instruction-set/lead-contract.md";
    // A renamed flag and a subcommand that does not exist.
    let problems = problems_after(&bundle, lead, " --json`", " --jsn`");
    assert_reported(&problems, "unexpected argument '--jsn'");
    let convergence = "instruction-set/convergence.md";
    let problems = problems_after(
        &bundle,
        convergence,
        "`okstra converge plan`",
        "`okstra converge plna`",
    );
    assert_reported(&problems, "unrecognized subcommand 'plna'");
    // A misspelled field, dotted or single.
    let common = "instruction-set/common-contract.md";
    let problems = problems_after(
        &bundle,
        common,
        "`verdictCard.verdictToken`",
        "`verdictCard.verdictTokn`",
    );
    assert_reported(&problems, "field `verdictCard.verdictTokn` is in no schema");
    let problems = problems_after(&bundle, common, "`usageSummary`", "`usageSumary`");
    assert_reported(&problems, "field `usageSumary` is in no schema");
    // A path into the run folder that nothing writes.
    let problems = problems_after(&bundle, common, "report/data.json", "report/dta.json");
    assert_reported(&problems, "report/dta.json` is not in the bundle");
    let problems = problems_after(
        &bundle,
        common,
        "`state/report-inputs.json`",
        "`state/report-input.json`",
    );
    assert_reported(&problems, "state/report-input.json` is not in the bundle");
    // A closed list that drifted from its enum.
    let problems = problems_after(&bundle, common, "| `budget` |", "| `over-budget` |");
    assert_reported(&problems, "ending classes");
    let problems = problems_after(&bundle, convergence, "| `contested` |", "| `disputed` |");
    assert_reported(&problems, "convergence classes");
    let profile = "instruction-set/profile.md";
    let problems = problems_after(&bundle, profile, "`HEALTHY-WITH-GAPS`", "`MOSTLY-FINE`");
    assert_reported(&problems, "verdict tokens");
    // A section the document does not have.
    let adapter = "instruction-set/adapter.md";
    let problems = problems_after(
        &bundle,
        "instruction-set/team-contract.md",
        "(lead contract, section 3)",
        "(lead contract, section 8)",
    );
    assert_reported(
        &problems,
        "points at a section `instruction-set/lead-contract.md` does not have",
    );
    // A flag of another command.
    let problems = problems_after(
        &bundle,
        adapter,
        "`okstra submit`'s `--agent-id",
        "`okstra next`'s `--agent-id",
    );
    assert_reported(
        &problems,
        "follows `okstra next`, which has no flag `--agent-id`",
    );
    // An event okstra records itself.
    let problems = problems_after(
        &bundle,
        lead,
        "## 2. The loop",
        "Then run `okstra event <run-dir> round-complete --field round=1`.\n\n## 2. The loop",
    );
    assert_reported(&problems, "which okstra records itself");
    // The lead repairing the report the writer was promised to repair.
    let problems = problems_after(
        &bundle,
        lead,
        "## 2. The loop",
        "When the report is invalid you may edit data.json to fix it.\n\n## 2. The loop",
    );
    assert_reported(&problems, "has the lead repair the report");
    // A dispatch through a wrapper that may not be on PATH.
    let problems = problems_after(
        &bundle,
        lead,
        "## 3. Telling the user",
        "Run `okstra-claude-exec /p opus prompt.md`.\n\n## 3. Telling the user",
    );
    assert_reported(&problems, "calls a wrapper");
}

#[test]
fn command_lines_expand_placeholders_options_and_alternatives() {
    let variants = command_variants(
        "dispatch <run-dir> [--kind initial|critic] [--workers ID,…] [--json]",
        "/r",
    );
    assert_eq!(
        variants,
        [
            [
                "dispatch",
                "/r",
                "--kind",
                "initial",
                "--workers",
                "claude",
                "--json"
            ],
            [
                "dispatch",
                "/r",
                "--kind",
                "critic",
                "--workers",
                "claude",
                "--json"
            ],
        ]
    );
    assert_eq!(
        command_variants("event /r <kind> [--field key=value …]", "/r"),
        [["event", "/r", "initial", "--field", "key=value"]]
    );
}

/// Bytes a lead must read before its first dispatch: the handoff and the
/// documents it lists under "Read now" (lazy delivery), or the handoff up
/// to "Read when you reach it" (eager delivery: the documents are inside).
fn mandatory_reading(bundle: &Bundle) -> usize {
    let handoff = bundle.read("handoff.md");
    if let Some((before, _)) = handoff.split_once("\n# Read when you reach it") {
        return before.len();
    }
    let (_, now) = handoff
        .split_once("\n## Read now\n")
        .expect("a lazy handoff has a `Read now` list");
    let now = now.split("\n## ").next().unwrap_or_default();
    let documents: usize = now
        .lines()
        .filter_map(|line| line.split('`').nth(1))
        .map(|path| {
            fs::metadata(path)
                .unwrap_or_else(|err| panic!("`{path}`: {err}"))
                .len()
        })
        .map(|len| usize::try_from(len).unwrap())
        .sum();
    handoff.len() + documents
}

/// The reading budget before the lead's first action (issue 22): the
/// handoff and what its `Read now` list names.
const READING_BUDGET: usize = 12_000;

#[test]
fn the_default_rosters_mandatory_reading_fits_the_budget() {
    let mut over = Vec::new();
    for task_type in TASK_TYPES {
        for runtime in ["claude-code", "codex", "antigravity", "external"] {
            let bundle = Bundle::render(task_type, runtime, ROSTERS[0]);
            let bytes = mandatory_reading(&bundle);
            eprintln!("mandatory reading {task_type} × {runtime}: {bytes} bytes");
            if bytes > READING_BUDGET {
                over.push(format!("{} reads {bytes} bytes", bundle.label));
            }
        }
    }
    assert!(
        over.is_empty(),
        "over {READING_BUDGET} bytes:\n{}",
        over.join("\n")
    );
}
