//! Preflight: before `okstra run` or `okstra ask` spends anything, is every
//! provider on the roster ready to be driven headless? Its CLI must be on
//! `PATH`, be the program okstra drives (not a look-alike), and have
//! credentials (variables and login files, by name only).
//!
//! The CLI's identity comes from the doctor's cache, keyed by the binary's
//! resolved path, size and modification time; a CLI the cache does not know
//! (or that changed) is asked, all at once (`doctor::identify_all`).
//! Credentials are looked up on every run (`doctor::credentials`).
//! Nothing here starts a model: the only processes are `--version` (and
//! grok's `--help`) of CLIs the cache does not know yet.
//!
//! A provider that fails is one line saying what is wrong and how to fix it,
//! or how to leave it out of the roster; the caller refuses the run before
//! anything is dispatched (`--no-preflight` skips all of this). The same
//! findings name, for the plan, which account or key each CLI will use.
//!
//! The probes die with the driver: a SIGTERM (`okstra cancel`) or SIGINT
//! during the preflight stops them and ends it with [`Interrupted`] (the
//! caller exits 128+N, resumable), and each probe has the kernel's
//! parent-death signal, so not even a SIGKILL of the driver leaves one
//! running.

use std::path::{Path, PathBuf};

use crate::catalog::{Provider, REPORT_WRITER, Role, Runner};
use crate::cli_facts::Program;
use crate::doctor::{self, Identified};
use crate::run::roster::Assignment;

/// What is wrong with one provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Its CLI is not on `PATH`.
    Missing,
    /// Its CLI is not a program okstra can drive (with why).
    LookAlike(Program, Option<String>),
    /// No credential variable is set and no login file was found.
    NoCredentials,
}

/// One provider's findings.
#[derive(Debug, Clone)]
pub struct Check {
    pub provider: Provider,
    pub version: Option<String>,
    pub program: Option<Program>,
    /// `NAME set` / `found <file>`, in the order the CLI prefers them.
    pub credentials: Vec<String>,
    pub problem: Option<Problem>,
}

impl Check {
    /// The CLI as the plan names it: `claude-code 2.1.197`, when known.
    pub fn cli(&self) -> Option<String> {
        let program = self.program?.label(self.provider);
        Some(match &self.version {
            Some(version) => format!("{program} {version}"),
            None => program.to_owned(),
        })
    }

    /// The account or key the CLI will use, by name: the first credential
    /// found (a variable wins over a login file), plus how many others
    /// were seen.
    pub fn account(&self) -> String {
        let Some(first) = self.credentials.first() else {
            return "none found".to_owned();
        };
        let named = first.strip_suffix(" set").map_or_else(
            || first.replacen("found ", "login ", 1),
            |v| format!("key {v}"),
        );
        match self.credentials.len() {
            1 => named,
            n => format!("{named} (and {} more)", n - 1),
        }
    }
}

/// The preflight of one run.
#[derive(Debug, Clone)]
pub struct Report {
    pub checks: Vec<Check>,
    /// Providers off the roster whose CLI is on `PATH` with credentials
    /// found (not probed further), in catalog order: what can take a
    /// failing reviewer's place so two reviewers still check each other.
    pub spares: Vec<Provider>,
}

impl Report {
    /// Whether every provider passed.
    pub fn is_ready(&self) -> bool {
        self.checks.iter().all(|c| c.problem.is_none())
    }

    /// The check of `provider`, if it was checked.
    pub fn of(&self, provider: Provider) -> Option<&Check> {
        self.checks.iter().find(|c| c.provider == provider)
    }

    /// One line per failing provider: what is wrong and how to fix it, and
    /// (for a run still to be rendered, `flags`) how to leave it out.
    pub fn refusals(&self, assignments: &[Assignment], flags: bool) -> Vec<String> {
        self.checks
            .iter()
            .filter_map(|check| {
                let problem = check.problem.as_ref()?;
                Some(refusal(check, problem, assignments, flags, &self.spares))
            })
            .collect()
    }
}

/// The distinct providers of the roster's `cli-wrapper` assignments, in
/// roster order: the ones okstra itself will start.
pub fn providers(assignments: &[Assignment]) -> Vec<Provider> {
    let mut providers = Vec::new();
    for assignment in assignments {
        if assignment.runner == Runner::CliWrapper && !providers.contains(&assignment.provider) {
            providers.push(assignment.provider);
        }
    }
    providers
}

/// Check every provider okstra will start for `assignments`.
pub fn check(
    assignments: &[Assignment],
    env: &dyn Fn(&str) -> Option<String>,
    home: Option<&Path>,
) -> Report {
    let providers = providers(assignments);
    let identified = doctor::identify_all(&providers, None);
    Report {
        spares: Vec::new(),
        checks: identified
            .into_iter()
            .map(|found| {
                let credentials = doctor::credentials(found.provider, env, home);
                judge(&found, credentials)
            })
            .collect(),
    }
}

