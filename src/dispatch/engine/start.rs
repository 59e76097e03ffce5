//! Starting an attempt: which queued attempts may start now (free slots,
//! due, gates open), where each runs (in place, or in its workspace copy made
//! on a blocking thread), and the wrapper child itself.

use crate::catalog::Role;
use crate::sandbox;

use super::{
    Arc, AsyncReadExt, Change, Context, DispatchRecord, Ended, Ending, Engine, Exit, Instant,
    Isolation, JoinSet, MAX_WRAPPER_STDERR, Place, Planned, Prepared, Queued, Result, Running,
    Stdio, VecDeque, attempt, child, exec_status, names, provider_exec, team_state, workspace,
    wrapper_args,
};
use crate::vocab::{Containment, WorkspaceKind};

impl Engine {
    /// Start what may start now: free slots, due, gates open.
    pub(super) fn start_ready(
        &mut self,
        queue: &mut VecDeque<Queued>,
        running: &mut Vec<Option<Running>>,
        tasks: &mut JoinSet<Exit>,
        preparing: &mut JoinSet<Prepared>,
    ) -> Result<()> {
        let now = Instant::now();
        while running.iter().flatten().count() < self.max_parallel {
            let due: Vec<usize> = (0..queue.len())
                .filter(|&at| queue[at].not_before <= now)
                .collect();
            let Some(&first) = due.first() else {
                return Ok(());
            };
            if let Some(closed) = self.gates.check(&self.run.project_root) {
                // Hold the first due attempt back, and say so once.
                self.hold(&mut queue[first], &closed.to_string(), closed.gate)?;
                return Ok(());
            }
            if let Some(why) = self.budget_spent()? {
                self.record_budget_stop(&why);
                // Spent: nothing else starts; every queued attempt ends `budget`.
                for queued in queue.drain(..) {
                    let mut record = queued.record.unwrap_or_else(|| {
                        attempt::record(&queued.planned, queued.planned.prompt_sha256.clone())
                    });
                    record.end(Ending::Budget, format!("not started: {why}"));
                    let mut changes = vec![Change::Put(&record)];
                    if record.dispatch_name == queued.planned.assignment_name {
                        changes.push(Change::Terminal(
                            &queued.planned.assignment_name,
                            Ending::Budget,
                        ));
                    }
                    team_state::update(&self.run, &changes)?;
                    attempt::announce(&self.run, &record);
                    self.view
                        .note(&format!("{}: not started: {why}", record.dispatch_name));
                    self.budget_stopped.push(record);
                }
                return Ok(());
            }
            // The first due attempt whose provider has a free slot; those
            // before it are held, each saying why.
            let mut chosen = None;
            for &at in &due {
                match self.slots.take(queue[at].planned.provider) {
                    Ok(slot) => {
                        chosen = Some((at, slot));
                        break;
                    }
                    Err(busy) => self.hold(&mut queue[at], &busy.to_string(), "slot")?,
                }
            }
            let Some((position, slot)) = chosen else {
                return Ok(());
            };
            let queued = queue
                .remove(position)
                .context("the position was just found")?;
            if let Some(why) = self.fail_fast.refuses(queued.planned.provider) {
                let record = self.end_unstarted(queued, Ending::Auth, &why)?;
                self.ended_early.push(record);
                continue;
            }
            let sha = queued.planned.prompt_hash();
            let mut record = queued
                .record
                .unwrap_or_else(|| attempt::record(&queued.planned, sha));
            record.start();
            let place = self.place(&queued.planned, &mut record);
            // Persisted before the attempt starts (and before its copy is
            // made): a crash from here on leaves a record that `await` can
            // finish and a copy that `reap` can find.
            team_state::update(&self.run, &[Change::Put(&record)])?;
            let place = match place {
                Ok(place) => place,
                Err(why) => {
                    let record = self.refuse(record, &queued.planned, &why)?;
                    self.ended_early.push(record);
                    continue;
                }
            };
            let index = running.len();
            let meter = record.log_path.as_deref().map(|log| {
                crate::usage::Follow::new(queued.planned.provider, Some(&queued.planned.model), log)
            });
            running.push(Some(Running {
                _slot: slot,
                planned: queued.planned,
                record,
                pid: None,
                started: Instant::now(),
                meter,
                stopping: None,
            }));
            match place {
                Place::Project => self.launch(index, None, running, tasks)?,
                Place::Copy(plan) => {
                    let snapshots = Arc::clone(&self.snapshots);
                    let allow = self.allow_unisolated;
                    preparing.spawn_blocking(move || Prepared {
                        made: workspace::make(&plan, &snapshots, allow),
                        index,
                        plan: *plan,
                    });
                }
            }
        }
        Ok(())
    }

