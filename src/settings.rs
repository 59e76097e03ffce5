//! Arguments + environment + catalog → one immutable, validated `Settings`.
//!
//! Precedence is always flag > environment > catalog. Every refusal happens
//! here, before anything is written: a bad value produces one line naming the
//! value and what is accepted. Missing required arguments are asked for on a
//! terminal (unless `--yes`), and are a usage error without one.
//!
//! Resolution is a list of steps (`resolve_with`). The task's history comes
//! from `resume` (settings reads it; `resume` never imports settings), and
//! `--resume-clarification`'s answers are asked for last, through `ask`, so
//! the `Settings` returned is final: nothing patches it afterwards.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use anyhow::{Context, Result, bail};
use regex::Regex;

use crate::ask::{Ask, Prompt, Terminal};
use crate::catalog::{
    self, Focus, LeadRuntime, Provider, REPORT_WRITER, Role, TaskType, WorkCategory, one_of,
};
use crate::cli::LaunchArgs;
use crate::providers::NativeModel;
use crate::resume::RunRef;
use crate::task_key::TaskKey;
use crate::{fsread, slug};

mod parse;
mod task;

use parse::{
    absolute, check_model, check_slug, flag_or_env, parse_executor, parse_value, parse_workers,
    read_nonempty, resolve_models,
};

/// Model execution values go into argv and file names: no blanks or controls.
static MODEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[A-Za-z0-9][A-Za-z0-9._:/@+\[\]-]{0,199}$").expect("the pattern is valid")
});

/// Where environment defaults come from (the real environment, or a map in tests).
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// How this run continues an earlier one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Continuation {
    /// A fresh task.
    None,
    /// Answers to an earlier run's clarification questions (a file).
    ClarificationResponse(PathBuf),
    /// Answers typed on the terminal for `--resume-clarification`.
    ClarificationAnswers(String),
    /// An approved plan that an implementation run carries out (a file).
    ApprovedPlan(PathBuf),
}

/// Everything a run needs, resolved and validated.
#[derive(Debug, Clone)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "independent switches of one run"
)]
pub struct Settings {
    pub task_type: TaskType,
    /// The variant of the task type's profile (`--focus`, or what `okstra
    /// ask` suggested for the question).
    pub focus: Option<Focus>,
    pub task_key: TaskKey,
    pub project_root: PathBuf,
    /// The brief's file; `None` when the question was given as text
    /// (`okstra ask "…"`, stdin, or typed at the prompt).
    pub task_brief: Option<PathBuf>,
    pub brief_text: String,
    pub lead_runtime: LeadRuntime,
    /// `None` only for the `external` runtime without `--lead-model`.
    pub lead_model: Option<String>,
    /// Analyser providers in roster order.
    pub analysers: Vec<Provider>,
    /// Report writer provider and model, when `report-writer` is rostered.
    pub report_writer: Option<(Provider, String)>,
    pub executor: Provider,
    pub critic: Option<Provider>,
    /// Worker models per provider and role, resolved.
    pub models: Models,
    pub related_tasks: Vec<String>,
    pub work_category: Option<WorkCategory>,
    pub directive: Option<String>,
    pub fix_cycle: bool,
    pub plan_verification: bool,
    pub continuation: Continuation,
    /// The earlier run this one continues (linked as `continues`).
    pub previous_run: Option<PathBuf>,
    pub render_only: bool,
    pub json: bool,
    /// `--yes`: nothing is asked (the plan is not confirmed).
    pub yes: bool,
    /// `--no-preflight`: the lead starts without checking the wrapper
    /// workers' CLIs.
    pub no_preflight: bool,
    /// The change the run is scoped to (`--diff`); its diff is already in
    /// `brief_text`.
    pub change: Option<crate::change::Change>,
    /// The engine settings the run keeps (`run::settings`): the engine
    /// flags of the command that renders it (`okstra run`, `okstra ask`).
    pub engine: crate::run::settings::RunSettings,
}

/// Worker model resolution for one run: explicit overrides, environment
/// defaults, then the catalog.
#[derive(Debug, Clone, Default)]
pub struct Models {
    explicit: BTreeMap<Provider, String>,
    env: BTreeMap<Provider, String>,
}

impl Models {
    /// The model a worker of `provider` gets in `role` (not the report writer).
    pub fn worker(&self, provider: Provider, role: Role) -> String {
        self.explicit
            .get(&provider)
            .or_else(|| self.env.get(&provider))
            .map_or_else(|| provider.default_model(role).to_owned(), Clone::clone)
    }
}

