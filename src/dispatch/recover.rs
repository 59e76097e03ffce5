//! Result recovery: what a worker said, read back from its CLI's log.
//!
//! Read-only workers cannot write their Result Path, so the normal path is
//! that a worker prints its result between marker lines as its final message
//! and okstra writes the files. This module reads one attempt's log as the
//! events its CLI's decoder (`crate::providers`) finds in it, collects the
//! assistant's text (never the prompt a CLI may echo, which holds the
//! markers as an example), finds the last complete marked block of each
//! kind, and gathers the error text the classifier reads.
//!
//! Memory is bounded by what is kept, never by the log: lines come from the
//! one bounded line reader (`fsread::LineReader`), so a line past
//! [`MAX_LINE_BYTES`] is cut while it streams past (a model that prints a
//! 300 MB line costs 32 MiB, not copies of 300 MB); error and tail lines are
//! clipped before they are copied; the assistant's text keeps its newest
//! [`MAX_TEXT_BYTES`]; and a log past [`MAX_LOG_BYTES`] is read from its
//! end, where the final message is. Each log that needed a cut gets one
//! `warning:` line naming it.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use crate::diag;
use crate::fsread::{self, LineReader};
use crate::providers::{self, ErrorKind, Event, Line, Provider, RetryCause};

/// First line of the result block a worker prints.
pub const RESULT_BEGIN: &str = "=== OKSTRA RESULT BEGIN ===";
/// Last line of the result block.
pub const RESULT_END: &str = "=== OKSTRA RESULT END ===";
/// First line of the worker-results (audit) block.
pub const WORKER_RESULTS_BEGIN: &str = "=== OKSTRA WORKER-RESULTS BEGIN ===";
/// Last line of the worker-results block.
pub const WORKER_RESULTS_END: &str = "=== OKSTRA WORKER-RESULTS END ===";

const MIB: usize = 1024 * 1024;
/// Most of a log we read, from its end: the worker's final message is
/// last, and what comes before past this is tool output we do not need.
const MAX_LOG_BYTES: u64 = 256 * MIB as u64;
/// Longest line we keep (and parse as JSON); a longer one is cut to this
/// while it is read, and is then plain text. A result (16 MiB at most)
/// fits in one JSON event with room for its escapes.
pub const MAX_LINE_BYTES: usize = 32 * MIB;
/// Lines kept for the dispatch record's `logTail`.
pub const TAIL_LINES: usize = 40;
/// Longest tail line kept, in bytes (a `…` marks the cut).
const MAX_TAIL_LINE: usize = 2000;
/// Longest error line kept: the classifier's words come early in a message.
const MAX_ERROR_LINE: usize = 4096;
/// Most assistant text we keep: the last messages matter, and a result
/// block longer than this is not a result a report can use.
const MAX_TEXT_BYTES: usize = 32 * MIB;

/// What one attempt's log says.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Transcript {
    /// The assistant's text, message by message, oldest first.
    pub messages: Vec<String>,
    /// Error text the CLI reported: structured error events and any line
    /// that is not JSON (stderr is merged into the log).
    pub errors: Vec<String>,
    /// The CLI's own "this run failed" flag (claude `is_error`, codex
    /// `turn.failed`, gemini `status: error`).
    pub reported_failure: bool,
    /// What the CLI's events said, typed, of its credentials and limits:
    /// the classifier reads these before any wording.
    pub signals: Vec<Signal>,
    /// The last lines of the log, for the dispatch record.
    pub tail: Vec<String>,
    /// Bytes of the log.
    pub bytes: u64,
    /// What had to be cut to stay within the bounds.
    pub cuts: Cuts,
}

/// A problem a CLI's event named as such, with the error line it made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signal {
    /// The credentials were refused or are missing.
    Auth(String),
    /// The provider refused a request for a limit: its own name for the
    /// limit (`five_hour`, `seven_day` …) and when it resets (Unix seconds).
    Limit {
        window: Option<String>,
        resets_at: Option<i64>,
        line: String,
    },
}

/// The typed problem `event` names, with its error `line`.
fn signal(event: &Event, line: &str) -> Option<Signal> {
    match event {
        Event::Error {
            kind: ErrorKind::Auth,
            ..
        }
        | Event::Retry {
            cause: RetryCause::Auth,
            ..
        } => Some(Signal::Auth(line.to_owned())),
        Event::RateLimit {
            rejected: true,
            window,
            resets_at,
        } => Some(Signal::Limit {
            window: window.clone(),
            resets_at: *resets_at,
            line: line.to_owned(),
        }),
        _ => None,
    }
}

/// What a parse cut to keep its memory bounded (all zero for a sane log).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Cuts {
    /// Lines longer than [`MAX_LINE_BYTES`], cut to it while read.
    pub lines: u64,
    /// The longest of them.
    pub longest: u64,
    /// Bytes at the start of the log that were not read ([`MAX_LOG_BYTES`]).
    pub skipped: u64,
    /// Assistant text dropped from the front past [`MAX_TEXT_BYTES`].
    pub text: u64,
}

