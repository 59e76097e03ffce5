//! The one printer: okstra's stdout.
//!
//! stdout carries only data — a rendered path, a summary, a `--json`
//! document — and every byte of it goes out through this module (or through
//! `main.rs`, where clap prints help); diagnostics go to stderr through
//! `diag`. A test greps `src/` to keep it so: no other file names
//! `stdout()` or prints with `print!`/`println!`, but for the few on its
//! allow-list, which only shrinks.
//!
//! A command's answer is one value with two forms: its JSON (`--json`,
//! the value serialised) and its [`Text`] for a person; [`print()`] picks
//! one, so a command writes no `--json` branch of its own. A few answers
//! have one form only: a [`line()`] of text (a path, an address), a
//! [`document()`] in a format of its own (a completion script, a man
//! page), a JSON document that is JSON in every form ([`json_pretty()`]),
//! or JSON okstra lays out itself ([`LaidOut`]). A struct that replaces a
//! `json!` map keeps its bytes through [`sorted()`].
//!
//! Only a command that streams takes the handle, [`stdout()`], itself:
//! `okstra status --watch` clears the screen before each frame on a
//! terminal and stamps each snapshot with the time otherwise; the frame's
//! body is still its `Board` answer. (provider-exec, the transparent
//! wrapper, writes the provider CLI's stream to its stdout by contract:
//! that stream is the CLI's output, not an answer of okstra's.)

use std::io::{self, IsTerminal, Write};

use serde::Serialize;

/// stdout, locked, for one command's data; written in one go, then
/// dropped.
pub fn stdout() -> io::StdoutLock<'static> {
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

/// Print `answer`: one line of compact JSON when `json`, else its text.
pub fn print<T: Serialize + Text>(answer: &T, json: bool) -> anyhow::Result<()> {
    if json {
        return json_line(answer);
    }
    text(answer)
}

/// [`print()`] with the JSON indented (the documents people read whole: a
/// report's verdict, a usage summary).
pub fn print_pretty<T: Serialize + Text>(answer: &T, json: bool) -> anyhow::Result<()> {
    if !json {
        return text(answer);
    }
    json_pretty(answer)
}

/// An answer whose JSON okstra lays out itself (the report inputs keep
/// one finding per line), so its bytes are not serde's.
pub trait LaidOut: Text {
    /// The JSON document, byte for byte, ending in a newline.
    fn json_bytes(&self) -> serde_json::Result<Vec<u8>>;
}

/// [`print()`] for a [`LaidOut`] answer: its own bytes when `json`.
pub fn print_laid_out<T: LaidOut>(answer: &T, json: bool) -> anyhow::Result<()> {
    if !json {
        return text(answer);
    }
    stdout().write_all(&answer.json_bytes()?)?;
    Ok(())
}

fn text(answer: &impl Text) -> anyhow::Result<()> {
    let mut text = Vec::new();
    answer.write_text(&mut text)?;
    stdout().write_all(&text)?;
    Ok(())
}

/// Print an answer that is a document in a format of its own, the same
/// with or without `--json`: a completion script, a man page, the results
/// of `okstra check-args`.
pub fn document(bytes: &[u8]) -> anyhow::Result<()> {
    let mut out = stdout();
    out.write_all(bytes)?;
    out.flush()?;
    Ok(())
}

/// Print an answer that is one line of text and has no JSON form: a path
/// (`okstra submit`), an event's `PROGRESS:` line (`okstra event`), a
/// review's address (`okstra publish`).
pub fn line(answer: impl std::fmt::Display) -> anyhow::Result<()> {
    stdout().write_all(format!("{answer}\n").as_bytes())?;
    Ok(())
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

/// `value` as an indented JSON document (an answer that is JSON in every
/// form: `okstra report sarif --out -`).
pub fn json_pretty(value: &impl Serialize) -> anyhow::Result<()> {
    let mut document = serde_json::to_vec_pretty(value)?;
    document.push(b'\n');
    stdout().write_all(&document)?;
    Ok(())
}

/// `value` as one line of compact JSON (a `--json` answer).
pub fn json_line(value: &impl Serialize) -> anyhow::Result<()> {
    let mut line = serde_json::to_vec(value)?;
    line.push(b'\n');
    stdout().write_all(&line)?;
    Ok(())
}

#[cfg(test)]
#[path = "output_tests.rs"]
mod tests;
