//! The states a run is answered in (`schemas/next-answer.schema.json`).

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
