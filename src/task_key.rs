//! The task key: three slugs (`project-id/task-group/task-id`) naming a task,
//! and the folder under `.okstra/` where its runs live.
//!
//! `settings` checks each part against the slug rule (`crate::slug`) before
//! a `TaskKey` is built, so a key's folder never leaves `.okstra/`.

use std::path::{Path, PathBuf};

/// The three parts of a task key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskKey {
    pub project_id: String,
    pub task_group: String,
    pub task_id: String,
}

impl TaskKey {
    /// The joined form used by `--task-key` and in manifests.
    pub fn joined(&self) -> String {
        format!("{}/{}/{}", self.project_id, self.task_group, self.task_id)
    }

    /// The task's folder relative to `.okstra/`.
    pub fn relative_dir(&self) -> PathBuf {
        Path::new("tasks")
            .join(&self.project_id)
            .join(&self.task_group)
            .join(&self.task_id)
    }
}
