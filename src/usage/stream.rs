//! The CLIs' stream output → one normalised [`Usage`] per attempt.
//!
//! A [`Meter`] is fed the log's lines as they arrive and can be asked for the
//! running total at any time; [`from_log`] streams a finished log through
//! one. The meter reads the usage events each CLI's decoder
//! (`crate::providers`) finds, never the JSON: a final report is
//! authoritative, per-step reports would double-count if added to it, and a
//! cumulative one replaces the one before. What each CLI reports
//! (research/provider-clis.md §6 and research/usage.md):
//!
//! | CLI | final | per step (used only until the final arrives) |
//! |---|---|---|
//! | claude `stream-json` | `result`: `modelUsage` per model (else `usage`), `total_cost_usd` | `assistant` `message.usage`, deduplicated by message id |
//! | codex `exec --json` | `turn.completed.usage`, thread-cumulative: the latest per thread | — |
//! | antigravity / gemini `stream-json` | `result.stats` (`models` per model) | — |
//! | Grok Build `streaming-json` | `end`: `usage`, `modelUsage`, `total_cost_usd` | `usage` per response |
//! | kimi `stream-json`, vibe-kit `grok` | none: `unavailable` | — |
//!
//! A log with per-step lines but no final one (the attempt still runs, or
//! was stopped — Ctrl-C, `okstra cancel` — before its CLI printed it) is
//! counted from those lines and marked `partial`: a lower bound.
//!
//! Lines that are not JSON objects (the CLI's stderr is merged into the log)
//! are ignored. Memory is bounded by the number of distinct message ids.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use super::lines;
use super::{ModelKey, Source, Tokens, Usage};
use crate::providers::{self, Event, Line, ModelTokens, Provider, Scope, UsageReport};

/// Per-model tokens plus the CLI's own cost: what a final line says.
#[derive(Debug, Default, Clone)]
struct Final {
    models: BTreeMap<ModelKey, Tokens>,
    cost_usd: Option<f64>,
    /// Some final line carried no cost: the CLI's cost is not the whole.
    cost_missing: bool,
}

impl Final {
    fn add(&mut self, model: ModelKey, tokens: &Tokens) {
        self.models.entry(model).or_default().add(tokens);
    }

    fn add_cost(&mut self, cost: Option<f64>) {
        match cost {
            Some(cost) => self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + cost),
            None => self.cost_missing = true,
        }
    }
}

/// The running usage of one attempt, fed line by line.
#[derive(Debug, Clone)]
pub struct Meter {
    provider: Provider,
    model_hint: Option<String>,
    /// The model the stream's first line named (claude `init`, gemini `init`).
    stream_model: Option<String>,
    /// Sum of the final lines seen (claude `result`, gemini `result`, grok `end`).
    finals: Option<Final>,
    /// Per-step usage by message id, used until a final line arrives.
    steps: HashMap<String, (ModelKey, Tokens)>,
    /// The latest cumulative usage per session (codex: per thread).
    threads: BTreeMap<String, Tokens>,
    current_thread: String,
    /// Why a final line said its usage is unknown (Grok's all-zero `end`).
    unknown_final: Option<String>,
    /// The session whose log holds the usage, for a CLI that keeps it
    /// there ([`crate::providers::Descriptor::session_log`]).
    logged_session: Option<String>,
}

impl Meter {
    /// A meter for `provider`'s stream output.
    pub fn new(provider: Provider) -> Meter {
        Meter {
            provider,
            model_hint: None,
            stream_model: None,
            finals: None,
            steps: HashMap::new(),
            threads: BTreeMap::new(),
            current_thread: String::new(),
            unknown_final: None,
            logged_session: None,
        }
    }

    /// The model to name when the stream names none (the dispatch's model).
    #[must_use]
    pub fn with_model(mut self, model: Option<&str>) -> Meter {
        self.model_hint = model.filter(|m| !m.is_empty()).map(str::to_owned);
        self
    }

    /// The session id a CLI whose usage is in its session log printed, if
    /// any.
    pub fn logged_session(&self) -> Option<&str> {
        self.logged_session.as_deref()
    }

    fn model(&self) -> ModelKey {
        ModelKey::new(
            self.stream_model
                .clone()
                .filter(|m| m != "auto")
                .or_else(|| self.model_hint.clone())
                .unwrap_or_else(|| "unknown".to_owned()),
        )
    }

    /// Feed one line of the log (without or with its newline).
    pub fn feed_line(&mut self, line: &[u8]) {
        let Ok(line) = std::str::from_utf8(line) else {
            return;
        };
        let Line::Events(events) = providers::decode(self.provider, line) else {
            return;
        };
        for event in events {
            self.feed(event);
        }
    }

    fn feed(&mut self, event: Event) {
        match event {
            Event::Started { session, model } => {
                self.stream_model = model;
                self.current_thread = session.unwrap_or_default();
            }
            // A CLI whose usage is in its session log names the session.
            Event::SessionId(session) if self.provider.descriptor().session_log.is_some() => {
                self.logged_session = Some(session);
            }
            Event::UsageUnknown(reason) => self.unknown_final = Some(reason),
            Event::Usage(report) => self.feed_usage(report),
            _ => {}
        }
    }