    /// Where `planned` runs, written into `record` (`isolation`, and the
    /// copy's path and snapshot ref before it exists); `Err` when it cannot
    /// be contained: no place for its copy, or (a run contained by
    /// Landlock) no Landlock on this machine now.
    pub(super) fn place(
        &mut self,
        planned: &Planned,
        record: &mut DispatchRecord,
    ) -> Result<Place, String> {
        let executor = self
            .run
            .in_role(Role::Executor)
            .next()
            .map(|a| a.worker_id.clone());
        let worker = workspace::Worker {
            id: &planned.worker_id,
            provider: planned.provider,
            role: planned.role,
            runner: planned.runner,
        };
        let owner = workspace::copy_owner(&worker, self.run.containment, executor.as_deref())
            .map(str::to_owned);
        let confined = self.run.containment == Containment::Landlock
            && crate::sandbox::rules::confined(planned.provider);
        if confined && let Err(why) = landlock_here() {
            if !self.allow_unisolated {
                return Err(format!(
                    "the run is contained by Landlock, which this machine does not offer now ({why}); render the run again here"
                ));
            }
            self.view.note(&format!(
                "{}: not isolated (`--allow-unisolated`): {why}",
                record.dispatch_name
            ));
            record.isolation = Some(Isolation::None.into());
            return Ok(Place::Project);
        }
        let Some(owner) = owner else {
            let isolation = if confined {
                Isolation::Landlock
            } else {
                Isolation::CliSandbox
            };
            record.isolation = Some(isolation.into());
            return Ok(Place::Project);
        };
        let state = match team_state::read(&self.run) {
            Ok(state) => state,
            Err(err) => return Err(format!("{err:#}")),
        };
        let checkout = super::super::place::checkout(&self.run, &state, planned);
        let planned_copy = workspace::plan(&self.identity, &owner, checkout)
            .and_then(|plan| Ok((super::super::place::branch(&self.identity, planned)?, plan)));
        match planned_copy {
            Ok((branch, plan)) => {
                // A verifier under Landlock reads the Executor's copy.
                let plan = if owner == planned.worker_id {
                    plan
                } else {
                    plan.shared()
                };
                record.branch = branch;
                if !names(&planned.paths.prompt_path, &plan.location.project) {
                    self.view.note(&format!(
                        "{}: its prompt does not name `{}`, where its copy is made, as its project root (was it rendered with another `XDG_STATE_HOME` or `HOME`?)",
                        record.dispatch_name,
                        plan.location.project.display()
                    ));
                }
                let isolation = if confined {
                    Isolation::Landlock
                } else {
                    plan.kind.isolation()
                };
                record.isolation = Some(isolation.into());
                record.workspace = Some(plan.record());
                Ok(Place::Copy(Box::new(plan)))
            }
            Err(err) if self.allow_unisolated => {
                self.view.note(&format!(
                    "{}: not isolated (`--allow-unisolated`): {err}",
                    record.dispatch_name
                ));
                record.isolation = Some(Isolation::None.into());
                Ok(Place::Project)
            }
            Err(err) => Err(err.to_string()),
        }
    }

