//! Asking the person at the terminal for what the flags left out: a missing
//! required value, or the answers `--resume-clarification` continues with.
//!
//! Settings resolution asks through [`Prompt`], which also words the usage
//! error when it may not ask (`--yes`, no terminal). Behind it the [`Ask`]
//! trait lets tests script the answers; only [`Terminal`] touches stdin and
//! stderr.

use std::fmt::Write as _;
use std::io::{self, BufRead, IsTerminal, Write};
use std::path::Path;

use anyhow::{Result, bail};

/// How many answers one question takes before okstra gives up on it.
const MAX_TRIES: usize = 5;

/// Something that can ask the user for a value.
pub trait Ask {
    /// A missing required value; `question` is the whole prompt (its name,
    /// choices and default), as [`Question::render`] words it.
    fn ask(&mut self, question: &str) -> Result<String>;

    /// The answers to the questions of the earlier run `previous`, as typed
    /// (possibly blank: the caller decides what that means).
    fn answers(&mut self, previous: &Path) -> Result<String>;

    /// Tell the person being asked why an answer was refused.
    fn tell(&mut self, line: &str) -> Result<()> {
        let _ = line;
        Ok(())
    }
}

/// One question about a missing value: which flag it fills, what is
/// accepted, the choices (a closed set) and the default (taken on Enter).
#[derive(Debug, Clone, Default)]
pub struct Question<'q> {
    pub flag: &'q str,
    /// What an answer looks like, when there are no choices.
    pub hint: Option<&'q str>,
    pub choices: &'q [&'q str],
    pub default: Option<String>,
}

