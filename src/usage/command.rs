//! `okstra usage <run-dir> [--json] [--attempts]`: compute the run's
//! ledger, write it into the team state under the team-state lock, print
//! it. Reading never needs that lock: a run whose team state cannot be
//! written (a read-only copy) is counted and printed all the same, with a
//! warning; a report folder (or data.json) without a run around it prints
//! the report's own `usageSummary`.
//!
//! `--json` prints the `usageSummary` exactly as the final report's schema
//! wants it (the lead copies it into data.json); without it, a compact
//! table (a row per worker, the lead, the total; `--attempts` adds every
//! attempt and provider). Warnings (an unpriced model, an unreadable
//! transcript) go to stderr. Without a run folder: `across` (every run since
//! a day, per day and provider).

use std::fmt::Write as _;
use std::io::Write;

use anyhow::{Context, Result};

use super::cost::Cost;
use super::ledger::{self, Computed, RunInfo};
use super::price::Prices;
use super::tally::Record;
use crate::cli::UsageArgs;
use crate::diag;
use crate::fsread;
use crate::output::{Answer, Reply};

pub fn usage_command(args: &UsageArgs) -> Result<Reply> {
    let Some(run_dir) = &args.run_dir else {
        return super::across::command(args);
    };
    if !run_dir.join(crate::run::layout::RUN_MANIFEST).exists()
        && let Some(summary) = report_summary(run_dir)?
    {
        return print_report_summary(&summary, args.json);
    }
    // Counted first without the lock: a folder whose records cannot be
    // counted (an example, a run from an older okstra) is only read — its
    // report's own summary is shown and no lock file is created in it.
    let counted = match compute(run_dir) {
        Ok(counted) => counted,
        Err(err) => match report_summary(run_dir)? {
            Some(summary) => {
                let why = format!("{err:#}");
                diag::warning(format_args!(
                    "the run's records cannot be counted ({}); showing its report's `usageSummary`",
                    why.lines().next().unwrap_or_default()
                ));
                return print_report_summary(&summary, args.json);
            }
            None => return Err(err),
        },
    };
    let computed = match record(run_dir) {
        Ok(computed) => computed,
        Err(err) if is_unwritable(&err) => {
            diag::warning(format_args!(
                "the usage is not recorded in the team state ({err:#}); it is counted and shown all the same"
            ));
            counted
        }
        Err(err) => return Err(err),
    };
    for warning in &computed.summary.warnings {
        diag::warning(warning);
    }
    let answer = RunUsage {
        computed: &computed,
        attempts: args.attempts,
    };
    Reply::pretty(&answer, args.json)
}

/// A run's usage: its `usageSummary` as JSON, the compact table (every
/// attempt with `--attempts`) as text.
struct RunUsage<'a> {
    computed: &'a Computed,
    attempts: bool,
}

impl serde::Serialize for RunUsage<'_> {
    fn serialize<S: serde::Serializer>(&self, to: S) -> Result<S::Ok, S::Error> {
        self.computed.summary.serialize(to)
    }
}

/// The summary is versioned with the report that holds it.
impl Answer for RunUsage<'_> {
    const SCHEMA: &'static str = "usage-answer.schema.json";
    const VERSION: Option<u32> = None;
}

impl crate::output::Text for RunUsage<'_> {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let text = if self.attempts {
            table(self.computed)
        } else {
            compact(&Line::of_summary(&self.computed.summary))
        };
        out.write_all(text.as_bytes())
    }
}

/// A report's `usageSummary` as it is: itself as JSON, the compact table
/// as text.
#[derive(serde::Serialize)]
#[serde(transparent)]
struct ReportUsage<'a>(&'a serde_json::Value);

/// The summary is versioned with the report that holds it.
impl Answer for ReportUsage<'_> {
    const SCHEMA: &'static str = "usage-answer.schema.json";
    const VERSION: Option<u32> = None;
}

impl crate::output::Text for ReportUsage<'_> {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        out.write_all(compact(&Line::of_report(self.0)).as_bytes())
    }
}

/// Whether recording failed on the disk (the lock could not be taken, the
/// team state not written: a read-only copy, a folder of someone else's),
/// not on what the run holds (a refused record is refused again when the
/// ledger is computed without recording).
fn is_unwritable(err: &anyhow::Error) -> bool {
    use std::io::ErrorKind;
    err.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|io| {
            matches!(
                io.kind(),
                ErrorKind::PermissionDenied
                    | ErrorKind::ReadOnlyFilesystem
                    | ErrorKind::IsADirectory
                    | ErrorKind::StorageFull
                    | ErrorKind::QuotaExceeded
            )
        })
    })
}

