//! What `okstra dispatch` and `okstra run` show while they work, on stderr
//! (stdout carries only the final summary).
//!
//! On a terminal, a board redrawn once a second under the progress lines:
//! a header (what runs, its phase and round, the time since the run
//! started, what it has cost so far), then one row per worker — its name
//! and CLI, how long it has run, its usage so far, and its latest output
//! line in words (`dispatch::activity`) — in columns fitted to the
//! terminal, long names cut with `…`. Everything else is one plain
//! `okstra:` line per change (a worker started or ended, a retry, a
//! hold), the only output on a pipe or a file.

use std::io::{IsTerminal, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::time::Instant;

use crate::catalog::Provider;
use crate::diag;
use crate::run::team_state::DispatchRecord;
use crate::table::{Column, ellipsize};

use super::activity;
use super::attempt::Outcome;

/// A board narrower than this is not drawn narrower (it wraps instead).
const MIN_WIDTH: usize = 60;
/// The width used when the terminal does not say.
const DEFAULT_WIDTH: usize = 100;
/// Bytes read from the end of a log to find its latest telling line.
const TAIL_BYTES: u64 = 16 * 1024;

/// What the board's header says about the run (`okstra run` sets it).
#[derive(Debug, Clone)]
pub struct Header {
    /// `project-analysis · demo/review/reservations`.
    pub title: String,
    /// `phase 4 (analysers)`, `phase 5.5, round 1`.
    pub phase: String,
    /// When the run (this call) started.
    pub started: Instant,
    /// What the run had cost before this batch, in US dollars.
    pub spent_before_usd: f64,
}

/// One running attempt on the live board.
pub struct LiveRow {
    pub name: String,
    pub provider: Provider,
    pub started: Instant,
    pub log: Option<PathBuf>,
    /// Tokens and cost so far, when the CLI reports them as it goes.
    pub usage: Option<String>,
    /// Its cost so far, in US dollars.
    pub cost_usd: Option<f64>,
}

/// The progress writer.
pub struct View {
    live: bool,
    /// Lines drawn last time, to move back over them.
    drawn: usize,
    header: Option<Header>,
    /// What the attempts that ended in this batch cost.
    finished_usd: f64,
}

impl View {
    /// A live view when stderr is a terminal (and `NO_COLOR`-style plain
    /// output is not forced), else plain lines.
    pub fn new(quiet_live: bool, header: Option<Header>) -> View {
        View {
            live: !quiet_live && board().is_terminal(),
            drawn: 0,
            header,
            finished_usd: 0.0,
        }
    }

    pub fn started(&mut self, record: &DispatchRecord) {
        self.line(&format!(
            "started {} ({} {}, attempt {})",
            record.dispatch_name,
            record.provider.map_or("?", |p| p.as_str()),
            record.model.as_deref().unwrap_or("?"),
            record.attempt
        ));
    }

    pub fn ended(&mut self, record: &DispatchRecord, outcome: &Outcome) {
        self.finished_usd += record
            .usage
            .as_ref()
            .and_then(|usage| usage.get("costUsd"))
            .and_then(serde_json::Value::as_f64)
            .unwrap_or(0.0);
        // A normal end is said plainly; any other with its reason.
        if outcome.ending == crate::vocab::Ending::Completed {
            self.line(&format!(
                "{} completed after {}s",
                record.dispatch_name, outcome.seconds
            ));
        } else {
            self.line(&format!(
                "{} ended {} after {}s: {}",
                record.dispatch_name, outcome.ending, outcome.seconds, outcome.detail
            ));
        }
    }

    pub fn note(&mut self, text: &str) {
        self.line(text);
    }

    /// Redraw the live board (a no-op on a pipe).
    pub fn draw(&mut self, running: &[LiveRow], queued: &[(String, String)]) {
        if !self.live {
            return;
        }
        let width = terminal_size::terminal_size_of(board())
            .map_or(DEFAULT_WIDTH, |(w, _)| usize::from(w.0))
            .max(MIN_WIDTH);
        let lines = self.board(running, queued, width);
        let mut err = board().lock();
        self.clear(&mut err);
        for line in &lines {
            let _ = writeln!(err, "{line}");
        }
        self.drawn = lines.len();
    }

    /// The board's lines, each at most `width` characters.
    fn board(&self, running: &[LiveRow], queued: &[(String, String)], width: usize) -> Vec<String> {
        let live_usd: f64 = running.iter().filter_map(|r| r.cost_usd).sum();
        let header = match &self.header {
            // What changes first, so a narrow terminal cuts the title.
            Some(header) => format!(
                "{} · {} · {} so far · {}",
                header.phase,
                clock(header.started.elapsed().as_secs()),
                crate::usage::dollars(header.spent_before_usd + self.finished_usd + live_usd),
                header.title,
            ),
            None => format!(
                "okstra dispatch · {} running, {} waiting · {} so far",
                running.len(),
                queued.len(),
                crate::usage::dollars(self.finished_usd + live_usd)
            ),
        };
        let columns = [
            Column::shrinking("WORKER", 12, 1),
            Column::fixed("CLI"),
            Column::number("TIME"),
            Column::shrinking("USAGE", 8, 0),
            Column::shrinking("NOW", 12, 2),
        ];
        let mut rows: Vec<Vec<String>> = running
            .iter()
            .map(|row| {
                let now = row
                    .log
                    .as_ref()
                    .and_then(|log| latest_words(row.provider, log))
                    .unwrap_or_else(|| "starting".to_owned());
                vec![
                    crate::fsread::escape(&row.name).into_owned(),
                    row.provider.to_string(),
                    clock(row.started.elapsed().as_secs()),
                    row.usage.clone().unwrap_or_else(|| "-".to_owned()),
                    now,
                ]
            })
            .collect();
        rows.extend(queued.iter().map(|(name, why)| {
            vec![
                crate::fsread::escape(name).into_owned(),
                String::new(),
                String::new(),
                String::new(),
                crate::fsread::escape(why).into_owned(),
            ]
        }));
        let table = crate::table::render(&columns, &rows, 2, Some(width));
        std::iter::once(ellipsize(&crate::fsread::escape(&header), width))
            .chain(table.lines().map(|line| ellipsize(line, width)))
            .collect()
    }

    pub fn finish(&mut self) {
        if self.live {
            let mut err = board().lock();
            self.clear(&mut err);
            self.drawn = 0;
        }
    }

    fn clear(&self, err: &mut impl Write) {
        if self.drawn > 0 {
            // Up over the board, then clear to the end of the screen.
            let _ = write!(err, "\x1b[{}F\x1b[J", self.drawn);
        }
    }

    /// A progress line (`okstra: …`), below the board it first clears.
    fn line(&mut self, text: &str) {
        self.clear(&mut board().lock());
        self.drawn = 0;
        diag::progress(text);
    }
}

/// The live board's stream. The board redraws its lines in place with
/// cursor moves: a view, not diagnostics, so it writes stderr itself; its
/// progress lines still go through [`diag::progress`].
#[expect(
    clippy::disallowed_methods,
    reason = "the live board redraws in place; its progress lines use `crate::diag`"
)]
fn board() -> std::io::Stderr {
    std::io::stderr()
}

