//! The dispatcher's loop: start the planned attempts (at most `max_parallel`
//! at once, each only when the gates are open), each as a child
//! provider-exec wrapper (`okstra-provider-exec` beside okstra, else `okstra
//! provider-exec`: `provider_exec::Launcher`) in its own process group;
//! finish each attempt when its wrapper exits; spend the one shared retry
//! where the ending allows it; and on SIGINT/SIGTERM stop every wrapper and
//! record every ending.
//!
//! Each wrapper is a full supervisor of its own (idle watchdog, group stop,
//! sidecar), so this loop only waits on wrapper exits, signals and a one
//! second tick for the gates and the live view. A dispatcher killed outright
//! leaves its wrappers running to completion; the next driver of the run
//! adopts them (waits for each and finishes its record: it is paid for), and
//! `okstra await` finishes their records too.
//!
//! A `rate-limit` whose CLI named a retry-after
//! is waited out (plus jitter, a bounded number of times: `limit::Waits`)
//! and run again without spending the shared retry.
//!
//! A worker whose CLI has no read-only mode, and in an implementation run
//! the Executor and every verifier, works in a copy of the project
//! (`workspace`, `place`): recorded first, then made on a blocking thread
//! (a copy of a large tree takes a second or more) while the loop goes on
//! starting the others; its wrapper starts when the copy is ready. The copy
//! stays when the wrapper has exited: the worker's next attempt or round
//! resets it in place, which costs a fraction of a new one (`okstra run`
//! removes a finished run's reviewer copies; `okstra cleanup` the rest).

mod start;

use std::collections::{HashMap, VecDeque};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;
use tokio::signal::unix::{SignalKind, signal};
use tokio::task::JoinSet;

use crate::child;
use crate::provider_exec::{self, status as exec_status};
use crate::run::Run;
use crate::run::team_state::{self, Change, DispatchRecord};
use crate::vocab::Ending;
use crate::vocab::Isolation;
use crate::workspace;

use super::attempt::{self, Ended, Outcome};
use super::classify::QUICK_CRASH_SECS;
use super::gate::Gates;
use super::limit::{self, Waits};
use super::select::{Kind, Planned};
use super::slots::{Slot, Slots};
use super::view::{LiveRow, View};

#[path = "engine_hold.rs"]
mod hold;

/// Everything the loop needs.
pub struct Engine {
    pub run: Run,
    pub max_parallel: usize,
    pub gates: Gates,
    pub retry_cooldown: Duration,
    pub idle_timeout: Option<u64>,
    pub view: View,
    pub prices: crate::usage::Prices,
    /// `--max-cost` / `--max-tokens`: no attempt starts once recorded spend
    /// reaches it.
    pub budget: crate::usage::Budget,
    /// Attempts the budget stopped before they started.
    pub budget_stopped: Vec<DispatchRecord>,
    /// The run, for the workspaces of CLIs with no read-only mode.
    pub identity: workspace::RunIdentity,
    /// The run's one snapshot, shared by every copy this engine makes.
    pub snapshots: Arc<workspace::Snapshots>,
    /// `--allow-unisolated`: run in place when no copy can be made.
    pub allow_unisolated: bool,
    /// `--pass-env`: handed to every wrapper in `OKSTRA_PASS_ENV`.
    pub pass_env: Vec<String>,
    /// Attempts that ended before their wrapper ran (refused, or the
    /// wrapper could not start).
    pub ended_early: Vec<DispatchRecord>,
    /// The free waits on a CLI's retry-after each dispatch has had.
    pub waits: HashMap<String, Waits>,
    /// This user's provider slots: one is held by each running attempt.
    pub slots: Slots,
    /// What stops attempts early (`okstra run`): auth failures, the quorum.
    pub fail_fast: super::fail_fast::FailFast,
    /// Why the batch was stopped early, once it was.
    pub stopped: Option<String>,
}

/// How the engine's run ended.
pub struct Finished {
    /// Every attempt's final record.
    pub records: Vec<DispatchRecord>,
    /// The signal that interrupted the batch, if one did.
    pub interrupted: Option<Signal>,
    /// Why the batch was stopped early (its quorum was lost), if it was.
    pub stopped: Option<String>,
    /// Providers whose attempts ended `auth` (earlier ones included).
    pub auth_failed: std::collections::BTreeMap<crate::catalog::Provider, String>,
}

