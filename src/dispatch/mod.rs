//! `okstra dispatch` and `okstra await`: the run engine that starts a run's
//! `cli-wrapper` workers, recovers their results, classifies every ending
//! and spends the one shared retry — the work a lead must not do by hand.
//!
//! - `select` chooses what a call starts (by kind, from the manifest, the
//!   team state and the round plan);
//! - `engine` runs the attempts concurrently as `okstra provider-exec`
//!   children, behind the memory and disk `gate`s, and stops them all on a
//!   signal;
//! - `attempt` writes each dispatch record before its attempt and finishes
//!   it after: `recover` reads the result out of the CLI's stream, `classify`
//!   names the ending;
//! - `wait` is `okstra await`; `summary` prints what both end with; `view`
//!   is the live progress on stderr.

mod attempt;
mod classify;
mod engine;
mod gate;
mod recover;
mod select;
mod summary;
mod view;
mod wait;

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::cli::{DispatchArgs, EngineArgs};
use crate::diag;
use crate::ending::Ending;
use crate::exit::{self, ExitStatus};
use crate::run::manifest::RunManifest;
use crate::run::team_state;
use crate::workspace;

pub use wait::{await_command, latest_attempts};

pub use select::{Kind, Planned};
pub use summary::{Row, print_summary};

/// Set in the environment of a detached dispatcher.
const DETACHED_ENV: &str = "OKSTRA_DISPATCH_DETACHED";
/// How long `--detach` waits for the detached dispatcher to record its
/// dispatches before it returns.
const DETACH_READY: Duration = Duration::from_secs(10);

/// How the engine runs a batch: `--max-parallel`, the gates, the retry
/// cooldown, the idle timeout, the budget, and the prices usage is priced at.
pub struct Options {
    pub max_parallel: usize,
    pub gates: gate::Gates,
    pub retry_cooldown: Duration,
    pub idle_timeout: Option<u64>,
    pub budget: crate::usage::Budget,
    pub prices: crate::usage::Prices,
    /// `--allow-unisolated`: run in place when no copy can be made.
    pub allow_unisolated: bool,
    /// `--pass-env`: extra variables every provider CLI may see.
    pub pass_env: Vec<String>,
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
            allow_unisolated: args.allow_unisolated,
            pass_env,
        })
    }
}

/// How a batch ended.
pub struct Batch {
    /// The latest attempt of each dispatch, in the order they were planned.
    pub rows: Vec<Row>,
    /// The signal that stopped the batch, if one did.
    pub interrupted: Option<nix::sys::signal::Signal>,
}

impl Batch {
    pub fn all_completed(&self) -> bool {
        self.rows
            .iter()
            .all(|r| r.ending == Some(Ending::Completed))
    }
}

/// `okstra dispatch`.
pub fn dispatch_command(args: &DispatchArgs) -> Result<ExitStatus> {
    let manifest = RunManifest::load(&args.run_dir)?;
    let kind = Kind::parse(&args.kind).map_err(anyhow::Error::msg)?;
    let workers = args.workers.as_deref().map(split_workers).transpose()?;
    let options = Options::from_args(&args.engine)?;
    let state = team_state::read(&manifest.team_state_path)?;
    if let Some(fix) = &args.fix {
        return fix_pass(
            &manifest,
            &state,
            workers.as_deref(),
            fix,
            options,
            args.json,
        );
    }
    let selection = select::select(&manifest, &state, kind, workers.as_deref())?;

    for native in &selection.native {
        diag::note(format_args!(
            "`{}` runs in the host's own session (`native-session`): the host dispatches it, then `okstra await` waits for its Result Path",
            native.dispatch_name
        ));
    }
    for (name, why) in &selection.skipped {
        diag::warning(format_args!("not dispatching `{name}`: {why}"));
    }
    if args.dry_run {
        return dry_run(&manifest, &selection.planned, args);
    }
    record_native(&manifest, &selection.native)?;
    if selection.planned.is_empty() {
        diag::progress(format_args!(
            "nothing to dispatch of kind `{}` in `{}`",
            kind.as_string(),
            args.run_dir.display()
        ));
        print_summary(&[], args.json)?;
        return Ok(ExitStatus::Success);
    }
    if args.detach {
        return detach(&manifest, &selection.planned, args);
    }
    if std::env::var_os(DETACHED_ENV).is_some() {
        // A detached dispatcher outlives the terminal that started it.
        ignore_hangup();
    }
    let batch = run_planned(&manifest, selection.planned, options)?;
    finish(&batch, args.json)
}

