//! The lead's steps, one implementation for both faces of a run (SPEC §9):
//! gather what is true of the run now (`facts`), take the one next step of
//! the step machine (`run::steps`), carry it out (`act`), until only the
//! host can go on, the run is done, or it ends without a report.
//!
//! - `okstra run` (`headless`) drives the loop *attached*: a batch of
//!   wrapper workers runs inside the call, which waits for it.
//! - `okstra next` (`next`) drives it *detached*: computed steps (round
//!   plans, records, coverage, the report's checks) run inside the call,
//!   and the first batch of wrapper workers goes to a background driver
//!   (`okstra __drive`, the same loop attached), so the call returns with
//!   what only the host can do — run a native sub-agent, ask the user.
//!
//! Either can finish a run the other started: every step is judged from
//! the run's files, never from who made them. Both write the lead events of
//! the steps they take; the attempts' own events are written where the
//! attempts end (`dispatch`).

mod act;
mod facts;
mod headless;
mod next;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::{Result, bail};
use nix::sys::signal::Signal;

use crate::catalog::{Role, TaskType};
use crate::cli::EngineArgs;
use crate::diag;
use crate::dispatch::native::{self, Handout};
use crate::dispatch::{Kind, Options};
use crate::run::Run;
use crate::run::ask;
use crate::run::events;
use crate::run::journal::Journal;
use crate::run::lease::Lease;
use crate::run::steps::{self, Step as Next};
use crate::vocab::{ContinuationKind, JournalStep};

use crate::vocab::EventKind;
use crate::vocab::Question;
pub use headless::{drive, render_checked, run_command};
pub use next::{drive_command, next_command};

/// Why a run whose Executor the user did not approve ends.
const DECLINED: &str = "the user did not approve the Executor, so nothing was changed";

/// A step that comes back this many times in a row made no progress.
const MAX_REPEATS: u32 = 3;
/// How long a driver waits for the lease a `next` just handed over.
const DRIVE_LEASE_WAIT: Duration = Duration::from_secs(10);

/// How a batch of wrapper workers runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// In this process, waiting for the batch (`okstra run`, the driver).
    Attached,
    /// In a background driver this call starts (`okstra next`).
    Detached,
}

/// How one step came out: go on, or stop the loop.
pub(crate) enum Flow {
    Go,
    Interrupted(Signal),
    /// The batch went to a background driver.
    Detached(next::Driver),
    /// The batch was stopped early (fail fast): the run ends without a
    /// report, for this reason.
    Stopped(String),
}

/// Why the loop stopped.
pub(crate) enum Halt {
    /// Only the host can go on: these attempts were handed to it.
    Host(Vec<Handout>),
    /// Workers run under another driver that is alive.
    Wait(Vec<String>),
    /// The run has a valid, rendered report.
    Done,
    /// The run ends without a report.
    End(steps::Stop),
    /// A signal stopped a batch.
    Interrupted(Signal),
    /// A batch went to a background driver.
    Detached(next::Driver),
    /// The user must answer `question` before the run goes on.
    Ask(Question),
    /// The user did not approve the Executor: nothing was changed.
    Declined,
    /// A batch was stopped early (fail fast), for this reason.
    Stopped(String),
}

/// The driver of one call over a run.
pub(crate) struct Lead {
    run: Run,
    engine: EngineArgs,
    mode: Mode,
    /// The run folder was given to `okstra run`: this call resumes it.
    resumed: bool,
    /// Ask the user before an Executor without an approved plan (a host
    /// lead's run; `okstra run` was started by the person who would answer).
    approval_gate: bool,
    /// Dispatches that already had their fresh attempt in this resume.
    fresh_given: BTreeSet<String>,
    journal: Journal,
    /// Attempts this call started or adopted.
    dispatched: usize,
    /// The run's lease while this call holds it (handed over on detach).
    lease: Option<Lease>,
    /// Providers whose attempt ended `auth` in this call: their other
    /// attempts are not started (a resume tries them again).
    auth_failed: BTreeMap<crate::catalog::Provider, String>,
    /// When this call started, for the live board's clock.
    started: std::time::Instant,
}

