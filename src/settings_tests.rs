//! Unit tests of settings resolution: flags over environment over catalog,
//! and every refusal before anything is written.

use std::fs;

use super::*;
use crate::profile::DEFAULT_TASK_TYPE;

struct NoAsk;
impl Ask for NoAsk {
    fn ask(&mut self, question: &str) -> Result<String> {
        panic!("asked `{question}` while prompting is off")
    }
    fn answers(&mut self, previous: &Path) -> Result<String> {
        panic!("asked for answers to `{}`", previous.display())
    }
}

/// Types `typed` as the clarification answers and records which run it was
/// shown.
struct Answers {
    typed: &'static str,
    shown: Option<PathBuf>,
}
impl Ask for Answers {
    fn ask(&mut self, question: &str) -> Result<String> {
        panic!("asked `{question}` while prompting is off")
    }
    fn answers(&mut self, previous: &Path) -> Result<String> {
        self.shown = Some(previous.to_path_buf());
        Ok(self.typed.to_owned())
    }
}

fn base(dir: &Path) -> LaunchArgs {
    fs::write(dir.join("brief.md"), "Why is it slow?\n").unwrap();
    LaunchArgs {
        yes: true,
        task_type: Some("project-analysis".into()),
        project_id: Some("demo".into()),
        task_group: Some("g".into()),
        task_id: Some("t".into()),
        task_brief: Some("brief.md".into()),
        ..LaunchArgs::default()
    }
}

type Change = Box<dyn Fn(&mut LaunchArgs)>;

fn resolve_env(args: &LaunchArgs, dir: &Path, vars: &[(&str, &str)]) -> Result<Settings> {
    let vars: BTreeMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let lookup = move |name: &str| vars.get(name).cloned();
    resolve_with(args, &lookup, dir, false, &mut NoAsk)
}

#[test]
fn flags_beat_env_and_env_beats_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = base(dir.path());
    let env = [
        ("OKSTRA_DEFAULT_CODEX_MODEL", "gpt-env"),
        ("OKSTRA_DEFAULT_CLAUDE_MODEL", "sonnet"),
    ];
    let settings = resolve_env(&args, dir.path(), &env).unwrap();
    assert_eq!(
        settings.models.worker(Provider::Codex, Role::Analyser),
        "gpt-env"
    );
    assert_eq!(
        settings.models.worker(Provider::Claude, Role::Analyser),
        "sonnet"
    );
    args.provider_models
        .set(Provider::Codex, Some("gpt-flag".into()));
    let settings = resolve_env(&args, dir.path(), &env).unwrap();
    assert_eq!(
        settings.models.worker(Provider::Codex, Role::Analyser),
        "gpt-flag"
    );
    assert_eq!(
        settings.models.worker(Provider::Grok, Role::Critic),
        "grok-4.5"
    );
}

#[test]
fn refusals_name_the_value() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(Change, &str)> = vec![
        (
            Box::new(|a| a.workers = Some("claude,claude".into())),
            "`claude` is listed twice",
        ),
        (
            Box::new(|a| a.workers = Some("claude,gemini".into())),
            "unknown worker `gemini`",
        ),
        (
            Box::new(|a| a.report_writer_provider = Some("grok".into())),
            "`grok` for `--report-writer-provider`: expected claude|codex",
        ),
        (
            Box::new(|a| a.executor = Some("kimi".into())),
            "`kimi` for `--executor`",
        ),
        (
            Box::new(|a| a.critic = Some("nobody".into())),
            "`nobody` for `--critic`",
        ),
        (
            Box::new(|a| a.critic = Some("grok".into())),
            "`--critic grok` names a provider that is not on",
        ),
        (
            Box::new(|a| a.fix_cycle = Some("maybe".into())),
            "`maybe` for `--fix-cycle`",
        ),
        (
            Box::new(|a| a.worker_model = Some("grok".into())),
            "invalid entry `grok`",
        ),
        (
            Box::new(|a| a.worker_model = Some("gemini=x".into())),
            "unknown provider `gemini`",
        ),
        (
            Box::new(|a| a.project_id = Some("../x".into())),
            "`../x` for `--project-id`",
        ),
        (
            Box::new(|a| a.task_id = Some(String::new())),
            "`` for `--task-id`",
        ),
        (
            Box::new(|a| a.task_group = Some("a".repeat(129))),
            "for `--task-group`",
        ),
        (
            Box::new(|a| a.task_type = Some("audit".into())),
            "`audit` for `--task-type`",
        ),
        (
            Box::new(|a| {
                a.lead_runtime = Some("codex".into());
                a.lead_provider = Some("claude".into());
            }),
            "contradicts",
        ),
        (
            Box::new(|a| {
                a.resume_clarification = true;
                a.approved_plan = Some("p.md".into());
            }),
            "cannot be combined",
        ),
        (
            Box::new(|a| a.task_brief = Some("nope.md".into())),
            "no such file",
        ),
    ];
    for (change, expected) in cases {
        let mut args = base(dir.path());
        change(&mut args);
        let err = resolve_env(&args, dir.path(), &[]).unwrap_err().to_string();
        assert!(
            err.contains(expected),
            "{err:?} should contain {expected:?}"
        );
        assert!(!err.contains('\n'), "{err:?} should be one line");
    }
}

