//! Command-line types (clap derive) and nothing else: no defaults that depend
//! on the environment or the filesystem (those are resolved in `settings`).
//!
//! `okstra` with flags prepares a run and starts the lead; the subcommands do
//! the deterministic work a lead must not improvise. `provider-exec` is not
//! parsed here: its positional contract and exit codes (64–69) come from the
//! reference wrapper, so `provider_exec` parses its own argv.

#![expect(
    clippy::doc_markdown,
    reason = "doc comments are the command-line help text, shown verbatim"
)]
// The same reason for rustdoc: `<provider>` and `[role]` are usage syntax in
// the help text, not HTML or links, and a URL in an example is typed, not
// followed. (`allow`: rustc itself never runs these lints, so an `expect`
// would always be unfulfilled.)
#![allow(
    rustdoc::invalid_html_tags,
    rustdoc::broken_intra_doc_links,
    rustdoc::bare_urls
)]

use std::path::PathBuf;

use clap::builder::{PossibleValue, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueHint};

use crate::catalog::{Focus, LeadRuntime, Provider, TaskType};
use crate::cli_examples as examples;

mod converge_args;
mod drive_args;
mod model_flags;
mod report_args;

pub use converge_args::*;
pub use drive_args::*;
pub use model_flags::ProviderModels;
pub use report_args::*;

/// The values of a closed set, offered to shell completion and shown in
/// help, while any text is accepted here: the value is checked where it is
/// resolved (`settings`, `doctor`), whose refusal names the value and what
/// is expected, and where a terminal may ask again instead.
#[derive(Clone)]
pub struct Offered(Vec<&'static str>);

impl Offered {
    fn of<T: Copy + Into<&'static str>>(set: &'static [T]) -> Offered {
        Offered(set.iter().map(|value| (*value).into()).collect())
    }

    fn words(words: &'static [&'static str]) -> Offered {
        Offered(words.to_vec())
    }
}

impl TypedValueParser for Offered {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            self.0.iter().map(|value| PossibleValue::new(*value)),
        ))
    }
}

