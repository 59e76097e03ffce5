//! The ending classifier against realistic endings of each CLI.

use pretty_assertions::assert_eq;

use super::*;
use crate::catalog::Provider;
use crate::dispatch::recover::parse;
use crate::vocab::Reason;

fn transcript(provider: Provider, lines: &[serde_json::Value], stderr: &[&str]) -> Transcript {
    let mut log = String::new();
    for value in lines {
        log.push_str(&value.to_string());
        log.push('\n');
    }
    for line in stderr {
        log.push_str(line);
        log.push('\n');
    }
    parse(provider, log.as_bytes())
}

fn ending(evidence: &Evidence<'_>) -> Ending {
    classify(evidence).0
}

#[test]
fn the_classification_table() {
    use serde_json::json;
    let empty = Transcript::default();
    let claude_auth = transcript(
        Provider::Claude,
        &[
            json!({"type":"system","subtype":"init"}),
            json!({"type":"assistant","message":{"content":[{"type":"text","text":"Not logged in · Please run /login"}]},"error":"authentication_failed"}),
            json!({"type":"result","subtype":"success","is_error":true,"result":"Not logged in · Please run /login"}),
        ],
        &[],
    );
    let claude_network = transcript(
        Provider::Claude,
        &[
            json!({"type":"system","subtype":"api_retry","error":"unknown"}),
            json!({"type":"result","is_error":true,"result":"API Error: Unable to connect to API (ConnectionRefused)"}),
        ],
        &[],
    );
    // Cut off by the idle watchdog while it retried (measured offline with
    // a fake key: ~38 s between retries), before its final error line.
    let claude_retrying = transcript(
        Provider::Claude,
        &[
            json!({"type":"system","subtype":"init"}),
            json!({"type":"system","subtype":"api_retry","attempt":3,"max_retries":10,"retry_delay_ms":2400.0,"error_status":null,"error":"unknown"}),
        ],
        &[],
    );
    let claude_rate_retry = transcript(
        Provider::Claude,
        &[
            json!({"type":"system","subtype":"api_retry","attempt":1,"error_status":429,"error":"rate_limit"}),
        ],
        &[],
    );
    let codex_offline = transcript(
        Provider::Codex,
        &[
            json!({"type":"thread.started"}),
            json!({"type":"error","message":"Reconnecting... 2/5 (stream disconnected before completion: failed to lookup address information: Name does not resolve)"}),
        ],
        &[],
    );
    let gemini_auth = transcript(
        Provider::Antigravity,
        &[],
        &[
            "Please set an Auth method in /h/.gemini/settings.json or specify one of the following environment variables before running: GEMINI_API_KEY",
        ],
    );
    let kimi_rate = transcript(
        Provider::Kimi,
        &[
            json!({"role":"meta","type":"turn.step.retrying","error_name":"RateLimitError","error_message":"429 Too Many Requests"}),
        ],
        &["error: failed to run prompt: 429"],
    );
    let reopens = crate::clock::unix_now() + 120;
    let claude_window = transcript(
        Provider::Claude,
        &[
            json!({"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":reopens,"rateLimitType":"five_hour"}}),
            json!({"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":reopens,"rateLimitType":"five_hour","overageStatus":"rejected"}}),
            json!({"type":"result","subtype":"success","is_error":true,"result":"You've hit your limit · resets 2pm (Europe/Berlin)"}),
        ],
        &[],
    );
    let claude_informed = transcript(
        Provider::Claude,
        &[
            json!({"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":reopens,"rateLimitType":"seven_day"}}),
        ],
        &[],
    );
    let codex_quota = transcript(
        Provider::Codex,
        &[
            json!({"type":"thread.started","thread_id":"t"}),
            json!({"type":"error","message":"You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try again in 4 days 20 hours 9 minutes."}),
            json!({"type":"turn.failed","error":{"message":"You've hit your usage limit."}}),
        ],
        &[],
    );
    let vibe_grok_usage = transcript(
        Provider::Grok,
        &[],
        &["error: unknown option '--output-format'"],
    );
    let prose_about_limits = transcript(
        Provider::Codex,
        &[
            json!({"type":"item.completed","item":{"type":"agent_message","text":"The API returns 429 when the rate limit is hit."}}),
        ],
        &[],
    );
    let crashed = transcript(
        Provider::Codex,
        &[],
        &["thread 'main' panicked at core.rs:1"],
    );

    let base = |t: &'static Transcript| Evidence {
        exit_code: Some(1),
        sidecar: true,
        reason: Some(Reason::Exited),
        transcript: t,
        ..Evidence::default()
    };
    // Leak the transcripts: the table borrows them for the whole test.
    let leak = |t: Transcript| -> &'static Transcript { Box::leak(Box::new(t)) };
    let empty: &'static Transcript = leak(empty);
    let cases: Vec<(&str, Evidence<'static>, Ending)> = vec![
        (
            "result beats everything but cancel",
            Evidence {
                has_result: true,
                sidecar: true,
                reason: Some(Reason::IdleTimeout),
                exit_code: Some(124),
                ..base(empty)
            },
            Ending::Completed,
        ),
        (
            "cancel beats a result",
            Evidence {
                has_result: true,
                cancelled: true,
                ..base(empty)
            },
            Ending::Cancelled,
        ),
        (
            "no sidecar, 127",
            Evidence {
                exit_code: Some(127),
                sidecar: false,
                reason: None,
                wrapper_stderr: "okstra-provider-exec: error: `claude` is not on `PATH`",
                ..base(empty)
            },
            Ending::CliMissing,
        ),
        (
            "spawn failed",
            Evidence {
                exit_code: Some(126),
                sidecar: true,
                reason: Some(Reason::SpawnFailed),
                ..base(empty)
            },
            Ending::CliMissing,
        ),
        (
            "wrapper preflight",
            Evidence {
                exit_code: Some(67),
                sidecar: false,
                reason: None,
                ..base(empty)
            },
            Ending::UsageError,
        ),
        (
            "claude not logged in",
            base(leak(claude_auth)),
            Ending::Auth,
        ),
        (
            "claude offline",
            base(leak(claude_network)),
            Ending::Network,
        ),
        (
            "claude retrying, idle-killed",
            Evidence {
                exit_code: Some(124),
                sidecar: true,
                reason: Some(Reason::IdleTimeout),
                ..base(leak(claude_retrying))
            },
            Ending::Network,
        ),
        (
            "claude retrying a rate limit",
            Evidence {
                exit_code: Some(124),
                sidecar: true,
                reason: Some(Reason::IdleTimeout),
                ..base(leak(claude_rate_retry))
            },
            Ending::RateLimit,
        ),
        (
            "codex offline, idle-killed",
            Evidence {
                exit_code: Some(124),
                sidecar: true,
                reason: Some(Reason::IdleTimeout),
                ..base(leak(codex_offline))
            },
            Ending::Network,
        ),
        (
            "gemini auth, exit 41",
            Evidence {
                exit_code: Some(41),
                ..base(leak(gemini_auth))
            },
            Ending::Auth,
        ),
        (
            "kimi rate limited",
            base(leak(kimi_rate)),
            Ending::RateLimit,
        ),
        (
            "claude window reopens in minutes",
            base(leak(claude_window)),
            Ending::RateLimit,
        ),
        (
            "claude's informational event is no error",
            Evidence {
                exit_code: Some(0),
                ..base(leak(claude_informed))
            },
            Ending::EmptyOutput,
        ),
        (
            "codex usage limit for days",
            base(leak(codex_quota)),
            Ending::Quota,
        ),
        (
            "vibe-kit grok argv",
            base(leak(vibe_grok_usage)),
            Ending::UsageError,
        ),
        (
            "silent idle",
            Evidence {
                exit_code: Some(124),
                sidecar: true,
                reason: Some(Reason::IdleTimeout),
                ..base(empty)
            },
            Ending::IdleTimeout,
        ),
        (
            "wrapper signalled",
            Evidence {
                exit_code: Some(143),
                sidecar: true,
                reason: Some(Reason::Signal),
                ..base(empty)
            },
            Ending::Signalled,
        ),
        (
            "CLI killed",
            Evidence {
                exit_code: Some(137),
                child_signal: Some("SIGKILL"),
                ..base(empty)
            },
            Ending::Signalled,
        ),
        (
            "exit 0, no block",
            Evidence {
                exit_code: Some(0),
                ..base(empty)
            },
            Ending::EmptyOutput,
        ),
        (
            "prose is not an error",
            Evidence {
                exit_code: Some(0),
                ..base(leak(prose_about_limits))
            },
            Ending::EmptyOutput,
        ),
        ("nonzero, nothing known", base(leak(crashed)), Ending::Crash),
    ];
    for (name, evidence, want) in cases {
        assert_eq!(ending(&evidence), want, "{name}: {:?}", classify(&evidence));
    }
}

