//! The run manifest as the run engine reads it: typed with the catalog's
//! enums and the bundle's own `Assignment`, every path re-rooted to where
//! the run folder is now (`run_paths`).
//!
//! The bundle writes the manifest; this is the typed reader for commands that
//! act on a run (`dispatch`, `await`). Fields okstra does not need here are
//! skipped, unknown ones ignored, so an older or newer manifest still loads.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::assign::Assignment;
use crate::catalog::TaskType;
use crate::run_paths::reroot;

/// The file name of a run's manifest, inside the run folder.
pub const FILE_NAME: &str = "run-manifest.json";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("`{}` is not an okstra run folder: cannot read `{FILE_NAME}`", .dir.display())]
    Read {
        dir: PathBuf,
        #[source]
        source: crate::fsread::Error,
    },
    #[error("run manifest `{}` names a path outside its run", .path.display())]
    Outside {
        path: PathBuf,
        #[source]
        source: crate::confine::Error,
    },
    #[error("run manifest `{}` is not a valid run manifest", .path.display())]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

/// The parts of a run manifest the run engine acts on.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunManifest {
    pub run_id: String,
    pub task_key: String,
    pub task_type: TaskType,
    pub project_root: PathBuf,
    pub run_dir: PathBuf,
    pub team_state_path: PathBuf,
    pub lead_events_path: PathBuf,
    pub assignments: Vec<Assignment>,
}

impl RunManifest {
    /// Read `<dir>/run-manifest.json` and re-root its paths under `dir`.
    pub fn load(dir: &Path) -> Result<RunManifest, Error> {
        let path = dir.join(FILE_NAME);
        let bytes = crate::fsread::read_no_follow(&path, crate::fsread::Kind::Manifest).map_err(
            |source| Error::Read {
                dir: dir.to_path_buf(),
                source,
            },
        )?;
        let mut manifest: RunManifest =
            serde_json::from_slice(&bytes).map_err(|source| Error::Json {
                path: path.clone(),
                source,
            })?;
        let recorded = manifest.run_dir.clone();
        // Re-rooted for a moved run, then confined to it: the engine writes
        // Result Paths, so a crafted manifest must steer no write outside.
        let fix = |path: &mut PathBuf, what: &str| -> Result<(), Error> {
            let rerooted = reroot(std::mem::take(path), Some(&recorded), dir);
            *path =
                crate::confine::inside(rerooted, dir, what).map_err(|source| Error::Outside {
                    path: dir.join(FILE_NAME),
                    source,
                })?;
            Ok(())
        };
        fix(&mut manifest.team_state_path, "`teamStatePath`")?;
        fix(&mut manifest.lead_events_path, "`leadEventsPath`")?;
        for assignment in &mut manifest.assignments {
            let paths = &mut assignment.paths;
            fix(&mut paths.prompt_path, "`promptPath`")?;
            fix(&mut paths.result_path, "`resultPath`")?;
            fix(&mut paths.worker_results_path, "`workerResultsPath`")?;
            fix(&mut paths.error_path, "`errorPath`")?;
            fix(&mut paths.heartbeat_path, "`heartbeatPath`")?;
        }
        manifest.run_dir = dir.to_path_buf();
        Ok(manifest)
    }

    /// The assignment of `worker_id`, if rostered.
    pub fn assignment(&self, worker_id: &str) -> Option<&Assignment> {
        self.assignments.iter().find(|a| a.worker_id == worker_id)
    }
}
