//! `okstra run`: the headless lead. It holds the run's lease and drives the
//! shared loop attached (every batch runs inside the call) until the run is
//! done or ends without a report. It judges nothing itself.
//!
//! The same call starts a new run and resumes any other: interrupted by
//! Ctrl-C, by SIGKILL, by a reboot, or ended by a failed step, or led so
//! far by a host with `okstra next`. A worker's attempt that completed with
//! the same prompt, provider and model is never run again; a live wrapper
//! of a dead driver is adopted; a cancelled one runs again; a resume gives
//! each worker whose last attempt ended for a reason the user can fix one
//! fresh attempt. A finished run re-run does nothing and ends with the same
//! report. A step only a host session can take (a `native-session` worker)
//! ends the call with the command that leads it from the host.
//!
//! Exit 0 with a valid report, 1 when the run ended without one (or was not
//! cross-verified), 2 on bad input (or when another okstra drives the run),
//! 128+N when interrupted.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::cli::RunArgs;
use crate::converge;
use crate::diag;
use crate::dispatch::Options;
use crate::exit::{self, ExitStatus};
use crate::output::Reply;
use crate::run::Run;

use crate::run::layout;
use crate::run::lease::Lease;
use crate::vocab::LandingState;

use super::{Halt, Lead, Mode, command_line};
use crate::vocab::EventKind;

/// How long `okstra run` waits for another driver of the same run.
const LEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// What `okstra run --json` prints at the end.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Outcome {
    run_dir: PathBuf,
    valid: bool,
    markdown: Option<PathBuf>,
    html: Option<PathBuf>,
    /// Why the run ended without a valid report.
    reason: Option<String>,
    /// Whether the findings were checked by a quorum of reviewers; `false`
    /// with two or more reviewers rostered makes the exit 1.
    cross_verified: bool,
    /// Whether they were, in one line and the words every output uses.
    verification: String,
    /// Why they were not, when they were not.
    not_cross_verified: Option<String>,
    /// Two or more reviewers rostered, and no quorum checked the findings.
    #[serde(skip)]
    falls_short: bool,
    /// Attempts this call started or adopted (0 when nothing was left).
    dispatched: usize,
    convergence: Option<converge::Classified>,
    /// An implementation run's landing gate, as its records see it
    /// (`okstra land --check` also checks the working tree).
    landing: Option<crate::land::gate::Standing>,
}

/// `okstra run`.
pub fn run_command(args: &RunArgs) -> Result<Reply> {
    // Check the engine and gate flags before anything is rendered or started.
    Options::from_args(&args.engine)?;
    crate::gate::run_rules(args.fail_on, &args.gate)?;
    if let Some(dir) = &args.run_dir {
        return drive(args, dir, None);
    }
    let mut launch = args.launch.clone();
    launch.headless = true;
    crate::bundle::prepare();
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let env = |name: &str| std::env::var(name).ok();
    let mut settings = crate::settings::resolve(&launch, &env, &cwd)?;
    settings.engine = crate::run::settings::RunSettings::given(&args.engine);
    let (run_dir, checked) = match render_checked(&settings, args.launch.no_preflight) {
        Ok(rendered) => rendered,
        Err(err) => {
            // Stopped before anything was rendered: nothing to resume.
            if let Some(interrupted) = err.downcast_ref::<crate::preflight::Interrupted>() {
                diag::note(format_args!(
                    "{interrupted}; nothing was rendered or started"
                ));
                return Ok(Reply::status(ExitStatus::Code(exit::from_signal(
                    interrupted.0 as i32,
                ))));
            }
            return Err(err);
        }
    };
    drive(args, &run_dir, Some(checked))
}

/// Preflight the roster `settings` gives (unless `no_preflight`), then
/// render the run: a roster that cannot run is refused before anything is
/// written. The run folder and the preflight's findings.
pub fn render_checked(
    settings: &crate::settings::Settings,
    no_preflight: bool,
) -> Result<(PathBuf, crate::preflight::Report)> {
    let roster = crate::assign::roster(settings, &settings.project_root);
    let checked = if no_preflight {
        crate::preflight::credentials_only(&roster)
    } else {
        crate::preflight::enforce(&roster, true)?
    };
    let paths = crate::bundle::render_run(settings)?;
    diag::progress(format_args!(
        "rendered headless run `{}`",
        paths.run_dir.display()
    ));
    Ok((paths.run_dir, checked))
}

