//! A run's whole ledger: every attempt's usage (from its log, or from a
//! Claude transcript for `native-session` workers), each worker's, each
//! provider's, the lead's and the total, in the final report's
//! `usageSummary` shape, written into the team state.
//!
//! Attempts are the team state's `dispatches[]`; a run without any (a lead
//! that dispatched by hand) falls back to each assignment's attempt-1 log
//! (`prompts/<dispatch name>.log`). A worker's usage is the sum of every
//! attempt with its `workerId` (initial, retry, reverify). `byProvider` and
//! `totals` include the lead. The lead's usage comes from the transcripts of
//! the sessions recorded with `okstra event <run> session --field
//! sessionId=<id>`, else from a `lead-usage` event (totals the host showed),
//! else it is `unavailable` — or `not-applicable` for an `external` lead
//! (a headless `okstra run` is led by okstra itself: no model, no tokens),
//! which the totals leave out instead of becoming `partial`.
//!
//! One function, `summarise`, turns attempt records and the lead's record
//! into the summary. [`compute`] feeds it what it reads now (logs,
//! transcripts) and [`apply`] records those parts in the team state;
//! [`from_records`] feeds it the parts the team state recorded, and so gives
//! exactly the summary `compute` made. That is what the final report's
//! `usageSummary` is written from and checked against.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ids;
use super::price::Prices;
use super::session::{self, Ledger};
use super::tally::{Record, Tally};
use super::{ModelKey, Source, Tokens, Usage, lines, stream};
use crate::catalog::{LeadRuntime, Provider, Runner};
use crate::run::Run;

/// How complete the whole summary is (the report schema's `source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SummarySource {
    /// Every part read (okstras before 2026-12 wrote `team-state`).
    Complete,
    /// Some parts unavailable.
    Partial,
    /// Nothing read.
    Unavailable,
}

/// One worker's line in the summary.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerLine {
    pub worker_id: String,
    pub provider: String,
    pub attempts: usize,
    pub usage: Record,
}

/// The final report's `usageSummary`, exactly.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub lead: Record,
    pub workers: Vec<WorkerLine>,
    pub by_provider: BTreeMap<String, Record>,
    pub totals: Record,
    pub source: SummarySource,
    pub prices_as_of: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// What the run was estimated to take before it started
    /// (`state/estimate.json`), to show beside what it took.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimate: Option<super::estimated::Estimate>,
}

/// One attempt's usage, and where it goes in the team state.
#[derive(Debug, Clone)]
pub struct Attempt {
    /// Index in `dispatches[]`; `None` for the no-dispatch fallback.
    pub index: Option<usize>,
    pub dispatch_name: String,
    /// The 1-based attempt number.
    pub number: u64,
    pub worker_id: String,
    pub provider: String,
    pub tally: Tally,
}

/// Everything `okstra usage` computed.
#[derive(Debug, Clone)]
pub struct Computed {
    pub attempts: Vec<Attempt>,
    /// Per dispatch name of `workers` in the team state.
    pub workers: BTreeMap<String, Record>,
    pub summary: Summary,
}

/// A run as `okstra usage` needs it.
#[derive(Debug, Clone)]
pub struct RunInfo {
    pub run: Run,
    pub project_root: PathBuf,
    pub lead_runtime: Option<String>,
}

impl RunInfo {
    /// Load the run in `dir` (its manifest; paths re-rooted like `Run`'s).
    pub fn load(dir: &Path) -> Result<RunInfo> {
        let run = Run::open(dir)?;
        let project_root = run.project_root.clone();
        let lead_runtime = Some(run.lead_runtime.as_str().to_owned());
        Ok(RunInfo {
            run,
            project_root,
            lead_runtime,
        })
    }
}

