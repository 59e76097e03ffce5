//! `okstra coverage`, which hands the report writer its inputs. Each
//! worker's coverage is `derive::coverage`'s.
//!
//! The report inputs (`state/report-inputs.json`, schema
//! `report-inputs.schema.json`, written before the report writer starts)
//! carry what the writer needs to author its fields and nothing it must
//! not author: whether the run was cross-verified (and why not), which
//! workers did not complete and why, and the ledger's findings in the form
//! the report cites them (`sourceItems`, `convergence`, severity, who found
//! and who checked them, the code their anchors quote). None of okstra's
//! own blocks (`reliability`, `verification`, `workerCoverage`,
//! `usageSummary`): okstra writes those into data.json itself once the
//! writer has ended, and a copy here would only be read, and copied.

use std::io::Write;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::catalog::{Role, TaskType};
use crate::cli::CoverageArgs;
use crate::derive::coverage::Entry;
use crate::derive::reliability;
use crate::derive::verification::VerifiedItem;
use crate::diag;
use crate::run::{Parts, Records, Run};
use crate::vocab::FinalClass;
use crate::vocab::ReportStatus;
use crate::vocab::Severity;

/// The version of the report inputs written now.
pub const INPUTS_VERSION: u32 = 2;
/// Their schema.
const INPUTS_SCHEMA: &str = "report-inputs.schema.json";

/// What the report writer reads before it writes: computed by okstra.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportInputs {
    pub schema_version: u32,
    pub run_id: String,
    pub task_key: String,
    pub task_type: TaskType,
    /// Whether the run was cross-verified (`reliability`'s verdict).
    pub cross_verified: bool,
    /// Why not, in one sentence, when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_cross_verified: Option<String>,
    /// Every worker but the report writer that did not complete.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failed_workers: Vec<FailedWorker>,
    /// The convergence ledger's findings, each as the report cites it;
    /// `None` when the run has no ledger. Written one a line (`to_bytes`).
    #[serde(skip)]
    pub findings: Option<Vec<Finding>>,
}

impl ReportInputs {
    /// The inputs as a file: pretty JSON, each finding on one line, so a
    /// reader pays for the findings and little for the layout.
    pub fn to_bytes(&self) -> serde_json::Result<Vec<u8>> {
        let mut text = serde_json::to_string_pretty(self)?;
        if let Some(findings) = &self.findings {
            // `…\n}` → `…,\n  "findings": [\n    {…},\n    {…}\n  ]\n}`
            text.truncate(text.trim_end().len() - 1);
            text.truncate(text.trim_end().len());
            text.push_str(",\n  \"findings\": [");
            for (index, finding) in findings.iter().enumerate() {
                text.push_str(if index == 0 { "\n    " } else { ",\n    " });
                text.push_str(&serde_json::to_string(finding)?);
            }
            text.push_str(if findings.is_empty() {
                "]\n}"
            } else {
                "\n  ]\n}"
            });
        }
        text.push('\n');
        Ok(text.into_bytes())
    }
}

/// A worker that did not complete, for the writer to name in words.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedWorker {
    pub worker_id: String,
    pub role: Role,
    pub terminal_status: ReportStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// One finding of the ledger: a claim and the claims merged with it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// Every claim of the finding as `<workerId>:<item id>`, the first
    /// one's first: a report row's `sourceItems`.
    pub source_items: Vec<String>,
    /// Its class: a report row's `convergence`.
    pub convergence: FinalClass,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub severity: Option<Severity>,
    pub found_by: Vec<String>,
    /// Reviewers whose counted verdict agrees.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub agreed_by: Vec<String>,
    /// Reviewers whose counted verdict disagrees.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub disagreed_by: Vec<String>,
    /// Its owners withdrew it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub withdrawn: bool,
    /// The first claim as its owner wrote it.
    pub text: String,
    /// Where its anchors resolved and the code they quote there.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<Quoted>,
}

/// A resolved anchor: a location of the project and the code it quotes.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Quoted {
    pub location: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excerpt: Option<String>,
}