#[test]
fn env_executor_is_validated_and_flag_wins() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = base(dir.path());
    let err = resolve_env(&args, dir.path(), &[("OKSTRA_DEFAULT_EXECUTOR", "grok")]).unwrap_err();
    assert!(err.to_string().contains("OKSTRA_DEFAULT_EXECUTOR"));
    args.executor = Some("codex".into());
    let settings = resolve_env(&args, dir.path(), &[("OKSTRA_DEFAULT_EXECUTOR", "grok")]).unwrap();
    assert_eq!(settings.executor, Provider::Codex);
}

#[test]
fn task_key_joined_form() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = base(dir.path());
    args.project_id = None;
    args.task_group = None;
    args.task_id = None;
    args.task_key = Some("p/g/t".into());
    let settings = resolve_env(&args, dir.path(), &[]).unwrap();
    assert_eq!(settings.task_key.joined(), "p/g/t");
    args.task_key = Some("p/../t".into());
    assert!(resolve_env(&args, dir.path(), &[]).is_err());
    args.task_key = Some("/abs/g/t".into());
    assert!(resolve_env(&args, dir.path(), &[]).is_err());
}

#[test]
fn unmappable_native_claude_model_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = base(dir.path());
    args.provider_models
        .set(Provider::Claude, Some("gpt-5".into()));
    let err = resolve_env(&args, dir.path(), &[]).unwrap_err().to_string();
    assert!(
        err.contains("`gpt-5`") && err.contains("family token"),
        "{err}"
    );
    args.lead_runtime = Some("codex".into());
    assert!(resolve_env(&args, dir.path(), &[]).is_ok());
}

#[test]
fn missing_argument_without_terminal_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = base(dir.path());
    args.yes = false;
    args.task_id = None;
    let err = resolve_env(&args, dir.path(), &[]).unwrap_err().to_string();
    assert!(
        err.contains("`--task-id`") && err.contains("no terminal"),
        "{err}"
    );
}

/// A requirements-discovery run of `demo/g/t`, known only by its manifest.
fn discovery_run(dir: &Path) -> PathBuf {
    let run = dir.join(".okstra/tasks/demo/g/t/requirements-discovery-1");
    fs::create_dir_all(&run).unwrap();
    let manifest = serde_json::json!({
        "runId": "requirements-discovery-1", "createdAt": "2026-01-01T00:00:00Z",
        "taskKey": "demo/g/t", "taskType": "requirements-discovery",
        "projectRoot": dir, "runDir": run, "leadRuntime": "claude-code", "assignments": [],
        "leadEventsPath": "state/lead-events.jsonl", "teamStatePath": "state/team-state.json",
        "taskManifestPath": "task-manifest.json", "finalReport": {"dataPath": "report/data.json"},
    });
    fs::write(run.join("run-manifest.json"), manifest.to_string()).unwrap();
    run.canonicalize().unwrap()
}