/// Carry out the run in `run_dir`: a fresh one (`checked` holds its
/// preflight) or one given on the command line, resumed. Before anything is
/// dispatched: the preflight (of a resumed run), the plan and the estimate,
/// confirmed on a terminal without `--yes`. A finished run asks nothing.
pub fn drive(
    args: &RunArgs,
    run_dir: &Path,
    checked: Option<crate::preflight::Report>,
) -> Result<Reply> {
    let gate = crate::gate::run_rules(args.fail_on, &args.gate)?;
    let resumed = checked.is_none();
    let run = Run::open(run_dir)?;
    let lease = Lease::acquire(&run, "okstra run", LEASE_WAIT)?;
    // The run's own settings; a flag given here overrides one for the rest
    // of the run (recorded once the run goes on, below).
    let engine = crate::run::settings::merged(&run, &args.engine)?;
    let mut lead = Lead::new(run, engine, Mode::Attached);
    lead.resumed = resumed;
    lead.lease = Some(lease);
    if !lead.is_finished()? {
        let checked = match checked {
            Some(checked) => checked,
            None if args.launch.no_preflight => {
                crate::preflight::credentials_only(&lead.run.assignments)
            }
            None => match crate::preflight::enforce(&lead.run.assignments, false) {
                Ok(checked) => checked,
                Err(err) => {
                    // `okstra cancel` (or Ctrl-C) during the preflight: the
                    // probes are stopped, the run says so, and it resumes.
                    if let Some(interrupted) = err.downcast_ref::<crate::preflight::Interrupted>() {
                        let signal = interrupted.0;
                        let resume = command_line("run", &lead.run);
                        lead.event(
                            EventKind::RunInterrupted,
                            &[("signal", signal.as_str()), ("resume", &resume)],
                        );
                        lead.lease = None;
                        diag::note(format_args!("{interrupted}; resume with `{resume}`"));
                        return Ok(Reply::status(ExitStatus::Code(exit::from_signal(
                            signal as i32,
                        ))));
                    }
                    return Err(err);
                }
            },
        };
        if !lead.confirm_plan(&checked, args.launch.yes)? {
            lead.lease = None;
            diag::note(format_args!(
                "not started; start it later with `{}`",
                command_line("run", &lead.run)
            ));
            return Ok(Reply::status(ExitStatus::Failure));
        }
    }
    crate::run::settings::record(&lead.run, &args.engine)?;
    lead.event(
        if resumed {
            EventKind::RunResume
        } else {
            EventKind::RunStart
        },
        &[
            ("taskType", lead.run.task_type.as_str()),
            ("workers", &lead.run.assignments.len().to_string()),
        ],
    );
    let resume = command_line("run", &lead.run);
    let halt = match lead.advance_until() {
        Ok(halt) => halt,
        Err(err) => {
            lead.event(
                EventKind::RunFailed,
                &[("error", &format!("{err:#}")), ("resume", &resume)],
            );
            lead.lease = None;
            diag::note(format_args!("once fixed, resume with `{resume}`"));
            return Err(err);
        }
    };
    let outcome = match halt {
        Halt::Done => lead.outcome(None)?,
        Halt::End(stop) => lead.outcome(Some(lead.stop_reason(stop)))?,
        Halt::Stopped(why) => lead.outcome(Some(why))?,
        Halt::Interrupted(signal) => {
            lead.event(
                EventKind::RunInterrupted,
                &[("signal", signal.as_str()), ("resume", &resume)],
            );
            lead.lease = None;
            diag::note(format_args!("interrupted; resume with `{resume}`"));
            return Ok(Reply::status(ExitStatus::Code(exit::from_signal(
                signal as i32,
            ))));
        }
        Halt::Host(handouts) => {
            let names: Vec<&str> = handouts
                .iter()
                .map(|h| h.record.dispatch_name.as_str())
                .collect();
            bail!(
                "`{}` run in the host's own session (`native-session`), which `okstra run` cannot start; lead this run from its host with `okstra next {}`, or render a headless run with `okstra run` and the launcher's flags",
                names.join("`, `"),
                lead.run.dir.display()
            )
        }
        Halt::Wait(workers) => bail!(
            "`{}` are being run by another okstra that is still alive; wait for it, or stop it with `okstra cancel {}`",
            workers.join("`, `"),
            lead.run.dir.display()
        ),
        Halt::Ask(_) | Halt::Declined | Halt::Detached(_) => {
            bail!("`okstra run` asks no question and starts no background driver")
        }
    };
    lead.lease = None;
    let answer = Closing {
        lead: &lead,
        outcome: &outcome,
        resume: &resume,
    };
    let reply = Reply::answer(&answer, args.launch.json)?;
    // After the summary, the last lines a person reads: the gate's
    // findings and decision, or whether the report was cross-verified.
    Ok(reply.then(move || match &gate {
        // `--fail-on`: the gate's decision is the exit code (docs/reviews.md, "The gate").
        Some(rules) => crate::gate::after_run(&outcome.run_dir, rules),
        None => Ok(exit_of(&outcome)),
    }))
}

