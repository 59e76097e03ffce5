//! Carrying out one step of the step machine for `okstra run`, and
//! recording in the step journal what it was made from.

use std::path::Path;

use anyhow::{Context, Result};

use crate::catalog::{REPORT_WRITER, Role};
use crate::converge;
use crate::derive::quorum::Quorum;
use crate::diag;
use crate::dispatch::{self, Kind};

use crate::run::journal::file_sha256;
use crate::vocab::JournalStep;

use super::facts::{Digests, repair_prompt_path};
use super::{Flow, Lead, Mode};
use crate::vocab::EventKind;

impl Lead {
    /// Run one batch: the named workers' dispatches of `kind`.
    pub(super) fn batch(&mut self, kind: Kind, workers: &[String]) -> Result<Flow> {
        // A fresh attempt per explicit resume: one batch per worker gets it.
        let resume = workers
            .iter()
            .any(|w| self.resume_for(&self.dispatch_name(kind, w)));
        for worker in workers {
            self.fresh_given.insert(self.dispatch_name(kind, worker));
        }
        let state = self.run.team_state()?;
        let mut candidates = dispatch::select::select(&self.run, &state, kind, Some(workers))?;
        for planned in &mut candidates {
            planned.inputs_sha256 = self.tracked_inputs(planned);
        }
        let quorum = self.quorum(kind, workers)?;
        let phase = match kind {
            Kind::Reverify(round) => format!("phase 5.5, round {round}"),
            Kind::Critic => "phase 5.6 (critic)".to_owned(),
            _ => format!(
                "phase {}",
                super::phase_words(
                    self.run.task_type,
                    super::phase_of(&self.run, kind, workers)
                )
            ),
        };
        self.run_batch(candidates, resume, quorum, phase)
    }

    /// The quorum of a first batch of reviewers (analysers, or verifiers),
    /// counted from the run's records as they stand now.
    fn quorum(&self, kind: Kind, workers: &[String]) -> Result<Option<Quorum>> {
        let records = crate::run::Records::load(self.run.clone(), crate::run::Parts::FACTS)?;
        Ok(crate::derive::quorum::of_batch(&records, kind, workers))
    }

    /// Decide `candidates`, hand the host its own, and run the rest:
    /// attached, to the batch's end (stopped early once `quorum` cannot be
    /// reached, or a provider's login failed); detached, in a background
    /// driver. `phase` heads the live board.
    fn run_batch(
        &mut self,
        candidates: Vec<dispatch::Planned>,
        resume: bool,
        quorum: Option<Quorum>,
        phase: String,
    ) -> Result<Flow> {
        let mut options = self.options()?;
        options.resume = resume;
        options.fail_fast = dispatch::fail_fast::FailFast::new(self.auth_failed.clone(), quorum);
        options.header = Some(self.header(phase));
        let mut state = self.run.team_state()?;
        let prepared = dispatch::prepare(&self.run, &mut state, candidates, &options)?;
        // A spent budget hands the host nothing more, as it starts nothing
        // (the engine ends each wrapper attempt `budget`).
        let spent = dispatch::budget_spent(&self.run, &options.budget)?;
        if spent.is_none() {
            for planned in &prepared.host {
                dispatch::native::hand_out(&self.run, planned)?;
            }
        }
        if prepared.is_idle() {
            return Ok(match spent {
                Some(why) if !prepared.host.is_empty() => Flow::Stopped(self.budget_stop(&why)),
                _ => Flow::Go,
            });
        }
        if self.mode == Mode::Detached {
            let starts: Vec<String> = prepared
                .start
                .iter()
                .map(|p| p.dispatch_name.clone())
                .collect();
            return Ok(Flow::Detached(self.detach(&starts)?));
        }
        let batch = dispatch::run_prepared(&self.run, prepared, options)?;
        self.dispatched += batch.rows.len();
        self.auth_failed.clone_from(&batch.auth_failed);
        // Attempts the budget kept from starting: the run stops here, not
        // at the next batch the same budget would refuse again.
        let budget_stop = batch
            .rows
            .iter()
            .any(|row| row.ending == Some(crate::vocab::Ending::Budget))
            .then(|| self.budget_reason())
            .flatten();
        Ok(match (batch.interrupted, batch.stopped, budget_stop) {
            (Some(signal), _, _) => Flow::Interrupted(signal),
            (None, Some(why), _) => Flow::Stopped(why),
            (None, None, Some(why)) => Flow::Stopped(budget_words(&why)),
            (None, None, None) => Flow::Go,
        })
    }

