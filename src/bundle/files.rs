//! Every file of a run, rendered from its templates and validated against its
//! schemas, before the render moves them into place.

use self::manifests::{run_manifest, task_manifest, team_state};
use super::{
    ADAPTER_FILE, ContinuationView, ENDING_STATUS_FILE, INSTRUCTION_SET, OkstraInfo,
    PREFLIGHT_FILE, PROFILE_FILE, REPORT_SCHEMA, RUN_MANIFEST_SCHEMA, RenderContext, RenderedFile,
    ReverifyDispatch, RunView, RuntimeView, SHIPPED_SCHEMAS, TASK_MANIFEST_SCHEMA,
    TEAM_STATE_SCHEMA, TaskView, ending_views, manifests,
};
use crate::assign;
use crate::catalog::{
    CONVERGENCE_MAX_ROUNDS, DispatchKind, Provider, Role, TaskType, WorkCategory,
};
use crate::digest::sha256_hex;
use crate::fsread;
use crate::run::layout::RunLayout;
use crate::run::manifest::Convergence;
use crate::run::roster::{Assignment, DispatchPaths};
use crate::schema;
use crate::settings::{Continuation, Settings};
use crate::template;
use crate::vocab::ContinuationKind;
use anyhow::Result;
use minijinja::value::Serde;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What the render found about the machine and the project, recorded in
/// the run manifest.
pub(super) struct Found<'a> {
    /// The wrapper providers' CLIs as `PATH` and the doctor's cache know them.
    pub provider_clis: &'a Value,
    /// The commit the project was at.
    pub source: Option<&'a crate::change::Source>,
    /// How the run keeps its CLIs from the project.
    pub containment: crate::vocab::Containment,
}

