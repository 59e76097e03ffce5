//! `okstra usage <run-dir> [--json]`: compute the run's ledger, write it
//! into the team state under the team-state lock, print it.
//!
//! `--json` prints the `usageSummary` exactly as the final report's schema
//! wants it (the lead copies it into data.json); without it, a table of
//! every attempt, worker, provider, the lead and the total. Warnings (an
//! unpriced model, an unreadable transcript) go to stderr.

use std::fmt::Write as _;
use std::io::Write;

use anyhow::{Context, Result};

use super::ledger::{self, Computed, RunInfo};
use super::price::Prices;
use super::tally::Record;
use crate::cli::UsageArgs;
use crate::diag;
use crate::exit::ExitStatus;
use crate::fsread;

pub fn usage_command(args: &UsageArgs) -> Result<ExitStatus> {
    let computed = record(&args.run_dir)?;
    for warning in &computed.summary.warnings {
        diag::warning(warning);
    }
    let mut stdout = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut stdout, &computed.summary)
            .context("cannot serialise the usage summary")?;
        writeln!(stdout)?;
    } else {
        write!(stdout, "{}", table(&computed))?;
    }
    Ok(ExitStatus::Success)
}

/// Compute the run's usage ledger and write it into its team state (under
/// the team-state lock); what `okstra usage` prints, and what `okstra run`
/// hands the report writer.
pub fn record(run_dir: &std::path::Path) -> Result<Computed> {
    let env = |name: &str| std::env::var(name).ok();
    let prices = Prices::load(&env)?;
    let info = RunInfo::load(run_dir)?;
    // The records' paths are checked first: a record naming a file outside
    // the run is refused, as by every command.
    info.run.team_state()?;
    // Records that would not change are not written again: re-rendering a
    // finished run's report leaves its team state as it is.
    let current = crate::run::team_state::read_raw(&info.run)?;
    let unlocked = ledger::compute(&info, &current, &prices, &env);
    let mut updated = current.clone();
    ledger::apply(&mut updated, &unlocked)?;
    if updated == current {
        return Ok(unlocked);
    }
    let mut computed = None;
    crate::run::team_state::modify(&info.run, |state| {
        let ledger = ledger::compute(&info, state, &prices, &env);
        ledger::apply(state, &ledger)?;
        computed = Some(ledger);
        Ok(())
    })?;
    computed.context("the usage ledger was computed under the lock")
}

/// The human table: one row per attempt, worker, provider, the lead, total.
fn table(computed: &Computed) -> String {
    let mut rows: Vec<[String; 4]> = vec![[
        "WHAT".into(),
        "PROVIDER".into(),
        "MODEL".into(),
        "USAGE".into(),
    ]];
    // Model names, reasons and dispatch names come from CLI output and run
    // files: every cell is escaped, so no terminal sequence reaches the screen.
    let row = |what: String, provider: &str, record: &Record| {
        let usage = match (&record.reason, record.input_tokens) {
            (Some(reason), None) => format!("unavailable: {reason}"),
            _ => record.short(),
        };
        [
            what,
            provider.to_owned(),
            record.model.clone().unwrap_or_else(|| "-".into()),
            usage,
        ]
        .map(|cell| fsread::escape(&cell).into_owned())
    };
    for attempt in &computed.attempts {
        rows.push(row(
            format!("attempt {} #{}", attempt.dispatch_name, attempt.number),
            &attempt.provider,
            &attempt.tally.record(),
        ));
    }
    let summary = &computed.summary;
    for worker in &summary.workers {
        rows.push(row(
            format!("worker {}", worker.worker_id),
            &worker.provider,
            &worker.usage,
        ));
    }
    for (provider, record) in &summary.by_provider {
        rows.push(row(format!("provider {provider}"), provider, record));
    }
    rows.push(row(
        "lead".into(),
        summary.lead.provider.as_deref().unwrap_or("-"),
        &summary.lead,
    ));
    rows.push(row("total".into(), "-", &summary.totals));
    let widths: Vec<usize> = (0..3)
        .map(|col| {
            rows.iter()
                .map(|r| r[col].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut text = String::new();
    for r in &rows {
        for (col, width) in widths.iter().enumerate() {
            let cell = &r[col];
            text.push_str(cell);
            text.push_str(&" ".repeat(width - cell.chars().count() + 2));
        }
        text.push_str(&r[3]);
        text.push('\n');
    }
    let source = serde_json::to_value(summary.source)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let _ = writeln!(
        text,
        "prices as of {} · summary source {source}",
        fsread::escape(&summary.prices_as_of)
    );
    text
}
