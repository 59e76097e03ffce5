//! `okstra dispatch`: hold the run's lease, select and decide what starts,
//! run it (or hand it to a detached dispatcher), print one summary.

use std::time::Duration;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::catalog::Runner;
use crate::cli::DispatchArgs;
use crate::diag;
use crate::exit::{self, ExitStatus};
use crate::output::{Answer, Reply};
use crate::run::Run;
use crate::run::lease::Lease;
use crate::run::team_state::TeamState;

use super::select::{self, Kind, Planned, Skip};
use super::{Batch, Options, Prepared, Row, prepare, run_prepared, summary};

/// Set in the environment of a detached dispatcher.
const DETACHED_ENV: &str = "OKSTRA_DISPATCH_DETACHED";
/// How long `--detach` waits for the detached dispatcher to record its
/// dispatches before it returns.
const DETACH_READY: Duration = Duration::from_secs(10);
/// How long a second driver waits for the lease before it refuses.
pub const LEASE_WAIT: Duration = Duration::from_secs(5);

/// `okstra dispatch`.
pub fn dispatch_command(args: &DispatchArgs) -> Result<Reply> {
    let run = Run::open(&args.run_dir)?;
    let workers = args
        .workers
        .as_deref()
        .map(super::split_workers)
        .transpose()?;
    Options::from_args(&args.engine)?;
    if let Some(names) = &workers {
        super::check_workers(&run, names)?;
    }
    // A dry run changes nothing and needs no lease.
    let lease = if args.dry_run {
        None
    } else {
        Some(Lease::acquire(&run, "okstra dispatch", LEASE_WAIT)?)
    };
    // The run's own settings, a flag given here overriding: recorded for the
    // rest of the run once this call starts something.
    let engine = crate::run::settings::merged(&run, &args.engine)?;
    let options = Options::from_args(&engine)?;
    let keep_settings = || crate::run::settings::record(&run, &args.engine);
    let mut state = run.team_state()?;
    if let Some(fix) = &args.fix {
        return fix_pass(
            &run,
            &state,
            workers.as_deref(),
            fix,
            options,
            &keep_settings,
            args.json,
        );
    }
    let prepared = if args.kind == Kind::Retry {
        retry(&run, &state, workers.as_deref())?
    } else {
        let candidates = select::select(&run, &state, args.kind, workers.as_deref())?;
        prepare(&run, &mut state, candidates, &options)?
    };
    if args.dry_run {
        for native in &prepared.host {
            diag::note(format_args!(
                "`{}` runs in the host's own session (`native-session`): `okstra next {}` would hand it to the host",
                native.dispatch_name,
                run.dir.display()
            ));
        }
        return dry_run(&run, &prepared.start, args, options.idle_timeout);
    }
    let host = hand_out(&run, &prepared.host)?;
    if prepared.is_idle() {
        if host.is_empty() {
            nothing_to_do(&run, &state, args.kind, &prepared);
        }
        return Ok(summary(&host, args.json)?.then_say(say_host(&run, &host)));
    }
    keep_settings()?;
    if args.detach {
        let lease = lease.context("a dispatch that is not a dry run holds the lease")?;
        return detach(&run, lease, &prepared.start, args);
    }
    if std::env::var_os(DETACHED_ENV).is_some() {
        // A detached dispatcher outlives the terminal that started it.
        crate::background::ignore_hangup();
    }
    let batch = run_prepared(&run, prepared, options)?;
    drop(lease);
    finish(&run, &batch, &host, args.json)
}

/// Hand the host its native dispatches of the batch (the same attempt
/// `okstra next` names); their rows for the summary, not ended.
fn hand_out(run: &Run, native: &[Planned]) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for planned in native {
        if let Some(handout) = super::native::hand_out(run, planned)? {
            let mut row = Row::from_record(&handout.record);
            row.detail = Some(format!(
                "runs in the host's own session: `okstra next {}` hands it out",
                run.dir.display()
            ));
            rows.push(row);
        }
    }
    Ok(rows)
}