/// Record a budget stop where a lead and `okstra status` look: the team
/// state's `budget` and a `budget-stop` lead event.
pub fn record_budget_stop(run: &Run, budget: &crate::usage::Budget, why: &str) -> Result<()> {
    let stop = serde_json::json!({
        "stoppedAt": crate::clock::rfc3339_now(),
        "reason": why,
        "maxCostUsd": budget.max_cost_usd,
        "maxTokens": budget.max_tokens,
    });
    team_state::update(run, &[Change::Budget(stop)])?;
    let fields = std::collections::BTreeMap::from([("reason".to_owned(), why.to_owned())]);
    crate::run::events::append(run, crate::vocab::EventKind::BudgetStop.as_str(), &fields)?;
    Ok(())
}

/// Why no further attempt may start in `run`, once its recorded spend
/// reached `budget`.
pub fn budget_spent(run: &Run, budget: &crate::usage::Budget) -> Result<Option<String>> {
    if budget.max_cost_usd.is_none() && budget.max_tokens.is_none() {
        return Ok(None);
    }
    let raw = team_state::read_raw(run)?;
    Ok(budget.is_spent(&crate::usage::recorded_totals(&raw)))
}

/// The wrapper's stderr we keep for the classifier.
const MAX_WRAPPER_STDERR: u64 = 64 * 1024;

/// One queued attempt.
struct Queued {
    planned: Planned,
    not_before: Instant,
    record: Option<DispatchRecord>,
    /// What it was last held for (`memory`, `rate-limit` …), so each
    /// reason is announced once.
    held_for: Option<&'static str>,
}

/// An attempt a dead driver started whose wrapper still runs: this engine
/// waits for it and finishes its record.
#[derive(Debug)]
pub struct Adopted {
    pub planned: Planned,
    pub record: DispatchRecord,
    /// The wrapper's pid and start time.
    pub pid: i32,
    pub started_ts: i64,
}

/// How often an adopted wrapper (not our child: no exit notification) is
/// looked at.
const ADOPTED_POLL: Duration = Duration::from_millis(250);

/// One attempt whose wrapper runs, or whose copy is being made (no pid yet).
struct Running {
    planned: Planned,
    record: DispatchRecord,
    /// The wrapper's pid, once it started.
    pid: Option<i32>,
    started: Instant,
    /// Reads the log's new lines each tick for the live usage figure.
    meter: Option<crate::usage::Follow>,
    /// Its provider slot, freed when the attempt ends (`None`: uncapped).
    _slot: Option<Slot>,
    /// Why okstra is stopping it early (fail fast), once it is.
    stopping: Option<String>,
}

/// What a finished wrapper task hands back.
struct Exit {
    index: usize,
    code: Option<i64>,
    stderr: String,
}

/// What a finished copy task hands back.
struct Prepared {
    index: usize,
    plan: workspace::Plan,
    made: Result<workspace::Made, workspace::Error>,
}

/// Where an attempt's CLI runs.
enum Place {
    /// The project (the CLI's own read-only mode keeps it safe).
    Project,
    /// A copy still to be made.
    Copy(Box<workspace::Plan>),
}

