//! One attempt's records: the dispatch record written before it starts, and
//! its ending — result recovered, class decided, record completed — once
//! its wrapper has exited. `okstra await` finishes an attempt the same way
//! when the dispatcher that started it is gone.

use std::path::Path;

use anyhow::Result;

use crate::digest::sha256_hex;
use crate::provider_exec::sidecar;
use crate::run::Run;
use crate::run::events;
use crate::run::layout::{self};
use crate::run::team_state::{self, Change, DispatchRecord};
use crate::vocab::{Ending, Recovery, Word};

use super::classify::{self, Evidence};
use super::recover;
use super::select::Planned;
use crate::vocab::EventKind;

/// The record of `planned`, before it starts (`started_at: None` while a
/// gate holds it back).
pub fn record(planned: &Planned, prompt_sha256: Option<String>) -> DispatchRecord {
    let (sidecar, log) = layout::attempt_files(&planned.paths.prompt_path, planned.attempt);
    DispatchRecord {
        role: Some(planned.role),
        provider: Some(planned.provider),
        model: Some(planned.model.clone()),
        runner: Some(planned.runner),
        prompt_sha256,
        inputs_sha256: planned.inputs_sha256.clone(),
        log_path: Some(log),
        sidecar_path: Some(sidecar),
        dispatcher_pid: i32::try_from(std::process::id()).ok(),
        ..DispatchRecord::queued(
            &planned.dispatch_name,
            planned.kind,
            planned.attempt,
            &planned.worker_id,
            &planned.paths,
        )
    }
}

/// What the dispatcher knows about an attempt's end beyond its files.
#[derive(Debug, Default)]
pub struct Ended {
    /// The wrapper's exit code; `None` when it was killed by a signal or
    /// (for `await`) is unknown.
    pub exit_code: Option<i64>,
    pub cancelled: bool,
    pub wrapper_stderr: String,
    /// Why okstra stopped a cancelled attempt, when it says more than "on
    /// request" (a batch stopped early): the record's detail.
    pub reason: Option<String>,
}

/// How a finished attempt came out, for the retry decision.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub ending: Ending,
    pub detail: String,
    /// The CLI said nothing at all (a start-up failure).
    pub silent: bool,
    pub seconds: u64,
    /// For a `rate-limit`: the CLI's retry-after hint, when it gave one.
    pub retry_after: Option<std::time::Duration>,
}

/// Recover the result, classify the ending and complete `record` in the
/// team state (and the worker's `terminalStatus` when it is one of the
/// assignment's own attempts).
pub fn finish(
    run: &Run,
    record: DispatchRecord,
    assignment_name: &str,
    ended: &Ended,
    prices: &crate::usage::Prices,
) -> Result<(DispatchRecord, Outcome)> {
    let (record, outcome) = conclude(run, record, ended, prices)?;
    let mut changes = vec![Change::Put(&record)];
    if record.dispatch_name == assignment_name {
        changes.push(Change::Terminal(assignment_name, outcome.ending));
    }
    team_state::update(run, &changes)?;
    announce(run, &record);
    Ok((record, outcome))
}

/// The lead event of an ended attempt: `worker-complete`, or
/// `worker-terminal` with its ending. Every writer of an ending calls it
/// (the engine, `await` settling a record, `cancel`, `submit`), so a lead
/// never records one by hand. A failure to record is a warning.
pub fn announce(run: &Run, record: &DispatchRecord) {
    let Some(ending) = record.ending else {
        return;
    };
    let attempt = record.attempt.to_string();
    let mut fields = vec![
        ("name", record.dispatch_name.as_str()),
        ("attempt", attempt.as_str()),
    ];
    let kind = if ending == Ending::Completed {
        EventKind::WorkerComplete
    } else {
        fields.push(("status", ending.as_str()));
        EventKind::WorkerTerminal
    };
    let from = record.recovered_from.as_ref().map(ToString::to_string);
    if let Some(from) = &from {
        fields.push(("provenance", from));
    }
    events::record(run, kind, &fields);
}

/// The lead event of an attempt held back before it starts (`worker-held`:
/// a closed gate, no free provider slot, a rate limit's retry-after), with
/// its reason and the record's detail. A failure to record is a warning.
pub fn announce_held(run: &Run, record: &DispatchRecord, reason: &str) {
    events::record(
        run,
        EventKind::WorkerHeld,
        &[
            ("name", &record.dispatch_name),
            ("attempt", &record.attempt.to_string()),
            ("reason", reason),
            ("detail", record.detail.as_deref().unwrap_or_default()),
        ],
    );
}