#[test]
fn a_rate_limit_carries_the_clis_retry_after() {
    use serde_json::json;
    let now = crate::clock::unix_now();
    let claude = transcript(
        Provider::Claude,
        &[
            json!({"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":now + 90,"rateLimitType":"five_hour"}}),
            json!({"type":"result","is_error":true,"result":"You've hit your limit"}),
        ],
        &[],
    );
    let evidence = Evidence {
        exit_code: Some(1),
        sidecar: true,
        reason: Some(Reason::Exited),
        transcript: &claude,
        now,
        ..Evidence::default()
    };
    let (end, detail) = classify(&evidence);
    assert_eq!(end, Ending::RateLimit);
    assert_eq!(retry_after(&evidence), Some(Duration::from_secs(90)));
    assert!(detail.starts_with("retry after 1m30s: "), "{detail}");
    // Auth comes first: a logged-out CLI that also printed a 429 is `auth`.
    let both = transcript(
        Provider::Kimi,
        &[],
        &[
            "error: failed to run prompt: No model configured",
            "429 Too Many Requests",
        ],
    );
    let evidence = Evidence {
        transcript: &both,
        ..evidence
    };
    assert_eq!(classify(&evidence).0, Ending::Auth);
}

#[test]
fn numbers_match_only_as_words() {
    assert!(contains_word("http 401 unauthorized", "401"));
    assert!(!contains_word("line 14012", "401"));
    assert!(!contains_word("a4290", "429"));
}