/// The task group of runs started without one (`okstra ask`, and the
/// default a prompt offers).
pub const DEFAULT_TASK_GROUP: &str = "ask";

use self::task::{focus, previous_run, task_brief, task_key, task_type};

/// What a launch knows besides its flags: `okstra ask`'s question, and
/// whether a missing task type falls back to [`DEFAULT_TASK_TYPE`](crate::profile::DEFAULT_TASK_TYPE) instead
/// of being required.
#[derive(Debug, Clone, Copy, Default)]
pub struct Inputs<'a> {
    /// The question as text (inline or read from stdin), instead of
    /// `--task-brief FILE`.
    pub question: Option<&'a str>,
    /// Without `--task-type`: ask on a terminal (this the default), use it
    /// without one.
    pub default_task_type: bool,
    /// The profile the question suggests (`profile::suggest`): the default
    /// task type in place of [`DEFAULT_TASK_TYPE`](crate::profile::DEFAULT_TASK_TYPE), and its focus when the
    /// run takes that task type without `--focus`.
    pub suggested: Option<crate::profile::Profile>,
}

/// Resolve and validate the launcher's arguments, asking on the terminal for
/// missing required values when prompting is allowed.
pub fn resolve(args: &LaunchArgs, env: EnvLookup<'_>, cwd: &Path) -> Result<Settings> {
    resolve_inputs(args, Inputs::default(), env, cwd)
}

/// [`resolve`], with what `okstra ask` adds to the flags.
pub fn resolve_inputs(
    args: &LaunchArgs,
    inputs: Inputs<'_>,
    env: EnvLookup<'_>,
    cwd: &Path,
) -> Result<Settings> {
    let interactive = !args.yes && crate::ask::is_interactive();
    resolve_full(args, inputs, env, cwd, interactive, &mut Terminal)
}

/// The project id a run gets when none is given: the name of the git
/// repository the project lies in (its top folder), else of the project
/// root, as a slug.
pub fn default_project_id(project_root: &Path) -> String {
    let top = project_root
        .ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(project_root);
    let name = top
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    slug::derive(&name, "project")
}

/// A task id made from `text` (a question's first words) that no earlier
/// task of `project_id`/`task_group` in the project uses.
pub fn unique_task_id(
    project_root: &Path,
    project_id: &str,
    task_group: &str,
    text: &str,
) -> String {
    let group = project_root
        .join(".okstra")
        .join("tasks")
        .join(project_id)
        .join(task_group);
    slug::unique(&slug::derive(text, "question"), |candidate| {
        group.join(candidate).exists()
    })
}

/// [`resolve_full`] without inputs given beside the flags.
#[cfg(test)]
pub fn resolve_with(
    args: &LaunchArgs,
    env: EnvLookup<'_>,
    cwd: &Path,
    interactive: bool,
    asker: &mut dyn Ask,
) -> Result<Settings> {
    resolve_full(args, Inputs::default(), env, cwd, interactive, asker)
}

