//! `okstra land <run-dir> [--check]`: the landing gate of an implementation
//! run, and the landing.
//!
//! The Executor's change lives on `refs/heads/okstra/<task key>/<run id>`
//! (`workspace::branch`). It lands in the user's working tree only when
//! every check passes: the verification half from the run's records
//! (`gate`: the change verified on the branch's tip, no confirmed
//! `blocking`/`major` defect open), then the working-tree half (`apply`:
//! the snapshot's base still an ancestor of `HEAD`, every file of the
//! change writable without touching an uncommitted edit). Nothing is
//! written unless every file can be; then each is replaced atomically, the
//! team state records `landing`, and the report (when there is one) is
//! finalized and rendered again so it says so. `--check` only reports.
//!
//! Each reason is one line on stdout, `<reason>: <detail>`, with the
//! reason one of the stable words of [`LandReason`]. Exit 0 landed (or
//! landable, with `--check`), 1 blocked, 2 bad input.

pub mod apply;
/// The verification half of the gate: where the change stands, from the
/// run's records (`derive::landing`).
pub use crate::derive::landing as gate;

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Result, bail};
use serde::Serialize;

use crate::catalog::TaskType;
use crate::cli::LandArgs;
use crate::diag;
use crate::exit::ExitStatus;
use crate::output::Reply;
use crate::run::events;
use crate::run::lease::Lease;
use crate::run::team_state::{self, Change, Landing};
use crate::run::{Parts, Records, Run};

use self::gate::{Blocker, short};
use crate::vocab::EventKind;
use crate::vocab::{Ancestry, FileAction, LandOutcome, LandReason, LandingState};

/// How long `okstra land` waits for another driver of the run.
const LEASE_WAIT: Duration = Duration::from_secs(5);
/// Version of the `--json` document.
const LAND_VERSION: u32 = 1;

/// What `okstra land --json` prints.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Outcome {
    schema_version: u32,
    run_dir: PathBuf,
    /// `landed`, `landable` (with `--check`), `blocked`, or
    /// `already-landed`.
    state: LandOutcome,
    branch: Option<String>,
    commit: Option<String>,
    ancestry: Option<Ancestry>,
    mergeable: Option<bool>,
    reasons: Vec<Blocker>,
    files: Vec<FileLine>,
}

/// One file of a landing.
#[derive(Debug, Clone, Serialize)]
struct FileLine {
    path: PathBuf,
    action: FileAction,
}

pub fn land_command(args: &LandArgs) -> Result<Reply> {
    let run = Run::open(&args.run_dir)?;
    if run.task_type != TaskType::Implementation {
        bail!(
            "invalid value `{}` for RUN_DIR: `okstra land` lands an implementation run's change, and this is a `{}` run",
            args.run_dir.display(),
            run.task_type.as_str()
        );
    }
    // Only a landing writes: a check never waits for a driver.
    let _lease = if args.check {
        None
    } else {
        Some(Lease::acquire(&run, "okstra land", LEASE_WAIT)?)
    };
    let records = Records::load(run.clone(), Parts::FACTS)?;
    let state = &records.state;
    let verification = gate::verification(&records);
    let mut outcome = Outcome {
        schema_version: LAND_VERSION,
        run_dir: run.dir.clone(),
        state: LandOutcome::Blocked,
        branch: verification
            .commits
            .as_ref()
            .map(|c| c.branch.trim_start_matches("refs/heads/").to_owned()),
        commit: verification.commits.as_ref().map(|c| c.tip.clone()),
        ancestry: None,
        mergeable: None,
        reasons: verification.blockers.clone(),
        files: Vec::new(),
    };
    let Some(commits) = verification.commits.clone() else {
        return finish(&outcome, args);
    };
    if let Some(landing) = &state.landing
        && landing.commit == commits.tip
    {
        outcome.state = LandOutcome::AlreadyLanded;
        outcome.reasons.clear();
        outcome.files = landing_files(landing);
        return finish(&outcome, args);
    }
    // The branch must still be what okstra made and the verifiers checked.
    match crate::workspace::branch::tip(&run.project_root, &commits.branch)? {
        Some(tip) if tip == commits.tip => {}
        found => outcome.reasons.push(Blocker::new(
            LandReason::VerificationIncomplete,
            format!(
                "the branch `{}` {}, not the commit okstra made and the verifiers checked (`{}`)",
                commits.branch.trim_start_matches("refs/heads/"),
                found.map_or_else(
                    || "is gone".to_owned(),
                    |tip| format!("now names `{}`", short(&tip))
                ),
                short(&commits.tip)
            ),
        )),
    }
    let plan = apply::check(&run.project_root, &commits)?;
    outcome.ancestry = Some(plan.ancestry);
    outcome.mergeable = Some(plan.mergeable);
    outcome.reasons.extend(plan.blockers.iter().cloned());
    outcome.files = plan
        .files
        .iter()
        .map(|f| FileLine {
            path: f.path.clone(),
            action: f.action,
        })
        .collect();
    if !outcome.reasons.is_empty() {
        return finish(&outcome, args);
    }
    if args.check {
        outcome.state = LandOutcome::Landable;
        return finish(&outcome, args);
    }
    apply::write(&plan)?;
    let landing = Landing {
        state: LandingState::Landed.into(),
        branch: commits.branch.clone(),
        commit: commits.tip.clone(),
        head: plan.head.clone(),
        landed_at: Some(crate::clock::rfc3339_now()),
        files: outcome
            .files
            .iter()
            .map(|f| serde_json::json!({ "path": f.path, "action": f.action }))
            .collect(),
    };
    team_state::update(&run, &[Change::Landed(&landing)])?;
    outcome.state = LandOutcome::Landed;
    events::record(
        &run,
        EventKind::Landed,
        &[
            ("commit", &commits.tip),
            ("files", &outcome.files.len().to_string()),
        ],
    );
    refresh_report(&run);
    finish(&outcome, args)
}

