//! Worker coverage: the final report's `workerCoverage`, computed from the
//! run's dispatch records instead of written by hand, and `okstra coverage`,
//! which hands the report writer its inputs.
//!
//! Every rostered worker, the report writer included, gets one entry: its
//! own dispatches' latest attempt (initial, retry or repair, never a
//! reverify round) decides its `terminalStatus` through
//! `Ending::report_status`, the one mapping; a worker that did not complete
//! carries the classified reason, the record's detail and its log tail;
//! `itemsReported` counts the items of its Result Path the way `okstra
//! validate` does (none for the report writer, which reports no items: its
//! Result Path is the report). [`compute`] is the one place this is worked
//! out: the report's finalize step (`report::finalize`) writes its answer
//! into data.json once the report writer has ended, and `okstra validate`
//! checks the block against it.
//!
//! The report inputs (`state/report-inputs.json`, written before the report
//! writer starts) carry the other workers' coverage, so the writer can say
//! who failed and why, and the report's `reliability` and `verification`
//! blocks, so it knows what it may claim. No usage: the writer's own is not
//! known until it ends, and okstra writes `usageSummary` itself.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::catalog::{Provider, Role};
use crate::cli::CoverageArgs;
use crate::diag;
use crate::ending::{Ending, ReportStatus};
use crate::exit::ExitStatus;
use crate::report::reliability::{self, Reliability};
use crate::run::Run;
use crate::run::layout::RunLayout;
use crate::run::roster::Assignment;
use crate::run::team_state::{DispatchRecord, TeamState};
use crate::workspace::Isolation;

/// The report keeps at most this many log lines per failure.
const MAX_TAIL: usize = 40;

/// One `workerCoverage` entry, in the report schema's shape.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub worker_id: String,
    pub provider: Provider,
    pub role: Role,
    pub terminal_status: ReportStatus,
    pub items_reported: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Why a worker did not complete.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Failure {
    pub reason: &'static str,
    pub detail: String,
    pub log_tail: Vec<String>,
}

/// What the report writer reads (the other workers' coverage) and must
/// respect (reliability), computed by okstra.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportInputs {
    pub schema_version: u32,
    pub run_id: String,
    pub task_key: String,
    /// Every worker but the report writer (okstra adds its entry, and
    /// writes the whole block into data.json, after it ends).
    pub worker_coverage: Vec<Entry>,
    /// The convergence ledger, when Phase 5.5 ran.
    pub convergence_ledger: Option<PathBuf>,
    /// Whether the run was cross-verified; okstra writes it into data.json.
    pub reliability: Reliability,
    /// Who found and who verified each claim (when convergence ran); okstra
    /// writes it into data.json.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verification: Option<crate::report::verification::Verification>,
}

/// The coverage of every rostered worker, the report writer included, in
/// roster order.
pub fn compute(manifest: &Run, state: &TeamState) -> Vec<Entry> {
    manifest
        .assignments
        .iter()
        .map(|a| {
            let latest = state.latest(&a.dispatch_name);
            let ending = latest.and_then(|r| r.ending);
            let (terminal_status, reason) = match ending {
                Some(ending) => ending.report_status(),
                None => (ReportStatus::Unavailable, Some("unavailable")),
            };
            let failure = reason.map(|reason| {
                let detail = match latest {
                    None => "never dispatched".to_owned(),
                    Some(r) if r.ending.is_none() => "still running, or never ended".to_owned(),
                    Some(r) => r
                        .detail
                        .clone()
                        .filter(|d| !d.trim().is_empty())
                        .unwrap_or_else(|| ending.map_or("unavailable", Ending::as_str).to_owned()),
                };
                let mut log_tail = latest.and_then(|r| r.log_tail.clone()).unwrap_or_default();
                if log_tail.len() > MAX_TAIL {
                    log_tail.drain(..log_tail.len() - MAX_TAIL);
                }
                Failure {
                    reason,
                    detail,
                    log_tail,
                }
            });
            // The report writer's Result Path is the report itself: it
            // reports no items of its own.
            let items_reported = if a.role == Role::ReportWriter {
                0
            } else {
                count_items(&a.paths.result_path)
            };
            let mut notes: Vec<String> =
                isolation_note(a, &state.dispatches).into_iter().collect();
            // Answers okstra did not take from the sub-agent itself.
            let relayed: Vec<&str> = state
                .latest_attempts()
                .into_iter()
                .filter(|r| {
                    r.worker_id == a.worker_id && r.recovered_from.as_deref() == Some("relayed")
                })
                .map(|r| r.dispatch_name.as_str())
                .collect();
            if !relayed.is_empty() {
                notes.push(format!(
                    "the result of {} reached okstra through `okstra submit` (passed on by the lead or the sub-agent), not from the sub-agent's own final message",
                    relayed.join(", ")
                ));
            }
            Entry {
                notes,
                worker_id: a.worker_id.clone(),
                provider: a.provider,
                role: a.role,
                terminal_status,
                items_reported,
                failure,
            }
        })
        .collect()
}

