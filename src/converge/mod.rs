//! Phase 5.5 computed by okstra: `okstra items` and `okstra converge
//! plan | record | classify`.
//!
//! A lead (a host session, or `okstra run`) only transports: `plan` decides
//! which items go to which reviewers and renders their reverify prompts,
//! `record` reads the reviewers' verdict tables into the ledger, `classify`
//! applies the rules (`derive::classes`, one pure function) and says why
//! convergence stopped. The public functions [`plan::plan()`],
//! [`record::record()`] and [`classify()`] are what `okstra run` calls; the
//! `*_command` functions only print their results.
//!
//! Only claims are reviewed (`claims` says which sections of a task type's
//! result are claims), each with its anchors checked once against the run's
//! snapshot (`anchors`); claims of different workers at overlapping lines
//! are presented together (`group`), each still judged on its own, and one
//! finding only when reviewers say so (`derive::identity`).
//!
//! Submodules: `ledger` owns the two state files (ledger, round plan),
//! `plan` the round plan and prompts, `record` the
//! verdict tables, `claims` the claim sections, `group` the overlaps; `fix`
//! the implementation fix cycle's request and `fix_check` the verifiers'
//! check of the fix pass.

mod blind;
pub mod claims;
pub mod fix;
pub mod fix_check;
mod group;
pub mod ledger;
pub mod plan;
pub mod record;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use serde::Serialize;

use crate::anchors;
use crate::cli::{ConvergeArgs, ConvergeCommand, ItemsArgs};
use crate::derive::{classes, reviewers};
use crate::diag;
use crate::fsread;
use crate::items::Item;
use crate::output::{Answer, Reply};
use crate::run::layout::RunLayout;
use crate::run::roster::Assignment;
use crate::run::team_state::DispatchRecord;
use crate::run::{Parts, Records, Run};

pub use self::ledger::Ledger;
pub use self::plan::PlanOptions;
use crate::vocab::{FinalClass, NoEnding, Shortfall, StopReason};

/// The run's convergence settings (run manifest `convergence`).
pub use crate::run::manifest::Convergence as Settings;

/// A run as convergence sees it: its records (read once), its roster of
/// analysers and whether each completed its own work.
pub struct RunInfo {
    pub records: Records,
    pub settings: Settings,
    /// Analysers (or verifiers, in `implementation`), in roster order.
    pub analysers: Vec<Analyser>,
}

/// One analyser and how its own work ended.
pub use crate::derive::reviewers::Reviewer as Analyser;

impl RunInfo {
    /// Open the run in `run_dir` and read its records, without the round
    /// plans.
    pub fn load_facts(run_dir: &Path) -> Result<RunInfo> {
        RunInfo::load_parts(run_dir, Parts::FACTS)
    }

    /// The run's records read as far as `parts` says (see [`Parts`]).
    pub fn load_parts(run_dir: &Path, parts: Parts) -> Result<RunInfo> {
        let run = Run::open(run_dir)?;
        Ok(RunInfo::from_records(Records::load(run, parts)?))
    }

    /// Convergence's view of an opened run.
    pub fn of(run: Run) -> Result<RunInfo> {
        Ok(RunInfo::from_records(Records::load(run, Parts::ALL)?))
    }

    /// Convergence's view of a run whose records are read.
    pub fn from_records(records: Records) -> RunInfo {
        RunInfo {
            settings: records.run.convergence,
            analysers: reviewers::of(&records),
            records,
        }
    }

    pub fn run(&self) -> &Run {
        &self.records.run
    }

    pub fn dir(&self) -> &Path {
        &self.records.run.dir
    }

    /// The latest attempt of dispatch `name`.
    fn latest_attempt(&self, name: &str) -> Option<&DispatchRecord> {
        self.records.state.latest(name)
    }

    /// Every rostered analyser's worker id.
    pub fn rostered(&self) -> BTreeSet<String> {
        reviewers::rostered(&self.analysers)
    }

    /// Analysers that completed their own work and have not failed since
    /// (per the team state or the ledger's `unavailable`).
    pub fn available(&self, ledger: Option<&Ledger>) -> BTreeSet<String> {
        reviewers::available(&self.analysers, &self.records.state, ledger)
    }