#[test]
fn resume_clarification_resolves_to_the_typed_answers() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = base(dir.path());
    args.task_type = None;
    args.resume_clarification = true;
    let run = discovery_run(dir.path());
    let mut asker = Answers {
        typed: "use postgres\n",
        shown: None,
    };
    let settings = resolve_with(&args, &|_| None, dir.path(), false, &mut asker).unwrap();
    assert_eq!(
        settings.continuation,
        Continuation::ClarificationAnswers("use postgres\n".into())
    );
    assert_eq!(settings.task_type, TaskType::RequirementsDiscovery);
    assert_eq!(settings.previous_run.as_deref(), Some(run.as_path()));
    assert_eq!(asker.shown, Some(run));
}

#[test]
fn resume_clarification_refuses_blank_answers() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = base(dir.path());
    args.resume_clarification = true;
    discovery_run(dir.path());
    let mut asker = Answers {
        typed: " \n\n",
        shown: None,
    };
    let err = resolve_with(&args, &|_| None, dir.path(), false, &mut asker).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no answers were given; nothing to continue with"
    );
}

#[test]
fn resume_clarification_asks_only_after_every_check() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = base(dir.path());
    args.resume_clarification = true;
    // No earlier run: refused without asking.
    let err = resolve_env(&args, dir.path(), &[]).unwrap_err().to_string();
    assert!(
        err.contains("`demo/g/t` has no requirements-discovery"),
        "{err}"
    );
    // A bad brief or model is refused before the answers are asked for.
    discovery_run(dir.path());
    args.provider_models
        .set(Provider::Claude, Some("gpt-5".into()));
    let err = resolve_env(&args, dir.path(), &[]).unwrap_err().to_string();
    assert!(err.contains("family token"), "{err}");
    args.provider_models.set(Provider::Claude, None);
    args.task_brief = Some("nope.md".into());
    let err = resolve_env(&args, dir.path(), &[]).unwrap_err().to_string();
    assert!(err.contains("no such file"), "{err}");
}

/// Types the scripted answers in order; keeps every question and every
/// refusal it was told.
struct Script {
    typed: Vec<&'static str>,
    asked: Vec<String>,
    told: Vec<String>,
}
impl Ask for Script {
    fn ask(&mut self, question: &str) -> Result<String> {
        self.asked.push(question.to_owned());
        if self.typed.is_empty() {
            bail!("the input ended");
        }
        Ok(self.typed.remove(0).to_owned())
    }
    fn answers(&mut self, previous: &Path) -> Result<String> {
        panic!("asked for answers to `{}`", previous.display())
    }
    fn tell(&mut self, line: &str) -> Result<()> {
        self.told.push(line.to_owned());
        Ok(())
    }
}

#[test]
fn prompts_offer_defaults_re_ask_and_keep_earlier_answers() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("tiny-service");
    fs::create_dir(&root).unwrap();
    let mut script = Script {
        // The question itself, then Enter for the project id and group,
        // a bad task id, Enter for the derived one, the task type by number.
        typed: vec![
            "Why are reservations oversold?",
            "",
            "",
            "first look",
            "",
            "2",
        ],
        asked: Vec::new(),
        told: Vec::new(),
    };
    let args = LaunchArgs::default();
    let settings = resolve_full(
        &args,
        Inputs::default(),
        &|_| None,
        &root,
        true,
        &mut script,
    )
    .unwrap();
    assert_eq!(
        settings.task_key.joined(),
        "tiny-service/ask/why-are-reservations-oversold"
    );
    assert_eq!(settings.task_type, TaskType::ErrorAnalysis);
    assert_eq!(settings.task_brief, None);
    assert_eq!(settings.brief_text, "Why are reservations oversold?\n");
    assert_eq!(
        script.told,
        [
            "invalid value `first look` for `--task-id`: expected a safe slug matching ^[a-z0-9][a-z0-9._-]{0,127}$; try again"
        ]
    );
    assert!(
        script.asked[1]
            .ends_with("project-id (lowercase letters, digits, `.`, `_`, `-`) [tiny-service]")
    );
    assert!(script.asked[3].ends_with("[why-are-reservations-oversold]"));
    let choices = &script.asked[5];
    for task_type in TaskType::ALL {
        assert!(choices.contains(task_type.as_str()), "{choices}");
    }
    assert!(
        choices.contains("4) project-analysis (default)"),
        "{choices}"
    );
}

