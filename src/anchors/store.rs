//! `state/anchors.json`: every accepted result's anchors as okstra checked
//! them, once.
//!
//! A result is keyed by its worker and the SHA-256 of its bytes: the first
//! time convergence (or `okstra items`) accepts a result, its items' anchors
//! are checked against the run's snapshot and stored with the snapshot's
//! id; every later read of the same bytes returns what was stored, so a
//! status never changes under a run's feet. A worker whose result changed
//! (it ran again) is checked anew. A store that is missing or unreadable
//! reads as empty: its results are checked (against the same snapshot, so
//! to the same outcome).

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::check::Checker;
use super::grammar::{self, Anchor};
use super::{Anchoring, snapshot};
use crate::run::Run;

/// Version of `state/anchors.json`.
const STORE_VERSION: u32 = 1;

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire {
    schema_version: u32,
    #[serde(default)]
    results: Vec<Stored>,
}

/// One accepted result's anchors.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    worker_id: String,
    result_sha256: String,
    /// The snapshot they were checked against (`snapshot::Record::id`).
    snapshot: String,
    checked_at: String,
    items: Vec<StoredItem>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredItem {
    id: String,
    line: usize,
    #[serde(flatten)]
    anchoring: Anchoring,
}

/// One result to check: its worker, its digest and its parsed items.
pub struct ResultToCheck<'a> {
    pub worker_id: &'a str,
    pub sha256: String,
    pub items: Vec<ItemToCheck<'a>>,
}

/// One item of a result: its id, its line and its anchors as written.
pub struct ItemToCheck<'a> {
    pub id: &'a str,
    pub line: usize,
    pub anchors: &'a [Anchor],
}

fn read(run: &Run) -> Wire {
    // As large as a report may be: 2 500 items of 32 anchors each fit.
    crate::fsread::read_no_follow(&run.layout().anchors(), crate::fsread::Kind::Report)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Wire>(&bytes).ok())
        .filter(|wire| wire.schema_version == STORE_VERSION)
        .unwrap_or_default()
}

/// Each result's items' anchors, in the order given (one [`Anchoring`] per
/// item): from the store when that result was checked before, else checked
/// now against the run's snapshot and stored.
pub fn check_results(run: &Run, results: &[ResultToCheck<'_>]) -> Result<Vec<Vec<Anchoring>>> {
    let mut wire = read(run);
    let stored_for = |wire: &Wire, result: &ResultToCheck<'_>| -> Option<Vec<Anchoring>> {
        let stored = wire.results.iter().find(|s| {
            s.worker_id == result.worker_id
                && s.result_sha256 == result.sha256
                && s.items.len() == result.items.len()
        })?;
        stored
            .items
            .iter()
            .zip(&result.items)
            .all(|(s, item)| s.id == item.id && s.line == item.line)
            .then(|| stored.items.iter().map(|s| s.anchoring.clone()).collect())
    };
    let fresh: Vec<usize> = (0..results.len())
        .filter(|&index| stored_for(&wire, &results[index]).is_none())
        .collect();
    if !fresh.is_empty() {
        let (record, reader) = snapshot::open(run)?;
        let mut checker = Checker::new(reader.as_ref(), &run.project_root);
        checker.prefetch(
            fresh
                .iter()
                .flat_map(|&index| &results[index].items)
                .flat_map(|item| item.anchors),
        );
        let checked_at = crate::clock::rfc3339_now();
        for &index in &fresh {
            let result = &results[index];
            let items = result
                .items
                .iter()
                .map(|item| StoredItem {
                    id: item.id.to_owned(),
                    line: item.line,
                    anchoring: Anchoring::new(
                        item.anchors.iter().map(|a| checker.check(a)).collect(),
                    ),
                })
                .collect();
            wire.results.retain(|s| s.worker_id != result.worker_id);
            wire.results.push(Stored {
                worker_id: result.worker_id.to_owned(),
                result_sha256: result.sha256.clone(),
                snapshot: record.id(),
                checked_at: checked_at.clone(),
                items,
            });
        }
        wire.schema_version = STORE_VERSION;
        let path = run.layout().anchors();
        let mut bytes = serde_json::to_vec(&wire)?;
        bytes.push(b'\n');
        crate::durable::write_atomic(&path, &bytes)
            .with_context(|| format!("cannot write `{}`", path.display()))?;
    }
    Ok(results
        .iter()
        .map(|result| stored_for(&wire, result).unwrap_or_default())
        .collect())
}

/// The anchors of each of `texts` (a reviewer's evidence cells), checked
/// against the run's snapshot. Not stored here: the caller keeps them with
/// the verdicts they belong to.
pub fn check_texts(run: &Run, texts: &[&str]) -> Result<Vec<Anchoring>> {
    check_anchors(run, texts.iter().map(|text| grammar::parse(text)).collect())
}

/// Each list of anchors, checked against the run's snapshot (taken now if
/// the run has none).
pub fn check_anchors(run: &Run, parsed: Vec<Vec<Anchor>>) -> Result<Vec<Anchoring>> {
    if parsed.iter().all(Vec::is_empty) {
        return Ok(parsed
            .into_iter()
            .map(|_| Anchoring::new(Vec::new()))
            .collect());
    }
    let (_, reader) = snapshot::open(run)?;
    let mut checker = Checker::new(reader.as_ref(), &run.project_root);
    checker.prefetch(parsed.iter().flatten());
    Ok(parsed
        .iter()
        .map(|anchors| Anchoring::new(anchors.iter().map(|a| checker.check(a)).collect()))
        .collect())
}
