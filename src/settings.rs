//! Arguments + environment + catalog → one immutable, validated `Settings`.
//!
//! Precedence is always flag > environment > catalog. Every refusal happens
//! here, before anything is written: a bad value produces one line naming the
//! value and what is accepted. Missing required arguments are asked for on a
//! terminal (unless `--yes`), and are a usage error without one.

use std::collections::BTreeMap;
use std::io::{self, BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use anyhow::{Context, Result, bail};
use regex::Regex;

use crate::catalog::{
    self, EXECUTOR_PROVIDERS, LeadRuntime, Provider, REPORT_WRITER, REPORT_WRITER_PROVIDERS, Role,
    TaskType, WorkCategory, one_of,
};
use crate::cli::LaunchArgs;
use crate::{fsread, slug};

/// Model execution values go into argv and file names: no blanks or controls.
static MODEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[A-Za-z0-9][A-Za-z0-9._:/@+\[\]-]{0,199}$").expect("the pattern is valid")
});

/// Where environment defaults come from (the real environment, or a map in tests).
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The three parts of a task key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskKey {
    pub project_id: String,
    pub task_group: String,
    pub task_id: String,
}

impl TaskKey {
    /// The joined form used by `--task-key` and in manifests.
    pub fn joined(&self) -> String {
        format!("{}/{}/{}", self.project_id, self.task_group, self.task_id)
    }

    /// The task's folder relative to `.okstra/`.
    pub fn relative_dir(&self) -> PathBuf {
        Path::new("tasks")
            .join(&self.project_id)
            .join(&self.task_group)
            .join(&self.task_id)
    }
}

/// How this run continues an earlier one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Continuation {
    /// A fresh task.
    None,
    /// Answers to an earlier run's clarification questions (a file).
    ClarificationResponse(PathBuf),
    /// `--resume-clarification` before the answers were asked for.
    ResumeClarification,
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
    pub task_key: TaskKey,
    pub project_root: PathBuf,
    pub task_brief: PathBuf,
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

/// Resolve and validate the launcher's arguments. `ask` is used for missing
/// required values when prompting is allowed.
pub fn resolve(args: &LaunchArgs, env: EnvLookup<'_>, cwd: &Path) -> Result<Settings> {
    let interactive = !args.yes && io::stdin().is_terminal();
    resolve_with(args, env, cwd, interactive, &mut TerminalAsker)
}

/// Something that can ask the user for a missing value.
pub trait Ask {
    fn ask(&mut self, question: &str) -> Result<String>;
}

struct TerminalAsker;

impl Ask for TerminalAsker {
    fn ask(&mut self, question: &str) -> Result<String> {
        let mut stderr = io::stderr();
        write!(stderr, "{question}: ")?;
        stderr.flush()?;
        let mut line = String::new();
        io::stdin().lock().read_line(&mut line)?;
        Ok(line.trim().to_owned())
    }
}