    /// End an attempt that may not start because it cannot be isolated: one
    /// line saying why and what would let it run.
    pub(super) fn refuse(
        &mut self,
        record: DispatchRecord,
        planned: &Planned,
        why: &str,
    ) -> Result<DispatchRecord> {
        let line = format!(
            "cannot isolate `{}`: {why}; pass `--allow-unisolated` to run it in the project itself",
            record.dispatch_name
        );
        self.view.note(&line);
        let ended = Ended {
            exit_code: Some(i64::from(crate::exit::EXEC_WORKTREE)),
            cancelled: false,
            wrapper_stderr: line,
            reason: None,
        };
        // The note above is the one line people read (whole, where the
        // record's detail is cut at 300 characters); no `ended` line repeats it.
        let (record, _) = attempt::finish(
            &self.run,
            record,
            &planned.assignment_name,
            &ended,
            &self.prices,
        )?;
        Ok(record)
    }

    /// A copy task ended: start the attempt's wrapper in it, or end the
    /// attempt (refused, or stopped while its copy was made). Returns the
    /// record of an attempt that ended here.
    pub(super) fn prepared(
        &mut self,
        prepared: Prepared,
        interrupted: bool,
        running: &mut [Option<Running>],
        tasks: &mut JoinSet<Exit>,
    ) -> Result<Option<DispatchRecord>> {
        let Prepared { index, plan, made } = prepared;
        let Some(slot) = running.get_mut(index) else {
            return Ok(None);
        };
        let Some(entry) = slot.as_mut() else {
            return Ok(None);
        };
        match made {
            Ok(made) => {
                // Under Landlock the copy is where it works, Landlock what
                // keeps it there; a copy that became the project itself is
                // said as such.
                let confined = entry.record.isolation == Some(Isolation::Landlock.into());
                if !confined || made.kind == WorkspaceKind::None {
                    entry.record.isolation = Some(made.kind.isolation().into());
                }
                entry.record.workspace = Some(made.record(&plan));
                team_state::update(&self.run, &[Change::Put(&entry.record)])?;
                if let Some(why) = &made.fallback {
                    let name = entry.record.dispatch_name.clone();
                    self.view.note(&format!(
                        "{name}: not isolated (`--allow-unisolated`), it runs in the project itself: {why}"
                    ));
                }
                if interrupted || entry.stopping.is_some() {
                    let Some(Running {
                        planned,
                        record,
                        stopping,
                        ..
                    }) = slot.take()
                    else {
                        return Ok(None);
                    };
                    drop(made);
                    let ended = Ended {
                        exit_code: None,
                        cancelled: true,
                        wrapper_stderr: "never started: the dispatch was stopped".into(),
                        reason: stopping,
                    };
                    return self.end_early(&planned, record, &ended).map(Some);
                }
                self.launch(index, Some(made), running, tasks)?;
                Ok(None)
            }
            Err(err) => {
                let Some(Running {
                    planned, record, ..
                }) = slot.take()
                else {
                    return Ok(None);
                };
                let why = format!("{:#}", anyhow::Error::from(err));
                self.refuse(record, &planned, &why).map(Some)
            }
        }
    }

    /// Finish an attempt whose wrapper never ran (stopped while its copy was
    /// made, or the wrapper could not start) and show how it ended.
    pub(super) fn end_early(
        &mut self,
        planned: &Planned,
        record: DispatchRecord,
        ended: &Ended,
    ) -> Result<DispatchRecord> {
        let (record, outcome) = attempt::finish(
            &self.run,
            record,
            &planned.assignment_name,
            ended,
            &self.prices,
        )?;
        self.view.ended(&record, &outcome);
        Ok(record)
    }

    /// Start the wrapper of the attempt at `index`, in `copy` when it has
    /// one; a wrapper that cannot start ends the attempt.
    pub(super) fn launch(
        &mut self,
        index: usize,
        copy: Option<workspace::Made>,
        running: &mut [Option<Running>],
        tasks: &mut JoinSet<Exit>,
    ) -> Result<()> {
        let Some(entry) = running.get_mut(index).and_then(Option::as_mut) else {
            return Ok(());
        };
        let confine = entry.record.isolation == Some(Isolation::Landlock.into());
        let (pid, exit) = self.spawn(&entry.planned, index, copy, confine);
        match exit {
            Ok(exit) => {
                entry.pid = pid;
                entry.started = Instant::now();
                // The wrapper is findable from here on, sidecar or not: a
                // driver killed now leaves it to the next one to adopt.
                entry.record.wrapper_pid = pid;
                team_state::update(&self.run, &[Change::Put(&entry.record)])?;
                self.view.started(&entry.record);
                tasks.spawn(exit);
            }
            Err(err) => {
                let Some(Running {
                    planned, record, ..
                }) = running[index].take()
                else {
                    return Ok(());
                };
                let ended = Ended {
                    exit_code: Some(i64::from(crate::exit::NOT_FOUND)),
                    cancelled: false,
                    wrapper_stderr: format!("cannot start the wrapper: {err}"),
                    reason: None,
                };
                let record = self.end_early(&planned, record, &ended)?;
                self.ended_early.push(record);
            }
        }
        Ok(())
    }