/// The preflight was ended by a signal (SIGTERM from `okstra cancel`, or
/// SIGINT) before it was done; its probes were stopped.
#[derive(Debug, thiserror::Error)]
#[error("the preflight was interrupted by {}", .0.as_str())]
pub struct Interrupted(pub nix::sys::signal::Signal);

/// [`check`], and refuse when a provider fails: one `error:` line per
/// failing provider (what is wrong, how to fix it, and — for a run still to
/// be rendered, `flags` — how to leave it out), then an error that ends the
/// command before anything is dispatched. A signal during the checks ends
/// them with [`Interrupted`].
pub fn enforce(assignments: &[Assignment], flags: bool) -> anyhow::Result<Report> {
    let owned = assignments.to_vec();
    let checked = crate::interrupt::watch(move || {
        let env = |name: &str| std::env::var(name).ok();
        check(&owned, &env, home().as_deref())
    });
    let report = match checked {
        Ok(report) => report,
        Err(signal) => {
            stop_probes();
            return Err(Interrupted(signal).into());
        }
    };
    if report.is_ready() {
        return Ok(report);
    }
    let mut report = report;
    if flags {
        let env = |name: &str| std::env::var(name).ok();
        report.spares = spares(assignments, &env, home().as_deref());
    }
    let refusals = report.refusals(assignments, flags);
    for line in &refusals {
        crate::diag::error(line);
    }
    anyhow::bail!(
        "preflight: {} of {} provider{} cannot run headless, so nothing was started (`okstra doctor` shows more; `--no-preflight` starts anyway)",
        refusals.len(),
        report.checks.len(),
        if report.checks.len() == 1 { "" } else { "s" }
    )
}

/// Stop the probes still running: at this point (no worker started yet)
/// every child of this process is one, each leading a group of its own.
fn stop_probes() {
    use crate::process_group as process;
    for pid in process::children_of_this_process() {
        if process::proc_info(pid).is_some_and(|info| info.pgrp == pid) {
            let _ = process::signal(pid, nix::sys::signal::Signal::SIGKILL);
        }
    }
}

/// Credentials only, for the plan of a run started with `--no-preflight`:
/// no CLI is looked at and nothing is refused.
pub fn credentials_only(assignments: &[Assignment]) -> Report {
    let env = |name: &str| std::env::var(name).ok();
    let home = home();
    Report {
        spares: Vec::new(),
        checks: providers(assignments)
            .into_iter()
            .map(|provider| Check {
                provider,
                version: None,
                program: None,
                credentials: doctor::credentials(provider, &env, home.as_deref()),
                problem: None,
            })
            .collect(),
    }
}

/// `HOME`, when it is an absolute path.
fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|home| home.is_absolute())
}

/// The pure part of [`check`]: one provider's findings judged.
pub fn judge(found: &Identified, credentials: Vec<String>) -> Check {
    let program = found.entry.as_ref().map(|e| e.program);
    let problem = match (&found.path, &found.entry) {
        (None, _) => Some(Problem::Missing),
        (Some(_), None) => Some(Problem::LookAlike(Program::Unrecognised, None)),
        (Some(_), Some(entry)) if !entry.program.is_usable() => {
            Some(Problem::LookAlike(entry.program, entry.detail.clone()))
        }
        _ if credentials.is_empty() => Some(Problem::NoCredentials),
        _ => None,
    };
    Check {
        provider: found.provider,
        version: found.entry.as_ref().and_then(|e| e.version.clone()),
        program,
        credentials,
        problem,
    }
}

/// The line for one failing provider.
fn refusal(
    check: &Check,
    problem: &Problem,
    assignments: &[Assignment],
    flags: bool,
    spares: &[Provider],
) -> String {
    let provider = check.provider;
    let binary = provider.binary();
    let (what, fix) = match problem {
        Problem::Missing => (
            format!("`{binary}` is not on PATH"),
            crate::advice::install(provider).to_owned(),
        ),
        Problem::LookAlike(program, detail) => (
            detail.clone().unwrap_or_else(|| {
                format!(
                    "the `{binary}` on PATH is not the CLI okstra drives ({})",
                    program.label(provider)
                )
            }),
            crate::advice::look_alike(provider, *program),
        ),
        Problem::NoCredentials => (
            "no credentials found (a login kept in a system keychain is not visible; `--no-preflight` runs anyway)".to_owned(),
            crate::advice::log_in(provider).to_owned(),
        ),
    };
    let leave_out = if flags {
        leave_out(provider, assignments, spares)
            .map(|how| format!("; or leave it out: {how}"))
            .unwrap_or_default()
    } else {
        "; this run's roster is fixed: render a new run to leave it out".to_owned()
    };
    format!("{provider}: {what}; fix: {fix}{leave_out}")
}