/// The Executor's one fix pass: its own prompt followed by the defects the
/// lead listed, as its next attempt (`retry`, which spends no failure retry).
fn fix_pass(
    manifest: &RunManifest,
    state: &team_state::TeamState,
    workers: Option<&[String]>,
    fix: &std::path::Path,
    options: Options,
    json: bool,
) -> Result<ExitStatus> {
    let executor = executor_of(manifest)?;
    if workers != Some(std::slice::from_ref(&executor.worker_id)) {
        bail!(
            "`--fix` dispatches the Executor only: pass `--workers {}`",
            executor.worker_id
        );
    }
    let planned = plan_fix_pass(manifest, state, fix)?;
    if planned.runner == crate::catalog::Runner::NativeSession {
        let path = planned.paths.prompt_path.clone();
        record_native(manifest, &[planned])?;
        diag::note(format_args!(
            "the Executor runs in the host's own session: give it `{}` and await it",
            path.display()
        ));
        return Ok(ExitStatus::Success);
    }
    let batch = run_planned(manifest, vec![planned], options)?;
    finish(&batch, json)
}

fn executor_of(manifest: &RunManifest) -> Result<&crate::run::roster::Assignment> {
    manifest
        .assignments
        .iter()
        .find(|a| a.role == crate::catalog::Role::Executor)
        .context("`--fix` is for implementation runs: this run has no Executor")
}

