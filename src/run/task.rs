//! The task manifest (`task-manifest.json`): what was asked, by whom, with
//! which brief. The bundle writes it once (checked against
//! `task-manifest.schema.json` first); convergence and the run engine read
//! it here, typed.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::catalog::TaskType;
use crate::vocab::{ContinuationKind, Word};

/// The task manifest.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskManifest {
    pub schema_version: u32,
    pub okstra_version: String,
    pub created_at: String,
    pub task_key: String,
    pub project_id: String,
    pub task_group: String,
    pub task_id: String,
    pub task_type: TaskType,
    pub work_category: Option<String>,
    pub related_tasks: Vec<String>,
    pub directive: Option<String>,
    pub fix_cycle: bool,
    pub plan_verification: bool,
    pub project_root: PathBuf,
    pub task_brief: TaskBrief,
    pub continuation: Continuation,
}

/// The task brief: where it came from, the run's copy, its digest.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskBrief {
    pub source: PathBuf,
    /// The copy inside the run (`inputs/task-brief.md`).
    pub copy: PathBuf,
    pub sha256: String,
}

/// Whether this run continues an earlier one, and with what.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Continuation {
    pub kind: Word<ContinuationKind>,
    pub input_path: Option<PathBuf>,
    pub previous_run: Option<PathBuf>,
}

/// Read the task manifest at `path` (bounded, never through a symlink).
pub fn read(path: &Path) -> Result<TaskManifest> {
    let bytes = crate::fsread::read_no_follow(path, crate::fsread::Kind::Manifest)
        .with_context(|| format!("cannot read the task manifest `{}`", path.display()))?;
    serde_json::from_slice(&bytes).with_context(|| {
        format!(
            "the task manifest `{}` cannot be read as a task manifest",
            path.display()
        )
    })
}
