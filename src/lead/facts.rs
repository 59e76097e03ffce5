//! What is true of a run now, gathered from its files for the step machine
//! (`run::steps`), with the input digests each computed step is judged by.
//! Reads only: nothing here writes.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Result;

use crate::catalog::{DispatchKind, REPORT_WRITER, Role, TaskType};
use crate::converge::{Ledger, ledger};
use crate::dispatch::{self, Decision, Planned, Skip};
use crate::run::Run;
use crate::run::journal::{Digest, file_sha256};
use crate::run::steps::{Facts, FixCheck, Need, Report, Round, Worker};
use crate::run::team_state::TeamState;
use crate::vocab::{Ending, JournalStep};

use super::Lead;

/// The batches of the step machine, in its order: which one a step's
/// workers belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    Executor,
    Reviewers,
    Round(u32),
    Fix,
    FixCheck,
    Critic,
    Writer,
    Repair,
}

/// The digests of what each computed step is made from now.
#[derive(Debug, Default)]
pub struct Digests {
    pub plans: BTreeMap<u32, String>,
    pub records: BTreeMap<u32, String>,
    pub classify: String,
    pub fix: String,
    pub fix_check: String,
    pub inputs: String,
    pub render: Option<String>,
}

/// The facts, the digests, and the report's problems when it is invalid.
pub struct Gathered {
    pub facts: Facts,
    pub digests: Digests,
    pub problems: Vec<String>,
    /// Each batch's workers and their needs, in the step machine's order.
    pub groups: Vec<(Group, Vec<(String, Need)>)>,
    /// The dispatches only the host can run now, with their batch.
    pub host: Vec<(Group, Planned)>,
}

impl Gathered {
    /// The batch a step stopped at: the first whose members include every
    /// one of `workers` with `need` (the step machine's own order).
    pub fn group_with(&self, workers: &[String], need: Need) -> Option<Group> {
        self.groups
            .iter()
            .find(|(_, members)| {
                workers
                    .iter()
                    .all(|w| members.iter().any(|(id, n)| id == w && *n == need))
            })
            .map(|(group, _)| *group)
    }

    /// The host's dispatches of `group`.
    pub fn host_of(&self, group: Group) -> Vec<&Planned> {
        self.host
            .iter()
            .filter(|(g, _)| *g == group)
            .map(|(_, planned)| planned)
            .collect()
    }
}

/// Where each planned dispatch's state is collected while gathering.
#[derive(Default)]
struct Batches {
    groups: Vec<(Group, Vec<(String, Need)>)>,
    host: Vec<(Group, Planned)>,
}

impl Batches {
    /// Note `planned` (of `group`) with its need; the step machine's worker.
    fn note(&mut self, group: Group, planned: &Planned, need: Need) -> Worker {
        let member = (planned.worker_id.clone(), need);
        match self.groups.iter_mut().find(|(g, _)| *g == group) {
            Some((_, members)) => members.push(member),
            None => self.groups.push((group, vec![member])),
        }
        if need == Need::Host {
            self.host.push((group, planned.clone()));
        }
        Worker::new(&planned.worker_id, need)
    }
}

