//! Claude Code (`claude -p --output-format stream-json --verbose`): its
//! stream, line by line, as events.
//!
//! The answer is the `result` line's `result` (`is_error` is the real
//! failure flag; `subtype` says `success` even on error); each `assistant`
//! line carries the message so far with its usage, deduplicated by message
//! id; `result` carries the authoritative totals (`modelUsage` per model,
//! else `usage`) and the cost. `rate_limit_event` lines come on every turn
//! and refuse only when their `status` is `rejected`; `system/api_retry`
//! lines are its retries of a failed request.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::descriptor::UNIQUE;
use super::descriptor::{Argv, Duties, Duty, NativeModel, Request, os};
use super::{
    Credentials, Descriptor, ErrorKind, Event, ModelTokens, Models, ReadOnly, RetryCause, Scope,
    State, Tokens, UsageReport, content_text, number, owned, text, tool_use, usage_of,
};

/// The model claude names for a message it made up itself (an error shown
/// as a message): no tokens of a real model.
const SYNTHETIC_MODEL: &str = "<synthetic>";

/// Claude Code.
pub(super) const DESCRIPTOR: Descriptor = Descriptor {
    binary: "claude",
    program: "claude-code",
    read_only: ReadOnly::Mode("`--permission-mode plan`"),
    // API key or OAuth token, a relocated config folder, and the Bedrock
    // (AWS) and Vertex (Google) routes.
    env: &[
        "ANTHROPIC_*",
        "CLAUDE_CONFIG_DIR",
        "CLAUDE_CODE_OAUTH_TOKEN",
        "CLAUDE_CODE_USE_BEDROCK",
        "CLAUDE_CODE_USE_VERTEX",
        "AWS_*",
        "CLOUD_ML_REGION",
        "GOOGLE_APPLICATION_CREDENTIALS",
    ],
    models: Models {
        worker: "opus",
        critic: None,
        report_writer: Some("sonnet"),
    },
    model_env: Some("OKSTRA_DEFAULT_CLAUDE_MODEL"),
    model_flag: Some("claude-model"),
    duties: Duties {
        default_analyser: true,
        report_writer: Duty::ByDefault,
        executor: Duty::ByDefault,
    },
    native_model: NativeModel::FamilyToken(&["fable", "opus", "sonnet", "haiku"]),
    // Relocated, its `.claude.json` lives inside the folder.
    state: State {
        home: ".claude",
        relocated_by: Some("CLAUDE_CONFIG_DIR"),
        file_beside: Some(".claude.json"),
    },
    landlock: true,
    credentials: Credentials {
        env: &[
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "CLAUDE_CODE_OAUTH_TOKEN",
            "CLAUDE_CODE_USE_BEDROCK",
            "CLAUDE_CODE_USE_VERTEX",
        ],
        file: ".credentials.json",
    },
    default_slots: 4,
    install: "install Claude Code: `npm install -g @anthropic-ai/claude-code`",
    log_in: "run `claude` once and `/login`, or set `ANTHROPIC_API_KEY` (or `CLAUDE_CODE_OAUTH_TOKEN`)",
    usage_missing: "no claude `result` or `assistant` usage line in the log",
    session_log: None,
    env_auth: None,
    no_update_env: &["DISABLE_AUTOUPDATER"],
    model_note: None,
    identity: UNIQUE,
    argv,
};

/// The prompt on stdin. stream-json in print mode requires `--verbose`.
/// `plan` is the documented read-only mode and ignores allow-rules from the
/// user's settings that `default` would honour; `acceptEdits` lets the
/// executor edit (`bypassPermissions` is refused when run as root).
fn argv(request: &Request<'_>) -> Argv {
    let mode = if request.may_write {
        "acceptEdits"
    } else {
        "plan"
    };
    Argv {
        args: os(&["-p", "--output-format", "stream-json", "--verbose"])
            .into_iter()
            .chain([
                "--model".into(),
                request.model.to_owned(),
                "--permission-mode".into(),
                mode.into(),
            ])
            .collect(),
        prompt_on_stdin: true,
        env_set: vec![("DISABLE_AUTOUPDATER", "1".into())],
    }
}