impl Engine {
    /// Run every planned attempt to its end (or until the batch is stopped
    /// early or interrupted).
    pub fn run(self, planned: Vec<Planned>, adopted: Vec<Adopted>) -> Result<Finished> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        runtime.block_on(self.drive(planned, adopted))
    }

    async fn drive(mut self, planned: Vec<Planned>, adopted: Vec<Adopted>) -> Result<Finished> {
        let mut term = signal(SignalKind::terminate()).context("cannot watch SIGTERM")?;
        let mut int = signal(SignalKind::interrupt()).context("cannot watch SIGINT")?;
        let now = Instant::now();
        let mut queue: VecDeque<Queued> = planned
            .into_iter()
            .map(|planned| Queued {
                planned,
                not_before: now,
                record: None,
                held_for: None,
            })
            .collect();
        let mut running: Vec<Option<Running>> = Vec::new();
        let mut tasks: JoinSet<Exit> = JoinSet::new();
        let mut preparing: JoinSet<Prepared> = JoinSet::new();
        let mut finished: Vec<DispatchRecord> = Vec::new();
        let mut interrupted: Option<Signal> = None;
        for adopted in adopted {
            self.view.note(&format!(
                "{}: adopted (its wrapper still runs)",
                adopted.record.dispatch_name
            ));
            let index = running.len();
            let (pid, started_ts) = (adopted.pid, adopted.started_ts);
            // Already running: it takes a slot if one is free, and runs on
            // regardless.
            let slot = self.slots.take(adopted.planned.provider).ok().flatten();
            running.push(Some(Running {
                _slot: slot,
                meter: None,
                stopping: None,
                pid: Some(pid),
                started: Instant::now(),
                planned: adopted.planned,
                record: adopted.record,
            }));
            tasks.spawn(async move {
                while crate::process_group::wrapper_alive(pid, started_ts) {
                    tokio::time::sleep(ADOPTED_POLL).await;
                }
                Exit {
                    index,
                    code: None,
                    stderr: String::new(),
                }
            });
        }
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);

        loop {
            if interrupted.is_none() && self.stopped.is_none() {
                self.start_ready(&mut queue, &mut running, &mut tasks, &mut preparing)?;
            }
            if tasks.is_empty()
                && preparing.is_empty()
                && (queue.is_empty() || interrupted.is_some() || self.stopped.is_some())
            {
                break;
            }
            let live = self.running_view(&mut running);
            self.view.draw(&live, &queue_view(&queue));
            tokio::select! {
                Some(joined) = tasks.join_next(), if !tasks.is_empty() => {
                    let Ok(exit) = joined else { continue };
                    let Some(Running { planned, record, stopping, .. }) = running[exit.index].take() else { continue };
                    let ended = Ended {
                        exit_code: exit.code,
                        cancelled: interrupted.is_some() || stopping.is_some(),
                        wrapper_stderr: exit.stderr,
                        reason: stopping,
                    };
                    let (record, outcome) = attempt::finish(&self.run, record, &planned.assignment_name, &ended, &self.prices)?;
                    self.view.ended(&record, &outcome);
                    let auth_stop = self.fail_fast.ended(&record.dispatch_name, planned.provider, outcome.ending, &outcome.detail);
                    if interrupted.is_none()
                        && self.stopped.is_none()
                        && let Some(retry) = self.retry_for(&planned, &outcome)?
                    {
                        queue.push_back(retry);
                    }
                    finished.push(record);
                    if interrupted.is_none() {
                        self.fail_fast_after(auth_stop, &mut queue, &mut running, &mut finished)?;
                    }
                }
                Some(joined) = preparing.join_next(), if !preparing.is_empty() => {
                    let Ok(prepared) = joined else { continue };
                    let halt = interrupted.is_some() || self.stopped.is_some();
                    if let Some(record) = self.prepared(prepared, halt, &mut running, &mut tasks)? {
                        finished.push(record);
                    }
                }
                _ = tick.tick() => {}
                _ = term.recv() => interrupted = Some(self.interrupt(Signal::SIGTERM, interrupted, &running)),
                _ = int.recv() => interrupted = Some(self.interrupt(Signal::SIGINT, interrupted, &running)),
            }
        }
        // Anything still queued was never started: record why.
        for queued in queue {
            if let Some(mut record) = queued.record {
                record.end(
                    Ending::Cancelled,
                    "never started: the dispatch was stopped".into(),
                );
                team_state::update(&self.run, &[Change::Put(&record)])?;
                attempt::announce(&self.run, &record);
                finished.push(record);
            }
        }
        finished.append(&mut self.budget_stopped);
        finished.append(&mut self.ended_early);
        self.view.finish();
        Ok(Finished {
            records: finished,
            interrupted,
            stopped: self.stopped.take(),
            auth_failed: std::mem::take(&mut self.fail_fast.auth_failed),
        })
    }

    /// After an attempt ended: stop the other attempts of a provider whose
    /// credentials were refused (`auth_stop`), and stop the whole batch
    /// once its quorum can no longer be reached.
    fn fail_fast_after(
        &mut self,
        auth_stop: Option<crate::catalog::Provider>,
        queue: &mut VecDeque<Queued>,
        running: &mut [Option<Running>],
        finished: &mut Vec<DispatchRecord>,
    ) -> Result<()> {
        if let Some(provider) = auth_stop
            && let Some(why) = self.fail_fast.refuses(provider)
        {
            let (stopped, kept): (Vec<Queued>, Vec<Queued>) = queue
                .drain(..)
                .partition(|q| q.planned.provider == provider);
            queue.extend(kept);
            for queued in stopped {
                finished.push(self.end_unstarted(queued, Ending::Auth, &why)?);
            }
            let why = why.replacen("not started", "stopped", 1);
            Self::stop_running(running, |r| r.planned.provider == provider, &why);
        }
        if self.stopped.is_some() {
            return Ok(());
        }
        let pending: std::collections::BTreeSet<String> = queue
            .iter()
            .map(|q| q.planned.dispatch_name.clone())
            .chain(
                running
                    .iter()
                    .flatten()
                    .filter(|r| r.stopping.is_none())
                    .map(|r| r.planned.dispatch_name.clone()),
            )
            .collect();
        // Only when something is left to stop: a batch whose members have
        // all ended keeps what it paid for (the report says it was not
        // cross-verified).
        if pending.is_empty() {
            return Ok(());
        }
        if let Some(why) = self.fail_fast.lost_quorum(&pending) {
            self.view.note(&why);
            for queued in queue.drain(..).collect::<Vec<_>>() {
                finished.push(self.end_unstarted(queued, Ending::Cancelled, &why)?);
            }
            Self::stop_running(running, |_| true, &why);
            self.stopped = Some(why);
        }
        Ok(())
    }

    /// End a queued attempt that will not start, with `ending` and `why`.
    fn end_unstarted(
        &mut self,
        queued: Queued,
        ending: Ending,
        why: &str,
    ) -> Result<DispatchRecord> {
        let mut record = queued.record.unwrap_or_else(|| {
            let sha = queued.planned.prompt_hash();
            attempt::record(&queued.planned, sha)
        });
        record.end(ending, why.to_owned());
        let mut changes = vec![Change::Put(&record)];
        if record.dispatch_name == queued.planned.assignment_name {
            changes.push(Change::Terminal(&queued.planned.assignment_name, ending));
        }
        team_state::update(&self.run, &changes)?;
        self.view.note(&format!("{}: {why}", record.dispatch_name));
        Ok(record)
    }

    /// Ask the wrappers of the running attempts that `which` picks to stop;
    /// each ends `cancelled` with `why` as its detail.
    fn stop_running(running: &mut [Option<Running>], which: impl Fn(&Running) -> bool, why: &str) {
        for entry in running
            .iter_mut()
            .flatten()
            .filter(|r| r.stopping.is_none() && which(r))
        {
            entry.stopping = Some(why.to_owned());
            if let Some(pid) = entry.pid {
                let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
            }
        }
    }

    /// Record a budget stop ([`record_budget_stop`]); a failure to record
    /// is a note in the live view: the stop itself already happened.
    fn record_budget_stop(&mut self, why: &str) {
        if let Err(err) = record_budget_stop(&self.run, &self.budget, why) {
            self.view
                .note(&format!("cannot record the budget stop: {err:#}"));
        }
    }

    /// Why no further attempt may start, once the run's recorded spend
    /// reached `--max-cost` / `--max-tokens`.
    fn budget_spent(&self) -> Result<Option<String>> {
        budget_spent(&self.run, &self.budget)
    }

    /// Rows of the live view for running attempts, each with its usage so far.
    fn running_view(&self, running: &mut [Option<Running>]) -> Vec<LiveRow> {
        running
            .iter_mut()
            .flatten()
            .map(|r| {
                let priced = r
                    .meter
                    .as_mut()
                    .and_then(|meter| meter.poll().ok())
                    .map(|usage| usage.priced(&self.prices));
                LiveRow {
                    name: r.record.dispatch_name.clone(),
                    provider: r.planned.provider,
                    started: r.started,
                    log: r.record.log_path.clone(),
                    usage: priced
                        .as_ref()
                        .filter(|record| record.input_tokens.is_some())
                        .map(crate::usage::Record::short),
                    cost_usd: priced.and_then(|record| record.cost_usd),
                }
            })
            .collect()
    }

    /// What comes after a failed attempt: a rate limit's free wait on the
    /// CLI's retry-after (bounded, see `limit::Waits`), else the one shared
    /// retry if the ending and the budget allow it. Either is said on the
    /// board.
    fn retry_for(&mut self, planned: &Planned, outcome: &Outcome) -> Result<Option<Queued>> {
        if outcome.ending == Ending::RateLimit
            && let Some(hint) = outcome.retry_after
            && let Some(wait) = self
                .waits
                .entry(planned.dispatch_name.clone())
                .or_default()
                .next(hint, limit::random())
        {
            return self.wait_out(planned, hint, wait).map(Some);
        }
        let retryable = match outcome.ending {
            Ending::Crash => outcome.silent && outcome.seconds < QUICK_CRASH_SECS,
            ending => ending.is_retryable(),
        };
        if !retryable {
            return Ok(None);
        }
        let state = team_state::read(&self.run)?;
        if state.retry_spent(&planned.assignment_name) {
            return Ok(None);
        }
        team_state::update(&self.run, &[Change::SpendRetry(&planned.assignment_name)])?;
        // Never before the CLI said it would take requests again.
        let cooldown = if outcome.ending == Ending::RateLimit {
            self.retry_cooldown
                .max(outcome.retry_after.unwrap_or(Duration::ZERO))
        } else {
            Duration::ZERO
        };
        let mut retry = planned.clone();
        retry.kind = Kind::Retry;
        retry.attempt = planned.attempt + 1;
        self.view.note(&format!(
            "{}: retrying once after `{}` (attempt {})",
            planned.dispatch_name, outcome.ending, retry.attempt
        ));
        Ok(Some(Queued {
            planned: retry,
            not_before: Instant::now() + cooldown,
            record: None,
            held_for: None,
        }))
    }

    /// First signal: ask every wrapper to stop (each stops its CLI's group
    /// and records the exit). A second: ask again, which makes each wrapper
    /// kill at once.
    fn interrupt(
        &mut self,
        received: Signal,
        already: Option<Signal>,
        running: &[Option<Running>],
    ) -> Signal {
        self.view.note(&format!(
            "{}: stopping {} worker(s)",
            received.as_str(),
            running.iter().flatten().count()
        ));
        for pid in running.iter().flatten().filter_map(|r| r.pid) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
        already.unwrap_or(received)
    }
}