impl Lead {
    pub(crate) fn new(run: Run, engine: EngineArgs, mode: Mode) -> Lead {
        let journal = Journal::read(&run);
        Lead {
            run,
            engine,
            mode,
            resumed: false,
            approval_gate: false,
            fresh_given: BTreeSet::new(),
            journal,
            dispatched: 0,
            lease: None,
            auth_failed: BTreeMap::new(),
            started: std::time::Instant::now(),
        }
    }

    /// Whether `dispatch_name` may still get its fresh attempt in this
    /// resume.
    fn resume_for(&self, dispatch_name: &str) -> bool {
        self.resumed && !self.fresh_given.contains(dispatch_name)
    }

    fn options(&self) -> Result<Options> {
        Options::from_args(&self.engine)
    }

    /// Record a lead event and show its progress line on stderr; a failure
    /// to record is a warning, never the end of the run.
    fn event(&self, kind: EventKind, fields: &[(&str, &str)]) {
        let fields = events::record(&self.run, kind, fields);
        // One stream: what the live view already says (a worker started or
        // ended) is not said again; the rest in words.
        if let Some(words) = progress_words(self.run.task_type, kind, &fields) {
            diag::progress(words);
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

    /// Record the start of `phase`, unless it is the phase the log last
    /// recorded (several calls and drivers take a run's steps).
    fn phase(&self, phase: &'static str) {
        let last = events::newest_of(&self.run, &[EventKind::PhaseStart]);
        if last.is_none_or(|(_, fields)| fields.get("phase").map(String::as_str) != Some(phase)) {
            self.event(EventKind::PhaseStart, &[("phase", phase)]);
        }
    }

    /// Loop over the step machine until only the host can go on, the run
    /// is done or ends, a signal stops it, or (detached) a batch went to a
    /// background driver.
    pub(crate) fn advance_until(&mut self) -> Result<Halt> {
        let mut last: Option<Next> = None;
        let mut repeats = 0;
        loop {
            if let Some(halt) = self.approval()? {
                if matches!(halt, Halt::Declined) {
                    // An end like any other: the run reads failed, and
                    // says why, until the user resumes it.
                    self.record_end(DECLINED);
                }
                return Ok(halt);
            }
            let gathered = facts::gather(self)?;
            let next = steps::advance(&gathered.facts);
            if last.as_ref() == Some(&next) {
                repeats += 1;
                if repeats >= MAX_REPEATS {
                    bail!("okstra made no progress: the step `{next:?}` came back {repeats} times");
                }
            } else {
                repeats = 0;
            }
            last = Some(next.clone());
            let digests = &gathered.digests;
            let flow = match next {
                Next::Dispatch { kind, workers } => {
                    self.phase(phase_of(&self.run, kind, &workers));
                    self.batch(kind, &workers)?
                }
                Next::Host(workers) => match self.budget_spent()? {
                    // Nothing more goes to the host once the budget is spent.
                    Some(why) => Flow::Stopped(self.budget_stop(&why)),
                    None => return Ok(Halt::Host(self.hand_out(&gathered, &workers)?)),
                },
                Next::Wait(workers) => return Ok(Halt::Wait(workers)),
                Next::Plan(round) => {
                    self.phase("5.5");
                    self.plan(round, digests)?;
                    Flow::Go
                }
                Next::Record(round) => {
                    self.record(round, digests)?;
                    Flow::Go
                }
                Next::Classify => {
                    self.classify(digests)?;
                    Flow::Go
                }
                Next::FixRequest => {
                    self.fix_request(digests)?;
                    Flow::Go
                }
                Next::FixPass => self.fix_pass()?,
                Next::FixCheck => {
                    let checkers = facts::fix_checkers(&self.run, &gathered.facts);
                    self.fix_check(digests, &checkers)?;
                    Flow::Go
                }
                Next::Inputs => {
                    self.phase("6");
                    self.inputs(digests)?;
                    Flow::Go
                }
                Next::Finalize => {
                    self.finalize()?;
                    Flow::Go
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
                    Flow::Go
                }
                Next::Done => {
                    self.complete()?;
                    return Ok(Halt::Done);
                }
                Next::End(stop) => {
                    self.ended(stop);
                    return Ok(Halt::End(stop));
                }
            };
            match flow {
                Flow::Go => {}
                Flow::Interrupted(signal) => return Ok(Halt::Interrupted(signal)),
                Flow::Detached(driver) => return Ok(Halt::Detached(driver)),
                Flow::Stopped(why) => {
                    self.stopped_early(&why);
                    return Ok(Halt::Stopped(why));
                }
            }
        }
    }

    /// Hand the host its attempts of the batch whose `workers` only the
    /// host can run now.
    fn hand_out(&self, gathered: &facts::Gathered, workers: &[String]) -> Result<Vec<Handout>> {
        let Some(group) = gathered.group_with(workers, steps::Need::Host) else {
            return Ok(Vec::new());
        };
        let mut handouts = Vec::new();
        for planned in gathered.host_of(group) {
            handouts.extend(native::hand_out(&self.run, planned)?);
        }
        Ok(handouts)
    }

    /// The approval gate of an implementation run without an approved
    /// plan, asked once before its Executor first starts.
    fn approval(&self) -> Result<Option<Halt>> {
        if !self.approval_gate || self.run.task_type != TaskType::Implementation {
            return Ok(None);
        }
        let Some(executor) = self.run.in_role(Role::Executor).next() else {
            return Ok(None);
        };
        if self.run.task()?.continuation.kind == ContinuationKind::ApprovedPlan {
            return Ok(None);
        }
        if let Some(answer) = ask::answered(&self.run, Question::Approval) {
            return Ok((!ask::approves(&answer)).then_some(Halt::Declined));
        }
        let state = self.run.team_state()?;
        if state.latest(&executor.dispatch_name).is_some() {
            // Started before anyone asked (`okstra run`, `okstra dispatch`).
            return Ok(None);
        }
        let text = format!(
            "# Approval before the Executor starts\n\n\
             This `implementation` run has no approved plan: the Executor `{}` ({}, `{}`) would change files under `{}` working from the task brief alone (`{}`).\n\n\
             Ask the user whether it may go ahead, and wait for an explicit answer. Submit their answer with `{}`: an answer that starts with `yes` lets the Executor start; anything else ends the run with nothing changed.\n",
            executor.dispatch_name,
            executor.provider,
            executor.model_execution_value,
            self.run.project_root.display(),
            self.run.layout().task_brief().display(),
            crate::shell::okstra_line(&[
                "submit",
                &self.run.dir.to_string_lossy(),
                Question::Approval.name(),
                "-"
            ]),
        );
        ask::ask(&self.run, Question::Approval, &text)?;
        Ok(Some(Halt::Ask(Question::Approval)))
    }

    /// The run is done: record it once per report.
    fn complete(&mut self) -> Result<()> {
        let data = crate::run::journal::file_sha256(&self.run.report_data_path).unwrap_or_default();
        if self.journal.is_fresh(JournalStep::Complete, &data) {
            return Ok(());
        }
        let verdict =
            act::report_verdict(&self.run.report_data_path).unwrap_or_else(|| "unknown".into());
        self.event(EventKind::RunComplete, &[("verdict", &verdict)]);
        self.journal
            .record(JournalStep::Complete, data, None, |_| false)
    }

    /// The run ends without a report: record it, once per drive (a run
    /// ended the same way and not resumed since is not recorded again).
    fn ended(&self, stop: steps::Stop) {
        let reason = self.stop_reason(stop);
        self.record_end(&reason);
    }

    /// A batch was stopped early (its quorum lost, the budget spent): the
    /// run ends without a report, recorded as [`Lead::ended`] records it.
    fn stopped_early(&self, why: &str) {
        self.record_end(why);
    }

    /// `run-complete` without a verdict, for `reason`, unless it is the
    /// newest lifecycle event already (the same end, said once).
    fn record_end(&self, reason: &str) {
        let newest = events::newest_of(&self.run, &events::LIFECYCLE);
        let said = newest.is_some_and(|(kind, fields)| {
            kind == EventKind::RunComplete
                && fields.get("reason").map(String::as_str)
                    == Some(events::one_line(reason).as_str())
        });
        if !said {
            self.event(
                EventKind::RunComplete,
                &[("verdict", "none"), ("reason", reason)],
            );
        }
    }

    /// Why the run ended without a report, in one line.
    fn stop_reason(&self, stop: steps::Stop) -> String {
        match stop {
            steps::Stop::ReportInvalid => format!(
                "{} (see `okstra validate {}`)",
                stop.reason(),
                self.run.dir.display()
            ),
            stop => stop.reason().to_owned(),
        }
    }
}

/// The phase a batch belongs to, for its `phase-start` event: the
/// Executor's work is phase 4, the verifiers' phase 5.
fn phase_of(run: &Run, kind: Kind, workers: &[String]) -> &'static str {
    match kind {
        Kind::Reverify(_) => "5.5",
        Kind::Critic => "5.6",
        _ if workers.iter().any(|w| {
            run.assignment(w)
                .is_some_and(|a| a.role == Role::ReportWriter)
        }) =>
        {
            "6"
        }
        _ if workers
            .iter()
            .any(|w| run.assignment(w).is_some_and(|a| a.role == Role::Verifier)) =>
        {
            "5"
        }
        _ => "4",
    }
}

/// A lead event in words for stderr; `None` for the kinds something else
/// says already: the live view (a worker's ending), the closing summary
/// (the run's), the error or the note on how to resume (a failed or
/// interrupted run). Every kind is decided here, so no raw `PROGRESS:`
/// line reaches the terminal.
fn progress_words(
    task_type: TaskType,
    kind: EventKind,
    fields: &BTreeMap<String, String>,
) -> Option<String> {
    let field = |name: &str| fields.get(name).map_or("?", String::as_str);
    Some(match kind {
        EventKind::WorkerComplete
        | EventKind::WorkerTerminal
        | EventKind::RunComplete
        | EventKind::RunInterrupted
        | EventKind::RunFailed => return None,
        EventKind::RunStart => format!("run started: {} workers", field("workers")),
        EventKind::RunResume => format!("run resumed: {} workers", field("workers")),
        EventKind::PhaseStart => format!("phase {}", phase_words(task_type, field("phase"))),
        EventKind::ConvergenceSkipped => format!(
            "no convergence round {}: {}",
            field("round"),
            match field("reason") {
                "single-worker" => "one worker alone has nobody to check it",
                "quorum" => "fewer than two workers can review",
                "no-open-items" => "no finding is still open",
                "max-rounds" => "the last round was run",
                other => other,
            }
        ),
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
        EventKind::FixCheck => format!(
            "fix check: {} verifier(s) check the Executor's fix of {} defect(s)",
            field("verifiers"),
            field("defects")
        ),
        EventKind::Landed => "the change was landed in the working tree".to_owned(),
        EventKind::UsageCollected => format!("usage counted ({})", field("sources")),
        EventKind::ReportRepair => format!(
            "the report failed validation ({} problem(s)): the writer gets one repair",
            field("problems")
        ),
        EventKind::ReportValidated => {
            format!("the report is valid (attempt {})", field("attempts"))
        }
        EventKind::RunCancelled => "the run was cancelled".to_owned(),
        EventKind::BudgetStop => format!("budget reached: {}", field("reason")),
        EventKind::WorkerHeld => format!("{} held: {}", field("name"), field("reason")),
        EventKind::Session => format!("lead session `{}` recorded", field("sessionId")),
        EventKind::ResultRefused => format!(
            "{} attempt {}: its answer was refused",
            field("name"),
            field("attempt")
        ),
        EventKind::AskUser => "a question for the user".to_owned(),
        EventKind::UserAnswer => "the user answered".to_owned(),
    })
}

/// `4` → `4: the analysers` (`4: the Executor` in an implementation run).
fn phase_words(task_type: TaskType, phase: &str) -> String {
    let implementation = task_type == TaskType::Implementation;
    let what = match phase {
        "4" if implementation => "the Executor",
        "4" => "the analysers",
        "5" => "the verifiers check the Executor's change",
        "5.5" => "convergence: the workers check each other's findings",
        "5.6" => "the critic",
        "6" => "the report",
        _ => return phase.to_owned(),
    };
    format!("{phase}: {what}")
}

/// `okstra <command> <run-dir>`, ready to paste: the run keeps its own
/// settings, so no engine flag is needed to resume it as it was.
fn command_line(command: &str, run: &Run) -> String {
    format!("okstra {command} {}", crate::shell::path_word(&run.dir))
}