/// Plan the Executor's one fix pass: refuse before the Executor completed
/// and a second time; write `prompts/<executor>.fix.md` (its prompt, then
/// the defects in `fix`) and plan it as the Executor's next attempt.
pub fn plan_fix_pass(
    manifest: &RunManifest,
    state: &team_state::TeamState,
    fix: &std::path::Path,
) -> Result<Planned> {
    let executor = executor_of(manifest)?;
    if state.latest(&executor.dispatch_name).and_then(|r| r.ending) != Some(Ending::Completed) {
        bail!(
            "the Executor `{}` has not completed, so there is nothing to fix yet",
            executor.dispatch_name
        );
    }
    if state.dispatches.iter().any(|r| {
        r.dispatch_name == executor.dispatch_name
            && r.prompt_path.to_string_lossy().ends_with(".fix.md")
    }) {
        bail!("the Executor already had its one fix pass in this run");
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
    let path = executor
        .paths
        .prompt_path
        .with_file_name(format!("{}.fix.md", executor.dispatch_name));
    crate::durable::write_atomic(&path, prompt.as_bytes())
        .with_context(|| format!("cannot write `{}`", path.display()))?;
    repair_of(manifest, state, &executor.worker_id, &path)
}

/// Print a finished batch's summary; its exit status: 128+N when a signal
/// stopped it, 0 when every attempt completed, else 1.
fn finish(batch: &Batch, json: bool) -> Result<ExitStatus> {
    print_summary(&batch.rows, json)?;
    if let Some(signal) = batch.interrupted {
        return Ok(ExitStatus::Code(exit::from_signal(signal as i32)));
    }
    Ok(if batch.all_completed() {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

/// Select and run the `cli-wrapper` dispatches of `kind` (native ones are
/// recorded for the host), to the end of the batch.
pub fn run_batch(
    manifest: &RunManifest,
    kind: Kind,
    workers: Option<&[String]>,
    options: Options,
) -> Result<Batch> {
    let state = team_state::read(&manifest.team_state_path)?;
    let selection = select::select(manifest, &state, kind, workers)?;
    record_native(manifest, &selection.native)?;
    run_planned(manifest, selection.planned, options)
}

/// Run `planned` attempts to the end of the batch.
pub fn run_planned(
    manifest: &RunManifest,
    planned: Vec<Planned>,
    options: Options,
) -> Result<Batch> {
    if planned.is_empty() {
        return Ok(Batch {
            rows: Vec::new(),
            interrupted: None,
        });
    }
    let run = workspace::RunIdentity {
        project_root: manifest.project_root.clone(),
        task_key: manifest.task_key.clone(),
        run_id: manifest.run_id.clone(),
        run_dir: std::fs::canonicalize(&manifest.run_dir)
            .unwrap_or_else(|_| manifest.run_dir.clone()),
        created_at: crate::run::manifest::Record::load(&manifest.run_dir)?
            .created_at
            .unwrap_or_default(),
    };
    let engine = engine::Engine {
        snapshots: std::sync::Arc::new(workspace::Snapshots::new(run.clone())),
        run,
        allow_unisolated: options.allow_unisolated,
        pass_env: options.pass_env,
        ended_early: Vec::new(),
        project_root: manifest.project_root.clone(),
        team_state: manifest.team_state_path.clone(),
        max_parallel: options.max_parallel,
        gates: options.gates,
        retry_cooldown: options.retry_cooldown,
        idle_timeout: options.idle_timeout,
        view: view::View::new(false),
        prices: options.prices,
        budget: options.budget,
        budget_stopped: Vec::new(),
    };
    let order: Vec<String> = planned.iter().map(|p| p.dispatch_name.clone()).collect();
    let (records, interrupted) = engine.run(planned)?;
    let mut rows: Vec<Row> = wait::latest_attempts(&records)
        .iter()
        .map(Row::from_record)
        .collect();
    // In the order they were planned, not the order they ended.
    rows.sort_by_key(|row| order.iter().position(|name| *name == row.dispatch_name));
    Ok(Batch { rows, interrupted })
}

/// The next attempt of `worker_id`'s own dispatch, with `prompt` instead of
/// its rendered prompt (the report writer's repair: the same assignment,
/// its prompt with the validator's messages appended).
pub fn repair_of(
    manifest: &RunManifest,
    state: &team_state::TeamState,
    worker_id: &str,
    prompt: &std::path::Path,
) -> Result<Planned> {
    let assignment = manifest
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
        kind: Kind::Retry.as_string(),
        attempt,
        worker_id: assignment.worker_id.clone(),
        role: assignment.role,
        provider: assignment.provider,
        model: assignment.model_execution_value.clone(),
        runner: assignment.runner,
        paths,
        prompt_sha256: None,
    })
}

/// Record `native-session` dispatches, so the host never writes a dispatch
/// record by hand and `await` finds them the same way as wrapper ones.
fn record_native(manifest: &RunManifest, native: &[Planned]) -> Result<()> {
    if native.is_empty() {
        return Ok(());
    }
    let records: Vec<_> = native
        .iter()
        .map(|planned| {
            let mut record =
                attempt::record(planned, attempt::prompt_sha256(&planned.paths.prompt_path));
            record.started_at = Some(crate::clock::rfc3339_now());
            record.dispatcher_pid = None;
            record.log_path = None;
            record.sidecar_path = None;
            record
        })
        .collect();
    let changes: Vec<_> = records.iter().map(team_state::Change::Put).collect();
    team_state::update(&manifest.team_state_path, &changes)?;
    Ok(())
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
        reason,
        has_result: answered,
        transcript: &transcript,
        wrapper_stderr,
        ..classify::Evidence::default()
    };
    classify::classify(&evidence).0
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
        bail!("invalid value `{text}` for `--workers`: expected worker ids, e.g. `claude,codex`");
    }
    Ok(names)
}

/// One line of `--dry-run`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Would {
    dispatch_name: String,
    kind: String,
    attempt: u32,
    provider: &'static str,
    model: String,
    /// The provider CLI's argv, program first; never the prompt's text.
    /// Empty when the wrapper would refuse to start.
    argv: Vec<String>,
    /// Why the wrapper would refuse (its preflight), if it would.
    refusal: Option<String>,
    prompt_path: String,
    result_path: String,
}

