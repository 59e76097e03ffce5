//! The run engine that starts a run's `cli-wrapper` workers, recovers their
//! results, classifies every ending and spends the one shared retry — the
//! work a lead must not do by hand — and `okstra dispatch` / `okstra await`.
//!
//! - `select` lists a kind's candidates and `decide`s, per candidate, to
//!   start, adopt, settle or skip (never paying twice for a completed
//!   attempt);
//! - `engine` runs the attempts concurrently as provider-exec wrapper
//!   children, behind the memory and disk `gate`s, waits for adopted ones,
//!   waits out a CLI's retry-after (`limit`), and stops them all on a
//!   signal;
//! - `attempt` writes each dispatch record before its attempt and finishes
//!   it after: `recover` reads the result out of the CLI's stream, `classify`
//!   names the ending;
//! - `command` is `okstra dispatch`, `wait` is `okstra await`; `summary`
//!   prints what both end with; `view` is the live progress on stderr.
//! - `cancel` is `okstra cancel` and `reap` is `okstra reap`: both stop
//!   wrappers their driver no longer drives and record the attempts
//!   `cancelled`.

mod activity;
mod attempt;
mod cancel;
mod change;
mod classify;
mod command;
mod engine;
pub mod fail_fast;
mod gate;
mod limit;
pub mod native;
pub mod place;
mod reap;
mod recover;
pub mod select;
mod slots;
mod submit;
mod summary;
mod view;
mod wait;

use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::catalog::DispatchKind;
use crate::cli::EngineArgs;
use crate::run::Run;
use crate::run::team_state::TeamState;
use crate::vocab::Ending;

pub use crate::run::live::liveness;
pub use cancel::cancel_command;
pub use command::dispatch_command;
pub use engine::{budget_spent, record_budget_stop};
pub use reap::reap_command;
pub use select::{Decision, Kind, Planned, Skip};
pub use submit::{hook_command, submit_command};
pub use summary::{Row, summary};
pub use view::Header;
pub use wait::{await_command, settle_all};

/// How the engine runs a batch: `--max-parallel`, the gates, the retry
/// cooldown, the idle timeout, the budget, the prices usage is priced at,
/// and whether this is an explicit resume.
pub struct Options {
    pub max_parallel: usize,
    pub gates: gate::Gates,
    pub retry_cooldown: Duration,
    pub idle_timeout: Option<u64>,
    pub budget: crate::usage::Budget,
    pub prices: crate::usage::Prices,
    /// An explicit resume (`okstra run <run-dir>`): a worker whose last
    /// attempt ended for a reason the user can fix gets one fresh attempt.
    pub resume: bool,
    /// `--allow-unisolated`: run in place when no copy can be made.
    pub allow_unisolated: bool,
    /// `--pass-env`: extra variables every provider CLI may see.
    pub pass_env: Vec<String>,
    /// `--provider-slots`: per-user caps on calls to each provider.
    pub provider_slots: slots::Caps,
    /// What stops attempts early (`okstra run` sets it; empty otherwise).
    pub fail_fast: fail_fast::FailFast,
    /// The live board's header (`okstra run` sets it).
    pub header: Option<view::Header>,
}

impl Options {
    /// Check the engine flags; a bad value is one clear error.
    pub fn from_args(args: &EngineArgs) -> Result<Options> {
        if args.max_parallel == Some(0) {
            bail!("invalid value `0` for `--max-parallel`: expected a whole number of at least 1");
        }
        let min_free_memory = gate::parse_size(&args.min_free_memory)
            .map_err(|e| anyhow::anyhow!("invalid value for `--min-free-memory`: {e}"))?;
        let min_free_disk = gate::parse_size(&args.min_free_disk)
            .map_err(|e| anyhow::anyhow!("invalid value for `--min-free-disk`: {e}"))?;
        if let Some(cost) = args.max_cost
            && !(cost.is_finite() && cost > 0.0)
        {
            bail!(
                "invalid value `{cost}` for `--max-cost`: expected a positive number of US dollars"
            );
        }
        let mut pass_env = Vec::new();
        for entry in args.pass_env.iter().map(|entry| entry.trim()) {
            if entry.is_empty() {
                continue;
            }
            crate::provider_exec::check_pass_env(entry)
                .map_err(|why| anyhow::anyhow!("invalid value for `--pass-env`: {why}"))?;
            pass_env.push(entry.to_owned());
        }
        let provider_slots = match &args.provider_slots {
            Some(spec) => slots::Caps::parse(spec).map_err(anyhow::Error::msg)?,
            None => slots::Caps::default(),
        };
        let env = |name: &str| std::env::var(name).ok();
        Ok(Options {
            max_parallel: args.max_parallel.unwrap_or(usize::MAX),
            gates: gate::Gates {
                min_free_memory,
                min_free_disk,
            },
            retry_cooldown: args.retry_cooldown,
            idle_timeout: args.idle_timeout,
            budget: crate::usage::Budget {
                max_cost_usd: args.max_cost,
                max_tokens: args.max_tokens,
            },
            prices: crate::usage::Prices::load(&env)?,
            resume: false,
            allow_unisolated: args.allow_unisolated,
            pass_env,
            provider_slots,
            fail_fast: fail_fast::FailFast::default(),
            header: None,
        })
    }
}

