//! A CLI's latest output line, in words, for the live view: "reconnecting
//! (network) 2/5", "rate limited, retry in 40 s", "using Bash: cargo test",
//! "writing: The reservations are…". Pure: one line of a CLI's stream (its
//! own format, `research/provider-clis.md` §6) in, a short phrase out.
//! A line that is not one of the CLI's events is shown as it is, escaped.

use std::fmt::Write as _;

use serde_json::Value;

use crate::catalog::Provider;

/// Characters of free text (an answer, a command) kept in a phrase.
const TEXT: usize = 60;

/// `line` (one line of `provider`'s output) in words; `None` for a blank
/// line or an event that says nothing a person needs.
pub fn describe(provider: Provider, line: &str) -> Option<String> {
    let line = line.trim();
    if line.is_empty() {
        return None;
    }
    let Ok(event) = serde_json::from_str::<Value>(line) else {
        return Some(clip(line));
    };
    let kind = text(&event, "/type").unwrap_or("");
    match provider {
        Provider::Claude => claude(&event, kind),
        Provider::Codex => codex(&event, kind),
        Provider::Antigravity => gemini(&event, kind),
        Provider::Grok => grok(&event, kind),
        Provider::Kimi => kimi(&event, kind),
    }
}

fn claude(event: &Value, kind: &str) -> Option<String> {
    match kind {
        "system" => match text(event, "/subtype")? {
            "init" => Some("started".to_owned()),
            "api_retry" => {
                let attempt = number(event, "/attempt");
                let max = number(event, "/max_retries");
                let delay = seconds(event, "/retry_delay_ms");
                let status = number(event, "/error_status");
                let error = text(event, "/error").unwrap_or("");
                Some(if status == Some(429.0) || error.contains("rate_limit") {
                    format!(
                        "rate limited, retry in {}",
                        delay.unwrap_or_else(|| "a moment".into())
                    )
                } else if error.contains("auth") {
                    "credentials refused".to_owned()
                } else {
                    retrying("reconnecting (network)", attempt, max, delay)
                })
            }
            other => Some(other.replace('_', " ")),
        },
        "assistant" => {
            if let Some(error) = text(event, "/error") {
                return Some(format!(
                    "{}: {}",
                    error.replace('_', " "),
                    clip(&content(event.pointer("/message/content")).unwrap_or_default())
                ));
            }
            let parts = event.pointer("/message/content")?.as_array()?;
            if let Some(tool) = parts
                .iter()
                .rev()
                .find(|p| text(p, "/type") == Some("tool_use"))
            {
                return Some(using(
                    text(tool, "/name").unwrap_or("a tool"),
                    tool.get("input"),
                ));
            }
            content(event.pointer("/message/content")).map(|t| format!("writing: {}", clip(&t)))
        }
        "user" => Some("reading a tool's output".to_owned()),
        "rate_limit_event" => Some("rate limited".to_owned()),
        "result" => Some(
            if event.get("is_error").and_then(Value::as_bool) == Some(true) {
                format!("failed: {}", clip(text(event, "/result").unwrap_or("")))
            } else {
                "finished".to_owned()
            },
        ),
        _ => None,
    }
}

fn codex(event: &Value, kind: &str) -> Option<String> {
    match kind {
        "thread.started" => Some("started".to_owned()),
        "turn.started" => Some("thinking".to_owned()),
        "error" => {
            let message = text(event, "/message").unwrap_or("");
            let lower = message.to_lowercase();
            Some(if lower.contains("waiting for network") {
                "waiting for the network".to_owned()
            } else if let Some(rest) = message.strip_prefix("Reconnecting... ") {
                let count = rest.split_whitespace().next().unwrap_or("");
                format!("reconnecting (network) {count}")
                    .trim_end()
                    .to_owned()
            } else if lower.contains("rate limit") || lower.contains("429") {
                "rate limited".to_owned()
            } else {
                format!("error: {}", clip(message))
            })
        }
        "item.started" | "item.completed" => {
            let item = event.get("item")?;
            match text(item, "/type")? {
                "command_execution" => Some(format!(
                    "running `{}`",
                    clip(text(item, "/command").unwrap_or(""))
                )),
                "agent_message" => Some(format!(
                    "writing: {}",
                    clip(text(item, "/text").unwrap_or(""))
                )),
                "reasoning" => Some("thinking".to_owned()),
                "file_change" => Some("editing files".to_owned()),
                "web_search" => Some("searching the web".to_owned()),
                "mcp_tool_call" => Some("using a tool".to_owned()),
                "error" => Some(format!(
                    "error: {}",
                    clip(text(item, "/message").unwrap_or(""))
                )),
                _ => None,
            }
        }
        "turn.completed" => Some("finished".to_owned()),
        "turn.failed" => Some(format!(
            "failed: {}",
            clip(text(event, "/error/message").unwrap_or(""))
        )),
        _ => None,
    }
}

