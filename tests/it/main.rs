//! One integration-test binary that drives the real `okstra` executable.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod contract;
mod converge;
mod dispatch;
mod doctor;
mod install;
mod launcher;
mod lifecycle;
mod prompts;
mod provider_exec;
mod report;
mod support;
mod usage;
