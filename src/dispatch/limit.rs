//! Rate limits and quotas: what a CLI's error text says about *when* its
//! provider will take requests again, and whether waiting inside a run is
//! worth it.
//!
//! One pure reading of an attempt's error lines (the same lines the
//! classifier reads, never the assistant's prose) into a [`Limit`]: a brief
//! refusal (`rate-limit`, with the CLI's retry-after hint when it gave one)
//! or a spent quota (`quota`: a daily, weekly or monthly limit, credits or
//! billing, or a hint beyond [`QUOTA_AFTER`]). Each CLI says it its own way
//! (research/provider-clis.md and the CLIs' issue trackers):
//!
//! - claude: a `rate_limit_event` whose `status` is `rejected`, with
//!   `resetsAt` (Unix seconds) and `rateLimitType` (`five_hour`,
//!   `seven_day` …), which its decoder types (`crate::providers`) and
//!   [`from_event`] reads without wording; the text
//!   `You've hit your limit · resets 2pm (…)`; the older
//!   `Claude AI usage limit reached|<unix seconds>`; `Your credit balance is
//!   too low`.
//! - codex: `You've hit your usage limit … try again in 5 days 22 hours 11
//!   minutes.`; the API's `Please try again in 1.5s.`; `usage_limit_reached`
//!   bodies with `resets_in_seconds`; `insufficient_quota`.
//! - antigravity (Gemini): `Please retry in 35.5s.`, `"retryDelay": "35s"`,
//!   `Quota exceeded for quota metric … per day …`, `You have exhausted your
//!   daily quota`, `Usage limit reached for … Access resets at 2:13 AM`.
//! - kimi: `429 The engine is currently overloaded`, `rate_limit_reached_error`,
//!   `exceeded_current_quota_error`.
//! - grok (xAI): HTTP `Retry-After`, `used all available credits or reached
//!   its monthly spending limit`.
//!
//! A clock time without a date or zone (`resets 2pm`, `try again at 8:19
//! PM`) is not read: it is no hint, and the words around it decide.
//!
//! Also here: how long the engine waits on a hint ([`Waits`]), with jitter,
//! before the same attempt runs again without spending the shared retry.

use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;

use crate::vocab::Ending;

/// A retry-after longer than this is a spent quota, not a brief refusal:
/// no run should sit that long on one worker.
pub const QUOTA_AFTER: Duration = Duration::from_hours(1);
/// At most this many free waits per worker and engine run …
pub const MAX_WAITS: u32 = 3;
/// … and at most this long in all; past either, the shared retry (if left)
/// is what remains.
pub const MAX_WAIT_TOTAL: Duration = Duration::from_mins(30);
/// The longest hint read: anything longer is as good as forever.
const LONGEST_HINT: Duration = Duration::from_hours(24 * 366);

/// Words on an error line that make it a rate-limit or quota line.
const LIMIT_WORDS: &[&str] = &[
    "rate limit",
    "rate_limit",
    "ratelimit",
    "rate-limit",
    "429",
    "too many requests",
    "overloaded",
    "resource_exhausted",
    "resource exhausted",
    "resource has been exhausted",
    "quota",
    "usage limit",
    "usage_limit",
    "hit your limit",
    "limit reached",
];
/// Words that make a line a spent quota whatever else it says.
const QUOTA_WORDS: &[&str] = &[
    "insufficient_quota",
    "exceeded_current_quota",
    "exceeded current quota",
    "credit balance",
    "out of credits",
    "available credits",
    "spending limit",
    "extra usage",
];
/// A limit line naming a long window is a spent quota.
const LONG_WINDOW: &[&str] = &[
    "per day",
    "perday",
    "daily",
    "per month",
    "permonth",
    "monthly",
    "per week",
    "perweek",
    "weekly",
    "seven_day",
    "7-day",
];
/// Words of a plan's limit: a quota unless a short hint says it reopens soon.
const PLAN_LIMIT: &[&str] = &[
    "exceeded your current quota",
    "quota exceeded",
    "usage limit",
    "usage_limit",
    "hit your limit",
    "exhausted your",
];
/// A limit line naming a short window is a brief refusal.
const SHORT_WINDOW: &[&str] = &["per min", "perminute", "per second", "persecond"];