/// The exit status of an outcome without a gate: 0 only for a valid
/// report that is cross-verified, or whose roster had one reviewer by
/// design; a report that was not cross-verified says so on the last line.
fn exit_of(outcome: &Outcome) -> ExitStatus {
    if outcome.valid && outcome.cross_verified {
        ExitStatus::Success
    } else if outcome.valid && !outcome.falls_short {
        diag::note(format_args!(
            "{}",
            outcome
                .not_cross_verified
                .as_deref()
                .unwrap_or("not cross-verified")
        ));
        ExitStatus::Success
    } else if outcome.valid {
        diag::error(format_args!(
            "the report is written, but {}",
            outcome
                .not_cross_verified
                .as_deref()
                .unwrap_or("it was not cross-verified")
        ));
        ExitStatus::Failure
    } else {
        diag::error(format_args!(
            "the run ended without a valid report: {}",
            outcome.reason.as_deref().unwrap_or("see `okstra status`")
        ));
        ExitStatus::Failure
    }
}

/// What `okstra run` answers: the outcome as JSON, the closing summary
/// as text.
struct Closing<'a> {
    lead: &'a Lead,
    outcome: &'a Outcome,
    resume: &'a str,
}

impl Serialize for Closing<'_> {
    fn serialize<S: serde::Serializer>(&self, to: S) -> Result<S::Ok, S::Error> {
        self.outcome.serialize(to)
    }
}

impl crate::output::Answer for Closing<'_> {
    const SCHEMA: &'static str = "run-answer.schema.json";
    const VERSION: Option<u32> = Some(1);
}

impl crate::output::Text for Closing<'_> {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        out.write_all(self.lead.closing(self.outcome, self.resume).as_bytes())
    }
}

impl Lead {
    /// Whether the run has nothing left to do (a valid, rendered report).
    fn is_finished(&self) -> Result<bool> {
        let gathered = super::facts::gather(self)?;
        Ok(crate::run::steps::advance(&gathered.facts) == crate::run::steps::Step::Done)
    }

    /// Show the plan and the estimate (kept in `state/estimate.json`), and
    /// on a terminal without `yes` ask whether to start.
    fn confirm_plan(&self, checked: &crate::preflight::Report, yes: bool) -> Result<bool> {
        let estimate = crate::estimate::ensure(&self.run, &self.options()?.prices)?;
        for line in crate::preflight::plan_lines(&self.run, checked, &estimate) {
            diag::progress(line);
        }
        if yes || !crate::ask::is_interactive() {
            return Ok(true);
        }
        crate::ask::Terminal::confirm("start the run?")
    }

    /// The closing summary (stdout, without `--json`).
    fn closing(&self, outcome: &Outcome, resume: &str) -> String {
        let verdict = outcome
            .valid
            .then(|| super::act::report_verdict(&self.run.report_data_path))
            .flatten();
        let classes = outcome
            .convergence
            .as_ref()
            .map(|c| {
                c.classes
                    .iter()
                    .map(|(class, count)| (class.to_string(), *count))
                    .collect()
            })
            .unwrap_or_default();
        let findings = outcome
            .valid
            .then(|| {
                let bytes =
                    crate::fsread::read(&self.run.report_data_path, crate::fsread::Kind::Report)
                        .ok()?;
                let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
                crate::report::findings::collect(&value, Some(&self.run.dir)).ok()
            })
            .flatten()
            .map(|found| found.list)
            .unwrap_or_default();
        crate::closing::summary(&crate::closing::Facts {
            run: &self.run,
            verdict: verdict.as_deref(),
            findings: &findings,
            paths: outcome.markdown.as_deref().zip(outcome.html.as_deref()),
            reason: outcome.reason.as_deref(),
            verification: outcome.valid.then_some(outcome.verification.as_str()),
            classes,
            resume,
        })
    }

