//! The team state (`state/team-state-<runId>.json`): its attempt records,
//! and the one way to change it — read, change, validate, replace, all under
//! an exclusive lock.
//!
//! Several writers share the file: `okstra dispatch` (records before and
//! after each attempt), `okstra await` (finishing records whose dispatcher
//! died), `okstra cancel`, `okstra usage`, and a host lead. Each takes
//! `flock` on `state/.team-state.lock` for its whole read-modify-write, so no
//! update is lost, and replaces the file atomically, so no reader sees half
//! of it. Fields this module does not know are kept as they are.
//!
//! Every path a record holds is re-rooted and confined to the run when the
//! state is read: a record naming a file outside the run is refused, never
//! followed (a worker that can write into the run folder could plant one).
//!
//! An attempt's state is derived from its record by [`DispatchRecord::state`]
//! (`Queued → Held → Started → Ended`), and changed only through the
//! transition methods beside it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::{DispatchKind, Provider, Role, Runner};
use crate::durable;
use crate::run::Run;
use crate::run::layout;
use crate::schema;
use crate::vocab::Ending;
use crate::vocab::{Isolation, LandingState, Word, WorkspaceKind};

/// The team state's schema.
const SCHEMA: &str = "team-state.schema.json";

/// One attempt of one dispatch (`dispatches[]`), persisted before it starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DispatchRecord {
    pub dispatch_name: String,
    pub dispatch_kind: DispatchKind,
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
    /// The SHA-256 of the prompt bytes this attempt was given.
    #[serde(default)]
    pub prompt_sha256: Option<String>,
    /// The SHA-256 of the files the prompt points at that the step machine
    /// tracks (the report writer's inputs, the critic's ledger): a change
    /// there is a new question even when the prompt's bytes are the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs_sha256: Option<String>,
    pub result_path: PathBuf,
    pub worker_results_path: PathBuf,
    pub error_path: PathBuf,
    #[serde(default)]
    pub log_path: Option<PathBuf>,
    #[serde(default)]
    pub sidecar_path: Option<PathBuf>,
    /// RFC 3339; `None` while queued or held back by a gate.
    #[serde(default)]
    pub started_at: Option<String>,
    #[serde(default)]
    pub ended_at: Option<String>,
    #[serde(default)]
    pub dispatcher_pid: Option<i32>,
    /// The wrapper's pid, recorded as soon as it is spawned: a driver that
    /// dies before the wrapper writes its sidecar still leaves it findable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wrapper_pid: Option<i32>,
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
    pub recovered_from: Option<crate::vocab::Word<crate::vocab::Recovery>>,
    #[serde(default)]
    pub log_tail: Option<Vec<String>>,
    #[serde(default)]
    pub usage: Option<Value>,
    /// How the attempt was kept read-only: `cli-sandbox`, `git-copy`,
    /// `file-copy` or `none` (`git-worktree` in records of older okstras);
    /// a word this okstra does not know is kept as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<Word<Isolation>>,
    /// The copy the attempt works in, recorded before it is made, so
    /// `okstra reap` can remove it when its dispatcher dies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<WorkspaceRecord>,
    /// An Executor attempt's branch: its name recorded before the branch
    /// is created, its commit once okstra committed the copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<BranchRecord>,
    /// A native Executor's view of the user's repository when its attempt
    /// was recorded (see [`Guard`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guard: Option<Guard>,
    /// A `native-session` attempt's nonce, set when `okstra next` hands it
    /// to the host: the answer's result block must carry it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonce: Option<String>,
    /// The host's id of the sub-agent that ran a `native-session` attempt
    /// (its transcript carries the attempt's usage).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
}

/// An Executor attempt's branch in the user's repository
/// (`dispatches[].branch`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BranchRecord {
    /// `refs/heads/okstra/<task key>/<run id>`.
    pub name: String,
    /// The commit the attempt started from (the snapshot, or the Executor's
    /// earlier commit for a fix pass).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// The branch's tip after the attempt; `parent` when it changed nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

