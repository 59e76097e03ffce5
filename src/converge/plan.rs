//! `okstra converge plan`: which items go to which reviewers in round N,
//! and each reviewer's reverify prompt with its batch inlined.
//!
//! Round 1 sends each completed analyser's claims (the items of its task
//! type's claim sections; descriptions are not reviewed) to every other
//! completed analyser; round N ≥ 2 sends every item the ledger holds open to
//! every available analyser, the owner included, with the earlier verdicts.
//! Claims at overlapping lines are one entry of the prompt (`Item 3a`,
//! `Item 3b`: one verdict each), headed for what it is, never as one
//! claim; beside an entry, the reviewer is shown its own claims at the same
//! lines as context (`ownContext`), which it may name `same claim as my
//! <id>` (with two analysers nobody else sees both). Each claim shows what
//! okstra found of its anchors when they did not simply verify. Blind by
//! default: a reviewer sees `Item 1 … Item k` in an order shuffled by the
//! plan's seed and its own worker id, never another worker's id, provider
//! or model, and claim texts with worker names and item ids hidden
//! (`blind`); only the plan maps labels back to `worker:item`.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use minijinja::value::Serde;
use serde::Serialize;
use serde_json::Value;

use crate::catalog::{DispatchKind, Role};
use crate::digest::sha256_hex;
use crate::durable;
use crate::items;
use crate::run::layout::RunLayout;
use crate::run::roster::DispatchPaths;
use crate::template;

