//! Codex CLI (`codex exec --json`): its stream, line by line, as events.
//!
//! The answer is the last completed `agent_message` item; `turn.completed`
//! carries the thread's usage so far (its `input_tokens` include the cached
//! ones) and `turn.failed` the failure. Its retries are `error` lines in
//! words (`Reconnecting... 2/5 (…)`, `Reconnecting... waiting for network`).

use serde::Deserialize;
use serde_json::Value;

use super::descriptor::UNIQUE;
use super::descriptor::{Argv, Duties, Duty, NativeModel, Request};
use super::{
    Credentials, Descriptor, ErrorKind, Event, ModelTokens, Models, ReadOnly, RetryCause, Scope,
    State, Tokens, UsageReport, owned, text, usage_of,
};

/// Codex CLI.
pub(super) const DESCRIPTOR: Descriptor = Descriptor {
    binary: "codex",
    program: "codex-cli",
    read_only: ReadOnly::Mode("`-s read-only`"),
    env: &["OPENAI_*", "CODEX_HOME", "CODEX_API_KEY"],
    models: Models {
        worker: "gpt-5.6-sol",
        critic: None,
        report_writer: None,
    },
    model_env: Some("OKSTRA_DEFAULT_CODEX_MODEL"),
    model_flag: Some("codex-model"),
    duties: Duties {
        default_analyser: true,
        report_writer: Duty::Allowed,
        executor: Duty::Allowed,
    },
    native_model: NativeModel::AsGiven,
    state: State {
        home: ".codex",
        relocated_by: Some("CODEX_HOME"),
        file_beside: None,
    },
    // Not confined: its read-only and workspace-write modes are a
    // bubblewrap sandbox of its own (a user namespace, mounts, uid maps),
    // which cannot be set up inside a Landlock domain (measured: `bwrap:
    // setting up uid map: Permission denied`), so every shell command codex
    // ran would fail. Its own sandbox, which okstra always turns on, keeps
    // it from the project.
    landlock: false,
    credentials: Credentials {
        env: &["OPENAI_API_KEY", "CODEX_API_KEY"],
        file: "auth.json",
    },
    default_slots: 4,
    install: "install the Codex CLI: `npm install -g @openai/codex`",
    log_in: "run `codex login`, or set `OPENAI_API_KEY`",
    usage_missing: "no codex `turn.completed` usage line in the log",
    session_log: None,
    env_auth: None,
    no_update_env: &[],
    model_note: None,
    identity: UNIQUE,
    argv,
};

/// `exec` already forces approval `never`; `-` reads the prompt from stdin;
/// outside a git repo it refuses to run without the check skip.
fn argv(request: &Request<'_>) -> Argv {
    let sandbox = if request.may_write {
        "workspace-write"
    } else {
        "read-only"
    };
    Argv {
        args: vec![
            "exec".into(),
            "--json".into(),
            "-m".into(),
            request.model.to_owned(),
            "-s".into(),
            sandbox.into(),
            "-C".into(),
            request.execution_root.as_os_str().to_owned(),
            "--skip-git-repo-check".into(),
            "-".into(),
        ],
        prompt_on_stdin: true,
        env_set: Vec::new(),
    }
}

pub(super) fn decode(event: &Value, out: &mut Vec<Event>) {
    match text(event, "/type").unwrap_or("") {
        "thread.started" => out.push(Event::Started {
            session: owned(event, "/thread_id"),
            model: None,
        }),
        "turn.started" => out.push(Event::Thinking),
        "error" => out.push(error(text(event, "/message").unwrap_or(""))),
        kind @ ("item.started" | "item.completed") => {
            if let Some(item) = event.get("item") {
                self::item(item, kind == "item.completed", out);
            }
        }
        "turn.completed" => {
            if let Some(usage) = usage_of::<CodexUsage>(event.get("usage")) {
                out.push(Event::Usage(UsageReport {
                    // Thread-cumulative: the latest replaces the last.
                    scope: Scope::Cumulative,
                    models: vec![ModelTokens::unnamed(usage.tokens())],
                    cost_usd: None,
                }));
            }
            out.push(Event::Final {
                failed: false,
                error: None,
            });
        }
        "turn.failed" => out.push(Event::Final {
            failed: true,
            error: owned(event, "/error/message"),
        }),
        _ => {}
    }
}