/// How a batch ended.
pub struct Batch {
    /// The latest attempt of each dispatch, in the order they were planned.
    pub rows: Vec<Row>,
    /// The signal that stopped the batch, if one did.
    pub interrupted: Option<nix::sys::signal::Signal>,
    /// Why the batch was stopped early (its quorum lost), if it was.
    pub stopped: Option<String>,
    /// Providers whose attempts ended `auth`, this batch's and earlier ones.
    pub auth_failed: std::collections::BTreeMap<crate::catalog::Provider, String>,
}

impl Batch {
    pub fn all_completed(&self) -> bool {
        self.rows
            .iter()
            .all(|r| r.ending == Some(Ending::Completed))
    }
}

/// Candidates after [`select::decide`]: what starts, what is adopted, what
/// the host must run, and what is skipped and why.
#[derive(Debug, Default)]
pub struct Prepared {
    pub start: Vec<Planned>,
    pub adopt: Vec<engine::Adopted>,
    /// `native-session` dispatches the host's session must run.
    pub host: Vec<Planned>,
    pub skipped: Vec<(String, Skip)>,
}

impl Prepared {
    /// Whether the engine has anything to do.
    pub fn is_idle(&self) -> bool {
        self.start.is_empty() && self.adopt.is_empty()
    }
}

/// Decide every candidate against its latest attempt. An attempt nobody
/// finished and nothing of which runs is settled first (its record
/// finished from its files), then decided again.
pub fn prepare(
    run: &Run,
    state: &mut TeamState,
    candidates: Vec<Planned>,
    options: &Options,
) -> Result<Prepared> {
    let mut prepared = Prepared::default();
    for mut planned in candidates {
        let prompt_sha256 = planned.prompt_hash();
        let mut decision;
        loop {
            let latest = state.latest(&planned.dispatch_name);
            let facts = select::Facts {
                prompt_sha256: prompt_sha256.clone(),
                live: latest.map_or(select::Live::Nothing, liveness),
                resume: options.resume,
                retry_spent: false,
            };
            decision = select::decide_in(&planned, state, &facts);
            let Decision::Settle(record) = &decision else {
                break;
            };
            settle_all(run, vec![(**record).clone()], &options.prices)?;
            *state = run.team_state()?;
        }
        match decision {
            Decision::Start { attempt } => {
                planned.attempt = attempt;
                planned.prompt_sha256 = prompt_sha256;
                prepared.start.push(planned);
            }
            Decision::Adopt(record) => match crate::run::live::wrapper_of(&record) {
                Some((pid, started_ts)) => prepared.adopt.push(engine::Adopted {
                    planned,
                    record: *record,
                    pid,
                    started_ts,
                }),
                None => prepared
                    .skipped
                    .push((planned.dispatch_name, Skip::Running)),
            },
            Decision::Skip(Skip::Host) => prepared.host.push(planned),
            Decision::Skip(why) => prepared.skipped.push((planned.dispatch_name, why)),
            Decision::Settle(_) => unreachable!("settled in the loop above"),
        }
    }
    Ok(prepared)
}

