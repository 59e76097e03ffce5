//! A run's records, read once: [`Records`] is everything okstra keeps about
//! a run that a fact a user reads is computed from — the manifest (the
//! opened [`Run`]), the team state (typed, and as written), the convergence
//! ledger, the round plans, the fix check, the step journal, the snapshot
//! record, and each worker's own result (parsed) with the digest of every
//! file an attempt recorded one for.
//!
//! [`Records::load`] reads them in one go under the team state's lock (a
//! shared lock: writers wait, other readers do not), so every fact a
//! command derives from them (`crate::derive`) comes from one consistent
//! picture of the run, however many of them it shows. A command loads the
//! records once and hands the same value to every derivation; nothing
//! reads these files again to recompute a fact.
//!
//! Not here: what the records mean (`crate::derive`), how they are written
//! (`team_state::transact`, `converge::ledger::write`, …).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::Value;

use crate::anchors::snapshot;
use crate::catalog::Role;
use crate::converge::fix_check;
use crate::converge::ledger::{self, Ledger, Plan};
use crate::digest::sha256_hex;
use crate::durable;
use crate::items::{self, Parsed};
use crate::severity::{self};
use crate::vocab::Severity;

use super::Run;
use super::journal::Journal;
use super::layout::{self, RunLayout};
use super::team_state::{self, TeamState};

/// How long a reader waits for a writer's read-modify-write of the team
/// state (milliseconds, as a rule).
const READ_LOCK_WAIT: std::time::Duration = std::time::Duration::from_mins(1);

/// Which optional parts [`Records::load`] reads besides the state files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts {
    /// The round plans (`state/round-plan-r<N>.json`): only convergence
    /// needs them.
    pub plans: bool,
    /// Each worker's own result read and parsed (its items, severities,
    /// digest); without it only whether the file has content is known.
    pub results: bool,
}

impl Parts {
    /// The state files and the workers' results.
    pub const FACTS: Parts = Parts {
        plans: false,
        results: true,
    };
    /// Everything, the round plans included.
    pub const ALL: Parts = Parts {
        plans: true,
        results: true,
    };
    /// The state files alone, and whether each result has content.
    pub const STATE: Parts = Parts {
        plans: false,
        results: false,
    };
    /// What recording a round needs: the state files, the round plans, and
    /// whether each result has content (it reads only the reviewers'
    /// answers).
    pub const ROUNDS: Parts = Parts {
        plans: true,
        results: false,
    };
}

/// A run's records, read once (see the module docs).
#[derive(Debug)]
pub struct Records {
    pub run: Run,
    /// The team state's attempt records, typed (an empty state when the
    /// run has none yet).
    pub state: TeamState,
    /// What of each unfinished latest attempt still ran when the records
    /// were read (`run::live`), for `derive::liveness`.
    pub live: HashMap<(String, u32), super::live::Live>,
    /// The team state as written, for the readers of its usage fields
    /// (`crate::usage`); `{}` when the run has none yet.
    pub state_value: Value,
    /// The convergence ledger, when convergence recorded one.
    pub ledger: Option<Ledger>,
    /// The round plans on disk, by round (empty unless [`Parts::plans`]).
    pub plans: BTreeMap<u32, Plan>,
    /// The verifiers' check of an implementation run's fix pass.
    pub fix_check: Option<fix_check::Plan>,
    #[expect(
        dead_code,
        reason = "read by the run-liveness derivations (an attempt's state, the run's outcome)"
    )]
    pub journal: Journal,
    /// The snapshot of the project the run's anchors are checked against.
    pub snapshot: Option<snapshot::Record>,
    pub results: Results,
}

/// The workers' results as they are on disk.
#[derive(Debug, Clone, Default)]
pub struct Results {
    /// Each rostered worker's own Result Path (its own dispatch's), by
    /// worker id: parsed when [`Parts::results`] asked for it.
    pub own: BTreeMap<String, OwnResult>,
    /// Whether `own` holds each result's content (else only `has_content`).
    pub parsed: bool,
    /// The SHA-256 of every Result Path and worker-results file an attempt
    /// recorded a digest for, as the file is now (`None`: missing, or not a
    /// regular file okstra can read).
    pub digests: HashMap<PathBuf, Option<String>>,
    /// The text of each fix-check verifier's Result Path, by path, when the
    /// run has a fix check.
    pub fix_answers: HashMap<PathBuf, String>,
}

/// One rostered worker's own result.
#[derive(Debug, Clone, Default)]
pub struct OwnResult {
    pub path: PathBuf,
    /// A regular file (not a symlink) with at least one byte: what a
    /// completed worker leaves.
    pub has_content: bool,
    /// The SHA-256 of its bytes, when it could be read.
    pub sha256: Option<String>,
    /// Its items, parsed once (within `items`' caps); none when it could
    /// not be read.
    pub parsed: Parsed,
    /// Every occurrence of every item id, counted as `okstra validate`
    /// counts them.
    pub occurrences: usize,
    /// Each item's severity on the one ladder, where it states one.
    pub severities: HashMap<String, Severity>,
    /// Why it could not be read, when it exists but could not.
    pub unreadable: Option<String>,
}

