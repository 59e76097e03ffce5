//! `okstra coverage`, which hands the report writer its inputs. Each
//! worker's coverage is `derive::coverage`'s.
//!
//! The report inputs (`state/report-inputs.json`, written before the report
//! writer starts) carry the other workers' coverage, so the writer can say
//! who failed and why, and the report's `reliability` and `verification`
//! blocks, so it knows what it may claim. No usage: the writer's own is not
//! known until it ends, and okstra writes `usageSummary` itself.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::catalog::Role;
use crate::cli::CoverageArgs;
use crate::derive::coverage::Entry;
use crate::derive::reliability::{self, Reliability};
use crate::diag;
use crate::exit::ExitStatus;
use crate::run::{Parts, Records, Run};

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

/// Compute the report writer's inputs, write them to
/// `state/report-inputs.json` (atomically), and return them.
pub fn write_inputs(manifest: &Run) -> Result<ReportInputs> {
    let records = Records::load(manifest.clone(), Parts::FACTS)?;
    let ledger = records.layout().convergence_ledger();
    let inputs = ReportInputs {
        schema_version: 1,
        run_id: manifest.run_id.clone(),
        task_key: manifest.task_key.clone(),
        worker_coverage: crate::derive::coverage::of(&records)
            .into_iter()
            .filter(|entry| entry.role != Role::ReportWriter)
            .collect(),
        convergence_ledger: records.ledger.is_some().then_some(ledger),
        reliability: reliability::of(&records),
        verification: crate::report::verification::compute(&records, None)?,
    };
    let path = records.layout().report_inputs();
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
            manifest.layout().report_inputs().display()
        ));
    }
    Ok(ExitStatus::Success)
}
