//! The run lifecycle after `--render-only`: lead events (`okstra event`), the
//! status board (`okstra status`), the reaper (`okstra reap`).
//!
//! Everything here *reads* what others own: the run manifest (written by the
//! bundle), status sidecars (written by provider-exec, read defensively since
//! it may be older or newer than us), heartbeat files and Result Paths
//! (written by workers). The only files written here are the lead events log
//! (appended under a lock) and, by `reap --execute`, the sidecars of wrappers
//! that died without finishing them.
//!
//! Submodules: `event` appends events, `status` classifies workers and draws
//! the board, `reap` stops orphaned process groups, `process` knows how to
//! tell whether a recorded pid is still the process we recorded, `sidecar`
//! reads status sidecars, `clock` parses and prints timestamps.

mod clock;
mod event;
mod process;
mod reap;
mod sidecar;
mod status;

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

pub use event::event_command;
pub use reap::reap_command;
pub use status::status_command;

/// The folder, under a project root, that holds every okstra run.
const OKSTRA_DIR: &str = ".okstra";

/// Why a run folder could not be read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("`{}` is not an okstra run folder: cannot read `run-manifest.json`", .dir.display())]
    NotARun {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("run manifest `{}` is not valid JSON", .path.display())]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("run manifest `{}` has no `{field}`", .path.display())]
    Missing { path: PathBuf, field: &'static str },
}

/// The parts of a run manifest the lifecycle commands use.
#[derive(Debug, Clone)]
#[expect(
    clippy::struct_field_names,
    reason = "`run_id` mirrors the manifest's `runId`"
)]
pub struct Run {
    pub dir: PathBuf,
    pub run_id: String,
    pub task_key: String,
    pub task_type: String,
    pub lead_events_path: PathBuf,
    pub assignments: Vec<Assignment>,
}

/// One worker assignment as the run manifest persists it.
#[derive(Debug, Clone)]
pub struct Assignment {
    pub dispatch_name: String,
    pub worker_id: String,
    pub role: String,
    pub provider: String,
    pub model: String,
    pub runner: String,
    pub prompt_path: PathBuf,
    pub result_path: Option<PathBuf>,
    pub worker_results_path: Option<PathBuf>,
    pub heartbeat_path: Option<PathBuf>,
}

impl Run {
    /// Read `<dir>/run-manifest.json`.
    pub fn load(dir: &Path) -> Result<Run, Error> {
        let path = dir.join("run-manifest.json");
        let bytes = sidecar::read_small(&path).map_err(|source| Error::NotARun {
            dir: dir.to_path_buf(),
            source,
        })?;
        let manifest: Value = serde_json::from_slice(&bytes).map_err(|source| Error::Json {
            path: path.clone(),
            source,
        })?;
        let text = |field: &'static str| -> Result<String, Error> {
            manifest[field]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| Error::Missing {
                    path: path.clone(),
                    field,
                })
        };
        let run_id = text("runId")?;
        let task_key = text("taskKey").unwrap_or_default();
        let task_type = text("taskType").unwrap_or_default();
        // Paths in the manifest are absolute; a relative one (hand-made or a
        // moved run) is taken relative to the run folder.
        let lead_events_path = manifest["leadEventsPath"]
            .as_str()
            .map_or_else(|| dir.join("state/lead-events.jsonl"), |p| dir.join(p));
        let assignments = manifest["assignments"]
            .as_array()
            .ok_or_else(|| Error::Missing {
                path: path.clone(),
                field: "assignments",
            })?
            .iter()
            .filter_map(|a| Assignment::from_json(dir, a))
            .collect();
        Ok(Run {
            dir: dir.to_path_buf(),
            run_id,
            task_key,
            task_type,
            lead_events_path,
            assignments,
        })
    }
}

impl Assignment {
    fn from_json(dir: &Path, value: &Value) -> Option<Assignment> {
        let text = |field: &str| value[field].as_str().unwrap_or_default().to_owned();
        let path = |field: &str| value[field].as_str().map(|p| dir.join(p));
        Some(Assignment {
            dispatch_name: value["dispatchName"].as_str()?.to_owned(),
            worker_id: text("workerId"),
            role: text("role"),
            provider: text("provider"),
            model: text("modelExecutionValue"),
            runner: text("runner"),
            prompt_path: path("promptPath")?,
            result_path: path("resultPath"),
            worker_results_path: path("workerResultsPath"),
            heartbeat_path: path("heartbeatPath"),
        })
    }
}

/// Every candidate run folder under `<project_root>/.okstra/tasks/<p>/<g>/<t>/`,
/// sorted by path so output is stable.
pub fn run_dirs(project_root: &Path) -> Vec<PathBuf> {
    let mut level = vec![project_root.join(OKSTRA_DIR).join("tasks")];
    // project-id / task-group / task-id / run
    for _ in 0..4 {
        let mut next = Vec::new();
        for dir in level {
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            next.extend(
                entries
                    .flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path()),
            );
        }
        level = next;
    }
    // Folders without a manifest are filtered when loading (one open
    // instead of a stat and an open per run).
    level.sort();
    level
}

/// The project root to use: the flag, else the current directory.
pub fn project_root(flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    use anyhow::Context;
    let root = match flag {
        Some(path) => path.to_path_buf(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    if !root.is_dir() {
        anyhow::bail!(
            "invalid value `{}` for `--project-root`: expected an existing directory",
            root.display()
        );
    }
    Ok(root)
}
