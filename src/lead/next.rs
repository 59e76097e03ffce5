//! `okstra next`: what a host lead does next, and everything okstra can do
//! before that. Each call takes the run's lease when it is free and
//! advances the run as far as okstra can without the host (the shared
//! loop, detached: computed steps run here, a batch of wrapper workers goes
//! to a background driver, `okstra __drive`), then answers with one state:
//!
//! - `host-work`: `tasks[]` only the host can do — run a native sub-agent
//!   on a task file, ask the user a question — and what runs meanwhile;
//! - `waiting`: nothing for the host; okstra's workers run;
//! - `done`: the report, its verdict and whether it was cross-verified;
//! - `failed` / `cancelled`: why, and the command that resumes.
//!
//! A failed or cancelled run stays so (`derive::liveness`): every later
//! `okstra next` answers the same, spends nothing and starts nothing, until
//! the user resumes it with `okstra next --resume` (or `okstra run <dir>`).
//!
//! It is idempotent: a task already handed out is handed out again with
//! the same nonce, a step already taken is not taken again. `--wait`
//! blocks while the answer is `waiting` (bounded by `--timeout`), taking
//! okstra's steps as they come due, and answers once the state changes.
//!
//! `okstra __drive` is the background driver: the same loop attached, under
//! the lease, until only the host can go on or the run is done.

use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::cli::{DriveArgs, EngineArgs, NextArgs};
use crate::derive::liveness;
use crate::diag;
use crate::dispatch::native::Handout;
use crate::dispatch::{self, Options};
use crate::exit::{self, ExitStatus};
use crate::output::Reply;
use crate::run::Run;
use crate::run::ask;
use crate::run::events;
use crate::run::layout;
use crate::run::lease::Lease;
use crate::run::steps::{self, Need, Step};
use crate::shell;
use crate::vocab::NextState;

use super::{DRIVE_LEASE_WAIT, Halt, Lead, Mode, facts};
use crate::vocab::EventKind;
use crate::vocab::Question;

/// How long `--wait` waits when `--timeout` is not given: under the ten
/// minutes a host's shell tool allows one command.
const DEFAULT_WAIT: Duration = Duration::from_mins(9);
/// How often `--wait` looks again.
const POLL: Duration = Duration::from_secs(1);
/// How long a call waits for a driver it started to record its batch.
const DRIVER_READY: Duration = Duration::from_secs(10);
/// Version of the `--json` answer.
const ANSWER_VERSION: u32 = 1;

/// A background driver this call started.
#[derive(Debug)]
pub(crate) struct Driver {
    /// Its exit status, if it ended before it recorded its batch.
    pub exited: Option<std::process::ExitStatus>,
}

/// What only the host can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum TaskKind {
    /// Run a fresh sub-agent of this host on `promptPath`.
    NativeWorker,
    /// Ask the user what `promptPath` says, and submit the answer.
    AskUser,
}

/// One task for the host.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
struct Task {
    dispatch_name: String,
    kind: TaskKind,
    /// The attempt handed out (native workers).
    #[serde(skip_serializing_if = "Option::is_none")]
    attempt: Option<u32>,
    /// The model the host gives its sub-agent: the assignment's host
    /// model (a Claude family token) or its exact model.
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    /// Absolute: the task file (native workers) or the question.
    prompt_path: PathBuf,
    /// Takes the answer on stdin; `--agent-id ID` may be appended.
    submit: String,
}

/// One wrapper attempt running meanwhile.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
struct Running {
    dispatch_name: String,
    attempt: u32,
    provider: Option<String>,
    started_at: Option<String>,
}

/// The finished run's report.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    data: PathBuf,
    markdown: PathBuf,
    html: PathBuf,
    verdict: String,
    cross_verified: bool,
    /// One line: the report's headline, or its verdict statement.
    summary: String,
    /// The report's first recommended next step, in one line.
    next_step: String,
    /// Whether the findings were cross-verified, in one line and the words
    /// every output uses.
    verification: String,
    /// Why the findings were not cross-verified, when they were not.
    #[serde(skip_serializing_if = "Option::is_none")]
    not_cross_verified: Option<String>,
    /// Two or more reviewers rostered, and no quorum checked the findings.
    #[serde(skip)]
    falls_short: bool,
    /// The user's answers to the open questions, for the next run's
    /// `--clarification-response`.
    #[serde(skip_serializing_if = "Option::is_none")]
    clarification_response: Option<PathBuf>,
}

