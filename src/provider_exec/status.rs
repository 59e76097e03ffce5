//! The status sidecar `<prompt-path>.status.json`: its record and its writes.
//!
//! Field names are the reference wrapper's (`schemaVersion`, `started_ts`,
//! `exit_code`, `terminated_by`, …) because host prompts read them; our
//! additions follow the same `snake_case` and never rename an inherited field.
//! The supervisor owns the one [`Status`] value and rewrites the file on each
//! change through `durable::write_atomic`, so readers never see half a file.
//! The shape is pinned by `schemas/status.schema.json`.

use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::durable;
use crate::vocab::{Reason, Stage, TerminatedBy};

/// Version of the sidecar format (the reference's `schemaVersion: 1`).
pub const SCHEMA_VERSION: u32 = 1;

#[expect(
    clippy::derivable_impls,
    reason = "the closed-set macro owns the derive list"
)]
impl Default for Stage {
    fn default() -> Self {
        Stage::Started
    }
}

/// The sidecar record. Optional fields are omitted until known.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Status {
    #[serde(rename = "schemaVersion")]
    pub schema_version: u32,
    /// `okstra-<provider>-exec`.
    pub wrapper: String,
    pub provider: String,
    pub model: String,
    pub role: String,
    /// The wrapper's own pid (as in the reference).
    pub pid: u32,
    /// The CLI's pid, once spawned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub child_pid: Option<u32>,
    /// The CLI's process group (equal to `child_pid`), so a later okstra can
    /// reap leftovers of a wrapper that was killed with `SIGKILL`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pgid: Option<i32>,
    /// Unix seconds.
    pub started_ts: u64,
    pub log_path: PathBuf,
    pub prompt_path: PathBuf,
    pub cwd: PathBuf,
    /// The CLI's argv (program first). It never holds the prompt's text.
    pub argv: Vec<String>,
    /// The effective idle timeout; `0` means disabled.
    pub idle_timeout_seconds: u64,
    /// The CLI executable `PATH` resolved to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cli_path: Option<PathBuf>,
    /// Its version as `okstra doctor` cached it, or `unknown`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cli_version: Option<String>,
    pub stage: Stage,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_ts: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<Reason>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<bool>,
    /// Unix seconds at which the watchdog decided the CLI was idle.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_at_ts: Option<u64>,
    /// Whole seconds of silence when the watchdog decided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_seconds: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub terminated_by: Option<TerminatedBy>,
    /// The signal the wrapper received (`SIGTERM`, `SIGINT`, `SIGHUP`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// The signal that ended the CLI itself, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub child_signal: Option<String>,
    /// Whether SIGKILL was needed because the group outlived the grace period.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub killed: Option<bool>,
    /// Our stdout was closed by its reader; the log kept everything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdout_closed: Option<bool>,
    /// Something outside the CLI's group (e.g. a `setsid` grandchild) still
    /// held the output pipe when we stopped draining it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drain_timed_out: Option<bool>,
    /// Bytes of CLI output copied to the log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_bytes: Option<u64>,
    /// A problem that did not change the exit code (e.g. a failed log write).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The environment variable through which `okstra dispatch` tells the
/// wrapper which attempt of a dispatch it runs. Attempt 1 (or no variable)
/// keeps the reference's file names; a later attempt gets its own log and
/// sidecar so it never overwrites an earlier attempt's.
pub const ATTEMPT_ENV: &str = "OKSTRA_EXEC_ATTEMPT";

/// Seconds since the Unix epoch, from okstra's one clock; the sidecar's
/// `*_ts` fields are unsigned (0 for a clock before 1970).
pub fn unix_now() -> u64 {
    u64::try_from(crate::clock::unix_now()).unwrap_or(0)
}

