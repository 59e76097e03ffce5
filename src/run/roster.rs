//! The roster's types: one worker's assignment and the files of one
//! dispatch, as the run manifest persists them. `assign` builds the roster
//! from resolved settings; everything after the bundle reads it from here.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::catalog::{Provider, Role, Runner};
use crate::run::layout::RunLayout;

/// One worker of the run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Assignment {
    pub worker_id: String,
    pub role: Role,
    pub provider: Provider,
    #[serde(default)]
    pub model_execution_value: String,
    /// The `model` a native Claude session is given (family token); `inherit`
    /// for wrapper agents, which apply the exact value in the wrapper.
    #[serde(default = "inherit")]
    pub host_model: String,
    #[serde(default = "cli_wrapper")]
    pub runner: Runner,
    pub dispatch_name: String,
    /// The wrapper command for `cli-wrapper` assignments.
    pub wrapper: Option<String>,
    /// Whether this worker may change project files (only the executor).
    #[serde(default)]
    pub writes_project: bool,
    #[serde(flatten)]
    pub paths: DispatchPaths,
}

/// The files of one dispatch, all derived from the run folder and the
/// dispatch name, so every dispatch kind (initial, critic, reverify) names
/// them the same way.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[expect(
    clippy::struct_field_names,
    reason = "the names are the run manifest's field names"
)]
pub struct DispatchPaths {
    #[serde(default)]
    pub prompt_path: PathBuf,
    #[serde(default)]
    pub result_path: PathBuf,
    #[serde(default)]
    pub worker_results_path: PathBuf,
    #[serde(default)]
    pub error_path: PathBuf,
    #[serde(default)]
    pub heartbeat_path: PathBuf,
}

/// A manifest that does not say: a wrapper agent's model is applied in the
/// wrapper.
fn inherit() -> String {
    "inherit".to_owned()
}

/// A manifest that does not say: okstra's wrapper runs it.
fn cli_wrapper() -> Runner {
    Runner::CliWrapper
}

impl DispatchPaths {
    pub fn new(run_dir: &Path, dispatch_name: &str) -> Self {
        let layout = RunLayout::of(run_dir);
        DispatchPaths {
            prompt_path: layout.prompt(dispatch_name),
            result_path: layout.result(dispatch_name),
            worker_results_path: layout.worker_results(dispatch_name),
            error_path: layout.error(dispatch_name),
            heartbeat_path: layout.heartbeat(dispatch_name),
        }
    }
}
