//! Every fact a user reads about a run, derived once: pure functions over a
//! run's records (`run::Records`, read once per command). The report's
//! blocks, its Markdown and HTML, the SARIF log, the pull-request review,
//! the gate, `okstra run`'s closing summary, `okstra status` and `okstra
//! land` all read these; none of them recomputes one.
//!
//! | module | the fact |
//! |---|---|
//! | [`reviewers`] | who reviews, whether each completed its own work, who can still review |
//! | [`identity`] | which claims are one finding (what reviewers said, never line overlap) |
//! | [`counting`] | whether a verdict counts as verification, and why not |
//! | [`classes`] | a finding's class, whether it is open or withdrawn; why convergence stopped |
//! | [`severity`] | a finding's severity, and the counted reviewers who dispute it |
//! | [`verification`] | who found and who verified each claim (the report's `verification` block) |
//! | [`reliability`] | whether the run was cross-verified (the `reliability` block) |
//! | [`coverage`] | each rostered worker's coverage (`workerCoverage`) |
//! | [`usage`] | the run's usage summary (`usageSummary`) |
//! | [`landing`] | where an implementation run's change stands at the landing gate |
//! | [`liveness`] | whether an attempt still runs; the run's outcome |
//! | [`quorum`] | how many reviewers must complete, and whether that many did or still can |
//! | [`integrity`] | whether the results the report cites are the ones okstra recorded |
//!
//! Each rule is a pure function of a few typed facts with a table test
//! beside it, and a thin adapter from `Records` to those facts. Nothing here
//! reads a file or imports an output (`report` rendering, `sarif`, `gate`,
//! `publish`, `lead`): the outputs import this. The run-liveness rules
//! (an attempt's state, the quorum of a batch, the run's outcome) are here
//! too, over the same records: fail-fast, the step machine, `status`,
//! `await`, `next`, `cancel` and `cleanup` ask them.

pub mod classes;
pub mod counting;
pub mod coverage;
pub mod identity;
pub mod integrity;
pub mod landing;
pub mod liveness;
pub mod quorum;
pub mod reliability;
pub mod reviewers;
pub mod severity;
pub mod usage;
pub mod verification;

/// Records built in memory for the derivations' table tests: a run of the
/// given roster (`(worker, role, provider)`) and task type, in a folder that
/// does not exist, and its team state.
#[cfg(test)]
pub(crate) mod testing {
    use std::path::Path;

    use serde_json::json;

    use crate::run::team_state::{DispatchRecord, TeamState};
    use crate::run::{Records, Run};

    /// The run folder every test run names.
    pub const RUN_DIR: &str = "/nowhere/run";

    /// A run of `roster` for `task_type`.
    pub fn run(task_type: &str, roster: &[(&str, &str, &str)]) -> Run {
        let assignments: Vec<serde_json::Value> = roster
            .iter()
            .map(|(id, role, provider)| {
                let name = if *role == "report-writer" {
                    (*id).to_owned()
                } else if *role == "executor" {
                    format!("{id}-executor")
                } else if *role == "verifier" {
                    format!("{id}-verifier")
                } else {
                    format!("{id}-worker")
                };
                json!({"workerId": id, "role": role, "provider": provider,
                       "dispatchName": name, "modelExecutionValue": "m", "wrapper": null})
            })
            .collect();
        let manifest = json!({
            "runId": "r-001", "taskKey": "p/g/t", "taskType": task_type,
            "runDir": RUN_DIR, "leadRuntime": "external",
            "assignments": assignments,
        });
        Run::parse(Path::new(RUN_DIR), manifest.to_string().as_bytes())
            .expect("the test manifest parses")
    }

    /// The records of `run` with these attempts and nothing else.
    pub fn records(run: Run, dispatches: Vec<DispatchRecord>) -> Records {
        Records {
            run,
            state: TeamState {
                dispatches,
                ..TeamState::default()
            },
            state_value: json!({}),
            live: std::collections::HashMap::new(),
            ledger: None,
            plans: std::collections::BTreeMap::new(),
            fix_check: None,
            journal: crate::run::journal::Journal::default(),
            snapshot: None,
            results: crate::run::records::Results::default(),
        }
    }
}
