//! `okstra converge plan`: which items go to which reviewers in round N,
//! and each reviewer's reverify prompt with its batch inlined.
//!
//! Round 1 sends each completed analyser's items to every other completed
//! analyser; round N ≥ 2 sends every item the ledger holds open to every
//! available analyser, the owner included, with the earlier verdicts. Blind
//! by default: a reviewer sees `Item 1 … Item k` in an order shuffled by
//! the plan's seed and its own worker id, never another worker's id,
//! provider or model; only the plan maps labels back to `worker:item`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use minijinja::value::Serde;
use serde::Serialize;
use serde_json::Value;

use crate::catalog::{DispatchKind, Role};
use crate::digest::sha256_hex;
use crate::durable;
use crate::items::{self, Evidence};
use crate::run::layout::RunLayout;
use crate::run::roster::DispatchPaths;
use crate::template;

use super::ledger::{
    self, FORMAT_VERSION, Label, Ledger, Plan, PlanItem, Reviewer, StopReason, VerdictEntry,
};
use super::{Analyser, RunInfo, apply_rules, check_round};

/// How a plan is made.
#[derive(Debug, Clone, Copy)]
pub struct PlanOptions {
    /// Neutral labels and a shuffled order (the default).
    pub blind: bool,
    /// The shuffle seed; the run's own when `None` (the same every time).
    pub seed: Option<u64>,
}

/// Seeds are kept below 2^53 so every JSON reader holds them exactly.
const SEED_MASK: u64 = (1 << 53) - 1;

/// Most items one round plan holds: five analysers' whole results
/// (`items::MAX_ITEMS` each). Later items are left out of the round, with
/// a warning in the plan and on stderr.
pub const MAX_PLAN_ITEMS: usize = 5 * items::MAX_ITEMS;
/// Most bytes of item text (text, heading, citations, earlier verdicts) one
/// round plan holds: each reviewer's prompt inlines its batch, so this also
/// bounds every prompt (a model reads far less than this anyway).
pub const MAX_PLAN_BYTES: usize = 8 * 1024 * 1024;

/// What a plan has taken in so far, against [`MAX_PLAN_ITEMS`] and
/// [`MAX_PLAN_BYTES`].
#[derive(Default)]
struct Budget {
    items: usize,
    bytes: usize,
    left_out: usize,
    first_left_out: Option<String>,
}

impl Budget {
    /// Whether `item` still fits; one that does not is counted as left out.
    fn admits(&mut self, item: &PlanItem) -> bool {
        let bytes = item.text.len()
            + item.section.len()
            + item.evidence.iter().map(|e| e.text.len()).sum::<usize>()
            + item
                .previous_verdicts
                .iter()
                .map(|v| v.evidence.len() + v.addition.as_ref().map_or(0, String::len))
                .sum::<usize>();
        if self.left_out == 0 && self.items < MAX_PLAN_ITEMS && self.bytes + bytes <= MAX_PLAN_BYTES
        {
            self.items += 1;
            self.bytes += bytes;
            return true;
        }
        self.left_out += 1;
        self.first_left_out
            .get_or_insert_with(|| item.item_id.clone());
        false
    }

    /// The warning for a plan that left items out.
    fn warning(&self, round: u32) -> Option<String> {
        let first = self.first_left_out.as_deref()?;
        Some(format!(
            "round {round} holds {} items, the cap per plan ({MAX_PLAN_ITEMS} items or \
             {MAX_PLAN_BYTES} bytes of item text); the {} from `{first}` on are left out of this \
             round and not reviewed in it",
            self.items, self.left_out
        ))
    }
}