/// What the user's repository looked like (`dispatches[].guard`): a native
/// Executor runs in the host's own session, which okstra cannot confine, so
/// its attempt must leave all of this exactly as it was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Guard {
    /// The tree of the working tree (tracked and untracked files that are
    /// not ignored, as a snapshot takes it).
    pub tree: String,
    /// What `HEAD` names (a branch, or a commit when detached).
    pub head: String,
    /// SHA-256 of the index's entries (`git ls-files --stage`).
    pub index: String,
    /// SHA-256 of every ref outside okstra's own (`refs/okstra/`,
    /// `refs/heads/okstra/`).
    pub refs: String,
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
    /// `git-copy`, `file-copy` or `none`; a word this okstra does not know
    /// is kept as written.
    pub kind: Word<WorkspaceKind>,
    /// Milliseconds this attempt spent on the run's snapshot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_ms: Option<u64>,
    /// Milliseconds spent making the copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy_ms: Option<u64>,
    /// The commit whose files the copy held (git copies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The commit the copy's `HEAD` named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
}

fn first_attempt() -> u32 {
    1
}

/// Where an attempt is in its life, derived from its record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptState {
    /// Recorded, not started yet.
    Queued,
    /// Held back by a gate (memory, disk); its record says why.
    Held,
    /// Its wrapper (or the host's session) was started.
    Started,
    /// It ended, classified.
    Ended(Ending),
}

impl DispatchRecord {
    /// Attempt `attempt` of `dispatch_name` (worker `worker_id`), queued:
    /// who and where, nothing yet of how it went. Callers fill in the rest
    /// with struct update syntax.
    pub fn queued(
        dispatch_name: &str,
        dispatch_kind: DispatchKind,
        attempt: u32,
        worker_id: &str,
        paths: &crate::run::roster::DispatchPaths,
    ) -> DispatchRecord {
        DispatchRecord {
            dispatch_name: dispatch_name.to_owned(),
            dispatch_kind,
            attempt,
            worker_id: worker_id.to_owned(),
            role: None,
            provider: None,
            model: None,
            runner: None,
            prompt_path: paths.prompt_path.clone(),
            prompt_sha256: None,
            inputs_sha256: None,
            result_path: paths.result_path.clone(),
            worker_results_path: paths.worker_results_path.clone(),
            error_path: paths.error_path.clone(),
            log_path: None,
            sidecar_path: None,
            started_at: None,
            ended_at: None,
            dispatcher_pid: None,
            wrapper_pid: None,
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
            nonce: None,
            agent_id: None,
            branch: None,
            guard: None,
        }
    }

    /// Whether this record and `other` are the same attempt of the same dispatch.
    pub fn is_same_attempt(&self, other: &DispatchRecord) -> bool {
        self.dispatch_name == other.dispatch_name && self.attempt == other.attempt
    }

    /// The attempt's state.
    pub fn state(&self) -> AttemptState {
        match (self.ending, &self.started_at, &self.detail) {
            (Some(ending), _, _) => AttemptState::Ended(ending),
            (None, Some(_), _) => AttemptState::Started,
            (None, None, Some(_)) => AttemptState::Held,
            (None, None, None) => AttemptState::Queued,
        }
    }

    /// Queued or held → held by `why`. Returns whether the record changed
    /// (a gate that stays closed for the same reason is said once).
    pub fn hold(&mut self, why: &str) -> bool {
        debug_assert!(matches!(
            self.state(),
            AttemptState::Queued | AttemptState::Held
        ));
        if self.detail.as_deref() == Some(why) {
            return false;
        }
        self.detail = Some(why.to_owned());
        true
    }

    /// Queued or held → started, now.
    pub fn start(&mut self) {
        debug_assert!(matches!(
            self.state(),
            AttemptState::Queued | AttemptState::Held
        ));
        self.started_at = Some(crate::clock::rfc3339_now());
        self.detail = None;
    }

    /// Any state but ended → ended as `ending`, now, saying why.
    pub fn end(&mut self, ending: Ending, detail: String) {
        debug_assert!(!matches!(self.state(), AttemptState::Ended(_)));
        self.ending = Some(ending);
        self.ended_at = Some(crate::clock::rfc3339_now());
        self.detail = Some(detail);
    }

    /// Whether it ended because someone stopped it (Ctrl-C, `okstra
    /// cancel`, a signal): such an attempt is run again when the run
    /// resumes, without spending the shared retry.
    pub fn was_interrupted(&self) -> bool {
        matches!(
            self.ending,
            Some(Ending::Cancelled | Ending::Signalled | Ending::Budget)
        )
    }
}

