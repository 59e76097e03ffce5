//! A run's own settings: the engine flags it was started with (its budget,
//! idle timeout, the names of the variables passed to every CLI, provider
//! slots, parallelism, gates, retry cooldown), kept in the team state's
//! `settings` so that every later call on the run — `okstra next` and the
//! background drivers it starts, `okstra run <dir>`, `okstra dispatch` —
//! runs with them, whoever types it. A flag given on a later call overrides
//! that setting for the rest of the run, and the record says so.
//!
//! Only names are kept for `--pass-env`, never a value. (The fix cycle is
//! the task manifest's `fixCycle`, recorded at render too.) Not the
//! launcher's settings (`crate::settings`), which decide what is rendered.

use std::time::Duration;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cli::{EngineArgs, EngineDefaults};

use super::Run;
use super::team_state::{self, Change};

/// The engine settings a run keeps: each one a flag was given for (a
/// setting never given keeps its default and is not recorded).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_seconds: Option<u64>,
    /// `--pass-env`: names (or `PREFIX*`), never values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_env: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_slots: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_parallel: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_free_memory: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_free_disk: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_cooldown_seconds: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_unisolated: Option<bool>,
}

impl RunSettings {
    /// The settings `engine` gives: each flag given (a value other than its
    /// default; an environment variable a flag reads counts as the flag).
    pub fn given(engine: &EngineArgs) -> RunSettings {
        let defaults = defaults();
        let pass_env: Vec<String> = engine
            .pass_env
            .iter()
            .map(|name| name.trim().to_owned())
            .filter(|name| !name.is_empty())
            .collect();
        RunSettings {
            max_cost_usd: engine.max_cost,
            max_tokens: engine.max_tokens,
            idle_timeout_seconds: engine.idle_timeout,
            pass_env: (!pass_env.is_empty()).then_some(pass_env),
            provider_slots: engine.provider_slots.clone(),
            max_parallel: engine.max_parallel,
            min_free_memory: (engine.min_free_memory != defaults.min_free_memory)
                .then(|| engine.min_free_memory.clone()),
            min_free_disk: (engine.min_free_disk != defaults.min_free_disk)
                .then(|| engine.min_free_disk.clone()),
            retry_cooldown_seconds: (engine.retry_cooldown != defaults.retry_cooldown)
                .then_some(engine.retry_cooldown.as_secs()),
            allow_unisolated: engine.allow_unisolated.then_some(true),
        }
    }

    /// These settings, each one `later` gives replaced by it.
    pub fn overridden_by(&self, later: &RunSettings) -> RunSettings {
        RunSettings {
            max_cost_usd: later.max_cost_usd.or(self.max_cost_usd),
            max_tokens: later.max_tokens.or(self.max_tokens),
            idle_timeout_seconds: later.idle_timeout_seconds.or(self.idle_timeout_seconds),
            pass_env: later.pass_env.clone().or_else(|| self.pass_env.clone()),
            provider_slots: later
                .provider_slots
                .clone()
                .or_else(|| self.provider_slots.clone()),
            max_parallel: later.max_parallel.or(self.max_parallel),
            min_free_memory: later
                .min_free_memory
                .clone()
                .or_else(|| self.min_free_memory.clone()),
            min_free_disk: later
                .min_free_disk
                .clone()
                .or_else(|| self.min_free_disk.clone()),
            retry_cooldown_seconds: later.retry_cooldown_seconds.or(self.retry_cooldown_seconds),
            allow_unisolated: later.allow_unisolated.or(self.allow_unisolated),
        }
    }

    /// The engine flags these settings make: each recorded one, the rest at
    /// their defaults.
    pub fn to_engine(&self) -> EngineArgs {
        let mut engine = defaults();
        engine.max_cost = self.max_cost_usd;
        engine.max_tokens = self.max_tokens;
        engine.idle_timeout = self.idle_timeout_seconds;
        engine.pass_env = self.pass_env.clone().unwrap_or_default();
        engine.provider_slots.clone_from(&self.provider_slots);
        engine.max_parallel = self.max_parallel;
        if let Some(size) = &self.min_free_memory {
            engine.min_free_memory.clone_from(size);
        }
        if let Some(size) = &self.min_free_disk {
            engine.min_free_disk.clone_from(size);
        }
        if let Some(seconds) = self.retry_cooldown_seconds {
            engine.retry_cooldown = Duration::from_secs(seconds);
        }
        engine.allow_unisolated = self.allow_unisolated.unwrap_or(false);
        engine
    }

    /// The settings as flags, for a line that says what they are.
    pub fn words(&self) -> Vec<String> {
        let mut words = Vec::new();
        let mut flag = |name: &str, value: Option<String>| {
            if let Some(value) = value {
                words.push(format!("--{name} {value}"));
            }
        };
        flag("max-cost", self.max_cost_usd.map(|v| v.to_string()));
        flag("max-tokens", self.max_tokens.map(|v| v.to_string()));
        flag(
            "idle-timeout",
            self.idle_timeout_seconds.map(|v| v.to_string()),
        );
        flag(
            "pass-env",
            self.pass_env.as_ref().map(|names| names.join(",")),
        );
        flag("provider-slots", self.provider_slots.clone());
        flag("max-parallel", self.max_parallel.map(|v| v.to_string()));
        flag("min-free-memory", self.min_free_memory.clone());
        flag("min-free-disk", self.min_free_disk.clone());
        flag(
            "retry-cooldown",
            self.retry_cooldown_seconds.map(|v| format!("{v}s")),
        );
        if self.allow_unisolated == Some(true) {
            words.push("--allow-unisolated".to_owned());
        }
        words
    }
}