/// Compute, persist and render round `round` of the run in `run_dir`.
pub fn plan(run_dir: &Path, round: u32, options: PlanOptions) -> Result<Plan> {
    let info = RunInfo::load(run_dir)?;
    check_round(&info, round)?;
    let ledger_path = RunLayout::of(info.dir()).convergence_ledger();
    let ledger: Option<Ledger> = ledger::read(&ledger_path, ledger::LEDGER_SCHEMA)?;
    let recorded = ledger.as_ref().map_or(0, |l| l.rounds_run);
    if recorded + 1 != round {
        bail!(
            "cannot plan round `{round}`: the ledger `{}` has {recorded} round{} recorded, so the \
             next round is {}",
            ledger_path.display(),
            if recorded == 1 { "" } else { "s" },
            recorded + 1
        );
    }
    let seed = options
        .seed
        .unwrap_or_else(|| run_seed(&info.run.run_id, round))
        & SEED_MASK;
    let rostered = info.rostered();
    let mut plan = Plan {
        schema_version: FORMAT_VERSION,
        round,
        created_at: crate::clock::rfc3339_now(),
        run_id: info.run.run_id.clone(),
        blind: options.blind,
        seed,
        adversarial: info.settings.adversarial,
        stopped_because: None,
        items: Vec::new(),
        reviewers: Vec::new(),
        warnings: Vec::new(),
    };
    let available: BTreeSet<String>;
    let mut budget = Budget::default();
    if round == 1 {
        available = info.available(None);
        let mut listed = BTreeSet::new();
        for (analyser, found) in info.items()? {
            let owner = &analyser.assignment.worker_id;
            let reviewers: Vec<String> = info
                .analysers
                .iter()
                .map(|a| &a.assignment.worker_id)
                .filter(|id| *id != owner && available.contains(*id))
                .cloned()
                .collect();
            for item in found {
                let item_id = format!("{owner}:{}", item.id);
                if !listed.insert(item_id.clone()) {
                    plan.warnings.push(format!(
                        "`{item_id}` appears more than once in `{}` (line {}); only its first \
                         occurrence is reviewed",
                        source(analyser).display(),
                        item.line
                    ));
                    continue;
                }
                let planned = PlanItem {
                    item_id,
                    owner: owner.clone(),
                    section: item.section,
                    text: item.text,
                    evidence: item.evidence,
                    truncated: item.truncated,
                    source: source(analyser),
                    reviewers: reviewers.clone(),
                    previous_verdicts: Vec::new(),
                };
                if budget.admits(&planned) {
                    plan.items.push(planned);
                }
            }
        }
    } else {
        let mut ledger = ledger.unwrap_or_default();
        apply_rules(&info, &mut ledger);
        available = info.available(Some(&ledger));
        for item in ledger.items.iter().filter(|item| item.open) {
            let owner = info
                .analysers
                .iter()
                .find(|a| a.assignment.worker_id == item.owner);
            let planned = PlanItem {
                item_id: item.item_id.clone(),
                owner: item.owner.clone(),
                section: item.section.clone().unwrap_or_default(),
                text: item.text.clone().unwrap_or_default(),
                evidence: item.evidence.clone(),
                truncated: item.truncated,
                source: owner.map(source).unwrap_or_default(),
                reviewers: info
                    .analysers
                    .iter()
                    .map(|a| a.assignment.worker_id.clone())
                    .filter(|id| available.contains(id))
                    .collect(),
                previous_verdicts: item.verdicts.clone(),
            };
            if budget.admits(&planned) {
                plan.items.push(planned);
            }
        }
    }
    plan.warnings.extend(budget.warning(round));
    plan.stopped_because = if rostered.len() < 2 {
        Some(StopReason::SingleWorker)
    } else if available.len() < 2 {
        Some(StopReason::Quorum)
    } else if round > 1 && plan.items.is_empty() {
        Some(StopReason::NoOpenItems)
    } else {
        None
    };
    let prompts = if plan.stopped_because.is_none() {
        render_prompts(&info, &mut plan)?
    } else {
        Vec::new()
    };
    // Prompts first, the plan that hashes them last, in one durable batch.
    let plan_path = RunLayout::of(info.dir()).round_plan(round);
    let plan_bytes = ledger::to_bytes(&plan_path, ledger::PLAN_SCHEMA, &plan)?;
    let mut files: Vec<(PathBuf, &[u8])> = prompts
        .iter()
        .map(|(path, text)| (path.clone(), text.as_bytes()))
        .collect();
    files.push((plan_path.clone(), &plan_bytes));
    durable::write_atomic_all(&files).with_context(|| {
        format!(
            "cannot write the round plan `{}` and its prompts",
            plan_path.display()
        )
    })?;
    Ok(plan)
}

fn source(analyser: &Analyser) -> PathBuf {
    analyser.assignment.paths.result_path.clone()
}

/// The run's own seed for round `round`: the same every time the round is
/// planned, so a plan made again (a resumed run) renders the same prompt
/// bytes and no reviewer is paid twice. It only shuffles; it is never
/// secret.
fn run_seed(run_id: &str, round: u32) -> u64 {
    splitmix(fnv1a(run_id) ^ u64::from(round).rotate_left(32))
}

/// splitmix64: a small, well-mixed step for a deterministic shuffle.
/// See: <https://prng.di.unimi.it/splitmix64.c>
fn splitmix(state: u64) -> u64 {
    let mut z = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// FNV-1a, to give each reviewer its own stream from the plan's seed.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Fisher–Yates over `items` with a splitmix64 stream seeded by `seed`.
fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut state = seed;
    for index in (1..items.len()).rev() {
        state = splitmix(state);
        let bound = u64::try_from(index + 1).unwrap_or(u64::MAX);
        let pick = usize::try_from(state % bound).unwrap_or(0);
        items.swap(index, pick);
    }
}