/// Which of the two a limit is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    RateLimit,
    Quota,
}

/// What an attempt's error lines say about a limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limit {
    pub kind: Kind,
    /// The CLI's retry-after hint, when it gave one.
    pub retry_after: Option<Duration>,
    /// The line that decided it.
    pub line: String,
}

impl Limit {
    pub fn ending(&self) -> Ending {
        match self.kind {
            Kind::RateLimit => Ending::RateLimit,
            Kind::Quota => Ending::Quota,
        }
    }

    /// The record's one-line detail: the hint first (a long line is cut at
    /// its end), then the CLI's words.
    pub fn detail(&self) -> String {
        match self.retry_after {
            Some(after) => format!("retry after {}: {}", human(after), self.line),
            None => self.line.clone(),
        }
    }
}

/// Read `lines` (an attempt's error lines) at Unix time `now`; `None` when
/// none of them speaks of a limit.
pub fn read(lines: &[&str], now: i64) -> Option<Limit> {
    let limit_lines: Vec<(&str, String)> = lines
        .iter()
        .map(|line| (*line, line.to_lowercase()))
        .filter(|(_, lower)| has_any(lower, LIMIT_WORDS) || has_any(lower, QUOTA_WORDS))
        .collect();
    let first = limit_lines.first()?;
    let limit = |kind, retry_after, line: &str| Limit {
        kind,
        retry_after,
        line: line.trim().to_owned(),
    };
    let hinted = limit_lines
        .iter()
        .filter_map(|(line, lower)| hint(lower, now).map(|after| (after, *line)))
        .max_by_key(|(after, _)| *after);
    if let Some((line, _)) = limit_lines
        .iter()
        .find(|(_, lower)| has_any(lower, QUOTA_WORDS) || has_any(lower, LONG_WINDOW))
    {
        return Some(limit(Kind::Quota, hinted.map(|(after, _)| after), line));
    }
    if let Some((after, line)) = hinted {
        let kind = if after > QUOTA_AFTER {
            Kind::Quota
        } else {
            Kind::RateLimit
        };
        return Some(limit(kind, Some(after), line));
    }
    if let Some((line, _)) = limit_lines
        .iter()
        .find(|(_, lower)| has_any(lower, PLAN_LIMIT) && !has_any(lower, SHORT_WINDOW))
    {
        return Some(limit(Kind::Quota, None, line));
    }
    Some(limit(Kind::RateLimit, None, first.0))
}

/// The limit a CLI's rate-limit event names: the provider's own `window`
/// (a long one — a day, a week — is a spent quota) and its reset time
/// (Unix seconds, read at `now`), with the error `line` it made.
pub fn from_event(window: Option<&str>, resets_at: Option<i64>, line: &str, now: i64) -> Limit {
    let retry_after = resets_at.map(|at| {
        Duration::from_secs(u64::try_from(at.saturating_sub(now)).unwrap_or(0)).min(LONGEST_HINT)
    });
    let long_window = window.is_some_and(|window| has_any(&window.to_lowercase(), LONG_WINDOW));
    let kind = if long_window || retry_after.is_some_and(|after| after > QUOTA_AFTER) {
        Kind::Quota
    } else {
        Kind::RateLimit
    };
    Limit {
        kind,
        retry_after,
        line: line.trim().to_owned(),
    }
}

fn has_any(lower: &str, words: &[&str]) -> bool {
    words.iter().any(|word| contains_word(lower, word))
}