/// `okstra next --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
struct Answer {
    schema_version: u32,
    state: NextState,
    run_dir: PathBuf,
    tasks: Vec<Task>,
    running: Vec<Running>,
    /// The command that blocks until the answer changes.
    wait: String,
    /// The command that stops the run's workers.
    cancel: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    report: Option<Report>,
    /// Why the run failed, or who stopped it.
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    /// The command that resumes a failed or cancelled run.
    #[serde(skip_serializing_if = "Option::is_none")]
    resume: Option<String>,
}

impl Answer {
    /// Whether `--wait` goes on waiting: only while nothing is for the host
    /// and the run has not ended.
    fn is_waiting(&self) -> bool {
        self.state == NextState::Waiting
    }
}

/// What this call could do before it answered.
enum Acted {
    /// Another okstra holds the lease: it drives the run.
    Busy,
    /// The run failed or was cancelled: nothing was done.
    Stopped,
    /// It advanced the run; a driver may have been started.
    Advanced(Option<Driver>),
    /// A step failed.
    Failed(String),
}

/// `okstra next`.
pub fn next_command(args: &NextArgs) -> Result<Reply> {
    Options::from_args(&args.engine)?;
    let run = Run::open(&args.run_dir)?;
    // The run's own settings; a flag given here overrides one for the rest
    // of the run, and its background drivers read them from the run.
    let engine = crate::run::settings::resolve(&run, &args.engine)?;
    begin(&run);
    let mut answer = step(&run, &engine, args.resume)?;
    if args.wait {
        let deadline = Instant::now() + args.timeout.unwrap_or(DEFAULT_WAIT);
        while answer.is_waiting() {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            std::thread::sleep(POLL.min(deadline - now));
            answer = step(&run, &engine, false)?;
        }
    }
    let reply = Reply::answer(&answer, args.json)?;
    // What the answer means, said after it.
    Ok(reply.then(move || {
        Ok(match answer.state {
            NextState::HostWork | NextState::Waiting => ExitStatus::Success,
            NextState::Done if answer.report.as_ref().is_some_and(|r| !r.falls_short) => {
                if let Some(line) = answer
                    .report
                    .as_ref()
                    .and_then(|r| r.not_cross_verified.as_deref())
                {
                    diag::note(format_args!("{line}"));
                }
                ExitStatus::Success
            }
            NextState::Done => {
                diag::error(format_args!(
                    "the report is written, but {}",
                    answer
                        .report
                        .as_ref()
                        .and_then(|r| r.not_cross_verified.as_deref())
                        .unwrap_or("it was not cross-verified")
                ));
                ExitStatus::Failure
            }
            NextState::Failed | NextState::Cancelled => {
                diag::error(format_args!(
                    "the run {}: {}",
                    if answer.state == NextState::Failed {
                        "failed"
                    } else {
                        "was stopped"
                    },
                    answer.reason.as_deref().unwrap_or("see `okstra status`")
                ));
                diag::note(format_args!(
                    "nothing was started; resume it with `{}`",
                    answer.resume.as_deref().unwrap_or_default()
                ));
                ExitStatus::Failure
            }
        })
    }))
}

/// The first call of a host lead: `run-start`, and the lead's own Claude
/// Code session for usage (Claude Code gives its Bash commands the id).
fn begin(run: &Run) {
    if events::newest_of(run, &[EventKind::RunStart, EventKind::RunResume]).is_none() {
        crate::run::events::record(
            run,
            EventKind::RunStart,
            &[
                ("taskType", run.task_type.as_str()),
                ("workers", &run.assignments.len().to_string()),
                ("lead", "okstra next"),
            ],
        );
    }
    if run.lead_runtime == crate::catalog::LeadRuntime::ClaudeCode
        && let Ok(id) = std::env::var("CLAUDE_CODE_SESSION_ID")
    {
        dispatch::native::record_session(run, None, &id);
    }
}

/// Act if the lease is free, then answer; `resume` first resumes a
/// failed or cancelled run.
fn step(run: &Run, engine: &EngineArgs, resume: bool) -> Result<Answer> {
    let acted = act(run, engine, resume)?;
    observe(run, engine, &acted)
}

