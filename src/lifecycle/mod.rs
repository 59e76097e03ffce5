//! The run lifecycle after `--render-only`: lead events (`okstra event`), the
//! status board (`okstra status`), the reaper (`okstra reap`).
//!
//! Everything here *reads* what others own: the run manifest (written by the
//! bundle, read through `manifest::Record`), status sidecars (written by provider-exec, read defensively since
//! it may be older or newer than us), heartbeat files and Result Paths
//! (written by workers). The only files written here are the lead events log
//! (appended under a lock) and, by `reap --execute`, the sidecars of wrappers
//! that died without finishing them.
//!
//! Submodules: `event` appends events, `status` classifies workers and draws
//! the board, `reap` stops orphaned process groups, `process` knows how to
//! tell whether a recorded pid is still the process we recorded, `sidecar`
//! reads status sidecars, `clock` parses and prints timestamps.

mod dispatch_rows;
mod event;
#[cfg(test)]
mod proptests;
mod reap;
mod status;

use std::fs;
use std::path::{Path, PathBuf};

use crate::run::layout::RunLayout;
use crate::run::manifest::{Convergence, Record, RecordAssignment};

pub use event::{append as append_event, event_command, progress_line};
pub use reap::reap_command;
pub use status::status_command;

/// Why a run folder could not be read: the run manifest's own errors.
pub use crate::run::manifest::Error;

/// The run manifest as the lifecycle commands see it: a view over
/// `manifest::Record`, its paths re-rooted and confined to the run.
#[derive(Debug, Clone)]
#[expect(
    clippy::struct_field_names,
    reason = "`run_id` mirrors the manifest's `runId`"
)]
pub struct Run {
    pub dir: PathBuf,
    /// The manifest's `runDir`: where the run was made (see `run::paths`).
    pub recorded_dir: Option<PathBuf>,
    pub run_id: String,
    pub task_key: String,
    pub task_type: String,
    pub lead_events_path: PathBuf,
    /// The team state, whose dispatch records `okstra dispatch` keeps.
    pub team_state_path: Option<PathBuf>,
    /// The task manifest, re-rooted (not confined: it is only read).
    pub task_manifest_path: Option<PathBuf>,
    /// The project root as recorded.
    pub project_root: Option<PathBuf>,
    /// The lead runtime as recorded.
    pub lead_runtime: Option<String>,
    /// The convergence settings (all off when not recorded).
    pub convergence: Convergence,
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
    /// A path a sidecar or other record of this run holds, made to work
    /// where the run is now (see `run::paths`).
    pub fn resolve(&self, recorded: &Path) -> PathBuf {
        crate::run::paths::reroot(
            recorded.to_path_buf(),
            self.recorded_dir.as_deref(),
            &self.dir,
        )
    }

    /// The team state: as recorded, else where the layout puts it.
    pub fn team_state(&self) -> PathBuf {
        self.team_state_path
            .clone()
            .unwrap_or_else(|| RunLayout::of(&self.dir).team_state(&self.run_id))
    }

    /// Read `<dir>/run-manifest.json`.
    pub fn load(dir: &Path) -> Result<Run, Error> {
        Run::parse(dir, &crate::run::manifest::read(dir)?)
    }

