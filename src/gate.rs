//! The gate: `okstra gate <run> --fail-on <severity>` and `okstra run …
//! --fail-on <severity>`, one decision a CI job can trust.
//!
//! The order, and the exit code of each outcome (`exit.rs`):
//!
//! 1. **3** when the report does not validate (or there is none yet);
//! 2. **1** when a counted finding is at or above the threshold, each listed
//!    on one line;
//! 3. **3** when the run was not cross-verified (the report's `reliability`
//!    block; for an older report, its coverage), is still running, or was
//!    stopped by its budget;
//! 4. **0** otherwise.
//!
//! Bad input is 2, a signal 128+N, as everywhere. A finding counts when its
//! class is one of `--classes` (by default `full-consensus`,
//! `partial-consensus` and `contested`: the findings a second model checked
//! or argued over; a `worker-unique` one is one model's word and counts only
//! when asked for, and then only with an anchor), its severity is at or
//! above the threshold (an unranked finding counts as `info`), and, with
//! `--new-only`, the change introduced it (an anchor inside the changed
//! hunks of a `--diff` run; unanchored findings cannot be placed and count),
//! and, with `--baseline`, its fingerprint is not in that earlier SARIF log.
//! A refuted finding never counts, at any threshold.

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

use anyhow::{Result, bail};
use serde::Serialize;
use serde_json::Value;

use crate::cli::{GateArgs, GateRules};
use crate::diag;
use crate::exit::ExitStatus;
use crate::report::findings::{self, Finding, Findings};
use crate::report::{self, sarif};
use crate::run::Run;
use crate::run::lease::Lease;
use crate::run::team_state::{self, AttemptState};
use crate::vocab::Ending;
use crate::vocab::FinalClass;
use crate::vocab::Severity;

/// The classes a gate counts unless `--classes` says otherwise.
pub const DEFAULT_CLASSES: [FinalClass; 3] = [
    FinalClass::FullConsensus,
    FinalClass::PartialConsensus,
    FinalClass::Contested,
];

/// What the gate decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Passed,
    Findings,
    Invalid,
    Unreliable,
}

impl Outcome {
    fn status(self) -> ExitStatus {
        match self {
            Outcome::Passed => ExitStatus::Success,
            Outcome::Findings => ExitStatus::Failure,
            Outcome::Invalid | Outcome::Unreliable => ExitStatus::Unreliable,
        }
    }
}

/// The decision, as `--json` prints it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    pub outcome: Outcome,
    pub exit_code: u8,
    pub fail_on: Severity,
    pub classes: Vec<FinalClass>,
    pub new_only: bool,
    /// The counted findings at or above the threshold.
    pub counted: Vec<Counted>,
    pub cross_verified: Option<bool>,
    /// Why the outcome is what it is, one line.
    pub reason: String,
    /// With `--baseline`: the findings that would have counted but the
    /// baseline already lists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_excluded: Option<usize>,
}

impl Decision {
    fn excluding(mut self, excluded: Option<usize>) -> Decision {
        self.baseline_excluded = excluded;
        self
    }
}

/// One finding that fails the gate.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counted {
    pub row: String,
    pub severity: Severity,
    pub class: FinalClass,
    pub location: Option<String>,
    pub fingerprint: String,
    /// The finding, one line, as printed.
    pub line: String,
}

/// The gate's rules, checked.
#[derive(Debug, Clone)]
pub struct Rules {
    pub fail_on: Severity,
    pub classes: Vec<FinalClass>,
    pub new_only: bool,
    pub baseline: Option<HashSet<String>>,
}

impl Rules {
    /// Check the flags: a readable baseline. Bad input is an `Err` (exit 2).
    pub fn from_args(fail_on: Severity, rules: &GateRules) -> Result<Rules> {
        let mut classes = if rules.classes.is_empty() {
            DEFAULT_CLASSES.to_vec()
        } else {
            rules.classes.clone()
        };
        classes.sort();
        classes.dedup();
        if classes.contains(&FinalClass::Refuted) {
            bail!(
                "invalid value `refuted` for `--classes`: a refuted finding never counts (its \
                 owner withdrew it, or reviewers refuted it with evidence); expected \
                 full-consensus, partial-consensus, contested or worker-unique"
            );
        }
        let baseline = rules
            .baseline
            .as_deref()
            .map(sarif::baseline_fingerprints)
            .transpose()?;
        Ok(Rules {
            fail_on,
            classes,
            new_only: rules.new_only,
            baseline,
        })
    }

    /// Whether `finding` counts against the threshold (a refuted one never
    /// does, at any threshold).
    fn counts(&self, finding: &Finding) -> bool {
        self.counts_but_for_the_baseline(finding) && !self.in_baseline(finding)
    }

