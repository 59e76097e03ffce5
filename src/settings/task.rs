//! What a run is about: its task key, task type, focus and brief, from the
//! flags, the previous run, the question, or a prompt on a terminal.

use super::{DEFAULT_TASK_GROUP, Inputs, Request, default_project_id, parse, unique_task_id};
use crate::ask::{Prompt, Question};
use crate::catalog::{Focus, TaskType};
use crate::cli::LaunchArgs;
use crate::fsread;
use crate::profile::DEFAULT_TASK_TYPE;
use crate::resume::RunRef;
use crate::task_key::TaskKey;
use anyhow::{Context, Result, bail};
use parse::{absolute, check_slug, parse_task_key, parse_value, read_nonempty};
use std::path::{Path, PathBuf};

/// What a slug looks like, for a prompt.
const SLUG_HINT: &str = "lowercase letters, digits, `.`, `_`, `-`";

/// `--task-key`, or `--project-id`, `--task-group` and `--task-id`. On a
/// terminal each missing part is asked with a default: the repository's
/// name, [`DEFAULT_TASK_GROUP`], and a task id made from `brief`.
pub(super) fn task_key(
    args: &LaunchArgs,
    project_root: &Path,
    brief: Option<&str>,
    prompt: &mut Prompt<'_>,
) -> Result<TaskKey> {
    if let Some(joined) = &args.task_key {
        if args.project_id.is_some() || args.task_group.is_some() || args.task_id.is_some() {
            bail!(
                "`--task-key` cannot be combined with `--project-id`, `--task-group` or `--task-id`: give one form"
            );
        }
        return parse_task_key(joined);
    }
    let slug = |flag: &'static str, default: Option<String>| Question {
        flag,
        hint: Some(SLUG_HINT),
        choices: &[],
        default,
    };
    let project_id = prompt.checked(
        &slug("project-id", Some(default_project_id(project_root))),
        args.project_id.clone(),
        |v| check_slug("--project-id", v),
    )?;
    let task_group = prompt.checked(
        &slug("task-group", Some(DEFAULT_TASK_GROUP.to_owned())),
        args.task_group.clone(),
        |v| check_slug("--task-group", v),
    )?;
    let task_id = prompt.checked(
        &slug(
            "task-id",
            brief.map(|text| unique_task_id(project_root, &project_id, &task_group, text)),
        ),
        args.task_id.clone(),
        |v| check_slug("--task-id", v),
    )?;
    Ok(TaskKey {
        project_id,
        task_group,
        task_id,
    })
}

/// The run this one continues, from the task's history (oldest first):
/// clarification answers continue the latest phase that asks questions, an
/// approved plan the latest planning run, anything else the latest run.
pub(super) fn previous_run<'h>(
    history: &'h [RunRef],
    request: &Request,
    task_key: &TaskKey,
) -> Result<Option<&'h RunRef>> {
    Ok(match request {
        Request::ClarificationFile(_) | Request::ClarificationOnTerminal => Some(
            crate::resume::latest(history, TaskType::takes_clarification).with_context(|| {
                format!(
                    "task key `{}` has no requirements-discovery or error-analysis run to continue; start one first",
                    task_key.joined()
                )
            })?,
        ),
        Request::ApprovedPlan(_) => {
            crate::resume::latest(history, |t| t == TaskType::ImplementationPlanning)
        }
        Request::Fresh => crate::resume::latest(history, |_| true),
    })
}