use super::blind::Blind;
use super::ledger::{
    self, Anchoring, FORMAT_VERSION, Label, Ledger, Plan, PlanItem, Reviewer, VerdictEntry,
};
use super::{Analyser, RunInfo, apply_rules, check_round, group};
use crate::anchors;
use crate::vocab::StopReason;

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
    let mut info = RunInfo::load_facts(run_dir)?;
    check_round(&info, round)?;
    let ledger_path = RunLayout::of(info.dir()).convergence_ledger();
    let ledger: Option<Ledger> = info.records.ledger.take();
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
        .unwrap_or_else(|| run_seed(&info.run().run_id, round))
        & SEED_MASK;
    let rostered = info.rostered();
    let mut plan = Plan {
        schema_version: FORMAT_VERSION,
        round,
        created_at: crate::clock::rfc3339_now(),
        run_id: info.run().run_id.clone(),
        blind: options.blind,
        seed,
        adversarial: info.settings.adversarial,
        stopped_because: None,
        items: Vec::new(),
        reviewers: Vec::new(),
        groups: Vec::new(),
        descriptive: 0,
        warnings: Vec::new(),
    };
    let available: BTreeSet<String>;
    let mut budget = Budget::default();
    // Every claim a reviewer may be shown as its own, beside a claim of
    // another that it overlaps.
    let mut pool: Vec<OwnClaim> = Vec::new();
    if round == 1 {
        available = info.available(None);
        let claims = claims(&info)?;
        plan.descriptive = claims.descriptive;
        plan.warnings.extend(claims.warnings);
        for planned in claims.items {
            if budget.admits(&planned) {
                plan.items.push(planned);
            }
        }
        pool.extend(plan.items.iter().map(|item| OwnClaim {
            item_id: item.item_id.clone(),
            owner: item.owner.clone(),
            text: item.text.clone(),
            anchors: item.anchoring.anchors.clone(),
        }));
    } else {
        let mut ledger = ledger.unwrap_or_default();
        apply_rules(&info, &mut ledger);
        available = info.available(Some(&ledger));
        pool.extend(
            ledger
                .items
                .iter()
                .filter(|item| !item.anchoring.fails() && !item.withdrawn)
                .map(|item| OwnClaim {
                    item_id: item.item_id.clone(),
                    owner: item.owner.clone(),
                    text: item.text.clone().unwrap_or_default(),
                    anchors: item.anchoring.anchors.clone(),
                }),
        );
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
                anchoring: item.anchoring.clone(),
                grouping: ledger::Grouping::default(),
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
    plan.groups = group::assign(&mut plan.items);
    plan.stopped_because = if rostered.len() < 2 {
        Some(StopReason::SingleWorker)
    } else if !crate::derive::quorum::Count::of(rostered.iter().map(|id| {
        if available.contains(id) {
            crate::derive::quorum::Standing::Completed
        } else {
            crate::derive::quorum::Standing::Out
        }
    }))
    .cross_checks()
    {
        Some(StopReason::Quorum)
    } else if round > 1 && plan.items.is_empty() {
        Some(StopReason::NoOpenItems)
    } else {
        None
    };
    let prompts = if plan.stopped_because.is_none() {
        render_prompts(&info, &mut plan, &pool)?
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

/// Round 1's candidates: every completed analyser's claims, each to every
/// other available analyser.
pub struct Claims {
    pub items: Vec<PlanItem>,
    /// Items of descriptive sections, left out.
    pub descriptive: usize,
    /// Duplicate ids, one line each.
    pub warnings: Vec<String>,
}

/// The claims of the run's completed analysers, in roster then file order,
/// with their anchors checked (descriptions counted, not kept).
pub fn claims(info: &RunInfo) -> Result<Claims> {
    let available = info.available(None);
    let mut claims = Claims {
        items: Vec::new(),
        descriptive: 0,
        warnings: Vec::new(),
    };
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
        for found in found {
            let item = found.item;
            let item_id = format!("{owner}:{}", item.id);
            if !listed.insert(item_id.clone()) {
                claims.warnings.push(format!(
                    "`{item_id}` appears more than once in `{}` (line {}); only its first \
                     occurrence is reviewed",
                    source(analyser).display(),
                    item.line
                ));
                continue;
            }
            if !found.claim {
                claims.descriptive += 1;
                continue;
            }
            claims.items.push(PlanItem {
                item_id,
                owner: owner.clone(),
                section: item.section,
                text: item.text,
                evidence: item.evidence,
                truncated: item.truncated,
                anchoring: found.anchoring,
                grouping: ledger::Grouping::default(),
                source: source(analyser),
                reviewers: reviewers.clone(),
                previous_verdicts: Vec::new(),
            });
        }
    }
    Ok(claims)
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

/// A claim a reviewer may be shown as its own, as context beside a claim
/// of another worker at overlapping lines.
struct OwnClaim {
    item_id: String,
    owner: String,
    text: String,
    anchors: Vec<anchors::Checked>,
}

/// One entry of a reviewer's prompt: one claim, or claims at overlapping
/// lines (each with its own label).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ShownEntry<'a> {
    /// `Item 3`, or `Items 3a–3c` for a group.
    label: String,
    /// The file and lines a group's claims share.
    at: Option<&'a str>,
    members: Vec<ShownItem<'a>>,
    /// The reviewer's own claims at the same lines, as context.
    own_context: Vec<ShownOwn<'a>>,
}

/// One of the reviewer's own claims, shown as context.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ShownOwn<'a> {
    /// Its id in the reviewer's own result.
    id: &'a str,
    /// Its first cell, cut to [`GIST_CHARS`]: enough to recognise it.
    text: Cow<'a, str>,
}

/// How much of its own claim a reviewer is reminded of.
const GIST_CHARS: usize = 160;