/// Say that the host's dispatches of the batch are not done.
/// Said after the summary it concerns.
fn say_host(run: &Run, host: &[Row]) -> impl FnOnce() + 'static {
    let line = (!host.is_empty()).then(|| {
        let names: Vec<&str> = host.iter().map(|r| r.dispatch_name.as_str()).collect();
        let one = names.len() == 1;
        format!(
            "`{}` {} in the host's own session and {} not done yet: `okstra next {}` hands {} to the host",
            names.join("`, `"),
            if one { "runs" } else { "run" },
            if one { "is" } else { "are" },
            run.dir.display(),
            if one { "it" } else { "them" }
        )
    });
    move || {
        if let Some(line) = line {
            diag::progress(line);
        }
    }
}

/// Say why nothing starts: one line per candidate that was skipped, and
/// what can be dispatched instead, and when.
fn nothing_to_do(run: &Run, state: &TeamState, kind: Kind, prepared: &Prepared) {
    diag::progress(format_args!(
        "nothing to dispatch of kind `{}` in `{}`",
        kind.as_string(),
        run.dir.display()
    ));
    for (name, why) in &prepared.skipped {
        let line = match why {
            Skip::Completed => format!(
                "`{name}` already completed with the same prompt, provider and model; it is not paid for twice"
            ),
            Skip::Failed(ending) => format!(
                "`{name}` ended `{ending}`; `okstra dispatch {} --kind retry --workers <id>` spends its one retry, and resuming with `okstra run {}` gives a logged-out, offline or rate-limited worker a fresh attempt",
                run.dir.display(),
                run.dir.display()
            ),
            Skip::Running => format!("`{name}` is running"),
            Skip::Host => format!("`{name}` runs in the host's own session"),
        };
        diag::note(line);
    }
    for line in what_else(run, state) {
        diag::note(line);
    }
}

/// What else this run can dispatch, and when: each later kind with its
/// candidates, from the files that are there.
fn what_else(run: &Run, state: &TeamState) -> Vec<String> {
    let dir = run.dir.display();
    let done = |name: &str| {
        state
            .latest(name)
            .is_some_and(|r| r.ending == Some(crate::vocab::Ending::Completed))
    };
    let mut lines = Vec::new();
    let reviewers_done = run.reviewers().all(|a| {
        state
            .latest(&a.dispatch_name)
            .is_some_and(|r| r.ending.is_some())
    });
    let mut round = 0;
    while run.layout().round_plan(round + 1).is_file() {
        round += 1;
    }
    if round > 0 {
        let open: Vec<String> = select::select(run, state, Kind::Reverify(round), None)
            .unwrap_or_default()
            .into_iter()
            .filter(|p| !done(&p.dispatch_name))
            .map(|p| p.dispatch_name)
            .collect();
        if open.is_empty() {
            lines.push(format!(
                "round {round} is answered: `okstra converge record {dir} --round {round}` records it"
            ));
        } else {
            lines.push(format!(
                "`--kind reverify-r{round}` has {} reviewer(s) planned and not done: {}",
                open.len(),
                open.join(", ")
            ));
        }
    } else if reviewers_done && run.convergence.enabled {
        lines.push(format!(
            "the reviewers' own work has ended: `okstra converge plan {dir} --round 1` plans convergence round 1, then `--kind reverify-r1` dispatches it"
        ));
    } else if !reviewers_done {
        lines.push("`initial` starts the reviewers' own work first".to_owned());
    }
    if let Some(critic) = run.in_role(crate::catalog::Role::Critic).next()
        && !done(&critic.dispatch_name)
    {
        lines.push(
            "`--kind critic` dispatches the critic, after convergence is classified".to_owned(),
        );
    }
    if let Some(writer) = run.assignment(crate::catalog::REPORT_WRITER)
        && !done(&writer.dispatch_name)
    {
        lines.push(format!(
            "`--workers report-writer` dispatches the report writer once `okstra coverage {dir}` wrote its inputs"
        ));
    }
    lines.push(format!(
        "`okstra next {dir}` (or `okstra run {dir}`) takes every step in order for you"
    ));
    lines
}