/// How `assignment`'s worker was kept from changing the project, from the
/// `isolation` of all its attempts (its own work and its reviews). The
/// weakest one decides: a reader must know that one attempt ran in the
/// project itself, whatever the others did.
fn isolation_note(assignment: &Assignment, records: &[DispatchRecord]) -> Option<String> {
    let mine: Vec<&DispatchRecord> = records
        .iter()
        .filter(|r| r.worker_id == assignment.worker_id)
        .collect();
    let used: Vec<Isolation> = mine
        .iter()
        .filter_map(|r| r.isolation.as_deref().and_then(Isolation::parse))
        .collect();
    let provider = assignment.provider;
    let has = |isolation: Isolation| used.contains(&isolation);
    let note = if has(Isolation::None) {
        format!(
            "{provider} has no read-only mode and no copy of the project could be made for it, so it ran in the project itself (allowed by `--allow-unisolated`)"
        )
    } else if has(Isolation::GitWorktree) {
        format!(
            "{provider} has no read-only mode, so it worked in a throwaway git worktree of the project"
        )
    } else if has(Isolation::FileCopy) {
        format!(
            "{provider} has no read-only mode, so it worked in its own file copy of the project (not a git repository), never in the project itself"
        )
    } else if has(Isolation::GitCopy) {
        let snapshot = mine
            .iter()
            .find_map(|r| r.workspace.as_ref()?.snapshot_ref.clone())
            .map_or_else(String::new, |reference| format!(" (`{reference}`)"));
        match assignment.role {
            Role::Executor => {
                let branch = mine
                    .iter()
                    .find_map(|r| r.branch.as_ref().map(|b| b.name.clone()))
                    .map_or_else(String::new, |name| format!(" `{name}`"));
                format!(
                    "the Executor worked in its own git copy of the run's snapshot of the working tree{snapshot}; its change is on the branch{branch} and reaches the project only through `okstra land`"
                )
            }
            Role::Verifier => format!(
                "{provider} worked in a git copy holding the Executor's change on the run's snapshot of the working tree{snapshot}, never in the project itself"
            ),
            _ => format!(
                "{provider} has no read-only mode, so it worked in its own git copy of the run's snapshot of the working tree{snapshot}, never in the project itself"
            ),
        }
    } else if has(Isolation::Landlock) {
        match assignment.role {
            Role::Executor => {
                let branch = mine
                    .iter()
                    .find_map(|r| r.branch.as_ref().map(|b| b.name.clone()))
                    .map_or_else(String::new, |name| format!(" `{name}`"));
                format!(
                    "the Executor worked in its own git copy of the run's snapshot of the working tree, confined to it by Landlock (it could not write the project); its change is on the branch{branch} and reaches the project only through `okstra land`"
                )
            }
            Role::Verifier => format!(
                "{provider} read the Executor's git copy (its change on the run's snapshot of the working tree) under Landlock, which let it write nothing there nor in the project"
            ),
            _ => format!(
                "{provider} read the project itself under Landlock, which let it write only its own state folders and a scratch folder, never the project"
            ),
        }
    } else if has(Isolation::CliSandbox) {
        if assignment.role == Role::Executor {
            "the Executor worked in the project itself, as its role requires".to_owned()
        } else {
            format!("{provider} worked in the project under its own read-only mode")
        }
    } else {
        return None;
    };
    Some(note)
}

/// Items in a result file, counted exactly as `okstra validate` counts
/// them (every occurrence of every id; an unreadable file has none).
fn count_items(path: &Path) -> usize {
    crate::items::read_result(path).map_or(0, |text| {
        crate::items::counts(&text)
            .values()
            .map(|n| *n as usize)
            .sum()
    })
}

/// Compute the report writer's inputs, write them to
/// `state/report-inputs.json` (atomically), and return them.
pub fn write_inputs(manifest: &Run) -> Result<ReportInputs> {
    let state = manifest.team_state()?;
    let ledger = RunLayout::of(&manifest.dir).convergence_ledger();
    let inputs = ReportInputs {
        schema_version: 1,
        run_id: manifest.run_id.clone(),
        task_key: manifest.task_key.clone(),
        worker_coverage: compute(manifest, &state)
            .into_iter()
            .filter(|entry| entry.role != Role::ReportWriter)
            .collect(),
        convergence_ledger: ledger.is_file().then_some(ledger),
        reliability: reliability::compute(&manifest.dir)?,
        verification: crate::report::verification::compute(&manifest.dir, None)?,
    };
    let path = RunLayout::of(&manifest.dir).report_inputs();
    let mut bytes = serde_json::to_vec_pretty(&inputs)?;
    bytes.push(b'\n');
    crate::durable::write_atomic(&path, &bytes)
        .with_context(|| format!("cannot write `{}`", path.display()))?;
    Ok(inputs)
}

/// `okstra coverage`.
pub fn coverage_command(args: &CoverageArgs) -> Result<ExitStatus> {
    let manifest = Run::open(&args.run_dir)?;
    let inputs = write_inputs(&manifest)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&inputs)?)?;
    } else {
        for entry in &inputs.worker_coverage {
            writeln!(
                out,
                "{:<16} {:<12} {:<14} {:<12} {:>3} items{}",
                entry.worker_id,
                entry.provider.as_str(),
                entry.role.as_str(),
                entry.terminal_status.as_str(),
                entry.items_reported,
                entry.failure.as_ref().map_or_else(String::new, |f| format!(
                    "  {}: {}",
                    f.reason,
                    crate::fsread::escape(&f.detail)
                ))
            )?;
        }
        if inputs.reliability.cross_verified {
            diag::progress(inputs.reliability.line());
        } else {
            diag::warning(inputs.reliability.line());
        }
        diag::progress(format_args!(
            "wrote `{}`",
            RunLayout::of(&manifest.dir).report_inputs().display()
        ));
    }
    Ok(ExitStatus::Success)
}