/// How the run stands now (`derive::liveness`): whether something runs,
/// the host holds its next attempts, or it is done, failed or cancelled,
/// with the newest end's reason. A driver that holds (or last held) the
/// lease keeps it running, unless that is this very call.
fn standing(run: &Run) -> Result<(liveness::Outcome, Option<String>)> {
    let me = i32::try_from(std::process::id()).unwrap_or(0);
    let driven = Lease::live_holder(run).is_some_and(|holder| holder.pid != me);
    let state = run.team_state()?;
    let newest = events::newest_of(run, &events::LIFECYCLE);
    // Whether the report is valid matters only to a run that recorded one.
    let reported = newest
        .as_ref()
        .is_some_and(|(kind, _)| *kind == EventKind::RunComplete)
        && crate::report::problems(&run.dir).is_ok_and(|problems| problems.is_empty());
    let facts = liveness::RunFacts::of(
        &state,
        dispatch::liveness,
        driven,
        newest
            .as_ref()
            .map(|(kind, fields)| (kind.as_str(), fields)),
        reported,
    );
    let reason = facts
        .end
        .as_ref()
        .and_then(|end| end.reason().map(str::to_owned));
    Ok((liveness::outcome(&facts), reason))
}

/// Advance the run as far as okstra can without the host, holding the
/// lease; nothing when another okstra holds it, or when the run failed or
/// was cancelled and `resume` was not asked for.
fn act(run: &Run, engine: &EngineArgs, resume: bool) -> Result<Acted> {
    if Lease::held_by(run)?.is_some() {
        return Ok(Acted::Busy);
    }
    let lease = match Lease::acquire(run, "okstra next", Duration::ZERO) {
        Ok(lease) => lease,
        Err(_) if Lease::held_by(run)?.is_some() => return Ok(Acted::Busy),
        Err(err) => return Err(err),
    };
    let mut lead = Lead::new(run.clone(), engine.clone(), Mode::Detached);
    lead.approval_gate = true;
    lead.lease = Some(lease);
    if resume {
        // The user asked: the run goes on, and a worker whose last attempt
        // ended for a reason the user can fix gets one fresh attempt.
        lead.event(
            EventKind::RunResume,
            &[
                ("taskType", run.task_type.as_str()),
                ("workers", &run.assignments.len().to_string()),
                ("lead", "okstra next --resume"),
            ],
        );
        lead.resumed = true;
    } else if standing(run)?.0.is_stopped() {
        // Failed or cancelled: nothing is spent until the user resumes.
        return Ok(Acted::Stopped);
    }
    match lead.advance_until() {
        Ok(Halt::Detached(driver)) => Ok(Acted::Advanced(Some(driver))),
        Ok(_) => Ok(Acted::Advanced(None)),
        Err(err) => {
            let error = format!("{err:#}");
            lead.event(
                EventKind::RunFailed,
                &[("error", &error), ("resume", &resume_line(run))],
            );
            Ok(Acted::Failed(error))
        }
    }
}

