//! antigravity (`agy -p … --output-format stream-json`, Gemini CLI's
//! stream): its lines as events.
//!
//! The answer comes as assistant `message` deltas (joined until another
//! event), or whole; `result` closes the run with its `status`, an optional
//! `response` and the usage in `stats` (per model under `models`). No cost.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::descriptor::UNIQUE;
use super::descriptor::{Argv, Duties, Duty, NativeModel, Request, pointer_prompt};
use super::{
    Credentials, Descriptor, ErrorKind, Event, ModelTokens, Models, ReadOnly, Scope, State, Tokens,
    UsageReport, content_text, owned, text, tool_use, usage_of,
};

/// antigravity's `agy`.
pub(super) const DESCRIPTOR: Descriptor = Descriptor {
    binary: "agy",
    program: "agy",
    read_only: ReadOnly::Mode("without `--dangerously-skip-permissions`"),
    // Gemini keys and settings, Google Cloud (Vertex) and gcloud's config.
    env: &["GEMINI_*", "GOOGLE_*", "CLOUDSDK_CONFIG"],
    models: Models {
        worker: "gemini-3.1-pro",
        critic: None,
        report_writer: None,
    },
    model_env: Some("OKSTRA_DEFAULT_ANTIGRAVITY_MODEL"),
    model_flag: Some("antigravity-model"),
    duties: Duties {
        default_analyser: false,
        report_writer: Duty::Never,
        executor: Duty::Allowed,
    },
    native_model: NativeModel::AsGiven,
    state: State {
        home: ".gemini",
        relocated_by: None,
        file_beside: None,
    },
    landlock: true,
    credentials: Credentials {
        env: &[
            "GEMINI_API_KEY",
            "GOOGLE_API_KEY",
            "GOOGLE_GENAI_USE_VERTEXAI",
        ],
        file: "oauth_creds.json",
    },
    // The smaller vendors' subscription CLIs throttle concurrent sessions sooner.
    default_slots: 2,
    install: "install Antigravity's `agy` from Google's Antigravity download",
    log_in: "run `agy` once and sign in, or set `GEMINI_API_KEY`",
    usage_missing: "no `result` line with `stats` in the log",
    session_log: None,
    env_auth: None,
    no_update_env: &[],
    model_note: None,
    identity: UNIQUE,
    argv,
};

/// antigravity's own wall-clock limit for `--print` (default 5 min). Our
/// idle watchdog is the liveness guard, so the CLI's limit must never fire
/// first: a day, or the idle timeout if that is longer.
const PRINT_TIMEOUT_FLOOR_SECS: u64 = 24 * 60 * 60;

/// No prompt on stdin: a pointer prompt in `-p`. Without
/// `--dangerously-skip-permissions` it does not write.
fn argv(request: &Request<'_>) -> Argv {
    let idle = request.idle_timeout_secs.unwrap_or(0);
    let print_timeout = idle.max(PRINT_TIMEOUT_FLOOR_SECS);
    let mut args = vec![
        "-p".into(),
        pointer_prompt(request.prompt_path),
        "--output-format".into(),
        "stream-json".into(),
        "--model".into(),
        request.model.to_owned(),
        "--print-timeout".into(),
        format!("{print_timeout}s").into(),
    ];
    if request.may_write {
        args.push("--dangerously-skip-permissions".into());
    }
    Argv {
        args,
        prompt_on_stdin: false,
        env_set: Vec::new(),
    }
}

pub(super) fn decode(event: &Value, out: &mut Vec<Event>) {
    match text(event, "/type").unwrap_or("") {
        "init" => out.push(Event::Started {
            session: owned(event, "/session_id"),
            model: owned(event, "/model"),
        }),
        "message" if text(event, "/role") == Some("assistant") => {
            if let Some(said) = content_text(event.get("content")) {
                out.push(
                    if event.get("delta").and_then(Value::as_bool) == Some(true) {
                        Event::TextDelta(said)
                    } else {
                        Event::Text(said)
                    },
                );
            }
        }
        "tool_use" => out.push(tool_use(text(event, "/tool_name"), event.get("parameters"))),
        "tool_result" => out.push(Event::ToolResult),
        "step_update" => out.push(Event::Step(
            text(event, "/step_type")
                .unwrap_or("working")
                .replace('_', " "),
        )),
        "error" => out.push(Event::Error {
            kind: ErrorKind::Other,
            code: None,
            text: text(event, "/message").unwrap_or("").to_owned(),
        }),
        "result" => {
            let failed = text(event, "/status") == Some("error")
                || event.get("is_error").and_then(Value::as_bool) == Some(true);
            if let Some(said) = owned(event, "/response") {
                out.push(Event::Text(said));
            }
            let stats = usage_of::<GeminiStats>(event.get("stats"))
                .or_else(|| usage_of(event.get("usage")));
            if let Some(stats) = stats {
                let models = match stats.models.as_ref().filter(|m| !m.is_empty()) {
                    Some(models) => models
                        .iter()
                        .map(|(model, entry)| ModelTokens {
                            model: Some(model.clone()),
                            fast: false,
                            tokens: entry.tokens(),
                        })
                        .collect(),
                    None => vec![ModelTokens::unnamed(stats.tokens())],
                };
                out.push(Event::Usage(UsageReport {
                    scope: Scope::Final,
                    models,
                    cost_usd: None,
                }));
            }
            out.push(Event::Final {
                failed,
                error: owned(event, "/error/message"),
            });
        }
        _ => {}
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

#[cfg(test)]
mod tests {
    use super::super::tests::{assert_table, fixture, io};
    use super::super::{Line, Provider, decode};
    use super::*;

    /// The fake agy's and the usage fixture's recorded stream lines.
    #[test]
    fn recorded_lines_decode_to_events() {
        assert_table(
            Provider::Antigravity,
            &fixture("workers/agy.sh"),
            &[
                vec![Event::Started {
                    session: Some("a-1".into()),
                    model: None,
                }],
                vec![],
                vec![Event::TextDelta(
                    "=== OKSTRA RESULT BEGIN ===\n## 1. Find".into(),
                )],
                vec![Event::TextDelta(
                    "ings\n| F-001 | agy sees it | src/a.py:5 |\n=== OKSTRA RESULT END ===".into(),
                )],
                vec![
                    Event::Usage(UsageReport {
                        scope: Scope::Final,
                        models: vec![ModelTokens::unnamed(io(3, 0))],
                        cost_usd: None,
                    }),
                    Event::Final {
                        failed: false,
                        error: None,
                    },
                ],
            ],
        );
        assert_table(
            Provider::Antigravity,
            &fixture("usage/antigravity.jsonl"),
            &[
                vec![Event::Started {
                    session: Some("c0ffee00-1111-2222-3333-444455556666".into()),
                    model: Some("gemini-3.1-pro".into()),
                }],
                vec![Event::Step("tool call".into())],
                vec![
                    Event::Text("The loop has no cap.".into()),
                    Event::Usage(UsageReport {
                        scope: Scope::Final,
                        models: vec![ModelTokens::unnamed(Tokens {
                            cache_read: 30214,
                            ..io(278, 4)
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

    /// A failed `result` as measured offline (research/provider-clis.md §6).
    #[test]
    fn a_failed_result_carries_its_error() {
        let line = r#"{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: fetch failed sending request]"}}"#;
        assert_eq!(
            decode(Provider::Antigravity, line),
            Line::Events(vec![Event::Final {
                failed: true,
                error: Some("[API Error: fetch failed sending request]".into()),
            }])
        );
    }
}
