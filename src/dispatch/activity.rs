//! A CLI's latest output line, in words, for the live view: "reconnecting
//! (network) 2/5", "rate limited, retry in 40 s", "using Bash: cargo test",
//! "writing: The reservations are…". Pure: one line of a CLI's stream in,
//! decoded by its CLI's decoder (`crate::providers`), a short phrase out.
//! A line that is not one of the CLI's events is shown as it is, escaped.

use std::fmt::Write as _;

use crate::providers::{self, ErrorKind, Event, Line, Provider, RetryCause};

/// Characters of free text (an answer, a command) kept in a phrase.
const TEXT: usize = 60;

/// `line` (one line of `provider`'s output) in words; `None` for a blank
/// line or an event that says nothing a person needs. Of a line's events,
/// the last that has words speaks; the assistant's text only when no other
/// does (a message that calls a tool is shown by its tool).
pub fn describe(provider: Provider, line: &str) -> Option<String> {
    let events = match providers::decode(provider, line) {
        Line::Blank => return None,
        Line::Plain => return Some(clip(line.trim())),
        Line::Events(events) => events,
    };
    let last = |text: bool| {
        events
            .iter()
            .rev()
            .filter(|event| matches!(event, Event::Text(_) | Event::TextDelta(_)) == text)
            .find_map(phrase)
    };
    last(false).or_else(|| last(true))
}

/// One event in words, `None` for one a person does not need.
fn phrase(event: &Event) -> Option<String> {
    Some(match event {
        Event::Started { .. } => "started".to_owned(),
        Event::Text(text) | Event::TextDelta(text) => format!("writing: {}", clip(text)),
        Event::Thinking => "thinking".to_owned(),
        Event::ToolUse {
            name,
            argument: Some(argument),
        } => format!("using {name}: {}", clip(argument)),
        Event::ToolUse { name, .. } => format!("using {name}"),
        Event::Command(command) => format!("running `{}`", clip(command)),
        Event::EditFiles => "editing files".to_owned(),
        Event::WebSearch => "searching the web".to_owned(),
        Event::ToolResult => "reading a tool's output".to_owned(),
        Event::Step(step) => format!("step: {step}"),
        Event::Notice(notice) => notice.clone(),
        Event::RateLimit { .. }
        | Event::Error {
            kind: ErrorKind::RateLimit,
            code: None,
            ..
        } => "rate limited".to_owned(),
        Event::Retry {
            cause,
            attempt,
            max,
            delay_ms,
            ..
        } => {
            let delay = delay_ms.map(seconds);
            match cause {
                RetryCause::RateLimit => format!(
                    "rate limited, retry in {}",
                    delay.unwrap_or_else(|| "a moment".into())
                ),
                RetryCause::Auth => "credentials refused".to_owned(),
                RetryCause::Offline => "waiting for the network".to_owned(),
                RetryCause::Network => retrying("reconnecting (network)", *attempt, *max, delay),
                RetryCause::Other(name) => {
                    retrying(&format!("retrying ({name})"), *attempt, *max, delay)
                }
            }
        }
        Event::Error {
            code: Some(code),
            text,
            ..
        } => format!("{}: {}", code.replace('_', " "), clip(text)),
        Event::Error { text, .. } => format!("error: {}", clip(text)),
        Event::Final {
            failed: true,
            error,
        } => format!("failed: {}", clip(error.as_deref().unwrap_or(""))),
        Event::Final { failed: false, .. } => "finished".to_owned(),
        Event::Usage(_) | Event::UsageUnknown(_) | Event::SessionId(_) => return None,
    })
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

/// Milliseconds as whole seconds (`40 s`, or `< 1 s`).
fn seconds(ms: f64) -> String {
    if ms < 1000.0 {
        "< 1 s".to_owned()
    } else {
        format!("{:.0} s", ms / 1000.0)
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