/// The flags that run the same question without `provider`, quoted, when
/// one analyser or verifier would still be left: a spare takes its place
/// when only one reviewer would be left, and when none can, the line says
/// plainly that nothing would then be cross-verified.
fn leave_out(
    provider: Provider,
    assignments: &[Assignment],
    spares: &[Provider],
) -> Option<String> {
    let mut flags = Vec::new();
    let mut lonely = false;
    let roles: Vec<Role> = assignments
        .iter()
        .filter(|a| a.provider == provider)
        .map(|a| a.role)
        .collect();
    if roles.iter().any(|r| r.reviews()) {
        let workers: Vec<String> = assignments
            .iter()
            .filter(|a| {
                a.role.reviews() || a.role == Role::Executor || a.role == Role::ReportWriter
            })
            .map(|a| {
                if a.role == Role::ReportWriter {
                    REPORT_WRITER.to_owned()
                } else {
                    a.provider.as_str().to_owned()
                }
            })
            .collect();
        let reviewers_left = assignments
            .iter()
            .filter(|a| a.role.reviews() && a.provider != provider)
            .count();
        let spare = spares
            .iter()
            .find(|spare| **spare != provider && !workers.iter().any(|w| w == spare.as_str()));
        match spare {
            Some(spare) if reviewers_left == 1 => {
                let mut with_spare: Vec<String> = workers
                    .iter()
                    .map(|w| {
                        if w == provider.as_str() {
                            spare.as_str().to_owned()
                        } else {
                            w.clone()
                        }
                    })
                    .collect();
                with_spare.dedup();
                flags.push(format!("--workers {}", with_spare.join(",")));
            }
            _ => {
                flags.push(crate::advice::drop_from_roster(provider, &workers)?);
                lonely = reviewers_left == 1;
            }
        }
    }
    if roles.contains(&Role::ReportWriter) {
        let other = Provider::report_writers()
            .into_iter()
            .find(|p| *p != provider)?;
        flags.push(format!("--report-writer-provider {other}"));
    }
    if roles.contains(&Role::Critic) {
        flags.push("--critic off".to_owned());
    }
    if roles.contains(&Role::Executor) {
        let other = Provider::executors().into_iter().find(|p| *p != provider)?;
        flags.push(format!("--executor {other}"));
    }
    if flags.is_empty() {
        return None;
    }
    let how = format!("`{}`", flags.join(" "));
    Some(if lonely {
        format!(
            "{how} (one reviewer would be left: nothing would be cross-verified; no other provider's CLI is ready to take its place)"
        )
    } else {
        how
    })
}

/// The providers off the roster of `assignments` that could take a
/// reviewer's place: their CLI on `PATH` and credentials found. Nothing is
/// started (no probe): a spare the next preflight finds wanting says so.
pub fn spares(
    assignments: &[Assignment],
    env: &dyn Fn(&str) -> Option<String>,
    home: Option<&Path>,
) -> Vec<Provider> {
    Provider::ALL
        .iter()
        .copied()
        .filter(|provider| !assignments.iter().any(|a| a.provider == *provider))
        .filter(|provider| which::which(provider.binary()).is_ok())
        .filter(|provider| !doctor::credentials(*provider, env, home).is_empty())
        .collect()
}