/// Multi-provider, cross-verified AI work on a code base
///
/// okstra prepares a run for one question about a project (a task-keyed bundle
/// of rendered prompts and validated manifests), then starts the lead session
/// on it. The lead dispatches independent workers from several providers, they
/// check each other's findings, and one schema-validated report comes out.
#[derive(Debug, Parser)]
#[command(
    name = "okstra",
    verbatim_doc_comment,
    version,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    max_term_width = 100,
    after_help = examples::START,
    after_long_help = examples::TOP
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub launch: LaunchArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Ask one question about the project: a whole cross-verified run, in one line
    ///
    /// The question is the only input: inline, `-` to read it from stdin, or
    /// --task-brief FILE. Everything else is defaulted without a model call
    /// and shown before starting: the task type project-analysis (asked on
    /// a terminal), the project id from the repository's name, the task
    /// group `ask`, a new task id made from the question, the default
    /// roster. Then the preflight, the plan and its estimate, and the run
    /// headless — the same as `okstra run` — with the live view and a
    /// closing summary. --lead starts the lead host's session instead.
    #[command(verbatim_doc_comment, after_long_help = examples::ASK)]
    Ask(Box<AskArgs>),
    /// Run one provider CLI headless under okstra's supervisor.
    ///
    /// Usage: okstra provider-exec <provider> <project-root> <model> <prompt-path>
    /// [worktree-path] [role] [idle-timeout-seconds]. Also installed as
    /// `okstra-<provider>-exec`. See docs/provider-exec.md for the exit codes and the status sidecar.
    #[command(disable_help_flag = true)]
    ProviderExec {
        /// The wrapper's positional arguments.
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "ARG"
        )]
        args: Vec<std::ffi::OsString>,
    },
    /// Check a final report (data.json) against its schema and invariants.
    ///
    /// Says which level it ran: `records` on a report inside its run folder
    /// (also against the roster, the worker results and, from 2.1 on, the
    /// attempt records, the usage recorded for each attempt and the
    /// convergence ledger); `schema` on a report folder without its run, such
    /// as a CI artifact (the schema and the report's own invariants only).
    /// Exit: 0 valid, 1 invalid, 2 could not check.
    #[command(verbatim_doc_comment, after_long_help = examples::VALIDATE)]
    Validate(ValidateArgs),
    /// Gate on a run's findings: fail on any at or above a severity
    ///
    /// Decides, in this order: 3 when the report does not validate; 1 when a
    /// counted finding is at or above --fail-on (each listed on stdout, one
    /// line each); 3 when the run was not cross-verified, is still running or
    /// was stopped by its budget; otherwise 0. 2 for bad input.
    #[command(verbatim_doc_comment, after_long_help = examples::GATE)]
    Gate(GateArgs),
    /// Post a run's findings where reviews happen (a GitHub pull request)
    #[command(subcommand)]
    Publish(PublishCommand),
    /// Derive the handoff Markdown and the human HTML from a final report.
    #[command(after_long_help = examples::REPORT)]
    Report(ReportArgs),
    /// Append one lead event to a run's event log
    ///
    /// okstra records these kinds itself (`okstra next`, `okstra run`,
    /// `okstra submit`, `okstra land`, the engine): run-start, run-resume,
    /// phase-start, worker-complete, worker-terminal, convergence-skipped,
    /// round-complete, fix-pass, fix-pass-skipped, fix-check, landed,
    /// usage-collected, report-repair, report-validated, run-complete,
    /// run-interrupted, run-failed, run-cancelled, budget-stop,
    /// worker-held, result-refused, ask-user, user-answer.
    /// A lead records only what okstra cannot find alone: a session id
    /// (`session --field sessionId=<id>`) or the totals its host shows
    /// (`lead-usage`).
    #[command(verbatim_doc_comment, after_long_help = examples::EVENT)]
    Event(EventArgs),
    /// Show the state of every worker in a run (or in every run of a project).
    #[command(after_long_help = examples::STATUS)]
    Status(StatusArgs),
    /// Find and stop worker process groups whose wrapper died.
    Reap(ReapArgs),
    /// Apply an implementation run's change to the working tree, through the landing gate
    ///
    /// Lands only when the change on the run's branch is verified on its
    /// tip, no confirmed blocking or major defect is open, the run's base is
    /// still an ancestor of HEAD, and every file can be written without
    /// touching an uncommitted edit; then every file is written, nothing
    /// else. Otherwise nothing is written and each reason is one line:
    /// verification-incomplete, fix-unverified, defects-open,
    /// base-not-ancestor, conflict, dirty-overlap, symlink-outside. Exit 0
    /// landed (or landable with --check), 1 blocked, 2 bad input.
    #[command(verbatim_doc_comment, after_long_help = examples::LAND)]
    Land(LandArgs),
    /// List (or remove) what finished or dead runs left: copies, refs, branches, logs
    ///
    /// Only what okstra recorded: copies beneath okstra's workspaces folder
    /// holding okstra's marker for the run, snapshot refs under
    /// refs/okstra/, run branches still at the commit okstra made that
    /// landed or are older than --older-than, the logs of the run folders
    /// under .okstra/, and the .okstra/.staging-* folders of killed
    /// renders. A run whose lease is held is never touched. A dry run
    /// unless --execute.
    #[command(verbatim_doc_comment, after_long_help = examples::CLEANUP)]
    Cleanup(CleanupArgs),
    /// Start a run's wrapper workers, recover their results, classify every ending
    ///
    /// Selects the run's `cli-wrapper` dispatches of one kind, records each
    /// attempt in the team state before it starts, runs them concurrently
    /// under provider-exec, writes each Result Path from the CLI's final
    /// message, and spends one shared retry on a retryable ending.
    #[command(verbatim_doc_comment, after_long_help = examples::DISPATCH)]
    Dispatch(DispatchArgs),
    /// Stop a run's live work: its driver and wrappers; the run stays resumable
    ///
    /// Asks the driver that holds the run (`okstra run`, `okstra dispatch`,
    /// a detached dispatcher) to stop, stops wrappers nobody drives any
    /// more, and records their attempts `cancelled`. `okstra run <run-dir>`
    /// resumes the run afterwards; cancelled attempts run again without
    /// spending their retry.
    #[command(verbatim_doc_comment, after_long_help = examples::CANCEL)]
    Cancel(CancelArgs),
    /// Wait until every selected dispatch of a run has ended, then summarise
    ///
    /// Exit 0 when all completed, 1 when any did not (or --timeout passed).
    #[command(verbatim_doc_comment, after_long_help = examples::AWAIT)]
    Await(AwaitArgs),
    /// Put the wrappers on PATH and okstra into Claude Code, Codex or Antigravity
    ///
    /// Without a host flag only the `okstra-<provider>-exec` links are made.
    /// Everything written is recorded in `$XDG_STATE_HOME/okstra/install.json`
    /// (default `~/.local/state/okstra/install.json`) so `--uninstall` removes
    /// exactly that. Running it twice changes nothing the second time.
    #[command(verbatim_doc_comment, after_long_help = examples::INSTALL)]
    Install(InstallArgs),
    /// Check each provider CLI: installed, the right program, credentials, a headless probe
    ///
    /// Exit code: 0 when every provider of the default roster (claude, codex) —
    /// or every provider named with --provider — is ready, 1 otherwise.
    #[command(verbatim_doc_comment, after_long_help = examples::DOCTOR)]
    Doctor(DoctorArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(after_long_help = examples::COMPLETIONS)]
    Completions(CompletionsArgs),
    /// Print a manual page (roff): okstra's own, or one command's
    #[command(after_long_help = examples::MAN)]
    Man(ManArgs),
    /// Print a JSON Schema okstra checks against, or list them
    ///
    /// Without NAME, lists every schema the binary embeds, one a line: its
    /// name and title. With NAME (`gate-answer`, or the file name
    /// `gate-answer.schema.json`), prints that schema: each `--json`
    /// answer's (docs/answers.md), the final report's, the manifests'.
    #[command(verbatim_doc_comment, after_long_help = examples::SCHEMA)]
    Schema(SchemaArgs),
    /// Count tokens and cost: one run's (recorded in its team state), or
    /// every run's since a day, per day and provider
    #[command(verbatim_doc_comment, after_long_help = examples::USAGE)]
    Usage(UsageArgs),
    /// Carry out a whole run headless: workers, convergence, report.
    ///
    /// With a run folder, runs it; with the launcher's flags instead,
    /// renders a headless run first (every worker through okstra's
    /// wrapper). Dispatches the analysers, converges round by round,
    /// dispatches the critic and the report writer, validates (one repair
    /// attempt), and renders the report. Exit 0 with a valid report, 1
    /// without one.
    #[command(after_long_help = examples::RUN)]
    Run(Box<RunArgs>),
    /// What a host lead does next: okstra advances the run and names the host's tasks
    ///
    /// Takes the run's lease when it is free and does everything okstra can
    /// without the host: starts wrapper workers in the background, plans and
    /// records convergence rounds, computes coverage and usage, validates,
    /// repairs and renders the report, and writes the lead events. Then it
    /// answers with one state: `host-work` (tasks only the host can do: run a
    /// native sub-agent on a task file, ask the user), `waiting` (okstra's
    /// workers run), `done` (the report) or `failed` (why, and how to resume).
    /// Idempotent: calling it again hands out the same tasks.
    #[command(verbatim_doc_comment, after_long_help = examples::NEXT)]
    Next(NextArgs),
    /// Hand okstra a native task's answer, or the user's answer to a question
    ///
    /// The answer (the sub-agent's final message) comes from FILE or stdin.
    /// Accepted only for a native-session task `okstra next` handed out, whose
    /// result block carries that attempt's tag; okstra writes the Result Path
    /// and closes the attempt. Exit 0 completed (or the same answer again), 1
    /// recorded without a result (`empty-output`), 2 refused.
    #[command(verbatim_doc_comment, after_long_help = examples::SUBMIT)]
    Submit(SubmitArgs),
    /// Run as a host hook (installed by `/okstra` and `okstra install`)
    ///
    /// `subagent-stop` reads the host's hook input on stdin (Claude Code and
    /// Codex pass `last_assistant_message` and `agent_id`) and hands an okstra
    /// task's answer to `okstra submit`'s checks. It never blocks the host:
    /// it always exits 0 and prints nothing on stdout.
    #[command(verbatim_doc_comment)]
    Hook(HookArgs),
    /// The background driver `okstra next` starts (not for people).
    #[command(name = "__drive", hide = true)]
    Drive(DriveArgs),
    /// List every item of the run's completed analysers.
    #[command(after_long_help = examples::ITEMS)]
    Items(ItemsArgs),
    /// Compute the report writer's inputs: the other workers' coverage.
    ///
    /// Writes `state/report-inputs.json` (workerCoverage from the dispatch
    /// records, reliability, verification) and prints it. The report's own
    /// workerCoverage and usageSummary okstra writes after the writer ends.
    Coverage(CoverageArgs),
    /// Parse command lines (a JSON array of argv arrays on stdin) without
    /// running them; for the bundle's contract test.
    #[command(name = "__check-args", hide = true)]
    CheckArgs,
    /// Phase 5.5 convergence: plan a round, record its verdicts, classify
    #[command(verbatim_doc_comment, after_long_help = examples::CONVERGE)]
    Converge(ConvergeArgs),
}

