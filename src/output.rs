//! A command's answer on stdout, and the one place it is shaped.
//!
//! stdout carries only data — a rendered path, a summary, a `--json`
//! document — and diagnostics go to stderr through `diag`. A command does
//! not print: it returns a [`Reply`], its answer and its exit status, and
//! the entry point (`main.rs`) writes the answer once the command is done.
//! A test greps `src/` to keep it so: no other file names `stdout()` or
//! prints with `print!`/`println!`, but for the few on its allow-list,
//! which only shrinks.
//!
//! An answer is one value with two forms: its JSON (`--json`) and its
//! [`Text`] for a person; the command says which its caller asked for,
//! and writes no `--json` branch of its own. The JSON form of an
//! [`Answer`] is versioned: it carries `schemaVersion` and follows its
//! embedded schema (`schemas/<command>-answer.schema.json`), which a
//! debug build checks each answer against before it is written, so every
//! test that reads an answer checks the schema too. A few answers have
//! one form only: a [`Reply::line`] of text (a path, an address), a
//! [`Reply::document`] in a format of its own (a completion script, a man
//! page, a SARIF log). A struct that replaces a `json!` map keeps its
//! bytes through [`sorted()`].
//!
//! Only a command that streams takes the handle, [`stream()`], itself:
//! `okstra status --watch` clears the screen before each frame on a
//! terminal and stamps each snapshot with the time otherwise; the frame's
//! body is still its `Board` answer. (provider-exec, the transparent
//! wrapper, writes the provider CLI's stream to its stdout by contract:
//! that stream is the CLI's output, not an answer of okstra's.)

use std::io::{self, IsTerminal, Write};

use serde::Serialize;

use crate::exit::ExitStatus;

/// stdout, locked, for a command that streams its answer frame by frame
/// (`okstra status --watch`); every other answer is a [`Reply`].
pub fn stream() -> io::StdoutLock<'static> {
    io::stdout().lock()
}

/// Whether stdout is a terminal (a live view redraws in place only there).
pub fn is_terminal() -> bool {
    io::stdout().is_terminal()
}

/// The form of an answer a person reads.
pub trait Text {
    /// Write the lines a person reads, each ending in a newline.
    fn write_text(&self, out: &mut dyn Write) -> io::Result<()>;
}

/// An answer with a versioned JSON form.
pub trait Answer: Serialize + Text {
    /// The embedded schema its JSON form follows.
    const SCHEMA: &'static str;
    /// The version it is written with, as `schemaVersion` (the schema's
    /// `const`). `None` for an answer that carries its own, because it is
    /// also a document okstra writes to disk (a round plan, the report
    /// inputs, the doctor's report).
    const VERSION: Option<u32>;
}

/// An answer whose JSON okstra lays out itself (the report inputs keep
/// one finding per line), so its bytes are not serde's.
pub trait LaidOut: Text {
    /// The embedded schema its JSON form follows (the document carries
    /// its own `schemaVersion`).
    const SCHEMA: &'static str;
    /// The JSON document, byte for byte, ending in a newline.
    fn json_bytes(&self) -> serde_json::Result<Vec<u8>>;
}

/// What a command answers: the bytes for stdout, and how it ends once
/// they are written.
#[must_use]
pub struct Reply {
    stdout: Vec<u8>,
    /// The schema the bytes follow, when they are a `--json` answer.
    schema: Option<&'static str>,
    end: End,
}

/// How a command ends once its answer is on stdout.
pub enum End {
    /// With this status, or the error it ended on after its answer was
    /// made (the entry point writes the answer, then the error).
    Now(anyhow::Result<ExitStatus>),
    /// By going on: what runs after the answer is out (the launcher hands
    /// its process to the lead's CLI, which takes the terminal).
    Then(Box<dyn FnOnce() -> anyhow::Result<ExitStatus>>),
}

/// `{"schemaVersion": n, …the answer's own fields}`.
#[derive(Serialize)]
struct Versioned<'a, T> {
    #[serde(rename = "schemaVersion")]
    schema_version: u32,
    #[serde(flatten)]
    answer: &'a T,
}

impl Reply {
    /// Nothing on stdout; the exit status says it all.
    pub fn status(status: ExitStatus) -> Reply {
        Reply {
            stdout: Vec::new(),
            schema: None,
            end: End::Now(Ok(status)),
        }
    }

    /// `answer`: one line of compact JSON when `json`, else its text.
    pub fn answer<T: Answer>(answer: &T, json: bool) -> anyhow::Result<Reply> {
        Reply::shaped(answer, json, false)
    }

    /// [`Reply::answer`] with the JSON indented (the documents people read
    /// whole: a report's verdict, a usage summary).
    pub fn pretty<T: Answer>(answer: &T, json: bool) -> anyhow::Result<Reply> {
        Reply::shaped(answer, json, true)
    }

    /// `answer`'s text, or its JSON (indented when `pretty`) led by the
    /// answer's version unless it carries its own.
    fn shaped<T: Answer>(answer: &T, json: bool, pretty: bool) -> anyhow::Result<Reply> {
        fn bytes(value: &impl Serialize, pretty: bool) -> serde_json::Result<Vec<u8>> {
            if pretty {
                serde_json::to_vec_pretty(value)
            } else {
                serde_json::to_vec(value)
            }
        }
        if !json {
            return Reply::text(answer);
        }
        let mut document = match T::VERSION {
            Some(version) => bytes(
                &Versioned {
                    schema_version: version,
                    answer,
                },
                pretty,
            )?,
            None => bytes(answer, pretty)?,
        };
        document.push(b'\n');
        Ok(Reply::json(document, T::SCHEMA))
    }

