//! `okstra run`: the headless lead. It holds the run's lease and loops over
//! the run's step machine (`run::steps`): gather what is true of the run
//! now (`facts`), take the one next step (`act`), until the run is done or
//! ends without a report. It judges nothing itself.
//!
//! The same loop starts a new run and resumes any other: interrupted by
//! Ctrl-C, by SIGKILL, by a reboot, or ended by a failed step. A worker's
//! attempt that completed with the same prompt, provider and model is never
//! run again; a live wrapper of a dead driver is adopted; a cancelled one
//! runs again; a resume gives each worker whose last attempt ended for a
//! reason the user can fix one fresh attempt. A finished run re-run does
//! nothing and ends with the same report.
//!
//! Every step is a lead event, so `okstra status` shows the run live. Exit
//! 0 with a valid report, 1 when the run ended without one, 2 on bad input
//! (or when another okstra drives the run), 128+N when interrupted.

mod act;
mod facts;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::cli::RunArgs;
use crate::converge;
use crate::diag;
use crate::dispatch::{Batch, Kind, Options};
use crate::ending::Ending;
use crate::exit::{self, ExitStatus};
use crate::run::Run;
use crate::run::events::{self, EventKind};
use crate::run::journal::Journal;
use crate::run::lease::Lease;
use crate::run::steps::{self, Step as Next};

/// How long `okstra run` waits for another driver of the same run.
const LEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);
/// A step that comes back this many times in a row made no progress.
const MAX_REPEATS: u32 = 3;

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
    /// Why they were not, when they were not.
    not_cross_verified: Option<String>,
    /// Attempts this call started or adopted (0 when nothing was left).
    dispatched: usize,
    convergence: Option<converge::Classified>,
    /// An implementation run's landing gate, as its records see it
    /// (`okstra land --check` also checks the working tree).
    landing: Option<crate::land::gate::Standing>,
}

/// How a step ended: go on, or stop.
pub(crate) enum Step<T> {
    Done(T),
    Interrupted(nix::sys::signal::Signal),
}

/// `okstra run`.
pub fn run_command(args: &RunArgs) -> Result<ExitStatus> {
    // Check the engine and gate flags before anything is rendered or started.
    Options::from_args(&args.engine)?;
    let gate = crate::gate::run_rules(args.fail_on, &args.gate)?;
    let (run_dir, resumed) = match &args.run_dir {
        Some(dir) => (dir.clone(), true),
        None => (render(args)?, false),
    };
    let run = Run::open(&run_dir)?;
    let lease = Lease::acquire(&run, "okstra run", LEASE_WAIT)?;
    let journal = Journal::read(&run);
    let mut lead = Lead {
        run,
        args,
        resumed,
        fresh_given: BTreeSet::new(),
        phases: BTreeSet::new(),
        journal,
        dispatched: 0,
    };
    let outcome = match lead.carry_out() {
        Ok(Step::Done(outcome)) => outcome,
        Ok(Step::Interrupted(signal)) => {
            let resume = lead.resume_command();
            lead.event(
                EventKind::RunInterrupted,
                &[("signal", signal.as_str()), ("resume", &resume)],
            );
            drop(lease);
            diag::note(format_args!("interrupted; resume with `{resume}`"));
            return Ok(ExitStatus::Code(exit::from_signal(signal as i32)));
        }
        Err(err) => {
            let resume = lead.resume_command();
            lead.event(
                EventKind::RunFailed,
                &[("error", &format!("{err:#}")), ("resume", &resume)],
            );
            drop(lease);
            diag::note(format_args!("once fixed, resume with `{resume}`"));
            return Err(err);
        }
    };
    drop(lease);
    let mut stdout = std::io::stdout().lock();
    if args.launch.json {
        writeln!(stdout, "{}", serde_json::to_string(&outcome)?)?;
    } else if let (Some(markdown), Some(html)) = (&outcome.markdown, &outcome.html) {
        writeln!(stdout, "{}", markdown.display())?;
        writeln!(stdout, "{}", html.display())?;
    }
    drop(stdout);
    if let Some(rules) = &gate {
        // `--fail-on`: the gate's decision is the exit code (README "The gate").
        return crate::gate::after_run(&outcome.run_dir, rules);
    }
    if outcome.valid && outcome.cross_verified {
        Ok(ExitStatus::Success)
    } else if outcome.valid {
        diag::error(format_args!(
            "the report is written, but {}",
            outcome
                .not_cross_verified
                .as_deref()
                .unwrap_or("it was not cross-verified")
        ));
        Ok(ExitStatus::Failure)
    } else {
        diag::error(format_args!(
            "the run ended without a valid report: {}",
            outcome.reason.as_deref().unwrap_or("see `okstra status`")
        ));
        Ok(ExitStatus::Failure)
    }
}

