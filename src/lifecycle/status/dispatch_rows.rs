//! The status board's dispatch rows: every attempt of every dispatch okstra
//! recorded (initial, critic, reverify, retry, the report writer's repair),
//! with the state the board derives for it — its ending once it has one —
//! and per dispatch kind whether all have ended. A running attempt's usage is
//! read live from its log.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::classify::Verdict;
use crate::catalog::{DispatchKind, Runner};
use crate::run::team_state::DispatchRecord;

/// One dispatch record's row: every attempt okstra dispatch made, initial,
/// critic, reverify and retry alike.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DispatchRow {
    pub dispatch_name: String,
    pub kind: String,
    pub attempt: u32,
    /// Its ending once it has one; before that `queued`, `held` (a gate
    /// holds it back), `with-host` (a native attempt the host has not
    /// answered), `running`, `stale`, `blocked`, or `lost` (nothing of it
    /// runs and no ending was recorded: `okstra await` records one).
    pub state: String,
    /// Whether the state is terminal (an ending, or `lost`).
    pub terminal: bool,
    pub exit_code: Option<i64>,
    pub detail: Option<String>,
    /// Tokens and cost: recorded when the attempt ended, read live from
    /// its log while it runs.
    pub usage: Option<serde_json::Value>,
    /// Whether this is its dispatch's latest attempt (the highest number).
    pub latest: bool,
    pub runner: Option<&'static str>,
    /// RFC 3339, as recorded.
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
}

/// The usage of an attempt still running, read from its log so far.
fn live_usage(record: &DispatchRecord) -> Option<serde_json::Value> {
    // Loaded once per process: a project board may show many running attempts.
    static PRICES: std::sync::OnceLock<Option<crate::usage::Prices>> = std::sync::OnceLock::new();
    let provider = record.provider?;
    let log = record.log_path.as_deref()?;
    let prices = PRICES
        .get_or_init(|| crate::usage::Prices::load(&|name| std::env::var(name).ok()).ok())
        .as_ref()?;
    let usage = crate::usage::from_log(provider, record.model.as_deref(), log).priced(prices);
    serde_json::to_value(usage).ok()
}

/// The rows of every attempt in `records` (in recorded order), each with
/// the state its verdict gives (`verdicts[i]` is `records[i]`'s, the same
/// derivation a worker's row uses), and per kind whether the latest attempt
/// of every dispatch of it is terminal (a retry counts as the kind it
/// retries).
pub fn dispatch_rows(
    records: &[DispatchRecord],
    verdicts: &[Verdict],
) -> (Vec<DispatchRow>, BTreeMap<String, bool>) {
    // The latest attempt of each dispatch: the highest attempt number, as
    // `TeamState::latest` defines it.
    let mut latest: HashMap<&str, u32> = HashMap::new();
    for record in records {
        let slot = latest.entry(record.dispatch_name.as_str()).or_insert(0);
        *slot = (*slot).max(record.attempt);
    }
    let mut by_kind: BTreeMap<String, bool> = BTreeMap::new();
    let rows: Vec<DispatchRow> = records
        .iter()
        .zip(verdicts)
        .map(|(r, verdict)| {
            let is_latest = latest.get(r.dispatch_name.as_str()) == Some(&r.attempt);
            let terminal = verdict.state.is_terminal();
            if is_latest {
                let kind = if r.dispatch_kind == DispatchKind::Retry {
                    DispatchKind::retried(&r.dispatch_name)
                } else {
                    r.dispatch_kind.as_string()
                };
                let all = by_kind.entry(kind).or_insert(true);
                *all &= terminal;
            }
            let detail = match &r.detail {
                Some(detail) if r.ending.is_some() || verdict.reason.is_empty() => {
                    Some(detail.clone())
                }
                _ if verdict.reason.is_empty() => None,
                _ => Some(verdict.reason.to_string()),
            };
            DispatchRow {
                dispatch_name: r.dispatch_name.clone(),
                kind: r.dispatch_kind.as_string(),
                attempt: r.attempt,
                state: verdict.state.as_str().to_owned(),
                terminal,
                exit_code: r.exit_code,
                detail,
                usage: if r.ending.is_some() {
                    r.usage.clone()
                } else if r.started_at.is_some() && r.runner != Some(Runner::NativeSession) {
                    live_usage(r)
                } else {
                    None
                },
                latest: is_latest,
                runner: r.runner.map(Runner::as_str),
                started_at: r.started_at.clone(),
                ended_at: r.ended_at.clone(),
            }
        })
        .collect();
    (rows, by_kind)
}