/// What the lead events say about usage.
#[derive(Debug, Default)]
struct LeadEvents {
    lead_sessions: Vec<String>,
    /// (dispatch name, session or agent id).
    worker_sessions: Vec<(String, String)>,
    /// The last `lead-usage` event's fields.
    host_report: Option<BTreeMap<String, String>>,
    ignored: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct EventWire {
    kind: String,
    #[serde(default)]
    fields: BTreeMap<String, String>,
}

fn read_events(path: &Path) -> LeadEvents {
    let mut events = LeadEvents::default();
    let Ok(file) = lines::open_regular(path) else {
        return events;
    };
    let _ = lines::for_each_line(file, |line| {
        let Ok(event) = serde_json::from_slice::<EventWire>(line) else {
            return;
        };
        match event.kind.as_str() {
            "session" => {
                let Some(id) = event.fields.get("sessionId") else {
                    return;
                };
                if !ids::is_valid_id(id) {
                    events.ignored.push(format!(
                        "ignored session id `{id}`: expected letters, digits, `-` or `_`"
                    ));
                    return;
                }
                match event.fields.get("worker") {
                    Some(worker) => events.worker_sessions.push((worker.clone(), id.clone())),
                    None if !events.lead_sessions.contains(id) => {
                        events.lead_sessions.push(id.clone());
                    }
                    None => {}
                }
            }
            "lead-usage" => events.host_report = Some(event.fields),
            _ => {}
        }
    });
    events
}

/// A `lead-usage` event's fields as a usage record.
fn host_usage(fields: &BTreeMap<String, String>, provider: &str) -> Usage {
    let number = |key: &str| fields.get(key).and_then(|v| v.trim().parse::<u64>().ok());
    let (Some(input), Some(output)) = (number("inputTokens"), number("outputTokens")) else {
        return Usage::unavailable(
            provider,
            "the `lead-usage` event lacks numeric `inputTokens` and `outputTokens`",
        );
    };
    let tokens = Tokens {
        input,
        cache_read: number("cacheReadTokens").unwrap_or(0),
        cache_write: number("cacheWriteTokens").unwrap_or(0),
        cache_write_1h: 0,
        output,
        reasoning: number("reasoningTokens"),
    };
    let model = fields
        .get("model")
        .cloned()
        .unwrap_or_else(|| "unknown".to_owned());
    Usage {
        provider: fields
            .get("provider")
            .cloned()
            .unwrap_or_else(|| provider.to_owned()),
        source: Source::HostReport,
        reason: None,
        models: BTreeMap::from([(ModelKey::new(model), tokens)]),
        cli_cost_usd: None,
    }
}

/// The provider hosting a lead runtime, if okstra knows it.
fn lead_provider(runtime: Option<&str>) -> Option<&'static str> {
    let runtime: LeadRuntime = runtime?.parse().ok()?;
    runtime.host_provider().map(Provider::as_str)
}

/// Compute the ledger of `info`'s run from its `team_state`.
pub fn compute(
    info: &RunInfo,
    team_state: &Value,
    prices: &Prices,
    env: &dyn Fn(&str) -> Option<String>,
) -> Computed {
    let mut events = read_events(&info.run.lead_events_path);
    // A Claude Code lead running `okstra usage` itself has its session id
    // in the environment (Claude Code ≥ 2.1.132 sets it for Bash commands).
    if info.lead_runtime.as_deref() == Some("claude-code")
        && events.lead_sessions.is_empty()
        && let Some(id) = env("CLAUDE_CODE_SESSION_ID").filter(|id| ids::is_valid_id(id))
    {
        events.lead_sessions.push(id);
    }
    let mut warnings = events.ignored.clone();
    let transcripts = Transcripts::read(info, &events, env, &mut warnings);
    let attempts = attempts(info, team_state, prices, env, &transcripts);
    let mut lead = Tally::from_usage(&lead_usage(info, &events, &transcripts), prices);
    // Keep what was recorded before when nothing can be read now (a
    // transcript since deleted), as for an attempt.
    if lead.source() == Source::Unavailable
        && let Some(kept) =
            recorded(team_state.get("leadUsage")).filter(|r| r.source != Source::Unavailable)
    {
        lead = kept.to_tally();
    }
    // Pricing warnings are not part of a record: gather them here.
    for tally in attempts.iter().map(|a| &a.tally).chain([&lead]) {
        for warning in &tally.warnings {
            if !warnings.contains(warning) {
                warnings.push(warning.clone());
            }
        }
    }
    summarise(
        &info.run,
        team_state,
        attempts,
        lead.record(),
        prices.as_of.clone(),
        warnings,
    )
}