    /// Why the run's budget stopped it, when it is spent now.
    pub(super) fn budget_spent(&self) -> Result<Option<String>> {
        dispatch::budget_spent(&self.run, &self.options()?.budget)
    }

    /// Record that the budget stops the run here (`why` it is spent); the
    /// reason the run ends with.
    pub(super) fn budget_stop(&self, why: &str) -> String {
        match self.options() {
            Ok(options) => {
                if let Err(err) = dispatch::record_budget_stop(&self.run, &options.budget, why) {
                    diag::warning(format_args!("cannot record the budget stop: {err:#}"));
                }
            }
            Err(err) => diag::warning(format_args!("cannot record the budget stop: {err:#}")),
        }
        budget_words(why)
    }

    /// The reason the engine recorded for the budget stop it made.
    fn budget_reason(&self) -> Option<String> {
        let state = self.run.team_state().ok()?;
        let reason = state.budget?.get("reason")?.as_str()?.to_owned();
        Some(reason)
    }

    fn dispatch_name(&self, kind: Kind, worker: &str) -> String {
        self.run.assignment(worker).map_or_else(
            || worker.to_owned(),
            |a| kind.dispatch_name(&a.dispatch_name),
        )
    }

    /// Plan round `round` from the current results (a stale plan is made
    /// again, the ledger rewound to before it).
    pub(super) fn plan(&mut self, round: u32, digests: &Digests) -> Result<()> {
        converge::rewind(&self.run, round - 1)?;
        let plan = converge::plan::plan(
            &self.run.dir,
            round,
            converge::PlanOptions {
                blind: true,
                seed: None,
            },
        )?;
        for warning in &plan.warnings {
            diag::warning(warning);
        }
        if let Some(stop) = plan.stopped_because {
            self.event(
                EventKind::ConvergenceSkipped,
                &[("reason", stop.as_str()), ("round", &round.to_string())],
            );
        }
        let inputs = digests.plans.get(&round).cloned().unwrap_or_default();
        let output = file_sha256(&self.run.layout().round_plan(round));
        // Everything from this round on was built on the old plan.
        self.journal
            .record(JournalStep::Plan(round), inputs, output, |step| {
                later_than(step, round) || step == JournalStep::Record(round)
            })?;
        Ok(())
    }

    /// Record round `round`'s verdicts into the ledger.
    pub(super) fn record(&mut self, round: u32, digests: &Digests) -> Result<()> {
        let recorded = converge::record::record(&self.run.dir, round)?;
        for problem in &recorded.problems {
            diag::warning(format_args!("round {round}: {}", problem.line()));
        }
        self.event(
            EventKind::RoundComplete,
            &[
                ("round", &round.to_string()),
                ("open", &recorded.open.len().to_string()),
            ],
        );
        let inputs = digests.records.get(&round).cloned().unwrap_or_default();
        let output = file_sha256(&self.run.layout().convergence_ledger());
        self.journal
            .record(JournalStep::Record(round), inputs, output, |step| {
                later_than(step, round)
            })?;
        Ok(())
    }

    /// Compute every item's class.
    pub(super) fn classify(&mut self, digests: &Digests) -> Result<()> {
        converge::classify(&self.run.dir)?;
        let output = file_sha256(&self.run.layout().convergence_ledger());
        self.journal.record(
            JournalStep::Classify,
            digests.classify.clone(),
            output,
            |step| {
                [
                    JournalStep::FixRequest,
                    JournalStep::FixCheck,
                    JournalStep::Inputs,
                    JournalStep::Render,
                ]
                .contains(&step)
            },
        )
    }