/// A top-level `error` line: a retry in words, a rate limit, or an error.
fn error(message: &str) -> Event {
    let lower = message.to_lowercase();
    let retry = |cause, attempt: Option<(f64, f64)>| Event::Retry {
        cause,
        attempt: attempt.map(|(attempt, _)| attempt),
        max: attempt.map(|(_, max)| max),
        delay_ms: None,
        text: message.to_owned(),
    };
    if lower.contains("waiting for network") {
        return retry(RetryCause::Offline, None);
    }
    if let Some(rest) = message.strip_prefix("Reconnecting... ") {
        // `2/5 (stream disconnected …)`.
        let count = rest.split_whitespace().next().and_then(|count| {
            let (attempt, max) = count.split_once('/')?;
            Some((attempt.parse().ok()?, max.parse().ok()?))
        });
        return retry(RetryCause::Network, count);
    }
    let kind = if lower.contains("rate limit") || lower.contains("429") {
        ErrorKind::RateLimit
    } else {
        ErrorKind::Other
    };
    Event::Error {
        kind,
        code: None,
        text: message.to_owned(),
    }
}

/// An item as it starts or completes; the answer and an error item count
/// once, when they complete.
fn item(item: &Value, completed: bool, out: &mut Vec<Event>) {
    match text(item, "/type").unwrap_or("") {
        "command_execution" => out.push(Event::Command(
            text(item, "/command").unwrap_or("").to_owned(),
        )),
        "agent_message" if completed => {
            if let Some(said) = owned(item, "/text") {
                out.push(Event::Text(said));
            }
        }
        "reasoning" => out.push(Event::Thinking),
        "file_change" => out.push(Event::EditFiles),
        "web_search" => out.push(Event::WebSearch),
        "mcp_tool_call" => out.push(Event::ToolUse {
            name: "a tool".to_owned(),
            argument: None,
        }),
        "error" if completed => out.push(Event::Error {
            kind: ErrorKind::Other,
            code: None,
            text: text(item, "/message").unwrap_or("").to_owned(),
        }),
        _ => {}
    }
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

#[cfg(test)]
mod tests {
    use super::super::tests::{assert_table, fixture};
    use super::super::{Line, Provider, decode};
    use super::*;

    /// The fake codex's recorded stream lines (`tests/fixtures/workers/`).
    #[test]
    fn recorded_lines_decode_to_events() {
        assert_table(
            Provider::Codex,
            &fixture("workers/codex.sh"),
            &[
                vec![Event::Started {
                    session: Some("t-1".into()),
                    model: None,
                }],
                vec![Event::Thinking],
                vec![Event::Text("thinking aloud".into())],
                vec![Event::Text(
                    "=== OKSTRA RESULT BEGIN ===\n## 1. Findings\n| F-001 | codex sees it | src/a.py:4 |\n=== OKSTRA RESULT END ===".into(),
                )],
                vec![
                    Event::Usage(UsageReport {
                        scope: Scope::Cumulative,
                        models: vec![ModelTokens::unnamed(Tokens {
                            input: 15,
                            cache_read: 5,
                            output: 7,
                            ..Tokens::default()
                        })],
                        cost_usd: None,
                    }),
                    Event::Final {
                        failed: false,
                        error: None,
                    },
                ],
            ],
        );
    }

    /// Lines as codex printed them (research/provider-clis.md §6).
    #[test]
    fn retries_in_words_are_typed() {
        let reconnect = "Reconnecting... 2/5 (stream disconnected before completion: failed to lookup address information)";
        let cases: Vec<(String, Vec<Event>)> = vec![
            (
                format!(r#"{{"type":"error","message":"{reconnect}"}}"#),
                vec![Event::Retry {
                    cause: RetryCause::Network,
                    attempt: Some(2.0),
                    max: Some(5.0),
                    delay_ms: None,
                    text: reconnect.into(),
                }],
            ),
            (
                r#"{"type":"error","message":"Reconnecting... waiting for network"}"#.into(),
                vec![Event::Retry {
                    cause: RetryCause::Offline,
                    attempt: None,
                    max: None,
                    delay_ms: None,
                    text: "Reconnecting... waiting for network".into(),
                }],
            ),
            (
                r#"{"type":"error","message":"429 Too Many Requests"}"#.into(),
                vec![Event::Error {
                    kind: ErrorKind::RateLimit,
                    code: None,
                    text: "429 Too Many Requests".into(),
                }],
            ),
            (
                r#"{"type":"item.started","item":{"id":"i","type":"command_execution","command":"bash -lc ls","status":"in_progress"}}"#.into(),
                vec![Event::Command("bash -lc ls".into())],
            ),
            (
                r#"{"type":"item.started","item":{"id":"i","type":"agent_message","text":"half"}}"#.into(),
                vec![],
            ),
            (
                r#"{"type":"turn.failed","error":{"message":"model response stream ended unexpectedly"}}"#.into(),
                vec![Event::Final {
                    failed: true,
                    error: Some("model response stream ended unexpectedly".into()),
                }],
            ),
        ];
        for (line, events) in cases {
            assert_eq!(
                decode(Provider::Codex, &line),
                Line::Events(events),
                "{line}"
            );
        }
    }
}
