//! The names of a run folder's files, each spelt once.
//!
//! A run folder (`.okstra/tasks/<p>/<g>/<t>/<runId>/`) holds the manifests,
//! the lead's handoff prompt, the worker prompts and their Result Paths, the
//! state the lead and `okstra` keep (`state/`), and the report. Every command
//! that names one of these files asks [`RunLayout`]; nothing else spells a
//! run-folder file name. The paths a run manifest records (prompt, Result
//! Path, heartbeat, team state, lead events) are read from the manifest
//! (`manifest`); the layout is what the bundle records there in the first
//! place, and the fallback for a manifest that does not record them.
//!
//! A status sidecar and a worker log sit beside the prompt they belong to;
//! their names are the supervisor's wire words (`provider_exec::status`),
//! reached here through [`sidecar`], [`log`] and [`attempt_files`].

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The run manifest, written once by the bundle.
pub const RUN_MANIFEST: &str = "run-manifest.json";
/// The task manifest, written once by the bundle.
pub const TASK_MANIFEST: &str = "task-manifest.json";
/// The lead's handoff prompt.
pub const HANDOFF: &str = "handoff.md";
/// The final report's file name inside its report folder.
pub const REPORT_DATA_NAME: &str = "data.json";
/// The Markdown derivation of the report, beside `data.json`.
pub const REPORT_MARKDOWN_NAME: &str = "final-report.md";
/// The HTML derivation of the report, beside `data.json`.
pub const REPORT_HTML_NAME: &str = "final-report.html";
/// The SARIF log of the report's findings, beside `data.json`.
pub const REPORT_SARIF_NAME: &str = "final-report.sarif";
/// The report schema's file name inside `instruction-set/`.
pub const REPORT_SCHEMA_NAME: &str = "final-report-schema.json";
/// The lock every writer holds while it changes the team state (beside it,
/// in `state/`).
pub const TEAM_STATE_LOCK_NAME: &str = ".team-state.lock";

/// Every folder of a run, relative to it: okstra's own, never a symlink.
pub const FOLDERS: [&str; 7] = [
    STATE,
    "state/heartbeats",
    PROMPTS,
    RESULTS,
    REPORT,
    INSTRUCTION_SET,
    INPUTS,
];

/// Folders of a run, relative to it.
const STATE: &str = "state";
const HEARTBEATS: &str = "heartbeats";
const PROMPTS: &str = "prompts";
const RESULTS: &str = "results";
const REPORT: &str = "report";
const INSTRUCTION_SET: &str = "instruction-set";
const INPUTS: &str = "inputs";

/// The run folder `dir` and the name of every file in it.
///
/// [`RunLayout::relative`] names the same files relative to the run folder
/// (what the bundle stages before the folder exists).
#[derive(Debug, Clone, Copy)]
pub struct RunLayout<'a> {
    dir: &'a Path,
}

impl<'a> RunLayout<'a> {
    /// The layout of the run folder `dir`.
    pub fn of(dir: &'a Path) -> RunLayout<'a> {
        RunLayout { dir }
    }

    /// The layout with paths relative to the run folder.
    pub fn relative() -> RunLayout<'static> {
        RunLayout { dir: Path::new("") }
    }

