//! Result recovery: what a worker said, read back from its CLI's log.
//!
//! Read-only workers cannot write their Result Path, so the normal path is
//! that a worker prints its result between marker lines as its final message
//! and okstra writes the files. This module reads one attempt's log in that
//! CLI's stream format, collects the assistant's text (never the prompt a
//! CLI may echo, which holds the markers as an example), finds the last
//! complete marked block of each kind, and gathers the error text the
//! classifier reads. Everything is line by line with a bound on what is kept.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde_json::Value;

use crate::catalog::Provider;

/// First line of the result block a worker prints.
pub const RESULT_BEGIN: &str = "=== OKSTRA RESULT BEGIN ===";
/// Last line of the result block.
pub const RESULT_END: &str = "=== OKSTRA RESULT END ===";
/// First line of the worker-results (audit) block.
pub const WORKER_RESULTS_BEGIN: &str = "=== OKSTRA WORKER-RESULTS BEGIN ===";
/// Last line of the worker-results block.
pub const WORKER_RESULTS_END: &str = "=== OKSTRA WORKER-RESULTS END ===";

/// Most of a log we read: a worker's final message is text, and a log past
/// this is mostly tool output we do not need.
const MAX_LOG_BYTES: u64 = 256 * 1024 * 1024;
/// Longest line we parse as JSON; longer ones are counted and skipped.
const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;
/// Lines kept for the dispatch record's `logTail`.
pub const TAIL_LINES: usize = 40;
/// Most assistant text we keep: the last messages matter, and a result
/// block longer than this is not a result a report can use.
const MAX_TEXT_BYTES: usize = 32 * 1024 * 1024;

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
    /// The last lines of the log, for the dispatch record.
    pub tail: Vec<String>,
    /// Bytes of the log.
    pub bytes: u64,
}

/// The two files a worker's result fills.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocks {
    pub result: String,
    pub worker_results: Option<String>,
}

/// Read a log (missing or unreadable: an empty transcript).
pub fn read_log(provider: Provider, log: &Path) -> Transcript {
    let Ok(file) = open_regular(log) else {
        return Transcript::default();
    };
    parse(provider, file.take(MAX_LOG_BYTES))
}

/// A log opened through the one bounded reader's checks (no FIFO, no
/// symlink); it is then streamed, at most [`MAX_LOG_BYTES`] of it.
fn open_regular(path: &Path) -> Result<std::fs::File, crate::fsread::Error> {
    crate::fsread::open(path, crate::fsread::Follow::No).map(|(file, _)| file)
}

/// Parse a stream in `provider`'s format.
pub fn parse(provider: Provider, reader: impl Read) -> Transcript {
    let mut transcript = Transcript::default();
    let mut reader = BufReader::with_capacity(64 * 1024, reader);
    let mut line = Vec::new();
    // Gemini-style streams send the answer as deltas; they are joined into
    // one message until something else happens.
    let mut delta: Option<String> = None;
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(n) => transcript.bytes += n as u64,
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        push_tail(&mut transcript.tail, text);
        if text.trim().is_empty() {
            continue;
        }
        let parsed = (line.len() <= MAX_LINE_BYTES && text.trim_start().starts_with('{'))
            .then(|| serde_json::from_str::<Value>(text).ok())
            .flatten();
        let Some(event) = parsed else {
            // Plain text: stderr, or a CLI without a JSON stream.
            transcript.errors.push(text.to_owned());
            keep_last(&mut transcript.errors, TAIL_LINES);
            continue;
        };
        let step = read_event(provider, &event);
        if let Some(piece) = step.delta {
            delta.get_or_insert_with(String::new).push_str(&piece);
            continue;
        }
        if let Some(joined) = delta.take() {
            push_message(&mut transcript.messages, joined);
        }
        if let Some(message) = step.message {
            push_message(&mut transcript.messages, message);
        }
        if let Some(error) = step.error {
            transcript.errors.push(error);
            keep_last(&mut transcript.errors, TAIL_LINES);
        }
        transcript.reported_failure |= step.failed;
    }
    if let Some(joined) = delta.take() {
        push_message(&mut transcript.messages, joined);
    }
    transcript
}

/// What one stream event contributes.
#[derive(Debug, Default)]
struct Step {
    message: Option<String>,
    delta: Option<String>,
    error: Option<String>,
    failed: bool,
}