    /// The lead contract's fix cycle (`--fix-cycle yes`): the verifiers'
    /// `blocking` and `major` defects (confirmed by convergence when it ran)
    /// go to `state/fix-request.md` and the Executor's fix prompt (a native
    /// Executor gets it as a host task); nothing to fix is recorded.
    pub(super) fn fix_request(&mut self, digests: &Digests) -> Result<()> {
        let info = converge::RunInfo::of(self.run.clone())?;
        let classified = converge::summary(&info);
        let defects = classified
            .as_ref()
            .map(|c| converge::fix::defects(&c.ledger, c.ledger.enabled))
            .unwrap_or_default();
        let output = if defects.is_empty() {
            self.event(
                EventKind::FixPassSkipped,
                &[("reason", "no blocking or major defect")],
            );
            None
        } else {
            let path = self.run.layout().fix_request();
            dispatch::write_if_changed(&path, converge::fix::request(&defects).as_bytes())?;
            let state = self.run.team_state()?;
            dispatch::write_fix_prompt(&self.run, &state, &path)?;
            self.event(
                EventKind::FixPass,
                &[("defects", &defects.len().to_string())],
            );
            file_sha256(&path)
        };
        self.journal
            .record(JournalStep::FixRequest, digests.fix.clone(), output, |_| {
                false
            })
    }

    /// The Executor's fix pass, on the prompt the fix request wrote.
    pub(super) fn fix_pass(&mut self) -> Result<Flow> {
        let state = self.run.team_state()?;
        let path = dispatch::fix_prompt_path(&self.run)?;
        let executor = self
            .run
            .in_role(Role::Executor)
            .next()
            .context("an implementation run has an Executor")?;
        let planned = dispatch::repair_of(&self.run, &state, &executor.worker_id, &path)?;
        self.run_batch(
            vec![planned],
            false,
            None,
            "phase 5: the fix pass".to_owned(),
        )
    }

    /// Plan the verifiers' check of the fix pass: the defects the fix
    /// request sent, and each verifier's prompt on the fix pass's diff.
    pub(super) fn fix_check(&mut self, digests: &Digests, checkers: &[String]) -> Result<()> {
        let info = converge::RunInfo::of(self.run.clone())?;
        let classified = converge::summary(&info);
        let defects = classified
            .as_ref()
            .map(|c| converge::fix::defects(&c.ledger, c.ledger.enabled))
            .unwrap_or_default();
        let state = self.run.team_state()?;
        let commits = dispatch::place::executor_commits(&self.run, &state)
            .context("a fix pass that changed the code left the Executor's commits")?;
        let verifiers: Vec<&crate::run::roster::Assignment> = checkers
            .iter()
            .filter_map(|id| self.run.assignment(id))
            .collect();
        let output = if defects.is_empty() {
            None
        } else {
            converge::fix_check::plan(
                &self.run,
                &commits.first,
                &commits.tip,
                &defects,
                &verifiers,
            )?;
            self.event(
                EventKind::FixCheck,
                &[
                    ("defects", &defects.len().to_string()),
                    ("verifiers", &verifiers.len().to_string()),
                ],
            );
            file_sha256(&self.run.layout().fix_check())
        };
        self.journal.record(
            JournalStep::FixCheck,
            digests.fix_check.clone(),
            output,
            |step| [JournalStep::Inputs, JournalStep::Render].contains(&step),
        )
    }

    /// Compute the report writer's inputs into `state/report-inputs.json`.
    pub(super) fn inputs(&mut self, digests: &Digests) -> Result<()> {
        crate::coverage::write_inputs(&self.run)?;
        let output = file_sha256(&self.run.layout().report_inputs());
        self.journal.record(
            JournalStep::Inputs,
            digests.inputs.clone(),
            output,
            |step| step == JournalStep::Render,
        )
    }

    /// Write okstra's own blocks into the report the writer wrote, now that
    /// it has ended: reliability, verification, and the coverage and usage
    /// of every attempt, its own included (the usage read again first).
    pub(super) fn finalize(&mut self) -> Result<()> {
        if let Some(blocks) = crate::report::finalize(&self.run.dir)? {
            let source = serde_json::to_value(blocks.usage.source)
                .context("cannot serialise the usage source")?;
            self.event(
                EventKind::UsageCollected,
                &[("sources", source.as_str().unwrap_or("unavailable"))],
            );
        }
        Ok(())
    }

