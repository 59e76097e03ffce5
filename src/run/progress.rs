//! How far a run got, read from its attempt records alone: the phase each
//! attempt belongs to, and the last convergence round any attempt was made
//! for. Pure functions over the team state and the roster; the views
//! (`okstra status`) show them, nothing decides from them.
//!
//! The phases are the lead contract's: `4` a worker's own work (analysers,
//! the Executor and its fix pass), `5` the verifiers of an implementation
//! run, `5.5` convergence, `5.6` the critic, `6` the report.

use crate::catalog::{DispatchKind, Role};
use crate::run::Run;
use crate::run::team_state::{DispatchRecord, TeamState};

/// The phase `record` belongs to. A retry belongs to the phase of what it
/// retries; a record without a role takes its worker's rostered one.
pub fn phase_of(run: &Run, record: &DispatchRecord) -> &'static str {
    let kind = match record.dispatch_kind {
        DispatchKind::Retry => DispatchKind::parse(&DispatchKind::retried(&record.dispatch_name))
            .unwrap_or(DispatchKind::Initial),
        kind => kind,
    };
    let role = record
        .role
        .or_else(|| run.assignment(&record.worker_id).map(|a| a.role));
    match (kind, role) {
        (DispatchKind::Reverify(_), _) => "5.5",
        (DispatchKind::Critic, _) | (_, Some(Role::Critic)) => "5.6",
        (_, Some(Role::ReportWriter)) => "6",
        (_, Some(Role::Verifier)) => "5",
        _ => "4",
    }
}

/// The phase of the most recently recorded attempt, if any was recorded.
pub fn phase(run: &Run, state: &TeamState) -> Option<&'static str> {
    state.dispatches.last().map(|record| phase_of(run, record))
}

/// The convergence round of `record`, if it is a reverify dispatch (or a
/// retry of one).
pub fn round_of(record: &DispatchRecord) -> Option<u32> {
    match record.dispatch_kind {
        DispatchKind::Reverify(round) => Some(round),
        DispatchKind::Retry => {
            match DispatchKind::parse(&DispatchKind::retried(&record.dispatch_name)) {
                Ok(DispatchKind::Reverify(round)) => Some(round),
                _ => None,
            }
        }
        DispatchKind::Initial | DispatchKind::Critic | DispatchKind::FixCheck => None,
    }
}

/// The highest convergence round any attempt was recorded for.
pub fn round(state: &TeamState) -> Option<u32> {
    state.dispatches.iter().filter_map(round_of).max()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str, kind: DispatchKind, role: Option<Role>) -> DispatchRecord {
        serde_json::from_value(serde_json::json!({
            "dispatchName": name,
            "dispatchKind": kind.as_string(),
            "workerId": "codex",
            "role": role.map(Role::as_str),
            "promptPath": "/r/p.md",
            "resultPath": "/r/r.md",
            "workerResultsPath": "/r/w.md",
            "errorPath": "/r/e.md",
        }))
        .unwrap()
    }

    #[test]
    fn rounds_come_from_reverify_dispatches_and_their_retries() {
        let state = TeamState {
            dispatches: vec![
                record("codex-worker", DispatchKind::Initial, Some(Role::Analyser)),
                record(
                    "codex-worker-reverify-r1",
                    DispatchKind::Reverify(1),
                    Some(Role::Analyser),
                ),
                record(
                    "codex-worker-reverify-r2",
                    DispatchKind::Retry,
                    Some(Role::Analyser),
                ),
                record("report-writer", DispatchKind::Initial, None),
            ],
            ..TeamState::default()
        };
        assert_eq!(round(&state), Some(2));
        assert_eq!(round_of(&state.dispatches[0]), None);
        assert_eq!(round(&TeamState::default()), None);
    }
}
