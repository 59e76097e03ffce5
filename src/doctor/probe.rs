//! `okstra doctor --probe`: one real headless run of a provider CLI through
//! `okstra provider-exec` (a tiny prompt, a 20 s idle timeout, a scratch
//! project), and the class of how it ended.
//!
//! [`classify`] reads the wrapper's exit code, the sidecar's `reason` and the
//! log's tail. It stands in for the dispatch engine's classifier, which owns
//! the same `Ending` words; when that lands, `probe` should call it instead.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::check::{self, Captured};
use crate::catalog::{Provider, Role};
use crate::ending::Ending;

/// The idle timeout given to provider-exec: long enough for a healthy CLI's
/// first line, short enough that a CLI retrying an unreachable API (silent
/// for ~40–60 s between attempts) is cut off quickly.
pub const PROBE_IDLE_SECS: u64 = 20;
/// Wall-time cap for the whole probe, in case a CLI keeps printing retries.
const PROBE_LIMIT: Duration = Duration::from_mins(3);
/// Lines of the log kept in the report.
const TAIL_LINES: usize = 12;
/// Bytes read from the end of the log to find those lines.
const TAIL_BYTES: u64 = 64 * 1024;
/// What the probe asks. No tools, one word back.
const PROBE_PROMPT: &str =
    "This is a connectivity check. Do not use any tools. Reply with the single word: ready\n";

/// How one probe ended.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbeReport {
    pub model: String,
    pub ending: Ending,
    /// provider-exec's exit code (the CLI's own, 124 after the idle stop).
    pub exit_code: Option<i32>,
    pub seconds: f64,
    /// The last lines of the CLI's output (or of the wrapper's message).
    pub log_tail: Vec<String>,
}

/// Run the probe for `provider` with its default analyser model.
pub fn probe(provider: Provider) -> io::Result<ProbeReport> {
    let model = provider.default_model(Role::Analyser);
    let scratch = tempfile::Builder::new().prefix("okstra-probe-").tempdir()?;
    let project = scratch.path().join("project");
    std::fs::create_dir(&project)?;
    let prompt = scratch.path().join("probe.md");
    std::fs::write(&prompt, PROBE_PROMPT)?;
    let okstra = std::env::current_exe()?;
    let timeout = PROBE_IDLE_SECS.to_string();
    let args = [
        "provider-exec",
        provider.as_str(),
        path_str(&project)?,
        model,
        path_str(&prompt)?,
        "",
        "worker",
        timeout.as_str(),
    ];
    let started = Instant::now();
    let captured = check::run_bounded(&okstra, &args, PROBE_LIMIT)?;
    let seconds = started.elapsed().as_secs_f64();
    let sidecar = crate::provider_exec::status::sidecar_path(&prompt);
    let reason = std::fs::read(&sidecar)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .and_then(|value| value.get("reason")?.as_str().map(str::to_owned));
    let log = tail(&crate::provider_exec::status::log_path(&prompt)).unwrap_or_default();
    // Before the CLI starts (preflight), the only words are the wrapper's.
    let text = if log.trim().is_empty() {
        captured.output.clone()
    } else {
        log
    };
    let ending = classify(&captured, reason.as_deref(), &text);
    let log_tail = last_lines(&text, TAIL_LINES);
    Ok(ProbeReport {
        model: model.to_owned(),
        ending,
        exit_code: captured.code,
        seconds: (seconds * 10.0).round() / 10.0,
        log_tail,
    })
}

fn path_str(path: &Path) -> io::Result<&str> {
    path.to_str()
        .ok_or_else(|| io::Error::other("the temporary folder's path is not UTF-8"))
}

/// The last `TAIL_BYTES` of a log, lossily decoded.
fn tail(path: &Path) -> io::Result<String> {
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(TAIL_BYTES)))?;
    let mut bytes = Vec::new();
    file.take(TAIL_BYTES).read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn last_lines(text: &str, count: usize) -> Vec<String> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(count)..]
        .iter()
        .map(|line| line.chars().take(300).collect())
        .collect()
}

/// Words in a CLI's output that mean it is not logged in or its key was refused.
const AUTH_MARKERS: &[&str] = &[
    "authentication_failed",
    "not logged in",
    "please run /login",
    "api key required",
    "please set an auth method",
    "no model configured",
    "invalid api key",
    "invalid_api_key",
    "401 unauthorized",
    "unauthorized",
];
/// … that it was refused for rate or quota.
const RATE_MARKERS: &[&str] = &[
    "rate_limit",
    "rate limit",
    "too many requests",
    "insufficient_quota",
    "quota exceeded",
];
/// … that the API could not be reached.
const NETWORK_MARKERS: &[&str] = &[
    "unable to connect",
    "connectionrefused",
    "enotfound",
    "connection error",
    "fetch failed",
    "reconnecting",
    "waiting for network",
    "name does not resolve",
    "failed to lookup address",
    "api_retry",
    "turn.step.retrying",
];
/// … that it rejected its command line.
const USAGE_MARKERS: &[&str] = &[
    "unknown option",
    "unexpected argument",
    "unrecognized option",
    "unknown argument",
    "is not configured in config.toml",
];

