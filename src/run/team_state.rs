//! The team state (`state/team-state-<runId>.json`): its dispatch records,
//! and the one way to change it — read, change, validate, replace, all under
//! an exclusive lock.
//!
//! Several writers share the file: `okstra dispatch` (records before and
//! after each attempt), `okstra await` (finishing records whose dispatcher
//! died), `okstra usage`, and a host lead. Each takes `flock` on
//! `state/.team-state.lock` for its whole read-modify-write, so no update is
//! lost, and replaces the file atomically, so no reader sees half of it.
//! Fields this module does not know are kept as they are.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::{Provider, Role, Runner};
use crate::durable;
use crate::ending::Ending;
use crate::run::layout;
use crate::schema;

/// The team state's schema.
const SCHEMA: &str = "team-state.schema.json";
/// One attempt of one dispatch (`dispatches[]`), persisted before it starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DispatchRecord {
    pub dispatch_name: String,
    pub dispatch_kind: String,
    #[serde(default = "first_attempt")]
    pub attempt: u32,
    pub worker_id: String,
    #[serde(default)]
    pub role: Option<Role>,
    #[serde(default)]
    pub provider: Option<Provider>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub runner: Option<Runner>,
    pub prompt_path: PathBuf,
    #[serde(default)]
    pub prompt_sha256: Option<String>,
    pub result_path: PathBuf,
    pub worker_results_path: PathBuf,
    pub error_path: PathBuf,
    #[serde(default)]
    pub log_path: Option<PathBuf>,
    #[serde(default)]
    pub sidecar_path: Option<PathBuf>,
    /// RFC 3339; `None` while a gate holds the attempt back.
    #[serde(default)]
    pub started_at: Option<String>,
    #[serde(default)]
    pub ended_at: Option<String>,
    #[serde(default)]
    pub dispatcher_pid: Option<i32>,
    #[serde(default)]
    pub ending: Option<Ending>,
    #[serde(default)]
    pub exit_code: Option<i64>,
    #[serde(default)]
    pub detail: Option<String>,
    #[serde(default)]
    pub result_sha256: Option<String>,
    #[serde(default)]
    pub worker_results_sha256: Option<String>,
    #[serde(default)]
    pub recovered_from: Option<String>,
    #[serde(default)]
    pub log_tail: Option<Vec<String>>,
    #[serde(default)]
    pub usage: Option<Value>,
    /// How the attempt was kept read-only: `cli-sandbox`, `git-copy`,
    /// `file-copy` or `none` (`git-worktree` in records of older okstras);
    /// the words are `workspace::Isolation`'s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<String>,
    /// The copy the attempt works in, recorded before it is made, so
    /// `okstra reap` can remove it when its dispatcher dies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<WorkspaceRecord>,
}

/// Where an isolated attempt works (`dispatches[].workspace`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceRecord {
    /// The copy's root (its marker names the run), or for `none` the
    /// symlink to the project.
    pub path: PathBuf,
    /// The ref that keeps the run's snapshot (git copies).
    #[serde(default)]
    pub snapshot_ref: Option<String>,
    /// `git-copy`, `file-copy` or `none` (`workspace::Kind`).
    pub kind: String,
    /// Milliseconds this attempt spent on the run's snapshot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_ms: Option<u64>,
    /// Milliseconds spent making the copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy_ms: Option<u64>,
}

fn first_attempt() -> u32 {
    1
}

impl DispatchRecord {
    /// Whether this record and `other` are the same attempt of the same dispatch.
    pub fn is_same_attempt(&self, other: &DispatchRecord) -> bool {
        self.dispatch_name == other.dispatch_name && self.attempt == other.attempt
    }
}

/// The parts of the team state the run engine reads.
#[derive(Debug, Clone, Default)]
pub struct TeamState {
    pub dispatches: Vec<DispatchRecord>,
    /// `workers.<dispatchName>.retriesUsed`.
    pub retries_used: std::collections::BTreeMap<String, u32>,
}

