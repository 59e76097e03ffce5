//! The words of a run as a whole: how it continues an earlier run (the
//! task manifest's `continuation.kind`), the states `okstra next` answers
//! with (`schemas/next-answer.schema.json`) and the steps of its step
//! journal (`state/steps.json`).

closed_set! {
    /// How a run continues an earlier one.
    ContinuationKind {
        /// A fresh task.
        None => "none",
        /// Answers to an earlier run's clarification questions, from a file.
        ClarificationResponse => "clarification-response",
        /// Answers typed on the terminal for `--resume-clarification`.
        ResumeClarification => "resume-clarification",
        /// An approved plan that an implementation run carries out.
        ApprovedPlan => "approved-plan",
    }
}

closed_set! {
    /// One state of the run, as `okstra next` answers.
    NextState {
        HostWork => "host-work",
        Waiting => "waiting",
        Done => "done",
        Failed => "failed",
        Cancelled => "cancelled",
    }
}

/// One step of the step journal (`state/steps.json`), by its key there:
/// `plan-r<N>`, `record-r<N>`, `classify`, `fix-request`, `fix-check`,
/// `inputs`, `render`, `complete`. A key this okstra does not read is kept
/// in the journal as it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JournalStep {
    /// Round `N`'s plan.
    Plan(u32),
    /// Round `N`'s verdicts, recorded into the ledger.
    Record(u32),
    /// Every item's class.
    Classify,
    FixRequest,
    FixCheck,
    /// The report writer's inputs.
    Inputs,
    /// The report, validated and rendered.
    Render,
    /// The run's end was recorded (`run-complete`), for this report or reason.
    Complete,
}

impl JournalStep {
    const PLAN: &'static str = "plan-r";
    const RECORD: &'static str = "record-r";
    /// The steps without a round, with their keys.
    const FIXED: [(JournalStep, &'static str); 6] = [
        (JournalStep::Classify, "classify"),
        (JournalStep::FixRequest, "fix-request"),
        (JournalStep::FixCheck, "fix-check"),
        (JournalStep::Inputs, "inputs"),
        (JournalStep::Render, "render"),
        (JournalStep::Complete, "complete"),
    ];
}

impl std::fmt::Display for JournalStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JournalStep::Plan(round) => write!(f, "{}{round}", JournalStep::PLAN),
            JournalStep::Record(round) => write!(f, "{}{round}", JournalStep::RECORD),
            fixed => {
                let (_, key) = JournalStep::FIXED
                    .iter()
                    .find(|(step, _)| step == fixed)
                    .expect("every step without a round has a key in FIXED");
                f.write_str(key)
            }
        }
    }
}

impl std::str::FromStr for JournalStep {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let round = |prefix: &str| text.strip_prefix(prefix)?.parse::<u32>().ok();
        if let Some(round) = round(JournalStep::PLAN) {
            return Ok(JournalStep::Plan(round));
        }
        if let Some(round) = round(JournalStep::RECORD) {
            return Ok(JournalStep::Record(round));
        }
        JournalStep::FIXED
            .iter()
            .find(|(_, key)| *key == text)
            .map(|(step, _)| *step)
            .ok_or_else(|| {
                let fixed: Vec<&str> = JournalStep::FIXED.iter().map(|(_, key)| *key).collect();
                format!("plan-r<N>|record-r<N>|{}", fixed.join("|"))
            })
    }
}

closed_set! {
    /// The lead events okstra itself writes (`okstra run`, `okstra next`,
    /// the engine, `okstra submit` and its hook). `okstra event` takes any
    /// slug a host lead chooses; these are the ones okstra's own steps
    /// record, spelt once.
    EventKind {
        RunStart => "run-start",
        RunResume => "run-resume",
        PhaseStart => "phase-start",
        WorkerComplete => "worker-complete",
        WorkerTerminal => "worker-terminal",
        ConvergenceSkipped => "convergence-skipped",
        RoundComplete => "round-complete",
        FixPass => "fix-pass",
        FixPassSkipped => "fix-pass-skipped",
        FixCheck => "fix-check",
        Landed => "landed",
        UsageCollected => "usage-collected",
        ReportRepair => "report-repair",
        ReportValidated => "report-validated",
        RunComplete => "run-complete",
        RunInterrupted => "run-interrupted",
        RunFailed => "run-failed",
        RunCancelled => "run-cancelled",
        BudgetStop => "budget-stop",
        WorkerHeld => "worker-held",
        Session => "session",
        ResultRefused => "result-refused",
        AskUser => "ask-user",
        UserAnswer => "user-answer",
    }
}

closed_set! {
    /// A question a run asks its user.
    Question {
        Approval => "approval",
        Clarification => "clarification",
    }
}
