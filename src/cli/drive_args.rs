//! The flags of the commands that drive and watch a run: `event`,
//! `status`, `dispatch` (and the engine flags it shares with `run`),
//! `cancel`, `await`, `reap`, `land`, `cleanup`.

use super::{Args, PathBuf, ValueHint};

/// `okstra event`.
#[derive(Debug, Args)]
pub struct EventArgs {
    /// The run folder whose lead events log receives the event.
    #[arg(value_name = "RUN_DIR", value_hint = ValueHint::DirPath)]
    pub run_dir: PathBuf,

    /// Event kind, e.g. phase-start, worker-dispatched, phase-batch-cleanup.
    #[arg(value_name = "KIND")]
    pub kind: String,

    /// Extra `key=value` fields (repeatable).
    #[arg(long = "field", value_name = "KEY=VALUE")]
    pub fields: Vec<String>,
}

/// `okstra status`.
#[derive(Debug, Args)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "independent switches of one command line, as clap gives them"
)]
pub struct StatusArgs {
    /// A run folder. Without it, every run under --project-root is shown.
    #[arg(value_name = "RUN_DIR", value_hint = ValueHint::DirPath)]
    pub run_dir: Option<PathBuf>,

    /// Project whose `.okstra/` runs are shown. [default: the current directory]
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub project_root: Option<PathBuf>,

    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,

    /// Show every column whole (the runner too) instead of fitting 80
    /// columns.
    #[arg(long)]
    pub wide: bool,

    /// Over a project: every run's whole board (its workers, attention,
    /// attempts) instead of one line per run.
    #[arg(long)]
    pub all: bool,

    /// Redraw until every worker is terminal (one run) or no run is still
    /// going (a project).
    #[arg(long)]
    pub watch: bool,

    /// Only runs still going (outcome `running`): not ended with or without
    /// a report, not stopped.
    #[arg(long)]
    pub active: bool,

    /// Show the last N lines of each worker's log.
    #[arg(long, value_name = "N")]
    pub log_tail: Option<usize>,

    /// With --watch: how often to look again (e.g. `500ms`, `2s`). [default: 1s]
    #[arg(long, value_name = "DURATION", requires = "watch", value_parser = humantime::parse_duration)]
    pub interval: Option<std::time::Duration>,

    /// With --watch: give up after this long (e.g. `30m`); exit 1 if some
    /// worker is still not terminal.
    #[arg(long, value_name = "DURATION", requires = "watch", value_parser = humantime::parse_duration)]
    pub timeout: Option<std::time::Duration>,
}

/// `okstra dispatch`.
#[derive(Debug, Args)]
pub struct DispatchArgs {
    /// The run folder.
    #[arg(value_name = "RUN_DIR", value_hint = ValueHint::DirPath)]
    pub run_dir: PathBuf,

    /// Only these worker ids (comma-separated). The report writer is
    /// dispatched only when named here.
    #[arg(long, value_name = "ID,...")]
    pub workers: Option<String>,

    /// Which dispatches: initial, critic, retry, reverify-r<N> or fix-check.
    #[arg(long, value_name = "KIND", default_value = "initial", value_parser = crate::catalog::DispatchKind::parse)]
    pub kind: crate::catalog::DispatchKind,

    /// Print what would start (the CLI argv, never the prompt) and write nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Print the summary (or the dry run) as JSON.
    #[arg(long)]
    pub json: bool,

    /// Start a background dispatcher and return once its dispatches are
    /// recorded; its progress goes to `state/dispatch.log`.
    #[arg(long)]
    pub detach: bool,

    /// The fix pass of an implementation run: dispatch the Executor (named
    /// with --workers) once more, its prompt followed by the defects in FILE.
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath, conflicts_with_all = ["kind", "detach"])]
    pub fix: Option<PathBuf>,

    #[command(flatten)]
    pub engine: EngineArgs,
}

/// How the run engine runs attempts (shared by `dispatch` and `run`).
#[derive(Debug, Args, Clone)]
pub struct EngineArgs {
    /// Run at most N workers at once. [default: all]
    #[arg(long, value_name = "N")]
    pub max_parallel: Option<usize>,

    /// Hold each start back until this much memory is available.
    #[arg(long, value_name = "SIZE", default_value = "512M")]
    pub min_free_memory: String,

    /// Hold each start back until the project's filesystem has this much free.
    #[arg(long, value_name = "SIZE", default_value = "1G")]
    pub min_free_disk: String,

