//! What of an unfinished attempt still runs, as the process table says it:
//! its dispatcher (the driver that started it), or — its dispatcher gone —
//! its wrapper. The one probe every view asks; what the answer means for
//! the attempt and the run is `crate::derive::liveness`.
//!
//! A native attempt has no process of okstra's (the host's session runs
//! it): the probe says nothing runs, and the rules call it `with-host`.

use crate::catalog::Runner;
use crate::process_group as process;
use crate::provider_exec::sidecar;

use super::team_state::{DispatchRecord, TeamState};

/// Whether anything of an unfinished attempt still runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Live {
    /// Its dispatcher (a driver) is alive.
    Driver,
    /// Its dispatcher is gone, its wrapper still runs.
    Wrapper,
    /// Nothing of it runs.
    #[default]
    Nothing,
}

/// What of `record` still runs: its dispatcher, or (its dispatcher gone)
/// its wrapper. An ended attempt, and a native one, runs nothing of okstra's.
pub fn liveness(record: &DispatchRecord) -> Live {
    if record.ending.is_some() || record.runner == Some(Runner::NativeSession) {
        return Live::Nothing;
    }
    if record
        .dispatcher_pid
        .is_some_and(|pid| dispatcher_alive(pid, record))
    {
        return Live::Driver;
    }
    if wrapper_of(record).is_some() {
        return Live::Wrapper;
    }
    Live::Nothing
}

/// The probe's answer for every latest attempt of `state` that has not
/// ended, keyed by dispatch name and attempt.
pub fn probe(state: &TeamState) -> std::collections::HashMap<(String, u32), Live> {
    state
        .latest_attempts()
        .into_iter()
        .filter(|record| record.ending.is_none())
        .map(|record| {
            (
                (record.dispatch_name.clone(), record.attempt),
                liveness(record),
            )
        })
        .collect()
}

/// The live wrapper of `record`: its pid and start time, from its sidecar,
/// else from the pid the driver recorded when it spawned it (a wrapper that
/// has not written its sidecar yet). `None` when it has exited, or when
/// the process with that pid is not a wrapper on the record's prompt (a
/// forged record must not lead `cancel` or `reap` to signal a stranger).
pub fn wrapper_of(record: &DispatchRecord) -> Option<(i32, i64)> {
    let found = record
        .sidecar_path
        .as_deref()
        .and_then(|path| sidecar::read(path).ok().flatten());
    if let Some(found) = found {
        if found.is_exited() {
            return None;
        }
        let (pid, started) = (found.pid?, found.started_ts?);
        return (process::wrapper_alive(pid, started)
            && process::runs_wrapper_of(pid, &record.prompt_path))
        .then_some((pid, started));
    }
    let pid = record.wrapper_pid?;
    let started = record
        .started_at
        .as_deref()
        .and_then(crate::clock::parse_rfc3339)?;
    // Started no earlier than the record says (to the second): a pid
    // handed to a process born later is someone else's.
    (process::wrapper_alive(pid, started + 1) && process::runs_wrapper_of(pid, &record.prompt_path))
        .then_some((pid, started))
}

/// Whether the dispatcher `pid` that wrote `record` still runs (a pid that
/// now belongs to a process started after the record is someone else).
fn dispatcher_alive(pid: i32, record: &DispatchRecord) -> bool {
    let since = record
        .started_at
        .as_deref()
        .and_then(crate::clock::parse_rfc3339)
        .unwrap_or_else(crate::clock::unix_now);
    process::wrapper_alive(pid, since)
}
