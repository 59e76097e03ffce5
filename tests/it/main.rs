//! One integration-test binary that drives the real `okstra` executable.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod hostile;
mod hostile_exec;
mod launcher;
mod lifecycle;
mod prompts;
mod provider_exec;
mod report;
mod support;
