//! The convergence ledger (`state/convergence-ledger.json`) and the round
//! plan (`state/round-plan-r<N>.json`): their types, and how they are read
//! and written.
//!
//! Both are validated against their schema (`schemas/convergence-ledger.
//! schema.json`, `schemas/round-plan.schema.json`) before they are parsed
//! and before they are written; writes are atomic. A ledger may be written
//! by hand or by a host lead: only `items[]` with `itemId`, `owner` and
//! `verdicts[]` is required, everything else has a default.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::anchors::{self, Checked};
use crate::durable;
use crate::items::Evidence;
use crate::schema;
use crate::vocab::{AnchorStatus, FinalClass, StopReason, Verdict};

/// Version of the ledger and round-plan formats we write.
pub const FORMAT_VERSION: u32 = 1;
pub const LEDGER_SCHEMA: &str = "convergence-ledger.schema.json";
pub const PLAN_SCHEMA: &str = "round-plan.schema.json";
/// A ledger or plan is a few hundred kilobytes at most.
const MAX_STATE_BYTES: u64 = 64 * 1024 * 1024;

/// Why a ledger or plan could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read `{}`", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{}` is not valid JSON", .path.display())]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error(transparent)]
    Schema(#[from] schema::Error),
    #[error("cannot write `{}`", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// `state/convergence-ledger.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ledger {
    #[serde(default = "format_version")]
    pub schema_version: u32,
    #[serde(default)]
    pub enabled: bool,
    #[serde(default)]
    pub adversarial: bool,
    #[serde(default)]
    pub rounds_run: u32,
    #[serde(default)]
    pub stopped_because: Option<StopReason>,
    /// Analysers that could not review, with how they ended.
    #[serde(default)]
    pub unavailable: Vec<Unavailable>,
    pub items: Vec<LedgerItem>,
}

fn format_version() -> u32 {
    FORMAT_VERSION
}

/// An analyser that could not review: it did not complete, or has no ending.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Unavailable {
    pub worker_id: String,
    /// Why it could not review, one word: its ending (`auth`,
    /// `idle-timeout`, …; `empty-output` when it ended `completed` with no
    /// result), or `not-dispatched` (no attempt recorded) or `not-ended` (an
    /// attempt recorded, no ending).
    pub terminal_status: String,
    /// The round it failed in; absent when it never completed its own work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
}

/// One item under review.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerItem {
    /// `<owner workerId>:<item id>`, as the report's `sourceItems`.
    pub item_id: String,
    pub owner: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<Evidence>,
    /// The item was cut to the per-item caps (`items::MAX_*`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    #[serde(flatten)]
    pub anchoring: Anchoring,
    #[serde(flatten)]
    pub grouping: Grouping,
    /// Who the item was sent to, round by round.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sent_to: Vec<Sent>,
    pub verdicts: Vec<VerdictEntry>,
    /// Reviewers it was sent to that gave no usable answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub no_answer: Vec<NoAnswer>,
    #[serde(default)]
    pub open: bool,
    #[serde(default)]
    pub withdrawn: bool,
    #[serde(default)]
    pub final_class: Option<FinalClass>,
    /// The other claims of its finding (`derive::identity`), in ledger
    /// order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_with: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sent {
    pub round: u32,
    pub reviewers: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VerdictEntry {
    pub round: u32,
    pub reviewer: String,
    pub verdict: Verdict,
    pub evidence: String,
    /// What a `SUPPLEMENT` adds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addition: Option<String>,
    /// Given by a stand-in for the rostered provider or model: never counted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub substitute: bool,
    /// How the evidence's anchors resolved when the verdict was recorded.
    #[serde(flatten)]
    pub anchoring: Anchoring,
    /// The reviewer said this claim is the same as that item: `same claim as
    /// Item 3a` (the evidence is the one it gave there), or `same claim as
    /// my F-2`, one of its own claims shown beside (the evidence is its
    /// own check that follows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_as: Option<String>,
}

/// An item's (or a verdict's) anchors as okstra checked them. Both absent
/// in a ledger written before anchors were checked, or by hand: such an
/// item is classified on its verdicts alone.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Anchoring {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor_status: Option<AnchorStatus>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anchors: Vec<Checked>,
}

impl From<anchors::Anchoring> for Anchoring {
    fn from(checked: anchors::Anchoring) -> Anchoring {
        Anchoring {
            anchor_status: Some(checked.anchor_status),
            anchors: checked.anchors,
        }
    }
}

impl Anchoring {
    /// Whether the anchors were checked and do not hold the claim up: it
    /// cites none, or one does not resolve.
    pub fn fails(&self) -> bool {
        self.anchor_status.is_some_and(|s| !s.is_anchored())
    }
}

/// Where a claim was presented: with the claims of other workers whose
/// anchors overlap its own. Presentation only: overlapping lines never make
/// two claims one finding (`derive::identity`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Grouping {
    /// Its group (`G-1`), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NoAnswer {
    pub round: u32,
    pub reviewer: String,
    pub reason: String,
}

