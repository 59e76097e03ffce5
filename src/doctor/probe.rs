//! `okstra doctor --probe`: one real headless run of a provider CLI through
//! the provider-exec wrapper (`provider_exec::Launcher`: a tiny prompt, a
//! 20 s idle timeout, a scratch project), and the class of how it ended.
//!
//! The ending is decided by the dispatch engine's own classifier
//! (`dispatch::classify_answer`), from the wrapper's exit code, the sidecar's
//! `reason` and the CLI's stream.

use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::check::{self, Captured};
use crate::catalog::{Provider, Role};
use crate::child::Subreaper;
use crate::vocab::Ending;

/// The idle timeout given to provider-exec: long enough for a healthy CLI's
/// first line, short enough that a CLI retrying an unreachable API (silent
/// for ~40–60 s between attempts) is cut off quickly.
pub const PROBE_IDLE_SECS: u64 = 20;
/// Wall-time cap for the whole probe, in case a CLI keeps printing retries.
pub const PROBE_LIMIT: Duration = Duration::from_mins(3);
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
pub fn probe(provider: Provider, subreaper: Option<&Subreaper>) -> io::Result<ProbeReport> {
    let model = provider.default_model(Role::Analyser);
    let scratch = tempfile::Builder::new().prefix("okstra-probe-").tempdir()?;
    let project = scratch.path().join("project");
    std::fs::create_dir(&project)?;
    let prompt = scratch.path().join("probe.md");
    std::fs::write(&prompt, PROBE_PROMPT)?;
    let launcher = crate::provider_exec::Launcher::current()?;
    let timeout = PROBE_IDLE_SECS.to_string();
    let mut args = launcher.lead.to_vec();
    args.extend([
        provider.as_str(),
        path_str(&project)?,
        model,
        path_str(&prompt)?,
        "",
        "worker",
        timeout.as_str(),
    ]);
    let started = Instant::now();
    let captured = check::run_bounded(&launcher.program, &args, PROBE_LIMIT, subreaper)?;
    let seconds = started.elapsed().as_secs_f64();
    let sidecar = crate::run::layout::sidecar(&prompt);
    let reason = crate::provider_exec::sidecar::read(&sidecar)
        .ok()
        .flatten()
        .and_then(|found| found.reason)
        .map(|reason| reason.to_string());
    let log_path = crate::run::layout::log(&prompt);
    let log = tail(&log_path).unwrap_or_default();
    // Before the CLI starts (preflight), the only words are the wrapper's.
    let text = if log.trim().is_empty() {
        captured.output.clone()
    } else {
        log
    };
    let ending = ending_of(provider, &captured, reason.as_deref(), &log_path);
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

/// The last `TAIL_BYTES` of a log, lossily decoded; bounded and not
/// followed like every read (the CLI could put anything in its place).
fn tail(path: &Path) -> Result<String, crate::fsread::Error> {
    let (bytes, _) = crate::fsread::read_tail(path, TAIL_BYTES, crate::fsread::Follow::No)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn last_lines(text: &str, count: usize) -> Vec<String> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(count)..]
        .iter()
        .map(|line| line.chars().take(300).collect())
        .collect()
}

/// The probe's ending: the wall-time cap counts as an idle stop.
fn ending_of(provider: Provider, captured: &Captured, reason: Option<&str>, log: &Path) -> Ending {
    let reason = reason.or(captured.timed_out.then_some("idle-timeout"));
    crate::dispatch::classify_answer(
        provider,
        captured.code.map(i64::from),
        reason,
        log,
        &captured.output,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One probe case: provider, exit code, sidecar reason, log, wrapper
    /// stderr, and the ending it must get.
    type Case<'a> = (Provider, i32, Option<&'a str>, &'a str, &'a str, Ending);

    /// What claude 2.1.197 printed, not logged in, in stream-json mode.
    const CLAUDE_NOT_LOGGED_IN: &str = r#"{"type":"system","subtype":"init","cwd":"/p","session_id":"s"}
{"type":"assistant","message":{"content":[{"type":"text","text":"Not logged in · Please run /login"}]},"error":"authentication_failed"}
{"type":"result","subtype":"success","is_error":true,"result":"Not logged in · Please run /login"}
"#;

    #[test]
    fn endings_follow_the_measured_outputs() {
        let dir = tempfile::tempdir().unwrap();
        let cases: &[Case<'_>] = &[
            (
                Provider::Claude,
                1,
                Some("exited"),
                CLAUDE_NOT_LOGGED_IN,
                "",
                Ending::Auth,
            ),
            (
                Provider::Grok,
                127,
                None,
                "",
                "okstra-provider-exec: error: `grok` is not on `PATH`",
                Ending::CliMissing,
            ),
            (
                Provider::Codex,
                124,
                Some("idle-timeout"),
                "{\"type\":\"error\",\"message\":\"Reconnecting... 2/5\"}",
                "",
                Ending::Network,
            ),
            // claude retrying an API it cannot reach, cut off by the idle
            // timeout: a network ending, as the engine classifies it.
            (
                Provider::Claude,
                124,
                Some("idle-timeout"),
                concat!(
                    r#"{"type":"system","subtype":"init","cwd":"/p","session_id":"s"}"#,
                    "\n",
                    r#"{"type":"system","subtype":"api_retry","attempt":3,"max_retries":10,"retry_delay_ms":2400.0,"error_status":null,"error":"unknown"}"#,
                ),
                "",
                Ending::Network,
            ),
            (
                Provider::Codex,
                124,
                Some("idle-timeout"),
                "{\"type\":\"turn.started\"}",
                "",
                Ending::IdleTimeout,
            ),
            (
                Provider::Grok,
                0,
                Some("exited"),
                "{\"role\":\"assistant\",\"content\":\"Sorry, I encountered an error: Grok API error: Connection error.\"}",
                "",
                Ending::Network,
            ),
            (
                Provider::Grok,
                1,
                Some("exited"),
                "error: unknown option '--prompt-file'",
                "",
                Ending::UsageError,
            ),
            (
                Provider::Kimi,
                64,
                None,
                "",
                "okstra-provider-exec: error: the `kimi` on PATH is the legacy kimi-cli",
                Ending::UsageError,
            ),
            (
                Provider::Claude,
                0,
                Some("exited"),
                "{\"type\":\"result\",\"is_error\":false,\"result\":\"ready\"}",
                "",
                Ending::Completed,
            ),
            (
                Provider::Claude,
                0,
                Some("exited"),
                "",
                "",
                Ending::EmptyOutput,
            ),
            (
                Provider::Codex,
                2,
                Some("exited"),
                "panic",
                "",
                Ending::Crash,
            ),
            (
                Provider::Grok,
                1,
                Some("exited"),
                "❌ Error: API key required. Set GROK_API_KEY",
                "",
                Ending::Auth,
            ),
        ];
        for (index, (provider, code, reason, log, stderr, want)) in cases.iter().enumerate() {
            let path = dir.path().join(format!("{index}.log"));
            std::fs::write(&path, log).unwrap();
            let captured = Captured {
                code: Some(*code),
                output: (*stderr).to_owned(),
                timed_out: false,
            };
            assert_eq!(
                ending_of(*provider, &captured, *reason, &path),
                *want,
                "{log}{stderr}"
            );
        }
    }

    #[test]
    fn tails_keep_the_last_non_empty_lines() {
        assert_eq!(last_lines("a\n\nb\nc\n", 2), vec!["b", "c"]);
        assert!(last_lines("", 3).is_empty());
    }
}
