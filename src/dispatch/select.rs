//! Which dispatches a `okstra dispatch --kind …` call starts: a pure choice
//! from the run manifest, the team state's records and (for convergence
//! rounds) the round plan.
//!
//! `initial` takes the current phase's workers that have never been
//! dispatched: the analysers (or the executor, then — once it completed —
//! the verifiers of an implementation run). The report writer joins only
//! when named with `--workers`, so a repeated call can never start it before
//! the lead has converged. `critic` takes the critic. `retry` spends a named
//! worker's one retry on its last failed attempt. `reverify-r<N>` takes the
//! reviewers of `state/round-plan-r<N>.json`.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::catalog::{Provider, Role, Runner};
use crate::ending::Ending;
use crate::run::layout::RunLayout;
use crate::run::manifest::RunManifest;
use crate::run::roster::{Assignment, DispatchPaths};
use crate::run::team_state::TeamState;

/// `--kind`: the catalog's dispatch kinds.
pub use crate::catalog::DispatchKind as Kind;

/// One dispatch to start: who, with what, and where its files go.
#[derive(Debug, Clone)]
pub struct Planned {
    pub dispatch_name: String,
    /// The `workers.<name>` key of the team state: the assignment's own
    /// dispatch name (a reverify dispatch spends its worker's retry).
    pub assignment_name: String,
    pub kind: String,
    pub attempt: u32,
    pub worker_id: String,
    pub role: Role,
    pub provider: Provider,
    pub model: String,
    pub runner: Runner,
    pub paths: DispatchPaths,
    pub prompt_sha256: Option<String>,
}

/// The result of selection: what starts, and what the host must dispatch.
#[derive(Debug, Default)]
pub struct Selection {
    pub planned: Vec<Planned>,
    /// `native-session` dispatches of the same kind: the host runs these.
    pub native: Vec<Planned>,
    /// Selected workers that are skipped, with the reason.
    pub skipped: Vec<(String, String)>,
}

/// Choose the dispatches of `kind` (restricted to `workers` when given).
pub fn select(
    manifest: &RunManifest,
    state: &TeamState,
    kind: Kind,
    workers: Option<&[String]>,
) -> Result<Selection> {
    if let Some(names) = workers {
        for name in names {
            if manifest.assignment(name).is_none() {
                let known: Vec<&str> = manifest
                    .assignments
                    .iter()
                    .map(|a| a.worker_id.as_str())
                    .collect();
                bail!(
                    "invalid value `{name}` for `--workers`: this run's workers are `{}`",
                    known.join(",")
                );
            }
        }
    }
    let named = |a: &Assignment| workers.is_none_or(|names| names.contains(&a.worker_id));
    let mut selection = Selection::default();
    let candidates: Vec<Planned> = match kind {
        Kind::Initial => initial(manifest, state, workers)
            .into_iter()
            .filter(|a| named(a))
            .map(|a| from_assignment(a, Kind::Initial, 1))
            .collect(),
        Kind::Critic => manifest
            .assignments
            .iter()
            .filter(|a| a.role == Role::Critic && named(a))
            .filter(|a| state.latest(&a.dispatch_name).is_none())
            .map(|a| from_assignment(a, Kind::Critic, 1))
            .collect(),
        Kind::Retry => {
            let Some(retried) = workers else {
                bail!("`--kind retry` needs `--workers`: name the workers to retry");
            };
            let mut planned = Vec::new();
            for name in retried {
                let assignment = manifest.assignment(name).context("checked above")?;
                match retry_of(assignment, state) {
                    Ok(next) => planned.push(next),
                    Err(why) => selection
                        .skipped
                        .push((assignment.dispatch_name.clone(), why)),
                }
            }
            planned
        }
        Kind::Reverify(round) => reverify(manifest, state, round)?
            .into_iter()
            .filter(|p| workers.is_none_or(|names| names.contains(&p.worker_id)))
            .collect(),
    };
    for planned in candidates {
        if planned.runner == Runner::NativeSession {
            selection.native.push(planned);
        } else {
            selection.planned.push(planned);
        }
    }
    Ok(selection)
}

/// The current phase's assignments that were never dispatched.
fn initial<'m>(
    manifest: &'m RunManifest,
    state: &TeamState,
    workers: Option<&[String]>,
) -> Vec<&'m Assignment> {
    let undispatched = |a: &&Assignment| state.latest(&a.dispatch_name).is_none();
    let completed = |a: &Assignment| {
        state
            .latest(&a.dispatch_name)
            .is_some_and(|r| r.ending == Some(Ending::Completed))
    };
    let by_role = |role: Role| manifest.assignments.iter().filter(move |a| a.role == role);
    let mut phase: Vec<&Assignment> =
        if manifest.task_type == crate::catalog::TaskType::Implementation {
            let executor_done = by_role(Role::Executor).all(completed);
            if executor_done {
                by_role(Role::Verifier).filter(undispatched).collect()
            } else {
                by_role(Role::Executor).filter(undispatched).collect()
            }
        } else {
            by_role(Role::Analyser).filter(undispatched).collect()
        };
    // The report writer only on request: it must follow convergence.
    if workers.is_some_and(|names| names.iter().any(|n| n == crate::catalog::REPORT_WRITER)) {
        phase.extend(by_role(Role::ReportWriter).filter(undispatched));
    }
    phase
}