/// The summary of `run` from its team state alone: each attempt's recorded
/// `usage`, the recorded `leadUsage`, and the `pricesAsOf` and `warnings`
/// recorded with them. Nothing else is read. After [`compute`] and
/// [`apply`], this is exactly the summary `compute` returned; a part never
/// recorded is `unavailable` and says how to record it.
pub fn from_records(run: &Run, team_state: &Value) -> Summary {
    let unread = |provider: &str, what: &str| {
        Tally::without_numbers(&Usage::unavailable(
            provider,
            format!("okstra has not read {what} yet (`okstra usage <run-dir>` reads it)"),
        ))
    };
    let dispatches: &[Value] = team_state
        .get("dispatches")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let mut attempts = Vec::new();
    for (index, dispatch) in dispatches.iter().enumerate() {
        let provider = text(dispatch, "provider").unwrap_or_default();
        attempts.push(Attempt {
            index: Some(index),
            dispatch_name: text(dispatch, "dispatchName").unwrap_or_default(),
            number: dispatch.get("attempt").and_then(Value::as_u64).unwrap_or(1),
            worker_id: text(dispatch, "workerId").unwrap_or_default(),
            tally: recorded(dispatch.get("usage")).map_or_else(
                || unread(&provider, "this attempt's usage"),
                |r| r.to_tally(),
            ),
            provider,
        });
    }
    // Without dispatch records, `compute` read each assignment's first log
    // and `apply` recorded it as that worker's usage.
    if dispatches.is_empty() {
        for assignment in &run.assignments {
            let provider = assignment.provider.as_str();
            let usage = team_state
                .get("workers")
                .and_then(|workers| workers.get(&assignment.dispatch_name))
                .and_then(|worker| recorded(worker.get("usage")));
            attempts.push(Attempt {
                index: None,
                dispatch_name: assignment.dispatch_name.clone(),
                number: 1,
                worker_id: assignment.worker_id.clone(),
                provider: provider.to_owned(),
                tally: usage
                    .map_or_else(|| unread(provider, "this worker's usage"), |r| r.to_tally()),
            });
        }
    }
    let lead = recorded(team_state.get("leadUsage")).unwrap_or_else(|| {
        if run.lead_runtime == LeadRuntime::External {
            Tally::without_numbers(&no_lead_model()).record()
        } else {
            let provider = run
                .lead_runtime
                .host_provider()
                .map_or("lead", Provider::as_str);
            unread(provider, "the lead's usage").record()
        }
    });
    let summary = team_state.get("usageSummary");
    let prices_as_of = summary
        .and_then(|s| s.get("pricesAsOf"))
        .and_then(Value::as_str)
        .map_or_else(|| Prices::embedded().as_of, str::to_owned);
    let warnings = summary
        .and_then(|s| s.get("warnings"))
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    summarise(run, team_state, attempts, lead, prices_as_of, warnings).summary
}

/// A usage record as the team state keeps it, if `value` is one.
fn recorded(value: Option<&Value>) -> Option<Record> {
    value
        .filter(|v| v.is_object())
        .and_then(|v| Record::deserialize(v).ok())
}

/// The lead of an `external` run that reported no usage: no model to count.
fn no_lead_model() -> Usage {
    Usage::not_applicable(
        "lead",
        "an `external` run is led by a program (`okstra run` leads a headless run itself), not a model: there are no lead tokens to count; a model leading as `external` reports its own with `okstra event <run-dir> lead-usage …`",
    )
}

