//! The lead events log (`state/lead-events.jsonl`): the kinds okstra
//! writes, and the one appender every writer goes through (`okstra event`,
//! `okstra run`, the engine, `okstra cancel`): [`append`], and [`record`]
//! for okstra's own events, whose failure is a warning.
//!
//! Concurrent writers (the lead, several hooks) are expected, so the append
//! happens under an exclusive `flock` on the log itself: read the last
//! sequence number, append one line with `O_APPEND`, fsync, unlock. Every
//! line is validated against `schemas/lead-event.schema.json` first. A torn
//! last line (a writer killed mid-write) is closed with a newline and skipped
//! when numbering, so one crash never poisons the log.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Serialize;
use serde_json::Value;

use crate::clock;
use crate::run::Run;
use crate::schema;
use crate::vocab::EventKind;
use crate::{confine, fsread};

/// Version of the lead-event line format.
const EVENT_VERSION: u32 = 1;
/// How much of the log's end is read to find the last sequence number; a
/// line is far shorter, and the whole file is read only if this holds none.
const TAIL_BYTES: u64 = 64 * 1024;

impl EventKind {
    /// Whether a host lead may still record this kind itself with `okstra
    /// event`: its own session id and the totals its host shows, which
    /// okstra cannot always find alone. Every other kind okstra writes.
    pub fn lead_may_write(self) -> bool {
        matches!(self, EventKind::Session)
    }
}

/// Whether the run's log already holds an event of `kind` whose field
/// `key` is `value` (the log is read bounded; an unreadable one holds none).
pub fn exists(run: &Run, kind: EventKind, key: &str, value: &str) -> bool {
    let Ok(bytes) = fsread::read_no_follow(&run.lead_events_path, fsread::Kind::Events) else {
        return false;
    };
    bytes.split(|b| *b == b'\n').any(|line| {
        serde_json::from_slice::<Value>(line).is_ok_and(|event| {
            event.get("kind").and_then(Value::as_str) == Some(kind.as_str())
                && event
                    .pointer(&format!("/fields/{key}"))
                    .and_then(Value::as_str)
                    == Some(value)
        })
    })
}

/// The kinds that start or end a drive of the run.
pub const LIFECYCLE: [EventKind; 6] = [
    EventKind::RunStart,
    EventKind::RunResume,
    EventKind::RunComplete,
    EventKind::RunInterrupted,
    EventKind::RunFailed,
    EventKind::RunCancelled,
];

