//! `okstra event <run-dir> <kind> [--field key=value …]`: append one lead
//! event to the run's `leadEventsPath` (through `run::events`, the one
//! appender) and echo it as a `PROGRESS:` line.

use std::collections::BTreeMap;
use std::io::{self, Write};

use anyhow::{Result, bail};

use super::Run;
use crate::cli::EventArgs;
use crate::exit::ExitStatus;
use crate::run::events::{append, progress_line};
use crate::slug;

/// Longest field value accepted (a summary, not a document).
const MAX_VALUE_BYTES: usize = 4096;
/// Longest field key.
const MAX_KEY: usize = 64;

pub fn event_command(args: &EventArgs) -> Result<ExitStatus> {
    check_kind(&args.kind)?;
    let fields = parse_fields(&args.fields)?;
    let run = Run::open(&args.run_dir)?;
    append(&run, &args.kind, &fields)?;
    let mut stdout = io::stdout().lock();
    writeln!(stdout, "{}", progress_line(&args.kind, &fields))?;
    Ok(ExitStatus::Success)
}

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
