//! `okstra-provider-exec`: the provider-exec wrapper as a binary of its own.
//!
//! ```text
//! okstra-provider-exec <provider> <project-root> <model> <prompt-path> [worktree-path] [role] [idle-timeout-seconds]
//! okstra-<provider>-exec <project-root> <model> <prompt-path> [worktree-path] [role] [idle-timeout-seconds]
//! ```
//!
//! The same wrapper as `okstra provider-exec` (the modules below are
//! okstra's own files, included by path), built without the launcher: no
//! command-line parser, template engine, schema validator or HTTP client.
//! A wrapper stays alive for a worker's whole attempt, several at a time,
//! and its peak memory is mostly the pages of its own binary it touches, so
//! it must not grow with okstra. `okstra dispatch` and the doctor's probe
//! start this binary when it sits beside `okstra`
//! (`provider_exec::Launcher`); `okstra provider-exec` stays the fallback.
//!
//! It also answers `sandbox-exec`, as `okstra` does, because a confined
//! CLI is started through the wrapper's own binary.
//!
//! Only what the wrapper reaches is included, and most of those modules
//! serve okstra too, so items this binary never calls are expected here.
#![expect(
    dead_code,
    unused_imports,
    reason = "the included modules are okstra's; this binary uses only the wrapper's part of them"
)]

#[macro_use]
#[path = "../vocab/mod.rs"]
mod vocab;

#[path = "../beneath.rs"]
mod beneath;
#[path = "../catalog.rs"]
mod catalog;
#[path = "../child.rs"]
mod child;
#[path = "../cli_facts.rs"]
mod cli_facts;
#[path = "../clock.rs"]
mod clock;
#[path = "../confine.rs"]
mod confine;
#[path = "../diag.rs"]
mod diag;
#[path = "../durable/mod.rs"]
mod durable;
#[path = "../exit.rs"]
mod exit;
#[path = "../fsread.rs"]
mod fsread;
#[path = "../lead_runtime.rs"]
mod lead_runtime;
#[path = "../process_group.rs"]
mod process_group;
#[path = "../profile.rs"]
mod profile;
#[path = "../provider_exec/mod.rs"]
mod provider_exec;
#[path = "../providers/mod.rs"]
mod providers;
#[path = "../sandbox/mod.rs"]
mod sandbox;
#[path = "../user_dirs.rs"]
mod user_dirs;

// The included files' unit tests run in okstra (this target has
// `test = false`); these two serve them when clippy checks them here.
#[cfg(test)]
#[path = "../fuzz.rs"]
mod fuzz;
#[cfg(test)]
#[path = "../schema.rs"]
mod schema;

/// `run::layout` alone: where an attempt's log and sidecar go.
#[path = "../run"]
mod run {
    pub mod layout;
}

use std::process::ExitCode;

fn main() -> ExitCode {
    diag::install_panic_hook();
    let raw_args = match provider_exec::early_entry(std::env::args_os().collect()) {
        Ok(code) => return code,
        Err(raw_args) => raw_args,
    };
    provider_exec::main(None, raw_args.into_iter().skip(1).collect())
}