impl TeamState {
    /// The latest attempt recorded for `dispatch_name`.
    pub fn latest(&self, dispatch_name: &str) -> Option<&DispatchRecord> {
        self.dispatches
            .iter()
            .filter(|r| r.dispatch_name == dispatch_name)
            .max_by_key(|r| r.attempt)
    }
}

/// Read the team state (no lock: readers see whole files).
pub fn read(path: &Path) -> Result<TeamState> {
    let value = read_value(path)?;
    Ok(parse(&value))
}

/// The team state as raw JSON (for readers of fields this module does not
/// type, such as usage).
pub fn read_raw(path: &Path) -> Result<Value> {
    read_value(path)
}

fn read_value(path: &Path) -> Result<Value> {
    let bytes = crate::fsread::read_no_follow(path, crate::fsread::Kind::Manifest)
        .with_context(|| format!("cannot read the team state `{}`", path.display()))?;
    serde_json::from_slice(&bytes)
        .with_context(|| format!("the team state `{}` is not valid JSON", path.display()))
}

fn parse(value: &Value) -> TeamState {
    let dispatches = value
        .get("dispatches")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| serde_json::from_value(item.clone()).ok())
                .collect()
        })
        .unwrap_or_default();
    let retries_used = value
        .get("workers")
        .and_then(Value::as_object)
        .map(|workers| {
            workers
                .iter()
                .map(|(name, worker)| {
                    let used = worker
                        .get("retriesUsed")
                        .and_then(Value::as_u64)
                        .and_then(|n| u32::try_from(n).ok())
                        .unwrap_or(0);
                    (name.clone(), used)
                })
                .collect()
        })
        .unwrap_or_default();
    TeamState {
        dispatches,
        retries_used,
    }
}