/// `--kind retry --workers …`: each named worker's last attempt once more.
fn retry(run: &Run, state: &TeamState, workers: Option<&[String]>) -> Result<Prepared> {
    let Some(named) = workers else {
        anyhow::bail!("`--kind retry` needs `--workers`: name the workers to retry");
    };
    let mut prepared = Prepared::default();
    let mut spend = Vec::new();
    for name in named {
        let assignment = run.assignment(name).with_context(|| {
            let known: Vec<&str> = run
                .assignments
                .iter()
                .map(|a| a.worker_id.as_str())
                .collect();
            format!(
                "invalid value `{name}` for `--workers`: this run's workers are `{}`",
                known.join(",")
            )
        })?;
        match select::retry_of(assignment, state) {
            Ok((planned, spends)) if planned.runner == Runner::NativeSession => {
                if spends {
                    spend.push(planned.assignment_name.clone());
                }
                prepared.host.push(planned);
            }
            Ok((planned, spends)) => {
                if spends {
                    spend.push(planned.assignment_name.clone());
                }
                prepared.start.push(planned);
            }
            Err(why) => diag::warning(format_args!(
                "not dispatching `{}`: {why}",
                assignment.dispatch_name
            )),
        }
    }
    if !spend.is_empty() {
        let changes: Vec<_> = spend
            .iter()
            .map(|name| crate::run::team_state::Change::SpendRetry(name))
            .collect();
        run.update_team_state(&changes)?;
    }
    Ok(prepared)
}

/// The Executor's one fix pass: its own prompt followed by the defects the
/// lead listed, as its next attempt (`retry`, which spends no failure retry).
fn fix_pass(
    run: &Run,
    state: &TeamState,
    workers: Option<&[String]>,
    fix: &std::path::Path,
    options: Options,
    keep_settings: &dyn Fn() -> Result<()>,
    json: bool,
) -> Result<Reply> {
    let executor = super::executor_of(run)?;
    if workers != Some(std::slice::from_ref(&executor.worker_id)) {
        anyhow::bail!(
            "`--fix` dispatches the Executor only: pass `--workers {}`",
            executor.worker_id
        );
    }
    let planned = super::plan_fix_pass(run, state, fix)?;
    keep_settings()?;
    if planned.runner == Runner::NativeSession {
        let host = hand_out(run, &[planned])?;
        return Ok(summary(&host, json)?.then_say(say_host(run, &host)));
    }
    let batch = super::run_planned(run, vec![planned], options)?;
    finish(run, &batch, &[], json)
}

/// Print a finished batch's summary, the host's dispatches of the batch
/// listed as not ended (so `allCompleted` is never true while one is not
/// done); its exit status: 128+N when a signal stopped it, 0 when every
/// wrapper attempt completed, else 1.
fn finish(run: &Run, batch: &Batch, host: &[Row], json: bool) -> Result<Reply> {
    let rows: Vec<Row> = batch.rows.iter().chain(host).cloned().collect();
    let reply = summary(&rows, json)?;
    if let Some(signal) = batch.interrupted {
        return Ok(reply.with_status(ExitStatus::Code(exit::from_signal(signal as i32))));
    }
    Ok(reply
        .then_say(say_host(run, host))
        .with_status(if batch.all_completed() {
            ExitStatus::Success
        } else {
            ExitStatus::Failure
        }))
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

/// What `--dry-run` answers: `{"wouldStart": [...]}`, or a line per
/// attempt. The attempts go through [`crate::output::sorted`]: the JSON
/// keeps the key order of the map it was first written as.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WouldStart {
    #[serde(serialize_with = "crate::output::sorted")]
    would_start: Vec<Would>,
}