/// Resolution in steps, in the order their refusals are checked: closed sets
/// and shapes first (cheap, independent of the filesystem), then where files
/// go, then what the task's history decides, then the inputs (`inputs`
/// beside the flags), and only then the clarification answers, if asked
/// for. On a terminal a missing brief is asked first (a file, or the
/// question itself), so the task id can default to one made from it.
pub(crate) fn resolve_full(
    args: &LaunchArgs,
    inputs: Inputs<'_>,
    env: EnvLookup<'_>,
    cwd: &Path,
    interactive: bool,
    asker: &mut dyn Ask,
) -> Result<Settings> {
    let mut prompt = Prompt {
        yes: args.yes,
        interactive,
        asker,
    };
    let lead_runtime = lead_runtime(args)?;
    let workers = workers(args, env)?;
    let fix_cycle = fix_cycle(args)?;
    let work_category = args
        .work_category
        .as_deref()
        .map(|raw| parse_value::<WorkCategory>("--work-category", raw))
        .transpose()?;
    let models = resolve_models(args, env)?;
    let report_writer_model = report_writer_model(args, env, workers.report_writer_provider)?;
    let lead_model = lead_model(args, env, lead_runtime)?;
    let related_tasks = related_tasks(args)?;
    let directive = directive(args)?;
    let request = continuation_request(args, cwd)?;

    let project_root = project_root(args, cwd)?;
    let early_brief =
        if prompt.interactive && inputs.question.is_none() && args.task_brief.is_none() {
            Some(task_brief(args, None, cwd, &mut prompt)?)
        } else {
            None
        };
    let task_key = task_key(
        args,
        &project_root,
        early_brief.as_ref().map(|(_, text)| text.as_str()),
        &mut prompt,
    )?;
    let history = crate::resume::runs(&project_root, &task_key)?;
    let previous = previous_run(&history, &request, &task_key)?;
    let task_type = task_type(args, inputs, &request, previous, &history, &mut prompt)?;
    let focus = focus(args, inputs, task_type)?;
    let (task_brief, mut brief_text) = match early_brief {
        Some(brief) => brief,
        None => task_brief(args, inputs.question, cwd, &mut prompt)?,
    };
    let change = match args.diff.as_deref() {
        Some(spec) => {
            let resolved = crate::change::resolve(spec, &project_root)?;
            brief_text.push_str(&resolved.brief_section);
            Some(resolved.change)
        }
        None => None,
    };
    check_native_models(
        lead_runtime,
        task_type,
        &workers,
        &models,
        &report_writer_model,
    )?;
    let continuation = continuation(request, previous, &mut prompt)?;

    Ok(Settings {
        task_type,
        focus,
        task_key,
        project_root,
        task_brief,
        brief_text,
        lead_runtime,
        lead_model,
        report_writer: workers
            .report_writer_rostered
            .then_some((workers.report_writer_provider, report_writer_model)),
        analysers: workers.analysers,
        executor: workers.executor,
        critic: workers.critic,
        models,
        related_tasks,
        work_category,
        directive,
        fix_cycle,
        plan_verification: !args.no_plan_verification,
        continuation,
        previous_run: previous.map(|run| run.dir.clone()),
        render_only: args.render_only,
        json: args.json,
        yes: args.yes,
        no_preflight: args.no_preflight,
        change,
        engine: crate::run::settings::RunSettings::default(),
    })
}

/// `--lead-runtime` (by default `claude-code`, or `external` with
/// `--headless`), checked against `--headless` and `--lead-provider`.
fn lead_runtime(args: &LaunchArgs) -> Result<LeadRuntime> {
    let lead_runtime = match args.lead_runtime.as_deref() {
        Some(raw) => parse_value::<LeadRuntime>("--lead-runtime", raw)?,
        None if args.headless => LeadRuntime::External,
        None => LeadRuntime::ClaudeCode,
    };
    if args.headless && lead_runtime != LeadRuntime::External {
        bail!(
            "`--headless` runs every worker through okstra's wrapper and needs no host: it cannot be combined with `--lead-runtime {lead_runtime}` (use `external` or leave it out)"
        );
    }
    if let Some(raw) = args.lead_provider.as_deref() {
        let provider = parse_value::<Provider>("--lead-provider", raw)?;
        if lead_runtime.host_provider() != Some(provider) {
            let expected = lead_runtime.host_provider().map_or_else(
                || "no provider (the external runtime has no host)".into(),
                |p| format!("`{p}`"),
            );
            bail!(
                "`--lead-provider {provider}` contradicts `--lead-runtime {lead_runtime}`, whose lead provider is {expected}"
            );
        }
    }
    Ok(lead_runtime)
}

/// Who works on the run, before models are chosen.
struct Workers {
    /// Analyser providers in roster order.
    analysers: Vec<Provider>,
    /// Whether `report-writer` is in `--workers`.
    report_writer_rostered: bool,
    report_writer_provider: Provider,
    executor: Provider,
    critic: Option<Provider>,
}

/// `--workers`, `--report-writer-provider`, `--executor` and `--critic`.
fn workers(args: &LaunchArgs, env: EnvLookup<'_>) -> Result<Workers> {
    let default_workers = catalog::default_workers();
    let (analysers, report_writer_rostered) =
        parse_workers(args.workers.as_deref().unwrap_or(&default_workers))?;
    let report_writer_provider = report_writer_provider(args)?;
    let executor = match flag_or_env(
        "--executor",
        args.executor.as_deref(),
        "OKSTRA_DEFAULT_EXECUTOR",
        env,
    ) {
        Some((source, raw)) => parse_executor(source, &raw)?,
        None => Provider::default_executor(),
    };
    let critic = critic(args, &analysers)?;
    Ok(Workers {
        analysers,
        report_writer_rostered,
        report_writer_provider,
        executor,
        critic,
    })
}