    /// The outcome of a finished run: its report (when `reason` is none)
    /// or why there is none.
    fn outcome(&self, reason: Option<String>) -> Result<Outcome> {
        let report_dir = self.run.layout().report_dir();
        let valid = reason.is_none();
        let info = converge::RunInfo::of(self.run.clone())?;
        let convergence = converge::summary(&info);
        let standing = standing(&self.run)?;
        self.release_copies();
        let landing = self.landing()?;
        Ok(Outcome {
            landing,
            run_dir: self.run.dir.clone(),
            valid,
            markdown: valid.then(|| report_dir.join(layout::REPORT_MARKDOWN_NAME)),
            html: valid.then(|| report_dir.join(layout::REPORT_HTML_NAME)),
            reason,
            cross_verified: standing.cross_verified,
            not_cross_verified: (!standing.cross_verified).then(|| standing.line.clone()),
            falls_short: standing.falls_short,
            verification: standing.line,
            dispatched: self.dispatched,
            convergence,
        })
    }

    /// Remove the run's reviewer copies now that it ended (each only when
    /// its marker names this run). The Executor's copy stays, holding its
    /// change, until `okstra cleanup` removes it.
    fn release_copies(&self) {
        let Ok(state) = self.run.team_state() else {
            return;
        };
        let run_dir = crate::workspace::RunIdentity::of(&self.run).run_dir;
        // The Executor's copy stays, whoever else read it (its verifiers do,
        // under Landlock).
        let mut seen: std::collections::BTreeSet<&std::path::Path> = state
            .dispatches
            .iter()
            .filter(|record| record.role == Some(crate::catalog::Role::Executor))
            .filter_map(|record| Some(record.workspace.as_ref()?.path.as_path()))
            .collect();
        for record in &state.dispatches {
            let Some(copy) = &record.workspace else {
                continue;
            };
            if !seen.insert(&copy.path) {
                continue;
            }
            let Some(kind) = copy.kind.known() else {
                continue;
            };
            if let Err(err) =
                crate::workspace::remove(&copy.path, kind, &self.run.project_root, &run_dir)
            {
                diag::warning(format_args!(
                    "the copy of `{}` was not removed: {:#}",
                    record.dispatch_name,
                    anyhow::Error::from(err)
                ));
            }
        }
    }

    /// An implementation run's landing gate from its records, said on
    /// stderr: the last step of its lead contract.
    fn landing(&self) -> Result<Option<crate::land::gate::Standing>> {
        let records = crate::run::Records::load(self.run.clone(), crate::run::Parts::FACTS)?;
        let Some(landing) = crate::derive::landing::standing(&records) else {
            return Ok(None);
        };
        let branch = landing.branch.as_deref().unwrap_or("the run's branch");
        match landing.state {
            LandingState::Landable => diag::progress(format_args!(
                "the change on `{branch}` is verified: `{}` applies it to your working tree",
                crate::shell::okstra_line(&["land", &self.run.dir.to_string_lossy()])
            )),
            LandingState::Landed => {
                diag::progress(format_args!("the change on `{branch}` has landed"));
            }
            LandingState::Blocked => {
                for reason in &landing.reasons {
                    diag::note(format_args!("not landable: {}", reason.line()));
                }
            }
        }
        Ok(Some(landing))
    }
}

/// Where a run stands on cross-verification, from the same records the
/// report's `reliability` block is computed from (`derive::reliability`).
pub(super) struct Standing {
    pub cross_verified: bool,
    /// Two or more reviewers were rostered and the findings were not
    /// checked by a quorum: the run's exit is 1.
    pub falls_short: bool,
    /// The statement, in the words every output uses.
    pub line: String,
}

pub(super) fn standing(run: &Run) -> Result<Standing> {
    let records = crate::run::Records::load(run.clone(), crate::run::Parts::FACTS)?;
    let reliability = crate::derive::reliability::of(&records);
    Ok(Standing {
        cross_verified: reliability.cross_verified,
        falls_short: reliability.falls_short(),
        line: reliability.line(),
    })
}