    /// [`Reply::answer`] for a [`LaidOut`] answer: its own bytes when `json`.
    pub fn laid_out<T: LaidOut>(answer: &T, json: bool) -> anyhow::Result<Reply> {
        if !json {
            return Reply::text(answer);
        }
        Ok(Reply::json(answer.json_bytes()?, T::SCHEMA))
    }

    /// An answer that is one line of text and has no JSON form: a path
    /// (`okstra submit`), an event's `PROGRESS:` line (`okstra event`), a
    /// review's address (`okstra publish`).
    pub fn line(answer: impl std::fmt::Display) -> Reply {
        Reply {
            stdout: format!("{answer}\n").into_bytes(),
            schema: None,
            end: End::Now(Ok(ExitStatus::Success)),
        }
    }

    /// An answer that is a document in a format of its own, the same with
    /// or without `--json`: a completion script, a man page, a SARIF log,
    /// the results of `okstra check-args`.
    pub fn document(bytes: Vec<u8>) -> Reply {
        Reply {
            stdout: bytes,
            schema: None,
            end: End::Now(Ok(ExitStatus::Success)),
        }
    }

    /// `value` as an indented JSON document in a format that is not
    /// okstra's (a SARIF log, a GitHub review's body).
    pub fn foreign_json(value: &impl Serialize) -> anyhow::Result<Reply> {
        let mut document = serde_json::to_vec_pretty(value)?;
        document.push(b'\n');
        Ok(Reply::document(document))
    }

    /// The same answer, ending with `status` (once what runs after the
    /// answer, if anything, has run without an error).
    pub fn with_status(mut self, status: ExitStatus) -> Reply {
        self.end = match self.end {
            End::Now(_) => End::Now(Ok(status)),
            End::Then(next) => End::Then(Box::new(move || next().map(|_| status))),
        };
        self
    }

    /// The same answer, then `say` once it is written: the lines a person
    /// reads last on a terminal (a verdict, what to do next) come after
    /// the answer they sum up.
    pub fn then_say(mut self, say: impl FnOnce() + 'static) -> Reply {
        let end = std::mem::replace(&mut self.end, End::Now(Ok(ExitStatus::Success)));
        self.then(move || {
            let end = match end {
                End::Now(end) => end,
                End::Then(next) => next(),
            };
            say();
            end
        })
    }

    /// The same answer, ending as `end` says: the answer is written even
    /// when what came after it failed (an install's plan before its
    /// refusal, a run's closing lines before its gate).
    pub fn ending(mut self, end: anyhow::Result<ExitStatus>) -> Reply {
        self.end = End::Now(end);
        self
    }

    /// The same answer, then `next` once it is written: its outcome is the
    /// command's.
    pub fn then(mut self, next: impl FnOnce() -> anyhow::Result<ExitStatus> + 'static) -> Reply {
        self.end = End::Then(Box::new(next));
        self
    }

    /// The answer's bytes, for a command that writes its answer frame by
    /// frame (`okstra status --watch`), checked as any answer is.
    pub fn frame(self) -> anyhow::Result<Vec<u8>> {
        Ok(self.into_parts()?.0)
    }

    /// The bytes for stdout and how the command ends; for the entry point.
    /// A `--json` answer that breaks its own schema is okstra's bug: a
    /// debug build (every test's) refuses it here, before it is written.
    pub fn into_parts(self) -> anyhow::Result<(Vec<u8>, End)> {
        if cfg!(debug_assertions)
            && let Some(schema) = self.schema
        {
            check_answer(&self.stdout, schema)?;
        }
        Ok((self.stdout, self.end))
    }

    fn text(answer: &impl Text) -> anyhow::Result<Reply> {
        let mut text = Vec::new();
        answer.write_text(&mut text)?;
        Ok(Reply::document(text))
    }

    fn json(bytes: Vec<u8>, schema: &'static str) -> Reply {
        Reply {
            stdout: bytes,
            schema: Some(schema),
            end: End::Now(Ok(ExitStatus::Success)),
        }
    }
}

/// Serialise `value` as `serde_json::json!` would: through a
/// `serde_json::Value`, whose maps sort their keys. A struct that replaces
/// a `json!` document keeps its bytes by naming its own fields in
/// alphabetical order and sending each nested struct through here
/// (`#[serde(serialize_with = "crate::output::sorted")]`).
pub fn sorted<T: Serialize, S: serde::Serializer>(value: &T, to: S) -> Result<S::Ok, S::Error> {
    serde_json::to_value(value)
        .map_err(serde::ser::Error::custom)?
        .serialize(to)
}

/// Check a `--json` answer against its schema.
fn check_answer(bytes: &[u8], schema: &str) -> anyhow::Result<()> {
    let value: serde_json::Value = serde_json::from_slice(bytes)?;
    crate::schema::check(schema, &value, "the `--json` answer")?;
    Ok(())
}

#[cfg(test)]
#[path = "output_tests.rs"]
mod tests;
