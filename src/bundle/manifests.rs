//! The three JSON files a render writes besides the prompts: the task
//! manifest, the run manifest and the initial team state, built from the
//! resolved settings and the render context (validated by the caller).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{MANIFEST_VERSION, RenderContext, sha256_hex};
use crate::assign::Assignment;
use crate::layout::RunLayout;
use crate::settings::Settings;

pub(super) fn task_manifest(
    settings: &Settings,
    context: &RenderContext<'_>,
    created_at: &str,
) -> Value {
    json!({
        "schemaVersion": MANIFEST_VERSION,
        "okstraVersion": context.okstra.version,
        "createdAt": created_at,
        "taskKey": context.task.key,
        "projectId": settings.task_key.project_id,
        "taskGroup": settings.task_key.task_group,
        "taskId": settings.task_key.task_id,
        "taskType": settings.task_type,
        "workCategory": context.task.work_category,
        "relatedTasks": settings.related_tasks,
        "directive": settings.directive,
        "fixCycle": settings.fix_cycle,
        "planVerification": settings.plan_verification,
        "projectRoot": settings.project_root,
        "taskBrief": {
            "source": settings.task_brief,
            "copy": context.task.brief_path,
            "sha256": sha256_hex(settings.brief_text.as_bytes()),
        },
        "continuation": {
            "kind": context.continuation.kind,
            "inputPath": context.continuation.input_path,
            "previousRun": context.continuation.previous_run,
        },
    })
}

pub(super) fn run_manifest(
    settings: &Settings,
    context: &RenderContext<'_>,
    roster: &[Assignment],
    prompt_hashes: &BTreeMap<String, String>,
    created_at: &str,
) -> Value {
    let assignments: Vec<Value> = roster
        .iter()
        .map(|assignment| {
            let mut value = serde_json::to_value(assignment).expect("assignments always serialize");
            let relative = RunLayout::relative().prompt(&assignment.dispatch_name);
            value["promptSha256"] = json!(prompt_hashes.get(relative.to_string_lossy().as_ref()));
            value
        })
        .collect();
    json!({
        "schemaVersion": MANIFEST_VERSION,
        "okstraVersion": context.okstra.version,
        "createdAt": created_at,
        "runId": context.run.id,
        "sequence": context.run.sequence,
        "taskKey": context.task.key,
        "taskType": settings.task_type,
        "projectRoot": settings.project_root,
        "runDir": context.run.dir,
        "leadRuntime": settings.lead_runtime,
        "lead": {
            "provider": context.runtime.host_provider,
            "model": settings.lead_model,
            "roleLabel": context.runtime.capabilities.lead_role_label,
            "capabilities": context.runtime.capabilities,
        },
        "assignments": assignments,
        "convergence": context.convergence,
        "critic": context.critic.map(|critic| json!({
            "provider": critic.provider,
            "modelExecutionValue": critic.model_execution_value,
        })),
        "leadEventsPath": context.run.lead_events_path,
        "taskManifestPath": context.run.task_manifest_path,
        "teamStatePath": context.run.team_state_path,
        "handoffPromptPath": context.run.handoff_path,
        "instructionSet": context.run.instruction_set,
        "finalReport": {
            "schemaVersion": "2.0",
            "dataPath": context.run.report_data_path,
            "schemaPath": context.run.report_schema_path,
        },
        "continues": context.continuation.previous_run,
        "promptSha256": prompt_hashes,
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
    json!({
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
    })
}