impl Answer for WouldStart {
    const SCHEMA: &'static str = "dispatch-dry-run-answer.schema.json";
    const VERSION: Option<u32> = Some(1);
}

impl crate::output::Text for WouldStart {
    fn write_text(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        for w in &self.would_start {
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
        Ok(())
    }
}

/// Print what would start, and write nothing: each attempt goes through the
/// wrapper's own preflight, so the argv shown is the one that would run.
fn dry_run(
    run: &Run,
    planned: &[Planned],
    args: &DispatchArgs,
    idle_timeout: Option<u64>,
) -> Result<Reply> {
    let would: Vec<Would> = planned
        .iter()
        .map(|p| {
            let wrapper = super::engine::wrapper_args(p, &run.project_root, None, idle_timeout);
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
                kind: p.kind.as_string(),
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
    Reply::answer(&WouldStart { would_start: would }, args.json)
}

/// What `okstra dispatch --detach` answers (fields in the order its JSON
/// has always listed them).
#[derive(Serialize)]
struct InBackground {
    detached: bool,
    log: std::path::PathBuf,
    pid: Option<i32>,
}

/// The log the detached dispatcher writes, for a person to follow.
impl Answer for InBackground {
    const SCHEMA: &'static str = "dispatch-detached-answer.schema.json";
    const VERSION: Option<u32> = Some(1);
}

impl crate::output::Text for InBackground {
    fn write_text(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        writeln!(out, "{}", self.log.display())
    }
}

/// Start a detached dispatcher with the same arguments and return once it
/// has recorded its dispatches (so an `okstra await` right after sees
/// them). The lease passes to it: released here just before it starts, it
/// takes the lease itself (waiting for it, like any second driver).
fn detach(run: &Run, lease: Lease, planned: &[Planned], args: &DispatchArgs) -> Result<Reply> {
    let log_path = run.layout().dispatch_log();
    let forwarded: Vec<std::ffi::OsString> = std::env::args_os()
        .skip(1)
        .filter(|arg| arg != "--detach")
        .collect();
    drop(lease);
    let mut started = crate::background::start(
        "the detached dispatcher",
        &log_path,
        &forwarded,
        |builder| {
            builder.env(DETACHED_ENV, "1");
        },
    )?;
    let pid = started.pid;
    started.wait_ready(DETACH_READY, || {
        let state = run.team_state()?;
        Ok(planned.iter().all(|p| {
            state.dispatches.iter().any(|r| {
                r.dispatch_name == p.dispatch_name
                    && r.attempt == p.attempt
                    && r.dispatcher_pid == pid
            })
        }))
    })?;
    let detached = InBackground {
        detached: true,
        log: log_path.clone(),
        pid,
    };
    let reply = Reply::answer(&detached, args.json)?;
    diag::progress(format_args!(
        "dispatching {} worker(s) in the background (pid {}); wait with `okstra await {}`, stop with `okstra cancel {}`",
        planned.len(),
        pid.map_or_else(|| "?".into(), |p| p.to_string()),
        run.dir.display(),
        run.dir.display()
    ));
    Ok(reply)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dry_run_prints_the_bytes_of_the_map_it_replaced() {
        let would = || Would {
            dispatch_name: "analyse-codex".to_owned(),
            kind: "analysis".to_owned(),
            attempt: 1,
            provider: "codex",
            model: "gpt".to_owned(),
            argv: vec!["codex".to_owned(), "exec".to_owned()],
            refusal: None,
            prompt_path: "/run/prompt.md".to_owned(),
            result_path: "/run/result.md".to_owned(),
        };
        let answer = WouldStart {
            would_start: vec![would()],
        };
        let map = serde_json::json!({ "wouldStart": [would()] });
        assert_eq!(
            serde_json::to_string(&answer).unwrap(),
            serde_json::to_string(&map).unwrap()
        );
    }
}
