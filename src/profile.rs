//! Which profile a run follows, and the one `okstra ask` picks for a
//! question.
//!
//! A profile is a task type, or a variant of one made for one kind of
//! question (`catalog::Focus`). `project-analysis` answers "how does this
//! work?" with a map of the project; its defect hunt (`--focus defects`)
//! answers "find the bugs" with defects only: each claim a defect with the
//! input that triggers it, what happens and what should, a reproduction
//! where one can run, ranked by how likely a user hits it; the description
//! shrinks to one paragraph of scope and no strengths are asked for. It
//! keeps the task type (so the report, its verdict tokens and every rule of
//! the task type stay), its own templates are `defect-hunt`.
//!
//! [`suggest`] reads a question without any model call: one that asks why
//! something fails (a failure word beside `why`, `what causes`, `root
//! cause`, or an error's own text: a traceback, `exception`, `panicked`) is
//! `error-analysis`; one that asks for bugs, defects, vulnerabilities or
//! the like is the defect hunt; anything else `project-analysis`.

use crate::catalog::{Focus, TaskType};

/// The task type a question gets when none is given (`okstra ask`, and the
/// default a prompt offers).
pub const DEFAULT_TASK_TYPE: TaskType = TaskType::ProjectAnalysis;

/// A task type and the variant of its profile a run follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    pub task_type: TaskType,
    pub focus: Option<Focus>,
}

impl Profile {
    /// The task type's own profile.
    pub fn of(task_type: TaskType) -> Profile {
        Profile {
            task_type,
            focus: None,
        }
    }

    /// The stem of its templates (`prompts/profiles/<stem>.md.j2`, its
    /// result sections, its verdict): the task type's, or the variant's.
    pub fn stem(self) -> &'static str {
        match (self.task_type, self.focus) {
            (TaskType::ProjectAnalysis, Some(Focus::Defects)) => "defect-hunt",
            (task_type, _) => task_type.as_str(),
        }
    }

    /// How people read it: `project-analysis`, `project-analysis (defect
    /// hunt)`.
    pub fn name(self) -> String {
        match self.focus {
            Some(Focus::Defects) => format!("{} (defect hunt)", self.task_type),
            None => self.task_type.to_string(),
        }
    }

    /// The task types a focus is a variant of.
    pub fn allows(task_type: TaskType, focus: Focus) -> bool {
        match focus {
            Focus::Defects => task_type == TaskType::ProjectAnalysis,
        }
    }
}

/// The profile a question suggests, and why, in a few words for the plan
/// `okstra ask` prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suggestion {
    pub profile: Profile,
    pub why: String,
}

/// Words that ask for defects.
const DEFECT_WORDS: &[&str] = &[
    "bug",
    "bugs",
    "buggy",
    "defect",
    "defects",
    "defective",
    "vulnerability",
    "vulnerabilities",
    "vulnerable",
    "exploit",
    "exploits",
    "exploitable",
    "cve",
    "injection",
    "flaw",
    "flaws",
    "miscompute",
    "miscomputes",
];
/// Phrases that ask for defects.
const DEFECT_PHRASES: &[&str] = &[
    "race condition",
    "memory leak",
    "security hole",
    "security issue",
    "correctness issue",
    "correctness problem",
    "what can go wrong",
    "what could go wrong",
];
/// Words that say something fails.
const FAILURE_WORDS: &[&str] = &[
    "fail",
    "fails",
    "failed",
    "failing",
    "failure",
    "failures",
    "error",
    "errors",
    "crash",
    "crashes",
    "crashed",
    "crashing",
    "broken",
    "breaks",
    "hang",
    "hangs",
    "hanging",
    "stuck",
    "wrong",
    "incorrect",
    "slow",
    "leaks",
    "leaking",
    "lost",
    "loses",
    "corrupt",
    "corrupted",
    "corrupts",
    "oversold",
    "oversells",
    "flaky",
    "timeout",
    "deadlock",
    "deadlocks",
    "bug",
    "panics",
];
/// Phrases that ask for the cause of something.
const CAUSE_PHRASES: &[&str] = &["why ", "what causes", "cause of", "root cause", "how come"];
/// Phrases that say something does not work.
const FAILURE_PHRASES: &[&str] = &[
    "doesn't work",
    "does not work",
    "not working",
    "stopped working",
    "times out",
];
/// An error's own text in the question: a symptom to explain.
const ERROR_TEXT: &[&str] = &[
    "traceback (most recent call last)",
    "stack trace",
    "exception",
    "panicked at",
    "segmentation fault",
    "exit code",
    "exit status",
];