/// Gather the facts of `lead`'s run.
pub fn gather(lead: &Lead) -> Result<Gathered> {
    let run = &lead.run;
    let state = run.team_state()?;
    let journal = &lead.journal;
    // A run made before the journal existed is judged by its files alone.
    let legacy = journal.is_empty();
    let fresh = |step: JournalStep, inputs: &str, file_exists: bool| {
        if legacy {
            file_exists
        } else {
            file_exists && journal.is_fresh(step, inputs)
        }
    };
    let mut batches = Batches::default();
    let mut worker = |group: Group, planned: &Planned| {
        let need = need(lead, &state, planned);
        batches.note(group, planned, need)
    };
    let mut facts = Facts {
        convergence: run.convergence.enabled,
        max_rounds: run.convergence.effective_max_rounds,
        ..Facts::default()
    };
    let mut digests = Digests::default();

    if run.task_type == TaskType::Implementation {
        facts.executor = run.in_role(Role::Executor).next().map(|a| {
            worker(
                Group::Executor,
                &dispatch::select::from_assignment(a, DispatchKind::Initial),
            )
        });
    }
    let mut own = Digest::new();
    for assignment in run.reviewers() {
        let planned = dispatch::select::from_assignment(assignment, DispatchKind::Initial);
        let reviewer = worker(Group::Reviewers, &planned);
        own = own.text("worker", &assignment.worker_id).text(
            "done",
            if reviewer.need == Need::Done {
                "yes"
            } else {
                "no"
            },
        );
        if reviewer.need == Need::Done {
            own = own.file("result", &assignment.paths.result_path);
        }
        facts.reviewers.push(reviewer);
    }
    let own = own.finish();

    // Phase 5.5: the rounds planned so far.
    let ledger_path = run.layout().convergence_ledger();
    let ledger: Option<Ledger> = ledger::read(&ledger_path, ledger::LEDGER_SCHEMA)
        .ok()
        .flatten();
    let mut classify = Digest::new().text("own", &own);
    let mut previous_output = own.clone();
    for number in 1..=facts.max_rounds {
        let plan_path = run.layout().round_plan(number);
        if !plan_path.is_file() {
            break;
        }
        let plan_inputs = previous_output.clone();
        let plan_fresh = fresh(JournalStep::Plan(number), &plan_inputs, true);
        digests.plans.insert(number, plan_inputs);
        let plan: Option<crate::converge::ledger::Plan> =
            ledger::read(&plan_path, ledger::PLAN_SCHEMA).ok().flatten();
        let stopped = plan.as_ref().is_none_or(|p| p.stopped_because.is_some());
        let mut reviewers = Vec::new();
        let mut record = Digest::new().file("plan", &plan_path);
        if plan_fresh && !stopped {
            for planned in
                dispatch::select::select(run, &state, DispatchKind::Reverify(number), None)?
            {
                let reviewer = worker(Group::Round(number), &planned);
                let ending = state
                    .latest(&planned.dispatch_name)
                    .and_then(|r| r.ending)
                    .map_or("none", Ending::as_str);
                record = record
                    .text("reviewer", &planned.dispatch_name)
                    .text("ending", ending)
                    .file("result", &planned.paths.result_path);
                reviewers.push(reviewer);
            }
        }
        let record = record.finish();
        let recorded = ledger.as_ref().is_some_and(|l| l.rounds_run >= number);
        let recorded_fresh = fresh(JournalStep::Record(number), &record, recorded);
        digests.records.insert(number, record);
        let stops_after = ledger
            .as_ref()
            .is_some_and(|l| l.rounds_run == number && l.stopped_because.is_some());
        if let Some(output) = journal
            .get(JournalStep::Record(number))
            .and_then(|e| e.output.clone())
        {
            classify = classify.text("round", &output);
            previous_output = output;
        } else if legacy {
            previous_output = file_sha256(&ledger_path).unwrap_or_default();
        }
        facts.rounds.push(Round {
            number,
            plan_fresh,
            stopped,
            reviewers,
            recorded_fresh,
            stops_after,
        });
    }
    digests.classify = classify.finish();
    facts.classified = fresh(JournalStep::Classify, &digests.classify, ledger.is_some());
    let classified = journal
        .get(JournalStep::Classify)
        .and_then(|e| e.output.clone())
        .unwrap_or_default();

    // The implementation fix cycle.
    if let Some(executor) = run.in_role(Role::Executor).next()
        && run.task()?.fix_cycle
    {
        digests.fix = Digest::new().text("ledger", &classified).finish();
        let request = journal.get(JournalStep::FixRequest);
        facts.fix_undecided = request.is_none_or(|e| e.inputs != digests.fix);
        if !facts.fix_undecided && request.is_some_and(|e| e.output.is_some()) {
            let path = dispatch::fix_prompt_path(run)?;
            let planned = dispatch::repair_of(run, &state, &executor.worker_id, &path)?;
            facts.fix_pass = Some(worker(Group::Fix, &planned));
        }
    }
    // A fix pass that changed the code is checked by the verifiers that
    // completed their own check.
    if facts
        .fix_pass
        .as_ref()
        .is_some_and(|f| f.need == Need::Done)
        && let Some(commits) = dispatch::place::executor_commits(run, &state)
        && commits.tip != commits.first
    {
        let checkers = fix_checkers(run, &facts);
        digests.fix_check = Digest::new()
            .text("first", &commits.first)
            .text("tip", &commits.tip)
            .text("defects", &classified)
            .text("checkers", &checkers.join(","))
            .finish();
        // Planned from these inputs with no defect to check: nothing is due.
        let nothing_to_check = journal
            .get(JournalStep::FixCheck)
            .is_some_and(|e| e.inputs == digests.fix_check && e.output.is_none());
        if !checkers.is_empty() && !nothing_to_check {
            let plan_path = run.layout().fix_check();
            let planned = fresh(
                JournalStep::FixCheck,
                &digests.fix_check,
                plan_path.is_file(),
            );
            let verifiers = if planned {
                dispatch::select::select(run, &state, DispatchKind::FixCheck, None)?
                    .iter()
                    .map(|planned| worker(Group::FixCheck, planned))
                    .collect()
            } else {
                Vec::new()
            };
            facts.fix_check = Some(FixCheck { planned, verifiers });
        }
    }

    // The critic judges the classified ledger.
    facts.critic = run.in_role(Role::Critic).next().map(|a| {
        let mut planned = dispatch::select::from_assignment(a, DispatchKind::Critic);
        planned.inputs_sha256 = lead.tracked_inputs(&planned);
        worker(Group::Critic, &planned)
    });

    // Phase 6: the report.
    let Some(writer) = run.assignment(REPORT_WRITER) else {
        return Ok(Gathered {
            facts,
            digests,
            problems: Vec::new(),
            groups: batches.groups,
            host: batches.host,
        });
    };
    let mut inputs = Digest::new().text("ledger", &classified);
    for record in state.latest_attempts() {
        if record.dispatch_name == writer.dispatch_name {
            continue;
        }
        inputs = inputs
            .text("dispatch", &record.dispatch_name)
            .text("attempt", &record.attempt.to_string())
            .text("ending", record.ending.map_or("none", Ending::as_str))
            .text("result", record.result_sha256.as_deref().unwrap_or("none"));
    }
    digests.inputs = inputs.finish();
    let inputs_path = run.layout().report_inputs();
    facts.inputs_fresh = fresh(JournalStep::Inputs, &digests.inputs, inputs_path.is_file());
    let mut planned = dispatch::select::from_assignment(writer, DispatchKind::Initial);
    planned.inputs_sha256 = lead.tracked_inputs(&planned);
    let writer_state = worker(Group::Writer, &planned);
    let written = state
        .latest_on(&writer.dispatch_name, &writer.paths.prompt_path)
        .map_or(0, |r| r.attempt);
    facts.report_writer = Some(writer_state);

    let mut problems = Vec::new();
    // okstra's own blocks go in before any check; a data.json it cannot
    // read is left to validation to name.
    let unfinalized =
        run.report_data_path.is_file() && crate::report::needs_finalize(&run.dir).unwrap_or(false);
    facts.report = if unfinalized {
        Report::Unfinalized
    } else if run.report_data_path.is_file() {
        problems = match crate::report::problems(&run.dir) {
            Ok(problems) => problems,
            Err(err) => vec![format!("{err:#}")],
        };
        if problems.is_empty() {
            let data = file_sha256(&run.report_data_path).unwrap_or_default();
            let layout = run.layout();
            let rendered = journal.is_fresh(JournalStep::Render, &data)
                && layout
                    .report_dir()
                    .join(crate::run::layout::REPORT_MARKDOWN_NAME)
                    .is_file()
                && layout
                    .report_dir()
                    .join(crate::run::layout::REPORT_HTML_NAME)
                    .is_file();
            digests.render = Some(data);
            Report::Valid { rendered }
        } else {
            Report::Invalid { repaired: false }
        }
    } else {
        Report::Missing
    };
    // The one repair belongs to the writer's latest output: an attempt on
    // the repair prompt made after it.
    let repair_path = repair_prompt_path(run);
    if let Some(repair) = state
        .latest_on(&writer.dispatch_name, &repair_path)
        .filter(|r| r.attempt > written)
    {
        let need = match repair.ending {
            None => need_of_unfinished(repair),
            Some(_) if repair.was_interrupted() => Need::Run,
            Some(Ending::Completed) => Need::Done,
            Some(_) => Need::Failed,
        };
        if matches!(need, Need::Done | Need::Failed)
            && let Report::Invalid { repaired } = &mut facts.report
        {
            *repaired = true;
        }
        let planned = dispatch::repair_of(run, &state, &writer.worker_id, &repair_path)?;
        facts.repair = Some(batches.note(Group::Repair, &planned, need));
    }
    Ok(Gathered {
        facts,
        digests,
        problems,
        groups: batches.groups,
        host: batches.host,
    })
}