/// The launcher's flags (SPEC §3).
#[derive(Debug, Args, Default, Clone)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "each bool is one command-line switch"
)]
#[command(next_help_heading = "Launch")]
pub struct LaunchArgs {
    /// Render the host-neutral bundle and print the handoff prompt's path;
    /// start no session.
    #[arg(long)]
    pub render_only: bool,

    /// Never prompt. Every required argument must be given.
    #[arg(long, short = 'y')]
    pub yes: bool,

    /// Start even when a provider's CLI is missing, a look-alike, or has no
    /// credentials that okstra can see (a login in a system keychain).
    #[arg(long)]
    pub no_preflight: bool,

    /// Render for a run with no host session: every worker is a
    /// `cli-wrapper` (the `external` lead runtime). Implied by `okstra run`.
    #[arg(long)]
    pub headless: bool,

    /// Skip the plan-verification step of implementation planning.
    #[arg(long)]
    pub no_plan_verification: bool,

    /// Print one JSON object (runDir, handoffPrompt, runManifest, taskManifest)
    /// on stdout instead of the handoff path.
    #[arg(long)]
    pub json: bool,

    /// Phase profile: the kind of work, e.g. project-analysis or error-analysis.
    ///
    /// One of requirements-discovery, error-analysis,
    /// implementation-planning, project-analysis, feature-analysis,
    /// change-impact-analysis or implementation. Default: the previous run's
    /// workflow.nextRecommendedPhase when resuming a task key.
    #[arg(long, value_name = "TASK_TYPE", value_parser = Offered::of(TaskType::ALL), hide_possible_values = true)]
    pub task_type: Option<String>,