/// The Claude transcripts of the recorded sessions, read.
struct Transcripts {
    roots: Vec<PathBuf>,
    found: session::Found,
    ledger: Ledger,
    runtime: Option<String>,
}

impl Transcripts {
    fn read(
        info: &RunInfo,
        events: &LeadEvents,
        env: &dyn Fn(&str) -> Option<String>,
        warnings: &mut Vec<String>,
    ) -> Transcripts {
        let roots = session::projects_roots(env);
        let found = session::find(
            &roots,
            &info.project_root,
            &events.lead_sessions,
            &events.worker_sessions,
        );
        let mut ledger = Ledger::default();
        for (owner, file) in &found.files {
            if let Err(err) = ledger.read(owner, file) {
                warnings.push(format!(
                    "cannot read transcript `{}`: {err}",
                    file.display()
                ));
            }
        }
        if ledger.skipped_lines > 0 {
            warnings.push(format!(
                "skipped {} transcript lines longer than {} MiB",
                ledger.skipped_lines,
                lines::MAX_LINE >> 20
            ));
        }
        Transcripts {
            roots,
            found,
            ledger,
            runtime: info.lead_runtime.clone(),
        }
    }

    /// A `native-session` worker's usage, or why there is none.
    fn native(&self, name: &str, provider: &str) -> Usage {
        let owner = Some(name.to_owned());
        if let Some(usage) = self.ledger.usage(&owner) {
            return usage;
        }
        let reason = match self.runtime.as_deref() {
            _ if self.found.missing.iter().any(|(o, _)| o == &owner) => {
                "its recorded session has no transcript under the Claude projects folder".to_owned()
            }
            Some(runtime) if runtime != "claude-code" => {
                format!("okstra cannot read the native sub-sessions of a `{runtime}` lead")
            }
            _ => format!(
                "no session recorded for `{name}` (`okstra event <run> session --field worker={name} --field sessionId=<id>`)"
            ),
        };
        Usage::unavailable(provider, reason)
    }
}

