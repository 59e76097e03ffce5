//! `okstra usage --since 7d [--project-root DIR]`: every run of the user,
//! per day and per provider, like ccusage's daily view.
//!
//! The runs come from the per-user index (`runs_index`), narrowed to one
//! project with `--project-root` (whose own `.okstra/` is searched too, for
//! runs older than the index). Each run's team state is read as it is —
//! no lock, nothing written — and every attempt's recorded usage is counted
//! on the day it started (UTC); a lead's usage on the day its run was
//! made. A run that cannot be read is skipped with one warning.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Serialize;
use serde_json::Value;

use super::Record;
use super::cost::Cost;
use crate::cli::UsageArgs;
use crate::diag;
use crate::run::layout::RunLayout;
use crate::table::{Column, render};

/// The window when `--since` is not given.
const DEFAULT_SINCE: &str = "7d";
/// Version of the `--json` document.
const DAILY_VERSION: u32 = 1;

/// One day and provider's sum.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sum {
    #[serde(skip)]
    runs: BTreeSet<PathBuf>,
    pub run_count: usize,
    pub input_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
    /// Some usage had no cost (an unpriced model) or no numbers.
    pub cost_partial: bool,
}

impl Sum {
    fn add(&mut self, run: &Path, record: &Record) {
        self.runs.insert(run.to_path_buf());
        self.run_count = self.runs.len();
        self.input_tokens += record.input_tokens.unwrap_or(0);
        self.cache_read_tokens += record.cache_read_tokens.unwrap_or(0);
        self.cache_write_tokens += record.cache_write_tokens.unwrap_or(0);
        self.output_tokens += record.output_tokens.unwrap_or(0);
        match record.cost_usd {
            Some(cost) => self.cost_usd += cost,
            None => self.cost_partial = true,
        }
        self.cost_partial |= record.cost_partial || record.input_tokens.is_none();
    }

    fn merge(&mut self, other: &Sum) {
        self.runs.extend(other.runs.iter().cloned());
        self.run_count = self.runs.len();
        self.input_tokens += other.input_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.output_tokens += other.output_tokens;
        self.cost_usd += other.cost_usd;
        self.cost_partial |= other.cost_partial;
    }
}

/// (day, provider) → sum.
pub type Daily = BTreeMap<(String, String), Sum>;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Document<'a> {
    schema_version: u32,
    since: String,
    runs: usize,
    days: Vec<DayRow<'a>>,
    totals: Sum,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DayRow<'a> {
    date: &'a str,
    provider: &'a str,
    #[serde(flatten)]
    sum: &'a Sum,
}

/// `okstra usage` without a run folder.
pub fn command(args: &UsageArgs) -> Result<crate::output::Reply> {
    let raw = args.since.as_deref().unwrap_or(DEFAULT_SINCE);
    let since = parse_since(raw, crate::clock::unix_now())?;
    let env = |name: &str| std::env::var(name).ok();
    let runs = runs(args.project_root.as_deref(), &env)?;
    let mut daily = Daily::new();
    let mut counted = BTreeSet::new();
    for dir in &runs {
        match run_usage(dir, since) {
            Ok(rows) => {
                for (day, provider, record) in rows {
                    counted.insert(dir.clone());
                    daily.entry((day, provider)).or_default().add(dir, &record);
                }
            }
            Err(err) => diag::warning(format_args!(
                "skipping the run `{}`: {err:#}",
                dir.display()
            )),
        }
    }
    let mut totals = Sum::default();
    for sum in daily.values() {
        totals.merge(sum);
    }
    let since_day = crate::clock::rfc3339(since)[..10].to_owned();
    let document = Document {
        schema_version: DAILY_VERSION,
        since: since_day,
        runs: counted.len(),
        days: daily
            .iter()
            .map(|((date, provider), sum)| DayRow {
                date,
                provider,
                sum,
            })
            .collect(),
        totals,
    };
    crate::output::Reply::pretty(&document, args.json)
}

/// `--since`: a duration back from `now` (`7d`, `24h`), or a day (UTC).
pub fn parse_since(raw: &str, now: i64) -> Result<i64> {
    if let Some(day) = crate::clock::parse_rfc3339(&format!("{raw}T00:00:00Z")) {
        return Ok(day);
    }
    match humantime::parse_duration(raw) {
        Ok(duration) => Ok(now - i64::try_from(duration.as_secs()).unwrap_or(i64::MAX / 2)),
        Err(_) => bail!(
            "invalid value `{raw}` for `--since`: expected a duration like `7d` or `24h`, or a day like `2026-11-01`"
        ),
    }
}

/// The run folders to count: the index's (of one project, with
/// `project_root`), plus that project's own.
fn runs(project_root: Option<&Path>, env: &dyn Fn(&str) -> Option<String>) -> Result<Vec<PathBuf>> {
    let root = project_root
        .map(|root| {
            std::fs::canonicalize(root).with_context(|| {
                format!(
                    "invalid value `{}` for `--project-root`: expected an existing directory",
                    root.display()
                )
            })
        })
        .transpose()?;
    let mut dirs: BTreeSet<PathBuf> = crate::runs_index::read(env)
        .into_iter()
        .filter(|entry| root.as_ref().is_none_or(|root| entry.project_root == *root))
        .map(|entry| entry.run_dir)
        .collect();
    if let Some(root) = &root
        && root.join(".okstra").is_dir()
    {
        dirs.extend(crate::lifecycle::run_dirs(root)?);
    }
    Ok(dirs
        .into_iter()
        .filter(|dir| RunLayout::of(dir).run_manifest().is_file())
        .collect())
}

