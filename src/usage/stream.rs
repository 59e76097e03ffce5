//! The CLIs' stream output → one normalised [`Usage`] per attempt.
//!
//! A [`Meter`] is fed the log's lines as they arrive and can be asked for the
//! running total at any time; [`from_log`] streams a finished log through
//! one. Each CLI reports differently (research/provider-clis.md §6 and
//! research/usage.md), and each has a final line that is authoritative and
//! per-step lines that would double-count if added to it:
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

use serde::Deserialize;

use super::lines;
use super::{ModelKey, Source, Tokens, Usage};
use crate::catalog::Provider;

/// Claude's `usage` object (stream-json and session JSONL alike).
#[derive(Debug, Default, Deserialize)]
pub struct ClaudeUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    cache_creation: Option<CacheCreation>,
    output_tokens_details: Option<OutputDetails>,
    pub speed: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct CacheCreation {
    #[serde(default)]
    ephemeral_5m_input_tokens: u64,
    #[serde(default)]
    ephemeral_1h_input_tokens: u64,
}

#[derive(Debug, Default, Deserialize)]
struct OutputDetails {
    thinking_tokens: Option<u64>,
}

impl ClaudeUsage {
    /// Claude's buckets are already disjoint; the 5m/1h breakdown, when
    /// present, replaces the plain cache-creation count (never added to it).
    pub fn tokens(&self) -> Tokens {
        let (cache_write, cache_write_1h) = match &self.cache_creation {
            Some(split)
                if split.ephemeral_5m_input_tokens + split.ephemeral_1h_input_tokens > 0 =>
            {
                (
                    split.ephemeral_5m_input_tokens + split.ephemeral_1h_input_tokens,
                    split.ephemeral_1h_input_tokens,
                )
            }
            _ => (self.cache_creation_input_tokens, 0),
        };
        Tokens {
            input: self.input_tokens,
            cache_read: self.cache_read_input_tokens,
            cache_write,
            cache_write_1h,
            output: self.output_tokens,
            reasoning: self
                .output_tokens_details
                .as_ref()
                .and_then(|d| d.thinking_tokens),
        }
    }

    pub fn is_fast(&self) -> bool {
        self.speed.as_deref() == Some("fast")
    }
}

/// One entry of claude's or Grok Build's `modelUsage` (camelCase).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[expect(
    clippy::struct_field_names,
    reason = "the names are the CLI's wire format"
)]
struct ModelUsageWire {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: u64,
}

impl ModelUsageWire {
    fn tokens(&self) -> Tokens {
        Tokens {
            input: self.input_tokens,
            cache_read: self.cache_read_input_tokens,
            cache_write: self.cache_creation_input_tokens,
            output: self.output_tokens,
            ..Tokens::default()
        }
    }
}

/// The fields of any CLI's line that carry usage, read in one pass.
#[derive(Debug, Default, Deserialize)]
struct LineWire {
    #[serde(rename = "type")]
    kind: Option<String>,
    subtype: Option<String>,
    model: Option<String>,
    message: Option<MessageWire>,
    usage: Option<serde_json::Value>,
    #[serde(rename = "modelUsage")]
    model_usage: Option<BTreeMap<String, ModelUsageWire>>,
    total_cost_usd: Option<f64>,
    thread_id: Option<String>,
    stats: Option<GeminiStats>,
    #[serde(rename = "messageId")]
    message_id: Option<String>,
    usage_is_incomplete: Option<bool>,
    session_id: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct MessageWire {
    id: Option<String>,
    model: Option<String>,
    usage: Option<ClaudeUsage>,
}

/// codex `turn.completed.usage`: `input_tokens` includes the cached ones.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[expect(
    clippy::struct_field_names,
    reason = "the names are the CLI's wire format"
)]
struct CodexUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    cached_input_tokens: u64,
    #[serde(default)]
    cache_write_input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    reasoning_output_tokens: Option<u64>,
}

impl CodexUsage {
    fn tokens(&self) -> Tokens {
        Tokens {
            input: self
                .input_tokens
                .saturating_sub(self.cached_input_tokens)
                .saturating_sub(self.cache_write_input_tokens),
            cache_read: self.cached_input_tokens,
            cache_write: self.cache_write_input_tokens,
            cache_write_1h: 0,
            output: self.output_tokens,
            reasoning: self.reasoning_output_tokens,
        }
    }
}

/// gemini / antigravity `result.stats` (or one entry of its `models`).
#[derive(Debug, Default, Deserialize)]
struct GeminiStats {
    total_tokens: Option<u64>,
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    cached: Option<u64>,
    input: Option<u64>,
    /// antigravity's name: cache reads apart from an uncached `input_tokens`.
    cache_read_tokens: Option<u64>,
    models: Option<BTreeMap<String, GeminiStats>>,
}