fn report_writer_provider(args: &LaunchArgs) -> Result<Provider> {
    let Some(raw) = args.report_writer_provider.as_deref() else {
        return Ok(Provider::default_report_writer());
    };
    let writers = Provider::report_writers();
    parse_value::<Provider>("--report-writer-provider", raw)
        .ok()
        .filter(|p| writers.contains(p))
        .with_context(|| {
            format!(
                "invalid value `{raw}` for `--report-writer-provider`: expected {}",
                one_of(&writers)
            )
        })
}

/// `--critic`: off, or one of the rostered analysers.
fn critic(args: &LaunchArgs, analysers: &[Provider]) -> Result<Option<Provider>> {
    let raw = match args.critic.as_deref() {
        None | Some("off") => return Ok(None),
        Some(raw) => raw,
    };
    let provider = parse_value::<Provider>("--critic", raw).map_err(|_| {
        anyhow::anyhow!(
            "invalid value `{raw}` for `--critic`: expected off|{}",
            one_of(Provider::ALL)
        )
    })?;
    if !analysers.contains(&provider) {
        bail!(
            "`--critic {provider}` names a provider that is not on this run's roster ({}); add it to `--workers` or choose off|{}",
            analysers
                .iter()
                .map(|p| p.as_str())
                .collect::<Vec<_>>()
                .join(","),
            one_of(analysers)
        );
    }
    Ok(Some(provider))
}

fn fix_cycle(args: &LaunchArgs) -> Result<bool> {
    match args.fix_cycle.as_deref() {
        None | Some("yes") => Ok(true),
        Some("no") => Ok(false),
        Some(raw) => bail!("invalid value `{raw}` for `--fix-cycle`: expected yes|no"),
    }
}

/// The report writer's model: flag, environment, then the provider's default.
fn report_writer_model(
    args: &LaunchArgs,
    env: EnvLookup<'_>,
    provider: Provider,
) -> Result<String> {
    match flag_or_env(
        "--report-writer-model",
        args.report_writer_model.as_deref(),
        "OKSTRA_DEFAULT_REPORT_WRITER_MODEL",
        env,
    ) {
        Some((source, model)) => check_model(source, &model),
        None => Ok(provider.default_model(Role::ReportWriter).to_owned()),
    }
}

/// The lead's model: flag, environment, then the host's default (none for
/// the `external` runtime).
fn lead_model(
    args: &LaunchArgs,
    env: EnvLookup<'_>,
    lead_runtime: LeadRuntime,
) -> Result<Option<String>> {
    match flag_or_env(
        "--lead-model",
        args.lead_model.as_deref(),
        "OKSTRA_DEFAULT_LEAD_MODEL",
        env,
    ) {
        Some((source, model)) => check_model(source, &model).map(Some),
        None => Ok(lead_runtime
            .host_provider()
            .map(|p| p.default_lead_model().to_owned())),
    }
}

fn related_tasks(args: &LaunchArgs) -> Result<Vec<String>> {
    match args.related_tasks.as_deref() {
        None => Ok(Vec::new()),
        Some(raw) => raw
            .split(',')
            .map(|part| check_slug("--related-tasks", part.trim()))
            .collect(),
    }
}

fn directive(args: &LaunchArgs) -> Result<Option<String>> {
    match args.directive.as_deref() {
        Some(text) if text.trim().is_empty() => {
            bail!("invalid value `` for `--directive`: expected non-empty text")
        }
        Some(text) => Ok(Some(text.to_owned())),
        None => Ok(None),
    }
}

/// What the flags ask this run to continue, before the earlier run is found.
enum Request {
    Fresh,
    /// `--clarification-response <file>`.
    ClarificationFile(PathBuf),
    /// `--resume-clarification`: the answers are asked for.
    ClarificationOnTerminal,
    /// `--approved-plan <file>`.
    ApprovedPlan(PathBuf),
}