    /// The run folder itself.
    pub fn dir(&self) -> &'a Path {
        self.dir
    }

    /// `run-manifest.json`.
    pub fn run_manifest(&self) -> PathBuf {
        self.dir.join(RUN_MANIFEST)
    }

    /// `task-manifest.json`.
    pub fn task_manifest(&self) -> PathBuf {
        self.dir.join(TASK_MANIFEST)
    }

    /// `handoff.md`, the lead's prompt.
    pub fn handoff(&self) -> PathBuf {
        self.dir.join(HANDOFF)
    }

    /// `state/`: what the lead and okstra keep while the run goes on.
    pub fn state_dir(&self) -> PathBuf {
        self.dir.join(STATE)
    }

    /// `state/team-state-<runId>.json`.
    pub fn team_state(&self, run_id: &str) -> PathBuf {
        self.state_dir().join(format!("team-state-{run_id}.json"))
    }

    /// `state/lead-events.jsonl`.
    pub fn lead_events(&self) -> PathBuf {
        self.state_dir().join("lead-events.jsonl")
    }

    /// `state/convergence-ledger.json`.
    pub fn convergence_ledger(&self) -> PathBuf {
        self.state_dir().join("convergence-ledger.json")
    }

    /// `state/round-plan-r<N>.json`, the plan of convergence round `round`.
    pub fn round_plan(&self, round: u32) -> PathBuf {
        self.state_dir().join(format!("round-plan-r{round}.json"))
    }

    /// `state/report-inputs.json`, what `okstra coverage` writes for the
    /// report writer.
    pub fn report_inputs(&self) -> PathBuf {
        self.state_dir().join("report-inputs.json")
    }

    /// `state/snapshot.json`: which snapshot of the project the run's
    /// anchors are checked against (`anchors::snapshot`).
    pub fn snapshot_record(&self) -> PathBuf {
        self.state_dir().join("snapshot.json")
    }

    /// `snapshot/`: the copy of a project outside git that the run's
    /// anchors are checked against.
    pub fn snapshot_copy(&self) -> PathBuf {
        self.dir.join("snapshot")
    }

    /// `state/anchors.json`: each accepted result's anchors as okstra
    /// checked them, once (`anchors::store`).
    pub fn anchors(&self) -> PathBuf {
        self.state_dir().join("anchors.json")
    }

    /// `state/fix-request.md`, the defects an implementation run sends back
    /// to the Executor for its one fix pass.
    pub fn fix_request(&self) -> PathBuf {
        self.state_dir().join("fix-request.md")
    }

    /// `state/fix-check.json`, the verifiers' check of the Executor's fix
    /// pass (`converge::fix_check`).
    pub fn fix_check(&self) -> PathBuf {
        self.state_dir().join("fix-check.json")
    }

    /// `state/steps.json`, the step journal: what each computed step was
    /// made from (`run::journal`).
    pub fn steps_journal(&self) -> PathBuf {
        self.state_dir().join("steps.json")
    }

    /// `state/run.lease`: who drives the run now (`run::lease`).
    pub fn lease(&self) -> PathBuf {
        self.state_dir().join("run.lease")
    }

    /// `state/dispatch.log`, the progress of `okstra dispatch --detach`.
    pub fn dispatch_log(&self) -> PathBuf {
        self.state_dir().join("dispatch.log")
    }

    /// `state/estimate.json`: what the run was estimated to take before it
    /// started (`estimate`).
    pub fn estimate(&self) -> PathBuf {
        self.state_dir().join("estimate.json")
    }

    /// `state/heartbeats/`.
    pub fn heartbeats_dir(&self) -> PathBuf {
        self.state_dir().join(HEARTBEATS)
    }

    /// `state/heartbeats/<dispatch>.jsonl`.
    pub fn heartbeat(&self, dispatch_name: &str) -> PathBuf {
        self.heartbeats_dir().join(format!("{dispatch_name}.jsonl"))
    }

    /// `prompts/`.
    pub fn prompts_dir(&self) -> PathBuf {
        self.dir.join(PROMPTS)
    }

    /// `prompts/<dispatch>.md`; its sidecar and log sit beside it.
    pub fn prompt(&self, dispatch_name: &str) -> PathBuf {
        self.prompts_dir().join(format!("{dispatch_name}.md"))
    }

    /// `results/`.
    pub fn results_dir(&self) -> PathBuf {
        self.dir.join(RESULTS)
    }

    /// `results/<dispatch>.md`, a worker's Result Path.
    pub fn result(&self, dispatch_name: &str) -> PathBuf {
        self.results_dir().join(format!("{dispatch_name}.md"))
    }

    /// `results/<dispatch>.worker-results.md`.
    pub fn worker_results(&self, dispatch_name: &str) -> PathBuf {
        self.results_dir()
            .join(format!("{dispatch_name}.worker-results.md"))
    }

    /// `results/<dispatch>.error.md`.
    pub fn error(&self, dispatch_name: &str) -> PathBuf {
        self.results_dir().join(format!("{dispatch_name}.error.md"))
    }

    /// `report/`.
    pub fn report_dir(&self) -> PathBuf {
        self.dir.join(REPORT)
    }

    /// `report/data.json`, the final report (the report writer's Result Path).
    pub fn report_data(&self) -> PathBuf {
        self.report_dir().join(REPORT_DATA_NAME)
    }

    /// `instruction-set/`.
    pub fn instruction_set_dir(&self) -> PathBuf {
        self.dir.join(INSTRUCTION_SET)
    }

    /// `instruction-set/<file>`.
    pub fn instruction(&self, file: &str) -> PathBuf {
        self.instruction_set_dir().join(file)
    }

    /// `instruction-set/final-report-schema.json`, the schema the report is
    /// written against.
    pub fn report_schema(&self) -> PathBuf {
        self.instruction(REPORT_SCHEMA_NAME)
    }

    /// `inputs/`.
    pub fn inputs_dir(&self) -> PathBuf {
        self.dir.join(INPUTS)
    }

    /// `inputs/task-brief.md`, the copy of the task brief.
    pub fn task_brief(&self) -> PathBuf {
        self.inputs_dir().join("task-brief.md")
    }

    /// `inputs/clarification-response.md`, the answers a continued run got.
    pub fn clarification_response(&self) -> PathBuf {
        self.inputs_dir().join("clarification-response.md")
    }

    /// `inputs/approved-plan.md`, the plan an implementation run carries out.
    pub fn approved_plan(&self) -> PathBuf {
        self.inputs_dir().join("approved-plan.md")
    }
}

