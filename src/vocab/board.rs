//! A worker's state on the board (`okstra status`, `okstra await`): its
//! words, and which of them are over or still live. Which state a worker is
//! in is `lifecycle::status`'s judgement.

use serde::Serialize;

use super::Ending;

/// A worker's (or one attempt's) state. Terminal states never change again
/// on their own.
///
/// A recorded attempt that ended *is* its ending ([`BoardState::Ended`], spelt
/// as the ending's word), whatever its files say; an attempt not ended yet
/// is `queued`, `held`, `with-host`, `running`, `stale`, `blocked` or
/// `lost`. The other states (`pending`, `exited`, `idle-killed`,
/// `signalled`, `done`) are for a worker with no attempt record at all,
/// judged from its files alone (a host that runs its workers without
/// okstra's records).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BoardState {
    /// No record, and no sidecar, heartbeat, log or result yet.
    Pending,
    /// Recorded, not started yet.
    Queued,
    /// Recorded, held back by a gate (memory, disk).
    Held,
    /// A `native-session` attempt handed to the host's session and not
    /// answered yet: okstra runs nothing of it.
    WithHost,
    /// Working, with activity in the last `lifecycle::status::STALE_SECS`.
    Running,
    /// Running, but silent for `lifecycle::status::STALE_SECS`.
    Stale,
    /// Running, and its latest heartbeat names a blocker.
    Blocked,
    /// Finished, but with a nonzero exit code or a Result Path missing.
    Exited,
    /// Stopped by provider-exec's idle watchdog (exit 124).
    IdleKilled,
    /// Stopped because its wrapper was signalled (exit 128+N).
    Signalled,
    /// Its wrapper died without finishing the sidecar; or a recorded
    /// attempt that never recorded an ending and nothing of which runs.
    Lost,
    /// Finished, exit 0 (or heartbeat `complete`), every Result Path present.
    Done,
    /// A recorded attempt that ended: its ending is its state.
    Ended(Ending),
}

impl BoardState {
    pub fn as_str(self) -> &'static str {
        match self {
            BoardState::Pending => "pending",
            BoardState::Queued => "queued",
            BoardState::Held => "held",
            BoardState::WithHost => "with-host",
            BoardState::Running => "running",
            BoardState::Stale => "stale",
            BoardState::Blocked => "blocked",
            BoardState::Exited => "exited",
            BoardState::IdleKilled => "idle-killed",
            BoardState::Signalled => "signalled",
            BoardState::Lost => "lost",
            BoardState::Done => "done",
            BoardState::Ended(ending) => ending.as_str(),
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            BoardState::Exited
                | BoardState::IdleKilled
                | BoardState::Signalled
                | BoardState::Lost
                | BoardState::Done
                | BoardState::Ended(_)
        )
    }

    /// Whether something of it may still run or be answered: the run it
    /// belongs to has not stopped.
    pub fn is_live(self) -> bool {
        matches!(
            self,
            BoardState::Queued
                | BoardState::Held
                | BoardState::WithHost
                | BoardState::Running
                | BoardState::Stale
                | BoardState::Blocked
        )
    }
}

/// A state travels as its one word (an ending's own word for an ended attempt).
impl Serialize for BoardState {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

closed_set! {
    /// How a run came out, so far.
    Outcome {
        /// Not ended: something runs, or the lead has steps left.
        Running => "running",
        /// Interrupted, failed or cancelled, and nobody drives it now: it
        /// resumes with the command its reason names.
        Stopped => "stopped",
        /// Ended with a report that passes validation.
        ReportValid => "report-valid",
        /// Ended with a report that fails validation.
        ReportInvalid => "report-invalid",
        /// Ended without a report.
        EndedWithoutReport => "ended-without-report",
    }
}