    fn key(&self, model: &ModelTokens) -> ModelKey {
        match &model.model {
            Some(id) => ModelKey {
                id: id.clone(),
                fast: model.fast,
            },
            None => ModelKey {
                fast: model.fast,
                ..self.model()
            },
        }
    }

    fn feed_usage(&mut self, report: UsageReport) {
        match report.scope {
            Scope::Step { id } => {
                for model in &report.models {
                    let id = id
                        .clone()
                        .unwrap_or_else(|| format!("#{}", self.steps.len()));
                    let key = self.key(model);
                    keep_largest(&mut self.steps, id, key, model.tokens);
                }
            }
            Scope::Cumulative => {
                let mut tokens = Tokens::default();
                for model in &report.models {
                    tokens.add(&model.tokens);
                }
                // The latest snapshot replaces the last.
                self.threads.insert(self.current_thread.clone(), tokens);
            }
            Scope::Final => {
                let keys: Vec<ModelKey> = report.models.iter().map(|m| self.key(m)).collect();
                let finals = self.finals.get_or_insert_with(Final::default);
                for (key, model) in keys.into_iter().zip(&report.models) {
                    finals.add(key, &model.tokens);
                }
                finals.add_cost(report.cost_usd);
            }
        }
    }

    /// The usage so far: the final lines' when one arrived, else the sum of
    /// per-step usage, else `unavailable` with the reason.
    pub fn snapshot(&self) -> Usage {
        let provider = self.provider.as_str();
        let available = |models: BTreeMap<ModelKey, Tokens>, cost, reason: Option<&str>| Usage {
            provider: provider.to_owned(),
            source: Source::CliStream,
            reason: reason.map(str::to_owned),
            models,
            cli_cost_usd: cost,
        };
        if let Some(finals) = &self.finals {
            let cost = finals.cost_usd.filter(|_| !finals.cost_missing);
            return available(finals.models.clone(), cost, None);
        }
        if !self.threads.is_empty() {
            let mut tokens = Tokens::default();
            for usage in self.threads.values() {
                tokens.add(usage);
            }
            return available(BTreeMap::from([(self.model(), tokens)]), None, None);
        }
        if !self.steps.is_empty() {
            let mut models: BTreeMap<ModelKey, Tokens> = BTreeMap::new();
            for (model, tokens) in self.steps.values() {
                models.entry(model.clone()).or_default().add(tokens);
            }
            // Without the CLI's final line (it still runs, or was stopped
            // before it printed one) the per-step lines are a lower bound.
            let reason = "no final usage line: summed from per-step usage (a lower bound)";
            return Usage {
                source: Source::Partial,
                ..available(models, None, Some(reason))
            };
        }
        let reason = self
            .unknown_final
            .clone()
            .unwrap_or_else(|| self.provider.descriptor().usage_missing.to_owned());
        Usage::unavailable(provider, reason)
    }
}

/// Keep, per message id, the usage with the most tokens (a repeated message
/// carries a placeholder output count first and the final one last).
fn keep_largest(
    steps: &mut HashMap<String, (ModelKey, Tokens)>,
    id: String,
    model: ModelKey,
    tokens: Tokens,
) {
    match steps.get_mut(&id) {
        Some(kept) if kept.1.total() >= tokens.total() => {}
        Some(kept) => *kept = (model, tokens),
        None => {
            steps.insert(id, (model, tokens));
        }
    }
}

/// The usage in a finished attempt's log, streamed in bounded memory.
/// `model` is the dispatch's model, named when the stream names none. For
/// a CLI whose stream has none, the session log the stream names is read
/// (in the CLI's state folder).
pub fn from_log(provider: Provider, model: Option<&str>, log: &Path) -> Usage {
    from_log_in(provider, model, log, &|name| std::env::var(name).ok())
}

/// [`from_log`] in the environment `env`.
pub fn from_log_in(
    provider: Provider,
    model: Option<&str>,
    log: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Usage {
    let meter = match meter_log(provider, model, log) {
        Ok(meter) => meter,
        Err(unavailable) => return unavailable,
    };
    if let Some(session) = meter.logged_session()
        && let Some(state) = super::session_log::state_folder(provider, env)
        && let Some(usage) = super::session_log::usage(provider, &state, session, model)
    {
        return usage;
    }
    meter.snapshot()
}

/// A meter fed a whole log; `Err` is the unavailable record saying why the
/// log could not be read.
pub fn meter_log(provider: Provider, model: Option<&str>, log: &Path) -> Result<Meter, Usage> {
    let unreadable = |err: std::io::Error| {
        let reason = if err.kind() == std::io::ErrorKind::NotFound {
            format!("log `{}` does not exist", log.display())
        } else {
            format!("cannot read log `{}`: {err}", log.display())
        };
        Usage::unavailable(provider.as_str(), reason)
    };
    let file = lines::open_regular(log).map_err(unreadable)?;
    let mut meter = Meter::new(provider).with_model(model);
    lines::for_each_line(file, |line| meter.feed_line(line)).map_err(unreadable)?;
    Ok(meter)
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
