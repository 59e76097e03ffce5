//! Integration tests: lifecycle — `okstra event`, `status`, `reap` and
//! resuming a task key, through the real binary against run folders made by
//! `okstra --render-only`, hand-written sidecars and real processes.
//!
//! Every spawned process is owned by a guard that kills its whole group on
//! drop, so a failing assertion never leaves a `sleep 300` behind.
//!
//! This file holds the shared helpers; the tests live in `event`, `reap`,
//! `status` and `resume`.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::support::{
    Group, Project, manifest, okstra, okstra_path, read_json, unix_now, wait_for,
};

#[path = "lifecycle_event.rs"]
mod event;
#[path = "lifecycle_reap.rs"]
mod reap;
#[path = "lifecycle_resume.rs"]
mod resume;
#[path = "lifecycle_status.rs"]
mod status;

/// The assignment with this dispatch name.
fn assignment(run: &Path, dispatch: &str) -> Value {
    manifest(run)["assignments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["dispatchName"] == dispatch)
        .unwrap_or_else(|| panic!("no assignment `{dispatch}`"))
        .clone()
}

fn path_of(assignment: &Value, field: &str) -> PathBuf {
    PathBuf::from(assignment[field].as_str().unwrap())
}

fn sidecar_path(assignment: &Value) -> PathBuf {
    PathBuf::from(format!(
        "{}.status.json",
        assignment["promptPath"].as_str().unwrap()
    ))
}

fn write_sidecar(assignment: &Value, value: &Value) {
    fs::write(sidecar_path(assignment), value.to_string()).unwrap();
}

/// The pid of a process that has exited and been reaped.
fn dead_pid() -> i32 {
    let mut child = Command::new("true").spawn().unwrap();
    child.wait().unwrap();
    i32::try_from(child.id()).unwrap()
}

/// `okstra status <run> --json`, the run's workers by dispatch name.
fn status_json(run: &Path) -> Value {
    let output = okstra()
        .args(["status", "--json"])
        .arg(run)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let doc: Value = serde_json::from_slice(&output).unwrap();
    assert_eq!(doc["schemaVersion"], 1);
    doc["runs"][0].clone()
}

fn worker<'a>(run_status: &'a Value, dispatch: &str) -> &'a Value {
    run_status["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["dispatchName"] == dispatch)
        .unwrap()
}