    /// A variant of the task type's profile: `defects` is the defect hunt of
    /// project-analysis.
    ///
    /// With `--focus defects` every claim a worker writes is a defect (the
    /// input that triggers it, what happens, what should), with a
    /// reproduction where one can run, ranked by how likely a user hits it;
    /// the description shrinks to a paragraph of scope. `okstra ask` picks it
    /// for a question that asks for bugs, defects or vulnerabilities.
    #[arg(long, value_name = "FOCUS", value_parser = Offered::of(Focus::ALL))]
    pub focus: Option<String>,

    /// Comma-separated roster. Providers: claude, codex, antigravity, grok,
    /// kimi; plus report-writer. [default: claude,codex,report-writer]
    #[arg(long, value_name = "W1,W2,...")]
    pub workers: Option<String>,

    /// Assert which provider hosts the lead (claude, codex, antigravity); must
    /// match --lead-runtime.
    #[arg(long, value_name = "PROVIDER")]
    pub lead_provider: Option<String>,

    /// Model of the host-native lead. [default: OKSTRA_DEFAULT_LEAD_MODEL, else
    /// the host's policy: opus for Claude, gpt-5.6-sol for Codex,
    /// gemini-3.1-pro for Antigravity]
    #[arg(long, value_name = "MODEL")]
    pub lead_model: Option<String>,

    /// Per-provider worker model overrides, e.g. grok=grok-4.5,kimi=kimi-k3.
    /// Applies to every role of that provider except the report writer.
    #[arg(long, value_name = "PROVIDER=MODEL,...")]
    pub worker_model: Option<String>,