/// The run's ledger, computed from its team state as it is and checked
/// against the team state's schema as `record` would write it: nothing
/// locked, nothing written.
pub fn compute(run_dir: &std::path::Path) -> Result<Computed> {
    let env = |name: &str| std::env::var(name).ok();
    let prices = Prices::load(&env)?;
    let info = RunInfo::load(run_dir)?;
    info.run.team_state()?;
    let mut state = crate::run::team_state::read_raw(&info.run)?;
    let computed = ledger::compute(&info, &state, &prices, &env);
    // Checked as `record` would write it, so a run whose records cannot be
    // counted is known before any lock is taken.
    ledger::apply(&mut state, &computed)?;
    crate::run::team_state::check(&info.run, &state)?;
    Ok(computed)
}

/// The `usageSummary` of a report found at `target` (a data.json, a report
/// folder, or a run folder's `report/`); `None` when there is none.
fn report_summary(target: &std::path::Path) -> Result<Option<serde_json::Value>> {
    let candidates = if target.is_file() {
        vec![target.to_path_buf()]
    } else {
        vec![
            target.join(crate::run::layout::REPORT_DATA_NAME),
            target
                .join("report")
                .join(crate::run::layout::REPORT_DATA_NAME),
        ]
    };
    let Some(data) = candidates.into_iter().find(|path| path.is_file()) else {
        return Ok(None);
    };
    let bytes = fsread::read(&data, fsread::Kind::Report)
        .with_context(|| format!("cannot read the report `{}`", data.display()))?;
    let report: serde_json::Value = serde_json::from_slice(&bytes)
        .with_context(|| format!("the report `{}` is not valid JSON", data.display()))?;
    let summary = report
        .get("usageSummary")
        .filter(|summary| summary.is_object())
        .cloned()
        .with_context(|| {
            format!(
                "the report `{}` has no `usageSummary` object",
                data.display()
            )
        })?;
    Ok(Some(summary))
}

/// A report's `usageSummary` as it is: JSON, or the compact table.
fn print_report_summary(summary: &serde_json::Value, json: bool) -> Result<Reply> {
    Reply::pretty(&ReportUsage(summary), json)
}

/// One row of the compact table, from a ledger record or a report's
/// usage (whose fields the schema makes optional).
#[derive(Debug, Clone, Default)]
struct Line {
    who: String,
    provider: String,
    model: String,
    input: Option<u64>,
    cache_read: Option<u64>,
    cache_write: Option<u64>,
    output: Option<u64>,
    cost: Option<f64>,
    cost_partial: bool,
    reason: Option<String>,
}

/// The compact table's rows (the last the total) and its notes.
struct Compact {
    lines: Vec<Line>,
    estimate: Option<String>,
    prices_as_of: Option<String>,
}

impl Line {
    fn of(who: &str, provider: &str, record: &Record) -> Line {
        Line {
            who: who.to_owned(),
            provider: provider.to_owned(),
            model: record.model.clone().unwrap_or_else(|| "-".into()),
            input: record.input_tokens,
            cache_read: record.cache_read_tokens,
            cache_write: record.cache_write_tokens,
            output: record.output_tokens,
            cost: record.cost_usd,
            cost_partial: record.cost_partial,
            reason: record.reason.clone(),
        }
    }

    fn of_value(who: &str, provider: &str, usage: &serde_json::Value) -> Line {
        let count = |key: &str| usage.get(key).and_then(serde_json::Value::as_u64);
        let text = |key: &str| usage.get(key).and_then(serde_json::Value::as_str);
        Line {
            who: who.to_owned(),
            provider: provider.to_owned(),
            model: text("model").unwrap_or("-").to_owned(),
            input: count("inputTokens"),
            cache_read: count("cacheReadTokens"),
            cache_write: count("cacheWriteTokens"),
            output: count("outputTokens"),
            cost: usage.get("costUsd").and_then(serde_json::Value::as_f64),
            cost_partial: usage
                .get("costPartial")
                .and_then(serde_json::Value::as_bool)
                == Some(true),
            reason: text("reason").map(str::to_owned),
        }
    }