/// What a prompt path gets appended to name its status sidecar.
pub const SIDECAR_SUFFIX: &str = ".status.json";

/// `<prompt>.status.json`: the status sidecar of the dispatch whose prompt
/// is `prompt_path`, beside the prompt path as given (a symlinked prompt
/// gets its sidecar next to the link, not next to the target).
pub fn sidecar(prompt_path: &Path) -> PathBuf {
    let mut path = prompt_path.as_os_str().to_owned();
    path.push(SIDECAR_SUFFIX);
    PathBuf::from(path)
}

/// `<prompt minus .md>.log`: the worker log of the dispatch whose prompt is
/// `prompt_path` (`<prompt>.log` when the name does not end in `.md`).
pub fn log(prompt_path: &Path) -> PathBuf {
    let full = prompt_path.as_os_str().as_bytes();
    let name_is_md = prompt_path
        .file_name()
        .is_some_and(|name| name.as_bytes().ends_with(b".md"));
    let base = match full.strip_suffix(b".md") {
        Some(stem) if name_is_md => stem,
        _ => full,
    };
    let mut log = OsStr::from_bytes(base).to_owned();
    log.push(".log");
    PathBuf::from(log)
}

/// The sidecar and log of attempt `attempt`: [`sidecar`] and [`log`] for
/// attempt 1 (the reference wrapper's names), `<prompt>.attempt-N.status.json`
/// and `<prompt minus .md>.attempt-N.log` after it, so a later attempt never
/// overwrites an earlier one's.
pub fn attempt_files(prompt_path: &Path, attempt: u32) -> (PathBuf, PathBuf) {
    let sidecar_path = sidecar(prompt_path);
    let log_path = log(prompt_path);
    if attempt <= 1 {
        return (sidecar_path, log_path);
    }
    let mut sidecar_name = prompt_path.as_os_str().to_owned();
    sidecar_name.push(format!(".attempt-{attempt}{SIDECAR_SUFFIX}"));
    let log_bytes = log_path.as_os_str().as_bytes();
    let stem = log_bytes.strip_suffix(b".log").unwrap_or(log_bytes);
    let mut log_name = OsStr::from_bytes(stem).to_owned();
    log_name.push(format!(".attempt-{attempt}.log"));
    (PathBuf::from(sidecar_name), PathBuf::from(log_name))
}

/// `<prompt minus .md>.attempt-N.task.md`: what `okstra next` hands the
/// host for attempt `attempt` of a `native-session` dispatch — the pointer
/// to the prompt and the attempt's tagged marker line. The prompt itself is
/// never rewritten, so its bytes (and the completed attempts they key)
/// stay the same across attempts and resumes.
pub fn task_file(prompt_path: &Path, attempt: u32) -> PathBuf {
    let log_path = log(prompt_path);
    let bytes = log_path.as_os_str().as_bytes();
    let stem = bytes.strip_suffix(b".log").unwrap_or(bytes);
    let mut name = OsStr::from_bytes(stem).to_owned();
    name.push(format!(".attempt-{attempt}.task.md"));
    PathBuf::from(name)
}

