//! The fix check: once the Executor's fix pass changed the code, every
//! verifier that completed its own check reviews the fix pass's change
//! against the defects it claims to fix, and nothing else — one more
//! verifier round, limited to those defects.
//!
//! [`plan`] writes `state/fix-check.json` (the defects, the Executor's
//! commit before the fix pass and the fix pass's commit, each verifier's
//! `<dispatch>-fix-check` dispatch) and each verifier's prompt, which
//! inlines the defects and the fix pass's diff; the verifier's copy holds
//! the fix pass's commit with `HEAD` at the commit before it, so `git diff`
//! there is the same diff (`dispatch::place`). Each verifier answers one
//! row per defect, `FIXED` or `NOT-FIXED` ([`verdicts`]). [`outcome`] reads
//! the answers back: a defect is fixed only when every verifier that
//! completed the check on that commit answered `FIXED`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use anyhow::{Context as _, Result};
use minijinja::value::Serde;
use serde::{Deserialize, Serialize};

use crate::catalog::DispatchKind;
use crate::digest::sha256_hex;
use crate::git::Git;
use crate::run::Run;
use crate::run::roster::{Assignment, DispatchPaths};
use crate::run::team_state::TeamState;
use crate::template;
use crate::vocab::Ending;

use super::ledger::LedgerItem;

/// The plan's schema.
pub const PLAN_SCHEMA: &str = "fix-check.schema.json";
/// Version of the plan's format.
const FORMAT_VERSION: u32 = 1;
/// Bytes of the fix pass's diff a prompt inlines; the rest is in the copy
/// (`git diff`), and a model reads less than this anyway.
const MAX_DIFF_BYTES: usize = 256 * 1024;

/// `state/fix-check.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub schema_version: u32,
    /// The Executor's commit before the fix pass.
    pub first: String,
    /// The fix pass's commit.
    pub tip: String,
    pub defects: Vec<Defect>,
    pub checkers: Vec<Checker>,
}

/// One defect the fix pass claims to fix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Defect {
    /// `<worker>:<id>`, as the ledger has it.
    pub id: String,
    /// Its row, as the verifier wrote it.
    pub text: String,
}

/// One verifier's fix-check dispatch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Checker {
    pub worker_id: String,
    pub dispatch_name: String,
    pub prompt_path: PathBuf,
    pub prompt_sha256: String,
    pub result_path: PathBuf,
    pub worker_results_path: PathBuf,
    pub error_path: PathBuf,
    pub heartbeat_path: PathBuf,
}

/// What the fix check came to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Every checker's latest attempt has ended.
    pub ended: bool,
    /// The verifiers that completed the check on the plan's `tip`.
    pub completed: Vec<String>,
    /// The defects every one of them answered `FIXED`.
    pub fixed: BTreeSet<String>,
}