/// The ending class of a probe from the wrapper's code, the sidecar's
/// `reason` and the output text. Pure; see the module docs.
pub fn classify(captured: &Captured, reason: Option<&str>, text: &str) -> Ending {
    let lower = text.to_lowercase();
    let has = |markers: &[&str]| markers.iter().any(|m| lower.contains(m));
    let code = captured.code;
    if reason == Some("spawn-failed") || code == Some(i32::from(crate::exit::NOT_FOUND)) {
        return Ending::CliMissing;
    }
    if code.is_some_and(|c| (64..=69).contains(&c)) && reason.is_none() {
        // Refused in preflight (arguments, or a look-alike CLI).
        return Ending::UsageError;
    }
    let idle = reason == Some("idle-timeout") || code == Some(i32::from(crate::exit::TIMED_OUT));
    if has(AUTH_MARKERS) {
        return Ending::Auth;
    }
    if has(RATE_MARKERS) {
        return Ending::RateLimit;
    }
    if has(NETWORK_MARKERS) {
        return Ending::Network;
    }
    if idle || captured.timed_out {
        return Ending::IdleTimeout;
    }
    if has(USAGE_MARKERS) {
        return Ending::UsageError;
    }
    match code {
        Some(0) if lower.trim().is_empty() => Ending::EmptyOutput,
        Some(0) if lower.contains("\"is_error\":true") => Ending::Crash,
        Some(0) => Ending::Completed,
        None => Ending::Signalled,
        Some(_) => Ending::Crash,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exited(code: i32) -> Captured {
        Captured {
            code: Some(code),
            output: String::new(),
            timed_out: false,
        }
    }

    /// What claude 2.1.197 printed, not logged in, in stream-json mode.
    const CLAUDE_NOT_LOGGED_IN: &str = r#"{"type":"system","subtype":"init","cwd":"/p","session_id":"s"}
{"type":"assistant","message":{"content":[{"type":"text","text":"Not logged in · Please run /login"}]},"error":"authentication_failed"}
{"type":"result","subtype":"success","is_error":true,"result":"Not logged in · Please run /login"}
"#;

    #[test]
    fn endings_follow_the_measured_outputs() {
        let exited_1 = exited(1);
        let cases: &[(&Captured, Option<&str>, &str, Ending)] = &[
            (
                &exited_1,
                Some("exited"),
                CLAUDE_NOT_LOGGED_IN,
                Ending::Auth,
            ),
            (
                &exited(127),
                None,
                "okstra-provider-exec: error: `grok` is not on `PATH`",
                Ending::CliMissing,
            ),
            (
                &exited(124),
                Some("idle-timeout"),
                "{\"type\":\"error\",\"message\":\"Reconnecting... 2/5\"}",
                Ending::Network,
            ),
            (
                &exited(124),
                Some("idle-timeout"),
                "{\"type\":\"init\"}",
                Ending::IdleTimeout,
            ),
            (
                &exited(0),
                Some("exited"),
                "{\"role\":\"assistant\",\"content\":\"Sorry, I encountered an error: Grok API error: Connection error.\"}",
                Ending::Network,
            ),
            (
                &exited(1),
                Some("exited"),
                "error: unknown option '--prompt-file'",
                Ending::UsageError,
            ),
            (
                &exited(64),
                None,
                "okstra-provider-exec: error: the `kimi` on PATH is the legacy kimi-cli",
                Ending::UsageError,
            ),
            (
                &exited(0),
                Some("exited"),
                "{\"type\":\"result\",\"is_error\":false,\"result\":\"ready\"}",
                Ending::Completed,
            ),
            (&exited(0), Some("exited"), "", Ending::EmptyOutput),
            (&exited(2), Some("exited"), "panic", Ending::Crash),
            (
                &exited(1),
                Some("exited"),
                "❌ Error: API key required. Set GROK_API_KEY",
                Ending::Auth,
            ),
        ];
        for (captured, reason, text, want) in cases {
            assert_eq!(classify(captured, *reason, text), *want, "{text}");
        }
    }

    #[test]
    fn tails_keep_the_last_non_empty_lines() {
        assert_eq!(last_lines("a\n\nb\nc\n", 2), vec!["b", "c"]);
        assert!(last_lines("", 3).is_empty());
    }
}