/// One item as a reviewer's prompt shows it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ShownItem<'a> {
    label: String,
    /// The reviewer owns this item (round ≥ 2 only).
    own: bool,
    /// `worker:item` and owner, shown only with `--no-blind`.
    item_id: Option<&'a str>,
    owner: Option<&'a str>,
    section: &'a str,
    text: &'a str,
    evidence: &'a [Evidence],
    previous_verdicts: Vec<ShownVerdict<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ShownVerdict<'a> {
    round: u32,
    /// `you`, `the owner`, `another reviewer`, or the worker id (not blind).
    reviewer: String,
    verdict: &'static str,
    evidence: &'a str,
    addition: Option<&'a str>,
}

/// The reverify dispatch a prompt is rendered for.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReverifyView<'a> {
    round: u32,
    blind: bool,
    dispatch_name: &'a str,
    #[serde(flatten)]
    paths: &'a DispatchPaths,
    items: Vec<ShownItem<'a>>,
}

/// Give each reviewer its batch and labels, and render its prompt; returns
/// each prompt with the path it goes to.
fn render_prompts(info: &RunInfo, plan: &mut Plan) -> Result<Vec<(PathBuf, String)>> {
    let task = info.run.task()?;
    // The run's own copy of the brief, wherever the manifest says it is:
    // it must be inside the run.
    let brief_path = info
        .run
        .confine(&task.task_brief.copy, "`taskBrief.copy`")
        .with_context(|| {
            format!(
                "the task manifest `{}` is refused",
                info.run.task_manifest_path.display()
            )
        })?;
    let brief_text = items::read_result(&brief_path)
        .with_context(|| format!("cannot read the task brief `{}`", brief_path.display()))?;
    let roster: Vec<Value> = info
        .run
        .assignments
        .iter()
        .map(|a| {
            serde_json::json!({
                "workerId": a.worker_id,
                "role": a.role,
                "provider": a.provider,
                "resultPath": a.paths.result_path,
            })
        })
        .collect();
    let executor = info
        .run
        .assignments
        .iter()
        .find(|a| a.role == Role::Executor)
        .map(|a| serde_json::json!({ "resultPath": a.paths.result_path }));
    let base = serde_json::json!({
        "task": {
            "key": task.task_key,
            "type": task.task_type,
            "workCategory": task.work_category,
            "relatedTasks": task.related_tasks,
            "directive": task.directive,
            "fixCycle": task.fix_cycle,
            "briefText": brief_text,
        },
        "run": {
            "dir": info.dir(),
            "projectRoot": task.project_root,
        },
        "convergence": {
            "enabled": info.settings.enabled,
            "adversarial": info.settings.adversarial,
            "effectiveMaxRounds": info.settings.effective_max_rounds,
        },
        "roster": roster,
        "executor": executor,
        "continuation": { "kind": "none", "inputPath": null },
        "workspace": null,
    });
    let env = template::environment();
    let round = plan.round;
    let mut reviewers = Vec::new();
    let mut prompts = Vec::new();
    for analyser in &info.analysers {
        let worker = &analyser.assignment.worker_id;
        let mut batch: Vec<&PlanItem> = plan
            .items
            .iter()
            .filter(|item| item.reviewers.contains(worker))
            .collect();
        if batch.is_empty() {
            continue;
        }
        if plan.blind {
            shuffle(&mut batch, splitmix(plan.seed ^ fnv1a(worker)));
        }
        let kind = DispatchKind::Reverify(round);
        let dispatch_name = kind.dispatch_name(&analyser.assignment.dispatch_name);
        let paths = DispatchPaths::new(info.dir(), &dispatch_name);
        let labels: Vec<Label> = batch
            .iter()
            .enumerate()
            .map(|(index, item)| Label {
                label: format!("Item {}", index + 1),
                item_id: item.item_id.clone(),
            })
            .collect();
        let shown: Vec<ShownItem<'_>> = batch
            .iter()
            .zip(&labels)
            .map(|(item, label)| show(item, &label.label, worker, plan.blind))
            .collect();
        let view = ReverifyView {
            round,
            blind: plan.blind,
            dispatch_name: &dispatch_name,
            paths: &paths,
            items: shown,
        };
        let assignment = serde_json::json!({
            "workerId": worker,
            "role": analyser.assignment.role,
            "provider": analyser.assignment.provider,
            "runner": analyser.assignment.runner,
            "modelExecutionValue": analyser.assignment.model_execution_value,
            "dispatchName": analyser.assignment.dispatch_name,
            "resultPath": analyser.assignment.paths.result_path,
            "writesProject": false,
        });
        let workspace = reviewer_workspace(info, &task, &analyser.assignment)?;
        let context = minijinja::context! {
            assignment => Serde(&assignment),
            reverifyDispatch => Serde(&view),
            workspace => Serde(&workspace),
            ..minijinja::Value::from(Serde(&base))
        };
        let prompt = template::render(&env, "templates/worker-prompt.md.j2", context)?;
        reviewers.push(Reviewer {
            worker_id: worker.clone(),
            role: analyser.assignment.role.as_str().to_owned(),
            provider: analyser.assignment.provider.as_str().to_owned(),
            model: analyser.assignment.model_execution_value.clone(),
            runner: analyser.assignment.runner.as_str().to_owned(),
            dispatch_kind: kind.as_string(),
            prompt_sha256: sha256_hex(prompt.as_bytes()),
            prompt_path: paths.prompt_path.clone(),
            result_path: paths.result_path,
            worker_results_path: paths.worker_results_path,
            error_path: paths.error_path,
            heartbeat_path: paths.heartbeat_path,
            dispatch_name,
            labels,
        });
        prompts.push((paths.prompt_path, prompt));
    }
    plan.reviewers = reviewers;
    Ok(prompts)
}

