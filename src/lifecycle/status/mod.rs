//! `okstra status`: one row per worker assignment of a run (or of every run
//! under a project), its state, a line per recorded attempt, what needs
//! attention, and the run's own line (phase, round, outcome).
//!
//! Every state is derived, never stored, and from the same records: a
//! worker's row is its latest recorded attempt, whose ending *is* its
//! state; its status sidecar, heartbeat, log and Result Paths only refine
//! an attempt that has not ended. A worker okstra has no record of is
//! judged from those files alone. The state machines are pure
//! (`classify`, `outcome::judge`), so they are unit-tested directly; the
//! rest gathers evidence from disk and draws it. `okstra await` shows an
//! attempt not ended through the same derivation.
//!
//! Over a project the text board is one line per run (its workers' counts
//! and its outcome) and a total; `--all` draws every run's whole board, as
//! `okstra status <run-dir>` draws one.
//!
//! `--active` keeps the runs still going (outcome `running`). `--watch`
//! redraws in place on a terminal; otherwise it appends one snapshot per
//! change. On one run it ends when every worker is terminal or the run has
//! ended; over a project, when no selected run is still going (or when
//! `--timeout` expires, exit 1). Attention states never change the exit
//! code of a plain `status`: it reports, it does not judge.
//!
//! Files: `classify` (the state machines and heartbeat parsing), `board`
//! (gathering each run's records and evidence into rows), `outcome` (the
//! run's line), `files` (the run folder opened once and listed per folder),
//! `render` (the text board); this file is the command, `--json` and
//! `--watch`.

mod board;
mod classify;
mod dispatch_rows;
mod files;
mod outcome;
mod render;

use std::io::{self, Write};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::Serialize;

use super::{Run, par_map};
use crate::cli::StatusArgs;
use crate::clock;
use crate::diag;
use crate::exit::ExitStatus;
use crate::output::Reply;

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
pub use self::board::{verdict_of_attempt, verdict_of_worker};
#[cfg(test)]
pub(in crate::lifecycle) use self::classify::parse_heartbeat;
use self::render::{View, render};

/// The board as `okstra status` answers: the `--json` document, or the
/// text board drawn as `view` and `wide` say.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Board<'a> {
    schema_version: u32,
    now_ts: i64,
    runs: &'a [RunStatus<'a>],
    #[serde(skip)]
    view: View,
    #[serde(skip)]
    wide: bool,
}

impl<'a> Board<'a> {
    fn new(runs: &'a [RunStatus<'a>], now: i64, args: &StatusArgs) -> Board<'a> {
        Board {
            schema_version: STATUS_VERSION,
            now_ts: now,
            runs,
            view: view(args),
            wide: args.wide,
        }
    }
}

/// The board carries its version (`STATUS_VERSION`).
impl crate::output::Answer for Board<'_> {
    const SCHEMA: &'static str = "status-answer.schema.json";
    const VERSION: Option<u32> = None;
}

impl crate::output::Text for Board<'_> {
    fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(render(self.runs, self.now_ts, self.view, self.wide).as_bytes())
    }
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

pub fn status_command(args: &StatusArgs) -> Result<Reply> {
    let runs = load_runs(args)?;
    if args.watch {
        return watch(args, &runs);
    }
    let now = clock::unix_now();
    let mut board = boards(&runs, now, args.log_tail);
    if args.active {
        board.retain(|run| run.run.active);
    }
    Reply::answer(&Board::new(&board, now, args), args.json)
}

/// How the text board shows the runs `args` select: one line each over a
/// project (the long form with `--all`), the whole board for one run.
fn view(args: &StatusArgs) -> View {
    match (&args.run_dir, args.all) {
        (Some(_), _) => View::One,
        (None, false) => View::Lines,
        (None, true) => View::Boards,
    }
}

/// What makes two snapshots different for `--watch` (not the clock): each
/// worker's state, exit code and reason, each attempt's state, and each
/// run's line.
pub(super) fn fingerprint(board: &[RunStatus<'_>]) -> Vec<(String, String, Option<i64>, String)> {
    board
        .iter()
        .flat_map(|run| {
            let workers = run.workers.iter().map(|w| {
                (
                    format!("{}/{}", run.run_id, w.dispatch_name),
                    w.state.as_str().to_owned(),
                    w.exit_code,
                    w.reason.to_string(),
                )
            });
            let attempts = run.dispatches.iter().map(|d| {
                (
                    format!("{}/{}#{}", run.run_id, d.dispatch_name, d.attempt),
                    d.state.clone(),
                    d.exit_code,
                    String::new(),
                )
            });
            let line =
                std::iter::once((run.run_id.to_owned(), run.run.text(), None, String::new()));
            workers.chain(attempts).chain(line)
        })
        .collect()
}

/// Whether a watch over `board` is over: on one run, every worker terminal
/// or the run no longer going; over a project, no run still going (a
/// finished run never keeps it open).
pub(super) fn watch_is_over(board: &[RunStatus<'_>], project: bool) -> bool {
    if project {
        return board.iter().all(|run| !run.run.active);
    }
    board.iter().all(|run| run.all_terminal || !run.run.active)
}

pub(super) fn watch(args: &StatusArgs, runs: &[Run]) -> Result<Reply> {
    let interval = args.interval.unwrap_or(Duration::from_secs(1));
    let deadline = args.timeout.map(|limit| Instant::now() + limit);
    let terminal = crate::output::is_terminal() && !args.json;
    let project = args.run_dir.is_none();
    // `--active` picks the runs going at the first look; the watch then
    // follows them until they end.
    let selected: Vec<Run>;
    let runs = if args.active {
        let now = clock::unix_now();
        let board = boards(runs, now, None);
        selected = runs
            .iter()
            .zip(&board)
            .filter(|(_, status)| status.run.active)
            .map(|(run, _)| run.clone())
            .collect();
        &selected[..]
    } else {
        runs
    };
    let mut last = None;
    loop {
        let now = clock::unix_now();
        let board = boards(runs, now, args.log_tail);
        let print = fingerprint(&board);
        let answer = Board::new(&board, now, args);
        if terminal {
            // Home the cursor and clear: redraw in place.
            let mut frame = b"\x1b[H\x1b[2J".to_vec();
            crate::output::Text::write_text(&answer, &mut frame)?;
            let mut out = crate::output::stream();
            out.write_all(&frame)?;
            out.flush()?;
        } else if last.as_ref() != Some(&print) {
            let snapshot = Reply::answer(&answer, args.json)?.frame()?;
            let mut out = crate::output::stream();
            if !args.json {
                writeln!(out, "--- {} ---", clock::rfc3339(now))?;
            }
            out.write_all(&snapshot)
                .and_then(|()| out.flush())
                .context("cannot write the status")?;
        }
        last = Some(print);
        if watch_is_over(&board, project) {
            return Ok(Reply::status(ExitStatus::Success));
        }
        if deadline.is_some_and(|d| Instant::now() + interval > d) {
            if project {
                let going = board.iter().filter(|run| run.run.active).count();
                diag::error(format_args!(
                    "`--timeout` expired with {going} run(s) still going"
                ));
            } else {
                diag::error("`--timeout` expired before every worker finished");
            }
            return Ok(Reply::status(ExitStatus::Failure));
        }
        std::thread::sleep(interval);
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