/// `--task-type`; without it, what the run continues decides: an approved
/// plan is carried out by `implementation`, clarification answers continue
/// the phase that asked, otherwise the last finished run's recommendation.
pub(super) fn task_type(
    args: &LaunchArgs,
    inputs: Inputs<'_>,
    request: &Request,
    previous: Option<&RunRef>,
    history: &[RunRef],
    prompt: &mut Prompt<'_>,
) -> Result<TaskType> {
    let task_type = match (args.task_type.as_deref(), request) {
        (Some(raw), _) => parse_value::<TaskType>("--task-type", raw)?,
        (None, Request::ApprovedPlan(_)) => TaskType::Implementation,
        (None, Request::Fresh) => {
            if let Some(task_type) = crate::resume::next_phase(history)? {
                task_type
            } else if inputs.default_task_type && !prompt.interactive {
                inputs.suggested.map_or(DEFAULT_TASK_TYPE, |p| p.task_type)
            } else {
                let choices: Vec<&str> = TaskType::ALL.iter().map(|t| t.as_str()).collect();
                prompt.checked(
                    &Question {
                        flag: "task-type",
                        hint: None,
                        choices: &choices,
                        default: Some(
                            inputs
                                .suggested
                                .map_or(DEFAULT_TASK_TYPE, |p| p.task_type)
                                .as_str()
                                .to_owned(),
                        ),
                    },
                    None,
                    |raw| parse_value::<TaskType>("--task-type", raw),
                )?
            }
        }
        // Clarification answers: `previous` was found or refused already.
        (None, _) => previous
            .map(|run| run.task_type)
            .context("clarification answers need the run that asked; pass `--task-type`")?,
    };
    if matches!(request, Request::ApprovedPlan(_)) && task_type != TaskType::Implementation {
        bail!(
            "`--approved-plan` is carried out by an implementation run, not `--task-type {task_type}`: drop `--task-type` or pass `--task-type implementation`"
        );
    }
    Ok(task_type)
}

/// `--focus`, which must be a variant of `task_type`; without it, the
/// suggested profile's when the run takes its task type.
pub(super) fn focus(
    args: &LaunchArgs,
    inputs: Inputs<'_>,
    task_type: TaskType,
) -> Result<Option<Focus>> {
    let Some(raw) = args.focus.as_deref() else {
        return Ok(inputs
            .suggested
            .filter(|p| p.task_type == task_type)
            .and_then(|p| p.focus));
    };
    let focus = parse_value::<Focus>("--focus", raw)?;
    if !crate::profile::Profile::allows(task_type, focus) {
        bail!(
            "`--focus {focus}` is a variant of `project-analysis`, not of `{task_type}`: drop `--focus` or pass `--task-type project-analysis`"
        );
    }
    Ok(Some(focus))
}

/// The brief: `question` (text given inline or on stdin), else
/// `--task-brief`'s file (its absolute path and its text). On a terminal a
/// missing brief is asked for: the path of a file, or the question itself.
pub(super) fn task_brief(
    args: &LaunchArgs,
    question: Option<&str>,
    cwd: &Path,
    prompt: &mut Prompt<'_>,
) -> Result<(Option<PathBuf>, String)> {
    if let Some(text) = question {
        return inline_brief(text).map(|text| (None, text));
    }
    prompt.checked(
        &Question {
            flag: "task-brief",
            hint: Some("a file with the question, or the question itself"),
            choices: &[],
            default: None,
        },
        args.task_brief
            .as_ref()
            .map(|p| p.to_string_lossy().into_owned()),
        |answer| {
            let path = absolute(cwd, Path::new(answer));
            // Typed at the prompt, an answer that names no file is the
            // question; a flag's value is always a file.
            if args.task_brief.is_none() && !path.exists() && !looks_like_a_path(answer) {
                return inline_brief(answer).map(|text| (None, text));
            }
            read_nonempty("--task-brief", &path).map(|text| (Some(path), text))
        },
    )
}

/// A question given as text: not blank, and no longer than a brief file may be.
pub(super) fn inline_brief(text: &str) -> Result<String> {
    if text.trim().is_empty() {
        bail!(
            "the question is empty: expected a question, e.g. `okstra ask \"Why are reservations oversold?\"`"
        );
    }
    let limit = fsread::Kind::Brief.limit();
    if text.len() as u64 > limit {
        bail!(
            "the question is {} bytes: expected at most {limit} (put a longer brief in a file and pass `--task-brief`)",
            text.len()
        );
    }
    let mut text = text.to_owned();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

/// An answer meant as a file (it has a folder or a Markdown/text suffix),
/// so a missing one is an error, not a question.
pub(super) fn looks_like_a_path(answer: &str) -> bool {
    !answer.contains(char::is_whitespace)
        && (answer.contains('/')
            || [".md", ".txt", ".markdown"]
                .iter()
                .any(|suffix| answer.ends_with(suffix)))
}