/// The arguments after `okstra provider-exec` for `planned`: the
/// reference wrapper's positional contract; the worktree is the copy a CLI
/// with no read-only mode runs in, else empty.
pub fn wrapper_args(
    planned: &Planned,
    project_root: &std::path::Path,
    worktree: Option<&std::path::Path>,
    idle_timeout: Option<u64>,
) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = vec![
        planned.provider.as_str().into(),
        project_root.into(),
        planned.model.clone().into(),
        planned.paths.prompt_path.clone().into(),
        worktree.map_or_else(|| "".into(), Into::into),
        planned.role.as_str().into(),
    ];
    if let Some(idle) = idle_timeout {
        args.push(idle.to_string().into());
    }
    args
}

/// Whether the prompt at `prompt` names `root` (a prompt that cannot be
/// read is the wrapper's to refuse, not this check's).
fn names(prompt: &std::path::Path, root: &std::path::Path) -> bool {
    let Ok(bytes) = crate::fsread::read(prompt, crate::fsread::Kind::Result) else {
        return true;
    };
    memchr::memmem::find(&bytes, root.as_os_str().as_encoded_bytes()).is_some()
}

/// Rows of the live view for attempts not yet started.
fn queue_view(queue: &VecDeque<Queued>) -> Vec<(String, String)> {
    queue
        .iter()
        .map(|q| {
            let why = q
                .record
                .as_ref()
                .and_then(|r| r.detail.clone())
                .unwrap_or_else(|| "queued".into());
            (q.planned.dispatch_name.clone(), why)
        })
        .collect()
}
