//! One integration-test binary that drives the real `okstra` executable.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod containment;
mod contract;
mod converge;
mod dispatch;
mod doctor;
mod hostile;
mod hostile_exec;
mod hostile_memory;
mod hostile_print;
mod hostile_run;
mod hostile_uninstall;
mod install;
mod landing;
mod launcher;
mod lifecycle;
mod outputs;
mod plugin;
mod prompts;
mod provider_exec;
mod report;
mod run;
mod support;
mod usage;
mod views;
