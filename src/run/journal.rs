//! The step journal (`state/steps.json`): for each step okstra computed
//! from other files — a round plan, a round's record, the classification,
//! the report inputs, the rendered report — the digest of what it was
//! computed from, and of what it wrote.
//!
//! A resumed run redoes a step only when the digest of its inputs now
//! differs from the one recorded (a worker was re-run and its result
//! changed), so every step built on a changed result is redone and nothing
//! else is. A journal that is missing, unreadable or from another okstra
//! reads as empty: every step is then judged by its own files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::digest::sha256_hex;
use crate::run::Run;
use crate::vocab::JournalStep;

/// Version of the journal's format.
const JOURNAL_VERSION: u32 = 1;

/// One step's entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// SHA-256 over what the step read.
    pub inputs: String,
    /// SHA-256 of what it wrote (its main file), when it wrote one.
    #[serde(default)]
    pub output: Option<String>,
    pub at: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire {
    schema_version: u32,
    #[serde(default)]
    steps: BTreeMap<String, Entry>,
}

/// The journal of one run.
#[derive(Debug, Default)]
pub struct Journal {
    path: PathBuf,
    steps: BTreeMap<String, Entry>,
}

impl Journal {
    /// Read `state/steps.json` of `run` (empty when there is none).
    pub fn read(run: &Run) -> Journal {
        let path = run.layout().steps_journal();
        let steps = crate::fsread::read_no_follow(&path, crate::fsread::Kind::Manifest)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Wire>(&bytes).ok())
            .filter(|wire| wire.schema_version == JOURNAL_VERSION)
            .map(|wire| wire.steps)
            .unwrap_or_default();
        Journal { path, steps }
    }

    /// Whether nothing was recorded yet (a run made before the journal).
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The entry of `step`.
    pub fn get(&self, step: JournalStep) -> Option<&Entry> {
        self.steps.get(&step.to_string())
    }

    /// Whether `step` was done from exactly `inputs`.
    pub fn is_fresh(&self, step: JournalStep, inputs: &str) -> bool {
        self.get(step).is_some_and(|entry| entry.inputs == inputs)
    }

    /// Record that `step` was done from `inputs` and wrote `output`, and
    /// forget every step `invalidates` names (they were built on the old
    /// output; a step whose key this okstra does not read is kept).
    /// Written atomically.
    pub fn record(
        &mut self,
        step: JournalStep,
        inputs: String,
        output: Option<String>,
        invalidates: impl Fn(JournalStep) -> bool,
    ) -> Result<()> {
        let unchanged = self
            .get(step)
            .is_some_and(|e| e.inputs == inputs && e.output == output);
        if unchanged {
            return Ok(());
        }
        let key = step.to_string();
        self.steps
            .retain(|name, _| *name == key || !name.parse::<JournalStep>().is_ok_and(&invalidates));
        self.steps.insert(
            key,
            Entry {
                inputs,
                output,
                at: crate::clock::rfc3339_now(),
            },
        );
        self.write()
    }

    fn write(&self) -> Result<()> {
        let wire = Wire {
            schema_version: JOURNAL_VERSION,
            steps: self.steps.clone(),
        };
        let mut bytes = serde_json::to_vec_pretty(&wire)?;
        bytes.push(b'\n');
        crate::durable::write_atomic(&self.path, &bytes)
            .with_context(|| format!("cannot write the step journal `{}`", self.path.display()))
    }
}

/// A digest over labelled parts, in order: each part's label, its length
/// and its bytes, so no two different lists digest the same.
#[derive(Default)]
pub struct Digest {
    bytes: Vec<u8>,
}

impl Digest {
    pub fn new() -> Digest {
        Digest::default()
    }

    /// Add `label` = `value`.
    pub fn text(mut self, label: &str, value: &str) -> Digest {
        self.part(label, value.as_bytes());
        self
    }

    /// Add `label` = the bytes of `path` (or a marker that it is missing or
    /// unreadable): files are read through the bounded reader.
    pub fn file(mut self, label: &str, path: &Path) -> Digest {
        match crate::fsread::read_no_follow(path, crate::fsread::Kind::Report) {
            Ok(bytes) => {
                let hash = sha256_hex(&bytes);
                self.part(label, hash.as_bytes());
            }
            Err(_) => self.part(label, b"<missing>"),
        }
        self
    }

    fn part(&mut self, label: &str, value: &[u8]) {
        for piece in [label.as_bytes(), value] {
            self.bytes
                .extend_from_slice(&(piece.len() as u64).to_le_bytes());
            self.bytes.extend_from_slice(piece);
        }
    }

    pub fn finish(&self) -> String {
        sha256_hex(&self.bytes)
    }
}

/// The SHA-256 of the file at `path`, when it can be read.
pub fn file_sha256(path: &Path) -> Option<String> {
    crate::fsread::read_no_follow(path, crate::fsread::Kind::Report)
        .ok()
        .map(|bytes| sha256_hex(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(inputs: &str) -> Entry {
        Entry {
            inputs: inputs.to_owned(),
            output: None,
            at: "2026-12-01T00:00:00Z".to_owned(),
        }
    }

    #[test]
    fn recording_a_step_forgets_what_it_invalidates_and_keeps_unknown_steps() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal {
            path: dir.path().join("steps.json"),
            steps: ["plan-r1", "plan-r2", "classify", "lint-r1"]
                .into_iter()
                .map(|name| (name.to_owned(), entry("old")))
                .collect(),
        };
        journal
            .record(JournalStep::Plan(1), "new".to_owned(), None, |step| {
                matches!(step, JournalStep::Plan(n) if n > 1) || step == JournalStep::Classify
            })
            .unwrap();
        let names: Vec<&str> = journal.steps.keys().map(String::as_str).collect();
        assert_eq!(names, ["lint-r1", "plan-r1"]);
        assert!(journal.is_fresh(JournalStep::Plan(1), "new"));
        let written: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&journal.path).unwrap()).unwrap();
        assert!(written["steps"]["lint-r1"].is_object(), "{written}");
    }
}