/// The answer, from the run's files: read-only but for handing out the
/// host's tasks (each under the team state's lock, so it is safe while a
/// driver runs).
fn observe(run: &Run, engine: &EngineArgs, acted: &Acted) -> Result<Answer> {
    let mut lead = Lead::new(run.clone(), engine.clone(), Mode::Detached);
    lead.approval_gate = true;
    let state = run.team_state()?;
    let running = running(&state);
    let mut answer = Answer {
        schema_version: ANSWER_VERSION,
        state: NextState::Waiting,
        run_dir: run.dir.clone(),
        tasks: Vec::new(),
        running,
        wait: shell::okstra_line(&["next", &run.dir.to_string_lossy(), "--wait", "--json"]),
        cancel: shell::okstra_line(&["cancel", &run.dir.to_string_lossy()]),
        report: None,
        reason: None,
        resume: None,
    };
    if let Acted::Failed(error) = acted {
        return Ok(failed(run, answer, error.clone()));
    }
    match standing(run)? {
        (liveness::Outcome::Failed, why) => {
            let why = why.unwrap_or_else(|| "it ended without a report".to_owned());
            return Ok(failed(run, answer, why));
        }
        (liveness::Outcome::Cancelled, why) => {
            let mut answer = failed(run, answer, why.unwrap_or_else(|| "cancelled".to_owned()));
            answer.state = NextState::Cancelled;
            return Ok(answer);
        }
        _ => {}
    }
    if let Acted::Advanced(Some(Driver {
        exited: Some(status),
        ..
    })) = acted
        && !status.success()
    {
        let why = driver_error(run).unwrap_or_else(|| {
            format!(
                "the background driver ended ({status}) before it started its workers; see `{}`",
                run.layout().dispatch_log().display()
            )
        });
        return Ok(failed(run, answer, why));
    }
    match lead.approval()? {
        Some(Halt::Ask(question)) => {
            answer.state = NextState::HostWork;
            answer.tasks.push(ask_task(run, question));
            return Ok(answer);
        }
        Some(Halt::Declined) => {
            return Ok(failed(run, answer, super::DECLINED.to_owned()));
        }
        _ => {}
    }
    let gathered = facts::gather(&lead)?;
    let next = steps::advance(&gathered.facts);
    // The host's tasks of the batch the run stands at: with the step that
    // hands them out, and alongside a batch okstra runs or is starting.
    let (workers, need) = match &next {
        Step::Host(workers) => (workers.clone(), Need::Host),
        Step::Dispatch { workers, .. } => (workers.clone(), Need::Run),
        Step::Wait(workers) => (workers.clone(), Need::Running),
        _ => (Vec::new(), Need::Done),
    };
    // The host's tasks of the batch, unless the budget is spent (nothing
    // more goes to the host then; the driver ends the run).
    let spent = lead.budget_spent()?.is_some();
    if let Some(group) = gathered.group_with(&workers, need).filter(|_| !spent) {
        for planned in gathered.host_of(group) {
            if let Some(handout) = dispatch::native::hand_out(run, planned)? {
                answer.tasks.push(native_task(run, &handout));
            }
        }
    }
    match next {
        Step::Done => {
            answer.report = Some(report(run)?);
            if let Some(task) = clarification(run)? {
                answer.state = NextState::HostWork;
                answer.tasks.push(task);
            } else {
                answer.state = NextState::Done;
                if let Some(report) = &mut answer.report {
                    report.clarification_response = ask::answered(run, Question::Clarification)
                        .map(|_| Question::Clarification.answer_path(run));
                }
            }
        }
        Step::End(stop) => {
            return Ok(failed(run, answer, lead.stop_reason(stop)));
        }
        _ if !answer.tasks.is_empty() => answer.state = NextState::HostWork,
        _ => answer.state = NextState::Waiting,
    }
    Ok(answer)
}

/// A `failed` answer saying `why`: no task, and the line that resumes.
fn failed(run: &Run, mut answer: Answer, why: String) -> Answer {
    answer.state = NextState::Failed;
    answer.tasks.clear();
    answer.reason = Some(why);
    answer.resume = Some(resume_line(run));
    answer
}

/// The command that resumes a failed or cancelled host-led run.
fn resume_line(run: &Run) -> String {
    shell::okstra_line(&["next", &run.dir.to_string_lossy(), "--resume", "--json"])
}

/// The error the newest `run-failed` event recorded (a driver that ended
/// at once wrote it).
fn driver_error(run: &Run) -> Option<String> {
    match events::newest_of(run, &[EventKind::RunFailed]) {
        Some((_, fields)) => fields.get("error").cloned(),
        None => None,
    }
}

/// Wrapper attempts that run now (`derive::liveness`: their driver or
/// wrapper alive).
fn running(state: &crate::run::team_state::TeamState) -> Vec<Running> {
    state
        .latest_attempts()
        .into_iter()
        .filter(|r| liveness::of_record(r, dispatch::liveness(r)).is_running())
        .map(|r| Running {
            dispatch_name: r.dispatch_name.clone(),
            attempt: r.attempt,
            provider: r.provider.map(|p| p.as_str().to_owned()),
            started_at: r.started_at.clone(),
        })
        .collect()
}

/// The task of a native attempt handed to the host.
fn native_task(run: &Run, handout: &Handout) -> Task {
    let model = run
        .assignment(&handout.record.worker_id)
        .map(|a| {
            if a.host_model.is_empty() || a.host_model == "unmapped" {
                a.model_execution_value.clone()
            } else {
                a.host_model.clone()
            }
        })
        .or_else(|| handout.record.model.clone());
    Task {
        dispatch_name: handout.record.dispatch_name.clone(),
        kind: TaskKind::NativeWorker,
        attempt: Some(handout.record.attempt),
        model,
        prompt_path: handout.task_path.clone(),
        submit: handout.submit.clone(),
    }
}