    /// Dispatch the report writer once more, on a prompt of its own: the
    /// validator's messages, the paths, the rules those messages break and
    /// the fields they concern (not the whole first prompt again).
    pub(super) fn repair(&mut self, problems: &[String]) -> Result<Flow> {
        let writer = self
            .run
            .assignment(REPORT_WRITER)
            .context("the report writer is rostered")?;
        let problems = if problems.is_empty() {
            vec![format!(
                "the report writer wrote no `{}`",
                self.run.report_data_path.display()
            )]
        } else {
            problems
                .iter()
                .map(|problem| crate::run::events::one_line(problem))
                .collect()
        };
        let mut rules: Vec<&str> = Vec::new();
        let mut pointers: Vec<&str> = Vec::new();
        for (pointer, rule) in problems
            .iter()
            .filter_map(|problem| crate::report::problem_parts(problem))
        {
            if !rules.contains(&rule) {
                rules.push(rule);
            }
            pointers.push(pointer);
        }
        let version = self
            .run
            .report_schema_version
            .as_deref()
            .unwrap_or(crate::report::CURRENT.0);
        let schema = crate::report::schema_of(version).unwrap_or(crate::report::CURRENT.1);
        let digest = crate::report::fields::digest(schema, self.run.task_type)?;
        let fields = crate::report::fields::lines_for(&digest, &pointers).join("\n");
        let task = self.run.task()?;
        let context = serde_json::json!({
            "task": { "key": task.task_key, "type": task.task_type },
            "run": { "dir": self.run.dir, "projectRoot": task.project_root },
            "assignment": {
                "dispatchName": writer.dispatch_name,
                "workerId": writer.worker_id,
                "provider": writer.provider,
                "runner": writer.runner,
                "modelExecutionValue": writer.model_execution_value,
                "resultPath": writer.paths.result_path,
                "workerResultsPath": writer.paths.worker_results_path,
            },
            "problems": problems,
            "rules": rules,
            "fields": fields,
        });
        let env = crate::template::environment();
        let prompt = crate::template::render(
            &env,
            "templates/repair-prompt.md.j2",
            minijinja::Value::from(minijinja::value::Serde(&context)),
        )?;
        let path = repair_prompt_path(&self.run);
        dispatch::write_if_changed(&path, prompt.as_bytes())?;
        self.event(
            EventKind::ReportRepair,
            &[("problems", &problems.len().to_string())],
        );
        let state = self.run.team_state()?;
        let planned = dispatch::repair_of(&self.run, &state, REPORT_WRITER, &path)?;
        self.run_batch(
            vec![planned],
            false,
            None,
            "phase 6: the report's repair".to_owned(),
        )
    }

    /// Validate and render the report.
    pub(super) fn render(&mut self) -> Result<()> {
        match crate::report::render(&self.run.dir)? {
            Ok(_) => {
                let data = file_sha256(&self.run.report_data_path).unwrap_or_default();
                self.journal
                    .record(JournalStep::Render, data, None, |_| false)
            }
            Err(problems) => anyhow::bail!(
                "the report `{}` passed validation a moment ago and now fails it: {}",
                self.run.report_data_path.display(),
                problems.join("; ")
            ),
        }
    }
}

/// The reason a run stopped by its budget ends with.
fn budget_words(why: &str) -> String {
    format!(
        "budget reached: {why}; nothing more is spent (raise `--max-cost` or `--max-tokens` and resume)"
    )
}

/// Whether journal step `step` belongs to a round after `round`.
fn later_than(step: JournalStep, round: u32) -> bool {
    match step {
        JournalStep::Plan(number) | JournalStep::Record(number) => number > round,
        JournalStep::Classify
        | JournalStep::FixRequest
        | JournalStep::FixCheck
        | JournalStep::Inputs
        | JournalStep::Render => true,
        JournalStep::Complete => false,
    }
}

/// The verdict token of a valid report, for the last lead event.
pub fn report_verdict(data: &Path) -> Option<String> {
    let bytes = crate::fsread::read(data, crate::fsread::Kind::Report).ok()?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    value
        .pointer("/finalVerdict/verdictToken")?
        .as_str()
        .map(str::to_owned)
}