    /// Whether `finding` would count, were it not for `--baseline`.
    fn counts_but_for_the_baseline(&self, finding: &Finding) -> bool {
        !finding.is_refuted()
            && self.classes.contains(&finding.class)
            && (finding.class != FinalClass::WorkerUnique || finding.is_anchored())
            && finding.rank() >= self.fail_on
            && !(self.new_only && finding.pre_existing == Some(true))
    }

    /// Whether the baseline lists `finding` (by its fingerprint).
    fn in_baseline(&self, finding: &Finding) -> bool {
        self.baseline
            .as_ref()
            .is_some_and(|known| known.contains(&finding.fingerprint))
    }
}

/// `okstra gate`.
pub fn gate_command(args: &GateArgs) -> Result<crate::output::Reply> {
    let rules = Rules::from_args(args.fail_on, &args.rules)?;
    let decision = decide(&args.target, &rules)?;
    let reply = crate::output::Reply::answer(&decision, args.json)?;
    let status = decision.outcome.status();
    // The decision is the last line, after the findings it counted.
    Ok(reply.then_say(move || say(&decision)).with_status(status))
}

/// Gate a run `okstra run` just finished; its findings go to stderr.
pub fn after_run(run_dir: &Path, rules: &Rules) -> Result<ExitStatus> {
    let decision = decide(run_dir, rules)?;
    for counted in &decision.counted {
        diag::detail(&counted.line);
    }
    say(&decision);
    Ok(decision.outcome.status())
}

impl crate::output::Answer for Decision {
    const SCHEMA: &'static str = "gate-answer.schema.json";
    const VERSION: Option<u32> = Some(1);
}

/// The counted findings, one line each (`okstra gate`'s stdout).
impl crate::output::Text for Decision {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        for counted in &self.counted {
            writeln!(out, "{}", counted.line)?;
        }
        Ok(())
    }
}

/// The diagnostic lines saying what was decided.
fn say(decision: &Decision) {
    if let Some(excluded) = decision.baseline_excluded {
        diag::progress(format_args!(
            "the baseline left out {excluded} finding{} at or above `{}` that it already lists",
            if excluded == 1 { "" } else { "s" },
            decision.fail_on
        ));
    }
    match decision.outcome {
        Outcome::Passed => diag::progress(format_args!("gate passed: {}", decision.reason)),
        _ => diag::error(format_args!("gate failed: {}", decision.reason)),
    }
}