/// The first cell of a claim's table row (or the whole of a bullet), at
/// most [`GIST_CHARS`] characters.
fn gist(text: &str) -> Cow<'_, str> {
    let first = text.split(" | ").next().unwrap_or(text).trim();
    match first.char_indices().nth(GIST_CHARS) {
        Some((cut, _)) => Cow::Owned(format!("{}…", &first[..cut])),
        None => Cow::Borrowed(first),
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
    /// Its section; `None` when it is the one of the claim shown before.
    section: Option<&'a str>,
    /// As written, or with worker names and item ids hidden (`blind`).
    text: Cow<'a, str>,
    /// What okstra found of the item's anchors, when they did not simply
    /// verify.
    anchors: Option<String>,
    previous_verdicts: Vec<ShownVerdict<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ShownVerdict<'a> {
    round: u32,
    /// `you`, `the owner`, `another reviewer`, or the worker id (not blind).
    reviewer: String,
    verdict: &'static str,
    evidence: Cow<'a, str>,
    addition: Option<Cow<'a, str>>,
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
    /// How many verdicts the reviewer gives.
    count: usize,
    /// Some entry holds a group of claims.
    grouped: bool,
    /// Some entry shows the reviewer's own claims as context.
    own_context: bool,
    entries: Vec<ShownEntry<'a>>,
}

/// What a reviewer is told of an item's anchors: nothing when they
/// verified; where a moved excerpt is; which anchors did not resolve and
/// why; that a claim cites none.
fn anchor_note(anchoring: &Anchoring) -> Option<String> {
    let status = anchoring.anchor_status?;
    match status {
        crate::vocab::AnchorStatus::Verified => None,
        crate::vocab::AnchorStatus::None => {
            Some("it cites no anchor, so okstra could not check it against the code".to_owned())
        }
        crate::vocab::AnchorStatus::Moved | crate::vocab::AnchorStatus::Unanchored => {
            let notes: Vec<String> = anchoring
                .anchors
                .iter()
                .filter_map(|a| match a.status {
                    crate::vocab::AnchorStatus::Moved => Some(format!(
                        "the excerpt of `{}` is at line {}",
                        a.location(),
                        a.found_at.as_deref().unwrap_or("?")
                    )),
                    crate::vocab::AnchorStatus::Unanchored => Some(format!(
                        "`{}` does not resolve: {}",
                        a.location(),
                        a.reason.as_deref().unwrap_or("not found")
                    )),
                    _ => None,
                })
                .collect();
            Some(notes.join("; "))
        }
    }
}

/// `a`, `b`, … `z`, `aa`, `ab`: the member letters of a group's labels.
fn letters(mut index: usize) -> String {
    let mut out = Vec::new();
    loop {
        out.push(char::from(b'a' + u8::try_from(index % 26).unwrap_or(0)));
        if index < 26 {
            break;
        }
        index = index / 26 - 1;
    }
    out.iter().rev().collect()
}

/// `batch` cut into prompt entries: the members of a group together (in
/// their plan order), every other item alone; entries in batch order.
fn entries<'p>(batch: &[&'p PlanItem]) -> Vec<Vec<&'p PlanItem>> {
    let mut entries: Vec<Vec<&PlanItem>> = Vec::new();
    let mut by_group: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for item in batch {
        let Some(group) = item.grouping.group.as_deref() else {
            entries.push(vec![item]);
            continue;
        };
        if let Some(&at) = by_group.get(group) {
            entries[at].push(item);
        } else {
            by_group.insert(group, entries.len());
            entries.push(vec![item]);
        }
    }
    entries
}

