//! Which dispatches a call starts, in two steps.
//!
//! [`select`] lists the candidates of one kind from the roster and (for
//! convergence rounds) the round plan: `initial` is the current phase's
//! workers (the analysers; or the Executor, then — once it completed — the
//! verifiers of an implementation run; the report writer only when named
//! with `--workers`, so a repeated call never starts it before convergence);
//! `critic` the critic; `reverify-r<N>` the reviewers of
//! `state/round-plan-r<N>.json`; `fix-check` the verifiers of
//! `state/fix-check.json`; `retry` a named worker's last attempt.
//!
//! [`decide`] then says, for each candidate and its latest attempt, whether
//! to start an attempt, adopt a live one, settle a dead one or skip it. It
//! is pure and keyed on what was paid for: an attempt that completed with
//! the same prompt bytes, provider, model (and inputs) is never run again.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::catalog::{DispatchKind, Provider, REPORT_WRITER, Role, Runner, TaskType};
use crate::run::Run;
use crate::run::roster::{Assignment, DispatchPaths};
use crate::run::team_state::{DispatchRecord, TeamState};
use crate::vocab::Ending;

/// `--kind`: the catalog's dispatch kinds.
pub use crate::catalog::DispatchKind as Kind;

/// One dispatch to start: who, with what, and where its files go.
#[derive(Debug, Clone)]
pub struct Planned {
    pub dispatch_name: String,
    /// The `workers.<name>` key of the team state: the assignment's own
    /// dispatch name (a reverify dispatch spends its worker's retry).
    pub assignment_name: String,
    pub kind: DispatchKind,
    pub attempt: u32,
    pub worker_id: String,
    pub role: Role,
    pub provider: Provider,
    pub model: String,
    pub runner: Runner,
    pub paths: DispatchPaths,
    /// The prompt's SHA-256 when the planner knows it (a round plan's).
    pub prompt_sha256: Option<String>,
    /// The SHA-256 of the tracked files the prompt points at (see
    /// `DispatchRecord::inputs_sha256`).
    pub inputs_sha256: Option<String>,
}

impl Planned {
    /// The SHA-256 of the prompt its next attempt is given: the planner's
    /// when it knows it, else the prompt file's as it is now (`None` when
    /// the file cannot be read).
    pub fn prompt_hash(&self) -> Option<String> {
        self.prompt_sha256.clone().or_else(|| {
            crate::fsread::read(&self.paths.prompt_path, crate::fsread::Kind::Result)
                .ok()
                .map(|bytes| crate::digest::sha256_hex(&bytes))
        })
    }
}

/// What to do about one candidate.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Start attempt `attempt`.
    Start { attempt: u32 },
    /// Its latest attempt's wrapper still runs, started by a driver that is
    /// gone: wait for it and finish its record (it is paid for).
    Adopt(Box<DispatchRecord>),
    /// Its latest attempt never recorded an ending and nothing of it runs:
    /// finish the record from its files, then decide again.
    Settle(Box<DispatchRecord>),
    /// Nothing to do, and why.
    Skip(Skip),
}

/// Why a candidate is not started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// It completed with the same prompt bytes, provider, model and inputs.
    Completed,
    /// It ended this way, and nothing allows another attempt.
    Failed(Ending),
    /// A driver that is alive runs it.
    Running,
    /// It runs in the host's own session, which okstra cannot start.
    Host,
}

/// What [`decide`] knows besides the records.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// The SHA-256 of the prompt bytes the next attempt would be given.
    pub prompt_sha256: Option<String>,
    /// Whether the latest attempt's driver, or its wrapper, is alive.
    pub live: Live,
    /// An explicit resume: one fresh attempt for a worker whose last
    /// attempt ended for a reason the user can fix (logged out, offline,
    /// rate-limited, out of quota, CLI missing).
    pub resume: bool,
    /// The worker's one shared retry is spent (set by [`decide_in`] from
    /// the state): a failed `native-session` attempt is then final.
    pub retry_spent: bool,
}

/// What of an unfinished attempt still runs (`run::live`).
pub use crate::run::live::Live;

/// Endings a user can fix and then resume: each worker whose last attempt
/// ended so gets one fresh attempt per explicit resume (a spent quota too:
/// the user resumes once it has reset, or after raising it).
pub fn fixable_by_user(ending: Ending) -> bool {
    matches!(
        ending,
        Ending::Auth | Ending::Network | Ending::RateLimit | Ending::Quota | Ending::CliMissing
    )
}