/// The gate's decision on the report at `target`. `Err` only for bad input
/// (a target that is not there, a `--new-only` with no change recorded).
pub fn decide(target: &Path, rules: &Rules) -> Result<Decision> {
    let decision = |outcome: Outcome, counted, cross_verified, reason: String| Decision {
        outcome,
        exit_code: outcome.status().code(),
        fail_on: rules.fail_on,
        classes: rules.classes.clone(),
        new_only: rules.new_only,
        counted,
        cross_verified,
        reason,
        baseline_excluded: None,
    };
    if !target.exists() {
        bail!(
            "`{}` does not exist; expected a run folder, a report folder or a data.json",
            target.display()
        );
    }
    let run_dir = report::run_folder(target)?;
    if let Some(run_dir) = &run_dir {
        let run = Run::open(run_dir)?;
        if rules.new_only && run.change.is_none() {
            bail!(
                "`--new-only` needs a run scoped to a change, and `{}` was not (render it with \
                 `--diff BASE...HEAD`, or give `--baseline` an earlier SARIF log)",
                run_dir.display()
            );
        }
        if target.is_dir() && !run.report_data_path.exists() {
            return Ok(decision(
                Outcome::Invalid,
                Vec::new(),
                None,
                format!(
                    "the run `{}` has no report yet (`{}` is missing)",
                    run_dir.display(),
                    run.report_data_path.display()
                ),
            ));
        }
    } else if rules.new_only {
        bail!(
            "`--new-only` needs a run folder scoped to a change; `{}` is not in a run folder",
            target.display()
        );
    } else if target.is_dir() && !target.join(crate::run::layout::REPORT_DATA_NAME).exists() {
        bail!(
            "`{}` is neither a run folder nor a report folder (no `{}`)",
            target.display(),
            crate::run::layout::REPORT_DATA_NAME
        );
    }
    let checked = match report::check_report(target) {
        Ok(checked) => checked,
        Err(err) => {
            return Ok(decision(
                Outcome::Invalid,
                Vec::new(),
                None,
                format!("the report cannot be checked: {err:#}"),
            ));
        }
    };
    if !checked.is_valid() {
        for problem in &checked.problems {
            diag::detail(problem);
        }
        // A result changed after okstra recorded it is named in the reason.
        let changed = checked
            .problems
            .iter()
            .find_map(|problem| problem.split_once("[records] "))
            .map_or_else(String::new, |(_, message)| format!(": {message}"));
        return Ok(decision(
            Outcome::Invalid,
            Vec::new(),
            None,
            format!(
                "`{}` does not validate ({} problem{}; see `okstra validate`){changed}",
                checked.data_path.display(),
                checked.problems.len(),
                if checked.problems.len() == 1 { "" } else { "s" }
            ),
        ));
    }
    let found = findings::collect(&checked.value, checked.run_dir.as_deref())?;
    let verification = findings::verification(&checked.value);
    let counted = counted(&found, rules);
    let excluded = rules.baseline.as_ref().map(|_| {
        found
            .list
            .iter()
            .filter(|f| rules.counts_but_for_the_baseline(f) && rules.in_baseline(f))
            .count()
    });
    if !counted.is_empty() {
        let reason = format!(
            "{} finding{} at or above `{}` ({})",
            counted.len(),
            if counted.len() == 1 { "" } else { "s" },
            rules.fail_on,
            rules
                .classes
                .iter()
                .map(|class| class.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Ok(decision(
            Outcome::Findings,
            counted,
            Some(verification.cross_verified),
            reason,
        )
        .excluding(excluded));
    }
    if !verification.cross_verified {
        return Ok(decision(
            Outcome::Unreliable,
            counted,
            Some(false),
            format!(
                "no counted finding at or above `{}`, but {}; that is no reliable answer",
                rules.fail_on,
                one_line(&verification.line())
            ),
        )
        .excluding(excluded));
    }
    if let Some(why) = unfinished(found.run.as_ref(), &checked.value)? {
        return Ok(decision(
            Outcome::Unreliable,
            counted,
            Some(true),
            format!(
                "no counted finding at or above `{}`, but {why}",
                rules.fail_on
            ),
        )
        .excluding(excluded));
    }
    Ok(decision(
        Outcome::Passed,
        counted,
        Some(true),
        format!(
            "no counted finding at or above `{}`; {}",
            rules.fail_on,
            one_line(&verification.line())
        ),
    )
    .excluding(excluded))
}

fn one_line(text: &str) -> String {
    crate::fsread::escape(text.trim().trim_end_matches('.')).into_owned()
}

/// The findings that fail the gate, in report order.
fn counted(found: &Findings, rules: &Rules) -> Vec<Counted> {
    found
        .list
        .iter()
        .filter(|finding| rules.counts(finding))
        .map(|finding| Counted {
            row: finding.row.clone(),
            severity: finding.rank(),
            class: finding.class,
            // As the repository names the file (a project may lie in a
            // subfolder of it), like SARIF and the pull-request review.
            location: finding
                .anchors
                .first()
                .map(|anchor| found.repository_path(&anchor.label())),
            fingerprint: finding.fingerprint.clone(),
            line: finding.line(),
        })
        .collect()
}

/// Why the run cannot be trusted yet, beyond cross-verification: it is
/// still running, or its budget stopped it. Without a run, the report's
/// coverage says whether a worker was stopped by the budget.
fn unfinished(run: Option<&Run>, report: &Value) -> Result<Option<String>> {
    let budget_in_report = report
        .get("workerCoverage")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|entry| {
            entry.pointer("/failure/reason").and_then(Value::as_str)
                == Some(Ending::Budget.as_str())
        });
    let Some(run) = run else {
        return Ok(budget_in_report.then(|| "a worker was stopped by the run's budget".to_owned()));
    };
    if let Some(holder) = Lease::held_by(run)? {
        return Ok(Some(format!(
            "the run is still running (`{}`, pid {}, holds it)",
            holder.command, holder.pid
        )));
    }
    let raw = team_state::read_raw(run)?;
    if raw.get("budget").is_some_and(|budget| !budget.is_null()) || budget_in_report {
        return Ok(Some("the run was stopped by its budget".to_owned()));
    }
    let state = run.team_state()?;
    let mut open: Vec<String> = Vec::new();
    for record in state.latest_attempts() {
        match record.state() {
            AttemptState::Ended(Ending::Budget) => {
                return Ok(Some(format!(
                    "the run was stopped by its budget (`{}` never started)",
                    record.dispatch_name
                )));
            }
            AttemptState::Ended(_) => {}
            AttemptState::Queued | AttemptState::Held | AttemptState::Started => {
                open.push(record.dispatch_name.clone());
            }
        }
    }
    if !open.is_empty() {
        return Ok(Some(format!(
            "the run is not finished: `{}` never ended (see `okstra status`)",
            open.join("`, `")
        )));
    }
    Ok(None)
}

/// The rules of `okstra run --fail-on`, when it was given.
pub fn run_rules(fail_on: Option<Severity>, rules: &GateRules) -> Result<Option<Rules>> {
    fail_on
        .map(|threshold| Rules::from_args(threshold, rules))
        .transpose()
}
