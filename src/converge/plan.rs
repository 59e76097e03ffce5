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

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};

use crate::catalog::Role;
use crate::durable;
use crate::items;
use crate::run::layout::RunLayout;

use super::ledger::{self, FORMAT_VERSION, Ledger, Plan, PlanItem};
use super::{Analyser, RunInfo, apply_rules, check_round, group};
use crate::anchors;
use crate::vocab::StopReason;

mod prompts;

use self::prompts::render_prompts;

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

#[cfg(test)]
mod tests {
    use super::prompts::letters;
    use super::*;
    use crate::converge::ledger::Anchoring;

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