fn text(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// Every attempt's usage: the team state's dispatch records, else each
/// assignment's attempt-1 log.
fn attempts(
    info: &RunInfo,
    team_state: &Value,
    prices: &Prices,
    env: &dyn Fn(&str) -> Option<String>,
    transcripts: &Transcripts,
) -> Vec<Attempt> {
    let run = &info.run;
    let dispatches: &[Value] = team_state
        .get("dispatches")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let mut attempts = Vec::new();
    for (index, dispatch) in dispatches.iter().enumerate() {
        let name = text(dispatch, "dispatchName").unwrap_or_default();
        let provider_name = text(dispatch, "provider").unwrap_or_default();
        let usage = match provider_name.parse::<Provider>() {
            _ if text(dispatch, "runner").as_deref() == Some(Runner::NativeSession.as_str()) => {
                transcripts.native(&name, &provider_name)
            }
            Ok(provider) => match text(dispatch, "logPath") {
                // A record is a file anyone can edit: its log must be in the run.
                Some(log) => match run
                    .confine(Path::new(&log), "`logPath`")
                    .and_then(|log| crate::confine::inside_no_links(&log, &run.dir, "`logPath`"))
                {
                    Ok(log) => {
                        stream::from_log_in(provider, text(dispatch, "model").as_deref(), &log, env)
                    }
                    Err(err) => Usage::unavailable(&provider_name, err.to_string()),
                },
                None => Usage::unavailable(&provider_name, "the dispatch record has no `logPath`"),
            },
            Err(_) => Usage::unavailable(
                &provider_name,
                format!("the dispatch record names no known provider (`{provider_name}`)"),
            ),
        };
        let mut tally = Tally::from_usage(&usage, prices);
        // Keep what was recorded before when nothing better can be read now
        // (a log since deleted).
        if usage.source == Source::Unavailable
            && let Some(kept) = dispatch
                .get("usage")
                .and_then(|u| Record::deserialize(u).ok())
                .filter(|r| r.source != Source::Unavailable)
        {
            tally = kept.to_tally();
        }
        attempts.push(Attempt {
            index: Some(index),
            dispatch_name: name,
            number: dispatch.get("attempt").and_then(Value::as_u64).unwrap_or(1),
            worker_id: text(dispatch, "workerId").unwrap_or_default(),
            provider: provider_name,
            tally,
        });
    }
    if !dispatches.is_empty() {
        return attempts;
    }
    for assignment in &run.assignments {
        let usage = if assignment.runner == Runner::NativeSession {
            transcripts.native(&assignment.dispatch_name, assignment.provider.as_str())
        } else {
            let log = crate::run::layout::log(&assignment.paths.prompt_path);
            stream::from_log_in(
                assignment.provider,
                Some(&assignment.model_execution_value),
                &log,
                env,
            )
        };
        attempts.push(Attempt {
            index: None,
            dispatch_name: assignment.dispatch_name.clone(),
            number: 1,
            worker_id: assignment.worker_id.clone(),
            provider: assignment.provider.as_str().to_owned(),
            tally: Tally::from_usage(&usage, prices),
        });
    }
    attempts
}

/// The lead's usage: its recorded Claude sessions, else the totals its host
/// showed it, else unavailable with what to record.
fn lead_usage(info: &RunInfo, events: &LeadEvents, transcripts: &Transcripts) -> Usage {
    let runtime = info.lead_runtime.as_deref();
    let provider = lead_provider(runtime).unwrap_or("lead");
    if !events.lead_sessions.is_empty() {
        return transcripts.ledger.usage(&None).unwrap_or_else(|| {
            let roots: Vec<String> = transcripts
                .roots
                .iter()
                .map(|r| format!("`{}`", r.display()))
                .collect();
            Usage::unavailable(
                "claude",
                format!(
                    "no transcript found for the recorded session ids ({}) under {}",
                    events.lead_sessions.join(", "),
                    roots.join(", ")
                ),
            )
        });
    }
    if let Some(fields) = &events.host_report {
        return host_usage(fields, provider);
    }
    if info.run.lead_runtime == LeadRuntime::External {
        return no_lead_model();
    }
    let reason = if runtime == Some("claude-code") {
        "no lead session recorded (`okstra event <run> session --field sessionId=<id>`)"
    } else {
        "no lead usage recorded (`okstra event <run> lead-usage --field inputTokens=<n> --field outputTokens=<n> …`)"
    };
    Usage::unavailable(provider, reason)
}

/// Sum the attempts per worker and per provider, add the lead (unless no
/// model led), and build the summary: the one place a summary is made.
/// Every part is taken through its wire form first, exactly as the team
/// state records it, so the same records always give the same summary.
fn summarise(
    run: &Run,
    team_state: &Value,
    attempts: Vec<Attempt>,
    lead: Record,
    prices_as_of: String,
    warnings: Vec<String>,
) -> Computed {
    // Workers in roster order: the assignments, then any other worker the
    // team state or a dispatch names. (dispatch name, workerId, provider)
    let mut roster: Vec<(String, String, String)> = run
        .assignments
        .iter()
        .map(|a| {
            (
                a.dispatch_name.clone(),
                a.worker_id.clone(),
                a.provider.as_str().to_owned(),
            )
        })
        .collect();
    if let Some(workers) = team_state.get("workers").and_then(Value::as_object) {
        for (name, worker) in workers {
            if !roster.iter().any(|(n, _, _)| n == name) {
                roster.push((
                    name.clone(),
                    text(worker, "workerId").unwrap_or_else(|| name.clone()),
                    text(worker, "provider").unwrap_or_default(),
                ));
            }
        }
    }
    for attempt in &attempts {
        if !roster.iter().any(|(_, id, _)| id == &attempt.worker_id) {
            roster.push((
                attempt.dispatch_name.clone(),
                attempt.worker_id.clone(),
                attempt.provider.clone(),
            ));
        }
    }
    let parts: Vec<Tally> = attempts
        .iter()
        .map(|a| a.tally.record().to_tally())
        .collect();
    let mut worker_lines: Vec<WorkerLine> = Vec::new();
    let mut worker_records: BTreeMap<String, Record> = BTreeMap::new();
    for (name, worker_id, provider) in &roster {
        let mine: Vec<&Tally> = attempts
            .iter()
            .zip(&parts)
            .filter(|(a, _)| &a.worker_id == worker_id)
            .map(|(_, part)| part)
            .collect();
        let record = if mine.is_empty() {
            Tally::without_numbers(&Usage::unavailable(provider, "not dispatched")).record()
        } else {
            let mut sum = Tally::default();
            for part in &mine {
                sum.add(part);
            }
            sum.record()
        };
        worker_records.insert(name.clone(), record.clone());
        if !worker_lines.iter().any(|l| &l.worker_id == worker_id) {
            worker_lines.push(WorkerLine {
                worker_id: worker_id.clone(),
                provider: provider.clone(),
                attempts: mine.len(),
                usage: record,
            });
        }
    }

    // Providers and totals, the lead included when a model led.
    let mut by_provider: BTreeMap<String, Tally> = BTreeMap::new();
    let mut totals = Tally::default();
    for (attempt, part) in attempts.iter().zip(&parts) {
        by_provider
            .entry(attempt.provider.clone())
            .or_default()
            .add(part);
        totals.add(part);
    }
    if lead.source != Source::NotApplicable {
        let part = lead.to_tally();
        if let Some(provider) = run.lead_runtime.host_provider() {
            by_provider
                .entry(provider.as_str().to_owned())
                .or_default()
                .add(&part);
        }
        totals.add(&part);
    }
    let totals = totals.record();
    let source = match totals.source {
        Source::Unavailable | Source::NotApplicable => SummarySource::Unavailable,
        Source::Partial => SummarySource::Partial,
        _ => SummarySource::Complete,
    };
    Computed {
        attempts,
        workers: worker_records,
        summary: Summary {
            lead,
            workers: worker_lines,
            by_provider: by_provider
                .into_iter()
                .map(|(provider, tally)| (provider, tally.record()))
                .collect(),
            totals,
            source,
            prices_as_of,
            warnings,
            estimate: super::estimated::read_estimate(run),
        },
    }
}

/// Write `computed` into the team state value.
pub fn apply(team_state: &mut Value, computed: &Computed) -> Result<()> {
    let to_value = |r: &Record| serde_json::to_value(r).context("cannot serialise a usage record");
    if let Some(dispatches) = team_state
        .get_mut("dispatches")
        .and_then(Value::as_array_mut)
    {
        for attempt in &computed.attempts {
            if let Some(slot) = attempt.index.and_then(|i| dispatches.get_mut(i))
                && let Some(object) = slot.as_object_mut()
            {
                object.insert("usage".into(), to_value(&attempt.tally.record())?);
            }
        }
    }
    if let Some(workers) = team_state.get_mut("workers").and_then(Value::as_object_mut) {
        for (name, record) in &computed.workers {
            if let Some(worker) = workers.get_mut(name).and_then(Value::as_object_mut) {
                worker.insert("usage".into(), to_value(record)?);
            }
        }
    }
    if let Some(object) = team_state.as_object_mut() {
        object.insert("leadUsage".into(), to_value(&computed.summary.lead)?);
        object.insert(
            "usageSummary".into(),
            serde_json::to_value(&computed.summary).context("cannot serialise the summary")?,
        );
    }
    Ok(())
}

#[cfg(test)]
#[path = "ledger_tests.rs"]
mod tests;