    /// Every completed analyser's items, in roster then file order, within
    /// the caps of `items`; a result that hit one gets a `warning:` line per
    /// cap (items cut and marked `truncated`, items left out). Each item
    /// says whether it is a claim, and carries its anchors as okstra checked
    /// them when the result was first accepted (`anchors`).
    pub fn items(&self) -> Result<Vec<(&Analyser, Vec<Found>)>> {
        anyhow::ensure!(
            self.records.results.parsed,
            "the run's results were not read (a bug: its records were loaded without them)"
        );
        let mut parsed_all = Vec::new();
        for analyser in self.analysers.iter().filter(|a| a.completed.is_ok()) {
            let own = self.records.results.own.get(&analyser.assignment.worker_id);
            let path = &analyser.assignment.paths.result_path;
            let Some((sha256, parsed)) =
                own.and_then(|own| Some((own.sha256.clone()?, own.parsed.clone())))
            else {
                let why = own
                    .and_then(|own| own.unreadable.clone())
                    .unwrap_or_else(|| "it is not a file okstra can read".to_owned());
                bail!("cannot read result `{}`: {why}", path.display());
            };
            for warning in parsed.warnings(&analyser.assignment.worker_id, path) {
                diag::warning(warning);
            }
            parsed_all.push((analyser, sha256, parsed.items));
        }
        let to_check: Vec<anchors::ResultToCheck<'_>> = parsed_all
            .iter()
            .map(|(analyser, sha256, items)| anchors::ResultToCheck {
                worker_id: &analyser.assignment.worker_id,
                sha256: sha256.clone(),
                items: items
                    .iter()
                    .map(|item| anchors::ItemToCheck {
                        id: &item.id,
                        line: item.line,
                        anchors: &item.anchors,
                    })
                    .collect(),
            })
            .collect();
        let checked = anchors::check_results(&self.records.run, &to_check)
            .context("cannot check the results' anchors")?;
        drop(to_check);
        let profile = self.records.run.profile();
        Ok(parsed_all
            .into_iter()
            .zip(checked)
            .map(|((analyser, _, items), anchorings)| {
                let found = items
                    .into_iter()
                    .zip(anchorings)
                    .map(|(item, anchoring)| Found {
                        claim: claims::is_claim(profile, &item.section),
                        anchoring: anchoring.into(),
                        item,
                    })
                    .collect();
                (analyser, found)
            })
            .collect())
    }
}

/// One item of a completed result, as convergence takes it in.
pub struct Found {
    pub item: Item,
    /// In a claim section of the task type: cross-checked in convergence.
    pub claim: bool,
    /// Its anchors, checked against the run's snapshot.
    pub anchoring: ledger::Anchoring,
}

/// What `classify` found.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Classified {
    pub ledger_path: PathBuf,
    pub rounds_run: u32,
    /// `None` while another round is due.
    pub stopped_because: Option<StopReason>,
    /// Item ids still open, in ledger order.
    pub open: Vec<String>,
    /// How many items are in each class.
    pub classes: BTreeMap<FinalClass, usize>,
    #[serde(skip)]
    pub ledger: Ledger,
}

impl Classified {
    /// `ledger`, kept at `ledger_path`, with `open` its open item ids.
    fn of(ledger_path: PathBuf, ledger: Ledger, open: Vec<String>) -> Classified {
        Classified {
            ledger_path,
            rounds_run: ledger.rounds_run,
            stopped_because: ledger.stopped_because,
            classes: class_counts(&ledger),
            open,
            ledger,
        }
    }
}

/// The ledger's classes as they stand, without recomputing or writing
/// anything; `None` when the run has no ledger.
pub fn summary(info: &RunInfo) -> Option<Classified> {
    let path = RunLayout::of(info.dir()).convergence_ledger();
    let ledger = info.records.ledger.clone()?;
    let open = ledger
        .items
        .iter()
        .filter(|item| item.open)
        .map(|item| item.item_id.clone())
        .collect();
    Some(Classified::of(path, ledger, open))
}