/// `42s`, `3:07`, `1:02:03`.
fn clock(seconds: u64) -> String {
    match (seconds / 3600, seconds % 3600 / 60, seconds % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}:{s:02}"),
        (h, m, s) => format!("{h}:{m:02}:{s:02}"),
    }
}

/// The latest line of the log that says something, in words (read from
/// the end, at most [`TAIL_BYTES`]).
fn latest_words(provider: Provider, log: &PathBuf) -> Option<String> {
    let mut file = std::fs::File::open(log).ok()?;
    let size = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(size.saturating_sub(TAIL_BYTES)))
        .ok()?;
    let mut bytes = Vec::new();
    file.take(TAIL_BYTES).read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    text.lines()
        .rev()
        .find_map(|line| activity::describe(provider, line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_board_has_a_header_and_fits_long_names_and_raw_lines() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("codex.log");
        std::fs::write(
            &log,
            "{\"type\":\"thread.started\"}\n{\"type\":\"error\",\"message\":\"Reconnecting... 3/5 (stream disconnected)\"}\n\n",
        )
        .unwrap();
        let view = View {
            live: true,
            drawn: 0,
            header: Some(Header {
                title: "project-analysis · demo/review/reservations".into(),
                phase: "phase 5.5, round 1".into(),
                started: Instant::now(),
                spent_before_usd: 0.25,
            }),
            finished_usd: 0.5,
        };
        let rows = [LiveRow {
            name: "antigravity-worker-reverify-r1-with-a-very-long-name".into(),
            provider: Provider::Codex,
            started: Instant::now(),
            log: Some(log),
            usage: Some("in 1.2k · out 300 · $0.0100".into()),
            cost_usd: Some(0.01),
        }];
        let queued = [(
            "kimi-worker".to_owned(),
            "held: 300 MiB of memory free, 512 MiB wanted".to_owned(),
        )];
        let lines = view.board(&rows, &queued, 84);
        assert_eq!(
            lines[0],
            "phase 5.5, round 1 · 0s · $0.76 so far · project-analysis · demo/review/reservations"
        );
        assert_eq!(lines[1], "  WORKER         CLI    TIME  USAGE     NOW");
        // The usage gave way first, then the name; what the CLI does now
        // is whole, in words.
        assert!(
            lines[2].starts_with("  antigravity-…  codex    0s  in 1.2k…"),
            "{lines:?}"
        );
        assert!(
            lines[2].ends_with("reconnecting (network) 3/5"),
            "{lines:?}"
        );
        assert!(lines[3].starts_with("  kimi-worker"), "{lines:?}");
        for line in &lines {
            assert!(line.chars().count() <= 84, "{line}");
        }
    }

    #[test]
    fn clocks_read_like_clocks() {
        assert_eq!(clock(42), "42s");
        assert_eq!(clock(187), "3:07");
        assert_eq!(clock(3723), "1:02:03");
    }
}
