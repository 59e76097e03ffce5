//! `okstra status`: one row per worker assignment of a run (or of every run
//! under a project), its state, and what needs attention.
//!
//! A worker's state is derived, never stored: from its status sidecar (CLI
//! workers), its heartbeat file (any worker), its log's modification time,
//! and whether its Result Paths exist. [`classify`] is the whole state
//! machine and is pure, so it is unit-tested directly; the rest gathers
//! evidence from disk and draws it.
//!
//! `--watch` redraws in place on a terminal; otherwise it appends one
//! snapshot per change. It ends when every worker is terminal (or when
//! `--timeout` expires, exit 1). Attention states never change the exit
//! code of a plain `status`: it reports, it does not judge.
//!
//! Files: `classify` (the pure state machine and heartbeat parsing),
//! `board` (gathering each run's evidence into rows), `files` (the run
//! folder opened once and listed per folder), `render` (the text board);
//! this file is the command, `--json` and `--watch`.

mod board;
mod classify;
mod files;
mod render;

use std::io::{self, IsTerminal, Write};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::Serialize;

use super::{Run, par_map};
use crate::cli::StatusArgs;
use crate::clock;
use crate::diag;
use crate::exit::ExitStatus;

/// No log or heartbeat activity for this long while running: `stale`.
pub const STALE_SECS: i64 = 600;
/// A worker the lead dispatched this long ago with no sign of life yet
/// needs attention (the reference harness's not-started limit).
pub const NOT_STARTED_SECS: i64 = 180;
/// The lead event that records a dispatch (`--field dispatchName=<name>`).
const DISPATCH_EVENT: &str = "worker-dispatched";
/// Heartbeat timestamps further ahead than this are not trusted.
pub const FUTURE_SKEW_SECS: i64 = 60;
/// Heartbeat phase that ends a worker.
const COMPLETE_PHASE: &str = "complete";
/// Bytes read from a log's end per requested tail line (plus a floor).
const TAIL_BYTES_PER_LINE: u64 = 512;
const TAIL_BYTES_MIN: u64 = 16 * 1024;
/// Version of the `--json` document.
const STATUS_VERSION: u32 = 1;

#[cfg(test)]
pub(in crate::lifecycle) use self::board::dispatch_times;
use self::board::{RunStatus, boards};
use self::classify::State;
#[cfg(test)]
pub(in crate::lifecycle) use self::classify::parse_heartbeat;
use self::render::render;

/// The `--json` document.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Board<'a> {
    schema_version: u32,
    now_ts: i64,
    runs: &'a [RunStatus<'a>],
}

/// Which runs the command covers.
pub(super) fn load_runs(args: &StatusArgs) -> Result<Vec<Run>> {
    if let Some(dir) = &args.run_dir {
        let run = Run::open(dir)?;
        return Ok(vec![run]);
    }
    let root = super::project_root(args.project_root.as_deref())?;
    // Manifests load in parallel too: on a large project they are a third
    // of the reading.
    let loaded = par_map(&super::run_dirs(&root)?, |dir| Run::open(dir));
    let mut runs = Vec::with_capacity(loaded.len());
    for result in loaded {
        match result {
            Ok(run) => runs.push(run),
            // Not a run folder (no manifest): not worth a warning.
            Err(err) if err.is_not_found() => {}
            Err(err) => {
                diag::warning(format_args!("skipping a run: {err:#}"));
            }
        }
    }
    Ok(runs)
}

pub fn status_command(args: &StatusArgs) -> Result<ExitStatus> {
    let runs = load_runs(args)?;
    if args.watch {
        return watch(args, &runs);
    }
    let now = clock::unix_now();
    let board = boards(&runs, now, args.log_tail);
    let mut out = io::BufWriter::new(io::stdout().lock());
    if args.json {
        write_json(&mut out, &board, now)?;
    } else {
        write!(
            out,
            "{}",
            render(&board, now, args.run_dir.is_none(), args.wide)
        )?;
    }
    out.flush()?;
    Ok(ExitStatus::Success)
}

pub(super) fn write_json(out: &mut impl Write, board: &[RunStatus<'_>], now: i64) -> Result<()> {
    // Straight into the buffered stdout: serialising runs on the board
    // threads into buffers of their own measured slower (the buffers are
    // fresh memory for every run).
    let doc = Board {
        schema_version: STATUS_VERSION,
        now_ts: now,
        runs: board,
    };
    serde_json::to_writer(&mut *out, &doc).context("cannot write the status as JSON")?;
    writeln!(out)?;
    Ok(())
}

/// What makes two snapshots different for `--watch` (not the clock).
pub(super) fn fingerprint(board: &[RunStatus<'_>]) -> Vec<(String, State, Option<i64>, String)> {
    board
        .iter()
        .flat_map(|run| {
            run.workers.iter().map(|w| {
                (
                    format!("{}/{}", run.run_id, w.dispatch_name),
                    w.state,
                    w.exit_code,
                    w.reason.to_string(),
                )
            })
        })
        .collect()
}

pub(super) fn watch(args: &StatusArgs, runs: &[Run]) -> Result<ExitStatus> {
    let interval = args.interval.unwrap_or(Duration::from_secs(1));
    let deadline = args.timeout.map(|limit| Instant::now() + limit);
    let terminal = io::stdout().is_terminal() && !args.json;
    let mut last = None;
    loop {
        let now = clock::unix_now();
        let board = boards(runs, now, args.log_tail);
        let print = fingerprint(&board);
        let mut out = io::stdout().lock();
        if terminal {
            // Home the cursor and clear: redraw in place.
            write!(
                out,
                "\x1b[H\x1b[2J{}",
                render(&board, now, runs.len() > 1, args.wide)
            )?;
        } else if last.as_ref() != Some(&print) {
            if args.json {
                write_json(&mut out, &board, now)?;
            } else {
                writeln!(out, "--- {} ---", clock::rfc3339(now))?;
                write!(out, "{}", render(&board, now, runs.len() > 1, args.wide))?;
            }
        }
        out.flush()?;
        drop(out);
        last = Some(print);
        if board.iter().all(|run| run.all_terminal) {
            return Ok(ExitStatus::Success);
        }
        if deadline.is_some_and(|d| Instant::now() + interval > d) {
            diag::error("`--timeout` expired before every worker finished");
            return Ok(ExitStatus::Failure);
        }
        std::thread::sleep(interval);
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