/// The engine flags with every default.
fn defaults() -> EngineArgs {
    <EngineDefaults as clap::Parser>::parse_from(["okstra"]).engine
}

/// The settings the team state of `run` records (none before any).
pub fn read(run: &Run) -> Result<RunSettings> {
    if !run.team_state_path.exists() {
        return Ok(RunSettings::default());
    }
    let state = team_state::read_raw(run)?;
    of_state(&state).with_context(|| {
        format!(
            "the team state `{}` has unreadable `settings`",
            run.team_state_path.display()
        )
    })
}

/// The `settings` of a team state as written.
pub fn of_state(state: &Value) -> Result<RunSettings> {
    match state.get("settings") {
        None | Some(Value::Null) => Ok(RunSettings::default()),
        Some(value) => Ok(serde_json::from_value(value.clone())?),
    }
}

/// The engine flags a call on `run` that changes nothing would run with:
/// the run's recorded settings, each flag `given` overriding its own.
pub fn merged(run: &Run, given: &EngineArgs) -> Result<EngineArgs> {
    Ok(read(run)?
        .overridden_by(&RunSettings::given(given))
        .to_engine())
}

/// The engine flags this call on `run` runs with: the run's recorded
/// settings, each flag `given` on this call overriding its own — which is
/// then recorded, for the rest of the run (and said on stderr).
pub fn resolve(run: &Run, given: &EngineArgs) -> Result<EngineArgs> {
    record(run, given)?;
    merged(run, given)
}

/// Record each flag `given` on a call on `run` that overrides the run's
/// settings, for the rest of the run (said on stderr); nothing when none
/// does.
pub fn record(run: &Run, given: &EngineArgs) -> Result<()> {
    let recorded = read(run)?;
    let settings = recorded.overridden_by(&RunSettings::given(given));
    if settings != recorded {
        team_state::update(run, &[Change::Settings(serde_json::to_value(&settings)?)])?;
        crate::diag::progress(format_args!(
            "the run's settings from now on: {}",
            settings.words().join(" ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn engine(args: &[&str]) -> EngineArgs {
        EngineDefaults::parse_from(std::iter::once("okstra").chain(args.iter().copied())).engine
    }

    #[test]
    fn only_given_flags_are_kept_and_a_later_flag_wins() {
        assert_eq!(RunSettings::given(&engine(&[])), RunSettings::default());
        let first = RunSettings::given(&engine(&[
            "--idle-timeout",
            "3000",
            "--max-cost",
            "1",
            "--pass-env",
            "X,FAKE_*",
            "--retry-cooldown",
            "5s",
        ]));
        assert_eq!(first.idle_timeout_seconds, Some(3000));
        assert_eq!(first.max_cost_usd, Some(1.0));
        assert_eq!(
            first.pass_env,
            Some(vec!["X".to_owned(), "FAKE_*".to_owned()])
        );
        assert_eq!(first.retry_cooldown_seconds, Some(5));
        assert_eq!(first.min_free_memory, None);
        let later = first.overridden_by(&RunSettings::given(&engine(&["--idle-timeout", "90"])));
        assert_eq!(later.idle_timeout_seconds, Some(90));
        assert_eq!(later.max_cost_usd, Some(1.0));
        // Back to flags: what was recorded, the rest at their defaults.
        let flags = later.to_engine();
        assert_eq!(flags.idle_timeout, Some(90));
        assert_eq!(flags.pass_env, ["X", "FAKE_*"]);
        assert_eq!(flags.retry_cooldown, Duration::from_secs(5));
        assert_eq!(flags.min_free_disk, defaults().min_free_disk);
        assert_eq!(RunSettings::given(&flags), later);
        assert_eq!(
            later.words(),
            [
                "--max-cost 1",
                "--idle-timeout 90",
                "--pass-env X,FAKE_*",
                "--retry-cooldown 5s"
            ]
        );
    }

    #[test]
    fn the_record_is_camel_case_and_keeps_names_only() {
        let settings = RunSettings::given(&engine(&["--max-tokens", "10", "--pass-env", "KEY"]));
        assert_eq!(
            serde_json::to_value(&settings).unwrap(),
            serde_json::json!({"maxTokens": 10, "passEnv": ["KEY"]})
        );
        assert_eq!(
            of_state(&serde_json::json!({"settings": {"maxTokens": 10, "passEnv": ["KEY"]}}))
                .unwrap(),
            settings
        );
        assert_eq!(
            of_state(&serde_json::json!({})).unwrap(),
            RunSettings::default()
        );
    }
}
