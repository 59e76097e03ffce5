//! Finding earlier runs of a task key: the latest run of given task types
//! (for `--resume-clarification` and continuations) and the next phase a
//! finished run recommends (`workflow.nextRecommendedPhase` in its report).
//!
//! Only run folders with a readable run manifest count. Their order is the
//! manifest's `createdAt`; runs created within the same second (scripts,
//! tests) are ordered by when their manifest was written, since the
//! sequence number counts per task type and cannot order runs of different
//! types. File times never override `createdAt`, so a copied `.okstra/`
//! (which resets them) keeps its order to the second.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{Result, bail};
use serde::Deserialize;
use serde_json::Value;

use crate::catalog::TaskType;
use crate::settings::TaskKey;

/// A run folder of a task key, as its manifest describes it.
#[derive(Debug, Clone)]
pub struct RunRef {
    pub dir: PathBuf,
    pub task_type: TaskType,
    pub created_at: String,
    pub sequence: u64,
    /// When the run manifest was written; only breaks `createdAt` ties.
    pub written: Option<SystemTime>,
}

/// The run-manifest fields that order and classify a run.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RunHead {
    task_type: String,
    created_at: String,
    sequence: u64,
}

/// Every run of `key` under `project_root`, oldest first.
pub fn runs(project_root: &Path, key: &TaskKey) -> Vec<RunRef> {
    let task_dir = project_root.join(".okstra").join(key.relative_dir());
    let Ok(entries) = fs::read_dir(&task_dir) else {
        return Vec::new();
    };
    let mut runs: Vec<RunRef> = entries
        .flatten()
        .filter_map(|entry| {
            let dir = entry.path();
            let path = dir.join("run-manifest.json");
            // Only the head is deserialised; the roster and paths are skipped.
            let head: RunHead = serde_json::from_slice(&fs::read(&path).ok()?).ok()?;
            Some(RunRef {
                task_type: head.task_type.parse().ok()?,
                created_at: head.created_at,
                sequence: head.sequence,
                written: fs::metadata(&path).and_then(|m| m.modified()).ok(),
                dir,
            })
        })
        .collect();
    runs.sort_by(|a, b| {
        (a.created_at.as_str(), a.written, a.sequence, &a.dir).cmp(&(
            b.created_at.as_str(),
            b.written,
            b.sequence,
            &b.dir,
        ))
    });
    runs
}

/// The latest run in `history` (oldest first) whose task type satisfies `wanted`.
pub fn latest(history: &[RunRef], wanted: impl Fn(TaskType) -> bool) -> Option<&RunRef> {
    history.iter().rev().find(|run| wanted(run.task_type))
}

/// The task type the latest finished run in `history` recommends next, if
/// any. A finished run is one with a `report/data.json`.
pub fn next_phase(history: &[RunRef]) -> Result<Option<TaskType>> {
    for run in history.iter().rev() {
        let data = run.dir.join("report").join("data.json");
        let Ok(bytes) = fs::read(&data) else {
            continue;
        };
        let Ok(report) = serde_json::from_slice::<Value>(&bytes) else {
            bail!(
                "`{}` is not valid JSON, so the next phase cannot be read from it; pass `--task-type`",
                data.display()
            );
        };
        let Some(phase) = report["workflow"]["nextRecommendedPhase"].as_str() else {
            return Ok(None);
        };
        return match phase.parse::<TaskType>() {
            Ok(task_type) => Ok(Some(task_type)),
            Err(accepted) => bail!(
                "`workflow.nextRecommendedPhase` in `{}` is `{phase}`, expected {accepted}; pass `--task-type`",
                data.display()
            ),
        };
    }
    Ok(None)
}

/// Turn `--resume-clarification` into a clarification response: show which
/// run is being continued and read the answers from the terminal (ended by a
/// line with a single `.` or end of input). Other settings pass through.
pub fn with_clarification(
    mut settings: crate::settings::Settings,
) -> Result<crate::settings::Settings> {
    use std::io::{BufRead, IsTerminal, Write};

    if settings.continuation != crate::settings::Continuation::ResumeClarification {
        return Ok(settings);
    }
    let Some(previous) = settings.previous_run.as_deref() else {
        bail!("`--resume-clarification` found no earlier run to continue");
    };
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        bail!(
            "`--resume-clarification` asks for the answers on a terminal and none is attached; write them to a file and pass `--clarification-response <file>`"
        );
    }
    let mut stderr = std::io::stderr();
    writeln!(
        stderr,
        "Continuing `{}`. Its questions are in its report (`{}`).\nType your answers; end with a line holding a single `.`:",
        previous.display(),
        previous.join("report").display()
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
    if answers.trim().is_empty() {
        bail!("no answers were given; nothing to continue with");
    }
    settings.continuation = crate::settings::Continuation::ClarificationAnswers(answers);
    Ok(settings)
}