impl GeminiStats {
    /// gemini: `input_tokens` is the whole prompt, `cached` its cache hits,
    /// `output_tokens` excludes thinking, which only `total_tokens` shows
    /// (with tool-use prompt tokens, a small over-count) and which is billed
    /// as output. antigravity: `input_tokens` is uncached, `cache_read_tokens`
    /// apart, and thinking is not reported.
    fn tokens(&self) -> Tokens {
        if let Some(cache_read) = self.cache_read_tokens {
            return Tokens {
                input: self.input_tokens,
                cache_read,
                output: self.output_tokens,
                ..Tokens::default()
            };
        }
        let cached = self.cached.unwrap_or(0);
        let thoughts = self.total_tokens.map(|total| {
            total
                .saturating_sub(self.input_tokens)
                .saturating_sub(self.output_tokens)
        });
        Tokens {
            input: self
                .input
                .unwrap_or_else(|| self.input_tokens.saturating_sub(cached)),
            cache_read: cached,
            cache_write: 0,
            cache_write_1h: 0,
            output: self.output_tokens.saturating_add(thoughts.unwrap_or(0)),
            reasoning: thoughts,
        }
    }
}

/// Grok Build's `usage` object (on `usage` and `end` lines).
#[derive(Debug, Default, Deserialize)]
#[expect(
    clippy::struct_field_names,
    reason = "the names are the CLI's wire format"
)]
struct GrokUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    reasoning_tokens: Option<u64>,
}