    /// Wait this long before retrying a rate-limited worker whose CLI named
    /// no retry-after (a hint it names is waited out first, without
    /// spending the retry).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = humantime::parse_duration)]
    pub retry_cooldown: std::time::Duration,

    /// Start no new attempt once the run's recorded cost reaches this many
    /// US dollars (running attempts finish).
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,

    /// Start no new attempt once the run's recorded tokens reach this many.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,

    /// At most N calls to a provider at once across all of this user's
    /// okstra runs, as PROVIDER=N[,PROVIDER=N…] over the defaults
    /// (claude=4, codex=4, antigravity=2, grok=2, kimi=2); 0 lifts a cap.
    /// An attempt waits, held, for a free slot.
    #[arg(long, value_name = "SPEC", env = "OKSTRA_PROVIDER_SLOTS")]
    pub provider_slots: Option<String>,

    /// Idle timeout handed to each wrapper, in seconds (0 disables).
    /// [default: the wrapper's, 600 s or 1500 s for executor and verifier]
    #[arg(long, value_name = "SECONDS")]
    pub idle_timeout: Option<u64>,

    /// Run a worker whose CLI has no read-only mode (kimi, grok) in the
    /// project itself when no isolated copy of the project can be made for
    /// it (a project outside git over the copy bound, or a failed copy);
    /// without it such an attempt is refused.
    #[arg(long)]
    pub allow_unisolated: bool,

    /// Also give every provider CLI the variable NAME (or, as `PREFIX*`,
    /// every variable starting with PREFIX); repeatable or comma-separated.
    /// A CLI otherwise sees only neutral variables and its own provider's.
    #[arg(
        long = "pass-env",
        value_name = "NAME",
        env = "OKSTRA_PASS_ENV",
        value_delimiter = ','
    )]
    pub pass_env: Vec<String>,
}

/// `okstra cancel`.
#[derive(Debug, Args)]
pub struct CancelArgs {
    /// The run folder.
    #[arg(value_name = "RUN_DIR", value_hint = ValueHint::DirPath)]
    pub run_dir: PathBuf,

    /// Only these workers' wrappers (comma-separated); the driver goes on.
    #[arg(long, value_name = "ID,...")]
    pub workers: Option<String>,

    /// Print what was stopped as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `okstra await`.
#[derive(Debug, Args)]
pub struct AwaitArgs {
    /// The run folder.
    #[arg(value_name = "RUN_DIR", value_hint = ValueHint::DirPath)]
    pub run_dir: PathBuf,

    /// Only dispatches of this kind: initial, critic, retry, reverify-r<N> or fix-check
    /// (a retry counts as the kind it retries). [default: every kind]
    #[arg(long, value_name = "KIND", value_parser = crate::catalog::DispatchKind::parse)]
    pub kind: Option<crate::catalog::DispatchKind>,

    /// Only these worker ids (comma-separated).
    #[arg(long, value_name = "ID,...")]
    pub workers: Option<String>,

    /// Give up after this long (e.g. `30m`); exit 1.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub timeout: Option<std::time::Duration>,

    /// Print the summary as one JSON document.
    #[arg(long)]
    pub json: bool,
}

/// `okstra reap`.
#[derive(Debug, Args)]
pub struct ReapArgs {
    /// Project whose `.okstra/` sidecars are scanned. [default: the current directory]
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub project_root: Option<PathBuf>,

    /// Stop the leftover process groups; without it, only list them.
    #[arg(long)]
    pub execute: bool,

    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `okstra land`.
#[derive(Debug, Args)]
pub struct LandArgs {
    /// The implementation run's folder.
    #[arg(value_name = "RUN_DIR", value_hint = ValueHint::DirPath)]
    pub run_dir: PathBuf,

    /// Only check: say whether the change can land, and why not; write nothing.
    #[arg(long)]
    pub check: bool,

    /// Print the outcome as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `okstra cleanup`.
#[derive(Debug, Args)]
pub struct CleanupArgs {
    /// Project whose runs are cleaned up. [default: the current directory]
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub project_root: Option<PathBuf>,

    /// A run that has not finished counts as dead, and an unlanded run
    /// branch as stale, once the run did nothing for this long (`0s`: now).
    #[arg(long, value_name = "DURATION", default_value = "7d", value_parser = humantime::parse_duration)]
    pub older_than: std::time::Duration,

    /// Remove what is listed; without it, only list.
    #[arg(long)]
    pub execute: bool,

    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}