/// The team state's attempt records, as read.
#[derive(Debug, Clone, Default)]
pub struct TeamState {
    /// Every attempt, in the order they were first recorded.
    pub dispatches: Vec<DispatchRecord>,
    /// `workers.<dispatchName>.retriesUsed`.
    pub retries_used: std::collections::BTreeMap<String, u32>,
    /// `landing`: the Executor's change was applied (`okstra land`).
    pub landing: Option<Landing>,
    /// `budget`: why the run's budget stopped it, when it did.
    pub budget: Option<Value>,
    /// `leadUsage`: the lead's own usage, when recorded.
    pub lead_usage: Option<Value>,
}

/// The team state's `landing`, written by `okstra land`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Landing {
    /// Always `landed` as this okstra writes it.
    pub state: Word<LandingState>,
    pub branch: String,
    /// The branch's tip that was applied.
    pub commit: String,
    /// The user's `HEAD` it was applied on.
    #[serde(default)]
    pub head: Option<String>,
    #[serde(default)]
    pub landed_at: Option<String>,
    /// `{path, action}` per file written.
    #[serde(default)]
    pub files: Vec<Value>,
}

/// The Executor's commits on its branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutorCommits {
    /// The branch.
    pub branch: String,
    /// The run's snapshot: what the first commit's change is taken against.
    pub snapshot: String,
    /// The commit of its own work (its latest completed attempt on its own
    /// prompt).
    pub first: String,
    /// The branch's tip: the commit of its latest completed attempt (the
    /// fix pass's, when that changed anything).
    pub tip: String,
}

impl TeamState {
    /// The latest attempt of `dispatch_name`: the highest attempt number
    /// (the one definition of "latest" every command uses).
    pub fn latest(&self, dispatch_name: &str) -> Option<&DispatchRecord> {
        self.dispatches
            .iter()
            .filter(|r| r.dispatch_name == dispatch_name)
            .max_by_key(|r| r.attempt)
    }

    /// The latest attempt of `dispatch_name` that was given the prompt at
    /// `prompt_path` (a fix pass or a repair has a prompt of its own beside
    /// the rendered one).
    pub fn latest_on(&self, dispatch_name: &str, prompt_path: &Path) -> Option<&DispatchRecord> {
        self.dispatches
            .iter()
            .filter(|r| r.dispatch_name == dispatch_name && r.prompt_path == prompt_path)
            .max_by_key(|r| r.attempt)
    }

    /// The latest attempt of every dispatch, in first-recorded order.
    pub fn latest_attempts(&self) -> Vec<&DispatchRecord> {
        let mut names: Vec<&str> = Vec::new();
        for record in &self.dispatches {
            if !names.contains(&record.dispatch_name.as_str()) {
                names.push(&record.dispatch_name);
            }
        }
        names
            .into_iter()
            .filter_map(|name| self.latest(name))
            .collect()
    }

    /// The worker's most recently recorded attempt of any of its dispatches
    /// (its own work, a review round, a critique).
    pub fn latest_of_worker(&self, worker_id: &str) -> Option<&DispatchRecord> {
        self.dispatches
            .iter()
            .rev()
            .find(|r| r.worker_id == worker_id)
    }

    /// Whether the shared retry of the assignment `assignment_name` is spent.
    pub fn retry_spent(&self, assignment_name: &str) -> bool {
        self.retries_used
            .get(assignment_name)
            .is_some_and(|used| *used >= 1)
    }

    /// The commit okstra last put on the branch of the Executor's dispatch
    /// `dispatch_name`: the branch's tip as okstra left it.
    pub fn branch_tip(&self, dispatch_name: &str) -> Option<&str> {
        self.dispatches
            .iter()
            .filter(|r| r.dispatch_name == dispatch_name)
            .filter_map(|r| Some((r.attempt, r.branch.as_ref()?.commit.as_deref()?)))
            .max_by_key(|(attempt, _)| *attempt)
            .map(|(_, commit)| commit)
    }

    /// The commits the Executor (dispatch `dispatch_name`, own prompt
    /// `own_prompt`) left on its branch, once its own work completed and
    /// was committed.
    pub fn executor_commits(
        &self,
        dispatch_name: &str,
        own_prompt: &Path,
    ) -> Option<ExecutorCommits> {
        let committed = |record: &&DispatchRecord| {
            record.dispatch_name == dispatch_name
                && record.ending == Some(Ending::Completed)
                && record.branch.as_ref().is_some_and(|b| b.commit.is_some())
        };
        let first = self
            .dispatches
            .iter()
            .filter(committed)
            .filter(|r| r.prompt_path == own_prompt)
            .max_by_key(|r| r.attempt)?;
        let tip = self
            .dispatches
            .iter()
            .filter(committed)
            .filter(|r| r.attempt >= first.attempt)
            .max_by_key(|r| r.attempt)?;
        let branch = first.branch.as_ref()?;
        Some(ExecutorCommits {
            branch: branch.name.clone(),
            snapshot: branch.parent.clone()?,
            first: branch.commit.clone()?,
            tip: tip.branch.as_ref()?.commit.clone()?,
        })
    }
}