/// Every usage record of the run at `dir` dated on or after `since`:
/// (day, provider, record).
fn run_usage(dir: &Path, since: i64) -> Result<Vec<(String, String, Record)>> {
    let run = crate::run::Run::open(dir)?;
    let state = crate::run::team_state::read_raw(&run)?;
    let mut rows = Vec::new();
    let day_of = |at: i64| crate::clock::rfc3339(at)[..10].to_owned();
    for dispatch in state
        .get("dispatches")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(record) = dispatch
            .get("usage")
            .filter(|u| !u.is_null())
            .and_then(|u| serde_json::from_value::<Record>(u.clone()).ok())
        else {
            continue;
        };
        let at = ["startedAt", "endedAt"]
            .iter()
            .find_map(|key| dispatch.get(*key).and_then(Value::as_str))
            .and_then(crate::clock::parse_rfc3339);
        let Some(at) = at.filter(|at| *at >= since) else {
            continue;
        };
        if record.input_tokens.is_none() && record.cost_usd.is_none() {
            continue;
        }
        let provider = dispatch
            .get("provider")
            .and_then(Value::as_str)
            .or(record.provider.as_deref())
            .unwrap_or("unknown")
            .to_owned();
        rows.push((day_of(at), provider, record));
    }
    if let Some(lead) = state
        .pointer("/usageSummary/lead")
        .and_then(|u| serde_json::from_value::<Record>(u.clone()).ok())
        .filter(|lead| lead.input_tokens.is_some())
        && let Some(at) = crate::clock::parse_rfc3339(&run.created_at).filter(|at| *at >= since)
    {
        let provider = lead.provider.clone().unwrap_or_else(|| "lead".to_owned());
        rows.push((day_of(at), provider, lead));
    }
    Ok(rows)
}

/// The days as a table, then a line saying what was counted.
/// The document carries its version (`DAILY_VERSION`).
impl crate::output::Answer for Document<'_> {
    const SCHEMA: &'static str = "usage-daily-answer.schema.json";
    const VERSION: Option<u32> = None;
}

impl crate::output::Text for Document<'_> {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        out.write_all(table(self).as_bytes())
    }
}

fn table(document: &Document) -> String {
    let Document {
        since,
        runs,
        days,
        totals,
        ..
    } = document;
    let runs = *runs;
    let columns = [
        Column::fixed("DATE"),
        Column::fixed("PROVIDER"),
        Column::number("RUNS"),
        Column::number("INPUT"),
        Column::number("CACHE R"),
        Column::number("CACHE W"),
        Column::number("OUTPUT"),
        Column::number("COST"),
    ];
    let row = |date: &str, provider: &str, sum: &Sum| {
        vec![
            date.to_owned(),
            crate::fsread::escape(provider).into_owned(),
            sum.run_count.to_string(),
            crate::table::human(sum.input_tokens),
            crate::table::human(sum.cache_read_tokens),
            crate::table::human(sum.cache_write_tokens),
            crate::table::human(sum.output_tokens),
            Cost::new(Some(sum.cost_usd), sum.cost_partial).to_string(),
        ]
    };
    let mut rows: Vec<Vec<String>> = days
        .iter()
        .map(|day| row(day.date, day.provider, day.sum))
        .collect();
    rows.push(row("TOTAL", "", totals));
    let mut text = render(&columns, &rows, 0, None);
    let _ = writeln!(
        text,
        "{runs} run{} since {since} (UTC); `unpriced`: tokens with no price (OKSTRA_PRICES gives one)",
        if runs == 1 { "" } else { "s" }
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_is_a_duration_or_a_day() {
        let now = 1_764_590_400; // 2025-12-01T12:00:00Z
        assert_eq!(parse_since("7d", now).unwrap(), now - 7 * 86_400);
        assert_eq!(parse_since("24h", now).unwrap(), now - 86_400);
        assert_eq!(
            parse_since("2025-11-01", now).unwrap(),
            crate::clock::parse_rfc3339("2025-11-01T00:00:00Z").unwrap()
        );
        assert_eq!(
            parse_since("last week", now).unwrap_err().to_string(),
            "invalid value `last week` for `--since`: expected a duration like `7d` or `24h`, or a day like `2026-11-01`"
        );
    }

    #[test]
    fn sums_count_runs_once_and_mark_unpriced_costs() {
        let priced = |cost: Option<f64>| Record {
            source: super::super::Source::CliStream,
            provider: Some("claude".into()),
            model: Some("opus".into()),
            input_tokens: Some(10),
            cache_read_tokens: Some(5),
            cache_write_tokens: None,
            output_tokens: Some(2),
            reasoning_tokens: None,
            cost_usd: cost,
            cost_source: None,
            cost_partial: false,
            reason: None,
        };
        let mut sum = Sum::default();
        sum.add(Path::new("/r1"), &priced(Some(0.5)));
        sum.add(Path::new("/r1"), &priced(Some(0.25)));
        assert_eq!(
            (sum.run_count, sum.input_tokens, sum.cost_partial),
            (1, 20, false)
        );
        sum.add(Path::new("/r2"), &priced(None));
        assert_eq!((sum.run_count, sum.cost_partial), (2, true));
        assert!((sum.cost_usd - 0.75).abs() < 1e-9);
    }
}
