//! The run manifest (`run-manifest.json`): the one module that writes it and
//! reads it.
//!
//! The bundle writes it once, from [`NewRunManifest`]. Commands read it
//! through [`read`], as one of two views:
//! - [`RunManifest`], typed with the catalog's enums and the bundle's own
//!   `Assignment`, for commands that act on a run (`dispatch`, `await`,
//!   `coverage`, `run`): a manifest that does not hold a whole roster is
//!   refused;
//! - [`Record`], every field optional and words kept as written, for
//!   commands that show or check a run (`status`, `event`, `usage`,
//!   `converge`, `validate`, the run history), which must cope with a
//!   manifest from an older or newer okstra.
//!
//! Fields a view does not need are skipped, unknown ones ignored. Paths are
//! re-rooted to where the run folder is now (`run_paths`) by the reader that
//! uses them, and confined to the run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::{Capabilities, LeadRuntime, Provider, TaskType};
use crate::run::layout::{RUN_MANIFEST, RunLayout};
use crate::run::paths::reroot;
use crate::run::roster::Assignment;

/// Why a run manifest could not be read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("`{}` is not an okstra run folder: cannot read `{RUN_MANIFEST}`", .dir.display())]
    Read {
        dir: PathBuf,
        #[source]
        source: crate::fsread::Error,
    },
    #[error("run manifest `{}` is refused", .path.display())]
    Outside {
        path: PathBuf,
        #[source]
        source: crate::confine::Error,
    },
    #[error("run manifest `{}` cannot be read as a run manifest", .path.display())]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("run manifest `{}` has no `{field}`", .path.display())]
    Missing { path: PathBuf, field: &'static str },
}

impl Error {
    /// Whether the run folder simply has no manifest (not a run at all).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::Read { source, .. } if source.is_not_found())
    }
}

/// The bytes of `<dir>/run-manifest.json`: a regular file, not a symlink,
/// within the manifest size limit (`fsread`).
pub fn read(dir: &Path) -> Result<Vec<u8>, Error> {
    let path = RunLayout::of(dir).run_manifest();
    crate::fsread::read_no_follow(&path, crate::fsread::Kind::Manifest).map_err(|source| {
        Error::Read {
            dir: dir.to_path_buf(),
            source,
        }
    })
}

/// The run's convergence settings (`convergence`): written by the bundle,
/// read by `okstra converge`; a missing field reads as off.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Convergence {
    #[serde(default)]
    pub enabled: bool,
    #[serde(default)]
    pub adversarial: bool,
    #[serde(default)]
    pub effective_max_rounds: u32,
}

/// A new run's manifest, as the bundle writes it (checked against
/// `run-manifest.schema.json` before it is written).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewRunManifest<'a> {
    pub schema_version: u32,
    pub okstra_version: &'a str,
    pub created_at: &'a str,
    pub run_id: &'a str,
    pub sequence: u32,
    pub task_key: &'a str,
    pub task_type: TaskType,
    pub project_root: &'a Path,
    pub run_dir: &'a Path,
    pub lead_runtime: LeadRuntime,
    pub lead: NewLead<'a>,
    pub assignments: Vec<NewAssignment<'a>>,
    pub convergence: Convergence,
    pub critic: Option<NewCritic<'a>>,
    pub lead_events_path: &'a Path,
    pub task_manifest_path: &'a Path,
    pub team_state_path: &'a Path,
    pub handoff_prompt_path: &'a Path,
    pub instruction_set: &'a BTreeMap<&'static str, PathBuf>,
    pub final_report: NewFinalReport<'a>,
    pub continues: Option<&'a Path>,
    /// Every rendered prompt's SHA-256, by path relative to the run.
    pub prompt_sha256: &'a BTreeMap<String, String>,
    /// The wrapper providers' CLIs as the render found them.
    pub provider_clis: &'a Value,
}

/// The lead of a new run (`lead`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewLead<'a> {
    pub provider: Option<&'static str>,
    pub model: Option<&'a str>,
    pub role_label: &'static str,
    pub capabilities: &'a Capabilities,
}

/// One assignment of a new run, with its rendered prompt's SHA-256.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewAssignment<'a> {
    #[serde(flatten)]
    pub assignment: &'a Assignment,
    pub prompt_sha256: Option<&'a str>,
}

/// The critic of a new run (`critic`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewCritic<'a> {
    pub provider: Provider,
    pub model_execution_value: &'a str,
}