/// Give each reviewer its batch and labels, and render its prompt; returns
/// each prompt with the path it goes to.
fn render_prompts(
    info: &RunInfo,
    plan: &mut Plan,
    pool: &[OwnClaim],
) -> Result<Vec<(PathBuf, String)>> {
    let task = info.run().task()?;
    // The run's own copy of the brief, wherever the manifest says it is:
    // it must be inside the run.
    let brief_path = info
        .run()
        .confine(&task.task_brief.copy, "`taskBrief.copy`")
        .with_context(|| {
            format!(
                "the task manifest `{}` is refused",
                info.run().task_manifest_path.display()
            )
        })?;
    let brief_text = items::read_result(&brief_path)
        .with_context(|| format!("cannot read the task brief `{}`", brief_path.display()))?;
    let roster: Vec<Value> = info
        .run()
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
        .run()
        .assignments
        .iter()
        .find(|a| a.role == Role::Executor)
        .map(|a| serde_json::json!({ "resultPath": a.paths.result_path }));
    let base = serde_json::json!({
        "task": {
            "key": task.task_key,
            "type": task.task_type,
            "profile": info.run().profile().stem(),
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
    let blind = blind_of(info);
    let mut reviewers = Vec::new();
    let mut prompts = Vec::new();
    for analyser in &info.analysers {
        let worker = &analyser.assignment.worker_id;
        let batch: Vec<&PlanItem> = plan
            .items
            .iter()
            .filter(|item| item.reviewers.contains(worker))
            .collect();
        if batch.is_empty() {
            continue;
        }
        let mut grouped = entries(&batch);
        if plan.blind {
            let seed = splitmix(plan.seed ^ fnv1a(worker));
            shuffle(&mut grouped, seed);
            for (index, members) in grouped.iter_mut().enumerate() {
                shuffle(members, splitmix(seed ^ index as u64));
            }
        }
        let kind = DispatchKind::Reverify(round);
        let dispatch_name = kind.dispatch_name(&analyser.assignment.dispatch_name);
        let paths = DispatchPaths::new(info.dir(), &dispatch_name);
        // Labels first: a hidden id of a claim in the batch reads as its
        // label.
        let mut labels: Vec<Label> = Vec::new();
        let mut entry_labels: Vec<String> = Vec::new();
        for (index, members) in grouped.iter().enumerate() {
            let number = index + 1;
            if members.len() == 1 {
                entry_labels.push(format!("Item {number}"));
                labels.push(Label {
                    label: format!("Item {number}"),
                    item_id: members[0].item_id.clone(),
                });
                continue;
            }
            entry_labels.push(format!(
                "Items {number}{}–{number}{}",
                letters(0),
                letters(members.len() - 1)
            ));
            for (position, item) in members.iter().enumerate() {
                labels.push(Label {
                    label: format!("Item {number}{}", letters(position)),
                    item_id: item.item_id.clone(),
                });
            }
        }
        let by_item: HashMap<String, String> = labels
            .iter()
            .map(|l| (l.item_id.clone(), l.label.clone()))
            .collect();
        let hide = plan.blind.then_some((&blind, &by_item));
        let mut own_context: BTreeSet<String> = BTreeSet::new();
        let mut shown: Vec<ShownEntry<'_>> = Vec::new();
        let mut last_section: Option<&str> = None;
        for (members, label) in grouped.iter().zip(entry_labels) {
            let mut entry = ShownEntry {
                label,
                at: None,
                members: Vec::new(),
                own_context: Vec::new(),
            };
            if members.len() > 1 {
                entry.at = members
                    .iter()
                    .find_map(|item| item.grouping.group.as_deref())
                    .and_then(|id| plan.groups.iter().find(|g| g.id == id))
                    .map(|g| g.at.as_str());
            }
            for item in members {
                let label = &by_item[&item.item_id];
                let mut member = show(item, label, worker, hide);
                if last_section == member.section {
                    member.section = None;
                } else {
                    last_section = member.section;
                }
                entry.members.push(member);
            }
            for mine in pool.iter().filter(|mine| {
                mine.owner == *worker
                    && !by_item.contains_key(&mine.item_id)
                    && members
                        .iter()
                        .any(|item| group::overlap(&mine.anchors, &item.anchoring.anchors))
            }) {
                own_context.insert(mine.item_id.clone());
                entry.own_context.push(ShownOwn {
                    id: mine
                        .item_id
                        .split_once(':')
                        .map_or(mine.item_id.as_str(), |(_, id)| id),
                    text: gist(&mine.text),
                });
            }
            shown.push(entry);
        }
        let view = ReverifyView {
            round,
            blind: plan.blind,
            dispatch_name: &dispatch_name,
            paths: &paths,
            count: labels.len(),
            grouped: shown.iter().any(|entry| entry.members.len() > 1),
            own_context: !own_context.is_empty(),
            entries: shown,
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
        let workspace = worker_workspace(
            &task.project_root,
            &task.task_key,
            &info.run().run_id,
            &info.run().assignments,
            &analyser.assignment,
            info.run().containment,
        )?;
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
            own_context: own_context.into_iter().collect(),
        });
        prompts.push((paths.prompt_path, prompt));
    }
    plan.reviewers = reviewers;
    Ok(prompts)
}

/// Where `assignment`'s CLI works when it works in a copy (its own, or the
/// Executor's of `roster`: `workspace::copy_owner`), as its prompts name it:
/// the bundle's first prompt and every round's reverify prompt name the one
/// place, which the engine makes at dispatch (for a native worker, when it
/// records the attempt, before the host starts it). `None`: the project.
pub fn worker_workspace(
    project_root: &Path,
    task_key: &str,
    run_id: &str,
    roster: &[super::Assignment],
    assignment: &super::Assignment,
    containment: crate::vocab::Containment,
) -> Result<Option<PathBuf>> {
    let executor = roster
        .iter()
        .find(|a| a.role == Role::Executor)
        .map(|a| a.worker_id.as_str());
    crate::workspace::prompt_root(
        project_root,
        task_key,
        run_id,
        &crate::workspace::Worker::of(assignment),
        containment,
        executor,
    )
    .with_context(|| {
        format!(
            "cannot place the isolated copy of `{}`",
            assignment.worker_id
        )
    })
}

/// What a blind round hides: the roster's worker ids, providers, their
/// CLIs and models, and every item id of every analyser's result.
fn blind_of(info: &RunInfo) -> Blind {
    let mut names: Vec<&str> = Vec::new();
    for assignment in &info.run().assignments {
        names.push(&assignment.worker_id);
        names.push(assignment.provider.as_str());
        names.push(assignment.provider.binary());
        names.push(&assignment.model_execution_value);
    }
    names.extend(crate::catalog::Provider::ALL.iter().map(|p| p.as_str()));
    let ids = info
        .records
        .results
        .own
        .values()
        .flat_map(|own| own.parsed.items.iter().map(|item| item.id.as_str()));
    Blind::new(names, ids)
}

/// `item` as `reviewer` sees it under `label`; with `hide` (a blind round:
/// what to hide, and the reviewer's labels by item id), its text and the
/// earlier verdicts' words without worker names or item ids.
fn show<'a>(
    item: &'a PlanItem,
    label: &str,
    reviewer: &str,
    hide: Option<(&Blind, &HashMap<String, String>)>,
) -> ShownItem<'a> {
    let blind = hide.is_some();
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
    let words = |text: &'a str, author: &str| -> Cow<'a, str> {
        match hide {
            Some((blind, labels)) => blind.text(text, author, labels),
            None => Cow::Borrowed(text),
        }
    };
    ShownItem {
        label: label.to_owned(),
        own: item.owner == reviewer,
        item_id: (!blind).then_some(item.item_id.as_str()),
        owner: (!blind).then_some(item.owner.as_str()),
        section: Some(&item.section),
        text: words(&item.text, &item.owner),
        anchors: anchor_note(&item.anchoring),
        previous_verdicts: item
            .previous_verdicts
            .iter()
            .map(|entry| ShownVerdict {
                round: entry.round,
                reviewer: name(entry),
                verdict: entry.verdict.as_str(),
                evidence: words(&entry.evidence, &entry.reviewer),
                addition: entry
                    .addition
                    .as_deref()
                    .map(|addition| words(addition, &entry.reviewer)),
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
            anchoring: Anchoring::default(),
            grouping: ledger::Grouping::default(),
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
    fn group_members_are_lettered() {
        let names: Vec<String> = [0, 1, 25, 26, 27, 701, 702].map(letters).to_vec();
        assert_eq!(names, ["a", "b", "z", "aa", "ab", "zz", "aaa"]);
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
