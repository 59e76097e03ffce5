//! How did an attempt end? One pure function from what an attempt left
//! behind (the wrapper's exit code, its sidecar's reason, the transcript of
//! its log, whether a result was recovered) to an [`Ending`] and a one-line
//! detail. Table-tested on realistic logs of each CLI.
//!
//! Order matters and is deliberate: our own cancellation first; then a
//! recovered result (a CLI that hung after printing its answer still
//! answered); then a wrapper that never started the CLI; then what the CLI's
//! own events and error text say (auth before network: a CLI with no
//! credentials may also fail to connect; a limit is `limit`'s to tell rate
//! from quota). A refused login or a limit the CLI's decoder typed
//! (`recover::Signal`) decides before any wording; then
//! how the wrapper ended it; then the exit code.

use std::time::Duration;

use crate::exit;

use crate::vocab::Ending;

use super::limit::{self, contains_word};
use super::recover::{Cuts, Signal, Transcript};
use crate::vocab::Reason;

/// A `crash` this quick with no output is worth the one retry: a CLI that
/// fell over at start-up, not one that worked and failed.
pub const QUICK_CRASH_SECS: u64 = 30;

/// Everything the classifier looks at.
#[derive(Debug)]
pub struct Evidence<'a> {
    /// The wrapper's exit code (`None`: it was killed by a signal).
    pub exit_code: Option<i64>,
    /// Whether the wrapper wrote a sidecar at all.
    pub sidecar: bool,
    /// The sidecar's `reason`, when the wrapper wrote one this build knows.
    pub reason: Option<Reason>,
    /// The sidecar's `child_signal`: the CLI was killed by a signal.
    pub child_signal: Option<&'a str>,
    /// okstra (dispatch) stopped this attempt on the user's request.
    pub cancelled: bool,
    /// A result block was recovered, or the worker wrote its Result Path.
    pub has_result: bool,
    pub transcript: &'a Transcript,
    /// The wrapper's own stderr (its preflight and spawn errors).
    pub wrapper_stderr: &'a str,
    /// Unix seconds when the attempt is classified: a CLI's reset time is
    /// read against it.
    pub now: i64,
}

/// A log that said nothing.
static SILENT: Transcript = Transcript {
    messages: Vec::new(),
    errors: Vec::new(),
    reported_failure: false,
    signals: Vec::new(),
    tail: Vec::new(),
    bytes: 0,
    cuts: Cuts {
        lines: 0,
        longest: 0,
        skipped: 0,
        text: 0,
    },
};

impl Default for Evidence<'_> {
    fn default() -> Self {
        Evidence {
            exit_code: None,
            sidecar: false,
            reason: None,
            child_signal: None,
            cancelled: false,
            has_result: false,
            transcript: &SILENT,
            wrapper_stderr: "",
            now: crate::clock::unix_now(),
        }
    }
}

/// Words in a CLI's error text that mean it is not logged in or its key was refused.
const AUTH: &[&str] = &[
    "not logged in",
    "authentication_failed",
    "authentication failed",
    "invalid api key",
    "invalid x-api-key",
    "api key required",
    "please set an auth method",
    "please run /login",
    "unauthorized",
    "401",
    "no model configured",
    "permission_error",
    "credentials",
];
/// … that mean the API could not be reached. claude's `api_retry` events
/// are its retries of a request that failed; one that was not an auth
/// failure or a limit (matched before) is the API not answering, as it was
/// measured offline (`research/provider-clis.md` §1).
const NETWORK: &[&str] = &[
    "api_retry",
    "unable to connect",
    "connectionrefused",
    "connection refused",
    "connection error",
    "fetch failed",
    "reconnecting",
    "waiting for network",
    "enotfound",
    "name does not resolve",
    "failed to lookup address",
    "getaddrinfo",
    "network is unreachable",
    "econnreset",
    "apiconnectionerror",
    "stream disconnected",
];
/// … that mean the CLI rejected the command line it was given.
const USAGE: &[&str] = &[
    "unknown option",
    "unexpected argument",
    "unrecognized option",
    "unrecognized argument",
    "unknown command",
    "requires --verbose",
    "invalid value for",
    "is not configured in config.toml",
    "cannot combine",
];

