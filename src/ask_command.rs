//! `okstra ask QUESTION`: the first real run in one line.
//!
//! The question is the only input (inline, `-` for stdin, or `--task-brief
//! FILE`); every other setting is defaulted here without any model call and
//! shown before anything starts: the project id from the repository, the
//! task group `ask`, a task id made from the question and new to the
//! project, the task type `project-analysis` (asked on a terminal), the
//! default roster. Any launcher flag overrides its default. Then it is
//! `okstra run`: the preflight, the plan, the same step machine, the live
//! view and the closing summary (`lead::render_checked`, `lead::drive`);
//! `--lead` renders for the host session and starts it, `--render-only`
//! stops after the render.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::cli::{AskArgs, GateRules, RunArgs};
use crate::diag;
use crate::dispatch::Options;
use crate::settings::{self, Inputs, Settings};

/// `okstra ask`.
pub fn ask_command(args: &AskArgs) -> Result<crate::output::Reply> {
    Options::from_args(&args.engine)?;
    let question = question(args)?;
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let mut launch = args.launch.clone();
    if !args.lead
        && launch
            .lead_runtime
            .as_deref()
            .is_some_and(|runtime| runtime != "external")
    {
        bail!(
            "`--lead-runtime` names the host session that leads the run: add `--lead` to start it (without `--lead` the run is headless)"
        );
    }
    launch.headless = !args.lead;
    if question.is_none()
        && launch.task_brief.is_none()
        && (launch.yes || !crate::ask::is_interactive())
    {
        bail!(
            "missing the question: give it inline (`okstra ask \"Why are reservations oversold?\"`), as `-` to read it from stdin, or as `--task-brief FILE`"
        );
    }
    let text = fill_defaults(&mut launch, question.as_deref(), &cwd);
    crate::bundle::prepare();
    let env = |name: &str| std::env::var(name).ok();
    // The profile the question asks for, unless a flag decides it.
    let suggested = (launch.task_type.is_none() && launch.focus.is_none())
        .then(|| text.as_deref().map(crate::profile::suggest))
        .flatten();
    let inputs = Inputs {
        question: question.as_deref(),
        default_task_type: true,
        suggested: suggested.as_ref().map(|s| s.profile),
    };
    let mut settings = settings::resolve_inputs(&launch, inputs, &env, &cwd)?;
    settings.engine = crate::run::settings::RunSettings::given(&args.engine);
    show(&settings, &launch, suggested.as_ref());
    if args.lead || settings.render_only {
        return crate::launch::render_and_start(&settings);
    }
    let run_args = RunArgs {
        run_dir: None,
        fail_on: None,
        gate: GateRules::default(),
        launch,
        engine: args.engine.clone(),
    };
    let (run_dir, checked) = crate::lead::render_checked(&settings, args.launch.no_preflight)?;
    crate::lead::drive(&run_args, &run_dir, Some(checked))
}

/// The question given on the command line: its words joined, or stdin's
/// text for `-`. `None` when none was given.
fn question(args: &AskArgs) -> Result<Option<String>> {
    if args.question.is_empty() {
        return Ok(None);
    }
    if args.launch.task_brief.is_some() {
        bail!(
            "the question is given twice: inline and as `--task-brief`; give it once (`-` reads it from stdin)"
        );
    }
    if args.question.len() == 1 && args.question[0] == "-" {
        let limit = crate::fsread::Kind::Brief.limit();
        let mut bytes = Vec::new();
        std::io::stdin()
            .lock()
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .context("cannot read the question from stdin")?;
        if bytes.len() as u64 > limit {
            bail!(
                "the question on stdin is over {limit} bytes: expected a question, or a brief file with `--task-brief`"
            );
        }
        let text = String::from_utf8(bytes)
            .map_err(|_| anyhow::anyhow!("the question on stdin is not UTF-8 text"))?;
        return Ok(Some(text));
    }
    Ok(Some(args.question.join(" ")))
}

/// The task key's defaults, for each part no flag gave: the repository's
/// name, the `ask` group, and a task id made from the question (or the
/// brief file's first line) that the project has not used. Returns the
/// question's text (the brief file's, for `--task-brief`), when there is
/// one yet.
fn fill_defaults(
    launch: &mut crate::cli::LaunchArgs,
    question: Option<&str>,
    cwd: &Path,
) -> Option<String> {
    let text = question.map(str::to_owned).or_else(|| {
        let brief = launch.task_brief.as_ref()?;
        let path: PathBuf = if brief.is_absolute() {
            brief.clone()
        } else {
            cwd.join(brief)
        };
        crate::fsread::read(&path, crate::fsread::Kind::Brief)
            .ok()
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
    });
    if launch.task_key.is_some() {
        return text;
    }
    let root = match &launch.project_root {
        Some(path) if path.is_absolute() => path.clone(),
        Some(path) => cwd.join(path),
        None => cwd.to_path_buf(),
    };
    let root = std::fs::canonicalize(&root).unwrap_or(root);
    let project_id = launch
        .project_id
        .get_or_insert_with(|| settings::default_project_id(&root))
        .clone();
    let task_group = launch
        .task_group
        .get_or_insert_with(|| settings::DEFAULT_TASK_GROUP.to_owned())
        .clone();
    if launch.task_id.is_none() {
        // Without a question yet (asked on a terminal), settings asks for
        // the task id with one made from the answer.
        if let Some(text) = &text {
            launch.task_id = Some(settings::unique_task_id(
                &root,
                &project_id,
                &task_group,
                text,
            ));
        }
    }
    text
}

/// What was chosen for the user, before anything starts: the run, and the
/// profile it follows and why.
fn show(
    settings: &Settings,
    launch: &crate::cli::LaunchArgs,
    suggested: Option<&crate::profile::Suggestion>,
) {
    let profile = crate::profile::Profile {
        task_type: settings.task_type,
        focus: settings.focus,
    };
    let why = if launch.task_type.is_some() || launch.focus.is_some() {
        "as the flags say".to_owned()
    } else {
        match suggested {
            Some(suggestion) if suggestion.profile == profile => {
                format!("because {}", suggestion.why)
            }
            Some(_) => "because the task's last run recommends it".to_owned(),
            None => "the default".to_owned(),
        }
    };
    diag::progress(format_args!(
        "profile: {}, {why} (`--task-type` and `--focus` choose another)",
        profile.name()
    ));
    show_run(settings);
}

/// The run `ask` starts.
fn show_run(settings: &Settings) {
    let roster: Vec<String> = settings
        .analysers
        .iter()
        .map(ToString::to_string)
        .chain(
            settings
                .report_writer
                .as_ref()
                .map(|_| crate::catalog::REPORT_WRITER.to_owned()),
        )
        .collect();
    diag::progress(format_args!(
        "asking: {} run `{}` in `{}`, workers {} (each can be changed: --task-type, --project-id, --task-group, --task-id, --workers)",
        settings.task_type,
        settings.task_key.joined(),
        settings.project_root.display(),
        roster.join(",")
    ));
}