/// Render a headless run from the launcher's flags.
fn render(args: &RunArgs) -> Result<PathBuf> {
    let mut launch = args.launch.clone();
    launch.headless = true;
    crate::bundle::prepare();
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let env = |name: &str| std::env::var(name).ok();
    let settings = crate::settings::resolve(&launch, &env, &cwd)?;
    let paths = crate::bundle::render_run(&settings)?;
    diag::progress(format_args!(
        "rendered headless run `{}`",
        paths.run_dir.display()
    ));
    Ok(paths.run_dir)
}

/// The driver of one `okstra run` call.
pub(crate) struct Lead<'a> {
    run: Run,
    args: &'a RunArgs,
    /// The run folder was given: this call resumes it.
    resumed: bool,
    /// Dispatches that already had their fresh attempt in this resume.
    fresh_given: BTreeSet<String>,
    /// Phases whose start was recorded by this call.
    phases: BTreeSet<&'static str>,
    journal: Journal,
    /// Attempts this call started or adopted.
    dispatched: usize,
}

impl Lead<'_> {
    /// Whether `dispatch_name` may still get its fresh attempt in this
    /// resume.
    fn resume_for(&self, dispatch_name: &str) -> bool {
        self.resumed && !self.fresh_given.contains(dispatch_name)
    }

    fn options(&self) -> Result<Options> {
        Options::from_args(&self.args.engine)
    }

    /// The command that resumes this run, with the engine flags this call
    /// was given.
    fn resume_command(&self) -> String {
        let mut command = format!("okstra run {}", shell_word(&self.run.dir.to_string_lossy()));
        let engine = &self.args.engine;
        if let Some(n) = engine.max_parallel {
            let _ = write!(command, " --max-parallel {n}");
        }
        if let Some(cost) = engine.max_cost {
            let _ = write!(command, " --max-cost {cost}");
        }
        if let Some(tokens) = engine.max_tokens {
            let _ = write!(command, " --max-tokens {tokens}");
        }
        if let Some(idle) = engine.idle_timeout {
            let _ = write!(command, " --idle-timeout {idle}");
        }
        command
    }

    /// Record a lead event and show its progress line on stderr; a failure
    /// to record is a warning, never the end of the run.
    fn event(&self, kind: EventKind, fields: &[(&str, &str)]) {
        let fields: BTreeMap<String, String> = fields
            .iter()
            .map(|(k, v)| ((*k).to_owned(), one_line(v)))
            .collect();
        if let Err(err) = events::append(&self.run, kind.as_str(), &fields) {
            diag::warning(format_args!("cannot record lead event `{kind}`: {err:#}"));
        }
        // The same line `okstra event` prints, on stderr: stdout is the report's paths.
        diag::event(events::progress_line(kind.as_str(), &fields));
    }

    /// Record the start of `phase` once per call.
    fn phase(&mut self, phase: &'static str) {
        if self.phases.insert(phase) {
            self.event(EventKind::PhaseStart, &[("phase", phase)]);
        }
    }

    /// Record how each attempt of a finished batch ended; the signal that
    /// interrupted it, if one did.
    fn ended(&self, batch: &Batch) -> Step<()> {
        for row in &batch.rows {
            let ending = row.ending.map_or("none", Ending::as_str);
            if row.ending == Some(Ending::Completed) {
                self.event(EventKind::WorkerComplete, &[("name", &row.dispatch_name)]);
            } else {
                self.event(
                    EventKind::WorkerTerminal,
                    &[("name", &row.dispatch_name), ("status", ending)],
                );
            }
        }
        match batch.interrupted {
            Some(signal) => Step::Interrupted(signal),
            None => Step::Done(()),
        }
    }

    /// Loop over the step machine until the run is done or ends.
    fn carry_out(&mut self) -> Result<Step<Outcome>> {
        let run = &self.run;
        self.event(
            if self.resumed {
                EventKind::RunResume
            } else {
                EventKind::RunStart
            },
            &[
                ("taskType", run.task_type.as_str()),
                ("workers", &run.assignments.len().to_string()),
            ],
        );
        let mut last: Option<Next> = None;
        let mut repeats = 0;
        loop {
            let gathered = facts::gather(self)?;
            let next = steps::advance(&gathered.facts);
            if last.as_ref() == Some(&next) {
                repeats += 1;
                if repeats >= MAX_REPEATS {
                    bail!(
                        "okstra run made no progress: the step `{next:?}` came back {repeats} times"
                    );
                }
            } else {
                repeats = 0;
            }
            last = Some(next.clone());
            let digests = &gathered.digests;
            let step = match next {
                Next::Dispatch { kind, workers } => {
                    self.phase(phase_of(kind, self.run.task_type));
                    self.batch(kind, &workers)?
                }
                Next::Host(workers) => bail!(
                    "`{}` run in the host's own session (`native-session`), which `okstra run` cannot start; lead this run from its host, or render a headless run with `okstra run` and the launcher's flags",
                    workers.join("`, `")
                ),
                Next::Wait(workers) => bail!(
                    "`{}` are being run by another okstra that is still alive; wait for it, or stop it with `okstra cancel {}`",
                    workers.join("`, `"),
                    self.run.dir.display()
                ),
                Next::Plan(round) => {
                    self.phase("5.5");
                    self.plan(round, digests)?;
                    Step::Done(())
                }
                Next::Record(round) => {
                    self.record(round, digests)?;
                    Step::Done(())
                }
                Next::Classify => {
                    self.classify(digests)?;
                    Step::Done(())
                }
                Next::FixRequest => {
                    self.fix_request(digests)?;
                    Step::Done(())
                }
                Next::FixPass => self.fix_pass()?,
                Next::FixCheck => {
                    let checkers = facts::fix_checkers(&self.run, &gathered.facts);
                    self.fix_check(digests, &checkers)?;
                    Step::Done(())
                }
                Next::Inputs => {
                    self.phase("6");
                    self.inputs(digests)?;
                    Step::Done(())
                }
                Next::Finalize => {
                    crate::report::finalize(&self.run.dir)?;
                    Step::Done(())
                }
                Next::Repair => self.repair(&gathered.problems)?,
                Next::Render => {
                    self.render()?;
                    let attempts = if gathered.facts.repair.is_some() {
                        2
                    } else {
                        1
                    };
                    self.event(
                        EventKind::ReportValidated,
                        &[("attempts", &attempts.to_string())],
                    );
                    Step::Done(())
                }
                Next::Done => return Ok(Step::Done(self.finished()?)),
                Next::End(stop) => return Ok(Step::Done(self.without_report(stop)?)),
            };
            if let Step::Interrupted(signal) = step {
                return Ok(Step::Interrupted(signal));
            }
        }
    }

    /// The outcome of a run with a valid, rendered report.
    fn finished(&self) -> Result<Outcome> {
        let report_dir = self.run.layout().report_dir();
        let verdict =
            act::report_verdict(&self.run.report_data_path).unwrap_or_else(|| "unknown".into());
        self.event(EventKind::RunComplete, &[("verdict", &verdict)]);
        let convergence = self.convergence()?;
        let not_cross_verified = not_cross_verified(&self.run)?;
        self.release_copies();
        let landing = self.landing()?;
        Ok(Outcome {
            landing,
            run_dir: self.run.dir.clone(),
            valid: true,
            markdown: Some(report_dir.join(crate::run::layout::REPORT_MARKDOWN_NAME)),
            html: Some(report_dir.join(crate::run::layout::REPORT_HTML_NAME)),
            reason: None,
            cross_verified: not_cross_verified.is_none(),
            not_cross_verified,
            dispatched: self.dispatched,
            convergence,
        })
    }

    fn without_report(&self, stop: steps::Stop) -> Result<Outcome> {
        let reason = match stop {
            steps::Stop::ReportInvalid => format!(
                "{} (see `okstra validate {}`)",
                stop.reason(),
                self.run.dir.display()
            ),
            stop => stop.reason().to_owned(),
        };
        self.event(
            EventKind::RunComplete,
            &[("verdict", "none"), ("reason", &reason)],
        );
        let convergence = self.convergence()?;
        let not_cross_verified = not_cross_verified(&self.run)?;
        self.release_copies();
        let landing = self.landing()?;
        Ok(Outcome {
            landing,
            run_dir: self.run.dir.clone(),
            valid: false,
            markdown: None,
            html: None,
            reason: Some(reason),
            cross_verified: not_cross_verified.is_none(),
            not_cross_verified,
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
        let run_dir = std::fs::canonicalize(&self.run.dir).unwrap_or_else(|_| self.run.dir.clone());
        let mut seen = BTreeSet::new();
        for record in &state.dispatches {
            let Some(copy) = &record.workspace else {
                continue;
            };
            if record.role == Some(crate::catalog::Role::Executor) || !seen.insert(&copy.path) {
                continue;
            }
            let Some(kind) = crate::workspace::Kind::parse(&copy.kind) else {
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
        let state = self.run.team_state()?;
        let Some(landing) = crate::land::gate::standing(&self.run, &state)? else {
            return Ok(None);
        };
        let branch = landing.branch.as_deref().unwrap_or("the run's branch");
        match landing.state {
            "landable" => diag::progress(format_args!(
                "the change on `{branch}` is verified: `okstra land {}` applies it to your working tree",
                shell_word(&self.run.dir.to_string_lossy())
            )),
            "landed" => diag::progress(format_args!("the change on `{branch}` has landed")),
            _ => {
                for reason in &landing.reasons {
                    diag::note(format_args!("not landable: {}", reason.line()));
                }
            }
        }
        Ok(Some(landing))
    }

    /// The ledger's classes, when there is a ledger.
    fn convergence(&self) -> Result<Option<converge::Classified>> {
        let info = converge::RunInfo::of(self.run.clone())?;
        converge::summary(&info)
    }
}

/// Whether the run falls short of cross-verification (two or more
/// reviewers rostered, and the findings were not checked by a quorum), and
/// the one line that says why: from the same records the report's
/// `reliability` block is computed from.
fn not_cross_verified(run: &Run) -> Result<Option<String>> {
    let reliability = crate::report::reliability::compute(&run.dir)?;
    Ok(reliability.falls_short().then(|| reliability.line()))
}

/// The phase a batch belongs to, for its `phase-start` event.
fn phase_of(kind: Kind, task_type: crate::catalog::TaskType) -> &'static str {
    match kind {
        Kind::Reverify(_) => "5.5",
        Kind::Critic => "5.6",
        _ if task_type == crate::catalog::TaskType::Implementation => "5",
        _ => "4",
    }
}

/// `text` quoted for a POSIX shell when it needs it.
fn shell_word(text: &str) -> String {
    if !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:=@,".contains(&b))
    {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// Event field values are single lines of at most 4096 bytes.
fn one_line(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut cut = flat.len().min(4000);
    while !flat.is_char_boundary(cut) {
        cut -= 1;
    }
    flat[..cut].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_values_are_one_bounded_line() {
        assert_eq!(one_line("a\nb\u{1b}c"), "a b c");
        assert!(one_line(&"é".repeat(5000)).len() <= 4000);
    }

    #[test]
    fn resume_commands_paste_into_a_shell() {
        assert_eq!(
            shell_word("/p/.okstra/tasks/a/b/c/x-001"),
            "/p/.okstra/tasks/a/b/c/x-001"
        );
        assert_eq!(shell_word("/my runs/it's"), r"'/my runs/it'\''s'");
        assert_eq!(shell_word(""), "''");
    }
}