#[test]
fn a_question_needs_no_brief_file_and_defaults_the_task_type() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = base(dir.path());
    args.task_brief = None;
    args.task_type = None;
    let inputs = Inputs {
        question: Some("What does the inventory module do?"),
        default_task_type: true,
        suggested: None,
    };
    let settings = resolve_full(&args, inputs, &|_| None, dir.path(), false, &mut NoAsk).unwrap();
    assert_eq!(settings.task_type, DEFAULT_TASK_TYPE);
    assert_eq!(settings.task_brief, None);
    let blank = Inputs {
        question: Some(" \n"),
        default_task_type: true,
        suggested: None,
    };
    let err = resolve_full(&args, blank, &|_| None, dir.path(), false, &mut NoAsk).unwrap_err();
    assert!(
        err.to_string().starts_with("the question is empty"),
        "{err}"
    );
}

#[test]
fn derived_task_ids_never_reuse_an_earlier_task() {
    let dir = tempfile::tempdir().unwrap();
    let taken = dir.path().join(".okstra/tasks/p/ask/why-is-it-slow");
    fs::create_dir_all(&taken).unwrap();
    assert_eq!(
        unique_task_id(dir.path(), "p", "ask", "Why is it slow?"),
        "why-is-it-slow-2"
    );
    assert_eq!(
        unique_task_id(dir.path(), "p", "other", "Why is it slow?"),
        "why-is-it-slow"
    );
    let repo = dir.path().join("My Repo");
    fs::create_dir_all(repo.join(".git")).unwrap();
    fs::create_dir_all(repo.join("sub/dir")).unwrap();
    assert_eq!(default_project_id(&repo.join("sub/dir")), "my-repo");
}

/// (--task-type, --focus, suggested, expected task type and focus)
type FocusRow = (
    Option<&'static str>,
    Option<&'static str>,
    Option<crate::profile::Profile>,
    (TaskType, Option<crate::catalog::Focus>),
);

#[test]
fn the_focus_is_the_flags_or_the_suggested_profiles_for_its_task_type() {
    use crate::catalog::Focus;
    use crate::profile::Profile;
    let dir = tempfile::tempdir().unwrap();
    let hunt = Profile {
        task_type: TaskType::ProjectAnalysis,
        focus: Some(Focus::Defects),
    };
    let rows: [FocusRow; 5] = [
        (
            None,
            None,
            Some(hunt),
            (TaskType::ProjectAnalysis, Some(Focus::Defects)),
        ),
        (None, None, None, (DEFAULT_TASK_TYPE, None)),
        (
            Some("error-analysis"),
            None,
            Some(hunt),
            (TaskType::ErrorAnalysis, None),
        ),
        (
            Some("project-analysis"),
            Some("defects"),
            None,
            (TaskType::ProjectAnalysis, Some(Focus::Defects)),
        ),
        (
            None,
            None,
            Some(Profile::of(TaskType::ErrorAnalysis)),
            (TaskType::ErrorAnalysis, None),
        ),
    ];
    for (task_type, focus, suggested, expected) in rows {
        let mut args = base(dir.path());
        args.task_type = task_type.map(str::to_owned);
        args.focus = focus.map(str::to_owned);
        let inputs = Inputs {
            question: None,
            default_task_type: true,
            suggested,
        };
        let settings =
            resolve_full(&args, inputs, &|_| None, dir.path(), false, &mut NoAsk).unwrap();
        assert_eq!(
            (settings.task_type, settings.focus),
            expected,
            "{task_type:?} {focus:?} {suggested:?}"
        );
    }
    let mut args = base(dir.path());
    args.task_type = Some("feature-analysis".into());
    args.focus = Some("defects".into());
    let err = resolve_full(
        &args,
        Inputs::default(),
        &|_| None,
        dir.path(),
        false,
        &mut NoAsk,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "`--focus defects` is a variant of `project-analysis`, not of `feature-analysis`: drop `--focus` or pass `--task-type project-analysis`"
    );
}