    /// The providers' own worker model flags (`--<provider>-model`).
    #[command(flatten)]
    pub provider_models: ProviderModels,

    /// Provider of the report writer: claude or codex. [default: claude]
    #[arg(long, value_name = "PROVIDER")]
    pub report_writer_provider: Option<String>,

    /// Report writer model. [default: OKSTRA_DEFAULT_REPORT_WRITER_MODEL, else
    /// sonnet for claude, gpt-5.6-sol for codex]
    #[arg(long, value_name = "MODEL")]
    pub report_writer_model: Option<String>,

    /// Lead runtime adapter: claude-code, codex, antigravity or external.
    /// [default: claude-code]
    #[arg(long, value_name = "RUNTIME", value_parser = Offered::of(LeadRuntime::ALL))]
    pub lead_runtime: Option<String>,

    /// Executor of an implementation run: claude, codex or antigravity; the
    /// only worker allowed to change project files. [default:
    /// OKSTRA_DEFAULT_EXECUTOR, else claude]
    #[arg(long, value_name = "PROVIDER")]
    pub executor: Option<String>,

    /// Provider of the optional Phase 5.6 critic pass: off, claude, codex,
    /// antigravity, grok or kimi; it must be on the roster. [default: off]
    #[arg(long, value_name = "PROVIDER|off")]
    pub critic: Option<String>,

    /// Comma-separated related task ids, e.g. auth-token-refresh,login-ui.
    #[arg(long, value_name = "T1,T2,...")]
    pub related_tasks: Option<String>,

    /// Kind of work: feature, bugfix, refactor, performance, security,
    /// reliability, docs, tests, build or chore.
    #[arg(long, value_name = "CATEGORY")]
    pub work_category: Option<String>,

    /// Project id, the first part of the task key (a safe slug).
    #[arg(long, value_name = "SLUG")]
    pub project_id: Option<String>,

    /// Root of the project under study; the bundle goes in its `.okstra/`.
    /// [default: the current directory]
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub project_root: Option<PathBuf>,

    /// Task group, the second part of the task key (a safe slug).
    #[arg(long, value_name = "SLUG")]
    pub task_group: Option<String>,

    /// Task id, the third part of the task key (a safe slug).
    #[arg(long, value_name = "SLUG")]
    pub task_id: Option<String>,

    /// The joined task key `<project-id>/<task-group>/<task-id>`, instead of
    /// the three flags.
    #[arg(long, value_name = "PROJECT/GROUP/TASK")]
    pub task_key: Option<String>,

    /// Markdown file with the question or task; must exist and not be empty.
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub task_brief: Option<PathBuf>,

    /// One extra instruction for the lead and every worker.
    #[arg(long, value_name = "TEXT")]
    pub directive: Option<String>,

    /// Whether an implementation run may cycle back to the executor to fix
    /// what verifiers found: yes or no. [default: yes]
    #[arg(long, value_name = "yes|no", value_parser = Offered::words(&["yes", "no"]))]
    pub fix_cycle: Option<String>,

    /// Continue the latest requirements-discovery or error-analysis run of the
    /// task key with answers to its clarification questions (asked for on the
    /// terminal).
    #[arg(long)]
    pub resume_clarification: bool,

    /// File with answers to a previous run's clarification questions.
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub clarification_response: Option<PathBuf>,

    /// File with the approved plan an implementation run carries out.
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub approved_plan: Option<PathBuf>,

    /// Scope the run to a change: `BASE...HEAD` (HEAD must be the commit
    /// checked out). Its diff goes into the brief, and a finding whose lines
    /// lie outside the changed hunks is marked pre-existing (see `okstra
    /// gate --new-only`).
    #[arg(long, value_name = "BASE...HEAD")]
    pub diff: Option<String>,
}

/// `okstra install` (its help text is on the `Command` variant).
#[derive(Debug, Args)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "each bool is one command-line switch"
)]
pub struct InstallArgs {
    /// Folder for the `okstra-<provider>-exec` links. [default: the folder of
    /// the running okstra]
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub bin_dir: Option<PathBuf>,

    /// Add the `/okstra` skill and the reap hooks to Claude Code (honours
    /// `CLAUDE_CONFIG_DIR`).
    #[arg(long)]
    pub claude_code: bool,