/// The kind of the newest event whose kind is one of `kinds`, if any.
pub fn newest_of(run: &Run, kinds: &[EventKind]) -> Option<(EventKind, BTreeMap<String, String>)> {
    let bytes = fsread::read_no_follow(&run.lead_events_path, fsread::Kind::Events).ok()?;
    bytes.split(|b| *b == b'\n').rev().find_map(|line| {
        let event = serde_json::from_slice::<Value>(line).ok()?;
        let kind = kinds
            .iter()
            .copied()
            .find(|k| event.get("kind").and_then(Value::as_str) == Some(k.as_str()))?;
        let fields = event
            .get("fields")
            .and_then(Value::as_object)
            .map(|fields| {
                fields
                    .iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        Some((kind, fields))
    })
}

/// One line of the lead events log.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Event<'a> {
    schema_version: u32,
    seq: u64,
    ts: String,
    kind: &'a str,
    run_id: &'a str,
    fields: &'a BTreeMap<String, String>,
}

/// `text` as an event field value: one line (control characters become
/// spaces) of at most 4000 bytes, cut at a character boundary.
pub fn one_line(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut cut = flat.len().min(4000);
    while !flat.is_char_boundary(cut) {
        cut -= 1;
    }
    flat[..cut].to_owned()
}

/// `PROGRESS: <kind> key=value …`; values with spaces or quotes are quoted
/// as JSON strings so the line splits unambiguously.
pub fn progress_line(kind: &str, fields: &BTreeMap<String, String>) -> String {
    let mut line = format!("PROGRESS: {kind}");
    append_fields(&mut line, fields).expect("writing to a String cannot fail");
    line
}

fn append_fields(line: &mut String, fields: &BTreeMap<String, String>) -> fmt::Result {
    for (key, value) in fields {
        let plain = !value.is_empty() && !value.chars().any(|c| c.is_whitespace() || c == '"');
        if plain {
            write!(line, " {key}={value}")?;
        } else {
            let quoted = Value::String(value.clone()).to_string();
            write!(line, " {key}={quoted}")?;
        }
    }
    Ok(())
}

/// Record a lead event okstra writes itself: each value made one line
/// ([`one_line`]), appended with [`append`]. A failure to record is a
/// warning, never the end of the step that records it. Returns the fields
/// as recorded (a caller may show them).
pub fn record(run: &Run, kind: EventKind, fields: &[(&str, &str)]) -> BTreeMap<String, String> {
    let fields: BTreeMap<String, String> = fields
        .iter()
        .map(|(key, value)| ((*key).to_owned(), one_line(value)))
        .collect();
    if let Err(err) = append(run, kind.as_str(), &fields) {
        crate::diag::warning(format_args!("cannot record lead event `{kind}`: {err:#}"));
    }
    fields
}

/// Append the event under the lock; returns its sequence number.
pub fn append(run: &Run, kind: &str, fields: &BTreeMap<String, String>) -> Result<u64> {
    // Inside the run, through no symlink, never a FIFO: a crafted manifest
    // or a planted link steers no append out of the run.
    let path = &confine::inside_no_links(&run.lead_events_path, &run.dir, "`leadEventsPath`")?;
    let mut seq = 0;
    // Under the log's lock: read the last number, write the next one.
    crate::durable::append_line(path, |log| -> Result<Vec<u8>> {
        let last = last_seq(log, path)?;
        seq = last + 1;
        let event = Event {
            schema_version: EVENT_VERSION,
            seq,
            ts: clock::rfc3339_now(),
            kind,
            run_id: &run.run_id,
            fields,
        };
        let value = serde_json::to_value(&event).context("cannot serialise the lead event")?;
        schema::check("lead-event.schema.json", &value, "the lead event")?;
        serde_json::to_vec(&value).context("cannot serialise the lead event")
    })
    .with_context(|| format!("cannot append to lead events log `{}`", path.display()))?;
    Ok(seq)
}

/// The last sequence number in the log (0 when empty).
fn last_seq(file: &mut File, path: &Path) -> Result<u64> {
    let read_err = || format!("cannot read lead events log `{}`", path.display());
    let len = file.metadata().with_context(read_err)?.len();
    if len == 0 {
        return Ok(0);
    }
    let start = len.saturating_sub(TAIL_BYTES);
    let mut tail = Vec::new();
    file.seek(SeekFrom::Start(start)).with_context(read_err)?;
    file.read_to_end(&mut tail).with_context(read_err)?;
    if let Some(seq) = newest_seq(&tail, start > 0) {
        return Ok(seq);
    }
    if start > 0 {
        let limit = fsread::Kind::Events.limit();
        if len > limit {
            return Err(fsread::Error::TooLarge {
                path: path.to_path_buf(),
                size: len,
                limit,
                noun: fsread::Kind::Events.noun(),
            }
            .into());
        }
        let mut whole = Vec::new();
        file.seek(SeekFrom::Start(0)).with_context(read_err)?;
        file.read_to_end(&mut whole).with_context(read_err)?;
        if let Some(seq) = newest_seq(&whole, false) {
            return Ok(seq);
        }
    }
    // Lines exist but none parses: refuse to guess a number.
    bail!(
        "lead events log `{}` has lines but none with a sequence number; move it aside to start a new one",
        path.display()
    )
}

/// The `seq` of the last parseable line in `bytes`. When `partial_head`, the
/// first line may be cut by the tail read and is skipped.
pub fn newest_seq(bytes: &[u8], partial_head: bool) -> Option<u64> {
    let mut lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    if partial_head && !lines.is_empty() {
        lines.remove(0);
    }
    lines.iter().rev().find_map(|line| {
        serde_json::from_slice::<Value>(line)
            .ok()?
            .get("seq")?
            .as_u64()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_lines_quote_only_when_needed() {
        let fields: BTreeMap<String, String> = [("a", "1"), ("b", "two words"), ("c", "")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        assert_eq!(
            progress_line("phase-start", &fields),
            r#"PROGRESS: phase-start a=1 b="two words" c="""#
        );
    }

    /// A run in a temp project with the fewest manifest fields okstra reads.
    fn temp_run(project: &Path) -> Run {
        let dir = project.join(".okstra/tasks/p/g/t/runs/project-analysis-001");
        std::fs::create_dir_all(dir.join("state")).unwrap();
        let manifest = serde_json::json!({
            "runId": "project-analysis-001",
            "createdAt": "2026-12-01T00:00:00Z",
            "taskKey": "p/g/t",
            "taskType": "project-analysis",
            "projectRoot": project,
            "assignments": [],
        });
        std::fs::write(dir.join("run-manifest.json"), manifest.to_string()).unwrap();
        Run::open(&dir).unwrap()
    }

    #[test]
    fn record_writes_one_line_values_and_survives_a_log_it_cannot_write() {
        let dir = tempfile::tempdir().unwrap();
        let project = std::fs::canonicalize(dir.path()).unwrap();
        let run = temp_run(&project);
        let fields = record(
            &run,
            EventKind::Landed,
            &[("commit", "abc\ndef"), ("files", "2")],
        );
        assert_eq!(fields["commit"], "abc def");
        record(&run, EventKind::RunComplete, &[]);
        let log = std::fs::read_to_string(&run.lead_events_path).unwrap();
        let lines: Vec<Value> = log
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["kind"], "landed");
        assert_eq!(lines[0]["fields"]["commit"], "abc def");
        assert_eq!(lines[1]["seq"], 2);
        // A log that cannot be appended to is a warning, not a failure.
        std::fs::remove_file(&run.lead_events_path).unwrap();
        std::fs::create_dir(&run.lead_events_path).unwrap();
        let fields = record(&run, EventKind::RunFailed, &[("error", "x")]);
        assert_eq!(fields["error"], "x");
    }

    #[test]
    fn newest_seq_skips_torn_and_cut_lines() {
        let log = b"{\"seq\":1}\n{\"seq\":2}\n{\"se";
        assert_eq!(newest_seq(log, false), Some(2));
        assert_eq!(newest_seq(b"q\":9}\n", true), None);
    }
}
