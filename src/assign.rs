//! Settings → the roster of assignments, one per worker.
//!
//! An assignment is the only authority at dispatch time: provider, exact
//! model execution value, runner and every path are fixed here and persisted
//! in the run manifest. Nothing downstream may substitute a provider or model.

use std::path::Path;

use crate::catalog::{LeadRuntime, Provider, REPORT_WRITER, Role, Runner, TaskType};
use crate::run::layout::RunLayout;
use crate::run::roster::{Assignment, DispatchPaths};
use crate::settings::Settings;

/// The roster in dispatch order: analysers (or executor then verifiers),
/// the critic, the report writer.
pub fn roster(settings: &Settings, run_dir: &Path) -> Vec<Assignment> {
    let runtime = settings.lead_runtime;
    let mut roster = Vec::new();
    if settings.task_type == TaskType::Implementation {
        let executor = settings.executor;
        roster.push(make(
            runtime,
            run_dir,
            executor.as_str(),
            Role::Executor,
            executor,
            settings.models.worker(executor, Role::Executor),
            format!("{executor}-executor"),
        ));
        for provider in settings.analysers.iter().filter(|p| **p != executor) {
            roster.push(make(
                runtime,
                run_dir,
                provider.as_str(),
                Role::Verifier,
                *provider,
                settings.models.worker(*provider, Role::Verifier),
                format!("{provider}-verifier"),
            ));
        }
    } else {
        for provider in &settings.analysers {
            roster.push(make(
                runtime,
                run_dir,
                provider.as_str(),
                Role::Analyser,
                *provider,
                settings.models.worker(*provider, Role::Analyser),
                format!("{provider}-worker"),
            ));
        }
    }
    if let Some(critic) = settings.critic {
        roster.push(make(
            runtime,
            run_dir,
            &format!("{critic}-critic"),
            Role::Critic,
            critic,
            settings.models.worker(critic, Role::Critic),
            format!("{critic}-worker-critic"),
        ));
    }
    if let Some((provider, model)) = &settings.report_writer {
        roster.push(make(
            runtime,
            run_dir,
            REPORT_WRITER,
            Role::ReportWriter,
            *provider,
            model.clone(),
            REPORT_WRITER.to_owned(),
        ));
    }
    roster
}

fn make(
    runtime: LeadRuntime,
    run_dir: &Path,
    worker_id: &str,
    role: Role,
    provider: Provider,
    model: String,
    dispatch_name: String,
) -> Assignment {
    let runner = if runtime.host_provider() == Some(provider) {
        Runner::NativeSession
    } else {
        Runner::CliWrapper
    };
    let host_model = match runner {
        Runner::NativeSession => provider
            .descriptor()
            .native_model
            .of(&model)
            .unwrap_or("unmapped")
            .to_owned(),
        Runner::CliWrapper => "inherit".to_owned(),
    };
    let mut paths = DispatchPaths::new(run_dir, &dispatch_name);
    if role == Role::ReportWriter {
        // The report writer's result is the report itself.
        paths.result_path = RunLayout::of(run_dir).report_data();
    }
    Assignment {
        worker_id: worker_id.to_owned(),
        role,
        provider,
        host_model,
        runner,
        wrapper: (runner == Runner::CliWrapper).then(|| provider.wrapper()),
        writes_project: role == Role::Executor,
        paths,
        model_execution_value: model,
        dispatch_name,
    }
}

/// Whether Phase 5.5 runs: two or more independent analysers (or verifiers).
pub fn convergence_enabled(roster: &[Assignment]) -> bool {
    roster
        .iter()
        .filter(|a| matches!(a.role, Role::Analyser | Role::Verifier))
        .count()
        >= 2
}