/// The findings of the claims of a `verification` block: one per finding,
/// in the order of its first claim.
fn findings(items: &[VerifiedItem]) -> Vec<Finding> {
    let mut done: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut out = Vec::new();
    for item in items {
        if done.contains(item.item_id.as_str()) {
            continue;
        }
        done.extend(item.merged_with.iter().map(String::as_str));
        let mut source_items = vec![item.item_id.clone()];
        source_items.extend(item.merged_with.iter().cloned());
        let evidence = item
            .anchors
            .iter()
            .filter_map(|anchor| {
                let lines = match anchor.status {
                    crate::vocab::AnchorStatus::Verified => &anchor.lines,
                    crate::vocab::AnchorStatus::Moved => anchor.found_at.as_ref()?,
                    _ => return None,
                };
                Some(Quoted {
                    location: format!("{}:{lines}", anchor.path),
                    excerpt: anchor.excerpt.clone(),
                })
            })
            .collect();
        out.push(Finding {
            source_items,
            convergence: item.final_class.unwrap_or(FinalClass::WorkerUnique),
            severity: item.severity,
            found_by: item.found_by.clone(),
            agreed_by: item.agreed_by.clone(),
            disagreed_by: item.disagreed_by.clone(),
            withdrawn: item.withdrawn,
            text: item.text.clone().unwrap_or_default(),
            evidence,
        });
    }
    out
}

/// The report inputs of the run whose records are `records`.
fn inputs_of(
    records: &Records,
    coverage: &[Entry],
    reliability: &reliability::Reliability,
) -> ReportInputs {
    ReportInputs {
        schema_version: INPUTS_VERSION,
        run_id: records.run.run_id.clone(),
        task_key: records.run.task_key.clone(),
        task_type: records.run.task_type,
        cross_verified: reliability.cross_verified,
        not_cross_verified: (!reliability.cross_verified).then(|| reliability.detail.clone()),
        failed_workers: coverage
            .iter()
            .filter(|entry| {
                entry.role != Role::ReportWriter && entry.terminal_status != ReportStatus::Completed
            })
            .map(|entry| FailedWorker {
                worker_id: entry.worker_id.clone(),
                role: entry.role,
                terminal_status: entry.terminal_status,
                reason: entry.failure.as_ref().map(|f| f.reason),
                detail: entry.failure.as_ref().map(|f| f.detail.clone()),
            })
            .collect(),
        findings: crate::derive::verification::of(records).map(|block| findings(&block.items)),
    }
}

/// What [`write_inputs`] wrote, and the facts `okstra coverage` shows
/// beside it.
pub struct Written {
    pub inputs: ReportInputs,
    /// Every rostered worker's coverage, the report writer's included.
    pub coverage: Vec<Entry>,
    /// The reliability verdict as one diagnostic line.
    pub reliability: String,
}

/// Compute the report writer's inputs, check them against their schema,
/// write them to `state/report-inputs.json` (atomically), and return them
/// with every worker's coverage.
pub fn write_inputs(manifest: &Run) -> Result<Written> {
    let records = Records::load(manifest.clone(), Parts::FACTS)?;
    let coverage = crate::derive::coverage::of(&records);
    let reliability = reliability::of(&records);
    let inputs = inputs_of(&records, &coverage, &reliability);
    let path = records.layout().report_inputs();
    let bytes = inputs.to_bytes()?;
    let value: serde_json::Value = serde_json::from_slice(&bytes)?;
    crate::schema::check(
        INPUTS_SCHEMA,
        &value,
        &format!("the report inputs `{}`", path.display()),
    )?;
    crate::durable::write_atomic(&path, &bytes)
        .with_context(|| format!("cannot write `{}`", path.display()))?;
    Ok(Written {
        inputs,
        coverage,
        reliability: reliability.line(),
    })
}

/// The report inputs as JSON; as text, a line per worker (the report
/// writer's left out).
impl crate::output::LaidOut for Written {
    const SCHEMA: &'static str = "report-inputs.schema.json";

    fn json_bytes(&self) -> serde_json::Result<Vec<u8>> {
        self.inputs.to_bytes()
    }
}

impl crate::output::Text for Written {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        for entry in self
            .coverage
            .iter()
            .filter(|entry| entry.role != Role::ReportWriter)
        {
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
        Ok(())
    }
}

/// `okstra coverage`.
pub fn coverage_command(args: &CoverageArgs) -> Result<crate::output::Reply> {
    let manifest = Run::open(&args.run_dir)?;
    let written = write_inputs(&manifest)?;
    let reply = crate::output::Reply::laid_out(&written, args.json)?;
    let cross_verified = written.inputs.cross_verified;
    let reliability = written.reliability;
    let wrote = format!("wrote `{}`", manifest.layout().report_inputs().display());
    Ok(reply.then_say(move || {
        if cross_verified {
            diag::progress(reliability);
        } else {
            diag::warning(reliability);
        }
        diag::progress(wrote);
    }))
}