/// The verifiers that check a fix pass: those that completed their own
/// check of the Executor's change.
pub fn fix_checkers(run: &Run, facts: &Facts) -> Vec<String> {
    run.in_role(Role::Verifier)
        .filter(|a| {
            facts
                .reviewers
                .iter()
                .any(|w| w.id == a.worker_id && w.need == Need::Done)
        })
        .map(|a| a.worker_id.clone())
        .collect()
}

/// The report writer's repair prompt, beside its own.
pub fn repair_prompt_path(run: &Run) -> PathBuf {
    run.assignment(REPORT_WRITER).map_or_else(
        || run.layout().prompt("report-writer.repair"),
        |writer| {
            writer
                .paths
                .prompt_path
                .with_file_name(format!("{}.repair.md", writer.dispatch_name))
        },
    )
}

impl Lead {
    /// The digest of the files a dispatch's prompt points at that a resume
    /// must notice: the report writer's inputs, the critic's ledger.
    pub(super) fn tracked_inputs(&self, planned: &dispatch::Planned) -> Option<String> {
        match planned.role {
            Role::ReportWriter => file_sha256(&self.run.layout().report_inputs()),
            Role::Critic => Some(
                self.journal
                    .get(JournalStep::Classify)
                    .and_then(|e| e.output.clone())
                    .unwrap_or_default(),
            ),
            _ => None,
        }
    }
}

