//! Asking the person at the terminal for what the flags left out: a missing
//! required value, or the answers `--resume-clarification` continues with.
//!
//! Settings resolution asks through [`Prompt`], which also words the usage
//! error when it may not ask (`--yes`, no terminal). Behind it the [`Ask`]
//! trait lets tests script the answers; only [`Terminal`] touches stdin and
//! stderr.

use std::io::{self, BufRead, IsTerminal, Write};
use std::path::Path;

use anyhow::{Result, bail};

/// Something that can ask the user for a value.
pub trait Ask {
    /// A missing required value; `question` names it.
    fn ask(&mut self, question: &str) -> Result<String>;

    /// The answers to the questions of the earlier run `previous`, as typed
    /// (possibly blank: the caller decides what that means).
    fn answers(&mut self, previous: &Path) -> Result<String>;
}

/// How resolution asks: through an [`Ask`] when it may, and otherwise a
/// usage error that says why it could not.
pub struct Prompt<'a> {
    /// `--yes`: never ask.
    pub yes: bool,
    /// Missing values may be asked for (a terminal, and not `--yes`).
    pub interactive: bool,
    pub asker: &'a mut dyn Ask,
}

impl Prompt<'_> {
    /// `value`, else the answer to a question about `--{flag}`.
    pub fn required(&mut self, flag: &str, value: Option<String>) -> Result<String> {
        match value {
            Some(value) => Ok(value),
            None if self.interactive => self.asker.ask(&format!("{flag} (required)")),
            None if self.yes => {
                bail!("missing required argument `--{flag}` (`--yes` never prompts)")
            }
            None => bail!(
                "missing required argument `--{flag}` (no terminal to ask on; pass it on the command line)"
            ),
        }
    }

    /// The answers to the questions of the earlier run `previous`.
    pub fn answers(&mut self, previous: &Path) -> Result<String> {
        self.asker.answers(previous)
    }
}

/// Asks on the terminal: questions on stderr, answers from stdin.
pub struct Terminal;

/// Where the questions go: a conversation with the user, not a diagnostic,
/// so not through `crate::diag` (a question ends without a line break).
#[expect(
    clippy::disallowed_methods,
    reason = "questions to the user are not diagnostics; see `crate::diag`"
)]
fn stderr() -> io::Stderr {
    io::stderr()
}

/// Whether questions can be asked: stdin and stderr are both a terminal.
pub fn is_interactive() -> bool {
    io::stdin().is_terminal() && stderr().is_terminal()
}

impl Terminal {
    /// Ask a yes/no question (`[Y/n]`, yes by default); `false` on `n`, `no`
    /// or the end of input.
    pub fn confirm(question: &str) -> Result<bool> {
        let mut stderr = stderr();
        write!(stderr, "{question} [Y/n] ")?;
        stderr.flush()?;
        let mut line = String::new();
        if io::stdin().lock().read_line(&mut line)? == 0 {
            writeln!(stderr)?;
            return Ok(false);
        }
        Ok(!matches!(
            line.trim().to_ascii_lowercase().as_str(),
            "n" | "no"
        ))
    }
}

impl Ask for Terminal {
    fn ask(&mut self, question: &str) -> Result<String> {
        let mut stderr = stderr();
        write!(stderr, "{question}: ")?;
        stderr.flush()?;
        let mut line = String::new();
        io::stdin().lock().read_line(&mut line)?;
        Ok(line.trim().to_owned())
    }

    /// Show which run is being continued and read lines up to one holding a
    /// single `.` (or end of input). Without a terminal, say how else.
    fn answers(&mut self, previous: &Path) -> Result<String> {
        let stdin = io::stdin();
        if !stdin.is_terminal() {
            bail!(
                "`--resume-clarification` asks for the answers on a terminal and none is attached; write them to a file and pass `--clarification-response <file>`"
            );
        }
        let mut stderr = stderr();
        writeln!(
            stderr,
            "Continuing `{}`. Its questions are in its report (`{}`).\nType your answers; end with a line holding a single `.`:",
            previous.display(),
            crate::run::layout::RunLayout::of(previous)
                .report_dir()
                .display()
        )?;
        let mut answers = String::new();
        for line in stdin.lock().lines() {
            let line = line?;
            if line.trim() == "." {
                break;
            }
            answers.push_str(&line);
            answers.push('\n');
        }
        Ok(answers)
    }
}
