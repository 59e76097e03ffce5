//! Parsing and checking one flag's value: the shared shapes of a
//! refusal (`invalid value … for …: expected …`), worker and model lists,
//! task keys, slugs and paths.

use super::{
    BTreeMap, Context, EnvLookup, LaunchArgs, MODEL, Models, Path, PathBuf, Provider,
    REPORT_WRITER, Result, Role, TaskKey, bail, fsread, one_of, slug,
};

pub(super) fn parse_value<T: std::str::FromStr<Err = String>>(flag: &str, raw: &str) -> Result<T> {
    raw.parse::<T>().map_err(|accepted| {
        anyhow::anyhow!("invalid value `{raw}` for `{flag}`: expected {accepted}")
    })
}

/// A flag's value, else a non-empty environment variable's, each with the
/// name a message should give for it.
pub(super) fn flag_or_env<'n>(
    flag: &'n str,
    raw: Option<&str>,
    env_name: &'n str,
    env: EnvLookup<'_>,
) -> Option<(&'n str, String)> {
    match raw {
        Some(raw) => Some((flag, raw.to_owned())),
        None => env(env_name)
            .filter(|v| !v.is_empty())
            .map(|value| (env_name, value)),
    }
}

pub(super) fn parse_executor(source: &str, raw: &str) -> Result<Provider> {
    raw.parse::<Provider>()
        .ok()
        .filter(|p| Provider::executors().contains(p))
        .with_context(|| {
            format!(
                "invalid value `{raw}` for `{source}`: expected {}",
                one_of(&Provider::executors())
            )
        })
}

/// `--workers`: analyser providers in order, and whether the report writer is on.
pub(super) fn parse_workers(raw: &str) -> Result<(Vec<Provider>, bool)> {
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

/// Worker models: per-provider flags and `--worker-model` pairs, then each
/// provider's environment default.
pub(super) fn resolve_models(args: &LaunchArgs, env: EnvLookup<'_>) -> Result<Models> {
    let mut models = Models::default();
    for (provider, flag) in crate::cli::ProviderModels::flags() {
        if let Some(model) = args.provider_models.get(provider) {
            let flag = format!("--{flag}");
            models.explicit.insert(provider, check_model(&flag, model)?);
        }
    }
    if let Some(raw) = args.worker_model.as_deref() {
        add_worker_models(raw, &mut models.explicit)?;
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

/// An example of `--worker-model`: each provider without a model flag of
/// its own, with its critic's default model.
fn worker_model_example() -> String {
    Provider::ALL
        .iter()
        .filter(|provider| provider.descriptor().model_flag.is_none())
        .map(|provider| format!("{provider}={}", provider.default_model(Role::Critic)))
        .collect::<Vec<_>>()
        .join(",")
}

/// `--worker-model provider=model,…` on top of the per-provider flags; a
/// provider given two different models is refused.
pub(super) fn add_worker_models(
    raw: &str,
    explicit: &mut BTreeMap<Provider, String>,
) -> Result<()> {
    for pair in raw.split(',') {
        let Some((name, model)) = pair.split_once('=') else {
            bail!(
                "invalid entry `{pair}` in `--worker-model`: expected provider=model pairs separated by commas, e.g. {}",
                worker_model_example()
            );
        };
        let provider = name.trim().parse::<Provider>().map_err(|accepted| {
            anyhow::anyhow!(
                "unknown provider `{}` in `--worker-model`: expected one of {accepted}",
                name.trim()
            )
        })?;
        let model = check_model("--worker-model", model.trim())?;
        if let Some(previous) = explicit.get(&provider)
            && *previous != model
        {
            bail!(
                "conflicting models for `{provider}`: `{previous}` and `{model}`; give one model per provider"
            );
        }
        explicit.insert(provider, model);
    }
    Ok(())
}

pub(super) fn check_model(source: &str, model: &str) -> Result<String> {
    if MODEL.is_match(model) {
        Ok(model.to_owned())
    } else {
        bail!(
            "invalid model `{model}` for `{source}`: expected a non-empty model name without spaces (letters, digits and ._:/@+[]-)"
        )
    }
}

/// Task-key parts and related tasks are slugs, so they never leave `.okstra/`.
pub(super) fn check_slug(flag: &str, value: &str) -> Result<String> {
    if slug::is_slug(value) {
        Ok(value.to_owned())
    } else {
        bail!(
            "invalid value `{value}` for `{flag}`: expected a safe slug matching {}",
            slug::PATTERN
        )
    }
}

pub(super) fn parse_task_key(joined: &str) -> Result<TaskKey> {
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

pub(super) fn absolute(cwd: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    }
}

/// Read a UTF-8 text file that must exist and hold more than whitespace.
pub(super) fn read_nonempty(flag: &str, path: &Path) -> Result<String> {
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