/// Read the team state of `run` (no lock: readers see whole files), every
/// record's paths confined to the run.
pub fn read(run: &Run) -> Result<TeamState> {
    let value = read_value(&run.team_state_path)?;
    parse(run, &value)
}

/// The team state as raw JSON (for readers of fields this module does not
/// type, such as usage).
pub fn read_raw(run: &Run) -> Result<Value> {
    read_value(&run.team_state_path)
}

fn read_value(path: &Path) -> Result<Value> {
    let bytes = crate::fsread::read_no_follow(path, crate::fsread::Kind::Manifest)
        .with_context(|| format!("cannot read the team state `{}`", path.display()))?;
    serde_json::from_slice(&bytes)
        .with_context(|| format!("the team state `{}` is not valid JSON", path.display()))
}

/// The team state `value` of `run`, typed, every record's paths confined
/// to the run.
pub fn parse(run: &Run, value: &Value) -> Result<TeamState> {
    let path = &run.team_state_path;
    let mut dispatches = Vec::new();
    if let Some(items) = value.get("dispatches").and_then(Value::as_array) {
        dispatches.reserve(items.len());
        for (index, item) in items.iter().enumerate() {
            let mut record = DispatchRecord::deserialize(item).with_context(|| {
                format!(
                    "the team state `{}` has a record `dispatches[{index}]` okstra cannot read",
                    path.display()
                )
            })?;
            confine(run, &mut record).with_context(|| {
                format!(
                    "the team state `{}` is refused: record `dispatches[{index}]` (`{}`)",
                    path.display(),
                    crate::fsread::escape(&record.dispatch_name)
                )
            })?;
            dispatches.push(record);
        }
    }
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
    let landing = match value.get("landing") {
        None | Some(Value::Null) => None,
        Some(landing) => Some(Landing::deserialize(landing).with_context(|| {
            format!(
                "the team state `{}` has a `landing` okstra cannot read",
                path.display()
            )
        })?),
    };
    let present = |key: &str| value.get(key).filter(|v| !v.is_null()).cloned();
    Ok(TeamState {
        dispatches,
        retries_used,
        landing,
        budget: present("budget"),
        lead_usage: present("leadUsage"),
    })
}

