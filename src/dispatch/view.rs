//! What `okstra dispatch` shows while it works, on stderr (stdout carries
//! only the final summary): on a terminal, one line per worker redrawn once
//! a second (state, elapsed, bytes of output, last line of its log); on a
//! pipe or file, one plain line per change.

use std::io::{IsTerminal, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::time::Instant;

use crate::diag;
use crate::run::team_state::DispatchRecord;

use super::attempt::Outcome;

/// One running attempt on the live board.
pub struct LiveRow {
    pub name: String,
    pub started: Instant,
    pub log: Option<PathBuf>,
    /// Tokens and cost so far, when the CLI reports them as it goes.
    pub usage: Option<String>,
}

/// The progress writer.
pub struct View {
    live: bool,
    /// Lines drawn last time, to move back over them.
    drawn: usize,
}

impl View {
    /// A live view when stderr is a terminal (and `NO_COLOR`-style plain
    /// output is not forced), else plain lines.
    pub fn new(quiet_live: bool) -> View {
        View {
            live: !quiet_live && board().is_terminal(),
            drawn: 0,
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
        self.line(&format!(
            "{} ended {} after {}s: {}",
            record.dispatch_name, outcome.ending, outcome.seconds, outcome.detail
        ));
    }

    pub fn note(&mut self, text: &str) {
        self.line(text);
    }

    /// Redraw the live board (a no-op on a pipe).
    pub fn draw(&mut self, running: &[LiveRow], queued: &[(String, String)]) {
        if !self.live {
            return;
        }
        let mut lines = Vec::new();
        for row in running {
            let (bytes, last) = row.log.as_ref().map_or((0, String::new()), last_line);
            lines.push(format!(
                "  {:<28} running  {:>5}s  {:>9} B  {}  {}",
                row.name,
                row.started.elapsed().as_secs(),
                bytes,
                row.usage.as_deref().unwrap_or("-"),
                crate::fsread::escape(&last)
            ));
        }
        for (name, why) in queued {
            lines.push(format!("  {name:<28} {}", crate::fsread::escape(why)));
        }
        let mut err = board().lock();
        self.clear(&mut err);
        for line in &lines {
            let width = 110;
            let shown: String = line.chars().take(width).collect();
            let _ = writeln!(err, "{shown}");
        }
        self.drawn = lines.len();
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

/// The log's size and its last non-empty line (read from the end, at most 8 KiB).
fn last_line(log: &PathBuf) -> (u64, String) {
    let Ok(mut file) = std::fs::File::open(log) else {
        return (0, String::new());
    };
    let size = file.metadata().map_or(0, |m| m.len());
    let start = size.saturating_sub(8192);
    if file.seek(SeekFrom::Start(start)).is_err() {
        return (size, String::new());
    }
    let mut bytes = Vec::new();
    let _ = file.take(8192).read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let last = text
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("")
        .to_owned();
    (size, last)
}
