//! A run folder, owned here: opened once, its manifest read once and every
//! path it records re-rooted and confined once, then everything okstra keeps
//! in it served typed — the roster, the task manifest, the team state's
//! attempt records with their one `latest()`, the lease that says who drives
//! the run.
//!
//! Every command that acts on or shows a run starts from [`Run::open`].
//! Submodules: `manifest` (the run manifest's writer and its wire form),
//! `layout` (every file name), `roster` (assignments), `team_state` (attempt
//! records and the one locked read-modify-write), `task` (the task
//! manifest), `lease` (one driver at a time), `paths` (re-rooting a moved
//! run), `progress` (the phase and round the records reached), `records`
//! (every record of a run read once, for `crate::derive`), `live` (what of
//! an unfinished attempt still runs, from the process table), `settings` (the
//! engine settings the run keeps for every later call).

pub mod ask;
pub mod events;
pub mod journal;
pub mod layout;
pub mod lease;
pub mod live;
pub mod manifest;
pub mod paths;
pub mod progress;
pub mod records;
pub mod roster;
pub mod settings;
pub mod steps;
pub mod task;
pub mod team_state;

use std::path::{Path, PathBuf};

use crate::catalog::{LeadRuntime, Role, TaskType};

use self::layout::RunLayout;
pub use self::manifest::{Convergence, Error};
pub use self::records::{Parts, Records};
use self::roster::Assignment;
use self::team_state::TeamState;

/// A run folder and its manifest, every recorded path re-rooted to where
/// the folder is now and confined to it.
#[derive(Debug, Clone)]
#[expect(
    clippy::struct_field_names,
    reason = "`run_id` mirrors the manifest's `runId`"
)]
pub struct Run {
    /// The run folder: absolute, spelt as the manifest recorded it when it
    /// names the same folder (so paths in prompts stay byte-identical
    /// whichever way the folder was named on the command line).
    pub dir: PathBuf,
    /// The manifest's `runDir`: where the run was made.
    pub recorded_dir: Option<PathBuf>,
    pub run_id: String,
    pub created_at: String,
    pub task_key: String,
    pub task_type: TaskType,
    /// The variant of the task type's profile (`--focus`), if any.
    pub focus: Option<crate::catalog::Focus>,
    pub project_root: PathBuf,
    pub lead_runtime: LeadRuntime,
    pub convergence: Convergence,
    /// The roster, in dispatch order.
    pub assignments: Vec<Assignment>,
    pub lead_events_path: PathBuf,
    pub team_state_path: PathBuf,
    pub task_manifest_path: PathBuf,
    /// `finalReport.dataPath`: the report writer's Result Path.
    pub report_data_path: PathBuf,
    /// `finalReport.schemaVersion`, as recorded.
    pub report_schema_version: Option<String>,
    /// The commit the project was at when the run was rendered.
    pub source: Option<crate::change::Source>,
    /// The change the run is scoped to (`--diff`).
    pub change: Option<crate::change::Change>,
    /// How the run keeps its CLIs from the project (copies for a run of an
    /// older okstra).
    pub containment: crate::vocab::Containment,
}

impl Run {
    /// Open the run in `dir`: read `run-manifest.json` (bounded, never
    /// through a symlink), re-root its paths for a moved run and refuse any
    /// that leads outside the run folder.
    /// Its folders (`state/`, `prompts/`, `results/` …) must be real
    /// folders: a symlink planted in their place is refused here, before
    /// anything is read or written through it (and every later open refuses
    /// a link on the way, see `beneath`).
    pub fn open(dir: &Path) -> Result<Run, Error> {
        let bytes = manifest::read(dir)?;
        let run = Run::parse(dir, &bytes)?;
        for folder in layout::FOLDERS {
            crate::confine::check_no_links(&run.dir, Path::new(folder)).map_err(|source| {
                Error::Folder {
                    dir: run.dir.clone(),
                    source,
                }
            })?;
        }
        Ok(run)
    }

    /// A run manifest's bytes, for the run in `dir`.
    pub fn parse(dir: &Path, bytes: &[u8]) -> Result<Run, Error> {
        manifest::parse(dir, bytes)
    }

    /// The profile the run follows: its task type, and its variant.
    pub fn profile(&self) -> crate::profile::Profile {
        crate::profile::Profile {
            task_type: self.task_type,
            focus: self.focus,
        }
    }

    /// The layout of this run's folder.
    pub fn layout(&self) -> RunLayout<'_> {
        RunLayout::of(&self.dir)
    }

    /// The assignment of `worker_id`, if rostered.
    pub fn assignment(&self, worker_id: &str) -> Option<&Assignment> {
        self.assignments.iter().find(|a| a.worker_id == worker_id)
    }

    /// Every assignment in `role`, in roster order.
    pub fn in_role(&self, role: Role) -> impl Iterator<Item = &Assignment> {
        self.assignments.iter().filter(move |a| a.role == role)
    }

    /// The reviewers: analysers, or the verifiers of an implementation run.
    pub fn reviewers(&self) -> impl Iterator<Item = &Assignment> {
        self.assignments.iter().filter(|a| a.role.reviews())
    }

    /// A path a sidecar or other record of this run holds, made to work
    /// where the run is now (see `run::paths`). Not confined: callers that
    /// read or write through it confine it.
    pub fn resolve(&self, recorded: &Path) -> PathBuf {
        paths::reroot(
            recorded.to_path_buf(),
            self.recorded_dir.as_deref(),
            &self.dir,
        )
    }

    /// `recorded`, a path some record of this run holds (a team-state
    /// record, a round plan, the task manifest), re-rooted to where the run
    /// is now and refused when it leads outside the run folder. `what`
    /// names it in the refusal.
    pub fn confine(&self, recorded: &Path, what: &str) -> Result<PathBuf, crate::confine::Error> {
        crate::confine::inside(self.resolve(recorded), &self.dir, what)
    }

    /// The team state: every attempt record, its paths confined to the run.
    pub fn team_state(&self) -> anyhow::Result<TeamState> {
        team_state::read(self)
    }

    /// Apply `changes` to the team state under its lock (see
    /// [`team_state::update`]).
    pub fn update_team_state(
        &self,
        changes: &[team_state::Change<'_>],
    ) -> anyhow::Result<TeamState> {
        team_state::update(self, changes)
    }

    /// The task manifest, typed.
    pub fn task(&self) -> anyhow::Result<task::TaskManifest> {
        task::read(&self.task_manifest_path)
    }
}