pub fn resolve_with(
    args: &LaunchArgs,
    env: EnvLookup<'_>,
    cwd: &Path,
    interactive: bool,
    asker: &mut dyn Ask,
) -> Result<Settings> {
    let mut missing = |flag: &str, value: Option<String>| -> Result<String> {
        match value {
            Some(value) => Ok(value),
            None if interactive => asker.ask(&format!("{flag} (required)")),
            None if args.yes => {
                bail!("missing required argument `--{flag}` (`--yes` never prompts)")
            }
            None => bail!(
                "missing required argument `--{flag}` (no terminal to ask on; pass it on the command line)"
            ),
        }
    };

    // Closed sets and shapes first: cheap, and independent of the filesystem.
    let lead_runtime =
        parse_or_env::<LeadRuntime>("--lead-runtime", args.lead_runtime.as_deref(), None, env)?
            .unwrap_or(if args.headless {
                LeadRuntime::External
            } else {
                LeadRuntime::ClaudeCode
            });
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

    let (analysers, report_writer_rostered) =
        parse_workers(args.workers.as_deref().unwrap_or(catalog::DEFAULT_WORKERS))?;

    let report_writer_provider = match args.report_writer_provider.as_deref() {
        None => Provider::Claude,
        Some(raw) => {
            let provider = parse_value::<Provider>("--report-writer-provider", raw)
                .ok()
                .filter(|p| REPORT_WRITER_PROVIDERS.contains(p));
            provider.with_context(|| {
                format!(
                    "invalid value `{raw}` for `--report-writer-provider`: expected {}",
                    one_of(REPORT_WRITER_PROVIDERS)
                )
            })?
        }
    };

    let executor = match args.executor.as_deref() {
        Some(raw) => parse_executor("--executor", raw)?,
        None => match env("OKSTRA_DEFAULT_EXECUTOR").filter(|v| !v.is_empty()) {
            Some(raw) => parse_executor("OKSTRA_DEFAULT_EXECUTOR", &raw)?,
            None => Provider::Claude,
        },
    };

    let critic = match args.critic.as_deref() {
        None | Some("off") => None,
        Some(raw) => {
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
                    one_of(&analysers)
                );
            }
            Some(provider)
        }
    };

    let fix_cycle = match args.fix_cycle.as_deref() {
        None | Some("yes") => true,
        Some("no") => false,
        Some(raw) => bail!("invalid value `{raw}` for `--fix-cycle`: expected yes|no"),
    };

    let work_category = args
        .work_category
        .as_deref()
        .map(|raw| parse_value::<WorkCategory>("--work-category", raw))
        .transpose()?;

    let models = resolve_models(args, env)?;
    let report_writer_model = match &args.report_writer_model {
        Some(model) => check_model("--report-writer-model", model)?,
        None => match env("OKSTRA_DEFAULT_REPORT_WRITER_MODEL").filter(|v| !v.is_empty()) {
            Some(model) => check_model("OKSTRA_DEFAULT_REPORT_WRITER_MODEL", &model)?,
            None => report_writer_provider
                .default_model(Role::ReportWriter)
                .to_owned(),
        },
    };
    let lead_model = match &args.lead_model {
        Some(model) => Some(check_model("--lead-model", model)?),
        None => match env("OKSTRA_DEFAULT_LEAD_MODEL").filter(|v| !v.is_empty()) {
            Some(model) => Some(check_model("OKSTRA_DEFAULT_LEAD_MODEL", &model)?),
            None => lead_runtime
                .host_provider()
                .map(|p| p.default_lead_model().to_owned()),
        },
    };

    let related_tasks = match args.related_tasks.as_deref() {
        None => Vec::new(),
        Some(raw) => raw
            .split(',')
            .map(|part| check_slug("--related-tasks", part.trim()))
            .collect::<Result<_>>()?,
    };

    let directive = match args.directive.as_deref() {
        Some(text) if text.trim().is_empty() => {
            bail!("invalid value `` for `--directive`: expected non-empty text")
        }
        Some(text) => Some(text.to_owned()),
        None => None,
    };

    let continuation = match (
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
        (true, None, None) => Continuation::ResumeClarification,
        (false, Some(_), Some(_)) => bail!(
            "`--clarification-response` and `--approved-plan` cannot be combined: a run continues one earlier run"
        ),
        (false, Some(path), None) => {
            read_nonempty("--clarification-response", &cwd.join(path))?;
            Continuation::ClarificationResponse(absolute(cwd, path))
        }
        (false, None, Some(path)) => {
            read_nonempty("--approved-plan", &cwd.join(path))?;
            Continuation::ApprovedPlan(absolute(cwd, path))
        }
        (false, None, None) => Continuation::None,
    };

    // The project root and the task key decide where files go.
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
    let project_root = project_root.canonicalize().with_context(|| {
        format!(
            "cannot resolve `--project-root` `{}`",
            project_root.display()
        )
    })?;

    let task_key = if let Some(joined) = &args.task_key {
        if args.project_id.is_some() || args.task_group.is_some() || args.task_id.is_some() {
            bail!(
                "`--task-key` cannot be combined with `--project-id`, `--task-group` or `--task-id`: give one form"
            );
        }
        parse_task_key(joined)?
    } else {
        let project_id = missing("project-id", args.project_id.clone())?;
        let project_id = check_slug("--project-id", &project_id)?;
        let task_group = missing("task-group", args.task_group.clone())?;
        let task_group = check_slug("--task-group", &task_group)?;
        let task_id = missing("task-id", args.task_id.clone())?;
        let task_id = check_slug("--task-id", &task_id)?;
        TaskKey {
            project_id,
            task_group,
            task_id,
        }
    };

    // The run this one continues, from one read of the task's history:
    // clarification answers continue the latest phase that asks questions,
    // an approved plan the latest planning run, anything else the latest run.
    let history = crate::resume::runs(&project_root, &task_key)?;
    let previous = match &continuation {
        Continuation::ClarificationResponse(_)
        | Continuation::ResumeClarification
        | Continuation::ClarificationAnswers(_) => Some(
            crate::resume::latest(&history, TaskType::takes_clarification).with_context(|| {
                format!(
                    "task key `{}` has no requirements-discovery or error-analysis run to continue; start one first",
                    task_key.joined()
                )
            })?,
        ),
        Continuation::ApprovedPlan(_) => {
            crate::resume::latest(&history, |t| t == TaskType::ImplementationPlanning)
        }
        Continuation::None => crate::resume::latest(&history, |_| true),
    };

    // Without --task-type, what the run continues decides: an approved plan
    // is carried out by `implementation`; clarification answers continue the
    // phase that asked; otherwise the last finished run's recommendation.
    let task_type = match (args.task_type.as_deref(), &continuation, previous) {
        (Some(raw), _, _) => parse_value::<TaskType>("--task-type", raw)?,
        (None, Continuation::ApprovedPlan(_), _) => TaskType::Implementation,
        (None, Continuation::None, _) => {
            if let Some(task_type) = crate::resume::next_phase(&history)? {
                task_type
            } else {
                let raw = missing("task-type", None)?;
                parse_value::<TaskType>("--task-type", &raw)?
            }
        }
        // Clarification answers: `previous` was found above or refused.
        (None, _, previous) => previous
            .map(|run| run.task_type)
            .context("clarification answers need the run that asked; pass `--task-type`")?,
    };
    let previous_run = previous.map(|run| run.dir.clone());
    if matches!(continuation, Continuation::ApprovedPlan(_))
        && task_type != TaskType::Implementation
    {
        bail!(
            "`--approved-plan` is carried out by an implementation run, not `--task-type {task_type}`: drop `--task-type` or pass `--task-type implementation`"
        );
    }

    let task_brief = missing(
        "task-brief",
        args.task_brief
            .as_ref()
            .map(|p| p.to_string_lossy().into_owned()),
    )?;
    let task_brief = absolute(cwd, Path::new(&task_brief));
    let brief_text = read_nonempty("--task-brief", &task_brief)?;

    // Native Claude sessions take a family token; an unmappable value is a
    // pre-dispatch error, so refuse it now rather than at dispatch.
    if lead_runtime.host_provider() == Some(Provider::Claude) {
        let mut native: Vec<(String, String)> = Vec::new();
        if analysers.contains(&Provider::Claude)
            || critic == Some(Provider::Claude)
            || (task_type == TaskType::Implementation && executor == Provider::Claude)
        {
            native.push((
                "claude worker".into(),
                models.worker(Provider::Claude, Role::Analyser),
            ));
        }
        if report_writer_rostered && report_writer_provider == Provider::Claude {
            native.push(("report writer".into(), report_writer_model.clone()));
        }
        for (what, model) in native {
            if catalog::claude_family_token(&model).is_none() {
                bail!(
                    "model `{model}` for the {what} has no Claude family token for a native claude-code session: expected a value naming {}",
                    catalog::CLAUDE_FAMILY_TOKENS.join("|")
                );
            }
        }
    }

    Ok(Settings {
        task_type,
        task_key,
        project_root,
        task_brief,
        brief_text,
        lead_runtime,
        lead_model,
        analysers,
        report_writer: report_writer_rostered
            .then_some((report_writer_provider, report_writer_model)),
        executor,
        critic,
        models,
        related_tasks,
        work_category,
        directive,
        fix_cycle,
        plan_verification: !args.no_plan_verification,
        continuation,
        previous_run,
        render_only: args.render_only,
        json: args.json,
    })
}