/// The task of a question for the user.
fn ask_task(run: &Run, question: Question) -> Task {
    Task {
        dispatch_name: question.name().to_owned(),
        kind: TaskKind::AskUser,
        attempt: None,
        model: None,
        prompt_path: question.prompt_path(run),
        submit: dispatch::native::submit_line(run, question.name()),
    }
}

/// A run of a profile that may end with clarification questions
/// (requirements-discovery, error-analysis) whose report leaves some open
/// (`task.openQuestions`) asks them once, after the report (the answers are
/// the next run's input).
fn clarification(run: &Run) -> Result<Option<Task>> {
    if !run.task_type.takes_clarification() || ask::answered(run, Question::Clarification).is_some()
    {
        return Ok(None);
    }
    let questions = open_questions(run);
    if questions.is_empty() {
        return Ok(None);
    }
    let mut text = String::from(
        "# Open questions\n\nThe report of this run leaves these questions open. Ask the user each one and wait for the answers; submit all of them at once (one paragraph per question, numbered like the questions), or an empty answer to leave them open. The answers become the next run's `--clarification-response`.\n\n",
    );
    for (n, question) in questions.iter().enumerate() {
        let _ = writeln!(text, "{}. {}", n + 1, events::one_line(question));
    }
    ask::ask(run, Question::Clarification, &text)?;
    Ok(Some(ask_task(run, Question::Clarification)))
}

/// `task.openQuestions` of the report.
fn open_questions(run: &Run) -> Vec<String> {
    let Ok(bytes) =
        crate::fsread::read_no_follow(&run.report_data_path, crate::fsread::Kind::Report)
    else {
        return Vec::new();
    };
    serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| v.pointer("/task/openQuestions").cloned())
        .and_then(|v| serde_json::from_value::<Vec<String>>(v).ok())
        .unwrap_or_default()
}

/// The finished run's report.
fn report(run: &Run) -> Result<Report> {
    let dir = run.layout().report_dir();
    let bytes = crate::fsread::read_no_follow(&run.report_data_path, crate::fsread::Kind::Report)?;
    let data: serde_json::Value = serde_json::from_slice(&bytes)
        .with_context(|| format!("`{}` is not JSON", run.report_data_path.display()))?;
    let text = |pointer: &str| data.pointer(pointer).and_then(serde_json::Value::as_str);
    let standing = super::headless::standing(run)?;
    Ok(Report {
        data: run.report_data_path.clone(),
        markdown: dir.join(layout::REPORT_MARKDOWN_NAME),
        html: dir.join(layout::REPORT_HTML_NAME),
        verdict: text("/finalVerdict/verdictToken")
            .unwrap_or("unknown")
            .to_owned(),
        cross_verified: standing.cross_verified,
        summary: events::one_line(
            text("/humanSummary/headline")
                .or_else(|| text("/finalVerdict/statement"))
                .unwrap_or_default(),
        ),
        not_cross_verified: (!standing.cross_verified).then(|| standing.line.clone()),
        falls_short: standing.falls_short,
        verification: standing.line,
        clarification_response: None,
        next_step: next_step(&data),
    })
}

/// `recommendedNextSteps[0]` in one line: `phase <task type>: <reason>`,
/// `<action>: <reason>` or `done: <reason>`.
fn next_step(data: &serde_json::Value) -> String {
    let step = data.pointer("/recommendedNextSteps/0");
    let text = |key: &str| {
        step.and_then(|s| s.get(key))
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
    };
    let what = match text("kind") {
        "phase" => format!("phase {}", text("phase")),
        "action" => text("action").to_owned(),
        other => other.to_owned(),
    };
    events::one_line(&format!("{what}: {}", text("reason")))
}

/// The answer in a few lines for a person (`--json` is the answer
/// itself).
/// The answer carries its version (`ANSWER_VERSION`).
impl crate::output::Answer for Answer {
    const SCHEMA: &'static str = "next-answer.schema.json";
    const VERSION: Option<u32> = None;
}