/// Decide what to do about `planned` from its dispatch's attempts in
/// `state`: an unfinished latest attempt is adopted, settled or left to its
/// driver; otherwise the latest attempt on the same prompt file decides.
pub fn decide_in(planned: &Planned, state: &TeamState, facts: &Facts) -> Decision {
    let latest = state.latest(&planned.dispatch_name);
    let next = latest.map_or(1, |r| r.attempt + 1);
    let facts = &Facts {
        retry_spent: state.retry_spent(&planned.assignment_name),
        ..facts.clone()
    };
    match latest {
        Some(last) if last.ending.is_none() => decide(planned, Some(last), next, facts),
        _ => decide(
            planned,
            state.latest_on(&planned.dispatch_name, &planned.paths.prompt_path),
            next,
            facts,
        ),
    }
}

/// Decide what to do about `planned`, whose latest attempt (on the same
/// prompt file) is `latest`; a new attempt is numbered `next`.
pub fn decide(
    planned: &Planned,
    latest: Option<&DispatchRecord>,
    next: u32,
    facts: &Facts,
) -> Decision {
    let start = Decision::Start { attempt: next };
    let Some(last) = latest else {
        if planned.runner == Runner::NativeSession {
            return Decision::Skip(Skip::Host);
        }
        return start;
    };
    let next = start;
    let Some(ending) = last.ending else {
        if last.runner == Some(Runner::NativeSession) {
            return Decision::Skip(Skip::Host);
        }
        return match facts.live {
            Live::Driver => Decision::Skip(Skip::Running),
            Live::Wrapper => Decision::Adopt(Box::new(last.clone())),
            Live::Nothing => Decision::Settle(Box::new(last.clone())),
        };
    };
    let unchanged = last.provider.is_none_or(|p| p == planned.provider)
        && last.model.as_deref().is_none_or(|m| m == planned.model)
        && match (&last.prompt_sha256, &facts.prompt_sha256) {
            (Some(then), Some(now)) => then == now,
            _ => true,
        }
        && match (&last.inputs_sha256, &planned.inputs_sha256) {
            (then, Some(now)) => then.as_ref() == Some(now),
            (_, None) => true,
        };
    if planned.runner == Runner::NativeSession {
        // okstra cannot start the host's session: only the host can run
        // it again — a new question, an interrupted attempt, or a failed
        // one while the worker's one retry is left (as for a wrapper).
        return Decision::Skip(match ending {
            Ending::Completed if unchanged => Skip::Completed,
            _ if !unchanged || last.was_interrupted() => Skip::Host,
            ending if ending.is_retryable() && !facts.retry_spent => Skip::Host,
            ending => Skip::Failed(ending),
        });
    }
    match ending {
        Ending::Completed if unchanged => Decision::Skip(Skip::Completed),
        // A changed prompt, provider or model is a new question.
        _ if !unchanged => next,
        Ending::Cancelled | Ending::Signalled | Ending::Budget => next,
        ending if facts.resume && fixable_by_user(ending) => next,
        ending => Decision::Skip(Skip::Failed(ending)),
    }
}

/// The candidates of `kind` (restricted to `workers` when given), before
/// [`decide`]: `attempt` is still unset (1).
pub fn select(
    run: &Run,
    state: &TeamState,
    kind: Kind,
    workers: Option<&[String]>,
) -> Result<Vec<Planned>> {
    if let Some(names) = workers {
        super::check_workers(run, names)?;
    }
    let named = |a: &Assignment| workers.is_none_or(|names| names.contains(&a.worker_id));
    Ok(match kind {
        Kind::Initial => initial(run, state, workers)
            .into_iter()
            .filter(|a| named(a))
            .map(|a| from_assignment(a, Kind::Initial))
            .collect(),
        Kind::Critic => run
            .in_role(Role::Critic)
            .filter(|a| named(a))
            .map(|a| from_assignment(a, Kind::Critic))
            .collect(),
        Kind::Retry => bail!("`--kind retry` is chosen with `retry`, not `select`"),
        Kind::Reverify(round) => reverify(run, round)?
            .into_iter()
            .filter(|p| workers.is_none_or(|names| names.contains(&p.worker_id)))
            .collect(),
        Kind::FixCheck => fix_check(run)?
            .into_iter()
            .filter(|p| workers.is_none_or(|names| names.contains(&p.worker_id)))
            .collect(),
    })
}

/// The verifiers of the fix check (`state/fix-check.json`).
fn fix_check(run: &Run) -> Result<Vec<Planned>> {
    let plan = crate::converge::fix_check::read(run)?.with_context(|| {
        format!(
            "`{}` has no fix check: one is planned after a fix pass that changed the code",
            run.dir.display()
        )
    })?;
    let mut planned = Vec::new();
    for checker in plan.checkers {
        let assignment = run.assignment(&checker.worker_id).with_context(|| {
            format!(
                "the fix check names `{}`, who is not on this run's roster",
                crate::fsread::escape(&checker.worker_id)
            )
        })?;
        let mut next = from_assignment(assignment, Kind::FixCheck);
        next.dispatch_name = Kind::FixCheck.dispatch_name(&assignment.dispatch_name);
        next.prompt_sha256 = Some(checker.prompt_sha256);
        next.paths = DispatchPaths {
            prompt_path: checker.prompt_path,
            result_path: checker.result_path,
            worker_results_path: checker.worker_results_path,
            error_path: checker.error_path,
            heartbeat_path: checker.heartbeat_path,
        };
        planned.push(next);
    }
    Ok(planned)
}