fn parse_value<T: std::str::FromStr<Err = String>>(flag: &str, raw: &str) -> Result<T> {
    raw.parse::<T>().map_err(|accepted| {
        anyhow::anyhow!("invalid value `{raw}` for `{flag}`: expected {accepted}")
    })
}

fn parse_or_env<T: std::str::FromStr<Err = String>>(
    flag: &str,
    raw: Option<&str>,
    env_name: Option<&str>,
    env: EnvLookup<'_>,
) -> Result<Option<T>> {
    if let Some(raw) = raw {
        return parse_value(flag, raw).map(Some);
    }
    match env_name.and_then(env).filter(|v| !v.is_empty()) {
        Some(raw) => parse_value(env_name.unwrap_or(flag), &raw).map(Some),
        None => Ok(None),
    }
}

fn parse_executor(source: &str, raw: &str) -> Result<Provider> {
    raw.parse::<Provider>()
        .ok()
        .filter(|p| EXECUTOR_PROVIDERS.contains(p))
        .with_context(|| {
            format!(
                "invalid value `{raw}` for `{source}`: expected {}",
                one_of(EXECUTOR_PROVIDERS)
            )
        })
}

/// `--workers`: analyser providers in order, and whether the report writer is on.
fn parse_workers(raw: &str) -> Result<(Vec<Provider>, bool)> {
    let mut analysers = Vec::new();
    let mut report_writer = false;
    for name in raw.split(',').map(str::trim) {
        let accepted = || format!("{}|{REPORT_WRITER}", one_of(Provider::ALL));
        if name == REPORT_WRITER {
            if report_writer {
                bail!("worker `{name}` is listed twice in `--workers`: list each worker once");
            }
            report_writer = true;
            continue;
        }
        let provider = name.parse::<Provider>().map_err(|_| {
            anyhow::anyhow!(
                "unknown worker `{name}` in `--workers`: expected a comma-separated list of {}",
                accepted()
            )
        })?;
        if analysers.contains(&provider) {
            bail!("worker `{name}` is listed twice in `--workers`: list each worker once");
        }
        analysers.push(provider);
    }
    if analysers.is_empty() {
        bail!(
            "`--workers {raw}` has no analyser: expected at least one of {}",
            one_of(Provider::ALL)
        );
    }
    Ok((analysers, report_writer))
}

