//! The run manifest (`run-manifest.json`): the one module that writes it and
//! reads it.
//!
//! The bundle writes it once, from [`NewRunManifest`]. Every command reads
//! it through [`parse`] into a [`Run`]: typed with the
//! catalog's enums and the roster's own `Assignment`, every path re-rooted
//! to where the run folder is now (`run::paths`) and confined to it, once.
//! Fields a run does not need are skipped, unknown ones ignored; a manifest
//! that does not hold a whole run is refused with the field it lacks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::{Capabilities, Focus, LeadRuntime, Provider, TaskType};
use crate::change::{Change, Source};
use crate::run::Run;
use crate::run::layout::{RUN_MANIFEST, RunLayout};
use crate::run::paths::reroot;
use crate::run::roster::{Assignment, DispatchPaths};
use crate::vocab::Containment;

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
    #[error("run folder `{}` is refused", .dir.display())]
    Folder {
        dir: PathBuf,
        #[source]
        source: crate::confine::Error,
    },
    #[error("run manifest `{}` cannot be read as a run manifest", .path.display())]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
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
    /// The variant of the task type's profile (`--focus`), when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub focus: Option<Focus>,
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
    /// How the run keeps its CLIs from the project.
    pub containment: Containment,
    /// The commit the project was at (absent outside a git work tree).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<&'a Source>,
    /// The change the run is scoped to (`--diff`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<&'a Change>,
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

/// The run manifest as [`parse`] reads it: what a [`Run`] serves, typed
/// with the catalog's enums; every other field is skipped. A manifest from
/// an older okstra (or a hand-made fixture) may leave out the paths: they
/// are then where the layout puts them.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire {
    run_id: String,
    #[serde(default)]
    created_at: String,
    #[serde(default)]
    task_key: String,
    task_type: TaskType,
    #[serde(default)]
    focus: Option<Focus>,
    #[serde(default)]
    project_root: Option<PathBuf>,
    #[serde(default)]
    run_dir: Option<PathBuf>,
    #[serde(default = "external")]
    lead_runtime: LeadRuntime,
    #[serde(default)]
    convergence: Convergence,
    assignments: Vec<Assignment>,
    #[serde(default)]
    lead_events_path: Option<PathBuf>,
    #[serde(default)]
    team_state_path: Option<PathBuf>,
    #[serde(default)]
    task_manifest_path: Option<PathBuf>,
    #[serde(default)]
    final_report: Option<WireFinalReport>,
    #[serde(default)]
    source: Option<Source>,
    #[serde(default)]
    change: Option<Change>,
    #[serde(default)]
    containment: Option<Containment>,
}