impl Question<'_> {
    /// The prompt: the choices one a line, numbered, then `flag [default]: `.
    pub fn render(&self) -> String {
        let mut text = String::new();
        if !self.choices.is_empty() {
            let _ = writeln!(text, "{}, one of:", self.flag);
            for (number, choice) in self.choices.iter().enumerate() {
                let mark = if self.default.as_deref() == Some(*choice) {
                    " (default)"
                } else {
                    ""
                };
                let _ = writeln!(text, "  {}) {choice}{mark}", number + 1);
            }
        }
        text.push_str(self.flag);
        if let Some(hint) = self.hint {
            let _ = write!(text, " ({hint})");
        }
        if let Some(default) = &self.default {
            let _ = write!(text, " [{default}]");
        }
        text
    }

    /// An answer as typed: blank takes the default, a choice's number
    /// picks the choice.
    fn interpret(&self, typed: &str) -> Option<String> {
        let typed = typed.trim();
        if typed.is_empty() {
            return self.default.clone();
        }
        let picked = typed
            .parse::<usize>()
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| self.choices.get(i));
        Some(picked.map_or_else(|| typed.to_owned(), |c| (*c).to_owned()))
    }
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
    /// `value` checked by `check`; without one, on a terminal, the answer to
    /// `question`, asked again (saying why) until `check` accepts one — an
    /// earlier answer is never lost to a later bad one. Without a terminal
    /// (or with `--yes`) a missing value is a usage error.
    pub fn checked<T>(
        &mut self,
        question: &Question<'_>,
        value: Option<String>,
        check: impl Fn(&str) -> Result<T>,
    ) -> Result<T> {
        let flag = question.flag;
        if let Some(value) = value {
            return check(&value);
        }
        if !self.interactive {
            if self.yes {
                bail!("missing required argument `--{flag}` (`--yes` never prompts)");
            }
            bail!(
                "missing required argument `--{flag}` (no terminal to ask on; pass it on the command line)"
            );
        }
        let prompt = question.render();
        for _ in 0..MAX_TRIES {
            let typed = self.asker.ask(&prompt)?;
            let Some(answer) = question.interpret(&typed) else {
                self.asker.tell(&format!("`--{flag}` needs an answer"))?;
                continue;
            };
            match check(&answer) {
                Ok(value) => return Ok(value),
                Err(err) => self.asker.tell(&format!("{err:#}; try again"))?,
            }
        }
        bail!("no acceptable answer for `--{flag}` after {MAX_TRIES} tries")
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
        // One write: a terminal's echo of what the person typed ahead can
        // land between two writes, but never inside one.
        stderr.write_all(format!("{question} [Y/n] ").as_bytes())?;
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
        // One write, as in `confirm`.
        stderr.write_all(format!("{question}: ").as_bytes())?;
        stderr.flush()?;
        let mut line = String::new();
        if io::stdin().lock().read_line(&mut line)? == 0 {
            writeln!(stderr)?;
            bail!("the input ended before the question was answered");
        }
        Ok(line.trim().to_owned())
    }

    fn tell(&mut self, line: &str) -> Result<()> {
        let mut stderr = stderr();
        writeln!(stderr, "  {}", crate::fsread::escape(line))?;
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Types the scripted answers in order and keeps what it was told.
    struct Script {
        typed: Vec<&'static str>,
        asked: Vec<String>,
        told: Vec<String>,
    }
    impl Ask for Script {
        fn ask(&mut self, question: &str) -> Result<String> {
            self.asked.push(question.to_owned());
            if self.typed.is_empty() {
                bail!("the input ended");
            }
            Ok(self.typed.remove(0).to_owned())
        }
        fn answers(&mut self, _: &Path) -> Result<String> {
            bail!("not asked here")
        }
        fn tell(&mut self, line: &str) -> Result<()> {
            self.told.push(line.to_owned());
            Ok(())
        }
    }

    fn slug(value: &str) -> Result<String> {
        if crate::slug::is_slug(value) {
            Ok(value.to_owned())
        } else {
            bail!("invalid value `{value}` for `--task-id`: expected a safe slug")
        }
    }

    #[test]
    fn a_bad_answer_is_asked_again_and_said_why() {
        let mut script = Script {
            typed: vec!["first look", "", "first-look"],
            asked: Vec::new(),
            told: Vec::new(),
        };
        let mut prompt = Prompt {
            yes: false,
            interactive: true,
            asker: &mut script,
        };
        let question = Question {
            flag: "task-id",
            hint: Some("a slug"),
            ..Question::default()
        };
        assert_eq!(prompt.checked(&question, None, slug).unwrap(), "first-look");
        assert_eq!(script.asked, ["task-id (a slug)"; 3]);
        assert_eq!(
            script.told,
            [
                "invalid value `first look` for `--task-id`: expected a safe slug; try again",
                "`--task-id` needs an answer"
            ]
        );
    }

    #[test]
    fn choices_are_listed_and_picked_by_number_or_default() {
        let question = Question {
            flag: "task-type",
            choices: &["error-analysis", "project-analysis"],
            default: Some("project-analysis".into()),
            ..Question::default()
        };
        assert_eq!(
            question.render(),
            "task-type, one of:\n  1) error-analysis\n  2) project-analysis (default)\ntask-type [project-analysis]"
        );
        assert_eq!(question.interpret("1").as_deref(), Some("error-analysis"));
        assert_eq!(question.interpret(" ").as_deref(), Some("project-analysis"));
        assert_eq!(question.interpret("9").as_deref(), Some("9"));
    }

    #[test]
    fn without_a_terminal_a_missing_value_is_a_usage_error() {
        let mut script = Script {
            typed: Vec::new(),
            asked: Vec::new(),
            told: Vec::new(),
        };
        let mut prompt = Prompt {
            yes: true,
            interactive: false,
            asker: &mut script,
        };
        let question = Question {
            flag: "task-id",
            ..Question::default()
        };
        let err = prompt.checked(&question, None, slug).unwrap_err();
        assert_eq!(
            err.to_string(),
            "missing required argument `--task-id` (`--yes` never prompts)"
        );
        assert!(script.asked.is_empty());
    }
}