    /// A run manifest's bytes, for the run in `dir`.
    pub fn parse(dir: &Path, bytes: &[u8]) -> Result<Run, Error> {
        let path = RunLayout::of(dir).run_manifest();
        // Typed, not a `Value`: only the record's fields are kept, the rest
        // of the manifest is skipped without being allocated (a project
        // board reads a thousand of them).
        let manifest = Record::parse(dir, bytes)?;
        let run_id = manifest.run_id.ok_or_else(|| Error::Missing {
            path: path.clone(),
            field: "runId",
        })?;
        // Paths follow the run folder if it was moved or copied, and must
        // then lie inside it (a crafted manifest steers no read or write
        // out of the run).
        let recorded_dir = manifest.run_dir.map(PathBuf::from);
        let outside = std::cell::RefCell::new(None);
        let resolve = |recorded: String, what: &str| {
            let path =
                crate::run::paths::reroot(PathBuf::from(recorded), recorded_dir.as_deref(), dir);
            // The first refusal fails the load below; the path is not used.
            crate::confine::inside(path, dir, what).unwrap_or_else(|err| {
                outside.borrow_mut().get_or_insert(err);
                PathBuf::new()
            })
        };
        let lead_events_path = manifest.lead_events_path.map_or_else(
            || RunLayout::of(dir).lead_events(),
            |recorded| resolve(recorded, "`leadEventsPath`"),
        );
        let assignments = manifest
            .assignments
            .ok_or_else(|| Error::Missing {
                path: path.clone(),
                field: "assignments",
            })?
            .into_iter()
            .filter_map(|a| assignment(a, &resolve))
            .collect();
        let team_state_path = manifest
            .team_state_path
            .map(|recorded| resolve(recorded, "`teamStatePath`"));
        if let Some(source) = outside.into_inner() {
            return Err(Error::Outside { path, source });
        }
        let task_manifest_path = manifest.task_manifest_path.map(|recorded| {
            crate::run::paths::reroot(PathBuf::from(recorded), recorded_dir.as_deref(), dir)
        });
        Ok(Run {
            dir: dir.to_path_buf(),
            recorded_dir,
            run_id,
            task_key: manifest.task_key.unwrap_or_default(),
            task_type: manifest.task_type.unwrap_or_default(),
            lead_events_path,
            team_state_path,
            task_manifest_path,
            project_root: manifest.project_root.map(PathBuf::from),
            lead_runtime: manifest.lead_runtime,
            convergence: manifest.convergence.unwrap_or_default(),
            assignments,
        })
    }
}

/// An assignment without a dispatch name or prompt path cannot be shown.
fn assignment(
    record: RecordAssignment,
    resolve: &impl Fn(String, &str) -> PathBuf,
) -> Option<Assignment> {
    let path = |p: Option<String>, what: &str| p.map(|p| resolve(p, what));
    Some(Assignment {
        dispatch_name: record.dispatch_name?,
        worker_id: record.worker_id.unwrap_or_default(),
        role: record.role.unwrap_or_default(),
        provider: record.provider.unwrap_or_default(),
        model: record.model_execution_value.unwrap_or_default(),
        runner: record.runner.unwrap_or_default(),
        prompt_path: path(record.prompt_path, "`promptPath`")?,
        result_path: path(record.result_path, "`resultPath`"),
        worker_results_path: path(record.worker_results_path, "`workerResultsPath`"),
        heartbeat_path: path(record.heartbeat_path, "`heartbeatPath`"),
    })
}

/// Every candidate run folder under `<project_root>/.okstra/tasks/<p>/<g>/<t>/`,
/// sorted by path so output is stable. Each level's folders are listed in
/// parallel: a large project has a thousand task folders to list.
pub fn run_dirs(project_root: &Path) -> Result<Vec<PathBuf>, crate::confine::Error> {
    let subdirs = |dir: &PathBuf| -> Vec<PathBuf> {
        let Ok(entries) = fs::read_dir(dir) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .collect()
    };
    // Symlinked folders are never followed (see `confine`): a symlinked
    // `.okstra` or `tasks` is an error, a link further down is skipped, so
    // the board never leaves the project.
    let okstra = crate::confine::okstra_dir(project_root)?;
    crate::confine::check_no_links(&okstra, Path::new("tasks"))?;
    let mut level = vec![okstra.join("tasks")];
    // project-id / task-group / task-id / run
    for _ in 0..4 {
        level = par_map(&level, subdirs).into_iter().flatten().collect();
    }
    // Folders without a manifest are filtered when loading (one open
    // instead of a stat and an open per run).
    level.sort();
    Ok(level)
}

/// Below this many items per thread, threads cost more than they save.
const MIN_ITEMS_PER_THREAD: usize = 64;

/// `items.iter().map(work)`, in order, split over the available cores when
/// there is enough to split (a project can hold thousands of runs; the work
/// per run is independent).
pub fn par_map<'a, T: Sync, R: Send>(items: &'a [T], work: impl Fn(&'a T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    if threads < 2 || items.len() < MIN_ITEMS_PER_THREAD * 2 {
        return items.iter().map(work).collect();
    }
    let chunk = items.len().div_ceil(threads).max(MIN_ITEMS_PER_THREAD);
    let work = &work;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(work).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|handle| handle.join().expect("a worker thread does not panic"))
            .collect()
    })
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