/// Where `planned` stands: what [`dispatch::select::decide_in`] says of its
/// attempts, in the step machine's words.
fn need(lead: &Lead, state: &TeamState, planned: &Planned) -> Need {
    let prompt_sha256 = planned.prompt_hash();
    let latest = state.latest(&planned.dispatch_name);
    let facts = dispatch::select::Facts {
        prompt_sha256,
        live: latest.map_or(dispatch::select::Live::Nothing, dispatch::liveness),
        resume: lead.resume_for(&planned.dispatch_name),
        retry_spent: false,
    };
    match dispatch::select::decide_in(planned, state, &facts) {
        Decision::Start { .. } | Decision::Adopt(_) | Decision::Settle(_) => Need::Run,
        Decision::Skip(Skip::Completed) => Need::Done,
        Decision::Skip(Skip::Failed(_)) => Need::Failed,
        Decision::Skip(Skip::Running) => Need::Running,
        Decision::Skip(Skip::Host) => Need::Host,
    }
}

/// An unfinished attempt: the host's (a native one), its driver's, or one
/// to adopt or settle.
fn need_of_unfinished(record: &crate::run::team_state::DispatchRecord) -> Need {
    if record.runner == Some(crate::catalog::Runner::NativeSession) {
        return Need::Host;
    }
    match dispatch::liveness(record) {
        dispatch::select::Live::Driver => Need::Running,
        _ => Need::Run,
    }
}