/// Recover the result (writing the Result Paths), classify the ending and
/// complete `record` in memory; the caller writes it. A completed Executor
/// attempt's change goes onto the run's branch here (`change`), or the
/// attempt fails.
pub fn conclude(
    run: &Run,
    mut record: DispatchRecord,
    ended: &Ended,
    prices: &crate::usage::Prices,
) -> Result<(DispatchRecord, Outcome)> {
    // Every record okstra writes names its provider; one written without
    // is read as the catalog's first.
    let provider = record.provider.unwrap_or(crate::catalog::Provider::ALL[0]);
    let sidecar_path = record
        .sidecar_path
        .clone()
        .unwrap_or_else(|| layout::attempt_files(&record.prompt_path, record.attempt).0);
    let found = sidecar::read(&sidecar_path).ok().flatten();
    let log_path = record
        .log_path
        .clone()
        .unwrap_or_else(|| layout::attempt_files(&record.prompt_path, record.attempt).1);
    let transcript = recover::read_log(provider, &log_path);
    let started = record
        .started_at
        .as_deref()
        .and_then(crate::clock::parse_rfc3339);

    let mut recovered_from = None;
    // A block over the result limit is not written: no reader would take
    // the file (the attempt then ends without a result, and says why).
    let (blocks, oversize) = match transcript.blocks() {
        Some(blocks) => match blocks.too_large() {
            Some(why) => (None, Some(why)),
            None => (Some(blocks), None),
        },
        None => (None, None),
    };
    if let Some(blocks) = blocks {
        crate::durable::write_atomic(&record.result_path, blocks.result.as_bytes())?;
        record.result_sha256 = Some(sha256_hex(blocks.result.as_bytes()));
        if let Some(audit) = &blocks.worker_results {
            crate::durable::write_atomic(&record.worker_results_path, audit.as_bytes())?;
            record.worker_results_sha256 = Some(sha256_hex(audit.as_bytes()));
        }
        recovered_from = Some(Recovery::Stream);
    } else if let Some(bytes) = written_during(&record.result_path, started) {
        // A CLI that may write (an executor, kimi, grok) wrote the file itself.
        record.result_sha256 = Some(sha256_hex(&bytes));
        recovered_from = Some(Recovery::File);
    }
    let exit_code = ended
        .exit_code
        .or_else(|| found.as_ref().and_then(|s| s.exit_code));
    let evidence = Evidence {
        exit_code,
        sidecar: found.is_some(),
        reason: found.as_ref().and_then(|s| s.reason.as_ref()?.known()),
        child_signal: None,
        cancelled: ended.cancelled,
        has_result: recovered_from.is_some(),
        transcript: &transcript,
        wrapper_stderr: &ended.wrapper_stderr,
        now: crate::clock::unix_now(),
    };
    let (ending, mut detail) = classify::classify(&evidence);
    if let Some(why) = oversize
        && ending != Ending::Completed
    {
        detail = format!("{detail} ({why})");
    }
    if ending == Ending::Cancelled
        && let Some(reason) = &ended.reason
    {
        detail.clone_from(reason);
    }
    let retry_after = (ending == Ending::RateLimit)
        .then(|| classify::retry_after(&evidence))
        .flatten();
    let now = evidence.now;
    let seconds = started.map_or(0, |start| u64::try_from(now - start).unwrap_or(0));
    record.end(ending, detail.clone());
    record.exit_code = exit_code;
    record.recovered_from = recovered_from.map(Word::from);
    record.log_tail = (ending != Ending::Completed).then(|| transcript.tail.clone());
    // What the attempt cost, from the same log: the budget stop reads it.
    let spent = crate::usage::from_log(provider, record.model.as_deref(), &log_path).priced(prices);
    record.usage = serde_json::to_value(&spent).ok();
    let mut outcome = Outcome {
        ending,
        detail,
        silent: !transcript.has_text() && transcript.bytes < 4096,
        seconds,
        retry_after,
    };
    if let Err(why) = super::change::onto_branch(run, &mut record) {
        super::change::fail(&mut record, why.clone());
        record.log_tail = Some(transcript.tail.clone());
        outcome.ending = Ending::Crash;
        outcome.detail = why;
    }
    Ok((record, outcome))
}

/// The bytes of `path` if it is a non-empty regular file modified since
/// `since` (Unix seconds; any time when unknown).
pub fn written_during(path: &Path, since: Option<i64>) -> Option<Vec<u8>> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() == 0 {
        return None;
    }
    let modified = meta.modified().ok().map(crate::clock::to_unix)?;
    if since.is_some_and(|start| modified + 1 < start) {
        return None;
    }
    // The result limit, as every reader of a result file has it.
    crate::fsread::read_no_follow(path, crate::fsread::Kind::Result).ok()
}
