//! okstra's own blocks of a report (`reliability`, `verification`,
//! `workerCoverage`, `usageSummary`, `landing`): computed from the run's
//! records once the report writer has ended, and written into data.json by
//! [`finalize`], never authored by the writer.

use super::{
    Context, Path, PathBuf, RELIABILITY_SINCE, Reliability, Result, Value, fsread, is_at_least,
    read_manifest, strict_json, verification,
};
use crate::derive;
use crate::run::{Parts, Records};

/// okstra's own blocks of a report, computed from its run's records.
pub struct Blocks {
    pub reliability: Reliability,
    /// `None` without a convergence ledger.
    pub verification: Option<verification::Verification>,
    /// Every rostered worker, the report writer included.
    pub coverage: Vec<derive::coverage::Entry>,
    pub usage: crate::usage::Summary,
    /// The landing gate's standing; `None` for a run with nothing to land.
    pub landing: Option<Value>,
}

impl Blocks {
    /// Every block the run's records give, and `report`'s evidence rows
    /// checked against the run's snapshot.
    pub fn compute(records: &Records, report: &Value) -> Result<Blocks> {
        Ok(Blocks {
            reliability: derive::reliability::of(records),
            verification: verification::compute(records, Some(report))?,
            coverage: derive::coverage::of(records),
            usage: derive::usage::summary(records),
            landing: derive::landing::standing(records)
                .map(serde_json::to_value)
                .transpose()
                .context("cannot serialise the landing block")?,
        })
    }

    /// The blocks as data.json keys (`None`: the key must be absent).
    fn entries(&self) -> Result<[(&'static str, Option<Value>); 5]> {
        Ok([
            ("landing", self.landing.clone()),
            (
                "reliability",
                Some(
                    serde_json::to_value(&self.reliability)
                        .context("cannot serialise the reliability block")?,
                ),
            ),
            (
                "verification",
                self.verification
                    .as_ref()
                    .map(serde_json::to_value)
                    .transpose()
                    .context("cannot serialise the verification block")?,
            ),
            (
                "workerCoverage",
                Some(
                    serde_json::to_value(&self.coverage)
                        .context("cannot serialise the worker coverage")?,
                ),
            ),
            (
                "usageSummary",
                Some(
                    serde_json::to_value(&self.usage)
                        .context("cannot serialise the usage summary")?,
                ),
            ),
        ])
    }
}

/// Write okstra's own blocks into the data.json of the run in `run_dir`,
/// atomically, and return them: `reliability`, `verification` (when the
/// run has a convergence ledger), `workerCoverage` and `usageSummary`. The
/// run's usage is read again first (every attempt's log or transcript, the
/// lead's) and recorded in the team state, so the report counts every
/// attempt that has ended, the report writer's own included. A 2.0 report
/// of a run written against 2.1 or later becomes 2.1. `None` (nothing
/// computed or written) for a report whose version has no such blocks (1.0,
/// or 2.0 of an older run) and for a data.json that is not a JSON object:
/// validation judges those. The file is only replaced when a block or the
/// version changes.
pub fn finalize(run_dir: &Path) -> Result<Option<Blocks>> {
    let Some(finalized) = finalized(run_dir, true)? else {
        return Ok(None);
    };
    if let Some(bytes) = &finalized.bytes {
        crate::durable::write_atomic(&finalized.data_path, bytes)
            .with_context(|| format!("cannot write `{}`", finalized.data_path.display()))?;
    }
    Ok(Some(finalized.blocks))
}

/// Whether [`finalize`] would change the data.json of the run in `run_dir`
/// as the records stand now (nothing is read but the records, nothing is
/// written).
pub fn needs_finalize(run_dir: &Path) -> Result<bool> {
    Ok(finalized(run_dir, false)?.is_some_and(|f| f.bytes.is_some()))
}

/// What [`finalize`] computes: the blocks, and the new bytes when the file
/// must change.
struct Finalized {
    data_path: PathBuf,
    blocks: Blocks,
    bytes: Option<Vec<u8>>,
}

/// With `refresh`, the run's usage is read again and recorded before the
/// blocks are computed from the records.
fn finalized(run_dir: &Path, refresh: bool) -> Result<Option<Finalized>> {
    let (data_path, run) = read_manifest(run_dir)?;
    let bytes = fsread::read(&data_path, fsread::Kind::Report)
        .with_context(|| format!("cannot read report `{}`", data_path.display()))?;
    let mut value = strict_json::from_slice(&bytes)
        .with_context(|| format!("report `{}` is not valid JSON", data_path.display()))?;
    drop(bytes);
    let expected = run.schema_version.as_deref().unwrap_or_default();
    let version = match value.get("schemaVersion").and_then(Value::as_str) {
        Some(found) if is_at_least(found, RELIABILITY_SINCE) => found.to_owned(),
        Some("2.0") if is_at_least(expected, RELIABILITY_SINCE) => RELIABILITY_SINCE.to_owned(),
        _ => return Ok(None),
    };
    if !value.is_object() {
        return Ok(None);
    }
    if refresh {
        crate::usage::record_usage(run_dir)?;
    }
    let records = Records::open(run_dir, Parts::FACTS)?;
    let blocks = Blocks::compute(&records, &value)?;
    let Some(report) = value.as_object_mut() else {
        return Ok(None);
    };
    let entries = blocks.entries()?;
    let unchanged = entries
        .iter()
        .all(|(key, wanted)| report.get(*key) == wanted.as_ref())
        && report.get("schemaVersion").and_then(Value::as_str) == Some(version.as_str());
    let bytes = if unchanged {
        None
    } else {
        report.insert("schemaVersion".to_owned(), Value::String(version));
        for (key, wanted) in entries {
            match wanted {
                Some(block) => report.insert(key.to_owned(), block),
                None => report.remove(key),
            };
        }
        let mut bytes = serde_json::to_vec_pretty(&value).context("cannot serialise the report")?;
        bytes.push(b'\n');
        Some(bytes)
    };
    Ok(Some(Finalized {
        data_path,
        blocks,
        bytes,
    }))
}
