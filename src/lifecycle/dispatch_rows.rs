//! The status board's dispatch rows: the latest attempt of every dispatch
//! `okstra dispatch` recorded (initial, critic, reverify, retry), with its
//! state, and per dispatch kind whether all have ended. A running attempt's
//! usage is read live from its log.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::catalog::DispatchKind;
use crate::run::team_state::DispatchRecord;

/// One dispatch record's row: every attempt okstra dispatch made, initial,
/// critic, reverify and retry alike.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DispatchRow {
    pub dispatch_name: String,
    pub kind: String,
    pub attempt: u32,
    /// `held` (a gate holds it back), `running`, or its ending.
    pub state: String,
    pub terminal: bool,
    pub exit_code: Option<i64>,
    pub detail: Option<String>,
    /// Tokens and cost: recorded when the attempt ended, read live from
    /// its log while it runs.
    pub usage: Option<serde_json::Value>,
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

/// The rows of the latest attempts, and per kind whether all have ended
/// (a retry counts as the kind it retries).
pub fn dispatch_rows(records: &[DispatchRecord]) -> (Vec<DispatchRow>, BTreeMap<String, bool>) {
    let mut by_kind: BTreeMap<String, bool> = BTreeMap::new();
    let rows: Vec<DispatchRow> = records
        .iter()
        .map(|r| {
            let state = match (r.ending, &r.started_at) {
                (Some(ending), _) => ending.as_str().to_owned(),
                (None, None) => "held".to_owned(),
                (None, Some(_)) => "running".to_owned(),
            };
            let kind = if r.dispatch_kind == DispatchKind::Retry {
                DispatchKind::retried(&r.dispatch_name)
            } else {
                r.dispatch_kind.as_string()
            };
            let terminal = r.ending.is_some();
            let all = by_kind.entry(kind).or_insert(true);
            *all &= terminal;
            DispatchRow {
                dispatch_name: r.dispatch_name.clone(),
                kind: r.dispatch_kind.as_string(),
                attempt: r.attempt,
                state,
                terminal,
                exit_code: r.exit_code,
                detail: r.detail.clone(),
                usage: if terminal {
                    r.usage.clone()
                } else if r.started_at.is_some() {
                    live_usage(r)
                } else {
                    None
                },
            }
        })
        .collect();
    (rows, by_kind)
}
