//! The per-user index of runs: one JSON line per rendered run, appended to
//! `$XDG_STATE_HOME/okstra/runs.jsonl` (default
//! `~/.local/state/okstra/runs.jsonl`), so `okstra usage --since 7d` can
//! find every run of the user without knowing their projects.
//!
//! A line only points at a run folder; the folder stays the truth (a run
//! since removed is skipped). Writing is best effort — a render never fails
//! because the index could not be written, it says so — and the index is
//! read whole but bounded, a damaged line skipped.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Version of an index line.
const LINE_VERSION: u32 = 1;
/// The index's file name in okstra's state folder.
const FILE_NAME: &str = "runs.jsonl";

/// One run, as the index records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub schema_version: u32,
    pub run_dir: PathBuf,
    pub project_root: PathBuf,
    pub task_key: String,
    pub task_type: String,
    pub created_at: String,
}

/// `$XDG_STATE_HOME/okstra/runs.jsonl`, else `~/.local/state/okstra/runs.jsonl`
/// (relative values ignored, as the XDG spec asks).
pub fn path(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    crate::user_dirs::state_dir(&|name| env(name).map(Into::into)).map(|dir| dir.join(FILE_NAME))
}

/// Record a rendered run; a failure is a warning, never the render's end.
pub fn record(
    run_dir: &Path,
    project_root: &Path,
    task_key: &str,
    task_type: &str,
    created_at: &str,
) {
    let env = |name: &str| std::env::var(name).ok();
    let Some(index) = path(&env) else {
        return;
    };
    let entry = Entry {
        schema_version: LINE_VERSION,
        run_dir: run_dir.to_path_buf(),
        project_root: project_root.to_path_buf(),
        task_key: task_key.to_owned(),
        task_type: task_type.to_owned(),
        created_at: created_at.to_owned(),
    };
    let written = index
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| {
            crate::durable::append_line(&index, |_| {
                serde_json::to_vec(&entry).map_err(std::io::Error::other)
            })
        });
    if let Err(err) = written {
        crate::diag::warning(format_args!(
            "cannot add the run to the index of runs `{}` (`okstra usage --since` will not find it): {err}",
            index.display()
        ));
    }
}

/// Every run the index holds (each once, oldest first).
pub fn read(env: &dyn Fn(&str) -> Option<String>) -> Vec<Entry> {
    let Some(index) = path(env) else {
        return Vec::new();
    };
    let bytes = match crate::fsread::read_no_follow(&index, crate::fsread::Kind::Events) {
        Ok(bytes) => bytes,
        Err(err) if err.is_not_found() => return Vec::new(),
        Err(err) => {
            crate::diag::warning(format_args!(
                "the index of runs cannot be read ({:#}); no run is counted from it",
                anyhow::Error::new(err)
            ));
            return Vec::new();
        }
    };
    let mut seen = std::collections::BTreeSet::new();
    String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|line| serde_json::from_str::<Entry>(line).ok())
        .filter(|entry| entry.schema_version == LINE_VERSION && entry.is_confined())
        .filter(|entry| seen.insert(entry.run_dir.clone()))
        .collect()
}

impl Entry {
    /// Whether the line names a run folder where okstra makes them: an
    /// absolute path, no `..`, under its project's `.okstra/`, and no
    /// symlink on the way (the folder is what it says). A crafted or stale
    /// line is skipped, so the index cannot lead a read outside runs.
    fn is_confined(&self) -> bool {
        use std::path::Component;
        let plain = |path: &Path| {
            path.is_absolute()
                && path
                    .components()
                    .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
        };
        plain(&self.run_dir)
            && plain(&self.project_root)
            && self
                .run_dir
                .strip_prefix(self.project_root.join(crate::confine::OKSTRA_DIR))
                .is_ok_and(|rest| rest.components().count() > 0)
            && std::fs::canonicalize(&self.run_dir).is_ok_and(|real| real == self.run_dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_lives_in_the_state_folder() {
        let env = |name: &str| match name {
            "HOME" => Some("/h".to_owned()),
            "XDG_STATE_HOME" => Some("relative".to_owned()),
            _ => None,
        };
        assert_eq!(
            path(&env),
            Some(PathBuf::from("/h/.local/state/okstra/runs.jsonl"))
        );
        let xdg = |name: &str| (name == "XDG_STATE_HOME").then(|| "/s".to_owned());
        assert_eq!(path(&xdg), Some(PathBuf::from("/s/okstra/runs.jsonl")));
    }

    #[test]
    fn damaged_repeated_and_crafted_lines_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let state = base.join("state").to_str().unwrap().to_owned();
        let env = move |name: &str| (name == "XDG_STATE_HOME").then(|| state.clone());
        let index = path(&env).unwrap();
        std::fs::create_dir_all(index.parent().unwrap()).unwrap();
        let project = base.join("p");
        let runs = project.join(".okstra/tasks/a/b/c");
        for run in ["r1", "r2"] {
            std::fs::create_dir_all(runs.join(run)).unwrap();
        }
        std::fs::create_dir_all(base.join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(base.join("elsewhere"), runs.join("link")).unwrap();
        let line = |run: &Path, root: &Path| {
            let entry = Entry {
                schema_version: LINE_VERSION,
                run_dir: run.to_path_buf(),
                project_root: root.to_path_buf(),
                task_key: "a/b/c".into(),
                task_type: "project-analysis".into(),
                created_at: "2026-12-01T10:00:00.000Z".into(),
            };
            serde_json::to_string(&entry).unwrap() + "\n"
        };
        let lines = [
            line(&runs.join("r1"), &project),
            "{torn\n".to_owned(),
            line(&runs.join("r1"), &project),
            // Outside the project's `.okstra/`, through `..`, through a
            // symlink, relative, or the `.okstra/` folder itself.
            line(&base.join("elsewhere"), &project),
            line(&runs.join("r2/../../../../../../elsewhere"), &project),
            line(&runs.join("link"), &project),
            line(Path::new("p/.okstra/tasks/a/b/c/r2"), Path::new("p")),
            line(&project.join(".okstra"), &project),
            line(&base.join("elsewhere"), &base.join("elsewhere")),
            line(&runs.join("r2"), &project),
        ];
        std::fs::write(&index, lines.concat()).unwrap();
        let found: Vec<PathBuf> = read(&env).into_iter().map(|e| e.run_dir).collect();
        assert_eq!(found, [runs.join("r1"), runs.join("r2")]);
    }
}
