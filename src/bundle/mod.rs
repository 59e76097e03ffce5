//! Resolved settings → the run bundle under `<project-root>/.okstra/`.
//!
//! A run folder is `.okstra/tasks/<project>/<group>/<task>/<task-type>-<NNN>/`.
//! Sequence numbers are allocated under an exclusive lock on `.okstra/` and
//! never reused: the task's run log (`runs.jsonl`, see `run_log`) outlives
//! deleted runs. Every file is rendered in memory first, every JSON artifact
//! is validated against its schema, the folder is assembled in a staging
//! folder beside it, and only a complete folder is renamed into place: a
//! failed render leaves no run.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::assign;
use crate::catalog::{Capabilities, Provider, Runner, TaskType};
use crate::diag;
use crate::doctor;
use crate::durable;
use crate::run::layout::{REPORT_SCHEMA_NAME, RunLayout};
use crate::run::manifest::Convergence;
use crate::run::roster::{Assignment, DispatchPaths};
use crate::run_log;
use crate::schema;
use crate::settings::Settings;
use crate::vocab::ContinuationKind;

mod files;
mod manifests;

use self::files::{Found, render_files};
use crate::confine;

/// The final-report schema version new runs are written against.
pub const REPORT_SCHEMA: &str = crate::report::CURRENT.1;
/// The schemas every render validates against, in the order it does.
const RENDER_SCHEMAS: &[&str] = &[TASK_MANIFEST_SCHEMA, RUN_MANIFEST_SCHEMA, TEAM_STATE_SCHEMA];
const TASK_MANIFEST_SCHEMA: &str = "task-manifest.schema.json";
const RUN_MANIFEST_SCHEMA: &str = "run-manifest.schema.json";
const TEAM_STATE_SCHEMA: &str = "team-state.schema.json";
/// Version of the manifests and team state we write.
pub const MANIFEST_VERSION: u32 = 1;

/// Where the finished run lives.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunPaths {
    pub run_dir: PathBuf,
    pub handoff_prompt: PathBuf,
    pub run_manifest: PathBuf,
    pub task_manifest: PathBuf,
}

/// Everything the templates see. Field names match the manifests (camelCase).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct RenderContext<'a> {
    okstra: OkstraInfo,
    task: TaskView<'a>,
    continuation: ContinuationView,
    run: RunView,
    runtime: RuntimeView,
    convergence: Convergence,
    roster: &'a [Assignment],
    critic: Option<&'a Assignment>,
    report_writer: Option<&'a Assignment>,
    executor: Option<&'a Assignment>,
    /// The worker whose prompt is being rendered (worker prompts only).
    assignment: Option<&'a Assignment>,
    /// Every Phase 5.5 reverify dispatch the run may make, round by round
    /// (names and paths; the prompts are rendered by `okstra converge plan`).
    reverify: &'a [ReverifyDispatch],
    /// Always null here: the worker-prompt template renders a reverify
    /// prompt when it is set, and only `okstra converge plan` sets it.
    reverify_dispatch: Option<()>,
    /// The worker's own copy of the project, when its CLI has no read-only
    /// mode (`workspace::locate`); its prompt names it as the project root.
    /// Set per worker prompt; null everywhere else.
    workspace: Option<PathBuf>,
    /// Every ending class of a dispatch and what the report makes of it.
    endings: Vec<EndingView>,
}

/// One ending class as the lead contract's table shows it (from
/// `vocab::Ending`, so the table can never disagree with the binary).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct EndingView {
    ending: &'static str,
    terminal_status: crate::vocab::ReportStatus,
    failure_reason: Option<&'static str>,
    retry: &'static str,
}

fn ending_views() -> Vec<EndingView> {
    use crate::vocab::Ending;
    Ending::ALL
        .iter()
        .map(|&ending| {
            let (terminal_status, failure_reason) = ending.report_status();
            EndingView {
                ending: ending.as_str(),
                terminal_status,
                failure_reason,
                retry: match ending {
                    Ending::Crash => "once, if it failed within 30 s having said nothing",
                    Ending::RateLimit => {
                        "after the CLI's retry-after without spending the retry, else once after a cooldown"
                    }
                    ending if ending.is_retryable() => "once",
                    _ => "no",
                },
            }
        })
        .collect()
}

