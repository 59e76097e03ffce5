//! Integration tests: the launcher (`okstra` with flags) and its bundle.
//! This file holds the launcher project and roster helpers; the tests live
//! in `bundle`, `roster` and `lead`.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;

use crate::support::{Project, manifest, okstra, okstra_path, repo_root};

#[path = "launcher_bundle.rs"]
mod bundle;
#[path = "launcher_lead.rs"]
mod lead;
#[path = "launcher_roster.rs"]
mod roster;

/// The launcher tests' project: its brief asks why checkout is slow, its
/// key is `demo/perf/checkout`, a project analysis unless the flags say
/// otherwise.
fn launcher_project() -> Project {
    Project::new()
        .brief("# Why is checkout slow?\n")
        .key("demo", "perf", "checkout")
        .default_flag("--task-type", "project-analysis")
}

/// `okstra --render-only --yes` with a full task key, plus `extra`.
fn render(project: &Project, extra: &[&str]) -> assert_cmd::assert::Assert {
    project.render_command(extra).write_stdin("").assert()
}

/// (dispatchName, role, provider, model, runner) of every assignment.
fn roster(manifest: &Value) -> Vec<Row> {
    manifest["assignments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let field = |name: &str| a[name].as_str().unwrap().to_owned();
            (
                field("dispatchName"),
                field("role"),
                field("provider"),
                field("modelExecutionValue"),
                field("runner"),
            )
        })
        .collect()
}

type Row = (String, String, String, String, String);

fn row(dispatch: &str, role: &str, provider: &str, model: &str, runner: &str) -> Row {
    (
        dispatch.into(),
        role.into(),
        provider.into(),
        model.into(),
        runner.into(),
    )
}

fn manifest_of(project: &Project, task_type: &str, sequence: u32) -> Value {
    manifest(&project.run_dir(task_type, sequence))
}