/// Plan the fix check of the fix pass from `first` to `tip` for `defects`,
/// by `verifiers`: write each verifier's prompt, then the plan, and return
/// it.
pub fn plan(
    run: &Run,
    first: &str,
    tip: &str,
    defects: &[&LedgerItem],
    verifiers: &[&Assignment],
) -> Result<Plan> {
    let task = run.task()?;
    let raw = Git::at(&run.project_root)
        .run([
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            first,
            tip,
        ])
        .context("cannot read the fix pass's change")?;
    let cut = raw.len() > MAX_DIFF_BYTES;
    let mut diff = String::from_utf8_lossy(&raw[..raw.len().min(MAX_DIFF_BYTES)]).into_owned();
    // A fence inside the diff would end the prompt's code block early.
    diff = diff.replace("```", "` ` `");
    let defects: Vec<Defect> = defects
        .iter()
        .map(|item| Defect {
            id: item.item_id.clone(),
            text: item.text.clone().unwrap_or_default().trim().to_owned(),
        })
        .collect();
    let env = template::environment();
    let mut checkers = Vec::new();
    for verifier in verifiers {
        let dispatch_name = DispatchKind::FixCheck.dispatch_name(&verifier.dispatch_name);
        let paths = DispatchPaths::new(&run.dir, &dispatch_name);
        // A verifier always works in a copy holding the change: its own, or
        // (under Landlock) the Executor's.
        let executor = run
            .in_role(crate::catalog::Role::Executor)
            .next()
            .map(|a| a.worker_id.as_str());
        let owner = crate::workspace::copy_owner(
            &crate::workspace::Worker::of(verifier),
            run.containment,
            executor,
        )
        .unwrap_or(&verifier.worker_id);
        let project_root =
            crate::workspace::locate(&run.project_root, &run.task_key, &run.run_id, owner)
                .with_context(|| format!("cannot place the copy of `{}`", verifier.worker_id))?
                .project;
        let context = minijinja::context! {
            task => minijinja::context! { key => task.task_key.clone() },
            assignment => minijinja::context! {
                workerId => verifier.worker_id.clone(),
                provider => verifier.provider.as_str(),
                runner => verifier.runner.as_str(),
                modelExecutionValue => verifier.model_execution_value.clone(),
            },
            projectRoot => Serde(&project_root),
            check => minijinja::context! {
                dispatchName => dispatch_name.clone(),
                resultPath => Serde(&paths.result_path),
                workerResultsPath => Serde(&paths.worker_results_path),
                errorPath => Serde(&paths.error_path),
                heartbeatPath => Serde(&paths.heartbeat_path),
                first => first,
                tip => tip,
                defects => Serde(&defects),
                diff => diff.trim_end(),
                diffCut => cut,
            },
        };
        let prompt = template::render(&env, "prompts/workers/fix-check.md.j2", context)?;
        crate::durable::write_if_changed(&paths.prompt_path, prompt.as_bytes())
            .with_context(|| format!("cannot write `{}`", paths.prompt_path.display()))?;
        checkers.push(Checker {
            worker_id: verifier.worker_id.clone(),
            dispatch_name,
            prompt_sha256: sha256_hex(prompt.as_bytes()),
            prompt_path: paths.prompt_path,
            result_path: paths.result_path,
            worker_results_path: paths.worker_results_path,
            error_path: paths.error_path,
            heartbeat_path: paths.heartbeat_path,
        });
    }
    let plan = Plan {
        schema_version: FORMAT_VERSION,
        first: first.to_owned(),
        tip: tip.to_owned(),
        defects,
        checkers,
    };
    let path = run.layout().fix_check();
    let value = serde_json::to_value(&plan)?;
    crate::schema::check(
        PLAN_SCHEMA,
        &value,
        &format!("the fix check `{}`", path.display()),
    )?;
    let mut bytes = serde_json::to_vec_pretty(&value)?;
    bytes.push(b'\n');
    crate::durable::write_if_changed(&path, &bytes)
        .with_context(|| format!("cannot write `{}`", path.display()))?;
    Ok(plan)
}

/// The run's fix check, when it has one; every path it names confined to
/// the run (a plan is a file anyone can edit).
pub fn read(run: &Run) -> Result<Option<Plan>> {
    let path = run.layout().fix_check();
    let Some(bytes) =
        crate::fsread::read_no_follow_if_exists(&path, crate::fsread::Kind::Manifest)?
    else {
        return Ok(None);
    };
    let value: serde_json::Value = serde_json::from_slice(&bytes)
        .with_context(|| format!("`{}` is not valid JSON", path.display()))?;
    crate::schema::check(
        PLAN_SCHEMA,
        &value,
        &format!("the fix check `{}`", path.display()),
    )?;
    let mut plan: Plan = serde_json::from_value(value)?;
    for checker in &mut plan.checkers {
        for (slot, what) in [
            (&mut checker.prompt_path, "`promptPath`"),
            (&mut checker.result_path, "`resultPath`"),
            (&mut checker.worker_results_path, "`workerResultsPath`"),
            (&mut checker.error_path, "`errorPath`"),
            (&mut checker.heartbeat_path, "`heartbeatPath`"),
        ] {
            *slot = run
                .confine(slot, what)
                .with_context(|| format!("the fix check `{}` is not usable", path.display()))?;
        }
    }
    Ok(Some(plan))
}

