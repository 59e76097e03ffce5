//! The questions a run asks its user through the host lead: `okstra next`
//! hands each out as an `ask-user` task whose prompt is
//! `state/ask-<name>.md`, and the user's answer comes back with `okstra
//! submit <run> <name>` into `state/answer-<name>.md`.
//!
//! - `approval`: an implementation run without an approved plan asks
//!   before the Executor changes anything; an answer that starts with
//!   `yes` lets it start, anything else ends the run with nothing changed.
//! - `clarification`: a requirements-discovery or error-analysis run whose
//!   report leaves open questions (`task.openQuestions`) asks them once it
//!   is done; the answers file is what the next run takes as
//!   `--clarification-response` (and what `--resume-clarification` takes
//!   without asking again).

use std::path::PathBuf;

use anyhow::{Context, Result, bail};

use crate::run::Run;
use crate::run::events;
use crate::vocab::EventKind;
use crate::vocab::Question;

impl Question {
    /// The question named `name` (the dispatch name `okstra next` gives).
    pub fn named(name: &str) -> Option<Question> {
        name.parse().ok()
    }

    pub fn name(self) -> &'static str {
        self.as_str()
    }

    /// `state/ask-<name>.md`: what the lead asks.
    pub fn prompt_path(self, run: &Run) -> PathBuf {
        run.layout().state_dir().join(format!("ask-{self}.md"))
    }

    /// `state/answer-<name>.md`: what the user answered.
    pub fn answer_path(self, run: &Run) -> PathBuf {
        run.layout().state_dir().join(format!("answer-{self}.md"))
    }
}

/// Ask `question`: write its prompt (unchanged bytes are not rewritten).
pub fn ask(run: &Run, question: Question, text: &str) -> Result<PathBuf> {
    let path = question.prompt_path(run);
    let same = crate::fsread::read_no_follow(&path, crate::fsread::Kind::Brief)
        .is_ok_and(|old| old == text.as_bytes());
    if !same {
        crate::durable::write_atomic(&path, text.as_bytes())
            .with_context(|| format!("cannot write `{}`", path.display()))?;
        append(run, EventKind::AskUser, question, None);
    }
    Ok(path)
}

/// The user's answer to `question`, once there is one.
pub fn answered(run: &Run, question: Question) -> Option<String> {
    let bytes =
        crate::fsread::read_no_follow(&question.answer_path(run), crate::fsread::Kind::Brief)
            .ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Whether an approval answer lets the Executor start.
pub fn approves(answer: &str) -> bool {
    answer.trim_start().to_lowercase().starts_with("yes")
}

/// Record the user's answer to `question`: refused before the question was
/// asked, and a second, different answer is refused (the same one again is
/// fine). Returns the answer file.
pub fn answer(run: &Run, question: Question, message: &[u8]) -> Result<PathBuf> {
    if !question.prompt_path(run).is_file() {
        bail!(
            "this run has not asked `{question}`: `okstra next {}` names the questions to ask",
            run.dir.display()
        );
    }
    let text = std::str::from_utf8(message)
        .with_context(|| format!("the answer to `{question}` is not UTF-8 text"))?;
    if message.len() as u64 > crate::fsread::Kind::Brief.limit() {
        bail!(
            "the answer to `{question}` is {} bytes, over the {}-byte limit for a brief",
            message.len(),
            crate::fsread::Kind::Brief.limit()
        );
    }
    let path = question.answer_path(run);
    if let Some(old) = answered(run, question) {
        if old.as_bytes() == message {
            return Ok(path);
        }
        bail!(
            "`{question}` is already answered (`{}`); a second answer is refused",
            path.display()
        );
    }
    crate::durable::write_atomic(&path, message)
        .with_context(|| format!("cannot write `{}`", path.display()))?;
    append(run, EventKind::UserAnswer, question, Some(text));
    Ok(path)
}

fn append(run: &Run, kind: EventKind, question: Question, answer: Option<&str>) {
    let name = question.to_string();
    let bytes = answer.map(|answer| answer.len().to_string());
    let mut fields = vec![("name", name.as_str())];
    if let Some(bytes) = &bytes {
        fields.push(("bytes", bytes));
    }
    events::record(run, kind, &fields);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_approval() {
        assert_eq!(Question::named("approval"), Some(Question::Approval));
        assert_eq!(Question::named("claude-worker"), None);
        assert!(approves("  Yes, go ahead"));
        assert!(!approves("no"));
        assert!(!approves(""));
    }
}
