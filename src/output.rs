//! The one printer: okstra's stdout.
//!
//! stdout carries only data — a rendered path, a summary, a `--json`
//! document — and every byte of it goes out through this module (or through
//! `main.rs`, where clap prints help); diagnostics go to stderr through
//! `diag`. A test greps `src/` to keep it so: no other file names
//! `stdout()` or prints with `print!`/`println!`, but for the few on its
//! allow-list, which only shrinks.
//!
//! Not yet here: the choice between text and JSON. Each command still
//! makes it with its own `--json` branch; the next step is that a command
//! returns its value and the entry point prints it.

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
