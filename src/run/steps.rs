//! The run's step machine: from what is true of a run now ([`Facts`]), the
//! one next step ([`advance`]). It is pure — the facts are gathered and the
//! steps carried out elsewhere (`lead`) — so `okstra run` loops over it and
//! a host lead's `okstra next` can call it once per step, and both can
//! finish a run the other started.
//!
//! The order is the lead contract's: the first batch (analysers; or the
//! Executor, then the verifiers), Phase 5.5 round by round (plan, reviewers,
//! record) until a stop, the classification, the implementation fix pass
//! and — when it changed the code — the verifiers' check of it, the
//! critic, the report inputs, the report writer, one repair, the rendered
//! report. A step already done from the same inputs is never done
//! again: a finished run advances straight to [`Step::Done`].

use crate::catalog::DispatchKind;
use crate::derive::quorum::{Count, Standing};

/// Where a worker's dispatch stands, as decided from its attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Completed from the same prompt and inputs: nothing to do.
    Done,
    /// An attempt must start (or a live one of a dead driver be adopted).
    Run,
    /// The host's own session must run it.
    Host,
    /// It runs under a driver that is alive.
    Running,
    /// It ended without completing and nothing allows another attempt.
    Failed,
}

/// One worker's dispatch for this step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worker {
    pub id: String,
    pub need: Need,
}

impl Worker {
    pub fn new(id: &str, need: Need) -> Worker {
        Worker {
            id: id.to_owned(),
            need,
        }
    }
}

/// One convergence round as far as it got.
#[derive(Debug, Clone, PartialEq, Eq)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "each bool is one fact the step machine reads"
)]
pub struct Round {
    pub number: u32,
    /// Its plan exists and was made from the current inputs.
    pub plan_fresh: bool,
    /// The plan says the round does not run (quorum, no open item).
    pub stopped: bool,
    /// Its reviewers' dispatches.
    pub reviewers: Vec<Worker>,
    /// Its verdicts were recorded from the current plan and results.
    pub recorded_fresh: bool,
    /// Recording it stopped convergence (no open item, max rounds, quorum).
    pub stops_after: bool,
}

/// The verifiers' check of the Executor's fix pass (due once the fix pass
/// changed the code).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixCheck {
    /// Its plan and prompts were made from the current fix pass.
    pub planned: bool,
    /// Its verifiers' dispatches, once planned.
    pub verifiers: Vec<Worker>,
}

/// The report's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Report {
    /// No `data.json` (or not from the current inputs).
    #[default]
    Missing,
    /// Written, but without okstra's own blocks (`reliability`,
    /// `verification`, `workerCoverage`, `usageSummary`) as the records now
    /// say them.
    Unfinalized,
    /// It fails validation; `repaired` once the one repair attempt ran.
    Invalid { repaired: bool },
    /// Valid; `rendered` once the Markdown and HTML match it.
    Valid { rendered: bool },
}

/// Everything [`advance`] looks at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "each bool is one fact the step machine reads"
)]
pub struct Facts {
    /// The Executor of an implementation run.
    pub executor: Option<Worker>,
    /// The analysers (or verifiers): their own work.
    pub reviewers: Vec<Worker>,
    /// Phase 5.5 may run (two or more reviewers rostered).
    pub convergence: bool,
    pub max_rounds: u32,
    /// The rounds planned so far, round 1 first.
    pub rounds: Vec<Round>,
    /// The ledger's classes are computed from the last recorded round.
    pub classified: bool,
    /// The Executor's fix pass, once the classification says one is due.
    pub fix_pass: Option<Worker>,
    /// Whether the fix cycle still has to decide (implementation runs with
    /// `--fix-cycle yes`, before the request was made).
    pub fix_undecided: bool,
    /// The check of a fix pass that changed the code.
    pub fix_check: Option<FixCheck>,
    pub critic: Option<Worker>,
    pub report_writer: Option<Worker>,
    /// `state/report-inputs.json` was computed from the current records.
    pub inputs_fresh: bool,
    pub report: Report,
    /// The report writer's repair attempt, once there is one.
    pub repair: Option<Worker>,
}

/// What to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Run these workers' dispatches of `kind` (start or adopt).
    Dispatch {
        kind: DispatchKind,
        workers: Vec<String>,
    },
    /// Only the host can go on: these dispatches run in its own session.
    Host(Vec<String>),
    /// These run under another driver that is alive.
    Wait(Vec<String>),
    /// Plan convergence round N.
    Plan(u32),
    /// Record round N's verdicts.
    Record(u32),
    /// Compute every item's class.
    Classify,
    /// Decide the fix cycle: write the fix request, or record that none is
    /// due.
    FixRequest,
    /// The Executor's one fix pass.
    FixPass,
    /// Plan the verifiers' check of the fix pass: its defects, and each
    /// verifier's prompt on the fix pass's diff.
    FixCheck,
    /// Compute the report writer's inputs into `state/report-inputs.json`
    /// (the other workers' coverage, reliability, verification).
    Inputs,
    /// Write okstra's own blocks into the report the writer wrote:
    /// `reliability`, `verification`, `workerCoverage`, `usageSummary`.
    Finalize,
    /// The report writer's one repair attempt.
    Repair,
    /// Finish the report: reliability, validation, Markdown and HTML.
    Render,
    /// The run is finished with a valid report.
    Done,
    /// The run ends without a report.
    End(Stop),
}