/// Run what [`prepare`] chose to the end of the batch.
pub fn run_prepared(run: &Run, prepared: Prepared, options: Options) -> Result<Batch> {
    if prepared.is_idle() {
        return Ok(Batch {
            rows: Vec::new(),
            interrupted: None,
            stopped: None,
            auth_failed: options.fail_fast.auth_failed,
        });
    }
    snapshot_before_reviewers(run, &prepared.start);
    let identity = crate::workspace::RunIdentity::of(run);
    let engine = engine::Engine {
        snapshots: std::sync::Arc::new(crate::workspace::Snapshots::new(identity.clone())),
        identity,
        allow_unisolated: options.allow_unisolated,
        pass_env: options.pass_env,
        waits: std::collections::HashMap::new(),
        slots: slots::Slots::new(options.provider_slots),
        ended_early: Vec::new(),
        run: run.clone(),
        max_parallel: options.max_parallel,
        gates: options.gates,
        retry_cooldown: options.retry_cooldown,
        idle_timeout: options.idle_timeout,
        view: view::View::new(false, options.header),
        prices: options.prices,
        budget: options.budget,
        budget_stopped: Vec::new(),
        fail_fast: options.fail_fast,
        stopped: None,
    };
    let order: Vec<String> = prepared
        .adopt
        .iter()
        .map(|a| a.planned.dispatch_name.clone())
        .chain(prepared.start.iter().map(|p| p.dispatch_name.clone()))
        .collect();
    let ended = engine.run(prepared.start, prepared.adopt)?;
    let finished = TeamState {
        dispatches: ended.records,
        ..TeamState::default()
    };
    let mut rows: Vec<Row> = finished
        .latest_attempts()
        .into_iter()
        .map(Row::from_record)
        .collect();
    // In the order they were planned, not the order they ended.
    rows.sort_by_key(|row| order.iter().position(|name| *name == row.dispatch_name));
    Ok(Batch {
        rows,
        interrupted: ended.interrupted,
        stopped: ended.stopped,
        auth_failed: ended.auth_failed,
    })
}

/// Take the run's snapshot of the project — the one its anchors are checked
/// against, once per run — when reviewers are about to start their first
/// work: before wrappers start, or before the host is handed its native
/// attempts. A failure is a warning: the first check takes it instead.
pub fn snapshot_before_reviewers(run: &Run, starting: &[Planned]) {
    let reviewers_start = starting
        .iter()
        .any(|p| p.kind == DispatchKind::Initial && p.role.reviews());
    if reviewers_start
        && let Err(err) =
            crate::anchors::snapshot::ensure(run, crate::anchors::snapshot::Taken::FirstDispatch)
    {
        crate::diag::warning(format_args!(
            "cannot take the run's snapshot of the project; its anchors will be checked \
             against one taken later: {err:#}"
        ));
    }
}

/// Run `planned` attempts (their attempt numbers already set) to the end
/// of the batch.
pub fn run_planned(run: &Run, planned: Vec<Planned>, options: Options) -> Result<Batch> {
    run_prepared(
        run,
        Prepared {
            start: planned,
            ..Prepared::default()
        },
        options,
    )
}

/// The Executor of an implementation run.
fn executor_of(run: &Run) -> Result<&crate::run::roster::Assignment> {
    run.in_role(crate::catalog::Role::Executor)
        .next()
        .context("`--fix` is for implementation runs: this run has no Executor")
}

/// The prompt of the Executor's one fix pass, beside its own prompt.
pub fn fix_prompt_path(run: &Run) -> Result<std::path::PathBuf> {
    let executor = executor_of(run)?;
    Ok(executor
        .paths
        .prompt_path
        .with_file_name(format!("{}.fix.md", executor.dispatch_name)))
}

/// Plan the Executor's one fix pass (`okstra dispatch --fix`): refuse
/// before the Executor completed and once a fix pass completed; write
/// `prompts/<executor>.fix.md` (its prompt, then the defects in `fix`) and
/// plan it as the Executor's next attempt.
pub fn plan_fix_pass(run: &Run, state: &TeamState, fix: &std::path::Path) -> Result<Planned> {
    let executor = executor_of(run)?;
    let path = fix_prompt_path(run)?;
    if state
        .latest_on(&executor.dispatch_name, &path)
        .is_some_and(|r| r.ending == Some(Ending::Completed))
    {
        bail!("the Executor already had its one fix pass in this run");
    }
    write_fix_prompt(run, state, fix)?;
    repair_of(run, state, &executor.worker_id, &path)
}