impl Cuts {
    /// One line for people, `None` when nothing was cut.
    pub fn describe(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.lines > 0 {
            parts.push(format!(
                "{} line{} longer than {} MiB cut to that length while reading (the longest \
                 had {} bytes)",
                self.lines,
                if self.lines == 1 { "" } else { "s" },
                MAX_LINE_BYTES / MIB,
                self.longest
            ));
        }
        if self.skipped > 0 {
            parts.push(format!(
                "only its last {} MiB read ({} bytes before them skipped)",
                MAX_LOG_BYTES / MIB as u64,
                self.skipped
            ));
        }
        if self.text > 0 {
            parts.push(format!(
                "the assistant's text kept to its newest {} MiB ({} bytes dropped)",
                MAX_TEXT_BYTES / MIB,
                self.text
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// The two files a worker's result fills.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocks {
    pub result: String,
    pub worker_results: Option<String>,
}

impl Blocks {
    /// Why these blocks cannot become the worker's files: one is larger
    /// than every reader of a result takes (`fsread::Kind::Result`). Such
    /// an answer is refused where it arrives, never written: a result file
    /// no command can read would stop the run for good.
    pub fn too_large(&self) -> Option<String> {
        too_large("result", &self.result).or_else(|| {
            self.worker_results
                .as_deref()
                .and_then(|audit| too_large("worker-results", audit))
        })
    }
}

/// `the <what> block is N bytes, over the L-byte limit for a worker
/// result`, when `block` is over the result limit.
pub fn too_large(what: &str, block: &str) -> Option<String> {
    let kind = fsread::Kind::Result;
    let len = u64::try_from(block.len()).unwrap_or(u64::MAX);
    (len > kind.limit()).then(|| {
        format!(
            "the {what} block is {len} bytes, over the {}-byte limit for a {}",
            kind.limit(),
            kind.noun()
        )
    })
}

/// Read a log (missing or unreadable: an empty transcript). A log that
/// needed a cut gets one `warning:` line naming it and what was cut.
pub fn read_log(provider: Provider, log: &Path) -> Transcript {
    let Ok((mut file, size)) = fsread::open(log, fsread::Follow::No) else {
        return Transcript::default();
    };
    // Only the end of a huge log: the final message is there.
    let skipped = size.saturating_sub(MAX_LOG_BYTES);
    if skipped > 0 && file.seek(SeekFrom::Start(skipped)).is_err() {
        return Transcript::default();
    }
    let mut transcript = parse_lines(provider, file.take(MAX_LOG_BYTES), skipped > 0);
    transcript.cuts.skipped = skipped;
    if let Some(cuts) = transcript.cuts.describe() {
        diag::warning(format_args!("log `{}`: {cuts}", log.display()));
    }
    transcript
}

/// Parse a stream in `provider`'s format (what [`read_log`] does to a log
/// that needs no cut; the tests drive it with in-memory logs).
#[cfg(test)]
pub fn parse(provider: Provider, reader: impl Read) -> Transcript {
    parse_lines(provider, reader, false)
}

/// The parse of a stream; `mid_line` when it starts inside a line (the end of a
/// huge log), whose rest is skipped.
fn parse_lines(provider: Provider, reader: impl Read, mid_line: bool) -> Transcript {
    let mut transcript = Transcript::default();
    let mut lines = LineReader::new(reader, MAX_LINE_BYTES);
    // Gemini-style streams send the answer as deltas; they are joined into
    // one message until something else happens.
    let mut delta: Option<String> = None;
    let mut first = mid_line;
    // An unreadable stream ends the parse like its end.
    while let Ok(Some(line)) = lines.next_line() {
        if std::mem::take(&mut first) {
            continue;
        }
        let cut = line.is_cut();
        if cut {
            transcript.cuts.lines += 1;
            transcript.cuts.longest = transcript.cuts.longest.max(line.len);
        }
        let bytes = if cut {
            fsread::trim_split_char(line.bytes)
        } else {
            line.bytes
        };
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_end_matches(['\n', '\r']);
        push_tail(&mut transcript.tail, text);
        if text.trim().is_empty() {
            continue;
        }
        // A cut line is no JSON: it is kept as (clipped) plain text.
        let events = if cut {
            Line::Plain
        } else {
            providers::decode(provider, text)
        };
        let events = match events {
            Line::Events(events) => events,
            // Plain text: stderr, or a CLI without a JSON stream.
            Line::Plain | Line::Blank => {
                push_error(&mut transcript.errors, text);
                continue;
            }
        };
        // A piece of a message joins the ones before it; any other event
        // ends the message they make.
        if let [Event::TextDelta(piece)] = events.as_slice() {
            let joined = delta.get_or_insert_with(String::new);
            joined.push_str(piece);
            transcript.cuts.text += keep_newest(joined);
            continue;
        }
        if let Some(joined) = delta.take() {
            push_message(&mut transcript, joined);
        }
        for event in events {
            if let Some(line) = event.error_line().filter(|line| !line.is_empty()) {
                push_error(&mut transcript.errors, &line);
                if let Some(signal) = signal(&event, &line) {
                    push_signal(&mut transcript.signals, signal);
                }
            }
            match event {
                Event::Text(message) => push_message(&mut transcript, message),
                Event::Final { failed: true, .. } => transcript.reported_failure = true,
                _ => {}
            }
        }
    }
    if let Some(joined) = delta.take() {
        push_message(&mut transcript, joined);
    }
    transcript.bytes = lines.bytes_read();
    transcript
}

fn push_message(transcript: &mut Transcript, message: String) {
    if message.trim().is_empty() {
        return;
    }
    let messages = &mut transcript.messages;
    messages.push(message);
    // Keep the newest messages within the bound.
    let mut total: usize = messages.iter().map(String::len).sum();
    while total > MAX_TEXT_BYTES && messages.len() > 1 {
        let dropped = messages.remove(0).len();
        total -= dropped;
        transcript.cuts.text += dropped as u64;
    }
}

/// Keep the newest [`MAX_TEXT_BYTES`] of a growing message (its end holds
/// the result block); returns the bytes dropped. Trimmed in steps of a
/// quarter of the bound, so a stream of small deltas does not move the
/// whole text each time.
fn keep_newest(text: &mut String) -> u64 {
    if text.len() <= MAX_TEXT_BYTES + MAX_TEXT_BYTES / 4 {
        return 0;
    }
    let mut cut = text.len() - MAX_TEXT_BYTES;
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    text.drain(..cut);
    cut as u64
}

fn push_error(errors: &mut Vec<String>, line: &str) {
    errors.push(fsread::clip(line, MAX_ERROR_LINE));
    keep_last(errors, TAIL_LINES);
}

fn push_signal(signals: &mut Vec<Signal>, signal: Signal) {
    let clipped = match signal {
        Signal::Auth(line) => Signal::Auth(fsread::clip(&line, MAX_ERROR_LINE)),
        Signal::Limit {
            window,
            resets_at,
            line,
        } => Signal::Limit {
            window,
            resets_at,
            line: fsread::clip(&line, MAX_ERROR_LINE),
        },
    };
    signals.push(clipped);
    keep_last(signals, TAIL_LINES);
}

fn push_tail(tail: &mut Vec<String>, line: &str) {
    tail.push(fsread::clip(line, MAX_TAIL_LINE));
    keep_last(tail, TAIL_LINES);
}

fn keep_last<T>(lines: &mut Vec<T>, count: usize) {
    if lines.len() > count {
        let extra = lines.len() - count;
        lines.drain(..extra);
    }
}

impl Transcript {
    /// The worker's blocks: the last complete result block of the final
    /// message that has one, searched newest first, with the worker-results
    /// block of the same message if it has one.
    pub fn blocks(&self) -> Option<Blocks> {
        self.messages.iter().rev().find_map(|message| {
            let result = last_block(message, RESULT_BEGIN, RESULT_END)?;
            Some(Blocks {
                result,
                worker_results: last_block(message, WORKER_RESULTS_BEGIN, WORKER_RESULTS_END),
            })
        })
    }

    /// Whether the assistant said anything at all.
    pub fn has_text(&self) -> bool {
        !self.messages.is_empty()
    }
}

/// The text between the last `begin` line and the first `end` line after
/// it, without the marker lines. A block whose end is missing is not
/// complete and does not count. One pass, nothing held but the answer.
pub fn last_block(text: &str, begin: &str, end: &str) -> Option<String> {
    last_block_where(text, |line| line == begin, end).map(|(_, body)| body)
}

/// [`last_block`] for begin lines `is_begin` accepts (each trimmed): the
/// last complete block's begin line (trimmed) and its body. A native
/// worker's begin line carries the tag of the task it answers.
pub fn last_block_where(
    text: &str,
    is_begin: impl Fn(&str) -> bool,
    end: &str,
) -> Option<(String, String)> {
    // Byte offsets: the open block's begin line and where its body starts,
    // and the last complete block found.
    let mut open: Option<(usize, usize)> = None;
    let mut found: Option<(usize, usize, usize)> = None;
    let mut at = 0;
    for raw in text.split_inclusive('\n') {
        let line = raw.strip_suffix('\n').unwrap_or(raw);
        let line = line.strip_suffix('\r').unwrap_or(line);
        match open {
            None if is_begin(line.trim()) => open = Some((at, at + raw.len())),
            Some((head, start)) if line.trim() == end => {
                found = Some((head, start, at));
                open = None;
            }
            _ => {}
        }
        at += raw.len();
    }
    let (head, start, stop) = found?;
    let begin = text[head..start].trim().to_owned();
    let mut body = text[start..stop].lines().collect::<Vec<_>>().join("\n");
    body.push('\n');
    (!body.trim().is_empty()).then_some((begin, body))
}

#[cfg(test)]
#[path = "recover_tests.rs"]
mod tests;