/// Why a run ends without a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The Executor did not complete.
    ExecutorFailed,
    /// No analyser (or verifier) completed its own work.
    NoReviewer,
    /// No report writer is rostered.
    NoReportWriter,
    /// The report writer did not complete.
    ReportWriterFailed,
    /// The report is still invalid after the one repair.
    ReportInvalid,
}

impl Stop {
    /// The reason, as `okstra run` says it.
    pub fn reason(self) -> &'static str {
        match self {
            Stop::ExecutorFailed => "the Executor did not complete, so there is nothing to verify",
            Stop::NoReviewer => "no analyser completed, so there is nothing to report",
            Stop::NoReportWriter => {
                "no report writer is rostered: `okstra run` does not author reports itself"
            }
            Stop::ReportWriterFailed => "the report writer did not complete",
            Stop::ReportInvalid => "the report is still invalid after one repair attempt",
        }
    }
}

/// The step for a batch of `kind`, if any of `workers` needs one: start
/// what must start, else hand the host what only it can run, else wait for
/// a live driver.
fn batch(kind: DispatchKind, workers: &[&Worker]) -> Option<Step> {
    let named = |need: Need| -> Vec<String> {
        workers
            .iter()
            .filter(|w| w.need == need)
            .map(|w| w.id.clone())
            .collect()
    };
    let run = named(Need::Run);
    if !run.is_empty() {
        return Some(Step::Dispatch { kind, workers: run });
    }
    let host = named(Need::Host);
    if !host.is_empty() {
        return Some(Step::Host(host));
    }
    let running = named(Need::Running);
    if !running.is_empty() {
        return Some(Step::Wait(running));
    }
    None
}

/// The next step of a run whose state is `facts`.
pub fn advance(facts: &Facts) -> Step {
    if let Some(executor) = &facts.executor {
        if let Some(step) = batch(DispatchKind::Initial, &[executor]) {
            return step;
        }
        if executor.need == Need::Failed {
            return Step::End(Stop::ExecutorFailed);
        }
    }
    let reviewers: Vec<&Worker> = facts.reviewers.iter().collect();
    if let Some(step) = batch(DispatchKind::Initial, &reviewers) {
        return step;
    }
    let quorum = Count::of(reviewers.iter().map(|w| {
        if w.need == Need::Done {
            Standing::Completed
        } else {
            Standing::Out
        }
    }));
    if quorum.completed == 0 {
        return Step::End(Stop::NoReviewer);
    }
    // Phase 5.5, round by round, while a quorum completed its own work
    // (`derive::quorum`). A run without one goes on to its report, which
    // says it was not cross-verified.
    if facts.convergence && quorum.cross_checks() {
        for number in 1..=facts.max_rounds.max(1) {
            let Some(round) = facts.rounds.iter().find(|r| r.number == number) else {
                return Step::Plan(number);
            };
            if !round.plan_fresh {
                return Step::Plan(number);
            }
            if round.stopped {
                break;
            }
            let reviewers: Vec<&Worker> = round.reviewers.iter().collect();
            if let Some(step) = batch(DispatchKind::Reverify(number), &reviewers) {
                return step;
            }
            if !round.recorded_fresh {
                return Step::Record(number);
            }
            if round.stops_after {
                break;
            }
        }
    }
    if !facts.classified {
        return Step::Classify;
    }
    if facts.fix_undecided {
        return Step::FixRequest;
    }
    if let Some(fix) = &facts.fix_pass {
        match fix.need {
            Need::Run => return Step::FixPass,
            Need::Host => return Step::Host(vec![fix.id.clone()]),
            Need::Running => return Step::Wait(vec![fix.id.clone()]),
            Need::Done | Need::Failed => {}
        }
    }
    if let Some(check) = &facts.fix_check {
        if !check.planned {
            return Step::FixCheck;
        }
        let verifiers: Vec<&Worker> = check.verifiers.iter().collect();
        if let Some(step) = batch(DispatchKind::FixCheck, &verifiers) {
            return step;
        }
    }
    if let Some(critic) = &facts.critic
        && let Some(step) = batch(DispatchKind::Critic, &[critic])
    {
        return step;
    }
    let Some(writer) = &facts.report_writer else {
        return Step::End(Stop::NoReportWriter);
    };
    if !facts.inputs_fresh {
        return Step::Inputs;
    }
    if let Some(step) = batch(DispatchKind::Initial, &[writer]) {
        return step;
    }
    match facts.report {
        Report::Missing if writer.need == Need::Failed => Step::End(Stop::ReportWriterFailed),
        Report::Missing | Report::Invalid { repaired: false } => {
            match facts.repair.as_ref().map(|r| r.need) {
                None | Some(Need::Run) => Step::Repair,
                Some(Need::Host) => Step::Host(vec![writer.id.clone()]),
                Some(Need::Running) => Step::Wait(vec![writer.id.clone()]),
                Some(Need::Done | Need::Failed) => Step::End(Stop::ReportInvalid),
            }
        }
        Report::Unfinalized => Step::Finalize,
        Report::Invalid { repaired: true } => Step::End(Stop::ReportInvalid),
        Report::Valid { rendered: false } => Step::Render,
        Report::Valid { rendered: true } => Step::Done,
    }
}

#[cfg(test)]
#[path = "steps_tests.rs"]
mod tests;
