//! The reviewers' prompts of a round: each claim shown once (claims at
//! overlapping lines as one entry), a reviewer's own claims beside them as
//! context, and in a blind round nobody named.

use super::{OwnClaim, fnv1a, shuffle, splitmix, worker_workspace};
use crate::catalog::{DispatchKind, Role};
use crate::converge::blind::Blind;
use crate::converge::ledger::{Anchoring, Label, Plan, PlanItem, Reviewer, VerdictEntry};
use crate::converge::{RunInfo, group};
use crate::digest::sha256_hex;
use crate::items;
use crate::run::roster::DispatchPaths;
use crate::template;
use anyhow::{Context as _, Result};
use minijinja::value::Serde;
use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

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
pub(super) fn letters(mut index: usize) -> String {
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
pub(super) fn render_prompts(
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