pub(super) fn decode(event: &Value, out: &mut Vec<Event>) {
    match text(event, "/type").unwrap_or("") {
        "system" => match text(event, "/subtype") {
            Some("init") => out.push(Event::Started {
                session: owned(event, "/session_id"),
                model: owned(event, "/model"),
            }),
            Some("api_retry") => out.push(retry(event)),
            Some(other) => out.push(Event::Notice(other.replace('_', " "))),
            None => {}
        },
        "assistant" => assistant(event, out),
        "user" => out.push(Event::ToolResult),
        "rate_limit_event" => {
            let info = event.get("rate_limit_info");
            let field = |name| info.and_then(|info| info.get(name));
            out.push(Event::RateLimit {
                rejected: field("status").and_then(Value::as_str) == Some("rejected"),
                window: field("rateLimitType")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                resets_at: field("resetsAt").and_then(Value::as_i64),
            });
        }
        "result" => result(event, out),
        _ => {}
    }
}

/// `system/api_retry`: a 429 or a `rate_limit` error is a rate limit, an
/// `auth` error refused credentials, anything else the API not answering
/// (as measured offline, `research/provider-clis.md` §1).
fn retry(event: &Value) -> Event {
    let error = text(event, "/error").unwrap_or("");
    let cause = if number(event, "/error_status") == Some(429.0) || error.contains("rate_limit") {
        RetryCause::RateLimit
    } else if error.contains("auth") {
        RetryCause::Auth
    } else {
        RetryCause::Network
    };
    Event::Retry {
        cause,
        attempt: number(event, "/attempt"),
        max: number(event, "/max_retries"),
        delay_ms: number(event, "/retry_delay_ms"),
        text: format!("api_retry: {error}"),
    }
}

fn assistant(event: &Value, out: &mut Vec<Event>) {
    let message = event.get("message");
    let field = |name| message.and_then(|message: &Value| message.get(name));
    let id = field("id").and_then(Value::as_str);
    let model = field("model").and_then(Value::as_str);
    if let (Some(id), Some(usage)) = (id, usage_of::<ClaudeUsage>(field("usage")))
        && model != Some(SYNTHETIC_MODEL)
    {
        out.push(Event::Usage(UsageReport {
            scope: Scope::Step {
                id: Some(id.to_owned()),
            },
            models: vec![ModelTokens {
                model: model.map(str::to_owned),
                fast: usage.is_fast(),
                tokens: usage.tokens(),
            }],
            cost_usd: None,
        }));
    }
    let content = field("content");
    let said = content_text(content);
    // An error claude shows as a message (not logged in, a refused key):
    // the message is the error's text, not an answer.
    if let Some(code) = text(event, "/error") {
        out.push(Event::Error {
            kind: error_kind(code),
            code: Some(code.to_owned()),
            text: said.unwrap_or_default(),
        });
        return;
    }
    if let Some(said) = said {
        out.push(Event::Text(said));
    }
    for part in content.and_then(Value::as_array).into_iter().flatten() {
        if text(part, "/type") == Some("tool_use") {
            out.push(tool_use(text(part, "/name"), part.get("input")));
        }
    }
}

/// claude's error word on an `assistant` line.
fn error_kind(code: &str) -> ErrorKind {
    match code {
        "authentication_failed" => ErrorKind::Auth,
        "rate_limit" => ErrorKind::RateLimit,
        _ => ErrorKind::Other,
    }
}

