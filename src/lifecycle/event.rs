//! `okstra event <run-dir> <kind> [--field key=value …]`: append one lead
//! event to the run's `leadEventsPath` (through `run::events`, the one
//! appender) and echo it as a `PROGRESS:` line.

use std::collections::BTreeMap;

use anyhow::{Result, bail};

use super::Run;
use crate::cli::EventArgs;
use crate::diag;
use crate::run::events::{append, progress_line};
use crate::slug;
use crate::vocab::EventKind;

/// Longest field value accepted (a summary, not a document).
const MAX_VALUE_BYTES: usize = 4096;
/// Longest field key.
const MAX_KEY: usize = 64;

pub fn event_command(args: &EventArgs) -> Result<crate::output::Reply> {
    check_kind(&args.kind)?;
    let fields = parse_fields(&args.fields)?;
    check_required(&args.kind, &fields)?;
    let run = Run::open(&args.run_dir)?;
    append(&run, &args.kind, &fields)?;
    let reply = crate::output::Reply::line(progress_line(&args.kind, &fields));
    if let Ok(kind) = args.kind.parse::<EventKind>()
        && !kind.lead_may_write()
    {
        diag::warning(format_args!(
            "okstra records `{kind}` itself (`okstra next`, `okstra run`, `okstra submit`): this line only repeats it"
        ));
    }
    Ok(reply)
}

/// A field that names something okstra looks up must say it: a `session`
/// event needs its `sessionId`, and a `sessionId` is an id (it becomes
/// part of a transcript's file name), never empty.
fn check_required(kind: &str, fields: &BTreeMap<String, String>) -> Result<()> {
    match fields.get(SESSION_ID) {
        Some(id) if !crate::usage::is_valid_id(id) => bail!(
            "invalid value `{}` for field `{SESSION_ID}`: expected a session or agent id, 1 to 128 letters, digits, `-` or `_`",
            crate::fsread::escape(id)
        ),
        None if kind == EventKind::Session.as_str() => bail!(
            "a `session` event needs `--field {SESSION_ID}=<id>`: the Claude Code session or agent id"
        ),
        _ => Ok(()),
    }
}

/// The field that names a Claude Code session or agent.
const SESSION_ID: &str = "sessionId";

/// A kind is a slug (`crate::slug`).
fn check_kind(kind: &str) -> Result<()> {
    if !slug::is_slug(kind) {
        bail!(
            "invalid event kind `{kind}`: expected a lowercase slug like `phase-start` (a-z, 0-9, `.`, `_`, `-`; at most {} characters)",
            slug::MAX_LEN
        );
    }
    Ok(())
}

/// Parse `key=value` pairs; keys are identifiers, values single-line text.
fn parse_fields(raw: &[String]) -> Result<BTreeMap<String, String>> {
    let mut fields = BTreeMap::new();
    for pair in raw {
        let Some((key, value)) = pair.split_once('=') else {
            bail!("invalid value `{pair}` for `--field`: expected `key=value`");
        };
        let mut chars = key.chars();
        let key_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
            && key.len() <= MAX_KEY;
        if !key_ok {
            bail!(
                "invalid field key `{key}` in `--field {pair}`: expected a letter then letters, digits, `_`, `.` or `-` (at most {MAX_KEY})"
            );
        }
        if value.chars().any(char::is_control) {
            bail!(
                "invalid value for field `{key}`: it holds a control character (a newline?); events are one line each"
            );
        }
        if value.len() > MAX_VALUE_BYTES {
            bail!(
                "invalid value for field `{key}`: {} bytes, at most {MAX_VALUE_BYTES}",
                value.len()
            );
        }
        if fields.insert(key.to_owned(), value.to_owned()).is_some() {
            bail!("field `{key}` is given twice in `--field`");
        }
    }
    Ok(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_slugs() {
        assert!(check_kind("phase-start").is_ok());
        assert!(check_kind("worker.dispatched_2").is_ok());
        for bad in ["", "Phase", "-x", "a b", "é", &"a".repeat(129)] {
            assert!(check_kind(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_session_id_is_never_empty() {
        let fields = |pairs: &[&str]| {
            parse_fields(&pairs.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>()).unwrap()
        };
        assert!(check_required("session", &fields(&["sessionId="])).is_err());
        assert!(check_required("session", &fields(&["worker=claude-worker"])).is_err());
        assert!(check_required("note", &fields(&["sessionId=a b"])).is_err());
        assert!(check_required("session", &fields(&["sessionId=5f0c-aa_1"])).is_ok());
        assert!(check_required("phase-start", &fields(&["phase=4"])).is_ok());
    }

    #[test]
    fn fields_are_checked_one_by_one() {
        let ok = parse_fields(&["worker=codex".into(), "note=a b=c".into()]).unwrap();
        assert_eq!(ok["note"], "a b=c");
        for bad in [
            vec!["novalue".to_owned()],
            vec!["1x=v".to_owned()],
            vec!["k=line\nbreak".to_owned()],
            vec!["k=a".to_owned(), "k=b".to_owned()],
        ] {
            assert!(parse_fields(&bad).is_err(), "{bad:?}");
        }
    }
}
