//! The provider CLIs, one file each: what okstra knows of a CLI and how to
//! read its stream. The `catalog!` line below lists them.
//!
//! Each file fills one [`Descriptor`] (binary, headless command line,
//! environment names, read-only mode, state folder, credentials, identity
//! probe, default models, the advice's words) and holds one decoder: one
//! line of its stream (its own JSON format, `research/provider-clis.md` §6)
//! in, typed [`Event`]s out. Every reader of a worker's log consumes those
//! events — the result recovery (`dispatch::recover`), the live line
//! (`dispatch::activity`), the usage meter (`usage::stream`) and, through
//! the recovered errors and signals, the classifier — and none of them
//! reads a CLI's JSON itself.
//!
//! A leaf: it uses only std, serde and `serde_json`, so a small binary that
//! supervises a CLI can link it without the rest of okstra.

mod descriptor;
mod events;

use serde_json::Value;

pub use claude::ClaudeUsage;
pub use descriptor::{
    Credentials, Descriptor, Duty, Identity, LookAlike, Models, NativeModel, Program, ReadOnly,
    Request, State,
};
pub use events::{ErrorKind, Event, Line, ModelTokens, RetryCause, Scope, Tokens, UsageReport};

/// The provider catalog: one line per CLI — its variant, its wire word and
/// the file (a module of this folder) that describes it and decodes its
/// stream. Adding a provider is that file and its line here
/// (docs/contributing.md, "Adding a provider").
macro_rules! catalog {
    ($($variant:ident => $word:literal in $file:ident),+ $(,)?) => {
        $(mod $file;)+

        closed_set! {
            /// A vendor whose coding CLI can run as a worker.
            Provider { $($variant => $word),+ }
        }

        impl Provider {
            /// What okstra knows of this provider's CLI.
            pub fn descriptor(self) -> &'static Descriptor {
                match self {
                    $(Provider::$variant => &$file::DESCRIPTOR),+
                }
            }

            /// Its decoder of one JSON line of its stream.
            fn decoder(self) -> fn(&Value, &mut Vec<Event>) {
                match self {
                    $(Provider::$variant => $file::decode),+
                }
            }
        }
    };
}

catalog! {
    Claude => "claude" in claude,
    Codex => "codex" in codex,
    Antigravity => "antigravity" in antigravity,
    Grok => "grok" in grok,
    Kimi => "kimi" in kimi,
}

impl Provider {
    /// The executable the provider's CLI installs.
    pub fn binary(self) -> &'static str {
        self.descriptor().binary
    }

    /// How many calls to this provider one user's okstra runs make at once
    /// by default ([`Descriptor::default_slots`]).
    pub fn default_slots(self) -> u32 {
        self.descriptor().default_slots
    }

    /// The credential and configuration variables this provider's CLI
    /// reads ([`Descriptor::env`]).
    pub fn env_names(self) -> &'static [&'static str] {
        self.descriptor().env
    }

    /// The environment variable that overrides this provider's worker
    /// default, if any.
    pub fn model_env(self) -> Option<&'static str> {
        self.descriptor().model_env
    }

    /// Its word with a capital (`Claude`), as help and messages name it.
    pub fn title(self) -> String {
        let word = self.as_str();
        let mut letters = word.chars();
        letters.next().map_or_else(String::new, |first| {
            first.to_uppercase().chain(letters).collect()
        })
    }

    /// The providers that may write the report (`--report-writer-provider`).
    pub fn report_writers() -> Vec<Provider> {
        Provider::having(|descriptor| descriptor.duties.report_writer)
    }

    /// The providers that may be the implementation Executor (`--executor`).
    pub fn executors() -> Vec<Provider> {
        Provider::having(|descriptor| descriptor.duties.executor)
    }

    /// The report writer when no flag names one.
    pub fn default_report_writer() -> Provider {
        Provider::default_for(|descriptor| descriptor.duties.report_writer)
    }

    /// The Executor when no flag or variable names one.
    pub fn default_executor() -> Provider {
        Provider::default_for(|descriptor| descriptor.duties.executor)
    }

    /// The analysers of the default roster, in catalog order.
    pub fn default_analysers() -> Vec<Provider> {
        Provider::ALL
            .iter()
            .copied()
            .filter(|provider| provider.descriptor().duties.default_analyser)
            .collect()
    }

    /// The providers whose `duty` allows the role, in catalog order.
    fn having(duty: fn(&Descriptor) -> Duty) -> Vec<Provider> {
        Provider::ALL
            .iter()
            .copied()
            .filter(|provider| duty(provider.descriptor()) != Duty::Never)
            .collect()
    }

    /// The provider whose `duty` is the default: the first in catalog order
    /// (the catalog test checks there is exactly one), else the first
    /// provider.
    fn default_for(duty: fn(&Descriptor) -> Duty) -> Provider {
        Provider::ALL
            .iter()
            .copied()
            .find(|provider| duty(provider.descriptor()) == Duty::ByDefault)
            .unwrap_or(Provider::ALL[0])
    }
}

/// One line of `provider`'s output as what it says. A line that does not
/// start with `{` or is no JSON object is [`Line::Plain`].
pub fn decode(provider: Provider, line: &str) -> Line {
    let line = line.trim();
    if line.is_empty() {
        return Line::Blank;
    }
    if !line.starts_with('{') {
        return Line::Plain;
    }
    let Ok(event) = serde_json::from_str::<Value>(line) else {
        return Line::Plain;
    };
    let mut events = Vec::new();
    (provider.decoder())(&event, &mut events);
    Line::Events(events)
}

/// The string at `pointer`.
fn text<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value.pointer(pointer).and_then(Value::as_str)
}

/// The string at `pointer`, owned.
fn owned(value: &Value, pointer: &str) -> Option<String> {
    text(value, pointer).map(str::to_owned)
}

/// The number at `pointer`.
fn number(value: &Value, pointer: &str) -> Option<f64> {
    value.pointer(pointer).and_then(Value::as_f64)
}

/// Text of a message `content`: a string, or the `text` parts of a list
/// joined by newlines.
fn content_text(content: Option<&Value>) -> Option<String> {
    match content? {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => {
            let joined: String = parts
                .iter()
                .filter(|part| text(part, "/type").is_none_or(|kind| kind == "text"))
                .filter_map(|part| text(part, "/text"))
                .collect::<Vec<_>>()
                .join("\n");
            (!joined.is_empty()).then_some(joined)
        }
        _ => None,
    }
}

/// A tool call: its name and its most telling argument.
fn tool_use(name: Option<&str>, input: Option<&Value>) -> Event {
    let argument = input.and_then(|input| {
        ["command", "file_path", "path", "pattern", "url", "query"]
            .iter()
            .find_map(|key| input.get(*key).and_then(Value::as_str))
    });
    Event::ToolUse {
        name: name.unwrap_or("a tool").to_owned(),
        argument: argument.map(str::to_owned),
    }
}

/// A usage object deserialised into `T`, when it is one.
fn usage_of<T: serde::de::DeserializeOwned>(value: Option<&Value>) -> Option<T> {
    value.and_then(|usage| T::deserialize(usage).ok())
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;

#[cfg(test)]
#[path = "outside_tests.rs"]
mod outside_tests;
