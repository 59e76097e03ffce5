//! The decoders' shared test helpers, and the line kinds every decoder
//! shares. Each CLI's own table test sits at the bottom of its file and
//! reads the stream lines recorded in `tests/fixtures/`.

use std::path::Path;

use super::*;

/// The stream lines of the fixture at `path` (under `tests/fixtures/`):
/// each line of a `.jsonl` file, or what each `printf '…'` line of a fake
/// CLI's script prints (printf's `\\`, `\n` and octal escapes undone).
pub fn fixture(path: &str) -> Vec<String> {
    let full = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path);
    let text = std::fs::read_to_string(&full).expect("the fixture is recorded in the tree");
    if full.extension().is_some_and(|ext| ext == "jsonl") {
        return text.lines().map(str::to_owned).collect();
    }
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("printf '"))
        .filter_map(|line| line.rsplit_once('\'').map(|(format, _)| format))
        .map(|format| {
            let printed = unescape_printf(format);
            printed.trim_end_matches('\n').to_owned()
        })
        .collect()
}

/// What printf prints for a format without conversions.
fn unescape_printf(format: &str) -> String {
    let bytes = format.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] != b'\\' || at + 1 == bytes.len() {
            out.push(bytes[at]);
            at += 1;
            continue;
        }
        let next = bytes[at + 1];
        match next {
            b'\\' => out.push(b'\\'),
            b'n' => out.push(b'\n'),
            b'0'..=b'7' => {
                let digits = bytes[at + 1..]
                    .iter()
                    .take(3)
                    .take_while(|b| (b'0'..=b'7').contains(*b))
                    .count();
                let octal = std::str::from_utf8(&bytes[at + 1..at + 1 + digits])
                    .expect("octal digits are ASCII");
                out.push(u8::from_str_radix(octal, 8).expect("three octal digits fit a byte"));
                at += 1 + digits;
                continue;
            }
            other => out.extend_from_slice(&[b'\\', other]),
        }
        at += 2;
    }
    String::from_utf8(out).expect("the fixtures print UTF-8")
}

/// Each line of `lines` decoded by `provider`, beside the events expected.
pub fn assert_table(provider: Provider, lines: &[String], expected: &[Vec<Event>]) {
    assert_eq!(lines.len(), expected.len(), "one expectation per line");
    for (line, events) in lines.iter().zip(expected) {
        assert_eq!(
            decode(provider, line),
            Line::Events(events.clone()),
            "{provider}: {line}"
        );
    }
}

/// `tokens` of input and output only.
pub fn io(input: u64, output: u64) -> Tokens {
    Tokens {
        input,
        output,
        ..Tokens::default()
    }
}

#[test]
fn printf_escapes_are_undone() {
    assert_eq!(unescape_printf(r"a\\nb\302\267c\n"), "a\\nb\u{b7}c\n");
}

#[test]
fn blank_and_plain_lines_are_no_events() {
    for provider in Provider::ALL {
        assert_eq!(decode(*provider, "  \n"), Line::Blank);
        assert_eq!(
            decode(*provider, "Reading prompt from stdin..."),
            Line::Plain
        );
        assert_eq!(decode(*provider, "{not json"), Line::Plain);
        assert_eq!(decode(*provider, "{}"), Line::Events(Vec::new()));
    }
}

#[test]
fn problems_become_the_classifier_lines() {
    let limit = Event::RateLimit {
        rejected: true,
        window: Some("five_hour".into()),
        resets_at: Some(1_778_565_600),
    };
    assert_eq!(
        limit.error_line().as_deref(),
        Some("rate_limit_event: rejected five_hour resetsAt=1778565600")
    );
    let allowed = Event::RateLimit {
        rejected: false,
        window: None,
        resets_at: None,
    };
    assert_eq!(allowed.error_line(), None);
    let auth = Event::Error {
        kind: ErrorKind::Auth,
        code: Some("authentication_failed".into()),
        text: "Not logged in".into(),
    };
    assert_eq!(
        auth.error_line().as_deref(),
        Some("authentication_failed: Not logged in")
    );
    assert_eq!(Event::Text("hi".into()).error_line(), None);
}

/// Whether variable `name` is `pattern`, or starts with it when the
/// pattern ends in `*`.
fn env_matches(name: &str, pattern: &str) -> bool {
    pattern
        .strip_suffix('*')
        .map_or(name == pattern, |prefix| name.starts_with(prefix))
}

/// The descriptors agree with themselves: a CLI sees the variables that
/// hold its credentials and relocate its state (else it could not log in
/// or find its folder), and no two CLIs share a binary or a program name.
#[test]
fn every_descriptor_lets_its_cli_see_its_own_setup() {
    for provider in Provider::ALL {
        let descriptor = provider.descriptor();
        let relocation = descriptor.state.relocated_by.into_iter();
        for name in descriptor.credentials.env.iter().copied().chain(relocation) {
            assert!(
                descriptor
                    .env
                    .iter()
                    .any(|pattern| env_matches(name, pattern)),
                "{provider}: `{name}` never reaches its CLI"
            );
        }
        assert!(!descriptor.state.home.is_empty() && !descriptor.credentials.file.is_empty());
        for other in Provider::ALL.iter().filter(|other| *other != provider) {
            assert_ne!(descriptor.binary, other.descriptor().binary);
            assert_ne!(descriptor.program, other.descriptor().program);
        }
    }
}

/// The roles the catalog hands out have one default each, a CLI with a
/// model flag names its variable, and the lists the settings check and
/// the help print are the descriptors': the catalog's answers as they
/// were when each list was written out by hand.
#[test]
fn the_catalog_gives_each_role_one_default() {
    for duty in [
        |d: &Descriptor| d.duties.report_writer,
        |d: &Descriptor| d.duties.executor,
    ] {
        let defaults = Provider::ALL
            .iter()
            .filter(|provider| duty(provider.descriptor()) == Duty::ByDefault)
            .count();
        assert_eq!(defaults, 1);
    }
    for provider in Provider::ALL {
        let descriptor = provider.descriptor();
        assert!(
            descriptor.model_flag.is_none() || descriptor.model_env.is_some(),
            "{provider}: its model flag's help names a variable"
        );
    }
    let words = |providers: &[Provider]| crate::vocab::one_of(providers);
    assert_eq!(words(&Provider::report_writers()), "claude|codex");
    assert_eq!(words(&Provider::executors()), "claude|codex|antigravity");
    assert_eq!(words(&Provider::default_analysers()), "claude|codex");
    assert_eq!(Provider::default_report_writer(), Provider::Claude);
    assert_eq!(Provider::default_executor(), Provider::Claude);
    assert_eq!(Provider::Antigravity.title(), "Antigravity");
}