/// Write the Executor's fix prompt: its own prompt, then the defects in
/// `fix`. Refused before the Executor completed its own work.
pub fn write_fix_prompt(
    run: &Run,
    state: &TeamState,
    fix: &std::path::Path,
) -> Result<std::path::PathBuf> {
    let executor = executor_of(run)?;
    let path = fix_prompt_path(run)?;
    if state
        .latest_on(&executor.dispatch_name, &executor.paths.prompt_path)
        .and_then(|r| r.ending)
        != Some(Ending::Completed)
    {
        bail!(
            "the Executor `{}` has not completed, so there is nothing to fix yet",
            executor.dispatch_name
        );
    }
    let defects = crate::fsread::read(fix, crate::fsread::Kind::Brief)
        .with_context(|| format!("cannot read the fix request `{}`", fix.display()))?;
    let original = crate::fsread::read(&executor.paths.prompt_path, crate::fsread::Kind::Result)
        .with_context(|| format!("cannot read `{}`", executor.paths.prompt_path.display()))?;
    let mut prompt = String::from_utf8_lossy(&original).into_owned();
    prompt.push_str(
        "\n\n## Fix pass\n\nThe verifiers found the defects below. Fix exactly these and \
         nothing else, then give your whole Result again with a `Fix pass` section appended \
         that says, per defect, what you changed.\n\n",
    );
    prompt.push_str(&String::from_utf8_lossy(&defects));
    write_if_changed(&path, prompt.as_bytes())?;
    Ok(path)
}

/// Write `bytes` to `path` atomically unless it already holds exactly them
/// (a prompt rewritten with the same bytes must not look new).
pub fn write_if_changed(path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    crate::durable::write_if_changed(path, bytes)
        .with_context(|| format!("cannot write `{}`", path.display()))?;
    Ok(())
}

/// The next attempt of `worker_id`'s own dispatch, with `prompt` instead of
/// its rendered prompt (the report writer's repair, the Executor's fix
/// pass: the same assignment, its prompt with more appended).
pub fn repair_of(
    run: &Run,
    state: &TeamState,
    worker_id: &str,
    prompt: &std::path::Path,
) -> Result<Planned> {
    let assignment = run
        .assignment(worker_id)
        .with_context(|| format!("`{worker_id}` is not on this run's roster"))?;
    let attempt = state
        .latest(&assignment.dispatch_name)
        .map_or(1, |r| r.attempt + 1);
    let mut paths = assignment.paths.clone();
    paths.prompt_path = prompt.to_path_buf();
    Ok(Planned {
        dispatch_name: assignment.dispatch_name.clone(),
        assignment_name: assignment.dispatch_name.clone(),
        kind: DispatchKind::Retry,
        attempt,
        worker_id: assignment.worker_id.clone(),
        role: assignment.role,
        provider: assignment.provider,
        model: assignment.model_execution_value.clone(),
        runner: assignment.runner,
        paths,
        prompt_sha256: None,
        inputs_sha256: None,
    })
}

/// The ending of a single headless run that was asked for a plain answer
/// (no result block), as `okstra doctor --probe` makes: it completed when
/// the CLI exited 0 having said something and reported no failure; any
/// other end is classified exactly as a dispatch attempt's.
pub fn classify_answer(
    provider: crate::catalog::Provider,
    exit_code: Option<i64>,
    reason: Option<&str>,
    log: &std::path::Path,
    wrapper_stderr: &str,
) -> Ending {
    let transcript = recover::read_log(provider, log);
    let answered = exit_code == Some(0) && transcript.has_text() && !transcript.reported_failure;
    let evidence = classify::Evidence {
        exit_code,
        // A wrapper that wrote its sidecar always wrote a reason.
        sidecar: reason.is_some(),
        reason: reason.and_then(|word| word.parse().ok()),
        has_result: answered,
        transcript: &transcript,
        wrapper_stderr,
        ..classify::Evidence::default()
    };
    classify::classify(&evidence).0
}

/// Refuse a `--workers` name that is not one of `run`'s workers.
pub fn check_workers(run: &Run, names: &[String]) -> Result<()> {
    if let Some(name) = names.iter().find(|name| run.assignment(name).is_none()) {
        let known: Vec<&str> = run
            .assignments
            .iter()
            .map(|a| a.worker_id.as_str())
            .collect();
        bail!(
            "invalid value `{name}` for `--workers`: this run's workers are `{}`",
            known.join(",")
        );
    }
    Ok(())
}

/// `--workers a,b`: non-empty, comma-separated.
pub fn split_workers(text: &str) -> Result<Vec<String>> {
    let names: Vec<String> = text
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
        .collect();
    if names.is_empty() {
        bail!(
            "invalid value `{text}` for `--workers`: expected worker ids, e.g. `{}`",
            crate::catalog::Provider::default_analysers()
                .iter()
                .map(|provider| provider.as_str())
                .collect::<Vec<_>>()
                .join(",")
        );
    }
    Ok(names)
}