    /// Start one wrapper (asking it to confine its CLI with Landlock when
    /// `confine`); returns its pid and a future of its exit, which removes
    /// an in-place `copy` (off the event loop) once the wrapper has exited.
    pub(super) fn spawn(
        &self,
        planned: &Planned,
        index: usize,
        copy: Option<workspace::Made>,
        confine: bool,
    ) -> (
        Option<i32>,
        std::io::Result<impl std::future::Future<Output = Exit> + Send + 'static>,
    ) {
        let launcher = match provider_exec::Launcher::current() {
            Ok(launcher) => launcher,
            Err(err) => return (None, Err(err)),
        };
        // Its own group (a terminal's Ctrl-C reaches us only, and we decide
        // how the wrappers stop; they forward to their CLIs), no PDEATHSIG
        // (a dispatcher killed outright leaves them to finish).
        let mut builder = child::Builder::new(launcher.program);
        builder
            .args(launcher.lead)
            .args(wrapper_args(
                planned,
                &self.run.project_root,
                copy.as_ref().map(|made| made.project.as_path()),
                self.idle_timeout,
            ))
            .env(exec_status::ATTEMPT_ENV, planned.attempt.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if confine {
            builder.env(sandbox::CONFINE_ENV, sandbox::CONFINE_LANDLOCK);
        } else {
            builder.env_remove(sandbox::CONFINE_ENV);
        }
        if self.pass_env.is_empty() {
            builder.env_remove(provider_exec::PASS_ENV);
        } else {
            builder.env(provider_exec::PASS_ENV, self.pass_env.join(","));
        }
        let mut child = match builder.into_tokio().spawn() {
            Ok(child) => child,
            Err(err) => return (None, Err(err)),
        };
        let pid = child.id().and_then(|id| i32::try_from(id).ok());
        let stderr = child.stderr.take();
        // An in-place "copy" is a symlink into the project: it goes as soon
        // as the attempt ends (a real copy stays, to be reused).
        let in_place = copy
            .as_ref()
            .filter(|made| made.kind == WorkspaceKind::None)
            .map(|made| {
                (
                    made.path.clone(),
                    self.identity.project_root.clone(),
                    self.identity.run_dir.clone(),
                )
            });
        let future = async move {
            let mut text = String::new();
            if let Some(stderr) = stderr {
                let mut bytes = Vec::new();
                let _ = stderr
                    .take(MAX_WRAPPER_STDERR)
                    .read_to_end(&mut bytes)
                    .await;
                text = String::from_utf8_lossy(&bytes).into_owned();
            }
            let status = child.wait().await.ok();
            // The copy stays for the worker's next attempt or round (reset
            // in place then), and for the Executor's commit.
            drop(copy);
            if let Some((link, project, run_dir)) = in_place {
                let _ = tokio::task::spawn_blocking(move || {
                    workspace::remove(&link, WorkspaceKind::None, &project, &run_dir)
                })
                .await;
            }
            let code = status.and_then(|s| s.code()).map(i64::from);
            Exit {
                index,
                code,
                stderr: text,
            }
        };
        (pid, Ok(future))
    }
}

/// Whether this machine confines CLIs with Landlock now; why not, if not.
fn landlock_here() -> Result<(), String> {
    match sandbox::support_once() {
        Ok(sandbox::Support::Landlock { .. }) => Ok(()),
        Ok(sandbox::Support::Copies { why }) | Err(why) => Err(why.clone()),
    }
}