impl crate::output::Text for Answer {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let answer = self;
        writeln!(out, "{}", answer.state.as_str())?;
        for task in &answer.tasks {
            match task.kind {
                TaskKind::NativeWorker => writeln!(
                    out,
                    "task {} (attempt {}, model {}): a fresh sub-agent on {}; answer back: {}",
                    task.dispatch_name,
                    task.attempt.unwrap_or(1),
                    task.model.as_deref().unwrap_or("?"),
                    task.prompt_path.display(),
                    task.submit
                )?,
                TaskKind::AskUser => writeln!(
                    out,
                    "ask the user {}: {}; answer back: {}",
                    task.dispatch_name,
                    task.prompt_path.display(),
                    task.submit
                )?,
            }
        }
        for running in &answer.running {
            writeln!(
                out,
                "running {} (attempt {})",
                running.dispatch_name, running.attempt
            )?;
        }
        if let Some(report) = &answer.report {
            writeln!(out, "verdict {}: {}", report.verdict, report.summary)?;
            writeln!(out, "{}", report.markdown.display())?;
            writeln!(out, "{}", report.html.display())?;
        }
        if let Some(reason) = &answer.reason {
            writeln!(out, "reason: {}", crate::fsread::escape(reason))?;
        }
        match answer.state {
            NextState::HostWork | NextState::Waiting => writeln!(out, "wait: {}", answer.wait)?,
            NextState::Failed | NextState::Cancelled => {
                writeln!(out, "resume: {}", answer.resume.as_deref().unwrap_or(""))?;
            }
            NextState::Done => {}
        }
        Ok(())
    }
}

impl Lead {
    /// Hand the batch whose `starts` must begin to a background driver
    /// (the lease goes with it), and wait until it recorded one of them or
    /// ended.
    pub(super) fn detach(&mut self, starts: &[String]) -> Result<Driver> {
        let log_path = self.run.layout().dispatch_log();
        let mut args = vec![
            std::ffi::OsString::from("__drive"),
            self.run.dir.clone().into(),
        ];
        if self.resumed {
            args.push("--resume".into());
        }
        // Released just before the driver starts: it takes the lease itself.
        self.lease = None;
        let mut started =
            crate::background::start("the background driver", &log_path, &args, |builder| {
                // The driver reads the run's settings from the run (this
                // call recorded any flag it was given): none go on its
                // command line, and the variables that stand for flags are
                // not handed down either.
                builder
                    .env_remove("OKSTRA_PASS_ENV")
                    .env_remove("OKSTRA_PROVIDER_SLOTS");
            })?;
        let pid = started.pid;
        let exited = started.wait_ready(DRIVER_READY, || {
            let state = self.run.team_state()?;
            Ok(starts.iter().any(|name| {
                state
                    .latest(name)
                    .is_some_and(|r| r.dispatcher_pid == pid && pid.is_some())
            }))
        })?;
        if exited.is_some() {
            return Ok(Driver { exited });
        }
        diag::progress(format_args!(
            "started a background driver for {} worker(s) (pid {}); progress in `{}`",
            starts.len(),
            pid.map_or_else(|| "?".into(), |p| p.to_string()),
            log_path.display()
        ));
        Ok(Driver { exited: None })
    }
}

/// `okstra __drive`: the background driver `okstra next` starts. It takes
/// the lease and drives the shared loop attached until only the host can go
/// on, the run is done or ends, or a signal stops it.
pub fn drive_command(args: &DriveArgs) -> Result<Reply> {
    crate::background::ignore_hangup();
    let run = Run::open(&args.run_dir)?;
    let lease = Lease::acquire(&run, "okstra __drive", DRIVE_LEASE_WAIT)?;
    let engine = crate::run::settings::resolve(&run, &args.engine)?;
    let mut lead = Lead::new(run, engine, Mode::Attached);
    lead.approval_gate = true;
    lead.lease = Some(lease);
    lead.resumed = args.resume;
    let resume = shell::okstra_line(&["next", &lead.run.dir.to_string_lossy(), "--resume"]);
    match lead.advance_until() {
        Ok(Halt::Interrupted(signal)) => {
            lead.event(
                EventKind::RunInterrupted,
                &[("signal", signal.as_str()), ("resume", &resume)],
            );
            Ok(Reply::status(ExitStatus::Code(exit::from_signal(
                signal as i32,
            ))))
        }
        Ok(_) => Ok(Reply::status(ExitStatus::Success)),
        Err(err) => {
            lead.event(
                EventKind::RunFailed,
                &[("error", &format!("{err:#}")), ("resume", &resume)],
            );
            Err(err)
        }
    }
}