#[test]
fn details_are_one_printable_line() {
    let t = transcript(Provider::Codex, &[], &["bad\u{1b}]0;title\u{7} thing"]);
    let (end, detail) = classify(&Evidence {
        exit_code: Some(3),
        sidecar: true,
        reason: Some(Reason::Exited),
        transcript: &t,
        ..Evidence::default()
    });
    assert_eq!(end, Ending::Crash);
    assert!(!detail.chars().any(char::is_control), "{detail}");
}

/// What a CLI's events name as a refused login or a limit decides, whatever
/// the words: claude retrying on an `authentication_error` is `auth` (its
/// line names no auth word), and a refusal on a weekly window is a spent
/// quota with the window's reset as its hint.
#[test]
fn typed_signals_decide_before_the_words() {
    use serde_json::json;
    let now = crate::clock::unix_now();
    let refused = transcript(
        Provider::Claude,
        &[
            json!({"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"error_status":401,"error":"authentication_error"}),
        ],
        &[],
    );
    let evidence = Evidence {
        exit_code: Some(1),
        sidecar: true,
        reason: Some(Reason::Exited),
        transcript: &refused,
        now,
        ..Evidence::default()
    };
    assert_eq!(
        classify(&evidence),
        (Ending::Auth, "api_retry: authentication_error".to_owned())
    );
    let weekly = transcript(
        Provider::Claude,
        &[
            json!({"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":now + 3 * 86_400,"rateLimitType":"seven_day"}}),
        ],
        &[],
    );
    let evidence = Evidence {
        transcript: &weekly,
        ..evidence
    };
    assert_eq!(classify(&evidence).0, Ending::Quota);
    assert_eq!(retry_after(&evidence), Some(Duration::from_hours(72)));
    // A spent quota the words name outweighs a brief refusal the events name.
    let credits = transcript(
        Provider::Claude,
        &[
            json!({"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":now + 90,"rateLimitType":"five_hour"}}),
        ],
        &["Your credit balance is too low"],
    );
    let evidence = Evidence {
        transcript: &credits,
        ..evidence
    };
    assert_eq!(classify(&evidence).0, Ending::Quota);
}
