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
}

/// How a step ended: go on, or stop.
pub(crate) enum Step<T> {
    Done(T),
    Interrupted(nix::sys::signal::Signal),
    /// The batch was stopped early (fail fast): the run ends without a report.
    Stopped(String),
}

/// `okstra run`.
pub fn run_command(args: &RunArgs) -> Result<ExitStatus> {
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
    let settings = crate::settings::resolve(&launch, &env, &cwd)?;
    let (run_dir, checked) = render_checked(&settings, args.no_preflight)?;
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
    run_dir: &std::path::Path,
    checked: Option<crate::preflight::Report>,
) -> Result<ExitStatus> {
    let gate = crate::gate::run_rules(args.fail_on, &args.gate)?;
    let resumed = checked.is_none();
    let run = Run::open(run_dir)?;
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
        auth_failed: BTreeMap::new(),
        started: std::time::Instant::now(),
    };
    if !lead.is_finished()? {
        let checked = match checked {
            Some(checked) => checked,
            None if args.no_preflight => crate::preflight::credentials_only(&lead.run.assignments),
            None => crate::preflight::enforce(&lead.run.assignments, false)?,
        };
        if !lead.confirm_plan(&checked)? {
            drop(lease);
            diag::note(format_args!(
                "not started; start it later with `{}`",
                lead.resume_command()
            ));
            return Ok(ExitStatus::Failure);
        }
    }
    let outcome = match lead.carry_out() {
        Ok(Step::Done(outcome)) => outcome,
        Ok(Step::Stopped(why)) => lead.stopped_early(&why)?,
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
    } else {
        write!(stdout, "{}", lead.closing(&outcome))?;
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
    /// Providers whose attempt ended `auth` in this call: their other
    /// attempts are not started (a resume tries them again).
    auth_failed: BTreeMap<crate::catalog::Provider, String>,
    /// When this call started, for the live board's clock.
    started: std::time::Instant,
}

impl Lead<'_> {
    /// Whether the run has nothing left to do (a valid, rendered report).
    fn is_finished(&self) -> Result<bool> {
        let gathered = facts::gather(self)?;
        Ok(steps::advance(&gathered.facts) == Next::Done)
    }

    /// Show the plan and the estimate (kept in `state/estimate.json`), and
    /// on a terminal without `--yes` ask whether to start.
    fn confirm_plan(&self, checked: &crate::preflight::Report) -> Result<bool> {
        let estimate = crate::estimate::ensure(&self.run, &self.options()?.prices)?;
        for line in crate::estimate::plan_lines(&self.run, checked, &estimate) {
            diag::progress(line);
        }
        if self.args.launch.yes || !crate::ask::is_interactive() {
            return Ok(true);
        }
        crate::ask::Terminal::confirm("start the run?")
    }

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
        let mut command = format!(
            "okstra run {}",
            crate::advice::shell_word(&self.run.dir.to_string_lossy())
        );
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
        // One stream: what the live view already says (a worker started or
        // ended) is not said again; the rest in words.
        match progress_words(kind, &fields) {
            Some(words) => diag::progress(words),
            None if silent(kind) => {}
            // The kinds with no words of their own: the line `okstra event` prints.
            None => diag::event(events::progress_line(kind.as_str(), &fields)),
        }
    }

    /// The live board's header for a batch in `phase`.
    fn header(&self, phase: String) -> crate::dispatch::Header {
        let spent_before_usd = crate::run::team_state::read_raw(&self.run)
            .map_or(0.0, |state| crate::usage::recorded_totals(&state).cost_usd);
        crate::dispatch::Header {
            title: format!("{} · {}", self.run.task_type, self.run.task_key),
            phase,
            started: self.started,
            spent_before_usd,
        }
    }

    /// The closing summary (stdout, without `--json`).
    fn closing(&self, outcome: &Outcome) -> String {
        let verdict = outcome
            .valid
            .then(|| act::report_verdict(&self.run.report_data_path))
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
        crate::closing::summary(&crate::closing::Facts {
            run: &self.run,
            verdict: verdict.as_deref(),
            paths: outcome.markdown.as_deref().zip(outcome.html.as_deref()),
            reason: outcome.reason.as_deref(),
            not_cross_verified: outcome.not_cross_verified.as_deref(),
            classes,
            resume: &self.resume_command(),
        })
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
        match (batch.interrupted, &batch.stopped) {
            (Some(signal), _) => Step::Interrupted(signal),
            (None, Some(why)) => Step::Stopped(why.clone()),
            (None, None) => Step::Done(()),
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
            match step {
                Step::Interrupted(signal) => return Ok(Step::Interrupted(signal)),
                Step::Stopped(why) => return Ok(Step::Done(self.stopped_early(&why)?)),
                Step::Done(()) => {}
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
        Ok(Outcome {
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
        Ok(Outcome {
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

    /// The outcome of a run whose batch was stopped early: no report, and
    /// why (the resume command is in the closing note).
    fn stopped_early(&self, why: &str) -> Result<Outcome> {
        self.event(
            EventKind::RunComplete,
            &[("verdict", "none"), ("reason", why)],
        );
        let not_cross_verified = not_cross_verified(&self.run)?;
        Ok(Outcome {
            run_dir: self.run.dir.clone(),
            valid: false,
            markdown: None,
            html: None,
            reason: Some(why.to_owned()),
            cross_verified: not_cross_verified.is_none(),
            not_cross_verified,
            dispatched: self.dispatched,
            convergence: self.convergence()?,
        })
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

/// Events the live view says already (a worker's ending) or the closing
/// summary will (the run's).
fn silent(kind: EventKind) -> bool {
    matches!(
        kind,
        EventKind::WorkerComplete | EventKind::WorkerTerminal | EventKind::RunComplete
    )
}

/// A lead event in words for stderr, for the kinds that have words.
fn progress_words(kind: EventKind, fields: &BTreeMap<String, String>) -> Option<String> {
    let field = |name: &str| fields.get(name).map_or("?", String::as_str);
    Some(match kind {
        EventKind::RunStart => format!("run started: {} workers", field("workers")),
        EventKind::RunResume => format!("run resumed: {} workers", field("workers")),
        EventKind::PhaseStart => format!("phase {}", phase_words(field("phase"))),
        EventKind::RoundComplete => format!(
            "convergence round {} recorded: {} item(s) still open",
            field("round"),
            field("open")
        ),
        EventKind::FixPass => format!(
            "fix pass: {} defect(s) go back to the Executor",
            field("defects")
        ),
        EventKind::FixPassSkipped => format!("no fix pass: {}", field("reason")),
        EventKind::ReportRepair => format!(
            "the report failed validation ({} problem(s)): the writer gets one repair",
            field("problems")
        ),
        EventKind::ReportValidated => {
            format!("the report is valid (attempt {})", field("attempts"))
        }
        EventKind::UsageCollected => format!("usage counted ({})", field("sources")),
        _ => return None,
    })
}

/// `4` → `4: the analysers`.
fn phase_words(phase: &str) -> String {
    let what = match phase {
        "4" => "the analysers",
        "5" => "the Executor, then the verifiers",
        "5.5" => "convergence: the workers check each other's findings",
        "5.6" => "the critic",
        "6" => "the report",
        _ => return phase.to_owned(),
    };
    format!("{phase}: {what}")
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
}