    /// Add the `okstra` skill and a reap hook to Codex (honours `CODEX_HOME`).
    #[arg(long)]
    pub codex: bool,

    /// Add the `/okstra` skill to Antigravity (agy); it gets no hook.
    #[arg(long)]
    pub antigravity: bool,

    /// Show every file that would be written or changed (a diff for merged
    /// settings) and change nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Remove what earlier installs recorded, and only that.
    #[arg(long, conflicts_with_all = ["claude_code", "codex", "antigravity", "bin_dir"])]
    pub uninstall: bool,
}

/// `okstra doctor` (its help text is on the `Command` variant).
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,

    /// Also run each CLI headless once through provider-exec (a tiny prompt,
    /// 20 s idle timeout) and report how it ended. Spends a few tokens.
    #[arg(long)]
    pub probe: bool,

    /// Check only these providers (repeatable or comma-separated): claude,
    /// codex, antigravity, grok, kimi. [default: all five]
    #[arg(long = "provider", value_name = "PROVIDER", value_delimiter = ',', value_parser = Offered::of(Provider::ALL))]
    pub providers: Vec<String>,
}

/// `okstra completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to print a completion script for.
    #[arg(value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// `okstra man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// The command whose page to print, as typed (`converge plan`) or as
    /// its page is named (`converge-plan`, `okstra-converge-plan`).
    /// [default: okstra's own page]
    #[arg(value_name = "COMMAND", num_args = 0..)]
    pub command: Vec<String>,
}

/// `okstra schema`.
#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// The schema to print, with or without its `.schema.json` ending.
    /// [default: list them]
    #[arg(value_name = "NAME")]
    pub name: Option<String>,
}

/// `okstra usage`.
#[derive(Debug, Args)]
pub struct UsageArgs {
    /// The run folder whose dispatch logs and lead sessions are counted (or
    /// a report folder or data.json: its `usageSummary`). Without it, every
    /// run of yours since --since, per day and provider.
    #[arg(value_name = "RUN_DIR", value_hint = ValueHint::AnyPath)]
    pub run_dir: Option<PathBuf>,

    /// Print JSON (for one run the final report's `usageSummary` shape)
    /// instead of a table.
    #[arg(long)]
    pub json: bool,

    /// One run: a row per attempt and per provider too, not only per worker.
    #[arg(long, requires = "run_dir")]
    pub attempts: bool,

    /// Across runs: from this long ago (`7d`, `24h`) or this day
    /// (`2026-11-01`, UTC). [default: 7d]
    #[arg(long, value_name = "DURATION|DATE", conflicts_with = "run_dir", value_hint = ValueHint::Other)]
    pub since: Option<String>,

    /// Across runs: only this project's.
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath, conflicts_with = "run_dir")]
    pub project_root: Option<PathBuf>,
}

/// `okstra run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// A rendered run folder to carry out. Without it, the launcher flags
    /// below render a headless one first.
    #[arg(value_name = "RUN_DIR", value_hint = ValueHint::DirPath)]
    pub run_dir: Option<PathBuf>,

    /// Gate the finished run as `okstra gate --fail-on` does (its exit
    /// codes replace the run's: 0, 1 findings, 3 no reliable answer).
    #[arg(long, value_name = "SEVERITY", value_parser = crate::vocab::parse_threshold, help_heading = "Gate")]
    pub fail_on: Option<crate::vocab::Severity>,

    #[command(flatten)]
    pub gate: GateRules,

    #[command(flatten)]
    pub launch: LaunchArgs,

    #[command(flatten)]
    pub engine: EngineArgs,
}

/// `okstra ask`.
#[derive(Debug, Args)]
pub struct AskArgs {
    /// The question (several words are joined), or `-` to read it from
    /// stdin. Without it: --task-brief FILE, or asked on a terminal.
    #[arg(value_name = "QUESTION", num_args = 0.., value_hint = ValueHint::Other)]
    pub question: Vec<String>,

    /// Start the lead host's own session on the run (Claude Code by
    /// default; see --lead-runtime) instead of running it headless.
    #[arg(long)]
    pub lead: bool,

    #[command(flatten)]
    pub launch: LaunchArgs,

    #[command(flatten)]
    pub engine: EngineArgs,
}

