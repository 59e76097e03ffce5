//! The words of a run as a whole: how it continues an earlier run (the
//! task manifest's `continuation.kind`) and the states `okstra next`
//! answers with (`schemas/next-answer.schema.json`).

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