fn resolve_models(args: &LaunchArgs, env: EnvLookup<'_>) -> Result<Models> {
    let mut models = Models::default();
    for (provider, flag, value) in [
        (Provider::Claude, "--claude-model", &args.claude_model),
        (Provider::Codex, "--codex-model", &args.codex_model),
        (
            Provider::Antigravity,
            "--antigravity-model",
            &args.antigravity_model,
        ),
    ] {
        if let Some(model) = value {
            models.explicit.insert(provider, check_model(flag, model)?);
        }
    }
    if let Some(raw) = args.worker_model.as_deref() {
        for pair in raw.split(',') {
            let Some((name, model)) = pair.split_once('=') else {
                bail!(
                    "invalid entry `{pair}` in `--worker-model`: expected provider=model pairs separated by commas, e.g. grok=grok-4.5,kimi=kimi-k3"
                );
            };
            let provider = name.trim().parse::<Provider>().map_err(|accepted| {
                anyhow::anyhow!(
                    "unknown provider `{}` in `--worker-model`: expected one of {accepted}",
                    name.trim()
                )
            })?;
            let model = check_model("--worker-model", model.trim())?;
            if let Some(previous) = models.explicit.get(&provider)
                && *previous != model
            {
                bail!(
                    "conflicting models for `{provider}`: `{previous}` and `{model}`; give one model per provider"
                );
            }
            models.explicit.insert(provider, model);
        }
    }
    for provider in Provider::ALL {
        if let Some(name) = provider.model_env()
            && let Some(model) = env(name).filter(|v| !v.is_empty())
        {
            models.env.insert(*provider, check_model(name, &model)?);
        }
    }
    Ok(models)
}

fn check_model(source: &str, model: &str) -> Result<String> {
    if MODEL.is_match(model) {
        Ok(model.to_owned())
    } else {
        bail!(
            "invalid model `{model}` for `{source}`: expected a non-empty model name without spaces (letters, digits and ._:/@+[]-)"
        )
    }
}

/// Task-key parts and related tasks are slugs, so they never leave `.okstra/`.
fn check_slug(flag: &str, value: &str) -> Result<String> {
    if slug::is_slug(value) {
        Ok(value.to_owned())
    } else {
        bail!(
            "invalid value `{value}` for `{flag}`: expected a safe slug matching {}",
            slug::PATTERN
        )
    }
}

fn parse_task_key(joined: &str) -> Result<TaskKey> {
    let parts: Vec<&str> = joined.split('/').collect();
    let [project_id, task_group, task_id] = parts.as_slice() else {
        bail!(
            "invalid value `{joined}` for `--task-key`: expected <project-id>/<task-group>/<task-id>, each a safe slug"
        );
    };
    Ok(TaskKey {
        project_id: check_slug("--task-key", project_id)?,
        task_group: check_slug("--task-key", task_group)?,
        task_id: check_slug("--task-key", task_id)?,
    })
}

fn absolute(cwd: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    }
}

/// Read a UTF-8 text file that must exist and hold more than whitespace.
fn read_nonempty(flag: &str, path: &Path) -> Result<String> {
    let shown = path.display();
    let bytes = match fsread::read(path, fsread::Kind::Brief) {
        Ok(bytes) => bytes,
        Err(err) if err.is_not_found() => {
            bail!(
                "invalid value `{shown}` for `{flag}`: no such file; expected a readable, non-empty file"
            )
        }
        Err(err @ (fsread::Error::NotRegular { .. } | fsread::Error::TooLarge { .. })) => {
            bail!("invalid value `{shown}` for `{flag}`: {err}")
        }
        Err(err) => {
            let cause = std::error::Error::source(&err)
                .map_or_else(|| err.to_string(), ToString::to_string);
            bail!(
                "invalid value `{shown}` for `{flag}`: cannot read it ({cause}); expected a readable, non-empty file"
            )
        }
    };
    let Ok(text) = String::from_utf8(bytes) else {
        bail!(
            "invalid value `{shown}` for `{flag}`: not UTF-8 text; expected a readable, non-empty text file"
        );
    };
    if text.trim().is_empty() {
        bail!(
            "invalid value `{shown}` for `{flag}`: the file is empty; expected a readable, non-empty file"
        );
    }
    Ok(text)
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;