/// `resetsAt=1778565600`, `"resets_at": 1775317531` (seconds, or
/// milliseconds when 13 digits) and claude's `usage limit reached|<seconds>`.
static RESET_AT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:resets_?at["']?\s*[:=]?\s*["']?|limit reached\|)(\d{9,13})\b"#)
        .expect("the pattern is valid")
});
/// `resets_in_seconds": 602705`.
static RESET_IN_SECONDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"resets_in_seconds["']?\s*[:=]\s*(\d{1,12})\b"#).expect("the pattern is valid")
});
/// Google's `RetryInfo`: `"retryDelay": "35s"`.
static RETRY_DELAY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"retrydelay["']?\s*[:=]\s*["']?(\d{1,9}(?:\.\d{1,9})?)s"#)
        .expect("the pattern is valid")
});
/// Phrases a duration follows: `try again in`, `retry in`, `resets in`,
/// and the HTTP header `Retry-After:` (a bare number there is seconds).
static AFTER_PHRASE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:try again in|retry in|retrying in|resets? in|available again in|(retry[-_ ]after)[:=]?)\s*")
        .expect("the pattern is valid")
});
/// One part of a duration: `22 hours`, `1m`, `35.5s`, `, and 5 minutes`.
static PART: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?:,\s*)?(?:and\s+)?(\d{1,12}(?:\.\d{1,9})?)\s*([a-z]*)")
        .expect("the pattern is valid")
});

/// The longest retry-after hint on one lower-cased line, read at `now`.
pub fn hint(lower: &str, now: i64) -> Option<Duration> {
    let mut found: Vec<Duration> = Vec::new();
    for captures in RESET_AT.captures_iter(lower) {
        let Ok(mut at) = captures[1].parse::<i64>() else {
            continue;
        };
        if captures[1].len() == 13 {
            at /= 1000;
        }
        found.push(Duration::from_secs(
            u64::try_from(at.saturating_sub(now)).unwrap_or(0),
        ));
    }
    for captures in RESET_IN_SECONDS.captures_iter(lower) {
        if let Ok(seconds) = captures[1].parse::<u64>() {
            found.push(Duration::from_secs(seconds));
        }
    }
    for captures in RETRY_DELAY.captures_iter(lower) {
        if let Ok(seconds) = captures[1].parse::<f64>() {
            found.push(seconds_f64(seconds));
        }
    }
    for captures in AFTER_PHRASE.captures_iter(lower) {
        let whole = captures.get(0).map_or(lower.len(), |m| m.end());
        let bare_is_seconds = captures.get(1).is_some();
        if let Some(after) = duration_at(&lower[whole..], bare_is_seconds) {
            found.push(after);
        }
    }
    found.into_iter().max().map(|after| after.min(LONGEST_HINT))
}

/// The duration `text` starts with: one or more `<number> <unit>` parts
/// (`5 days 22 hours 11 minutes`, `1m30s`, `35.5s`); a bare number counts
/// as seconds only where `bare_is_seconds` (an HTTP `Retry-After`).
fn duration_at(mut text: &str, bare_is_seconds: bool) -> Option<Duration> {
    let mut total = Duration::ZERO;
    let mut parts = 0;
    while let Some(captures) = PART.captures(text) {
        let Ok(number) = captures[1].parse::<f64>() else {
            break;
        };
        let unit = &captures[2];
        let scale = match unit {
            "ms" | "msec" | "millis" | "millisecond" | "milliseconds" => 0.001,
            "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
            "m" | "min" | "mins" | "minute" | "minutes" => 60.0,
            "h" | "hr" | "hrs" | "hour" | "hours" => 3600.0,
            "d" | "day" | "days" => 86_400.0,
            "w" | "week" | "weeks" => 604_800.0,
            "" if parts == 0 && bare_is_seconds => 1.0,
            _ => break,
        };
        total = total.saturating_add(seconds_f64(number * scale));
        parts += 1;
        if unit.is_empty() {
            // A bare number has no second part.
            break;
        }
        let end = captures.get(0).map_or(text.len(), |m| m.end());
        text = &text[end..];
    }
    (parts > 0).then_some(total)
}

