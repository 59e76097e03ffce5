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

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::cli::DispatchArgs;
use crate::ending::Ending;
use crate::exit::{self, ExitStatus};
use crate::manifest::RunManifest;
use crate::team_state;

pub use wait::{await_command, latest_attempts};

use select::{Kind, Planned};
use summary::{Row, print_summary};

/// Set in the environment of a detached dispatcher.
const DETACHED_ENV: &str = "OKSTRA_DISPATCH_DETACHED";
/// How long `--detach` waits for the detached dispatcher to record its
/// dispatches before it returns.
const DETACH_READY: Duration = Duration::from_secs(10);

/// `okstra dispatch`.
pub fn dispatch_command(args: &DispatchArgs) -> Result<ExitStatus> {
    let manifest = RunManifest::load(&args.run_dir)?;
    let kind = Kind::parse(&args.kind).map_err(anyhow::Error::msg)?;
    let workers = args.workers.as_deref().map(split_workers).transpose()?;
    if args.max_parallel == Some(0) {
        bail!("invalid value `0` for `--max-parallel`: expected a whole number of at least 1");
    }
    let min_free_memory = gate::parse_size(&args.min_free_memory)
        .map_err(|e| anyhow::anyhow!("invalid value for `--min-free-memory`: {e}"))?;
    let min_free_disk = gate::parse_size(&args.min_free_disk)
        .map_err(|e| anyhow::anyhow!("invalid value for `--min-free-disk`: {e}"))?;
    let env = |name: &str| std::env::var(name).ok();
    let prices = crate::usage::Prices::load(&env)?;
    if let Some(cost) = args.max_cost
        && !(cost.is_finite() && cost > 0.0)
    {
        bail!("invalid value `{cost}` for `--max-cost`: expected a positive number of US dollars");
    }
    let state = team_state::read(&manifest.team_state_path)?;
    let selection = select::select(&manifest, &state, kind, workers.as_deref())?;

    for native in &selection.native {
        eprintln!(
            "note: `{}` runs in the host's own session (`native-session`): the host dispatches it, then `okstra await` waits for its Result Path",
            native.dispatch_name
        );
    }
    if !args.dry_run && !selection.native.is_empty() {
        // Recorded here so the host never writes a dispatch record by hand
        // and `await` finds native workers the same way as wrapper ones.
        let records: Vec<_> = selection
            .native
            .iter()
            .map(|planned| {
                let mut record =
                    attempt::record(planned, attempt::prompt_sha256(&planned.paths.prompt_path));
                record.started_at = Some(crate::lifecycle::clock::rfc3339_now());
                record.dispatcher_pid = None;
                record.log_path = None;
                record.sidecar_path = None;
                record
            })
            .collect();
        let changes: Vec<_> = records.iter().map(team_state::Change::Put).collect();
        team_state::update(&manifest.team_state_path, &changes)?;
    }
    for (name, why) in &selection.skipped {
        eprintln!("warning: not dispatching `{name}`: {why}");
    }
    if args.dry_run {
        return dry_run(&manifest, &selection.planned, args);
    }
    if selection.planned.is_empty() {
        eprintln!(
            "okstra: nothing to dispatch of kind `{}` in `{}`",
            kind.as_string(),
            args.run_dir.display()
        );
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
    let engine = engine::Engine {
        project_root: manifest.project_root.clone(),
        team_state: manifest.team_state_path.clone(),
        max_parallel: args.max_parallel.unwrap_or(usize::MAX),
        gates: gate::Gates {
            min_free_memory,
            min_free_disk,
        },
        retry_cooldown: args.retry_cooldown,
        idle_timeout: args.idle_timeout,
        view: view::View::new(false),
        prices,
        budget: crate::usage::Budget {
            max_cost_usd: args.max_cost,
            max_tokens: args.max_tokens,
        },
        budget_stopped: Vec::new(),
    };
    let order: Vec<String> = selection
        .planned
        .iter()
        .map(|p| p.dispatch_name.clone())
        .collect();
    let (records, interrupted) = engine.run(selection.planned)?;
    let mut rows: Vec<Row> = wait::latest_attempts(&records)
        .iter()
        .map(Row::from_record)
        .collect();
    // In the order they were planned, not the order they ended.
    rows.sort_by_key(|row| order.iter().position(|name| *name == row.dispatch_name));
    print_summary(&rows, args.json)?;
    if let Some(signal) = interrupted {
        return Ok(ExitStatus::Code(exit::from_signal(signal as i32)));
    }
    Ok(
        if rows.iter().all(|r| r.ending == Some(Ending::Completed)) {
            ExitStatus::Success
        } else {
            ExitStatus::Failure
        },
    )
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
            let wrapper = engine::wrapper_args(p, &manifest.project_root, args.idle_timeout);
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
                    printable(why)
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
    let mut command = std::process::Command::new(program);
    command
        .args(&forwarded)
        .env(DETACHED_ENV, "1")
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command
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
    eprintln!(
        "okstra: dispatching {} worker(s) in the background (pid {}); wait with `okstra await {}`",
        planned.len(),
        pid.map_or_else(|| "?".into(), |p| p.to_string()),
        manifest.run_dir.display()
    );
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

/// `text` with control characters shown as escapes, on one line: file and
/// CLI text must never reach a terminal raw.
pub fn printable(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}