/// The files a recorded landing wrote.
fn landing_files(landing: &Landing) -> Vec<FileLine> {
    landing
        .files
        .iter()
        .filter_map(|file| {
            let path = file.get("path")?.as_str()?;
            let action = file.get("action")?.as_str()?.parse().ok()?;
            Some(FileLine {
                path: PathBuf::from(path),
                action,
            })
        })
        .collect()
}

/// Bring the run's report up to date with the landing, when it has a
/// valid one; a failure is a warning (the change has landed).
fn refresh_report(run: &Run) {
    if !run.report_data_path.is_file() {
        return;
    }
    let refreshed = crate::report::finalize(&run.dir).and_then(|_| crate::report::render(&run.dir));
    match refreshed {
        Ok(Ok(_)) => {}
        Ok(Err(problems)) => diag::warning(format_args!(
            "the report was not rendered again: it does not validate ({})",
            problems.join("; ")
        )),
        Err(err) => diag::warning(format_args!("the report was not rendered again: {err:#}")),
    }
}

/// The outcome for a person: the files this command writes (or, with
/// `--check`, would write), else why it does not land.
/// The outcome carries its version (`LAND_VERSION`).
impl crate::output::Answer for Outcome {
    const SCHEMA: &'static str = "land-answer.schema.json";
    const VERSION: Option<u32> = None;
}

impl crate::output::Text for Outcome {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        if self.reasons.is_empty() && self.state != LandOutcome::AlreadyLanded {
            // A landing done before writes nothing now, so it lists nothing.
            for file in &self.files {
                writeln!(
                    out,
                    "{} {}",
                    file.action,
                    crate::fsread::escape(&file.path.to_string_lossy())
                )?;
            }
        } else {
            for reason in &self.reasons {
                writeln!(out, "{}", crate::fsread::escape(&reason.line()))?;
            }
        }
        Ok(())
    }
}

/// The outcome as the answer, with its exit status; what it means is said
/// after it.
fn finish(outcome: &Outcome, args: &LandArgs) -> Result<Reply> {
    let reply = Reply::answer(outcome, args.json)?;
    let status = if outcome.state == LandOutcome::Blocked {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    };
    let closing = closing(outcome, args.check);
    Ok(reply.then_say(closing).with_status(status))
}

/// The lines that close `okstra land`: what happened, what to do next.
fn closing(outcome: &Outcome, check: bool) -> impl FnOnce() + 'static {
    let branch = outcome
        .branch
        .clone()
        .unwrap_or_else(|| "its branch".to_owned());
    let files = outcome.files.len();
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let state = outcome.state;
    let run_dir = outcome.run_dir.clone();
    let mergeable = outcome.mergeable;
    let reasons = outcome.reasons.len();
    move || match state {
        LandOutcome::Landed => diag::progress(format_args!(
            "landed `{branch}` ({files} file{}) into your working tree; review it and commit",
            plural(files)
        )),
        LandOutcome::AlreadyLanded => diag::progress(format_args!(
            "`{branch}` has already landed ({files} file{} then); nothing was written now",
            plural(files)
        )),
        LandOutcome::Landable => {
            diag::progress(format_args!(
                "`{branch}` can land: `okstra land {}` applies it",
                run_dir.display()
            ));
            if mergeable == Some(true) {
                diag::note(format_args!(
                    "the branch holds only the Executor's change on your commit, so merging it is also safe"
                ));
            } else {
                diag::note(format_args!(
                    "the branch also carries what was uncommitted when the run began: land it, do not merge it"
                ));
            }
        }
        LandOutcome::Blocked => diag::error(format_args!(
            "{} `{branch}`: {reasons} reason{} above",
            if check {
                "cannot land"
            } else {
                "nothing landed from"
            },
            plural(reasons)
        )),
    }
}