fn gemini(event: &Value, kind: &str) -> Option<String> {
    match kind {
        "init" => Some("started".to_owned()),
        "message" if text(event, "/role") == Some("assistant") => {
            content(event.get("content")).map(|t| format!("writing: {}", clip(&t)))
        }
        "tool_use" => Some(using(
            text(event, "/tool_name").unwrap_or("a tool"),
            event.get("parameters"),
        )),
        "tool_result" => Some("reading a tool's output".to_owned()),
        "step_update" => Some(format!(
            "step: {}",
            text(event, "/step_type")
                .unwrap_or("working")
                .replace('_', " ")
        )),
        "error" => Some(format!(
            "error: {}",
            clip(text(event, "/message").unwrap_or(""))
        )),
        "result" => Some(if text(event, "/status") == Some("error") {
            format!(
                "failed: {}",
                clip(text(event, "/error/message").unwrap_or(""))
            )
        } else {
            "finished".to_owned()
        }),
        _ => None,
    }
}

fn grok(event: &Value, kind: &str) -> Option<String> {
    match kind {
        "text" => text(event, "/data").map(|t| format!("writing: {}", clip(t))),
        "thought" => Some("thinking".to_owned()),
        "tool_call" => Some(format!(
            "using {}",
            text(event, "/title")
                .or_else(|| text(event, "/toolName"))
                .unwrap_or("a tool")
        )),
        "tool_call_update" => Some("reading a tool's output".to_owned()),
        "error" => Some(format!(
            "error: {}",
            clip(
                text(event, "/message")
                    .or_else(|| text(event, "/data"))
                    .unwrap_or("")
            )
        )),
        "end" => Some("finished".to_owned()),
        _ if text(event, "/role") == Some("assistant") => {
            content(event.get("content")).map(|t| format!("writing: {}", clip(&t)))
        }
        _ => None,
    }
}

fn kimi(event: &Value, kind: &str) -> Option<String> {
    match (text(event, "/role"), kind) {
        (Some("meta"), "system.version") => Some("started".to_owned()),
        (Some("meta"), "turn.step.retrying") => {
            let name = text(event, "/error_name").unwrap_or("");
            let message = text(event, "/error_message").unwrap_or("");
            let delay = seconds(event, "/delay_ms");
            let attempt = number(event, "/failed_attempt");
            let max = number(event, "/max_attempts");
            Some(if name.contains("RateLimit") || message.contains("429") {
                format!(
                    "rate limited, retry in {}",
                    delay.unwrap_or_else(|| "a moment".into())
                )
            } else if name.contains("Connection") || message.to_lowercase().contains("connection") {
                retrying("reconnecting (network)", attempt, max, delay)
            } else {
                retrying(&format!("retrying ({name})"), attempt, max, delay)
            })
        }
        (Some("meta"), "session.resume_hint") => Some("finished".to_owned()),
        (Some("assistant"), _) => {
            if let Some(call) = event
                .get("tool_calls")
                .and_then(Value::as_array)
                .and_then(|calls| calls.last())
            {
                return Some(format!(
                    "using {}",
                    text(call, "/function/name").unwrap_or("a tool")
                ));
            }
            content(event.get("content")).map(|t| format!("writing: {}", clip(&t)))
        }
        (Some("tool"), _) => Some("reading a tool's output".to_owned()),
        _ => None,
    }
}

/// `using Bash: cargo test` — the tool and its most telling argument.
fn using(tool: &str, input: Option<&Value>) -> String {
    let argument = input.and_then(|input| {
        ["command", "file_path", "path", "pattern", "url", "query"]
            .iter()
            .find_map(|key| input.get(*key).and_then(Value::as_str))
    });
    match argument {
        Some(argument) => format!("using {tool}: {}", clip(argument)),
        None => format!("using {tool}"),
    }
}

/// `reconnecting (network) 3/10, retry in 2 s`.
fn retrying(what: &str, attempt: Option<f64>, max: Option<f64>, delay: Option<String>) -> String {
    let mut text = what.to_owned();
    if let (Some(attempt), Some(max)) = (attempt, max) {
        let _ = write!(text, " {attempt}/{max}");
    }
    if let Some(delay) = delay {
        let _ = write!(text, ", retry in {delay}");
    }
    text
}