impl Status {
    /// Write the record atomically and durably.
    pub fn write(&self, path: &Path) -> io::Result<()> {
        let mut bytes = serde_json::to_vec_pretty(self).map_err(io::Error::other)?;
        bytes.push(b'\n');
        durable::write_atomic(path, &bytes)
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;
    use crate::schema;

    fn started() -> Status {
        Status {
            schema_version: SCHEMA_VERSION,
            wrapper: "okstra-grok-exec".into(),
            provider: "grok".into(),
            model: "grok-4.5".into(),
            role: "worker".into(),
            pid: 10,
            started_ts: 1_700_000_000,
            log_path: "/r/p.log".into(),
            prompt_path: "/r/p.md".into(),
            cwd: "/src".into(),
            argv: vec!["grok".into()],
            idle_timeout_seconds: 600,
            ..Status::default()
        }
    }

    #[test]
    fn the_schema_lists_exactly_these_stages_reasons_and_stoppers() {
        let schema: serde_json::Value =
            serde_json::from_str(schema::text("status.schema.json").unwrap()).unwrap();
        let words = |key: &str| -> Vec<String> {
            schema["properties"][key]["enum"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_owned())
                .collect()
        };
        let reasons: Vec<String> = Reason::ALL.iter().map(|r| r.as_str().to_owned()).collect();
        assert_eq!(words("reason"), reasons);
        let stoppers: Vec<String> = TerminatedBy::ALL
            .iter()
            .map(|t| t.as_str().to_owned())
            .collect();
        assert_eq!(words("terminated_by"), stoppers);
        let stages: Vec<String> = Stage::ALL.iter().map(|s| s.as_str().to_owned()).collect();
        assert_eq!(words("stage"), stages);
        for stage in Stage::ALL {
            assert_eq!(serde_json::to_value(stage).unwrap(), json!(stage.as_str()));
            assert_eq!(stage.as_str().parse::<Stage>(), Ok(*stage));
        }
        for reason in Reason::ALL {
            assert_eq!(
                serde_json::to_value(reason).unwrap(),
                json!(reason.as_str())
            );
        }
        for by in TerminatedBy::ALL {
            assert_eq!(serde_json::to_value(by).unwrap(), json!(by.as_str()));
        }
    }

    #[test]
    fn started_record_uses_reference_names_and_omits_unknowns() {
        let value = serde_json::to_value(started()).unwrap();
        assert_eq!(value["schemaVersion"], json!(1));
        assert_eq!(value["stage"], json!("started"));
        assert!(value.get("exit_code").is_none());
        assert!(value.get("pgid").is_none());
        let violations = schema::violations("status.schema.json", &value).unwrap();
        assert!(violations.0.is_empty(), "{violations}");
    }

    #[test]
    fn idle_kill_record_matches_the_schema() {
        let mut status = started();
        status.child_pid = Some(11);
        status.pgid = Some(11);
        status.stage = Stage::Exited;
        status.exit_code = Some(124);
        status.ended_ts = Some(1_700_000_700);
        status.duration_ms = Some(700_000);
        status.reason = Some(Reason::IdleTimeout);
        status.timeout = Some(true);
        status.idle_at_ts = Some(1_700_000_650);
        status.idle_seconds = Some(600);
        status.terminated_by = Some(TerminatedBy::IdleWatchdog);
        let value = serde_json::to_value(&status).unwrap();
        assert_eq!(value["terminated_by"], json!("idle-watchdog"));
        assert_eq!(value["reason"], json!("idle-timeout"));
        let violations = schema::violations("status.schema.json", &value).unwrap();
        assert!(violations.0.is_empty(), "{violations}");
    }

    #[test]
    fn schema_rejects_an_exited_record_without_its_outcome() {
        let mut status = started();
        status.stage = Stage::Exited;
        let value = serde_json::to_value(&status).unwrap();
        let violations = schema::violations("status.schema.json", &value).unwrap();
        assert!(!violations.0.is_empty());
    }

    #[test]
    fn write_replaces_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.md.status.json");
        let mut status = started();
        status.write(&path).unwrap();
        status.stage = Stage::Exited;
        status.write(&path).unwrap();
        let read: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(read["stage"], json!("exited"));
    }
}