    fn of_summary(summary: &ledger::Summary) -> Compact {
        let mut lines: Vec<Line> = summary
            .workers
            .iter()
            .map(|w| Line::of(&w.worker_id, &w.provider, &w.usage))
            .collect();
        lines.push(Line::of(
            "lead",
            summary.lead.provider.as_deref().unwrap_or("-"),
            &summary.lead,
        ));
        let mut total = Line::of("TOTAL", "", &summary.totals);
        total.model = String::new();
        lines.push(total);
        Compact {
            lines,
            estimate: summary
                .estimate
                .as_ref()
                .map(super::estimated::Estimate::short),
            prices_as_of: Some(summary.prices_as_of.clone()),
        }
    }

    /// A report's `usageSummary`; without `totals`, the sum of its rows.
    fn of_report(summary: &serde_json::Value) -> Compact {
        let null = serde_json::Value::Null;
        let mut lines: Vec<Line> = summary
            .get("workers")
            .and_then(serde_json::Value::as_array)
            .into_iter()
            .flatten()
            .map(|w| {
                let text = |key: &str| {
                    w.get(key)
                        .and_then(serde_json::Value::as_str)
                        .unwrap_or("-")
                };
                Line::of_value(
                    text("workerId"),
                    text("provider"),
                    w.get("usage").unwrap_or(&null),
                )
            })
            .collect();
        let lead = summary.get("lead").unwrap_or(&null);
        lines.push(Line::of_value(
            "lead",
            lead.get("provider")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("-"),
            lead,
        ));
        let mut total = if let Some(totals) = summary.get("totals") {
            Line::of_value("TOTAL", "", totals)
        } else {
            let sum = |pick: fn(&Line) -> Option<u64>| -> Option<u64> {
                lines.iter().filter_map(pick).reduce(|a, b| a + b)
            };
            Line {
                who: "TOTAL".into(),
                input: sum(|l| l.input),
                cache_read: sum(|l| l.cache_read),
                cache_write: sum(|l| l.cache_write),
                output: sum(|l| l.output),
                cost: lines.iter().filter_map(|l| l.cost).reduce(|a, b| a + b),
                cost_partial: lines.iter().any(|l| l.input.is_none() || l.cost.is_none()),
                ..Line::default()
            }
        };
        total.model = String::new();
        lines.push(total);
        Compact {
            lines,
            estimate: summary
                .get("estimate")
                .and_then(|e| serde_json::from_value::<super::estimated::Estimate>(e.clone()).ok())
                .map(|e| e.short()),
            prices_as_of: summary
                .get("pricesAsOf")
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned),
        }
    }
}

/// The compact table's width: model names give way to fit it.
const COMPACT_WIDTH: usize = 100;

/// The default table: a row per worker, the lead, the total; then a line
/// per unavailable row, the estimate and the price table's date.
fn compact(table: &Compact) -> String {
    use crate::table::{Column, render};
    let columns = [
        Column::fixed("WHO"),
        Column::fixed("PROVIDER"),
        Column::shrinking("MODEL", 8, 0),
        Column::number("INPUT"),
        Column::number("CACHE R"),
        Column::number("CACHE W"),
        Column::number("OUTPUT"),
        Column::number("COST"),
    ];
    let count = |n: Option<u64>| n.map_or_else(|| "-".to_owned(), crate::table::human);
    let rows: Vec<Vec<String>> = table
        .lines
        .iter()
        .map(|line| {
            let cost = match line.input {
                None => "n/a".to_owned(),
                Some(_) => {
                    Cost::new(line.cost, line.cost_partial || line.cost.is_none()).to_string()
                }
            };
            [
                line.who.clone(),
                line.provider.clone(),
                line.model.clone(),
                count(line.input),
                count(line.cache_read),
                count(line.cache_write),
                count(line.output),
                cost,
            ]
            .map(|cell| fsread::escape(&cell).into_owned())
            .to_vec()
        })
        .collect();
    let mut text = render(&columns, &rows, 0, Some(COMPACT_WIDTH));
    let rows = table.lines.len().saturating_sub(1);
    for line in table.lines.iter().take(rows) {
        if let (None, Some(reason)) = (line.input, &line.reason) {
            let _ = writeln!(
                text,
                "{}: unavailable: {}",
                fsread::escape(&line.who),
                fsread::escape(reason)
            );
        }
    }
    if let Some(estimate) = &table.estimate {
        let _ = writeln!(text, "estimated before the run: {estimate}");
    }
    if let Some(date) = &table.prices_as_of {
        let _ = writeln!(
            text,
            "prices as of {} · `--attempts` shows every attempt",
            fsread::escape(date)
        );
    }
    text
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