/// Re-root every path of `record` to where the run is now and refuse one
/// outside the run folder.
fn confine(run: &Run, record: &mut DispatchRecord) -> Result<(), crate::confine::Error> {
    let fix = |slot: &mut PathBuf, what: &str| -> Result<(), crate::confine::Error> {
        *slot = run.confine(slot, what)?;
        Ok(())
    };
    fix(&mut record.prompt_path, "`promptPath`")?;
    fix(&mut record.result_path, "`resultPath`")?;
    fix(&mut record.worker_results_path, "`workerResultsPath`")?;
    fix(&mut record.error_path, "`errorPath`")?;
    if let Some(log) = &mut record.log_path {
        fix(log, "`logPath`")?;
    }
    if let Some(sidecar) = &mut record.sidecar_path {
        fix(sidecar, "`sidecarPath`")?;
    }
    Ok(())
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
    /// Record the run's settings (`settings`, see `run::settings`).
    Settings(Value),
    /// Record that the Executor's change landed (`landing`).
    Landed(&'a Landing),
}

/// Apply `changes` to the team state of `run` under its lock, validate the
/// result against the schema, and replace the file. Returns the new state.
pub fn update(run: &Run, changes: &[Change<'_>]) -> Result<TeamState> {
    let mut state = None;
    modify(run, |value| {
        for change in changes {
            apply(value, change)?;
        }
        // Read back before it is written: a change that would plant a path
        // outside the run is refused with nothing written.
        state = Some(parse(run, value)?);
        Ok(())
    })?;
    state.context("the team state was read back under the lock")
}

/// The one read-modify-write of the team state: under its lock, `change`
/// edits the raw JSON, the result is checked against the schema and
/// replaces the file atomically; nothing is written when either fails.
/// `okstra usage` writes its ledger through this too.
pub fn modify(run: &Run, change: impl FnOnce(&mut Value) -> Result<()>) -> Result<Value> {
    let path = &run.team_state_path;
    let _lock = lock(path, LOCK_WAIT)?;
    let mut value = read_value(path)?;
    change(&mut value)?;
    write(path, &value)?;
    Ok(value)
}

/// A change decided under the lock by [`transact`] (owned, unlike
/// [`Change`], because it is computed from the state read there).
#[derive(Debug, Clone)]
pub enum Edit {
    Put(Box<DispatchRecord>),
    SpendRetry(String),
    Terminal(String, Ending),
}

impl Edit {
    fn as_change(&self) -> Change<'_> {
        match self {
            Edit::Put(record) => Change::Put(record),
            Edit::SpendRetry(name) => Change::SpendRetry(name),
            Edit::Terminal(name, ending) => Change::Terminal(name, *ending),
        }
    }
}

/// Read the state and change it in one step under the lock: `decide` sees
/// the state as it is now and returns the edits to make and a value to
/// hand back; nothing is written when it returns no edit or fails. Two
/// processes deciding about the same attempt (two hooks, a hook and the
/// lead) therefore never both win.
pub fn transact<T>(
    run: &Run,
    decide: impl FnOnce(&TeamState) -> Result<(Vec<Edit>, T)>,
) -> Result<T> {
    transact_within(run, None, decide)
}

/// [`transact`], waiting at most `wait` for the lock (`None`: a minute);
/// a lock still held then is a busy [`durable::lock::Error`], nothing read
/// or written. For a caller that must return promptly (a host's hook).
pub fn transact_within<T>(
    run: &Run,
    wait: Option<Duration>,
    decide: impl FnOnce(&TeamState) -> Result<(Vec<Edit>, T)>,
) -> Result<T> {
    let path = &run.team_state_path;
    let _lock = lock(path, wait.unwrap_or(LOCK_WAIT))?;
    let mut value = read_value(path)?;
    let state = parse(run, &value)?;
    let (edits, out) = decide(&state)?;
    if edits.is_empty() {
        return Ok(out);
    }
    for edit in &edits {
        apply(&mut value, &edit.as_change())?;
    }
    // Read back before it is written: no edit plants a path outside the run.
    parse(run, &value)?;
    write(path, &value)?;
    Ok(out)
}

/// Check `value` against the schema and replace the team state with it.
fn write(path: &Path, value: &Value) -> Result<()> {
    check_at(path, value)?;
    let mut bytes = serde_json::to_vec_pretty(value)?;
    bytes.push(b'\n');
    durable::write_atomic(path, &bytes)
        .with_context(|| format!("cannot write the team state `{}`", path.display()))
}

/// Whether `value` is a team state `modify` would write for `run` (its
/// schema): what a read-only caller checks before it promises a write.
pub fn check(run: &Run, value: &Value) -> Result<()> {
    check_at(&run.team_state_path, value)
}

/// `value` checked against the team state's schema, named by `path`.
fn check_at(path: &Path, value: &Value) -> Result<()> {
    schema::check(
        SCHEMA,
        value,
        &format!("the team state `{}`", path.display()),
    )?;
    Ok(())
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
            // Compared on the two fields, not by parsing every record: a
            // batch of changes over a long state stays linear.
            let same = |item: &Value| {
                item.get("dispatchName").and_then(Value::as_str)
                    == Some(record.dispatch_name.as_str())
                    && item.get("attempt").and_then(Value::as_u64).unwrap_or(1)
                        == u64::from(record.attempt)
            };
            match dispatches.iter_mut().rev().find(|item| same(item)) {
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
        Change::Settings(settings) => {
            object.insert("settings".into(), settings.clone());
        }
        Change::Landed(landing) => {
            object.insert("landing".into(), serde_json::to_value(landing)?);
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

/// How long a writer waits for another's read-modify-write (milliseconds,
/// as a rule) before it gives up: a minute covers a stalled disk.
const LOCK_WAIT: Duration = Duration::from_mins(1);

/// Take the team state's lock (`state/.team-state.lock`, never opened
/// through a symlink), waiting at most `wait`; released when dropped.
fn lock(path: &Path, wait: Duration) -> Result<durable::Lock> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let lock_path = dir.join(layout::TEAM_STATE_LOCK_NAME);
    Ok(
        durable::Lock::on(&lock_path, format!("the team state `{}`", path.display()))
            .wait(wait)
            .acquire()?,
    )
}

#[cfg(test)]
mod tests;