/// Classify one finished attempt; the detail is one line for people.
pub fn classify(evidence: &Evidence<'_>) -> (Ending, String) {
    if evidence.cancelled {
        return (Ending::Cancelled, "stopped by okstra on request".into());
    }
    if evidence.has_result {
        return (Ending::Completed, "result saved".into());
    }
    let code = evidence.exit_code;
    if !evidence.sidecar {
        // No sidecar: the wrapper refused before starting anything.
        match code {
            Some(c) if c == i64::from(exit::NOT_FOUND) => {
                return (
                    Ending::CliMissing,
                    first_line(evidence.wrapper_stderr, "the CLI is not installed"),
                );
            }
            Some(c)
                if (i64::from(exit::EXEC_USAGE)..=i64::from(exit::EXEC_TIMEOUT_ARG))
                    .contains(&c) =>
            {
                return (
                    Ending::UsageError,
                    first_line(evidence.wrapper_stderr, "the wrapper refused its arguments"),
                );
            }
            _ => {}
        }
    }
    if evidence.reason == Some(Reason::SpawnFailed) {
        return (
            Ending::CliMissing,
            first_line(evidence.wrapper_stderr, "the CLI could not be started"),
        );
    }
    let errors = error_text(evidence);
    if let Some(hit) = typed_auth(evidence.transcript).or_else(|| find(&errors, AUTH)) {
        return (Ending::Auth, hit);
    }
    if let Some(limit) = read_limit(evidence, &errors) {
        return (limit.ending(), one_line(&limit.detail()));
    }
    if let Some(hit) = find(&errors, USAGE) {
        return (Ending::UsageError, hit);
    }
    if let Some(hit) = find(&errors, NETWORK) {
        return (Ending::Network, hit);
    }
    match evidence.reason {
        Some(Reason::IdleTimeout) => {
            return (Ending::IdleTimeout, "stopped by the idle watchdog".into());
        }
        Some(Reason::Signal) => {
            return (
                Ending::Signalled,
                "the wrapper was stopped by a signal".into(),
            );
        }
        _ => {}
    }
    if let Some(signal) = evidence.child_signal {
        return (Ending::Signalled, format!("the CLI was killed by {signal}"));
    }
    match code {
        Some(0) if !evidence.transcript.reported_failure => (
            Ending::EmptyOutput,
            "the CLI exited 0 without a complete result block".into(),
        ),
        None => (
            Ending::Signalled,
            "the wrapper was killed by a signal".into(),
        ),
        Some(c) => (
            Ending::Crash,
            last_error(evidence).map_or_else(
                || format!("the CLI exited {c}"),
                |e| format!("exit {c}: {e}"),
            ),
        ),
    }
}

/// The CLI's retry-after hint, for an attempt [`classify`] calls
/// `rate-limit`.
pub fn retry_after(evidence: &Evidence<'_>) -> Option<Duration> {
    read_limit(evidence, &error_text(evidence)).and_then(|limit| limit.retry_after)
}

/// The first refusal of credentials the CLI's events named as one.
fn typed_auth(transcript: &Transcript) -> Option<String> {
    transcript.signals.iter().find_map(|signal| match signal {
        Signal::Auth(line) => Some(one_line(line)),
        Signal::Limit { .. } => None,
    })
}

/// The limit the CLI's events named (the latest reset wins), else the one
/// its error lines speak of; a spent quota the words name outweighs a
/// brief refusal the events name.
fn read_limit(evidence: &Evidence<'_>, errors: &[&str]) -> Option<limit::Limit> {
    let typed = evidence
        .transcript
        .signals
        .iter()
        .filter_map(|signal| match signal {
            Signal::Limit {
                window,
                resets_at,
                line,
            } => Some(limit::from_event(
                window.as_deref(),
                *resets_at,
                line,
                evidence.now,
            )),
            Signal::Auth(_) => None,
        })
        .max_by_key(|limit| limit.retry_after);
    let worded = limit::read(errors, evidence.now);
    match (typed, worded) {
        (Some(typed), Some(worded))
            if typed.kind == limit::Kind::RateLimit && worded.kind == limit::Kind::Quota =>
        {
            Some(worded)
        }
        (Some(typed), _) => Some(typed),
        (None, worded) => worded,
    }
}

/// The text the patterns are matched against: the CLI's error events and
/// non-JSON lines, and the wrapper's stderr — never the assistant's prose,
/// which may well discuss rate limits. Borrowed: the transcript already
/// keeps each line clipped, and nothing here copies one whole.
fn error_text<'a>(evidence: &Evidence<'a>) -> Vec<&'a str> {
    evidence
        .transcript
        .errors
        .iter()
        .map(String::as_str)
        .chain(evidence.wrapper_stderr.lines())
        .collect()
}

/// The first error line containing one of `needles` (case-insensitive).
fn find(lines: &[&str], needles: &[&str]) -> Option<String> {
    lines.iter().find_map(|line| {
        let lower = line.to_lowercase();
        needles
            .iter()
            .any(|needle| contains_word(&lower, needle))
            .then(|| one_line(line))
    })
}

fn last_error(evidence: &Evidence<'_>) -> Option<String> {
    evidence
        .transcript
        .errors
        .iter()
        .rev()
        .map(String::as_str)
        .chain(evidence.wrapper_stderr.lines().rev())
        .find(|line| !line.trim().is_empty())
        .map(one_line)
}

fn first_line(text: &str, fallback: &str) -> String {
    text.lines()
        .find(|line| !line.trim().is_empty())
        .map_or_else(|| fallback.to_owned(), one_line)
}

/// Longest detail line, in characters.
const MAX_DETAIL_CHARS: usize = 300;

/// One printable line of at most [`MAX_DETAIL_CHARS`] characters; only
/// that much of `text` is looked at, however long it is.
fn one_line(text: &str) -> String {
    let mut chars = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .skip_while(|c| c.is_whitespace());
    let mut clean: String = chars.by_ref().take(MAX_DETAIL_CHARS).collect();
    if chars.any(|c| !c.is_whitespace()) {
        clean.push('…');
    } else {
        clean.truncate(clean.trim_end().len());
    }
    clean
}

#[cfg(test)]
#[path = "classify_tests.rs"]
mod tests;
