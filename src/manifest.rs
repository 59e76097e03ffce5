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
/// Largest manifest we read: a roster of a dozen workers is a few KiB.
const MAX_BYTES: u64 = 4 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("`{}` is not an okstra run folder: cannot read `{FILE_NAME}`", .dir.display())]
    Read {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("run manifest `{}` is larger than {MAX_BYTES} bytes", .path.display())]
    TooLarge { path: PathBuf },
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
        let bytes = read_regular(&path, MAX_BYTES).map_err(|source| match source.kind() {
            std::io::ErrorKind::FileTooLarge => Error::TooLarge { path: path.clone() },
            _ => Error::Read {
                dir: dir.to_path_buf(),
                source,
            },
        })?;
        let mut manifest: RunManifest =
            serde_json::from_slice(&bytes).map_err(|source| Error::Json {
                path: path.clone(),
                source,
            })?;
        let recorded = manifest.run_dir.clone();
        let fix = |path: &mut PathBuf| {
            *path = reroot(std::mem::take(path), Some(&recorded), dir);
        };
        fix(&mut manifest.team_state_path);
        fix(&mut manifest.lead_events_path);
        for assignment in &mut manifest.assignments {
            let paths = &mut assignment.paths;
            fix(&mut paths.prompt_path);
            fix(&mut paths.result_path);
            fix(&mut paths.worker_results_path);
            fix(&mut paths.error_path);
            fix(&mut paths.heartbeat_path);
        }
        manifest.run_dir = dir.to_path_buf();
        Ok(manifest)
    }

    /// The assignment of `worker_id`, if rostered.
    pub fn assignment(&self, worker_id: &str) -> Option<&Assignment> {
        self.assignments.iter().find(|a| a.worker_id == worker_id)
    }
}

/// Read a regular file of at most `limit` bytes. A FIFO, device or folder is
/// refused without blocking (opened non-blocking, checked with `fstat`).
pub fn read_regular(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;

    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    if meta.len() > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!("{} bytes, more than the {limit}-byte limit", meta.len()),
        ));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!("more than the {limit}-byte limit"),
        ));
    }
    Ok(bytes)
}