/// Print what would start, and write nothing: each attempt goes through the
/// wrapper's own preflight, so the argv shown is the one that would run.
fn dry_run(manifest: &RunManifest, planned: &[Planned], args: &DispatchArgs) -> Result<ExitStatus> {
    let would: Vec<Would> = planned
        .iter()
        .map(|p| {
            let wrapper =
                engine::wrapper_args(p, &manifest.project_root, None, args.engine.idle_timeout);
            let (cli_argv, refusal) = match crate::provider_exec::preflight(None, &wrapper) {
                Ok(ready) => (
                    std::iter::once(ready.plan.program.to_owned())
                        .chain(
                            ready
                                .plan
                                .args
                                .iter()
                                .map(|a| a.to_string_lossy().into_owned()),
                        )
                        .collect(),
                    None,
                ),
                Err(refused) => (Vec::new(), Some(refused.to_string())),
            };
            Would {
                dispatch_name: p.dispatch_name.clone(),
                kind: p.kind.clone(),
                attempt: p.attempt,
                provider: p.provider.as_str(),
                model: p.model.clone(),
                argv: cli_argv,
                refusal,
                prompt_path: p.paths.prompt_path.display().to_string(),
                result_path: p.paths.result_path.display().to_string(),
            }
        })
        .collect();
    let mut out = std::io::stdout().lock();
    if args.json {
        use std::io::Write;
        writeln!(
            out,
            "{}",
            serde_json::to_string(&serde_json::json!({ "wouldStart": would }))?
        )?;
    } else {
        use std::io::Write;
        for w in &would {
            match &w.refusal {
                None => writeln!(
                    out,
                    "would start {} ({}, attempt {}): {}",
                    w.dispatch_name,
                    w.kind,
                    w.attempt,
                    w.argv.join(" ")
                )?,
                Some(why) => writeln!(
                    out,
                    "would fail {} ({}, attempt {}): {}",
                    w.dispatch_name,
                    w.kind,
                    w.attempt,
                    crate::fsread::escape(why)
                )?,
            }
        }
    }
    Ok(ExitStatus::Success)
}

/// Start a detached dispatcher with the same arguments and return once it
/// has recorded its dispatches (so an `okstra await` right after sees them).
fn detach(manifest: &RunManifest, planned: &[Planned], args: &DispatchArgs) -> Result<ExitStatus> {
    let program = std::env::current_exe().context("cannot find the okstra binary to detach")?;
    let log_path = attempt::detach_log(&manifest.run_dir);
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("cannot open `{}`", log_path.display()))?;
    let forwarded: Vec<std::ffi::OsString> = std::env::args_os()
        .skip(1)
        .filter(|arg| arg != "--detach")
        .collect();
    // Its own group (`child::Builder`): a Ctrl-C at this terminal must not
    // reach the dispatcher that outlives it.
    let mut builder = crate::child::Builder::new(program);
    builder
        .args(&forwarded)
        .env(DETACHED_ENV, "1")
        .stdout(log.try_clone()?)
        .stderr(log);
    let mut child = builder
        .into_std()
        .spawn()
        .context("cannot start the detached dispatcher")?;
    let pid = i32::try_from(child.id()).ok();
    let deadline = Instant::now() + DETACH_READY;
    loop {
        let state = team_state::read(&manifest.team_state_path)?;
        let recorded = planned.iter().all(|p| {
            state.dispatches.iter().any(|r| {
                r.dispatch_name == p.dispatch_name
                    && r.attempt == p.attempt
                    && r.dispatcher_pid == pid
            })
        });
        if recorded || Instant::now() >= deadline || child.try_wait().ok().flatten().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut out = std::io::stdout().lock();
    {
        use std::io::Write;
        if args.json {
            writeln!(
                out,
                "{}",
                serde_json::json!({ "detached": true, "pid": pid, "log": log_path })
            )?;
        } else {
            writeln!(out, "{}", log_path.display())?;
        }
    }
    diag::progress(format_args!(
        "dispatching {} worker(s) in the background (pid {}); wait with `okstra await {}`",
        planned.len(),
        pid.map_or_else(|| "?".into(), |p| p.to_string()),
        manifest.run_dir.display()
    ));
    Ok(ExitStatus::Success)
}

fn ignore_hangup() {
    use nix::sys::signal::{SigHandler, Signal, signal};
    // SAFETY-free: `signal` with `SigIgn` installs no Rust handler.
    #[expect(
        unsafe_code,
        reason = "ignoring SIGHUP has no handler code to be unsafe in"
    )]
    // SAFETY: SIG_IGN runs no code in signal context.
    let _ = unsafe { signal(Signal::SIGHUP, SigHandler::SigIgn) };
}