impl GrokUsage {
    /// `input_tokens` is uncached only; reasoning is inside output.
    fn tokens(&self) -> Tokens {
        Tokens {
            input: self.input_tokens,
            cache_read: self.cache_read_input_tokens,
            cache_write: self.cache_creation_input_tokens,
            cache_write_1h: 0,
            output: self.output_tokens,
            reasoning: self.reasoning_tokens,
        }
    }
}

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
    /// codex: the latest cumulative usage per thread.
    threads: BTreeMap<String, CodexUsage>,
    current_thread: String,
    /// A final line said its usage is unknown (Grok's all-zero `end`).
    unknown_final: bool,
    kimi_session: Option<String>,
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
            unknown_final: false,
            kimi_session: None,
        }
    }

    /// The model to name when the stream names none (the dispatch's model).
    #[must_use]
    pub fn with_model(mut self, model: Option<&str>) -> Meter {
        self.model_hint = model.filter(|m| !m.is_empty()).map(str::to_owned);
        self
    }

    /// The session id kimi printed on its last line, if any.
    pub fn kimi_session(&self) -> Option<&str> {
        self.kimi_session.as_deref()
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
        let line = line.trim_ascii();
        if line.first() != Some(&b'{') {
            return;
        }
        let Ok(wire) = serde_json::from_slice::<LineWire>(line) else {
            return;
        };
        match self.provider {
            Provider::Claude => self.feed_claude(wire),
            Provider::Codex => self.feed_codex(wire),
            Provider::Antigravity => self.feed_gemini(wire),
            Provider::Grok => self.feed_grok(wire),
            Provider::Kimi => {
                // kimi prints no usage; its last line names the session.
                if wire.kind.as_deref() == Some("session.resume_hint") {
                    self.kimi_session = wire.session_id;
                }
            }
        }
    }

    fn feed_claude(&mut self, wire: LineWire) {
        match wire.kind.as_deref() {
            Some("system") if wire.subtype.as_deref() == Some("init") => {
                self.stream_model = wire.model;
            }
            Some("assistant") => {
                let Some(message) = wire.message else { return };
                let (Some(id), Some(usage)) = (message.id, message.usage) else {
                    return;
                };
                let model = message.model.unwrap_or_else(|| self.model().id);
                if model == "<synthetic>" {
                    return;
                }
                let key = ModelKey {
                    id: model,
                    fast: usage.is_fast(),
                };
                keep_largest(&mut self.steps, id, key, usage.tokens());
            }
            Some("result") => {
                let usage: ClaudeUsage = wire
                    .usage
                    .and_then(|u| serde_json::from_value(u).ok())
                    .unwrap_or_default();
                let whole = usage.tokens();
                let fallback = self.model();
                let finals = self.finals.get_or_insert_with(Final::default);
                match wire.model_usage.filter(|m| !m.is_empty()) {
                    Some(models) => {
                        let single = models.len() == 1;
                        for (model, entry) in models {
                            let mut tokens = entry.tokens();
                            if single {
                                // Only `usage` has the 1h split and thinking.
                                tokens.cache_write_1h =
                                    whole.cache_write_1h.min(tokens.cache_write);
                                tokens.reasoning = whole.reasoning;
                            }
                            finals.add(ModelKey::new(model), &tokens);
                        }
                    }
                    None => finals.add(fallback, &whole),
                }
                finals.add_cost(wire.total_cost_usd);
            }
            _ => {}
        }
    }

    fn feed_codex(&mut self, wire: LineWire) {
        match wire.kind.as_deref() {
            Some("thread.started") => {
                self.current_thread = wire.thread_id.unwrap_or_default();
            }
            Some("turn.completed") => {
                if let Some(usage) = wire.usage.and_then(|u| serde_json::from_value(u).ok()) {
                    // Thread-cumulative: the latest snapshot replaces the last.
                    self.threads.insert(self.current_thread.clone(), usage);
                }
            }
            _ => {}
        }
    }

    fn feed_gemini(&mut self, wire: LineWire) {
        match wire.kind.as_deref() {
            Some("init") => self.stream_model = wire.model,
            Some("result") => {
                let stats = wire
                    .stats
                    .or_else(|| wire.usage.and_then(|u| serde_json::from_value(u).ok()));
                let Some(stats) = stats else { return };
                let fallback = self.model();
                let finals = self.finals.get_or_insert_with(Final::default);
                match stats.models.as_ref().filter(|m| !m.is_empty()) {
                    Some(models) => {
                        for (model, entry) in models {
                            finals.add(ModelKey::new(model.clone()), &entry.tokens());
                        }
                    }
                    None => finals.add(fallback, &stats.tokens()),
                }
                finals.add_cost(None);
            }
            _ => {}
        }
    }

    fn feed_grok(&mut self, wire: LineWire) {
        let usage: Option<GrokUsage> = wire.usage.and_then(|u| serde_json::from_value(u).ok());
        match wire.kind.as_deref() {
            Some("usage") => {
                if let Some(usage) = usage {
                    let id = wire
                        .message_id
                        .unwrap_or_else(|| format!("#{}", self.steps.len()));
                    let model = self.model();
                    keep_largest(&mut self.steps, id, model, usage.tokens());
                }
            }
            Some("end") => {
                let tokens = usage.map(|u| u.tokens()).unwrap_or_default();
                if tokens.total() == 0 {
                    // Grok Build: an all-zero usage means "unknown".
                    self.unknown_final = true;
                    return;
                }
                let fallback = self.model();
                let finals = self.finals.get_or_insert_with(Final::default);
                match wire.model_usage.filter(|m| m.len() == 1) {
                    Some(models) => {
                        for model in models.into_keys() {
                            finals.add(ModelKey::new(model), &tokens);
                        }
                    }
                    None => finals.add(fallback, &tokens),
                }
                let complete = wire.usage_is_incomplete != Some(true);
                finals.add_cost(wire.total_cost_usd.filter(|_| complete));
            }
            _ => {}
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
                tokens.add(&usage.tokens());
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
        let reason = match self.provider {
            Provider::Kimi => {
                "kimi's stream output carries no token usage (`okstra usage` reads its session log)"
                    .to_owned()
            }
            Provider::Grok if self.unknown_final => {
                "the grok `end` line reported all-zero usage, which Grok Build uses for unknown"
                    .to_owned()
            }
            Provider::Grok => "no grok `usage` or `end` line (the vibe-kit `grok` prints no usage; Grok Build prints it on `end`)".to_owned(),
            Provider::Claude => "no claude `result` or `assistant` usage line in the log".to_owned(),
            Provider::Codex => "no codex `turn.completed` usage line in the log".to_owned(),
            Provider::Antigravity => "no `result` line with `stats` in the log".to_owned(),
        };
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
/// kimi, whose stream has none, the session log the stream names is read
/// (under `KIMI_CODE_HOME`, else `~/.kimi-code`).
pub fn from_log(provider: Provider, model: Option<&str>, log: &Path) -> Usage {
    let root = super::kimi::sessions_root(&|name| std::env::var(name).ok());
    from_log_in(provider, model, log, root.as_deref())
}

/// [`from_log`] with kimi's sessions folder given.
pub fn from_log_in(
    provider: Provider,
    model: Option<&str>,
    log: &Path,
    kimi_root: Option<&Path>,
) -> Usage {
    let meter = match meter_log(provider, model, log) {
        Ok(meter) => meter,
        Err(unavailable) => return unavailable,
    };
    if let (Some(session), Some(root)) = (meter.kimi_session(), kimi_root)
        && let Some(usage) = super::kimi::session_usage(root, session, model)
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