/// The continuation flags: at most one, its file readable and non-empty.
fn continuation_request(args: &LaunchArgs, cwd: &Path) -> Result<Request> {
    match (
        args.resume_clarification,
        &args.clarification_response,
        &args.approved_plan,
    ) {
        (true, Some(_), _) => bail!(
            "`--resume-clarification` cannot be combined with `--clarification-response`: it asks for the response itself"
        ),
        (true, _, Some(_)) => bail!(
            "`--resume-clarification` cannot be combined with `--approved-plan`: it continues a clarification, not a plan"
        ),
        (true, None, None) => Ok(Request::ClarificationOnTerminal),
        (false, Some(_), Some(_)) => bail!(
            "`--clarification-response` and `--approved-plan` cannot be combined: a run continues one earlier run"
        ),
        (false, Some(path), None) => {
            read_nonempty("--clarification-response", &cwd.join(path))?;
            Ok(Request::ClarificationFile(absolute(cwd, path)))
        }
        (false, None, Some(path)) => {
            read_nonempty("--approved-plan", &cwd.join(path))?;
            Ok(Request::ApprovedPlan(absolute(cwd, path)))
        }
        (false, None, None) => Ok(Request::Fresh),
    }
}

/// `--project-root` (else the current directory): an existing directory,
/// canonical.
fn project_root(args: &LaunchArgs, cwd: &Path) -> Result<PathBuf> {
    let project_root = match &args.project_root {
        Some(path) => absolute(cwd, path),
        None => cwd.to_path_buf(),
    };
    if !project_root.is_dir() {
        bail!(
            "invalid value `{}` for `--project-root`: expected an existing directory",
            project_root.display()
        );
    }
    project_root.canonicalize().with_context(|| {
        format!(
            "cannot resolve `--project-root` `{}`",
            project_root.display()
        )
    })
}

/// A host that takes a native worker's model only as a family token
/// ([`crate::providers::NativeModel`]): an unmappable value is a
/// pre-dispatch error, so refuse it now rather than at dispatch.
fn check_native_models(
    lead_runtime: LeadRuntime,
    task_type: TaskType,
    workers: &Workers,
    models: &Models,
    report_writer_model: &str,
) -> Result<()> {
    let Some(host) = lead_runtime.host_provider() else {
        return Ok(());
    };
    let NativeModel::FamilyToken(tokens) = host.descriptor().native_model else {
        return Ok(());
    };
    let mut native: Vec<(String, String)> = Vec::new();
    if workers.analysers.contains(&host)
        || workers.critic == Some(host)
        || (task_type == TaskType::Implementation && workers.executor == host)
    {
        native.push((
            format!("{host} worker"),
            models.worker(host, Role::Analyser),
        ));
    }
    if workers.report_writer_rostered && workers.report_writer_provider == host {
        native.push(("report writer".to_owned(), report_writer_model.to_owned()));
    }
    for (what, model) in native {
        if host.descriptor().native_model.of(&model).is_none() {
            bail!(
                "model `{model}` for the {what} has no {} family token for a native {lead_runtime} session: expected a value naming {}",
                host.title(),
                tokens.join("|")
            );
        }
    }
    Ok(())
}

/// The continuation the run records. `--resume-clarification` asks for its
/// answers here, last, once every flag has been checked.
fn continuation(
    request: Request,
    previous: Option<&RunRef>,
    prompt: &mut Prompt<'_>,
) -> Result<Continuation> {
    Ok(match request {
        Request::Fresh => Continuation::None,
        Request::ClarificationFile(path) => Continuation::ClarificationResponse(path),
        Request::ApprovedPlan(path) => Continuation::ApprovedPlan(path),
        Request::ClarificationOnTerminal => {
            let Some(previous) = previous else {
                bail!("`--resume-clarification` found no earlier run to continue");
            };
            // Answered already through its host lead (`okstra next`'s
            // `ask-user` task): those answers, nothing asked again.
            if let Some(answers) = answered_through_the_host(&previous.dir) {
                return Ok(Continuation::ClarificationAnswers(answers));
            }
            let answers = prompt.answers(&previous.dir)?;
            if answers.trim().is_empty() {
                bail!("no answers were given; nothing to continue with");
            }
            Continuation::ClarificationAnswers(answers)
        }
    })
}

/// The answers the user gave to the open questions of the run in `dir`
/// when its host lead asked them (`state/answer-clarification.md`), when
/// there are any.
fn answered_through_the_host(dir: &Path) -> Option<String> {
    let run = crate::run::Run::open(dir).ok()?;
    let answers = crate::run::ask::answered(&run, crate::vocab::Question::Clarification)?;
    if answers.trim().is_empty() {
        return None;
    }
    crate::diag::progress(format_args!(
        "continuing `{}` with the answers its host lead took (`{}`)",
        dir.display(),
        crate::vocab::Question::Clarification
            .answer_path(&run)
            .display()
    ));
    Some(answers)
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;