/// The current phase's assignments.
fn initial<'m>(run: &'m Run, state: &TeamState, workers: Option<&[String]>) -> Vec<&'m Assignment> {
    let completed = |a: &Assignment| {
        state
            .latest(&a.dispatch_name)
            .is_some_and(|r| r.ending == Some(Ending::Completed))
    };
    let mut phase: Vec<&Assignment> = if run.task_type == TaskType::Implementation {
        if run.in_role(Role::Executor).all(completed) {
            run.in_role(Role::Verifier).collect()
        } else {
            run.in_role(Role::Executor).collect()
        }
    } else {
        run.in_role(Role::Analyser).collect()
    };
    // The report writer only on request: it must follow convergence.
    if workers.is_some_and(|names| names.iter().any(|n| n == REPORT_WRITER)) {
        phase.extend(run.in_role(Role::ReportWriter));
    }
    phase
}

/// A candidate for `a`'s own dispatch.
pub fn from_assignment(a: &Assignment, kind: Kind) -> Planned {
    Planned {
        dispatch_name: a.dispatch_name.clone(),
        assignment_name: a.dispatch_name.clone(),
        kind,
        attempt: 1,
        worker_id: a.worker_id.clone(),
        role: a.role,
        provider: a.provider,
        model: a.model_execution_value.clone(),
        runner: a.runner,
        paths: a.paths.clone(),
        prompt_sha256: None,
        inputs_sha256: None,
    }
}

/// `--kind retry`: the next attempt of `assignment`'s last attempt (of any
/// of its dispatches), or why there is none. An interrupted attempt
/// (cancelled, signalled, never started for the budget) is simply run
/// again; a failed one spends the worker's one shared retry.
pub fn retry_of(assignment: &Assignment, state: &TeamState) -> Result<(Planned, bool), String> {
    let last = state
        .latest_of_worker(&assignment.worker_id)
        .ok_or("it was never dispatched")?;
    let spends = match last.ending {
        None => return Err("its last attempt has not ended".into()),
        Some(Ending::Completed) => return Err("its last attempt completed".into()),
        Some(_) if last.was_interrupted() => false,
        Some(ending) if !ending.is_retryable() && !fixable_by_user(ending) => {
            return Err(format!(
                "its last attempt ended `{ending}`, which is not retried"
            ));
        }
        Some(_) => true,
    };
    if spends && state.retry_spent(&assignment.dispatch_name) {
        return Err("its one retry is already spent".into());
    }
    let planned = Planned {
        dispatch_name: last.dispatch_name.clone(),
        assignment_name: assignment.dispatch_name.clone(),
        kind: if spends {
            Kind::Retry
        } else {
            last.dispatch_kind
        },
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
        inputs_sha256: last.inputs_sha256.clone(),
    };
    Ok((planned, spends))
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

/// The reviewers of round `round`.
fn reverify(run: &Run, round: u32) -> Result<Vec<Planned>> {
    let plan_path = run.layout().round_plan(round);
    let path = &plan_path;
    let bytes = crate::fsread::read_no_follow(path, crate::fsread::Kind::Manifest).with_context(|| {
        format!(
            "cannot read the round plan `{}`; run `okstra converge plan {} --round {round}` first",
            path.display(),
            run.dir.display()
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
        let assignment = run.assignment(&reviewer.worker_id).with_context(|| {
            format!(
                "the round plan names `{}`, who is not on this run's roster",
                crate::fsread::escape(&reviewer.worker_id)
            )
        })?;
        let expected = Kind::Reverify(round).dispatch_name(&assignment.dispatch_name);
        if reviewer.dispatch_name != expected {
            bail!(
                "the round plan `{}` gives `{}` the dispatch name `{}`; this run expects `{expected}`",
                plan_path.display(),
                reviewer.worker_id,
                crate::fsread::escape(&reviewer.dispatch_name)
            );
        }
        // A plan is a file anyone can edit: its paths must stay in the run.
        let inside = |p: PathBuf, what: &str| {
            run.confine(&p, what)
                .with_context(|| format!("the round plan `{}` is not usable", plan_path.display()))
        };
        let mut next = from_assignment(assignment, Kind::Reverify(round));
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
#[path = "select_tests.rs"]
mod tests;