fn text<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value.pointer(pointer).and_then(Value::as_str)
}

fn number(value: &Value, pointer: &str) -> Option<f64> {
    value.pointer(pointer).and_then(Value::as_f64)
}

/// Milliseconds at `pointer` as whole seconds (`40 s`, or `< 1 s`).
fn seconds(value: &Value, pointer: &str) -> Option<String> {
    let ms = number(value, pointer)?;
    Some(if ms < 1000.0 {
        "< 1 s".to_owned()
    } else {
        format!("{:.0} s", ms / 1000.0)
    })
}

/// Text of a message's `content`: a string, or the text parts of a list.
fn content(content: Option<&Value>) -> Option<String> {
    match content? {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => {
            let joined: Vec<&str> = parts
                .iter()
                .filter(|p| text(p, "/type").is_none_or(|t| t == "text"))
                .filter_map(|p| text(p, "/text"))
                .collect();
            (!joined.is_empty()).then(|| joined.join(" "))
        }
        _ => None,
    }
}

/// One line of at most [`TEXT`] characters, escaped, cut with `…`.
fn clip(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    crate::table::ellipsize(&crate::fsread::escape(&flat), TEXT)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as the CLIs printed them (research/provider-clis.md §6, §7).
    #[test]
    fn raw_lines_become_words() {
        let cases: &[(Provider, &str, &str)] = &[
            (
                Provider::Claude,
                r#"{"type":"system","subtype":"api_retry","attempt":3,"max_retries":10,"retry_delay_ms":2400.5,"error_status":null,"error":"unknown","session_id":"s"}"#,
                "reconnecting (network) 3/10, retry in 2 s",
            ),
            (
                Provider::Claude,
                r#"{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":40000,"error_status":429,"error":"rate_limit"}"#,
                "rate limited, retry in 40 s",
            ),
            (
                Provider::Claude,
                r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Not logged in · Please run /login"}]},"error":"authentication_failed"}"#,
                "authentication failed: Not logged in · Please run /login",
            ),
            (
                Provider::Claude,
                r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"cargo test --all"}}]}}"#,
                "using Bash: cargo test --all",
            ),
            (
                Provider::Codex,
                r#"{"type":"error","message":"Reconnecting... 2/5 (stream disconnected before completion: failed to lookup address information)"}"#,
                "reconnecting (network) 2/5",
            ),
            (
                Provider::Codex,
                r#"{"type":"error","message":"Reconnecting... waiting for network"}"#,
                "waiting for the network",
            ),
            (
                Provider::Codex,
                r#"{"type":"item.started","item":{"id":"i","type":"command_execution","command":"bash -lc ls","status":"in_progress"}}"#,
                "running `bash -lc ls`",
            ),
            (
                Provider::Kimi,
                r#"{"role":"meta","type":"turn.step.retrying","failed_attempt":1,"next_attempt":2,"max_attempts":10,"delay_ms":528.9,"error_name":"APIConnectionError","error_message":"Connection error."}"#,
                "reconnecting (network) 1/10, retry in < 1 s",
            ),
            (
                Provider::Kimi,
                r#"{"role":"meta","type":"turn.step.retrying","failed_attempt":2,"max_attempts":10,"delay_ms":39000,"error_name":"RateLimitError","error_message":"429"}"#,
                "rate limited, retry in 39 s",
            ),
            (
                Provider::Antigravity,
                r#"{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: fetch failed sending request]"}}"#,
                "failed: [API Error: fetch failed sending request]",
            ),
            (
                Provider::Grok,
                r#"{"type":"end","stopReason":"end_turn"}"#,
                "finished",
            ),
            (
                Provider::Codex,
                "Reading prompt from stdin...",
                "Reading prompt from stdin...",
            ),
        ];
        for (provider, line, words) in cases {
            assert_eq!(describe(*provider, line).as_deref(), Some(*words), "{line}");
        }
        assert_eq!(describe(Provider::Codex, "   "), None);
    }

    #[test]
    fn words_are_one_short_escaped_line() {
        let long = format!(
            r#"{{"type":"item.completed","item":{{"type":"agent_message","text":"{}\u001b[31m"}}}}"#,
            "word ".repeat(40)
        );
        let words = describe(Provider::Codex, &long).unwrap();
        assert!(words.chars().count() <= "writing: ".len() + TEXT, "{words}");
        assert!(words.ends_with('…') && !words.contains('\u{1b}'), "{words}");
    }
}