/// Where a new run's final report goes (`finalReport`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewFinalReport<'a> {
    pub schema_version: &'static str,
    pub data_path: &'a Path,
    pub schema_path: &'a Path,
}

/// A run manifest as written by any okstra: every field optional, words
/// kept as strings, paths as recorded (not yet re-rooted).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    pub run_id: Option<String>,
    pub run_dir: Option<String>,
    pub created_at: Option<String>,
    pub task_key: Option<String>,
    pub task_type: Option<String>,
    pub project_root: Option<String>,
    pub lead_runtime: Option<String>,
    pub lead_events_path: Option<String>,
    pub team_state_path: Option<String>,
    pub task_manifest_path: Option<String>,
    pub convergence: Option<Convergence>,
    pub final_report: Option<RecordFinalReport>,
    pub assignments: Option<Vec<RecordAssignment>>,
}

/// One assignment as written by any okstra.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordAssignment {
    pub dispatch_name: Option<String>,
    pub worker_id: Option<String>,
    pub role: Option<String>,
    pub provider: Option<String>,
    pub model_execution_value: Option<String>,
    pub runner: Option<String>,
    pub prompt_path: Option<String>,
    pub result_path: Option<String>,
    pub worker_results_path: Option<String>,
    pub heartbeat_path: Option<String>,
}

/// The final report's place as written by any okstra (`finalReport`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordFinalReport {
    pub schema_version: Option<String>,
    pub data_path: Option<String>,
}

impl Record {
    /// Read the manifest of the run in `dir`.
    pub fn load(dir: &Path) -> Result<Record, Error> {
        Record::parse(dir, &read(dir)?)
    }

    /// A manifest's bytes, for the run in `dir`.
    pub fn parse(dir: &Path, bytes: &[u8]) -> Result<Record, Error> {
        serde_json::from_slice(bytes).map_err(|source| Error::Json {
            path: RunLayout::of(dir).run_manifest(),
            source,
        })
    }
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
        let path = RunLayout::of(dir).run_manifest();
        let bytes = read(dir)?;
        let mut manifest: RunManifest =
            serde_json::from_slice(&bytes).map_err(|source| Error::Json {
                path: path.clone(),
                source,
            })?;
        let recorded = manifest.run_dir.clone();
        // Re-rooted for a moved run, then confined to it: the engine writes
        // Result Paths, so a crafted manifest must steer no write outside.
        let fix = |slot: &mut PathBuf, what: &str| -> Result<(), Error> {
            let rerooted = reroot(std::mem::take(slot), Some(&recorded), dir);
            *slot =
                crate::confine::inside(rerooted, dir, what).map_err(|source| Error::Outside {
                    path: path.clone(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_without_a_manifest_is_not_a_run() {
        let dir = tempfile::tempdir().unwrap();
        let err = Record::load(dir.path()).unwrap_err();
        assert!(err.is_not_found());
        assert_eq!(
            err.to_string(),
            format!(
                "`{}` is not an okstra run folder: cannot read `run-manifest.json`",
                dir.path().display()
            )
        );
        assert!(RunManifest::load(dir.path()).unwrap_err().is_not_found());
    }

    #[test]
    fn a_record_keeps_what_any_okstra_wrote_and_ignores_the_rest() {
        let record = Record::parse(
            Path::new("/r"),
            br#"{"runId":"r-001","convergence":{"enabled":true},"finalReport":{"dataPath":"report/data.json"},"assignments":[{"dispatchName":"w"}],"newerField":[1]}"#,
        )
        .unwrap();
        assert_eq!(record.run_id.as_deref(), Some("r-001"));
        assert!(record.convergence.unwrap().enabled);
        assert_eq!(record.convergence.unwrap().effective_max_rounds, 0);
        let report = record.final_report.unwrap();
        assert_eq!(report.data_path.as_deref(), Some("report/data.json"));
        assert_eq!(report.schema_version, None);
        let assignments = record.assignments.unwrap();
        assert_eq!(assignments[0].dispatch_name.as_deref(), Some("w"));
        assert_eq!(assignments[0].prompt_path, None);
        assert_eq!(record.task_type, None);
    }

    #[test]
    fn bytes_that_are_no_manifest_are_refused_with_the_path() {
        let err = Record::parse(Path::new("/r"), b"[1]").unwrap_err();
        assert!(!err.is_not_found());
        assert_eq!(
            err.to_string(),
            "run manifest `/r/run-manifest.json` cannot be read as a run manifest"
        );
    }
}