/// `seconds` as a duration, saturating at [`LONGEST_HINT`].
fn seconds_f64(seconds: f64) -> Duration {
    Duration::try_from_secs_f64(seconds)
        .unwrap_or(LONGEST_HINT)
        .min(LONGEST_HINT)
}

/// `37s`, `4m10s`, `5h02m`, `6d22h`.
pub fn human(after: Duration) -> String {
    let seconds = after.as_secs();
    if seconds >= 86_400 {
        format!("{}d{:02}h", seconds / 86_400, (seconds % 86_400) / 3600)
    } else if after < Duration::from_secs(1) {
        format!("{}ms", after.as_millis())
    } else {
        crate::clock::short_duration(i64::try_from(seconds).unwrap_or(i64::MAX))
    }
}

/// The free waits one worker has had in this engine run.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Waits {
    pub count: u32,
    pub total: Duration,
}

impl Waits {
    /// How long to wait on `hint` before running the attempt again without
    /// spending the shared retry (the hint plus jitter, so runs that were
    /// refused together do not come back together), or `None` when this
    /// worker's waits are used up. `random` is any random number.
    pub fn next(&mut self, hint: Duration, random: u64) -> Option<Duration> {
        if hint > QUOTA_AFTER || self.count >= MAX_WAITS {
            return None;
        }
        let wait = hint.saturating_add(jitter(hint, random));
        let total = self.total.saturating_add(wait);
        if total > MAX_WAIT_TOTAL {
            return None;
        }
        self.count += 1;
        self.total = total;
        Some(wait)
    }
}

/// A random number for [`Waits::next`] (std's hasher keys are random per
/// process and per call).
pub fn random() -> u64 {
    use std::hash::BuildHasher;
    std::collections::hash_map::RandomState::new().hash_one(std::time::Instant::now())
}

/// Up to a tenth of `hint`, and at least up to a second.
fn jitter(hint: Duration, random: u64) -> Duration {
    let span = (hint / 10).max(Duration::from_secs(1));
    let span_ms = u64::try_from(span.as_millis()).unwrap_or(u64::MAX);
    Duration::from_millis(random % span_ms.max(1))
}