/// `okstra next`.
#[derive(Debug, Args)]
pub struct NextArgs {
    /// The run folder.
    #[arg(value_name = "RUN_DIR", value_hint = ValueHint::DirPath)]
    pub run_dir: PathBuf,

    /// Print the answer as one JSON object.
    #[arg(long)]
    pub json: bool,

    /// While the answer would be `waiting`, block (taking okstra's steps as
    /// they come due) and answer once the state changes.
    #[arg(long)]
    pub wait: bool,

    /// With --wait: give up after this long (e.g. `5m`) and answer as things
    /// stand. [default: 9m, under a host shell's ten-minute limit]
    #[arg(long, value_name = "DURATION", requires = "wait", value_parser = humantime::parse_duration)]
    pub timeout: Option<std::time::Duration>,

    /// Resume a run that failed or was cancelled (without it, such a run
    /// answers `failed` or `cancelled` again and nothing is spent): each
    /// worker whose last attempt ended for a reason the user can fix gets
    /// one fresh attempt, and stopped ones run again.
    #[arg(long)]
    pub resume: bool,

    #[command(flatten)]
    pub engine: EngineArgs,
}

/// `okstra __drive`.
#[derive(Debug, Args)]
pub struct DriveArgs {
    /// The run folder.
    #[arg(value_name = "RUN_DIR", value_hint = ValueHint::DirPath)]
    pub run_dir: PathBuf,

    /// This batch resumes the run (`okstra next --resume`): a worker whose
    /// last attempt ended for a reason the user can fix gets one fresh
    /// attempt.
    #[arg(long)]
    pub resume: bool,

    #[command(flatten)]
    pub engine: EngineArgs,
}

/// The engine flags alone, parsed from an argument list (their defaults,
/// and the arguments a background driver is given).
#[derive(Debug, Parser)]
#[command(name = "okstra")]
pub struct EngineDefaults {
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// `okstra submit`.
#[derive(Debug, Args)]
pub struct SubmitArgs {
    /// The run folder.
    #[arg(value_name = "RUN_DIR", value_hint = ValueHint::DirPath)]
    pub run_dir: PathBuf,

    /// The task's name as `okstra next` gave it: a native dispatch
    /// (`claude-worker`) or a question (`approval`, `clarification`).
    #[arg(value_name = "DISPATCH_NAME")]
    pub dispatch_name: String,

    /// A file holding the answer, or `-` for stdin. [default: stdin]
    #[arg(value_name = "FILE|-", value_hint = ValueHint::FilePath)]
    pub input: Option<PathBuf>,

    /// The host's id of the sub-agent that answered (its transcript gives
    /// the attempt's usage).
    #[arg(long, value_name = "ID")]
    pub agent_id: Option<String>,
}

/// `okstra hook`.
#[derive(Debug, Args)]
pub struct HookArgs {
    /// The host event: `subagent-stop`.
    #[arg(value_name = "EVENT", value_enum)]
    pub event: HookEvent,
}

/// The host events okstra hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HookEvent {
    /// A sub-agent finished (Claude Code and Codex `SubagentStop`).
    SubagentStop,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn event_help_lists_exactly_the_kinds_okstra_writes() {
        let command = Cli::command();
        let help = command
            .find_subcommand("event")
            .and_then(|event| event.get_long_about())
            .map(ToString::to_string)
            .unwrap_or_default();
        let listed = help
            .split("the engine): ")
            .nth(1)
            .and_then(|rest| rest.split('.').next())
            .unwrap_or_default();
        let listed: Vec<&str> = listed.split(',').map(str::trim).collect();
        let written: Vec<&str> = crate::vocab::EventKind::ALL
            .iter()
            .filter(|kind| !kind.lead_may_write())
            .map(|kind| kind.as_str())
            .collect();
        assert_eq!(listed, written, "{help}");
    }

    #[test]
    fn subcommands_and_launch_flags_do_not_mix() {
        assert!(Cli::try_parse_from(["okstra", "--render-only", "validate", "x"]).is_err());
        let cli = Cli::try_parse_from(["okstra", "validate", "x", "--json"]).unwrap();
        assert!(matches!(cli.command, Some(Command::Validate(_))));
    }
}