impl Records {
    /// Read the records of `run` (see [`Parts`]) under the team state's
    /// shared lock. A file that is not there yet is simply absent; one that
    /// is there but cannot be read or breaks its schema is an error.
    pub fn load(run: Run, parts: Parts) -> Result<Records> {
        let _lock = shared_lock(&run)?;
        let (state, state_value) = if run.team_state_path.exists() {
            let value = team_state::read_raw(&run)?;
            (team_state::parse(&run, &value)?, value)
        } else {
            (TeamState::default(), Value::Object(serde_json::Map::new()))
        };
        let live = super::live::probe(&state);
        let layout = RunLayout::of(&run.dir);
        let ledger_path = layout.convergence_ledger();
        let ledger = ledger::read::<Ledger>(&ledger_path, ledger::LEDGER_SCHEMA)?;
        let mut plans = BTreeMap::new();
        if parts.plans {
            let last = ledger.as_ref().map_or(0, |l| l.rounds_run) + 1;
            for round in 1..=last {
                let path = layout.round_plan(round);
                if let Some(plan) = ledger::read::<Plan>(&path, ledger::PLAN_SCHEMA)? {
                    plans.insert(round, plan);
                }
            }
        }
        let fix_check = fix_check::read(&run)?;
        let journal = Journal::read(&run);
        let snapshot = snapshot::record(&run)?;
        let mut results = Results::read(&run, &state, parts.results);
        for checker in fix_check.iter().flat_map(|plan| &plan.checkers) {
            if let Ok(text) = items::read_result(&checker.result_path) {
                results
                    .fix_answers
                    .insert(checker.result_path.clone(), text);
            }
        }
        Ok(Records {
            run,
            state,
            live,
            state_value,
            ledger,
            plans,
            fix_check,
            journal,
            snapshot,
            results,
        })
    }

    /// Open the run in `dir` and read its records.
    pub fn open(dir: &Path, parts: Parts) -> Result<Records> {
        Records::load(Run::open(dir)?, parts)
    }

    /// The layout of the run's folder.
    pub fn layout(&self) -> RunLayout<'_> {
        self.run.layout()
    }
}

impl Results {
    /// Read each rostered worker's own result (with `parse`, else only
    /// whether it has content), and digest every file an attempt recorded a
    /// digest for.
    fn read(run: &Run, state: &TeamState, parse: bool) -> Results {
        let mut results = Results {
            parsed: parse,
            ..Results::default()
        };
        for assignment in &run.assignments {
            let path = assignment.paths.result_path.clone();
            // The report writer's Result Path is the report itself.
            let own = if assignment.role == Role::ReportWriter || !parse {
                OwnResult {
                    has_content: has_content(&path),
                    path,
                    ..OwnResult::default()
                }
            } else {
                OwnResult::read(path)
            };
            results.own.insert(assignment.worker_id.clone(), own);
        }
        for record in &state.dispatches {
            let recorded = [
                (&record.result_path, record.result_sha256.is_some()),
                (
                    &record.worker_results_path,
                    record.worker_results_sha256.is_some(),
                ),
            ];
            for (path, digested) in recorded {
                if !digested || results.digests.contains_key(path) {
                    continue;
                }
                let known = results
                    .own
                    .values()
                    .find(|own| own.path == *path)
                    .and_then(|own| own.sha256.clone());
                let digest = known.or_else(|| {
                    crate::fsread::read_no_follow(path, crate::fsread::Kind::Result)
                        .ok()
                        .map(|bytes| sha256_hex(&bytes))
                });
                results.digests.insert(path.clone(), digest);
            }
        }
        results
    }
}

impl OwnResult {
    fn read(path: PathBuf) -> OwnResult {
        let has_content = has_content(&path);
        let bytes = match crate::fsread::read_no_follow(&path, crate::fsread::Kind::Result) {
            Ok(bytes) => bytes,
            Err(err) => {
                return OwnResult {
                    unreadable: (!err.is_not_found()).then(|| format!("{err:#}")),
                    path,
                    has_content,
                    ..OwnResult::default()
                };
            }
        };
        let sha256 = Some(sha256_hex(&bytes));
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(err) => String::from_utf8_lossy(err.as_bytes()).into_owned(),
        };
        let occurrences = items::counts(&text).values().map(|n| *n as usize).sum();
        let parsed = items::parse(&text);
        let severities = severity::of_items(&text, &parsed.items);
        OwnResult {
            path,
            has_content,
            sha256,
            parsed,
            occurrences,
            severities,
            unreadable: None,
        }
    }
}

/// Whether `path` is a regular file (not a symlink) with at least one byte.
pub fn has_content(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_file() && meta.len() > 0)
}

/// The team state's lock, shared, when the lock file exists: writers create
/// it, so a run no okstra ever wrote into (an archive, a CI artifact)
/// needs none, and reading it writes nothing.
fn shared_lock(run: &Run) -> Result<Option<durable::Lock>> {
    let dir = run
        .team_state_path
        .parent()
        .map_or_else(|| run.dir.join("state"), Path::to_path_buf);
    let path = dir.join(layout::TEAM_STATE_LOCK_NAME);
    let what = format!("the team state `{}`", run.team_state_path.display());
    match durable::Lock::on(&path, what)
        .existing()
        .shared()
        .wait(READ_LOCK_WAIT)
        .acquire()
    {
        Ok(lock) => Ok(Some(lock)),
        Err(err) if err.is_missing() => Ok(None),
        Err(err) => Err(err.into()),
    }
}
