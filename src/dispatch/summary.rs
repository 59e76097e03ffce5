//! The one summary `dispatch` and `await` print on stdout when they end: a
//! row per dispatch (name, kind, attempt, ending, exit code, Result Path),
//! as a table or, with `--json`, one JSON document.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use crate::catalog::Runner;
use crate::run::team_state::DispatchRecord;
use crate::vocab::{Ending, ReportStatus};

/// One dispatch's line in the summary.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    pub dispatch_name: String,
    pub kind: String,
    pub attempt: u32,
    pub runner: Runner,
    /// `None` while it has not ended (only when `await` timed out, or for a
    /// native worker the host was never handed).
    pub ending: Option<Ending>,
    /// Its ending's word once it ended; before that what `okstra status`
    /// calls it (`running`, `with-host`, `held` …), or `not started`.
    pub state: String,
    pub exit_code: Option<i64>,
    pub result_path: PathBuf,
    pub detail: Option<String>,
    /// The final report's `workerCoverage[].terminalStatus` for this ending.
    pub terminal_status: Option<ReportStatus>,
    /// The report's `failure.reason`, when it did not complete.
    pub failure_reason: Option<&'static str>,
}

impl Row {
    pub fn from_record(record: &DispatchRecord) -> Row {
        let (terminal_status, failure_reason) = record
            .ending
            .map(Ending::report_status)
            .map_or((None, None), |(status, reason)| (Some(status), reason));
        Row {
            terminal_status,
            failure_reason,
            dispatch_name: record.dispatch_name.clone(),
            kind: record.dispatch_kind.as_string(),
            attempt: record.attempt,
            runner: record.runner.unwrap_or(Runner::CliWrapper),
            ending: record.ending,
            state: match (record.ending, record.runner) {
                (Some(ending), _) => ending.as_str(),
                (None, Some(Runner::NativeSession)) => "with-host",
                (None, _) => "running",
            }
            .to_owned(),
            exit_code: record.exit_code,
            result_path: record.result_path.clone(),
            detail: record.detail.clone(),
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Document<'a> {
    schema_version: u32,
    all_completed: bool,
    dispatches: &'a [Row],
}

/// The rows as the answer: the `--json` document, or a table.
pub fn summary(rows: &[Row], json: bool) -> Result<crate::output::Reply> {
    let document = Document {
        schema_version: 1,
        all_completed: rows.iter().all(|r| r.ending == Some(Ending::Completed)),
        dispatches: rows,
    };
    crate::output::Reply::answer(&document, json)
}

/// The document carries its version.
impl crate::output::Answer for Document<'_> {
    const SCHEMA: &'static str = "dispatch-answer.schema.json";
    const VERSION: Option<u32> = None;
}

/// One row per dispatch: name, kind, attempt, state, exit code, and its
/// result (or why there is none).
impl crate::output::Text for Document<'_> {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let rows = self.dispatches;
        let width = rows
            .iter()
            .map(|r| r.dispatch_name.len())
            .max()
            .unwrap_or(8)
            .max(8);
        writeln!(
            out,
            "{:<width$}  {:<12} {:>7}  {:<12} {:>4}  RESULT",
            "DISPATCH", "KIND", "ATTEMPT", "ENDING", "EXIT"
        )?;
        for row in rows {
            writeln!(
                out,
                "{:<width$}  {:<12} {:>7}  {:<12} {:>4}  {}",
                row.dispatch_name,
                row.kind,
                row.attempt,
                row.state,
                row.exit_code.map_or_else(|| "-".into(), |c| c.to_string()),
                if row.ending == Some(Ending::Completed) {
                    row.result_path.display().to_string()
                } else {
                    crate::fsread::escape(row.detail.as_deref().unwrap_or("-")).into_owned()
                }
            )?;
        }
        Ok(())
    }
}
