//! Finding earlier runs of a task key: the latest run of given task types
//! (for `--resume-clarification` and continuations) and the next phase a
//! finished run recommends (`workflow.nextRecommendedPhase` in its report).
//!
//! The task's run log (`run_log`) lists the runs okstra made, so no run
//! manifest is opened to find them; only a run folder with no line in the
//! log (copied in from elsewhere) is read from its manifest. Runs are ordered
//! by their manifest's `createdAt`; equal ones by the log's order, which is
//! the order they were made in (for unlogged runs, when the manifest was
//! written). A run counts only while its folder has a run manifest.
//!
//! Settings resolution reads the history through this module; it only reads
//! the disk and imports nothing from `settings`.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::catalog::TaskType;
use crate::run::Run;
use crate::run::layout::RunLayout;
use crate::run_log::TaskRuns;
use crate::task_key::TaskKey;
use crate::{confine, fsread};

/// A run folder of a task key.
#[derive(Debug, Clone)]
pub struct RunRef {
    pub dir: PathBuf,
    pub task_type: TaskType,
    pub created_at: String,
    /// Breaks `createdAt` ties.
    order: Order,
}

/// Where a run's creation order comes from, after `createdAt`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Order {
    /// Its line in the run log.
    Logged(usize),
    /// When its manifest was written, then its folder name.
    Unlogged(Option<SystemTime>, PathBuf),
}

/// Every run of `key` under `project_root`, oldest first.
pub fn runs(project_root: &Path, key: &TaskKey) -> Result<Vec<RunRef>> {
    let okstra_dir = confine::okstra_dir(project_root)?;
    confine::check_no_links(&okstra_dir, &key.relative_dir())?;
    let task_dir = okstra_dir.join(key.relative_dir());
    let task = TaskRuns::read(&task_dir).context("cannot read the task's run log")?;
    let mut logged = HashSet::new();
    let mut runs: Vec<RunRef> = Vec::with_capacity(task.folders.len());
    for (line, entry) in task.logged.iter().enumerate() {
        if !task.folders.contains(&entry.run_id) || !logged.insert(entry.run_id.as_str()) {
            continue;
        }
        let Ok(task_type) = entry.task_type.parse() else {
            continue;
        };
        runs.push(RunRef {
            dir: task_dir.join(&entry.run_id),
            task_type,
            created_at: entry.created_at.clone(),
            order: Order::Logged(line),
        });
    }
    for name in task
        .folders
        .iter()
        .filter(|name| !logged.contains(name.as_str()))
    {
        let dir = task_dir.join(name);
        // Unreadable (missing, special, oversized, not a manifest) is not a
        // run; nor is one without a task type and a creation time.
        let Ok(Run {
            task_type,
            created_at,
            ..
        }) = Run::open(&dir)
        else {
            continue;
        };
        let written = fs::metadata(RunLayout::of(&dir).run_manifest())
            .and_then(|m| m.modified())
            .ok();
        runs.push(RunRef {
            task_type,
            created_at,
            order: Order::Unlogged(written, dir.clone()),
            dir,
        });
    }
    runs.sort_by(|a, b| (&a.created_at, &a.order).cmp(&(&b.created_at, &b.order)));
    Ok(runs)
}

/// The latest run in `history` (oldest first) whose task type satisfies
/// `wanted` and whose folder still has its run manifest.
pub fn latest(history: &[RunRef], wanted: impl Fn(TaskType) -> bool) -> Option<&RunRef> {
    history
        .iter()
        .rev()
        .filter(|run| wanted(run.task_type))
        .find(|run| RunLayout::of(&run.dir).run_manifest().is_file())
}

/// The task type the latest finished run in `history` recommends next, if
/// any. A finished run is one with a `report/data.json`.
pub fn next_phase(history: &[RunRef]) -> Result<Option<TaskType>> {
    for run in history.iter().rev() {
        let data = RunLayout::of(&run.dir).report_data();
        let bytes = match fsread::read(&data, fsread::Kind::Report) {
            Ok(bytes) => bytes,
            Err(err) if err.is_not_found() => continue,
            Err(err) => {
                return Err(anyhow::Error::new(err)
                    .context("cannot read the next phase from the latest finished run"));
            }
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