/// Every file of the run, relative to the run folder, rendered and validated.
pub(super) fn render_files(
    settings: &Settings,
    run_dir: &Path,
    run_id: &str,
    sequence: u32,
    created_at: &str,
    found: &Found<'_>,
) -> Result<Vec<RenderedFile>> {
    let containment = found.containment;
    let roster = assign::roster(settings, run_dir);
    let convergence_enabled = assign::convergence_enabled(&roster);
    let convergence = Convergence {
        enabled: convergence_enabled,
        adversarial: settings.task_type.is_analysis(),
        effective_max_rounds: if convergence_enabled {
            CONVERGENCE_MAX_ROUNDS
        } else {
            0
        },
    };
    let implementation = settings.task_type == TaskType::Implementation;

    let layout = RunLayout::of(run_dir);
    let mut instruction_set: BTreeMap<&'static str, PathBuf> = INSTRUCTION_SET
        .iter()
        .map(|(key, file, _)| (*key, layout.instruction(file)))
        .collect();
    instruction_set.insert("profile", layout.instruction(PROFILE_FILE));
    instruction_set.insert("adapter", layout.instruction(ADAPTER_FILE));
    for (key, _, file) in SHIPPED_SCHEMAS {
        instruction_set.insert(key, layout.instruction(file));
    }
    instruction_set.insert("endingStatus", layout.instruction(ENDING_STATUS_FILE));
    if implementation {
        instruction_set.insert(
            "codingConventionsPreflight",
            layout.instruction(PREFLIGHT_FILE),
        );
    }

    let relative = RunLayout::relative();
    let (kind, _, input_name) = match &settings.continuation {
        Continuation::None => (ContinuationKind::None, None, None),
        Continuation::ClarificationResponse(path) => (
            ContinuationKind::ClarificationResponse,
            Some(path.clone()),
            Some(relative.clarification_response()),
        ),
        Continuation::ClarificationAnswers(_) => (
            ContinuationKind::ResumeClarification,
            None,
            Some(relative.clarification_response()),
        ),
        Continuation::ApprovedPlan(path) => (
            ContinuationKind::ApprovedPlan,
            Some(path.clone()),
            Some(relative.approved_plan()),
        ),
    };
    let brief_copy = layout.task_brief();
    let run = RunView {
        id: run_id.to_owned(),
        sequence,
        dir: run_dir.to_path_buf(),
        project_root: settings.project_root.clone(),
        handoff_path: layout.handoff(),
        run_manifest_path: layout.run_manifest(),
        task_manifest_path: layout.task_manifest(),
        team_state_path: layout.team_state(run_id),
        lead_events_path: layout.lead_events(),
        results_dir: layout.results_dir(),
        report_dir: layout.report_dir(),
        report_data_path: layout.report_data(),
        report_schema_path: layout.report_schema(),
        convergence_ledger_path: layout.convergence_ledger(),
        instruction_set,
        branch: if settings.task_type == TaskType::Implementation {
            let identity = crate::workspace::RunIdentity {
                project_root: settings.project_root.clone(),
                task_key: settings.task_key.joined(),
                run_id: run_id.to_owned(),
                run_dir: run_dir.to_path_buf(),
                created_at: created_at.to_owned(),
            };
            Some(crate::workspace::branch_ref(&identity)?)
        } else {
            None
        },
    };
    let capabilities = settings.lead_runtime.capabilities();
    let reverify = reverify_dispatches(&roster, run_dir, convergence);
    let context = RenderContext {
        okstra: OkstraInfo {
            version: env!("CARGO_PKG_VERSION"),
        },
        task: TaskView {
            key: settings.task_key.joined(),
            project_id: &settings.task_key.project_id,
            task_group: &settings.task_key.task_group,
            task_id: &settings.task_key.task_id,
            r#type: settings.task_type,
            profile: crate::profile::Profile {
                task_type: settings.task_type,
                focus: settings.focus,
            }
            .stem(),
            is_analysis: settings.task_type.is_analysis(),
            work_category: settings.work_category.map(WorkCategory::as_str),
            related_tasks: &settings.related_tasks,
            directive: settings.directive.as_deref(),
            fix_cycle: settings.fix_cycle,
            plan_verification: settings.plan_verification,
            brief_path: brief_copy.clone(),
            brief_text: &settings.brief_text,
        },
        continuation: ContinuationView {
            kind,
            input_path: input_name.as_ref().map(|name| run_dir.join(name)),
            previous_run: settings.previous_run.clone(),
        },
        runtime: RuntimeView {
            capabilities: capabilities.clone(),
            host_provider: settings.lead_runtime.host_provider().map(Provider::as_str),
            lead_model: settings.lead_model.clone(),
            interactive_binary: settings.lead_runtime.interactive_binary(),
        },
        convergence,
        critic: roster.iter().find(|a| a.role == Role::Critic),
        report_writer: roster.iter().find(|a| a.role == Role::ReportWriter),
        executor: roster.iter().find(|a| a.role == Role::Executor),
        roster: &roster,
        assignment: None,
        reverify: &reverify,
        reverify_dispatch: None,
        workspace: None,
        endings: ending_views(),
        run,
    };

    let env = template::environment();
    // Convert the shared context once; per-worker renders only add the
    // worker's own fields in front of it (left-most keys win a merge).
    let base = minijinja::Value::from(Serde(&context));
    let mut files: Vec<RenderedFile> = Vec::new();
    let mut text = |path: PathBuf, template_name: &str, context: minijinja::Value| -> Result<()> {
        let rendered = template::render(&env, template_name, context)?;
        files.push((path, rendered.into_bytes()));
        Ok(())
    };
    for (_, file, template_name) in INSTRUCTION_SET {
        text(relative.instruction(file), template_name, base.clone())?;
    }
    text(
        relative.instruction(PROFILE_FILE),
        &format!("prompts/profiles/{}.md.j2", context.task.profile),
        base.clone(),
    )?;
    text(
        relative.instruction(ADAPTER_FILE),
        &format!("prompts/lead/adapters/{}.md.j2", settings.lead_runtime),
        base.clone(),
    )?;
    if implementation {
        text(
            relative.instruction(PREFLIGHT_FILE),
            "prompts/profiles/_coding-conventions-preflight.md.j2",
            base.clone(),
        )?;
    }
    // The report writer's fields, from the schema it writes against.
    let report_fields = crate::report::fields::digest(REPORT_SCHEMA, settings.task_type)?;
    for assignment in &roster {
        // Nothing is made here: the engine makes the copy at dispatch.
        let workspace = crate::converge::plan::worker_workspace(
            &settings.project_root,
            &settings.task_key.joined(),
            run_id,
            &roster,
            assignment,
            containment,
        )?;
        text(
            relative.prompt(&assignment.dispatch_name),
            "templates/worker-prompt.md.j2",
            minijinja::context! {
                assignment => Serde(assignment),
                workspace => Serde(&workspace),
                reportFields => (assignment.role == Role::ReportWriter).then_some(report_fields.as_str()),
                ..base.clone()
            },
        )?;
    }
    text(relative.handoff(), "templates/handoff.md.j2", base)?;

    // Hash every rendered prompt before the manifests that record the hashes.
    let prompt_hashes: BTreeMap<String, String> = files
        .iter()
        .map(|(path, bytes)| (path.to_string_lossy().into_owned(), sha256_hex(bytes)))
        .collect();

    for (_, schema_name, file) in SHIPPED_SCHEMAS {
        files.push((
            relative.instruction(file),
            schema::text(schema_name)?.as_bytes().to_vec(),
        ));
    }
    let mut ending_status = serde_json::to_vec_pretty(&json!({
        "description": "How each ending class of a dispatch attempt (`okstra await`, the team state's `dispatches[].ending`) maps to the final report's worker coverage: `terminalStatus` and `failure.reason`.",
        "endings": ending_views(),
    }))?;
    ending_status.push(b'\n');
    files.push((relative.instruction(ENDING_STATUS_FILE), ending_status));
    files.push((
        relative.task_brief(),
        settings.brief_text.as_bytes().to_vec(),
    ));
    if let Some(name) = input_name {
        files.push((name, continuation_bytes(&settings.continuation)?));
    }
    files.push((relative.lead_events(), Vec::new()));

    let task_manifest = task_manifest(settings, &context, created_at)?;
    let run_manifest = run_manifest(
        settings,
        &context,
        &roster,
        &prompt_hashes,
        found,
        created_at,
    )?;
    let team_state = team_state(settings, &context, &roster, created_at);
    for (path, value, schema_name) in [
        (
            relative.task_manifest(),
            task_manifest,
            TASK_MANIFEST_SCHEMA,
        ),
        (relative.run_manifest(), run_manifest, RUN_MANIFEST_SCHEMA),
        (relative.team_state(run_id), team_state, TEAM_STATE_SCHEMA),
    ] {
        schema::check(
            schema_name,
            &value,
            &format!("the rendered `{}`", path.display()),
        )?;
        let mut bytes = serde_json::to_vec_pretty(&value)?;
        bytes.push(b'\n');
        files.push((path, bytes));
    }
    Ok(files)
}