/// `state/round-plan-r<N>.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub schema_version: u32,
    pub round: u32,
    pub created_at: String,
    pub run_id: String,
    pub blind: bool,
    /// Seeds each reviewer's shuffle (with its worker id), so a plan can be
    /// reproduced.
    pub seed: u64,
    pub adversarial: bool,
    /// Set when the round does not run; `reviewers` is then empty.
    pub stopped_because: Option<StopReason>,
    pub items: Vec<PlanItem>,
    pub reviewers: Vec<Reviewer>,
    /// Claims of different workers at overlapping lines, presented side by
    /// side (every member still gets its own verdict).
    #[serde(default)]
    pub groups: Vec<Group>,
    /// Items of descriptive sections, not sent to review (round 1).
    #[serde(default)]
    pub descriptive: usize,
    /// Things the plan had to skip (duplicate item ids, items past the
    /// plan's caps), one line each.
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// Claims presented together: their ids, and the file and lines they span.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Group {
    pub id: String,
    pub items: Vec<String>,
    pub at: String,
}

/// One item of a round, with everyone it goes to.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanItem {
    pub item_id: String,
    pub owner: String,
    pub section: String,
    pub text: String,
    pub evidence: Vec<Evidence>,
    /// The item was cut to the per-item caps (`items::MAX_*`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    #[serde(flatten)]
    pub anchoring: Anchoring,
    #[serde(flatten)]
    pub grouping: Grouping,
    /// The owner's result file.
    pub source: PathBuf,
    pub reviewers: Vec<String>,
    pub previous_verdicts: Vec<VerdictEntry>,
}

/// One reverify dispatch of the round: everything `okstra dispatch` needs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reviewer {
    pub worker_id: String,
    pub role: String,
    pub provider: String,
    /// The assignment's exact `modelExecutionValue`.
    pub model: String,
    pub runner: String,
    pub dispatch_name: String,
    pub dispatch_kind: String,
    pub prompt_path: PathBuf,
    pub prompt_sha256: String,
    pub result_path: PathBuf,
    pub worker_results_path: PathBuf,
    pub error_path: PathBuf,
    pub heartbeat_path: PathBuf,
    /// The reviewer's batch in the order its prompt shows it.
    pub labels: Vec<Label>,
    /// The reviewer's own claims its prompt shows as context beside the
    /// claims they overlap (item ids): `same claim as my <id>` may name
    /// one of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub own_context: Vec<String>,
}

/// A neutral label and the item it stands for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Label {
    pub label: String,
    pub item_id: String,
}

/// Free a large tree off the caller's thread: dropping a ledger of a few
/// thousand verdicts node by node costs as much as validating it, and a
/// command that exits right after need not wait for it.
pub fn discard<T: Send + 'static>(value: T) {
    // If no thread can start, the failed spawn drops the value right here.
    let _ = std::thread::Builder::new().spawn(move || drop(value));
}

/// Read, schema-check and parse a ledger or plan; `Ok(None)` if absent.
/// A FIFO, device or symlink in its place is refused, and it is cut at
/// 64 MiB (which then fails to parse).
pub fn read<T: DeserializeOwned>(path: &Path, schema_name: &str) -> Result<Option<T>, Error> {
    let file = match crate::beneath::open(
        path,
        nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_NONBLOCK | nix::fcntl::OFlag::O_NOFOLLOW,
        nix::sys::stat::Mode::empty(),
    ) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(Error::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let read_error = |source| Error::Read {
        path: path.to_path_buf(),
        source,
    };
    if !file.metadata().map_err(read_error)?.is_file() {
        return Err(read_error(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "it is not a regular file",
        )));
    }
    let mut bytes = Vec::new();
    file.take(MAX_STATE_BYTES)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    let json = |source| Error::Json {
        path: path.to_path_buf(),
        source,
    };
    let value: Value = serde_json::from_slice(&bytes).map_err(json)?;
    schema::check(schema_name, &value, &format!("`{}`", path.display()))?;
    serde_json::from_value(value).map(Some).map_err(json)
}

/// Schema-check and atomically write a ledger or plan.
pub fn write<T: Serialize>(path: &Path, schema_name: &str, value: &T) -> Result<(), Error> {
    let bytes = to_bytes(path, schema_name, value)?;
    durable::write_atomic(path, &bytes).map_err(|source| Error::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// Serialize a ledger or plan meant for `path` (compact: a ledger of a
/// thousand items is read by programs, and pretty-printing it doubled its
/// size and the time to write it). Debug builds (the tests) check it
/// against its schema first; a release build skips what its reader checks
/// again, which was a third of a large ledger's round trip.
pub fn to_bytes<T: Serialize>(path: &Path, schema_name: &str, value: &T) -> Result<Vec<u8>, Error> {
    let json = |source| Error::Json {
        path: path.to_path_buf(),
        source,
    };
    if cfg!(debug_assertions) {
        let value = serde_json::to_value(value).map_err(json)?;
        schema::check(
            schema_name,
            &value,
            &format!("the ledger or plan for `{}`", path.display()),
        )?;
    }
    let mut bytes = serde_json::to_vec(value).map_err(json)?;
    bytes.push(b'\n');
    Ok(bytes)
}