/// The plan's lines: a header, one line per worker, the estimate.
pub fn plan_lines(
    run: &crate::run::Run,
    checked: &Report,
    estimate: &crate::estimate::Estimate,
) -> Vec<String> {
    let mut lines = vec![format!(
        "plan: {} run `{}` of `{}`, {} worker{}",
        run.task_type,
        run.run_id,
        run.task_key,
        run.assignments.len(),
        if run.assignments.len() == 1 { "" } else { "s" }
    )];
    let width = run
        .assignments
        .iter()
        .map(|a| a.dispatch_name.chars().count())
        .max()
        .unwrap_or(0);
    for assignment in &run.assignments {
        let check = checked.of(assignment.provider);
        let account = check.map_or_else(|| "the host's session".to_owned(), Check::account);
        let cli = check
            .and_then(Check::cli)
            .map_or_else(String::new, |cli| format!(" ({cli})"));
        lines.push(format!(
            "  {:<width$}  {} {} via {}{cli}; account: {account}",
            assignment.dispatch_name,
            assignment.provider,
            assignment.model_execution_value,
            assignment.runner,
        ));
    }
    lines.push(format!("estimate: {}", estimate.line()));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli_facts::{Entry, Stamp};

    fn found(provider: Provider, path: bool, program: Option<Program>) -> Identified {
        Identified {
            provider,
            path: path.then(|| PathBuf::from(format!("/bin/{}", provider.binary()))),
            entry: program.map(|program| Entry {
                provider: provider.as_str().to_owned(),
                path: PathBuf::from("/real"),
                stamp: Stamp {
                    mtime_sec: 0,
                    mtime_nsec: 0,
                    size: 0,
                },
                version: Some("1.2.3".into()),
                program,
                detail: None,
                checked_at: String::new(),
            }),
            cached: true,
        }
    }

    fn assignment(worker: &str, role: Role, provider: Provider) -> Assignment {
        Assignment {
            worker_id: worker.to_owned(),
            role,
            provider,
            model_execution_value: "m".into(),
            host_model: "inherit".into(),
            runner: Runner::CliWrapper,
            dispatch_name: format!("{worker}-x"),
            wrapper: None,
            writes_project: false,
            paths: crate::run::roster::DispatchPaths::new(Path::new("/r"), worker),
        }
    }

    fn default_roster() -> Vec<Assignment> {
        vec![
            assignment("claude", Role::Analyser, Provider::Claude),
            assignment("codex", Role::Analyser, Provider::Codex),
            assignment(REPORT_WRITER, Role::ReportWriter, Provider::Claude),
        ]
    }

    #[test]
    fn problems_are_judged_in_order_missing_look_alike_credentials() {
        let key = || vec!["ANTHROPIC_API_KEY set".to_owned()];
        let judged = |f: Identified, c: Vec<String>| judge(&f, c).problem;
        assert_eq!(
            judged(found(Provider::Claude, false, None), key()),
            Some(Problem::Missing)
        );
        assert_eq!(
            judged(
                found(Provider::Kimi, true, Some(Program::LegacyKimiCli)),
                key()
            ),
            Some(Problem::LookAlike(Program::LegacyKimiCli, None))
        );
        assert_eq!(
            judged(
                found(Provider::Claude, true, Some(Program::Expected)),
                vec![]
            ),
            Some(Problem::NoCredentials)
        );
        assert_eq!(
            judged(
                found(Provider::Grok, true, Some(Program::VibeKitGrok)),
                key()
            ),
            None
        );
    }

    #[test]
    fn refusals_say_how_to_fix_and_how_to_leave_out() {
        let roster = default_roster();
        let report = Report {
            spares: Vec::new(),
            checks: vec![
                judge(
                    &found(Provider::Claude, true, Some(Program::Expected)),
                    vec![],
                ),
                judge(
                    &found(Provider::Codex, true, Some(Program::Expected)),
                    vec!["OPENAI_API_KEY set".into()],
                ),
            ],
        };
        assert!(!report.is_ready());
        assert_eq!(
            report.refusals(&roster, true),
            [
                "claude: no credentials found (a login kept in a system keychain is not visible; `--no-preflight` runs anyway); fix: run `claude` once and `/login`, or set `ANTHROPIC_API_KEY` (or `CLAUDE_CODE_OAUTH_TOKEN`); or leave it out: `--workers codex,report-writer --report-writer-provider codex` (one reviewer would be left: nothing would be cross-verified; no other provider's CLI is ready to take its place)"
            ]
        );
        // A ready CLI off the roster takes the reviewer's place, so two
        // reviewers still check each other.
        let with_spare = Report {
            spares: vec![Provider::Kimi],
            ..report.clone()
        };
        assert!(
            with_spare.refusals(&roster, true)[0].ends_with(
                "or leave it out: `--workers kimi,codex,report-writer --report-writer-provider codex`"
            ),
            "{:?}",
            with_spare.refusals(&roster, true)
        );
        assert!(report.refusals(&roster, false)[0].ends_with("render a new run to leave it out"));
        assert_eq!(
            report.of(Provider::Codex).unwrap().account(),
            "key OPENAI_API_KEY"
        );
    }

    #[test]
    fn accounts_are_named_never_shown() {
        let mut check = judge(
            &found(Provider::Codex, true, Some(Program::Expected)),
            vec![],
        );
        assert_eq!(check.account(), "none found");
        check.credentials = vec![
            "found /h/.codex/auth.json".into(),
            "OPENAI_API_KEY set".into(),
        ];
        assert_eq!(check.account(), "login /h/.codex/auth.json (and 1 more)");
    }

    #[test]
    fn only_wrapper_providers_are_checked_once_each() {
        let mut roster = default_roster();
        roster[1].runner = Runner::NativeSession;
        assert_eq!(providers(&roster), [Provider::Claude]);
    }
}