/// Every reverify dispatch of Phase 5.5: one per reviewing worker (analysers,
/// or verifiers in `implementation`) per round, in round order.
pub(super) fn reverify_dispatches(
    roster: &[Assignment],
    run_dir: &Path,
    convergence: Convergence,
) -> Vec<ReverifyDispatch> {
    if !convergence.enabled {
        return Vec::new();
    }
    let reviewers: Vec<&Assignment> = roster.iter().filter(|a| a.role.reviews()).collect();
    let mut dispatches = Vec::new();
    for round in 1..=convergence.effective_max_rounds {
        for assignment in &reviewers {
            let kind = DispatchKind::Reverify(round);
            let dispatch_name = kind.dispatch_name(&assignment.dispatch_name);
            dispatches.push(ReverifyDispatch {
                round,
                worker_id: assignment.worker_id.clone(),
                base_dispatch_name: assignment.dispatch_name.clone(),
                dispatch_kind: kind.as_string(),
                provider: assignment.provider,
                model_execution_value: assignment.model_execution_value.clone(),
                host_model: assignment.host_model.clone(),
                runner: assignment.runner,
                wrapper: assignment.wrapper.clone(),
                paths: DispatchPaths::new(run_dir, &dispatch_name),
                round_plan_path: RunLayout::of(run_dir).round_plan(round),
                dispatch_name,
            });
        }
    }
    dispatches
}

/// The bytes of the continuation input copied into `inputs/`.
pub(super) fn continuation_bytes(continuation: &Continuation) -> Result<Vec<u8>> {
    match continuation {
        Continuation::ClarificationResponse(path) | Continuation::ApprovedPlan(path) => {
            Ok(fsread::read(path, fsread::Kind::Brief)?)
        }
        Continuation::ClarificationAnswers(text) => Ok(text.clone().into_bytes()),
        Continuation::None => Ok(Vec::new()),
    }
}