/// Whether `name` is the file name of a status sidecar.
pub fn is_sidecar_name(name: &str) -> bool {
    name.ends_with(SIDECAR_SUFFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_the_reference() {
        assert_eq!(log(Path::new("/r/claude.md")), Path::new("/r/claude.log"));
        assert_eq!(
            log(Path::new("/r/prompt.txt")),
            Path::new("/r/prompt.txt.log")
        );
        assert_eq!(log(Path::new("/r/a.b.md")), Path::new("/r/a.b.log"));
        assert_eq!(log(Path::new("/r/.md")), Path::new("/r/.log"));
        assert_eq!(log(Path::new("rel.md")), Path::new("rel.log"));
        assert_eq!(
            sidecar(Path::new("/r/claude.md")),
            Path::new("/r/claude.md.status.json")
        );
    }

    #[test]
    fn later_attempts_get_their_own_files() {
        let prompt = Path::new("/r/prompts/claude-worker.md");
        assert_eq!(attempt_files(prompt, 1), (sidecar(prompt), log(prompt)));
        assert_eq!(
            attempt_files(prompt, 2),
            (
                PathBuf::from("/r/prompts/claude-worker.md.attempt-2.status.json"),
                PathBuf::from("/r/prompts/claude-worker.attempt-2.log")
            )
        );
    }

    #[test]
    fn every_file_has_its_one_name() {
        let layout = RunLayout::of(Path::new("/r"));
        let cases: [(PathBuf, &str); 25] = [
            (layout.steps_journal(), "/r/state/steps.json"),
            (layout.lease(), "/r/state/run.lease"),
            (layout.run_manifest(), "/r/run-manifest.json"),
            (layout.task_manifest(), "/r/task-manifest.json"),
            (layout.handoff(), "/r/handoff.md"),
            (layout.team_state("run-1"), "/r/state/team-state-run-1.json"),
            (layout.lead_events(), "/r/state/lead-events.jsonl"),
            (
                layout.convergence_ledger(),
                "/r/state/convergence-ledger.json",
            ),
            (layout.round_plan(2), "/r/state/round-plan-r2.json"),
            (layout.report_inputs(), "/r/state/report-inputs.json"),
            (layout.dispatch_log(), "/r/state/dispatch.log"),
            (layout.heartbeat("w"), "/r/state/heartbeats/w.jsonl"),
            (layout.prompt("w"), "/r/prompts/w.md"),
            (layout.result("w"), "/r/results/w.md"),
            (layout.worker_results("w"), "/r/results/w.worker-results.md"),
            (layout.error("w"), "/r/results/w.error.md"),
            (layout.report_data(), "/r/report/data.json"),
            (
                layout.report_schema(),
                "/r/instruction-set/final-report-schema.json",
            ),
            (layout.task_brief(), "/r/inputs/task-brief.md"),
            (
                layout.clarification_response(),
                "/r/inputs/clarification-response.md",
            ),
            (layout.approved_plan(), "/r/inputs/approved-plan.md"),
            (sidecar(&layout.prompt("w")), "/r/prompts/w.md.status.json"),
            (log(&layout.prompt("w")), "/r/prompts/w.log"),
            (
                attempt_files(&layout.prompt("w"), 2).0,
                "/r/prompts/w.md.attempt-2.status.json",
            ),
            (
                attempt_files(&layout.prompt("w"), 2).1,
                "/r/prompts/w.attempt-2.log",
            ),
        ];
        for (path, expected) in cases {
            assert_eq!(path, Path::new(expected));
        }
        assert_eq!(
            attempt_files(&layout.prompt("w"), 1).0,
            sidecar(&layout.prompt("w"))
        );
        assert_eq!(
            task_file(&layout.prompt("w"), 1),
            Path::new("/r/prompts/w.attempt-1.task.md")
        );
        assert!(is_sidecar_name("w.md.attempt-3.status.json"));
        assert!(!is_sidecar_name("w.md"));
    }

    #[test]
    fn the_relative_layout_names_files_inside_the_run() {
        let layout = RunLayout::relative();
        assert_eq!(layout.run_manifest(), Path::new("run-manifest.json"));
        assert_eq!(layout.team_state("r"), Path::new("state/team-state-r.json"));
        assert_eq!(layout.dir(), Path::new(""));
    }
}