/// `needle` in `haystack`; a numeric needle (`401`) must stand alone.
pub(super) fn contains_word(haystack: &str, needle: &str) -> bool {
    if !needle.bytes().all(|b| b.is_ascii_digit()) {
        return haystack.contains(needle);
    }
    haystack.match_indices(needle).any(|(at, _)| {
        let before = haystack[..at].chars().next_back();
        let after = haystack[at + needle.len()..].chars().next();
        !before.is_some_and(|c| c.is_ascii_alphanumeric())
            && !after.is_some_and(|c| c.is_ascii_alphanumeric())
    })
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    const NOW: i64 = 1_800_000_000;

    /// What [`read`] makes of some lines: the kind and the hint in seconds.
    type Reading = Option<(Kind, Option<u64>)>;

    fn reads(lines: &[&str]) -> Reading {
        read(lines, NOW).map(|limit| (limit.kind, limit.retry_after.map(|d| d.as_secs())))
    }

    #[test]
    fn each_clis_words_for_a_limit() {
        use Kind::{Quota, RateLimit};
        let in_20_min = format!(
            "rate_limit_event: rejected five_hour resetsAt={}",
            NOW + 1200
        );
        let weekly = format!(
            "rate_limit_event: rejected seven_day resetsAt={}",
            NOW + 3 * 86_400
        );
        let legacy_soon = format!("Claude AI usage limit reached|{}", NOW + 600);
        let legacy_later = format!("Claude AI usage limit reached|{}", NOW + 5 * 3600);
        let usage_limit_body = r#"{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"free","resets_at":1800602705,"resets_in_seconds":602705}}"#;
        let cases: Vec<(&str, Vec<&str>, Reading)> = vec![
            // claude
            (
                "claude five-hour window, reopening soon",
                vec![
                    &in_20_min,
                    "You've hit your limit · resets 2pm (Asia/Shanghai)",
                ],
                Some((RateLimit, Some(1200))),
            ),
            (
                "claude weekly window",
                vec![&weekly],
                Some((Quota, Some(3 * 86_400))),
            ),
            (
                "claude limit with no time it can read",
                vec!["You've hit your limit · resets 2pm (Asia/Shanghai)"],
                Some((Quota, None)),
            ),
            (
                "claude legacy, soon",
                vec![&legacy_soon],
                Some((RateLimit, Some(600))),
            ),
            (
                "claude legacy, hours away",
                vec![&legacy_later],
                Some((Quota, Some(5 * 3600))),
            ),
            (
                "claude API 429",
                vec![
                    r#"API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#,
                ],
                Some((RateLimit, None)),
            ),
            (
                "claude credits",
                vec!["Your credit balance is too low to access the Anthropic API."],
                Some((Quota, None)),
            ),
            // codex
            (
                "codex plan limit, days away",
                vec![
                    "You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try again in 5 days 22 hours 11 minutes.",
                ],
                Some((Quota, Some(5 * 86_400 + 22 * 3600 + 11 * 60))),
            ),
            (
                "codex plan limit, minutes away",
                vec!["You've hit your usage limit. Try again in 42 minutes."],
                Some((RateLimit, Some(42 * 60))),
            ),
            (
                "codex plan limit at a clock time",
                vec![
                    "You've hit your usage limit. Upgrade your plan to continue, or try again at Jul 5th, 2026 8:19 PM.",
                ],
                Some((Quota, None)),
            ),
            (
                "openai per-minute",
                vec![
                    "Rate limit reached for gpt-5 in organization org-x on tokens per min (TPM): Limit 30000, Used 29500, Requested 900. Please try again in 1.5s.",
                ],
                Some((RateLimit, Some(1))),
            ),
            (
                "codex gave up",
                vec!["stream error: exceeded retry limit, last status: 429 Too Many Requests"],
                Some((RateLimit, None)),
            ),
            (
                "codex usage body",
                vec![usage_limit_body],
                Some((Quota, Some(602_705))),
            ),
            (
                "openai billing",
                vec![
                    r#"{"error":{"code":"insufficient_quota","message":"You exceeded your current quota, please check your plan and billing details."}}"#,
                ],
                Some((Quota, None)),
            ),
            // antigravity / gemini
            (
                "gemini per-minute",
                vec![
                    "You exceeded your current quota, please check your plan and billing details. Please retry in 35.5s.",
                ],
                Some((RateLimit, Some(35))),
            ),
            (
                "gemini retry delay",
                vec![
                    r#"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"20s"}]}}"#,
                ],
                Some((RateLimit, Some(20))),
            ),
            (
                "gemini per day",
                vec![
                    "Quota exceeded for quota metric 'Gemini 2.5 Pro Requests' and limit 'Gemini 2.5 Pro Requests per day per user per tier'",
                ],
                Some((Quota, None)),
            ),
            (
                "gemini daily",
                vec!["You have exhausted your daily quota on this model."],
                Some((Quota, None)),
            ),
            (
                "gemini capacity",
                vec!["[API Error: Resource has been exhausted (e.g. check quota).]"],
                Some((RateLimit, None)),
            ),
            (
                "gemini plan limit at a clock time",
                vec!["Usage limit reached for gemini-2.5-pro. Access resets at 2:13 AM PST."],
                Some((Quota, None)),
            ),
            // kimi
            (
                "kimi overloaded",
                vec![
                    "retrying: RateLimitError 429 The engine is currently overloaded, please try again later",
                ],
                Some((RateLimit, None)),
            ),
            (
                "kimi busy",
                vec![
                    r#"LLM provider error: Error code: 429 - {'error': {'message': "We're receiving too many requests at the moment. Please wait a moment and try again.", 'type': 'rate_limit_reached_error'}}"#,
                ],
                Some((RateLimit, None)),
            ),
            (
                "kimi balance",
                vec![
                    "Error code: 403 - {'error': {'message': 'Your account org-x is not active, organization org-x exceeded current quota, please check your plan and billing details', 'type': 'exceeded_current_quota_error'}}",
                ],
                Some((Quota, None)),
            ),
            // grok
            (
                "xai credits",
                vec![
                    "Your team has either used all available credits or reached its monthly spending limit.",
                ],
                Some((Quota, None)),
            ),
            (
                "xai header",
                vec!["429 Too Many Requests; Retry-After: 12"],
                Some((RateLimit, Some(12))),
            ),
            (
                "a header hours away",
                vec!["rate limited, retry-after: 7200"],
                Some((Quota, Some(7200))),
            ),
            // not limits
            (
                "a file that happens to be weekly",
                vec!["error: cannot read weekly-report.md"],
                None,
            ),
            (
                "a network hint",
                vec!["Connection error. Please try again in 5 seconds."],
                None,
            ),
            (
                "a port number",
                vec!["connect ECONNREFUSED 127.0.0.1:4290"],
                None,
            ),
        ];
        for (name, lines, expected) in cases {
            assert_eq!(reads(&lines), expected, "{name}");
        }
    }

    #[test]
    fn the_deciding_line_and_its_hint_make_the_detail() {
        let limit = read(
            &["noise", "Please try again in 1m30s. Rate limit reached."],
            NOW,
        )
        .unwrap();
        assert_eq!(limit.retry_after, Some(Duration::from_secs(90)));
        assert_eq!(
            limit.detail(),
            "retry after 1m30s: Please try again in 1m30s. Rate limit reached."
        );
        assert_eq!(limit.ending(), Ending::RateLimit);
        let quota = read(&["You have exhausted your daily quota on this model."], NOW).unwrap();
        assert_eq!(quota.ending(), Ending::Quota);
        assert_eq!(
            quota.detail(),
            "You have exhausted your daily quota on this model."
        );
    }

    #[test]
    fn durations_in_each_spelling() {
        let at = |text: &str| hint(&text.to_lowercase(), NOW);
        assert_eq!(at("try again in 6ms"), Some(Duration::from_millis(6)));
        assert_eq!(
            at("try again in 2 hours and 5 minutes"),
            Some(Duration::from_mins(125))
        );
        assert_eq!(at("try again in 1h2m3s"), Some(Duration::from_secs(3723)));
        assert_eq!(at("retry-after: 30"), Some(Duration::from_secs(30)));
        // A bare number is seconds only after `Retry-After`.
        assert_eq!(at("try again in 30"), None);
        assert_eq!(at("try again in a moment"), None);
        // A reset in the past is now; a huge one is capped, never a panic.
        assert_eq!(at(&format!("resetsAt={}", NOW - 50)), Some(Duration::ZERO));
        assert_eq!(at("try again in 99999999999 weeks"), Some(LONGEST_HINT));
        assert_eq!(
            at(&format!("resets_at: {}000", NOW + 10)),
            Some(Duration::from_secs(10))
        );
    }

    #[test]
    fn waits_are_bounded_in_number_and_in_total() {
        let mut waits = Waits::default();
        let hint = Duration::from_mins(1);
        for _ in 0..MAX_WAITS {
            let wait = waits.next(hint, 123_456).unwrap();
            assert!(
                wait >= hint && wait < hint + Duration::from_secs(6),
                "{wait:?}"
            );
        }
        assert_eq!(waits.next(hint, 0), None, "a fourth wait");
        let mut long = Waits::default();
        assert!(long.next(Duration::from_mins(25), 0).is_some());
        assert_eq!(
            long.next(Duration::from_mins(10), 0),
            None,
            "past the total"
        );
        assert_eq!(
            Waits::default().next(QUOTA_AFTER + Duration::from_secs(1), 0),
            None
        );
        // Jitter stays under its span, for any random number.
        for random in [0, 1, 999, u64::MAX] {
            assert!(jitter(Duration::ZERO, random) < Duration::from_secs(1));
            assert!(jitter(Duration::from_mins(10), random) < Duration::from_mins(1));
        }
    }
}