/// The profile `question` suggests.
pub fn suggest(question: &str) -> Suggestion {
    let lower = question.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|word| !word.is_empty())
        .collect();
    let word_in = |list: &[&'static str]| -> Option<&'static str> {
        list.iter().copied().find(|w| words.contains(w))
    };
    let phrase_in = |list: &[&'static str]| -> Option<&'static str> {
        list.iter().copied().find(|p| lower.contains(p))
    };
    let cause = phrase_in(CAUSE_PHRASES);
    let failure = word_in(FAILURE_WORDS).or_else(|| phrase_in(FAILURE_PHRASES));
    if let Some(text) = phrase_in(ERROR_TEXT) {
        return Suggestion {
            profile: Profile::of(TaskType::ErrorAnalysis),
            why: format!("the question carries an error to explain (\"{text}\")"),
        };
    }
    if let (Some(cause), Some(failure)) = (cause, failure) {
        return Suggestion {
            profile: Profile::of(TaskType::ErrorAnalysis),
            why: format!(
                "the question asks why something fails (\"{}\", \"{failure}\")",
                cause.trim()
            ),
        };
    }
    if let Some(asked) = word_in(DEFECT_WORDS).or_else(|| phrase_in(DEFECT_PHRASES)) {
        return Suggestion {
            profile: Profile {
                task_type: TaskType::ProjectAnalysis,
                focus: Some(Focus::Defects),
            },
            why: format!("the question asks for defects (\"{asked}\")"),
        };
    }
    Suggestion {
        profile: Profile::of(DEFAULT_TASK_TYPE),
        why: "the question asks for neither defects nor why something fails".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_suggests_the_profile_made_for_it() {
        let hunt = Profile {
            task_type: TaskType::ProjectAnalysis,
            focus: Some(Focus::Defects),
        };
        let map = Profile::of(TaskType::ProjectAnalysis);
        let cause = Profile::of(TaskType::ErrorAnalysis);
        for (question, profile, why) in [
            (
                "Find bugs in src/inventory.py",
                hunt,
                "the question asks for defects (\"bugs\")",
            ),
            (
                "Find correctness bugs in a.py and b.py: inputs for which a public function returns a wrong or malformed string",
                hunt,
                "the question asks for defects (\"bugs\")",
            ),
            (
                "Audit the upload handler for vulnerabilities",
                hunt,
                "the question asks for defects (\"vulnerabilities\")",
            ),
            (
                "Is there a race condition in the cache?",
                hunt,
                "the question asks for defects (\"race condition\")",
            ),
            (
                "Why are reservations oversold?",
                cause,
                "the question asks why something fails (\"why\", \"oversold\")",
            ),
            (
                "Why does the build fail on CI? Find the bug.",
                cause,
                "the question asks why something fails (\"why\", \"fail\")",
            ),
            (
                "What causes the checkout to time out? It times out after 30 s.",
                cause,
                "the question asks why something fails (\"what causes\", \"times out\")",
            ),
            (
                "This raises: Traceback (most recent call last): KeyError",
                cause,
                "the question carries an error to explain (\"traceback (most recent call last)\")",
            ),
            (
                "How do reservations work?",
                map,
                "the question asks for neither defects nor why something fails",
            ),
            (
                "Why does the cache use an LRU policy?",
                map,
                "the question asks for neither defects nor why something fails",
            ),
            (
                "Give me a map of the debugger module",
                map,
                "the question asks for neither defects nor why something fails",
            ),
        ] {
            let suggested = suggest(question);
            assert_eq!(suggested.profile, profile, "{question}");
            assert_eq!(suggested.why, why, "{question}");
        }
    }

    #[test]
    fn a_variant_has_its_own_templates_and_name() {
        let hunt = Profile {
            task_type: TaskType::ProjectAnalysis,
            focus: Some(Focus::Defects),
        };
        assert_eq!(hunt.stem(), "defect-hunt");
        assert_eq!(hunt.name(), "project-analysis (defect hunt)");
        assert_eq!(
            Profile::of(TaskType::ErrorAnalysis).stem(),
            "error-analysis"
        );
        assert!(Profile::allows(TaskType::ProjectAnalysis, Focus::Defects));
        assert!(!Profile::allows(TaskType::ErrorAnalysis, Focus::Defects));
    }
}