/// Take the ledger back to how it was after round `round` (0: no ledger
/// at all), so a round planned again from changed results starts clean.
/// Nothing changes when it has no later round.
pub fn rewind(run: &Run, round: u32) -> Result<()> {
    let path = run.layout().convergence_ledger();
    let Some(mut ledger) = ledger::read::<Ledger>(&path, ledger::LEDGER_SCHEMA)? else {
        return Ok(());
    };
    let later = ledger.rounds_run > round
        || ledger.items.iter().any(|item| {
            item.verdicts.iter().any(|v| v.round > round)
                || item.sent_to.iter().any(|s| s.round > round)
        });
    if !later {
        return Ok(());
    }
    if round == 0 {
        return std::fs::remove_file(&path)
            .with_context(|| format!("cannot remove `{}`", path.display()));
    }
    ledger.rounds_run = ledger.rounds_run.min(round);
    ledger.stopped_because = None;
    ledger
        .unavailable
        .retain(|u| u.round.is_none_or(|r| r <= round));
    for item in &mut ledger.items {
        item.verdicts.retain(|v| v.round <= round);
        item.no_answer.retain(|n| n.round <= round);
        item.sent_to.retain(|s| s.round <= round);
    }
    ledger::write(&path, ledger::LEDGER_SCHEMA, &ledger)?;
    Ok(())
}

/// Recompute every claim's finding, class, open state and withdrawal, and
/// the stop reason of a ledger, in place (`derive::classes`, the one rule).
pub fn apply_rules(info: &RunInfo, ledger: &mut Ledger) -> Vec<String> {
    let ruling = reviewers::judge(&info.analysers, &info.records.state, ledger);
    let judged = ruling.judged;
    let merged: Vec<Vec<String>> = (0..ledger.items.len())
        .map(|index| {
            judged
                .findings
                .with(index)
                .iter()
                .filter(|&&other| other != index)
                .map(|&other| ledger.items[other].item_id.clone())
                .collect()
        })
        .collect();
    let mut open = Vec::new();
    for ((index, item), merged_with) in ledger.items.iter_mut().enumerate().zip(merged) {
        let outcome = judged.outcome(index);
        item.final_class = Some(outcome.class);
        item.open = outcome.open;
        item.withdrawn = classes::is_withdrawn(item);
        item.merged_with = merged_with;
        if outcome.open {
            open.push(item.item_id.clone());
        }
    }
    ledger.enabled = info.settings.enabled;
    ledger.adversarial = info.settings.adversarial;
    ledger.stopped_because = classes::stop(
        ruling.rostered,
        ruling.available,
        ledger.rounds_run,
        info.settings.effective_max_rounds,
        open.len(),
    );
    open
}

/// Add an `unavailable` entry for every analyser that never completed its
/// own work.
fn note_unavailable(info: &RunInfo, ledger: &mut Ledger) {
    for analyser in &info.analysers {
        let Err(why) = analyser.completed else {
            continue;
        };
        let id = &analyser.assignment.worker_id;
        if !ledger.unavailable.iter().any(|u| &u.worker_id == id) {
            ledger.unavailable.push(ledger::Unavailable {
                worker_id: id.clone(),
                terminal_status: why.as_str().to_owned(),
                round: None,
            });
        }
    }
}

/// A ledger with every completed analyser's claims and no verdicts (what a
/// run has before round 1, or when convergence never runs).
fn fresh_ledger(info: &RunInfo) -> Result<Ledger> {
    let mut ledger = Ledger {
        schema_version: ledger::FORMAT_VERSION,
        ..Ledger::default()
    };
    let mut claims = plan::claims(info)?.items;
    group::assign(&mut claims);
    for claim in claims {
        ledger.items.push(ledger::LedgerItem {
            item_id: claim.item_id,
            owner: claim.owner,
            section: Some(claim.section),
            text: Some(claim.text),
            evidence: claim.evidence,
            truncated: claim.truncated,
            anchoring: claim.anchoring,
            grouping: claim.grouping,
            ..ledger::LedgerItem::default()
        });
    }
    Ok(ledger)
}

/// `okstra converge classify`: recompute every class and the stop reason
/// from the ledger's verdicts and the run's roster, and write it back. A run
/// without a ledger gets one (every item `worker-unique`).
pub fn classify(run_dir: &Path) -> Result<Classified> {
    // The results are read only for a run without a ledger (its claims).
    let ledgered = RunLayout::of(run_dir).convergence_ledger().exists();
    let mut info =
        RunInfo::load_parts(run_dir, if ledgered { Parts::STATE } else { Parts::FACTS })?;
    let path = RunLayout::of(info.dir()).convergence_ledger();
    let mut ledger = match info.records.ledger.take() {
        Some(ledger) => ledger,
        None => fresh_ledger(&info)?,
    };
    note_unavailable(&info, &mut ledger);
    let open = apply_rules(&info, &mut ledger);
    ledger::write(&path, ledger::LEDGER_SCHEMA, &ledger)?;
    Ok(Classified::of(path, ledger, open))
}

