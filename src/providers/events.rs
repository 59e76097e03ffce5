//! The typed events one line of a CLI's stream says: what every reader of a
//! worker's log (the result recovery, the live line, the usage meter and,
//! through the recovered error lines, the classifier) consumes instead of
//! the CLI's JSON. Each provider's decoder fills them; nothing here knows a
//! CLI.

/// What one line of a CLI's output is.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// Nothing but whitespace.
    Blank,
    /// Not one of the CLI's JSON events: stderr (merged into the log), or a
    /// CLI without a JSON stream. Its text is the line itself.
    Plain,
    /// One JSON event, as the events it says (none for an event no reader
    /// needs).
    Events(Vec<Event>),
}

/// One thing a CLI's stream says.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The CLI started its session: the session (or thread) id and the
    /// model, when its first line names them.
    Started {
        session: Option<String>,
        model: Option<String>,
    },
    /// A whole message of the assistant's.
    Text(String),
    /// A piece of a message that arrives in pieces; the pieces join until
    /// any other event arrives.
    TextDelta(String),
    /// The model is thinking (a reasoning step or item).
    Thinking,
    /// A tool call, with its most telling argument (a command, a path, a
    /// pattern …) when it has one.
    ToolUse {
        name: String,
        argument: Option<String>,
    },
    /// A shell command the CLI runs itself.
    Command(String),
    /// The CLI changes files.
    EditFiles,
    /// The CLI searches the web.
    WebSearch,
    /// A tool's output came back to the model.
    ToolResult,
    /// A step the CLI names (`tool call`, `thinking` …).
    Step(String),
    /// Any other notice the CLI gives, in its own words.
    Notice(String),
    /// Tokens the CLI reports.
    Usage(UsageReport),
    /// The CLI reports its usage as unknown; the words say why.
    UsageUnknown(String),
    /// The provider spoke of a rate limit. `rejected` when it refused a
    /// request (the CLI also sends it on every turn, as information);
    /// `resets_at` is the reset time in Unix seconds, `window` the limit's
    /// own name (`five_hour`, `seven_day` …).
    RateLimit {
        rejected: bool,
        window: Option<String>,
        resets_at: Option<i64>,
    },
    /// The CLI retries a request that failed. `text` is the line the
    /// classifier reads; the rest is for people.
    Retry {
        cause: RetryCause,
        attempt: Option<f64>,
        max: Option<f64>,
        delay_ms: Option<f64>,
        text: String,
    },
    /// The CLI reported an error. `code` is the CLI's own error word when it
    /// gives one apart from the text (`authentication_failed`).
    Error {
        kind: ErrorKind,
        code: Option<String>,
        text: String,
    },
    /// The session id the CLI names apart from its start (kimi's last
    /// line, Grok Build's `end`).
    SessionId(String),
    /// The CLI's last word on the run: whether it says it failed, and its
    /// error text when it gives one.
    Final { failed: bool, error: Option<String> },
}

/// Why a CLI retries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryCause {
    /// The API did not answer.
    Network,
    /// The CLI waits for the network to come back.
    Offline,
    /// The provider refused for a rate limit.
    RateLimit,
    /// The credentials were refused.
    Auth,
    /// Another error, by the CLI's name for it.
    Other(String),
}

/// What an error is about, as far as its CLI says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Not logged in, or the key was refused.
    Auth,
    /// A rate limit or quota.
    RateLimit,
    /// Anything else.
    Other,
}

impl Event {
    /// The classifier's line for an event that reports a problem: an error
    /// (`code: text` when the CLI gives a code), a retry, a refused rate
    /// limit (its window and reset time in words `limit` reads), or a final
    /// line's error.
    pub fn error_line(&self) -> Option<String> {
        match self {
            Event::Error {
                code: Some(code),
                text,
                ..
            } => Some(format!("{code}: {text}")),
            Event::Error { text, .. } | Event::Retry { text, .. } => Some(text.clone()),
            Event::RateLimit {
                rejected: true,
                window,
                resets_at,
            } => Some(format!(
                "rate_limit_event: rejected {}{}",
                window.as_deref().unwrap_or("unknown"),
                resets_at.map_or_else(String::new, |at| format!(" resetsAt={at}"))
            )),
            Event::Final { error, .. } => error.clone(),
            _ => None,
        }
    }
}

/// Token counts in the normalised buckets. `cache_write_1h` is the part of
/// `cache_write` that Claude keeps for an hour (priced higher); `reasoning`
/// is already inside `output` and `None` when the CLI does not say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    pub input: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub cache_write_1h: u64,
    pub output: u64,
    pub reasoning: Option<u64>,
}

impl Tokens {
    /// Add `other` bucket by bucket; reasoning stays unknown only if both
    /// are unknown.
    pub fn add(&mut self, other: &Tokens) {
        self.input = self.input.saturating_add(other.input);
        self.cache_read = self.cache_read.saturating_add(other.cache_read);
        self.cache_write = self.cache_write.saturating_add(other.cache_write);
        self.cache_write_1h = self.cache_write_1h.saturating_add(other.cache_write_1h);
        self.output = self.output.saturating_add(other.output);
        self.reasoning = match (self.reasoning, other.reasoning) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
        };
    }

    /// Every billed token: input, cache reads and writes, output (reasoning
    /// is inside output, so it is not added again).
    pub fn total(&self) -> u64 {
        self.input
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write)
            .saturating_add(self.output)
    }
}

/// Tokens a CLI reports on one line.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageReport {
    pub scope: Scope,
    /// Tokens per model; a `None` model is the one the stream (or the
    /// dispatch) names.
    pub models: Vec<ModelTokens>,
    /// The CLI's own cost for a final report, when it gives one.
    pub cost_usd: Option<f64>,
}

/// How a usage report adds up with the others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// One response's usage, by its id when the CLI gives one: a response
    /// may be reported more than once, and only its largest report counts.
    /// Used until a final report arrives.
    Step { id: Option<String> },
    /// The session's (or thread's) whole usage so far: the latest replaces
    /// the one before.
    Cumulative,
    /// The CLI's authoritative total for the run; several add up.
    Final,
}

/// One model's tokens in a usage report.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelTokens {
    pub model: Option<String>,
    /// Claude's fast mode (priced apart).
    pub fast: bool,
    pub tokens: Tokens,
}

impl ModelTokens {
    /// `tokens` of the stream's model.
    pub fn unnamed(tokens: Tokens) -> ModelTokens {
        ModelTokens {
            model: None,
            fast: false,
            tokens,
        }
    }
}