/// What a checker's result `text` answers: defect id → fixed. A row for a
/// defect not in `ids`, with another verdict word or no evidence, is
/// ignored; a defect answered both ways counts as not fixed.
pub fn verdicts(text: &str, ids: &[&str]) -> BTreeMap<String, bool> {
    let mut answers: BTreeMap<String, bool> = BTreeMap::new();
    for line in text.lines() {
        let cells = cells(line);
        let [id, verdict, evidence, ..] = cells.as_slice() else {
            continue;
        };
        let id = id.trim_matches(|c: char| c == '`' || c == '*' || c.is_whitespace());
        if !ids.contains(&id) || evidence.trim().is_empty() {
            continue;
        }
        let fixed = match verdict
            .trim_matches(|c: char| c == '`' || c == '*' || c.is_whitespace())
            .to_ascii_uppercase()
            .as_str()
        {
            "FIXED" => true,
            "NOT-FIXED" | "NOT FIXED" => false,
            _ => continue,
        };
        let answer = answers.entry(id.to_owned()).or_insert(fixed);
        *answer = *answer && fixed;
    }
    answers
}

/// The cells of a Markdown table row (`\|` stays inside its cell); empty
/// for a line that is not one.
fn cells(line: &str) -> Vec<String> {
    let line = line.trim();
    let Some(inner) = line.strip_prefix('|') else {
        return Vec::new();
    };
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut cells = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                chars.next();
                if let Some(cell) = cells.last_mut() {
                    cell.push('|');
                }
            }
            '|' => cells.push(String::new()),
            c => {
                if let Some(cell) = cells.last_mut() {
                    cell.push(c);
                }
            }
        }
    }
    cells
        .into_iter()
        .map(|cell| cell.trim().to_owned())
        .collect()
}

/// What the fix check of `plan` came to, from each checker's latest
/// attempt and its result's text (`answers`, by Result Path; a result not
/// there reads as empty).
pub fn outcome(
    state: &TeamState,
    plan: &Plan,
    answers_by_path: &std::collections::HashMap<PathBuf, String>,
) -> Outcome {
    let ids: Vec<&str> = plan.defects.iter().map(|d| d.id.as_str()).collect();
    let mut outcome = Outcome {
        ended: true,
        ..Outcome::default()
    };
    let mut answers = Vec::new();
    for checker in &plan.checkers {
        let Some(latest) = state.latest(&checker.dispatch_name) else {
            outcome.ended = false;
            continue;
        };
        match latest.ending {
            None => outcome.ended = false,
            Some(Ending::Completed)
                if latest.workspace.as_ref().and_then(|w| w.commit.as_deref())
                    == Some(plan.tip.as_str()) =>
            {
                let text = answers_by_path
                    .get(&checker.result_path)
                    .map_or("", String::as_str);
                answers.push(verdicts(text, &ids));
                outcome.completed.push(checker.worker_id.clone());
            }
            Some(_) => {}
        }
    }
    if !answers.is_empty() {
        outcome.fixed = ids
            .iter()
            .filter(|id| answers.iter().all(|a| a.get(**id) == Some(&true)))
            .map(|id| (*id).to_owned())
            .collect();
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_defect_is_fixed_only_when_answered_fixed_with_evidence() {
        let text = "\
| Defect | Verdict | Evidence |
|---|---|---|
| `codex:D-001` | FIXED | src/a.rs:1 skips expired holds |
| kimi:D-001 | NOT-FIXED | src/a.rs:9 still counts them |
| codex:D-002 | FIXED | |
| codex:D-003 | MAYBE | src/a.rs:3 |
| other:X-1 | FIXED | src/a.rs:4 |
| codex:D-004 | fixed | a `\\|` in the evidence |
| codex:D-004 | NOT-FIXED | second thoughts |
";
        let answers = verdicts(
            text,
            &[
                "codex:D-001",
                "kimi:D-001",
                "codex:D-002",
                "codex:D-003",
                "codex:D-004",
            ],
        );
        assert_eq!(
            answers,
            BTreeMap::from([
                ("codex:D-001".to_owned(), true),
                ("kimi:D-001".to_owned(), false),
                ("codex:D-004".to_owned(), false),
            ])
        );
    }

    #[test]
    fn escaped_pipes_stay_in_their_cell() {
        assert_eq!(cells(r"| a | b \| c | d |"), ["a", "b | c", "d"]);
        assert!(cells("not a row").is_empty());
    }
}