fn class_counts(ledger: &Ledger) -> BTreeMap<FinalClass, usize> {
    FinalClass::ALL
        .iter()
        .copied()
        .map(|class| {
            let count = ledger
                .items
                .iter()
                .filter(|item| item.final_class == Some(class))
                .count();
            (class, count)
        })
        .collect()
}

/// What `okstra items` answers: every item of the completed analysers,
/// and the analysers skipped (`{"workerId", "reason"}` each).
struct Listed<'a> {
    listed: &'a [(String, Found)],
    skipped: &'a [serde_json::Value],
}

impl serde::Serialize for Listed<'_> {
    fn serialize<S: serde::Serializer>(&self, to: S) -> Result<S::Ok, S::Error> {
        let items: Vec<_> = self
            .listed
            .iter()
            .map(|(owner, found)| {
                let item = &found.item;
                serde_json::json!({
                    "itemId": format!("{owner}:{}", item.id),
                    "owner": owner,
                    "id": item.id,
                    "section": item.section,
                    "claim": found.claim,
                    "line": item.line,
                    "text": item.text,
                    "evidence": item.evidence,
                    "anchorStatus": found.anchoring.anchor_status,
                    "anchors": found.anchoring.anchors,
                    "truncated": item.truncated,
                })
            })
            .collect();
        serde_json::json!({ "items": items, "skipped": self.skipped }).serialize(to)
    }
}

impl Answer for Listed<'_> {
    const SCHEMA: &'static str = "items-answer.schema.json";
    const VERSION: Option<u32> = Some(1);
}

/// A line per item; text from a worker's file is escaped, so no terminal
/// sequence in an item reaches the screen and each item stays one line.
impl crate::output::Text for Listed<'_> {
    fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        for (owner, found) in self.listed {
            let item = &found.item;
            writeln!(
                out,
                "{}:{}\t{}\t{}\t{}\t{}\t{} cited{}",
                fsread::escape(owner),
                fsread::escape(&item.id),
                fsread::escape(&item.section),
                if found.claim { "claim" } else { "description" },
                found
                    .anchoring
                    .anchor_status
                    .map_or("unchecked", crate::vocab::AnchorStatus::as_str),
                fsread::escape(&item.text),
                item.evidence.len(),
                if item.truncated { " (truncated)" } else { "" }
            )?;
        }
        Ok(())
    }
}

/// `okstra items`.
pub fn items_command(args: &ItemsArgs) -> Result<Reply> {
    let info = RunInfo::load_facts(&args.run_dir)?;
    let mut listed = Vec::new();
    let mut skipped = Vec::new();
    for analyser in &info.analysers {
        if let Err(why) = analyser.completed {
            skipped.push(serde_json::json!({
                "workerId": analyser.assignment.worker_id,
                "reason": why,
            }));
        }
    }
    for (analyser, items) in info.items()? {
        for found in items {
            listed.push((analyser.assignment.worker_id.clone(), found));
        }
    }
    let answer = Listed {
        listed: &listed,
        skipped: &skipped,
    };
    let reply = Reply::answer(&answer, args.json)?;
    for analyser in &info.analysers {
        if let Err(why) = analyser.completed {
            diag::progress(format_args!(
                "skipped `{}`: {}",
                analyser.assignment.worker_id,
                not_completed(why)
            ));
        }
    }
    Ok(reply)
}

/// The round plan as written to the run (`round-<n>.plan.json`).
impl Answer for ledger::Plan {
    const SCHEMA: &'static str = "round-plan.schema.json";
    const VERSION: Option<u32> = None;
}

impl Answer for record::Outcome {
    const SCHEMA: &'static str = "converge-record-answer.schema.json";
    const VERSION: Option<u32> = Some(1);
}

impl Answer for Classified {
    const SCHEMA: &'static str = "converge-classify-answer.schema.json";
    const VERSION: Option<u32> = Some(1);
}