/// The reviewer's own copy of the project when its CLI has no read-only
/// mode: the same place the bundle named in its initial prompt
/// (`workspace::locate`), which the engine makes at dispatch.
fn reviewer_workspace(
    info: &RunInfo,
    task: &crate::run::task::TaskManifest,
    assignment: &super::Assignment,
) -> Result<Option<PathBuf>> {
    if !crate::workspace::needs_copy(assignment.provider, assignment.role) {
        return Ok(None);
    }
    let location = crate::workspace::locate(
        &task.project_root,
        &task.task_key,
        &info.run.run_id,
        &assignment.worker_id,
    )
    .with_context(|| {
        format!(
            "cannot place the isolated copy of `{}`",
            assignment.worker_id
        )
    })?;
    Ok(Some(location.project))
}

/// `item` as `reviewer` sees it under `label`.
fn show<'a>(item: &'a PlanItem, label: &str, reviewer: &str, blind: bool) -> ShownItem<'a> {
    let name = |entry: &VerdictEntry| -> String {
        if entry.reviewer == reviewer {
            "you".to_owned()
        } else if !blind {
            entry.reviewer.clone()
        } else if entry.reviewer == item.owner {
            "the owner".to_owned()
        } else {
            "another reviewer".to_owned()
        }
    };
    ShownItem {
        label: label.to_owned(),
        own: item.owner == reviewer,
        item_id: (!blind).then_some(item.item_id.as_str()),
        owner: (!blind).then_some(item.owner.as_str()),
        section: &item.section,
        text: &item.text,
        evidence: &item.evidence,
        previous_verdicts: item
            .previous_verdicts
            .iter()
            .map(|entry| ShownVerdict {
                round: entry.round,
                reviewer: name(entry),
                verdict: entry.verdict.as_str(),
                evidence: &entry.evidence,
                addition: entry.addition.as_deref(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned(id: &str, text_bytes: usize) -> PlanItem {
        PlanItem {
            item_id: id.to_owned(),
            owner: "claude".to_owned(),
            section: String::new(),
            text: "x".repeat(text_bytes),
            evidence: Vec::new(),
            truncated: false,
            source: PathBuf::new(),
            reviewers: Vec::new(),
            previous_verdicts: Vec::new(),
        }
    }

    #[test]
    fn a_plan_stops_taking_items_at_its_caps_and_says_from_which_on() {
        let mut budget = Budget::default();
        assert!(budget.admits(&planned("claude:F-1", MAX_PLAN_BYTES - 10)));
        assert!(!budget.admits(&planned("claude:F-2", 11)));
        // Once one is left out, every later one is too (even a small one).
        assert!(!budget.admits(&planned("claude:F-3", 1)));
        assert_eq!(
            budget.warning(1).unwrap(),
            format!(
                "round 1 holds 1 items, the cap per plan ({MAX_PLAN_ITEMS} items or \
                 {MAX_PLAN_BYTES} bytes of item text); the 2 from `claude:F-2` on are left out \
                 of this round and not reviewed in it"
            )
        );
        let mut budget = Budget::default();
        for n in 0..MAX_PLAN_ITEMS {
            assert!(budget.admits(&planned(&format!("claude:F-{n}"), 1)));
        }
        assert!(!budget.admits(&planned("claude:F-last", 1)));
        assert!(Budget::default().warning(2).is_none());
    }

    #[test]
    fn shuffles_are_deterministic_per_seed_and_reviewer() {
        let mut a: Vec<u32> = (0..50).collect();
        let mut b = a.clone();
        let mut c = a.clone();
        shuffle(&mut a, splitmix(7 ^ fnv1a("codex")));
        shuffle(&mut b, splitmix(7 ^ fnv1a("codex")));
        shuffle(&mut c, splitmix(7 ^ fnv1a("kimi")));
        assert_eq!(a, b);
        assert_ne!(a, c);
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..50).collect::<Vec<_>>());
    }
}
