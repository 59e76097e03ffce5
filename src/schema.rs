//! The embedded JSON Schemas, each compiled once, and validation that reports
//! every violation with its JSON-pointer path, sorted.
//!
//! Schemas live in `schemas/` and are compiled into the binary, so an
//! installed `okstra` validates without any file beside it. Validation runs on
//! the raw `serde_json::Value` before anything is deserialized or written.

use std::collections::HashMap;
use std::fmt;
use std::sync::{LazyLock, OnceLock};

use include_dir::{Dir, include_dir};
use jsonschema::Validator;
use serde::Serialize;
use serde_json::Value;

static SCHEMAS: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/schemas");

/// One compiled validator per schema file, built on first use.
static VALIDATORS: LazyLock<HashMap<&'static str, OnceLock<Result<Validator, String>>>> =
    LazyLock::new(|| {
        SCHEMAS
            .files()
            .filter_map(|file| file.path().to_str())
            .map(|name| (name, OnceLock::new()))
            .collect()
    });

/// Longest message we show for one violation; schema messages quote the
/// offending value, which can be a whole document.
const MAX_MESSAGE: usize = 240;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("no embedded schema named `{0}`")]
    Unknown(String),
    #[error("embedded schema `{name}` does not compile: {message}")]
    Broken { name: String, message: String },
    #[error("{what} breaks `{schema}`:\n{violations}")]
    Invalid {
        what: String,
        schema: String,
        violations: Violations,
    },
}

/// One schema violation.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Violation {
    /// JSON pointer into the instance (`""` is the root).
    pub pointer: String,
    pub message: String,
}

/// A sorted list of violations; `Display` prints one `pointer: message` per line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Violations(pub Vec<Violation>);

impl fmt::Display for Violations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, violation) in self.0.iter().enumerate() {
            if index > 0 {
                writeln!(f)?;
            }
            let pointer = if violation.pointer.is_empty() {
                "/"
            } else {
                &violation.pointer
            };
            write!(f, "{pointer}: {}", violation.message)?;
        }
        Ok(())
    }
}

/// The names of the embedded schemas, sorted.
pub fn names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = VALIDATORS.keys().copied().collect();
    names.sort_unstable();
    names
}

/// The raw text of an embedded schema (e.g. for the bundle's schema excerpt).
pub fn text(name: &str) -> Result<&'static str, Error> {
    SCHEMAS
        .get_file(name)
        .and_then(|file| file.contents_utf8())
        .ok_or_else(|| Error::Unknown(name.to_owned()))
}

fn validator(name: &str) -> Result<&'static Validator, Error> {
    let cell = VALIDATORS
        .get(name)
        .ok_or_else(|| Error::Unknown(name.to_owned()))?;
    let compiled = cell.get_or_init(|| {
        let schema: Value = serde_json::from_str(text(name).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
        jsonschema::validator_for(&schema).map_err(|e| e.to_string())
    });
    compiled.as_ref().map_err(|message| Error::Broken {
        name: name.to_owned(),
        message: message.clone(),
    })
}

/// Start compiling the schemas `names` on a background thread, so a later
/// [`check`] finds them ready. Compiling the manifest schemas takes a few
/// milliseconds, about as long as rendering the prompts they will check;
/// on two cores the two overlap. A schema that fails to compile reports it
/// at its first use, as without this.
pub fn prepare(names: &'static [&'static str]) {
    // A failed spawn only loses the head start.
    let _ = std::thread::Builder::new()
        .name("okstra-schemas".into())
        .spawn(move || {
            for name in names {
                let _ = validator(name);
            }
        });
}

/// Every violation of `instance` against schema `name`, sorted by pointer.
pub fn violations(name: &str, instance: &Value) -> Result<Violations, Error> {
    let validator = validator(name)?;
    let mut found: Vec<Violation> = validator
        .iter_errors(instance)
        .map(|error| {
            let mut message = error.to_string();
            if message.len() > MAX_MESSAGE {
                let mut cut = MAX_MESSAGE;
                while !message.is_char_boundary(cut) {
                    cut -= 1;
                }
                message.truncate(cut);
                message.push('…');
            }
            Violation {
                pointer: error.instance_path().to_string(),
                message,
            }
        })
        .collect();
    found.sort();
    found.dedup();
    Ok(Violations(found))
}

/// Validate, turning any violation into an error that names `what`.
pub fn check(name: &str, instance: &Value, what: &str) -> Result<(), Error> {
    // The yes/no check skips building error values: several times faster
    // on a valid document, which is the usual case.
    if validator(name)?.is_valid(instance) {
        return Ok(());
    }
    let found = violations(name, instance)?;
    if found.0.is_empty() {
        Ok(())
    } else {
        Err(Error::Invalid {
            what: what.to_owned(),
            schema: name.to_owned(),
            violations: found,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_schema_compiles() {
        let names: Vec<_> = VALIDATORS.keys().copied().collect();
        assert!(!names.is_empty());
        for name in names {
            validator(name).unwrap_or_else(|err| panic!("{err}"));
        }
    }

    #[test]
    fn unknown_schema_is_an_error() {
        assert!(matches!(
            violations("nope.json", &Value::Null),
            Err(Error::Unknown(_))
        ));
    }
}