/// Why an analyser's items are left out, in words that claim no more than
/// the records hold: an analyser with no attempt did not run, and one whose
/// attempt has not ended is not said to have ended.
fn not_completed(why: Shortfall) -> String {
    match why {
        Shortfall::Ended(ending) => format!("it did not complete ({ending})"),
        Shortfall::Unended(NoEnding::NotDispatched) => {
            format!("it was not dispatched ({why}: no attempt of it is recorded)")
        }
        Shortfall::Unended(NoEnding::NotEnded) => {
            format!("its attempt has not ended ({why}: no ending is recorded)")
        }
    }
}

/// A round's plan for a person: each reviewer's prompt, one a line.
impl crate::output::Text for ledger::Plan {
    fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        for reviewer in &self.reviewers {
            writeln!(
                out,
                "{}",
                fsread::escape(&reviewer.prompt_path.to_string_lossy())
            )?;
        }
        Ok(())
    }
}

/// A recorded round for a person: the items still open, one a line.
impl crate::output::Text for record::Outcome {
    fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        for id in &self.open {
            writeln!(out, "{}", fsread::escape(id))?;
        }
        Ok(())
    }
}

/// The classification for a person: `<item>\t<class>[\topen]` a line.
impl crate::output::Text for Classified {
    fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        for item in &self.ledger.items {
            let class = item.final_class.map_or("", FinalClass::as_str);
            let open = if item.open { "\topen" } else { "" };
            writeln!(out, "{}\t{class}{open}", fsread::escape(&item.item_id))?;
        }
        Ok(())
    }
}

/// `okstra converge …`.
pub fn converge_command(args: &ConvergeArgs) -> Result<Reply> {
    match &args.command {
        ConvergeCommand::Plan(plan_args) => {
            let options = PlanOptions {
                blind: !plan_args.no_blind,
                seed: plan_args.seed,
            };
            let plan = plan::plan(&plan_args.run_dir, plan_args.round, options)?;
            let reply = Reply::answer(&plan, plan_args.json)?;
            let path = RunLayout::of(&plan_args.run_dir).round_plan(plan.round);
            let summary = match plan.stopped_because {
                Some(reason) => format!(
                    "round {} does not run ({}); wrote `{}`",
                    plan.round,
                    reason.as_str(),
                    path.display()
                ),
                None => format!(
                    "round {}: {} items for {} reviewers; wrote `{}`",
                    plan.round,
                    plan.items.len(),
                    plan.reviewers.len(),
                    path.display()
                ),
            };
            for warning in &plan.warnings {
                diag::warning(warning);
            }
            ledger::discard(plan);
            Ok(reply.then_say(move || diag::progress(summary)))
        }
        ConvergeCommand::Record(record_args) => {
            let outcome = record::record(&record_args.run_dir, record_args.round)?;
            let reply = Reply::answer(&outcome, record_args.json)?;
            for problem in &outcome.problems {
                diag::warning(problem.line());
            }
            let summary = format!(
                "round {} recorded: {} verdicts, {} open items{}",
                outcome.round,
                outcome.verdicts,
                outcome.open.len(),
                outcome
                    .stopped_because
                    .map_or_else(String::new, |r| format!(
                        "; convergence stops ({})",
                        r.as_str()
                    ))
            );
            Ok(reply.then_say(move || diag::progress(summary)))
        }
        ConvergeCommand::Classify(classify_args) => {
            let classified = classify(&classify_args.run_dir)?;
            let reply = Reply::answer(&classified, classify_args.json)?;
            let summary = format!(
                "{} items classified after {} rounds; {}",
                classified.ledger.items.len(),
                classified.rounds_run,
                classified.stopped_because.map_or_else(
                    || format!("{} still open", classified.open.len()),
                    |r| format!("stopped: {}", r.as_str())
                )
            );
            ledger::discard(classified);
            Ok(reply.then_say(move || diag::progress(summary)))
        }
    }
}

/// Refuse a round outside `1..=effectiveMaxRounds`.
fn check_round(info: &RunInfo, round: u32) -> Result<()> {
    let max = info.settings.effective_max_rounds;
    if round == 0 || (max > 0 && round > max) {
        bail!(
            "invalid round `{round}`: this run has rounds 1 to {max} (`convergence.effectiveMaxRounds`)"
        );
    }
    Ok(())
}