fn external() -> LeadRuntime {
    LeadRuntime::External
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireFinalReport {
    #[serde(default)]
    schema_version: Option<String>,
    #[serde(default)]
    data_path: Option<PathBuf>,
}

/// Parse a run manifest's bytes for the run folder `dir`: re-root every
/// path for a moved run (`run::paths`), then confine it to the run (a
/// crafted manifest steers no read or write outside).
pub fn parse(dir: &Path, bytes: &[u8]) -> Result<Run, Error> {
    let path = RunLayout::of(dir).run_manifest();
    let wire: Wire = serde_json::from_slice(bytes).map_err(|source| Error::Json {
        path: path.clone(),
        source,
    })?;
    let dir = match &wire.run_dir {
        Some(recorded) => spelling(dir, recorded),
        None => crate::confine::normalize(dir),
    };
    let layout = RunLayout::of(&dir);
    let recorded = wire.run_dir.clone();
    let fix = |slot: PathBuf, what: &str| -> Result<PathBuf, Error> {
        let rerooted = reroot(slot, recorded.as_deref(), &dir);
        crate::confine::inside(rerooted, &dir, what).map_err(|source| Error::Outside {
            path: path.clone(),
            source,
        })
    };
    let or = |slot: Option<PathBuf>, default: PathBuf| slot.unwrap_or(default);
    let mut assignments = wire.assignments;
    for (index, assignment) in assignments.iter_mut().enumerate() {
        let name = assignment.dispatch_name.clone();
        let defaults = DispatchPaths::new(&dir, &name);
        let paths = &mut assignment.paths;
        let take = |slot: &mut PathBuf, default: PathBuf| {
            let value = std::mem::take(slot);
            if value.as_os_str().is_empty() {
                default
            } else {
                value
            }
        };
        let what = |field: &str| format!("`assignments[{index}].{field}`");
        paths.prompt_path = fix(
            take(&mut paths.prompt_path, defaults.prompt_path),
            &what("promptPath"),
        )?;
        paths.result_path = fix(
            take(&mut paths.result_path, defaults.result_path),
            &what("resultPath"),
        )?;
        paths.worker_results_path = fix(
            take(&mut paths.worker_results_path, defaults.worker_results_path),
            &what("workerResultsPath"),
        )?;
        paths.error_path = fix(
            take(&mut paths.error_path, defaults.error_path),
            &what("errorPath"),
        )?;
        paths.heartbeat_path = fix(
            take(&mut paths.heartbeat_path, defaults.heartbeat_path),
            &what("heartbeatPath"),
        )?;
    }
    let final_report = wire.final_report.unwrap_or(WireFinalReport {
        schema_version: None,
        data_path: None,
    });
    Ok(Run {
        lead_events_path: fix(
            or(wire.lead_events_path, layout.lead_events()),
            "`leadEventsPath`",
        )?,
        team_state_path: fix(
            or(wire.team_state_path, layout.team_state(&wire.run_id)),
            "`teamStatePath`",
        )?,
        task_manifest_path: fix(
            or(wire.task_manifest_path, layout.task_manifest()),
            "`taskManifestPath`",
        )?,
        report_data_path: fix(
            or(final_report.data_path, layout.report_data()),
            "`finalReport.dataPath`",
        )?,
        report_schema_version: final_report.schema_version,
        project_root: wire.project_root.unwrap_or_else(|| project_of(&dir)),
        recorded_dir: recorded,
        run_id: wire.run_id,
        created_at: wire.created_at,
        task_key: wire.task_key,
        task_type: wire.task_type,
        focus: wire.focus,
        lead_runtime: wire.lead_runtime,
        convergence: wire.convergence,
        source: wire.source,
        change: wire.change,
        containment: wire.containment.unwrap_or(Containment::Copies),
        assignments,
        dir,
    })
}

/// The project a run folder belongs to: the folder holding the `.okstra`
/// above it (the run folder itself when there is none).
fn project_of(dir: &Path) -> PathBuf {
    dir.ancestors()
        .find(|folder| {
            folder
                .file_name()
                .is_some_and(|name| name == crate::confine::OKSTRA_DIR)
        })
        .and_then(Path::parent)
        .unwrap_or(dir)
        .to_path_buf()
}

/// How to spell the run folder `dir`: absolute, and as the manifest
/// recorded it when that names the same folder, so every path okstra
/// writes into a prompt is the same bytes whichever way the folder was
/// named on the command line (a resumed run's prompts must not change).
fn spelling(dir: &Path, recorded: &Path) -> PathBuf {
    let given = crate::confine::normalize(dir);
    if recorded.is_absolute() && same_folder(&given, recorded) {
        return crate::confine::normalize(recorded);
    }
    given
}

/// Whether `a` and `b` are the same folder (device and inode).
fn same_folder(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.is_dir() && a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_without_a_manifest_is_not_a_run() {
        let dir = tempfile::tempdir().unwrap();
        let err = Run::open(dir.path()).unwrap_err();
        assert!(err.is_not_found());
        assert_eq!(
            err.to_string(),
            format!(
                "`{}` is not an okstra run folder: cannot read `run-manifest.json`",
                dir.path().display()
            )
        );
    }

    #[test]
    fn bytes_that_are_no_manifest_are_refused_with_the_path() {
        let err = Run::parse(Path::new("/r"), b"[1]").unwrap_err();
        assert!(!err.is_not_found());
        assert_eq!(
            err.to_string(),
            "run manifest `/r/run-manifest.json` cannot be read as a run manifest"
        );
    }

    #[test]
    fn a_moved_run_keeps_its_paths_and_refuses_any_outside() {
        let manifest = |team_state: &str| {
            format!(
                r#"{{"runId":"r-001","createdAt":"2026-11-30T00:00:00Z","taskKey":"p/g/t","taskType":"project-analysis","projectRoot":"/old","runDir":"/old/run","leadRuntime":"external","assignments":[],"leadEventsPath":"/old/run/state/lead-events.jsonl","teamStatePath":"{team_state}","taskManifestPath":"task-manifest.json","finalReport":{{"dataPath":"/old/run/report/data.json"}},"newerField":[1]}}"#
            )
        };
        let run = Run::parse(
            Path::new("/new/run"),
            manifest("/old/run/state/t.json").as_bytes(),
        )
        .unwrap();
        assert_eq!(run.team_state_path, Path::new("/new/run/state/t.json"));
        assert_eq!(
            run.task_manifest_path,
            Path::new("/new/run/task-manifest.json")
        );
        assert_eq!(run.report_data_path, Path::new("/new/run/report/data.json"));
        assert_eq!(run.convergence.effective_max_rounds, 0);
        let err =
            Run::parse(Path::new("/new/run"), manifest("/etc/passwd").as_bytes()).unwrap_err();
        assert!(matches!(err, Error::Outside { .. }), "{err}");
    }
}