/// One convergence reverify dispatch: an analyser (or verifier) reviewing the
/// other workers' findings in round `round`. Its names and paths are fixed
/// at render time (`okstra converge plan` renders the prompt at exactly
/// `promptPath` and lists the same values in the round plan).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct ReverifyDispatch {
    round: u32,
    worker_id: String,
    /// The worker's initial dispatch name (`claude-worker`).
    base_dispatch_name: String,
    /// `<base dispatch name>-reverify-r<round>`.
    dispatch_name: String,
    /// `reverify-r<round>`.
    dispatch_kind: String,
    provider: Provider,
    model_execution_value: String,
    host_model: String,
    runner: Runner,
    wrapper: Option<String>,
    #[serde(flatten)]
    paths: DispatchPaths,
    /// The round plan the lead writes before dispatching this round.
    round_plan_path: PathBuf,
}

#[derive(Debug, Clone, Serialize)]
struct OkstraInfo {
    version: &'static str,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct TaskView<'a> {
    key: String,
    project_id: &'a str,
    task_group: &'a str,
    task_id: &'a str,
    r#type: TaskType,
    /// The profile's template stem: the task type's, or a variant of it
    /// (`defect-hunt`).
    profile: &'static str,
    is_analysis: bool,
    work_category: Option<&'static str>,
    related_tasks: &'a [String],
    directive: Option<&'a str>,
    fix_cycle: bool,
    plan_verification: bool,
    brief_path: PathBuf,
    brief_text: &'a str,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct ContinuationView {
    kind: ContinuationKind,
    input_path: Option<PathBuf>,
    previous_run: Option<PathBuf>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct RunView {
    id: String,
    sequence: u32,
    dir: PathBuf,
    project_root: PathBuf,
    handoff_path: PathBuf,
    run_manifest_path: PathBuf,
    task_manifest_path: PathBuf,
    team_state_path: PathBuf,
    lead_events_path: PathBuf,
    results_dir: PathBuf,
    report_dir: PathBuf,
    report_data_path: PathBuf,
    report_schema_path: PathBuf,
    /// The lead's per-finding convergence record (Phase 5.5 output).
    convergence_ledger_path: PathBuf,
    instruction_set: BTreeMap<&'static str, PathBuf>,
    /// The branch the Executor's change goes onto (implementation runs).
    branch: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct RuntimeView {
    #[serde(flatten)]
    capabilities: Capabilities,
    host_provider: Option<&'static str>,
    lead_model: Option<String>,
    interactive_binary: Option<&'static str>,
}

/// Folders of a run (relative to it), created empty when nothing is rendered
/// into them; `""` is the run folder itself.
fn staged_dirs() -> [PathBuf; 8] {
    let layout = RunLayout::relative();
    [
        layout.dir().to_path_buf(),
        layout.results_dir(),
        layout.report_dir(),
        layout.state_dir(),
        layout.heartbeats_dir(),
        layout.inputs_dir(),
        layout.prompts_dir(),
        layout.instruction_set_dir(),
    ]
}

/// The schemas a lead or worker writes against, shipped in `instruction-set/`
/// so the bundle is self-contained: (key in the run manifest's
/// `instructionSet`, embedded schema, output file).
const SHIPPED_SCHEMAS: &[(&str, &str, &str)] = &[
    ("finalReportSchema", REPORT_SCHEMA, REPORT_SCHEMA_NAME),
    (
        "teamStateSchema",
        TEAM_STATE_SCHEMA,
        "team-state-schema.json",
    ),
    (
        "roundPlanSchema",
        "round-plan.schema.json",
        "round-plan-schema.json",
    ),
    (
        "convergenceLedgerSchema",
        "convergence-ledger.schema.json",
        "convergence-ledger-schema.json",
    ),
];
/// The ending → report status mapping, shipped as data beside the schemas.
const ENDING_STATUS_FILE: &str = "ending-status.json";
/// The task type's profile, rendered into `instruction-set/`.
const PROFILE_FILE: &str = "profile.md";
/// The lead runtime's adapter, rendered into `instruction-set/`.
const ADAPTER_FILE: &str = "adapter.md";
/// The implementation preflight, rendered into `instruction-set/`.
const PREFLIGHT_FILE: &str = "coding-conventions-preflight.md";

/// One rendered instruction-set document: (key, output file, template).
const INSTRUCTION_SET: &[(&str, &str, &str)] = &[
    (
        "leadContract",
        "lead-contract.md",
        "prompts/lead/contract.md.j2",
    ),
    (
        "teamContract",
        "team-contract.md",
        "prompts/lead/team-contract.md.j2",
    ),
    (
        "convergence",
        "convergence.md",
        "prompts/lead/convergence.md.j2",
    ),
    (
        "commonContract",
        "common-contract.md",
        "prompts/profiles/_common-contract.md.j2",
    ),
];

/// A rendered file: its path relative to the run folder, and its bytes.
type RenderedFile = (PathBuf, Vec<u8>);

/// Start compiling the schemas a render checks, while the caller goes on
/// resolving settings and rendering prompts (see [`schema::prepare`]).
pub fn prepare() {
    schema::prepare(RENDER_SCHEMAS);
}

/// A note when git lists the project's `.okstra/` as untracked (neither
/// committed nor ignored): the runs are okstra's records, not the project's
/// code, and `git status` would show them for ever. Nothing is changed;
/// outside git, or when git cannot say, nothing is said.
fn note_if_listed_by_git(project_root: &Path) {
    if !crate::workspace::in_git(project_root) {
        return;
    }
    let listed = crate::git::Git::at(project_root).lines([
        "ls-files",
        "--others",
        "--exclude-standard",
        "--directory",
        "--",
        ".okstra",
    ]);
    if listed.is_ok_and(|lines| !lines.is_empty()) {
        diag::note(
            "git lists `.okstra/` as untracked: add `.okstra/` to the project's `.gitignore` (or to `.git/info/exclude`, for you alone) to keep okstra's runs out of `git status`",
        );
    }
}

/// Render, validate and atomically place a new run. Returns its paths.
pub fn render_run(settings: &Settings) -> Result<RunPaths> {
    // The Executor's change reaches the project only through `okstra land`,
    // which needs git to know what changed since the snapshot and where the
    // user changed the same files; a file copy could not land safely.
    if settings.task_type == TaskType::Implementation
        && !crate::workspace::in_git(&settings.project_root)
    {
        bail!(
            "an implementation run needs a git repository: `{}` is not in one, and okstra lands the Executor's change only through git (run `git init` and commit, or pick an analysis task type)",
            settings.project_root.display()
        );
    }
    // A symlinked `.okstra` or task folder would carry the run out of the
    // project: refused (checked again under the lock).
    let okstra_dir = confine::okstra_dir(&settings.project_root)?;
    let task_relative = settings.task_key.relative_dir();
    confine::check_no_links(&okstra_dir, &task_relative)?;
    let task_dir = okstra_dir.join(&task_relative);
    // Milliseconds, so runs created in the same second still order by time.
    let created_at = crate::clock::rfc3339_now();
    // The wrapper providers' CLIs as PATH and the doctor's cache know them
    // (no CLI is started): recorded in the manifest, warned about if wrong.
    let wrapper_providers: Vec<Provider> = assign::roster(settings, &task_dir)
        .iter()
        .filter(|assignment| assignment.runner == Runner::CliWrapper)
        .map(|assignment| assignment.provider)
        .collect();
    let cli_facts = doctor::render_facts(&wrapper_providers);
    // The commit the workers will see, for the gate and the PR review.
    let source = crate::change::source(&settings.project_root);
    // Landlock, or copies where it is missing: decided once, recorded, and
    // followed by every prompt, dispatch and resume of the run.
    let support = crate::sandbox::support().map_err(anyhow::Error::msg)?;
    let containment = support.containment();
    let render = |sequence: u32| -> Result<(String, Vec<RenderedFile>)> {
        let run_id = format!("{}-{sequence:03}", settings.task_type);
        let found = Found {
            provider_clis: &cli_facts.clis,
            source: source.as_ref(),
            containment,
        };
        let files = render_files(
            settings,
            &task_dir.join(&run_id),
            &run_id,
            sequence,
            &created_at,
            &found,
        )?;
        Ok((run_id, files))
    };
    // Render once before touching the disk, so a render failure writes
    // nothing at all; render again only if another okstra took the number.
    let provisional = next_sequence(&task_dir, settings.task_type)?;
    let (mut run_id, mut files) = render(provisional)?;

    fs::create_dir_all(&okstra_dir)
        .with_context(|| format!("cannot create `{}`", okstra_dir.display()))?;
    let _lock = lock_okstra_dir(&okstra_dir)?;
    confine::okstra_dir(&settings.project_root)?;
    confine::check_no_links(&okstra_dir, &task_relative)?;
    remove_stale_staging(&okstra_dir);
    let sequence = next_sequence(&task_dir, settings.task_type)?;
    if sequence != provisional {
        (run_id, files) = render(sequence)?;
    }
    let run_dir = task_dir.join(&run_id);

    let staging = tempfile::Builder::new()
        .prefix(".staging-")
        .tempdir_in(&okstra_dir)
        .with_context(|| {
            format!(
                "cannot create a staging folder in `{}`",
                okstra_dir.display()
            )
        })?;
    let staged_dirs = staged_dirs();
    for dir in staged_dirs.iter().filter(|dir| !dir.as_os_str().is_empty()) {
        fs::create_dir_all(staging.path().join(dir))
            .with_context(|| format!("cannot create `{}` in the staging folder", dir.display()))?;
    }
    let staged: Vec<(PathBuf, &[u8])> = files
        .iter()
        .map(|(relative, bytes)| (staging.path().join(relative), bytes.as_slice()))
        .collect();
    let dirs: Vec<PathBuf> = staged_dirs
        .iter()
        .map(|dir| staging.path().join(dir))
        .collect();
    durable::create_synced(&staged, &dirs).context("cannot write the staged run to disk")?;
    // The number is logged as used before the run appears: a crash in
    // between wastes a number, it never reuses one.
    fs::create_dir_all(&task_dir)
        .with_context(|| format!("cannot create `{}`", task_dir.display()))?;
    let entry = run_log::Entry {
        run_id,
        task_type: settings.task_type.as_str().to_owned(),
        sequence,
        created_at,
    };
    run_log::append(&task_dir, &entry).with_context(|| {
        format!(
            "cannot record the run in `{}`",
            task_dir.join(run_log::FILE_NAME).display()
        )
    })?;
    let staged = staging.keep();
    if let Err(err) = fs::rename(&staged, &run_dir) {
        let _ = fs::remove_dir_all(&staged);
        return Err(err)
            .with_context(|| format!("cannot move the run into `{}`", run_dir.display()));
    }
    durable::sync_dir(&task_dir)
        .with_context(|| format!("cannot flush `{}`", task_dir.display()))?;
    for warning in &cli_facts.warnings {
        diag::warning(warning);
    }
    note_if_listed_by_git(&settings.project_root);
    if let crate::sandbox::Support::Copies { why } = &support
        && !wrapper_providers.is_empty()
    {
        diag::warning(crate::sandbox::fallback_warning(why));
    }
    crate::runs_index::record(
        &run_dir,
        &settings.project_root,
        &settings.task_key.joined(),
        settings.task_type.as_str(),
        &entry.created_at,
    );

    let layout = RunLayout::of(&run_dir);
    Ok(RunPaths {
        handoff_prompt: layout.handoff(),
        run_manifest: layout.run_manifest(),
        task_manifest: layout.task_manifest(),
        run_dir,
    })
}

/// How long a render (or `okstra cleanup`) waits for another render to
/// put its run in place: writing a run's files takes seconds.
const RENDER_LOCK_WAIT: Duration = Duration::from_mins(2);

/// Take the lock on `okstra_dir` (the `.okstra/` folder itself): a render
/// holds it from before it makes its staging folder until its run is in
/// place, so whoever holds it sees no render half done.
pub fn lock_okstra_dir(okstra_dir: &Path) -> Result<durable::Lock> {
    Ok(durable::Lock::on(
        okstra_dir,
        format!("the render lock on `{}`", okstra_dir.display()),
    )
    .folder()
    .wait(RENDER_LOCK_WAIT)
    .acquire()?)
}

/// The `.staging-*` folders in `okstra_dir`. Under [`lock_okstra_dir`]
/// every one of them was left by a render that was stopped before it moved
/// its run into place (a live render holds the lock, and its folder is
/// gone by the time it lets go). A symlink with such a name is not one.
pub fn leftover_staging(okstra_dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(okstra_dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .filter(|entry| {
            entry.file_name().to_string_lossy().starts_with(".staging-")
                && entry.file_type().is_ok_and(|kind| kind.is_dir())
        })
        .map(|entry| entry.path())
        .collect();
    found.sort();
    found
}

/// Remove the `.staging-*` folders killed renders left in `okstra_dir`;
/// the caller holds the `.okstra/` lock. Best effort: a folder that cannot
/// be removed now is tried again next time (and listed by `okstra
/// cleanup`).
fn remove_stale_staging(okstra_dir: &Path) {
    for folder in leftover_staging(okstra_dir) {
        let _ = fs::remove_dir_all(folder);
    }
}

/// The next unused sequence number for `task_type` in `task_dir`.
fn next_sequence(task_dir: &Path, task_type: TaskType) -> Result<u32> {
    run_log::TaskRuns::read(task_dir)
        .context("cannot read the task's run log")?
        .next_sequence(task_type)
        .context("run sequence numbers are exhausted for this task key")
}