/// A change to the team state, applied under the lock.
pub enum Change<'a> {
    /// Add the record, or replace the same attempt of the same dispatch.
    Put(&'a DispatchRecord),
    /// Spend the retry of the worker whose assignment is `dispatch_name`.
    SpendRetry(&'a str),
    /// Set `workers.<dispatch_name>.terminalStatus`.
    Terminal(&'a str, Ending),
    /// Record a budget stop (`budget`).
    Budget(Value),
}

/// Apply `changes` to the team state at `path` under its lock, validate the
/// result against the schema, and replace the file. Returns the new state.
pub fn update(path: &Path, changes: &[Change<'_>]) -> Result<TeamState> {
    let value = modify(path, |value| {
        for change in changes {
            apply(value, change)?;
        }
        Ok(())
    })?;
    Ok(parse(&value))
}

/// The one read-modify-write of the team state: under its lock, `change`
/// edits the raw JSON, the result is checked against the schema and
/// replaces the file atomically; nothing is written when either fails.
/// `okstra usage` writes its ledger through this too.
pub fn modify(path: &Path, change: impl FnOnce(&mut Value) -> Result<()>) -> Result<Value> {
    let _lock = lock(path)?;
    let mut value = read_value(path)?;
    change(&mut value)?;
    schema::check(
        SCHEMA,
        &value,
        &format!("the team state `{}`", path.display()),
    )?;
    let mut bytes = serde_json::to_vec_pretty(&value)?;
    bytes.push(b'\n');
    durable::write_atomic(path, &bytes)
        .with_context(|| format!("cannot write the team state `{}`", path.display()))?;
    Ok(value)
}

fn apply(value: &mut Value, change: &Change<'_>) -> Result<()> {
    let object = value
        .as_object_mut()
        .context("the team state is not a JSON object")?;
    match change {
        Change::Put(record) => {
            let dispatches = object
                .entry("dispatches")
                .or_insert_with(|| Value::Array(Vec::new()))
                .as_array_mut()
                .context("the team state's `dispatches` is not a list")?;
            let new = serde_json::to_value(record)?;
            let existing = dispatches.iter_mut().find(|item| {
                serde_json::from_value::<DispatchRecord>((*item).clone())
                    .is_ok_and(|old| old.is_same_attempt(record))
            });
            match existing {
                Some(slot) => *slot = new,
                None => dispatches.push(new),
            }
        }
        Change::SpendRetry(name) => {
            if let Some(worker) = worker_mut(object, name) {
                worker.insert("retriesUsed".into(), Value::from(1));
            }
        }
        Change::Terminal(name, ending) => {
            if let Some(worker) = worker_mut(object, name) {
                worker.insert("terminalStatus".into(), Value::from(ending.as_str()));
            }
        }
        Change::Budget(budget) => {
            object.insert("budget".into(), budget.clone());
        }
    }
    Ok(())
}

fn worker_mut<'v>(
    object: &'v mut serde_json::Map<String, Value>,
    name: &str,
) -> Option<&'v mut serde_json::Map<String, Value>> {
    object
        .get_mut("workers")?
        .as_object_mut()?
        .get_mut(name)?
        .as_object_mut()
}

/// Take the team state's lock (released when the guard drops).
fn lock(path: &Path) -> Result<Flock<File>> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let lock_path = dir.join(layout::TEAM_STATE_LOCK_NAME);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .with_context(|| format!("cannot open the lock `{}`", lock_path.display()))?;
    Flock::lock(file, FlockArg::LockExclusive)
        .map_err(|(_, errno)| anyhow::anyhow!("cannot lock `{}`: {errno}", lock_path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state_file(dir: &Path) -> PathBuf {
        let path = dir.join("team-state-x.json");
        let value = serde_json::json!({
            "schemaVersion": 1, "createdAt": "2026-11-30T00:00:00Z", "runId": "x-001",
            "taskKey": "p/g/t", "taskType": "project-analysis", "teamName": "t",
            "dispatches": [], "checkpoints": [{"kind": "kept"}], "leadUsage": null, "usageSummary": null,
            "workers": {"claude-worker": {"workerId": "claude", "role": "analyser",
                "provider": "claude", "runner": "cli-wrapper", "terminalStatus": null, "usage": null}}
        });
        std::fs::write(&path, serde_json::to_vec(&value).unwrap()).unwrap();
        path
    }

    fn record(attempt: u32) -> DispatchRecord {
        DispatchRecord {
            dispatch_name: "claude-worker".into(),
            dispatch_kind: if attempt == 1 { "initial" } else { "retry" }.into(),
            attempt,
            worker_id: "claude".into(),
            role: Some(Role::Analyser),
            provider: Some(Provider::Claude),
            model: Some("opus".into()),
            runner: Some(Runner::CliWrapper),
            prompt_path: "/r/prompts/claude-worker.md".into(),
            prompt_sha256: None,
            result_path: "/r/results/claude-worker.md".into(),
            worker_results_path: "/r/results/claude-worker.worker-results.md".into(),
            error_path: "/r/results/claude-worker.error.md".into(),
            log_path: None,
            sidecar_path: None,
            started_at: None,
            ended_at: None,
            dispatcher_pid: Some(1),
            ending: None,
            exit_code: None,
            detail: None,
            result_sha256: None,
            worker_results_sha256: None,
            recovered_from: None,
            log_tail: None,
            usage: None,
            isolation: None,
            workspace: None,
        }
    }

    #[test]
    fn records_are_added_replaced_by_attempt_and_other_fields_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = state_file(dir.path());
        update(&path, &[Change::Put(&record(1))]).unwrap();
        let mut done = record(1);
        done.ending = Some(Ending::Network);
        update(
            &path,
            &[Change::Put(&done), Change::SpendRetry("claude-worker")],
        )
        .unwrap();
        let state = update(&path, &[Change::Put(&record(2))]).unwrap();
        assert_eq!(state.dispatches.len(), 2);
        assert_eq!(state.dispatches[0].ending, Some(Ending::Network));
        assert_eq!(state.latest("claude-worker").unwrap().attempt, 2);
        assert_eq!(state.retries_used["claude-worker"], 1);
        let raw: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(raw["checkpoints"][0]["kind"], "kept");
    }

    #[test]
    fn a_change_that_breaks_the_schema_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = state_file(dir.path());
        let before = std::fs::read(&path).unwrap();
        let mut bad = record(1);
        bad.dispatch_kind = "whenever".into();
        assert!(update(&path, &[Change::Put(&bad)]).is_err());
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }
}