fn read_event(provider: Provider, event: &Value) -> Step {
    let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
    let text = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_owned);
    let mut step = Step::default();
    match provider {
        Provider::Claude => match kind {
            "result" => {
                let failed = event.get("is_error").and_then(Value::as_bool) == Some(true);
                step.failed = failed;
                let result = text(event.get("result"));
                if failed {
                    step.error = result;
                } else {
                    step.message = result;
                }
            }
            "assistant" => {
                step.message = content_text(event.pointer("/message/content"));
                if let Some(error) = text(event.get("error")) {
                    step.error = Some(format!(
                        "{error}: {}",
                        step.message.take().unwrap_or_default()
                    ));
                }
            }
            "system" if event.get("subtype").and_then(Value::as_str) == Some("api_retry") => {
                step.error = Some(format!(
                    "api_retry: {}",
                    text(event.get("error")).unwrap_or_default()
                ));
            }
            _ => {}
        },
        Provider::Codex => match kind {
            "item.completed" => match event.pointer("/item/type").and_then(Value::as_str) {
                Some("agent_message") => step.message = text(event.pointer("/item/text")),
                Some("error") => step.error = text(event.pointer("/item/message")),
                _ => {}
            },
            "error" => step.error = text(event.get("message")),
            "turn.failed" => {
                step.failed = true;
                step.error = text(event.pointer("/error/message"));
            }
            _ => {}
        },
        Provider::Antigravity => match kind {
            "message" if event.get("role").and_then(Value::as_str) == Some("assistant") => {
                let content = content_text(event.get("content"));
                if event.get("delta").and_then(Value::as_bool) == Some(true) {
                    step.delta = content;
                } else {
                    step.message = content;
                }
            }
            "result" => {
                step.failed = event.get("status").and_then(Value::as_str) == Some("error")
                    || event.get("is_error").and_then(Value::as_bool) == Some(true);
                step.message = text(event.get("response"));
                step.error = text(event.pointer("/error/message"));
            }
            "error" => step.error = text(event.get("message")),
            _ => {}
        },
        Provider::Grok => match kind {
            "text" => step.delta = text(event.get("data")),
            "error" => {
                step.error = text(event.get("message")).or_else(|| text(event.get("data")));
            }
            _ if event.get("role").and_then(Value::as_str) == Some("assistant") => {
                let content = content_text(event.get("content"));
                // vibe-kit grok reports API failures as an assistant
                // message and exits 0 (measured): that is an error, not an answer.
                match content {
                    Some(text) if text.starts_with("Sorry, I encountered an error") => {
                        step.error = Some(text);
                    }
                    other => step.message = other,
                }
            }
            _ => {}
        },
        Provider::Kimi => {
            let role = event.get("role").and_then(Value::as_str);
            if role == Some("assistant") {
                step.message = content_text(event.get("content"));
            } else if role == Some("meta") && kind == "turn.step.retrying" {
                step.error = Some(format!(
                    "retrying: {} {}",
                    text(event.get("error_name")).unwrap_or_default(),
                    text(event.get("error_message")).unwrap_or_default()
                ));
            }
        }
    }
    step
}

/// Text of a message `content`: a string, or the `text` parts of a list.
fn content_text(content: Option<&Value>) -> Option<String> {
    match content? {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => {
            let joined: String = parts
                .iter()
                .filter(|part| {
                    part.get("type")
                        .and_then(Value::as_str)
                        .is_none_or(|kind| kind == "text")
                })
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n");
            (!joined.is_empty()).then_some(joined)
        }
        _ => None,
    }
}

fn push_message(messages: &mut Vec<String>, message: String) {
    if message.trim().is_empty() {
        return;
    }
    messages.push(message);
    // Keep the newest messages within the bound.
    let mut total: usize = messages.iter().map(String::len).sum();
    while total > MAX_TEXT_BYTES && messages.len() > 1 {
        total -= messages.remove(0).len();
    }
}

fn push_tail(tail: &mut Vec<String>, line: &str) {
    const MAX_TAIL_LINE: usize = 2000;
    let mut line = line.to_owned();
    if line.len() > MAX_TAIL_LINE {
        let mut cut = MAX_TAIL_LINE;
        while !line.is_char_boundary(cut) {
            cut -= 1;
        }
        line.truncate(cut);
        line.push('…');
    }
    tail.push(line);
    keep_last(tail, TAIL_LINES);
}

fn keep_last(lines: &mut Vec<String>, count: usize) {
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
/// complete and does not count.
pub fn last_block(text: &str, begin: &str, end: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let is = |line: &str, marker: &str| line.trim() == marker;
    let mut found = None;
    let mut index = 0;
    while index < lines.len() {
        if is(lines[index], begin)
            && let Some(offset) = lines[index + 1..].iter().position(|line| is(line, end))
        {
            let body = &lines[index + 1..index + 1 + offset];
            found = Some(body.join("\n") + "\n");
            index += offset + 2;
            continue;
        }
        index += 1;
    }
    found.filter(|body| !body.trim().is_empty())
}

#[cfg(test)]
#[path = "recover_tests.rs"]
mod tests;