fn result(event: &Value, out: &mut Vec<Event>) {
    let failed = event.get("is_error").and_then(Value::as_bool) == Some(true);
    let said = owned(event, "/result");
    let error = if failed {
        said
    } else {
        if let Some(said) = said {
            out.push(Event::Text(said));
        }
        None
    };
    let usage: ClaudeUsage = usage_of(event.get("usage")).unwrap_or_default();
    let whole = usage.tokens();
    let per_model: Option<BTreeMap<String, ModelUsageWire>> =
        usage_of(event.get("modelUsage")).filter(|models: &BTreeMap<_, _>| !models.is_empty());
    let models = match per_model {
        Some(models) => {
            let single = models.len() == 1;
            models
                .into_iter()
                .map(|(model, entry)| {
                    let mut tokens = entry.tokens();
                    if single {
                        // Only `usage` has the 1h split and thinking.
                        tokens.cache_write_1h = whole.cache_write_1h.min(tokens.cache_write);
                        tokens.reasoning = whole.reasoning;
                    }
                    ModelTokens {
                        model: Some(model),
                        fast: false,
                        tokens,
                    }
                })
                .collect()
        }
        None => vec![ModelTokens::unnamed(whole)],
    };
    out.push(Event::Usage(UsageReport {
        scope: Scope::Final,
        models,
        cost_usd: event.get("total_cost_usd").and_then(Value::as_f64),
    }));
    out.push(Event::Final { failed, error });
}

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

    /// Whether the message ran in fast mode (priced apart).
    pub fn is_fast(&self) -> bool {
        self.speed.as_deref() == Some("fast")
    }
}

/// One entry of claude's `modelUsage` (camelCase).
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

#[cfg(test)]
mod tests {
    use super::super::tests::{assert_table, fixture, io};
    use super::super::{Line, Provider, decode};
    use super::*;

    fn started(session: &str, model: Option<&str>) -> Event {
        Event::Started {
            session: Some(session.into()),
            model: model.map(Into::into),
        }
    }

    /// The fake claudes' recorded stream lines (`tests/fixtures/workers/`).
    #[test]
    fn recorded_lines_decode_to_events() {
        let answer = "Done.\n=== OKSTRA RESULT BEGIN ===\n## 1. Findings\n| F-001 | claude sees it | src/a.py:3 |\n=== OKSTRA RESULT END ===\n=== OKSTRA WORKER-RESULTS BEGIN ===\n## 1. What I examined\nsrc/a.py\n=== OKSTRA WORKER-RESULTS END ===";
        assert_table(
            Provider::Claude,
            &fixture("workers/claude.sh"),
            &[
                vec![started("s-1", Some("claude-opus"))],
                vec![Event::Text("Looking.".into())],
                vec![
                    Event::Text(answer.into()),
                    Event::Usage(UsageReport {
                        scope: Scope::Final,
                        models: vec![ModelTokens::unnamed(io(10, 5))],
                        cost_usd: None,
                    }),
                    Event::Final {
                        failed: false,
                        error: None,
                    },
                ],
            ],
        );
        let login = "Not logged in \u{b7} Please run /login";
        assert_table(
            Provider::Claude,
            &fixture("workers/auth.sh"),
            &[
                vec![started("s-2", None)],
                vec![Event::Error {
                    kind: ErrorKind::Auth,
                    code: Some("authentication_failed".into()),
                    text: login.into(),
                }],
                vec![
                    Event::Usage(UsageReport {
                        scope: Scope::Final,
                        models: vec![ModelTokens::unnamed(Tokens::default())],
                        cost_usd: None,
                    }),
                    Event::Final {
                        failed: true,
                        error: Some(login.into()),
                    },
                ],
            ],
        );
        assert_table(
            Provider::Claude,
            &fixture("workers/metered.sh"),
            &[
                vec![started("s-3", Some("claude-opus-4-8"))],
                vec![
                    Event::Usage(UsageReport {
                        scope: Scope::Step {
                            id: Some("m1".into()),
                        },
                        models: vec![ModelTokens {
                            model: Some("claude-opus-4-8".into()),
                            fast: false,
                            tokens: Tokens {
                                cache_read: 300,
                                ..io(1200, 80)
                            },
                        }],
                        cost_usd: None,
                    }),
                    Event::Text("Reading.".into()),
                ],
            ],
        );
    }