fn from_assignment(a: &Assignment, kind: Kind, attempt: u32) -> Planned {
    Planned {
        dispatch_name: a.dispatch_name.clone(),
        assignment_name: a.dispatch_name.clone(),
        kind: kind.as_string(),
        attempt,
        worker_id: a.worker_id.clone(),
        role: a.role,
        provider: a.provider,
        model: a.model_execution_value.clone(),
        runner: a.runner,
        paths: a.paths.clone(),
        prompt_sha256: None,
    }
}

/// The retry of `assignment`'s last attempt, or why there is none.
fn retry_of(assignment: &Assignment, state: &TeamState) -> Result<Planned, String> {
    let last = state
        .dispatches
        .iter()
        .filter(|r| r.worker_id == assignment.worker_id)
        .max_by(|a, b| {
            a.started_at
                .cmp(&b.started_at)
                .then(a.attempt.cmp(&b.attempt))
        })
        .ok_or("it was never dispatched")?;
    match last.ending {
        None => return Err("its last attempt has not ended".into()),
        Some(Ending::Completed) => return Err("its last attempt completed".into()),
        Some(ending) if !ending.is_retryable() => {
            return Err(format!(
                "its last attempt ended `{ending}`, which is not retried"
            ));
        }
        Some(_) => {}
    }
    if state
        .retries_used
        .get(&assignment.dispatch_name)
        .is_some_and(|used| *used >= 1)
    {
        return Err("its one retry is already spent".into());
    }
    Ok(Planned {
        dispatch_name: last.dispatch_name.clone(),
        assignment_name: assignment.dispatch_name.clone(),
        kind: Kind::Retry.as_string(),
        attempt: last.attempt + 1,
        worker_id: assignment.worker_id.clone(),
        role: assignment.role,
        provider: assignment.provider,
        model: assignment.model_execution_value.clone(),
        runner: assignment.runner,
        paths: DispatchPaths {
            prompt_path: last.prompt_path.clone(),
            result_path: last.result_path.clone(),
            worker_results_path: last.worker_results_path.clone(),
            error_path: last.error_path.clone(),
            heartbeat_path: assignment.paths.heartbeat_path.clone(),
        },
        prompt_sha256: None,
    })
}

/// One reviewer of a round plan, as `okstra converge plan` writes it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Reviewer {
    worker_id: String,
    dispatch_name: String,
    prompt_path: PathBuf,
    #[serde(default)]
    prompt_sha256: Option<String>,
    result_path: PathBuf,
    worker_results_path: PathBuf,
    error_path: PathBuf,
    heartbeat_path: PathBuf,
}

#[derive(Debug, Deserialize)]
struct RoundPlan {
    reviewers: Vec<Reviewer>,
}

/// The reviewers of round `round` not yet dispatched.
fn reverify(manifest: &RunManifest, state: &TeamState, round: u32) -> Result<Vec<Planned>> {
    let plan_path = RunLayout::of(&manifest.run_dir).round_plan(round);
    let path = &plan_path;
    let bytes = crate::fsread::read_no_follow(path, crate::fsread::Kind::Manifest).with_context(|| {
        format!(
            "cannot read the round plan `{}`; run `okstra converge plan {} --round {round}` first",
            path.display(),
            manifest.run_dir.display()
        )
    })?;
    let plan: RoundPlan = serde_json::from_slice(&bytes).with_context(|| {
        format!(
            "the round plan `{}` has no valid `reviewers`",
            path.display()
        )
    })?;
    let mut planned = Vec::new();
    for reviewer in plan.reviewers {
        let assignment = manifest.assignment(&reviewer.worker_id).with_context(|| {
            format!(
                "the round plan names `{}`, who is not on this run's roster",
                reviewer.worker_id
            )
        })?;
        if state.latest(&reviewer.dispatch_name).is_some() {
            continue;
        }
        // A plan is a file anyone can edit: its paths must stay in the run.
        let inside = |p: PathBuf, what: &str| {
            let path = crate::run::paths::reroot(p, None, &manifest.run_dir);
            crate::confine::inside(path, &manifest.run_dir, what)
                .with_context(|| format!("the round plan `{}` is not usable", plan_path.display()))
        };
        let mut next = from_assignment(assignment, Kind::Reverify(round), 1);
        next.dispatch_name = reviewer.dispatch_name;
        next.prompt_sha256 = reviewer.prompt_sha256;
        next.paths = DispatchPaths {
            prompt_path: inside(reviewer.prompt_path, "`promptPath`")?,
            result_path: inside(reviewer.result_path, "`resultPath`")?,
            worker_results_path: inside(reviewer.worker_results_path, "`workerResultsPath`")?,
            error_path: inside(reviewer.error_path, "`errorPath`")?,
            heartbeat_path: inside(reviewer.heartbeat_path, "`heartbeatPath`")?,
        };
        planned.push(next);
    }
    Ok(planned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse() {
        assert_eq!(Kind::parse("initial"), Ok(Kind::Initial));
        assert_eq!(Kind::parse("reverify-r2"), Ok(Kind::Reverify(2)));
        assert_eq!(Kind::Reverify(3).as_string(), "reverify-r3");
        for bad in ["reverify-r0", "reverify-r", "reverify", "later", ""] {
            assert!(Kind::parse(bad).is_err(), "{bad}");
        }
    }
}
