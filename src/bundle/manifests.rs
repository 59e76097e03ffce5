//! The three JSON files a render writes besides the prompts: the task
//! manifest (`run::task::TaskManifest`), the run manifest (spelt by
//! `manifest::NewRunManifest`) and the
//! initial team state, built from the resolved settings and the render
//! context (validated by the caller).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{MANIFEST_VERSION, RenderContext};
use crate::digest::sha256_hex;
use crate::run::layout::RunLayout;
use crate::run::manifest::{NewAssignment, NewCritic, NewFinalReport, NewLead, NewRunManifest};
use crate::run::roster::Assignment;
use crate::run::task::{Continuation, TaskBrief, TaskManifest};
use crate::settings::Settings;

pub(super) fn task_manifest(
    settings: &Settings,
    context: &RenderContext<'_>,
    created_at: &str,
) -> serde_json::Result<Value> {
    serde_json::to_value(TaskManifest {
        schema_version: MANIFEST_VERSION,
        okstra_version: context.okstra.version.to_owned(),
        created_at: created_at.to_owned(),
        task_key: context.task.key.clone(),
        project_id: settings.task_key.project_id.clone(),
        task_group: settings.task_key.task_group.clone(),
        task_id: settings.task_key.task_id.clone(),
        task_type: settings.task_type,
        work_category: context.task.work_category.map(str::to_owned),
        related_tasks: settings.related_tasks.clone(),
        directive: settings.directive.clone(),
        fix_cycle: settings.fix_cycle,
        plan_verification: settings.plan_verification,
        project_root: settings.project_root.clone(),
        task_brief: TaskBrief {
            // A question given as text has no file of its own: its copy is
            // its source.
            source: settings
                .task_brief
                .clone()
                .unwrap_or_else(|| context.task.brief_path.clone()),
            copy: context.task.brief_path.clone(),
            sha256: sha256_hex(settings.brief_text.as_bytes()),
        },
        continuation: Continuation {
            kind: context.continuation.kind.into(),
            input_path: context.continuation.input_path.clone(),
            previous_run: context.continuation.previous_run.clone(),
        },
    })
}

/// The run manifest, as `manifest::NewRunManifest` spells it.
pub(super) fn run_manifest(
    settings: &Settings,
    context: &RenderContext<'_>,
    roster: &[Assignment],
    prompt_hashes: &BTreeMap<String, String>,
    found: &super::Found<'_>,
    created_at: &str,
) -> serde_json::Result<Value> {
    let relative = RunLayout::relative();
    let assignments = roster
        .iter()
        .map(|assignment| NewAssignment {
            assignment,
            prompt_sha256: prompt_hashes
                .get(
                    relative
                        .prompt(&assignment.dispatch_name)
                        .to_string_lossy()
                        .as_ref(),
                )
                .map(String::as_str),
        })
        .collect();
    serde_json::to_value(NewRunManifest {
        schema_version: MANIFEST_VERSION,
        okstra_version: context.okstra.version,
        created_at,
        run_id: &context.run.id,
        sequence: context.run.sequence,
        task_key: &context.task.key,
        task_type: settings.task_type,
        focus: settings.focus,
        project_root: &settings.project_root,
        run_dir: &context.run.dir,
        lead_runtime: settings.lead_runtime,
        lead: NewLead {
            provider: context.runtime.host_provider,
            model: settings.lead_model.as_deref(),
            role_label: context.runtime.capabilities.lead_role_label,
            capabilities: &context.runtime.capabilities,
        },
        assignments,
        convergence: context.convergence,
        critic: context.critic.map(|critic| NewCritic {
            provider: critic.provider,
            model_execution_value: &critic.model_execution_value,
        }),
        lead_events_path: &context.run.lead_events_path,
        task_manifest_path: &context.run.task_manifest_path,
        team_state_path: &context.run.team_state_path,
        handoff_prompt_path: &context.run.handoff_path,
        instruction_set: &context.run.instruction_set,
        final_report: NewFinalReport {
            schema_version: crate::report::CURRENT.0,
            data_path: &context.run.report_data_path,
            schema_path: &context.run.report_schema_path,
        },
        continues: context.continuation.previous_run.as_deref(),
        prompt_sha256: prompt_hashes,
        provider_clis: found.provider_clis,
        containment: found.containment,
        source: found.source,
        change: settings.change.as_ref(),
    })
}

pub(super) fn team_state(
    settings: &Settings,
    context: &RenderContext<'_>,
    roster: &[Assignment],
    created_at: &str,
) -> Value {
    let workers: serde_json::Map<String, Value> = roster
        .iter()
        .map(|assignment| {
            (
                assignment.dispatch_name.clone(),
                json!({
                    "workerId": assignment.worker_id,
                    "role": assignment.role,
                    "provider": assignment.provider,
                    "runner": assignment.runner,
                    "terminalStatus": null,
                    "usage": null,
                }),
            )
        })
        .collect();
    let mut state = json!({
        "schemaVersion": MANIFEST_VERSION,
        "createdAt": created_at,
        "runId": context.run.id,
        "taskKey": context.task.key,
        "taskType": settings.task_type,
        "teamName": format!("okstra-{}-{}", context.task.key.replace('/', "-"), context.run.id),
        "dispatches": [],
        "workers": workers,
        "checkpoints": [],
        "leadUsage": null,
        "usageSummary": null,
    });
    // The engine settings the run keeps for every later call.
    if settings.engine != crate::run::settings::RunSettings::default()
        && let (Some(object), Ok(engine)) = (
            state.as_object_mut(),
            serde_json::to_value(&settings.engine),
        )
    {
        object.insert("settings".into(), engine);
    }
    state
}