    /// Lines as claude printed them (research/provider-clis.md §6, §7).
    #[test]
    fn retries_limits_and_tools_are_typed() {
        let cases: &[(&str, Vec<Event>)] = &[
            (
                r#"{"type":"system","subtype":"api_retry","attempt":3,"max_retries":10,"retry_delay_ms":2400.5,"error_status":null,"error":"unknown","session_id":"s"}"#,
                vec![Event::Retry {
                    cause: RetryCause::Network,
                    attempt: Some(3.0),
                    max: Some(10.0),
                    delay_ms: Some(2400.5),
                    text: "api_retry: unknown".into(),
                }],
            ),
            (
                r#"{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":40000,"error_status":429,"error":"rate_limit"}"#,
                vec![Event::Retry {
                    cause: RetryCause::RateLimit,
                    attempt: Some(1.0),
                    max: Some(10.0),
                    delay_ms: Some(40000.0),
                    text: "api_retry: rate_limit".into(),
                }],
            ),
            (
                r#"{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","rateLimitType":"five_hour","resetsAt":1778565600}}"#,
                vec![Event::RateLimit {
                    rejected: true,
                    window: Some("five_hour".into()),
                    resets_at: Some(1_778_565_600),
                }],
            ),
            (
                r#"{"type":"assistant","message":{"id":"m","model":"<synthetic>","content":[{"type":"text","text":"Hi"},{"type":"tool_use","id":"t","name":"Bash","input":{"command":"cargo test --all"}}],"usage":{"input_tokens":0}}}"#,
                vec![
                    Event::Text("Hi".into()),
                    Event::ToolUse {
                        name: "Bash".into(),
                        argument: Some("cargo test --all".into()),
                    },
                ],
            ),
            (
                r#"{"type":"system","subtype":"compact_boundary"}"#,
                vec![Event::Notice("compact boundary".into())],
            ),
            (
                r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result"}]}}"#,
                vec![Event::ToolResult],
            ),
        ];
        for (line, events) in cases {
            assert_eq!(
                decode(Provider::Claude, line),
                Line::Events(events.clone()),
                "{line}"
            );
        }
    }

    /// A one-model `modelUsage` takes the 1h split and thinking from `usage`.
    #[test]
    fn the_final_line_names_its_models() {
        let line = r#"{"type":"result","is_error":false,"total_cost_usd":0.5,"usage":{"input_tokens":1,"output_tokens":2,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":7},"output_tokens_details":{"thinking_tokens":1}},"modelUsage":{"claude-opus-4-8":{"inputTokens":1,"outputTokens":2,"cacheCreationInputTokens":7}}}"#;
        let Line::Events(events) = decode(Provider::Claude, line) else {
            panic!("a JSON line");
        };
        assert_eq!(
            events[0],
            Event::Usage(UsageReport {
                scope: Scope::Final,
                models: vec![ModelTokens {
                    model: Some("claude-opus-4-8".into()),
                    fast: false,
                    tokens: Tokens {
                        cache_write: 7,
                        cache_write_1h: 7,
                        reasoning: Some(1),
                        ..io(1, 2)
                    },
                }],
                cost_usd: Some(0.5),
            })
        );
    }

    #[test]
    fn family_tokens() {
        let token = |model| DESCRIPTOR.native_model.of(model);
        assert_eq!(token("opus"), Some("opus"));
        assert_eq!(token("claude-sonnet-4-6"), Some("sonnet"));
        assert_eq!(token("claude-opus-4-8[1m]"), Some("opus"));
        assert_eq!(token("gpt-5.6-sol"), None);
    }
}
