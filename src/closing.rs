//! The one summary `okstra run` and `okstra ask` end with, on stdout: the
//! verdict, the findings per convergence class and each finding with who
//! found and who verified it (`report::findings`, the same credits the
//! report, SARIF and the pull-request review give), what the run cost
//! (beside its estimate), the report's paths — and for each worker that did not
//! complete, why and how to fix it (`advice`), with the command that
//! resumes the run. Built from the run's records only; `--json` prints the
//! outcome document instead.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::catalog::Provider;
use crate::run::Run;
use crate::vocab::Ending;
use crate::vocab::Severity;

/// Findings listed one per line; the rest are counted.
const MAX_FINDING_LINES: usize = 20;

/// What the summary says, gathered by the caller.
pub struct Facts<'a> {
    pub run: &'a Run,
    /// The report's verdict token, when there is a valid report.
    pub verdict: Option<&'a str>,
    /// The report's two files, when it was rendered.
    pub paths: Option<(&'a Path, &'a Path)>,
    /// Why there is no report.
    pub reason: Option<&'a str>,
    /// Whether the findings were cross-verified, in one line and the
    /// words every output uses, when there is a valid report.
    pub verification: Option<&'a str>,
    /// The ledger's claims per convergence class: what the summary counts
    /// when there is no report to count findings in.
    pub classes: BTreeMap<String, usize>,
    /// The report's findings, when there is a valid report.
    pub findings: &'a [crate::report::findings::Finding],
    /// The command that resumes the run.
    pub resume: &'a str,
}

/// One worker that did not complete: its own dispatch's latest attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failed {
    pub dispatch_name: String,
    pub provider: Provider,
    pub ending: Ending,
    pub detail: String,
}

/// The summary's lines (no trailing newline on the last).
pub fn summary(facts: &Facts<'_>) -> String {
    let run = facts.run;
    let mut text = String::new();
    let verdict = facts.verdict.map_or_else(
        || "no report".to_owned(),
        |verdict| format!("verdict {verdict}"),
    );
    let _ = writeln!(
        text,
        "okstra: {} run `{}` of `{}`: {verdict}",
        run.task_type, run.run_id, run.task_key
    );
    if let Some(reason) = facts.reason {
        let _ = writeln!(text, "  why: {}", crate::fsread::escape(reason));
    }
    if let Some(line) = facts.verification.filter(|_| facts.verdict.is_some()) {
        let _ = writeln!(text, "  {}", crate::fsread::escape(line));
    }
    if facts.verdict.is_some() {
        let _ = writeln!(text, "  findings: {}", counted(facts.findings));
    } else if facts.classes.values().any(|count| *count > 0) {
        // No report, so no findings: what the ledger holds are claims, and
        // several claims may have been one finding.
        let counts: Vec<String> = facts
            .classes
            .iter()
            .filter(|(_, count)| **count > 0)
            .map(|(class, count)| format!("{count} {class}"))
            .collect();
        let _ = writeln!(text, "  claims: {}", counts.join(", "));
    }
    for finding in facts.findings.iter().take(MAX_FINDING_LINES) {
        let place = finding.anchors.first().map_or_else(
            || "(unanchored)".to_owned(),
            crate::report::anchor::Anchor::label,
        );
        let _ = writeln!(
            text,
            "    {} {} {} {place}: {}",
            finding.row,
            finding.severity.map_or("unranked", Severity::as_str),
            finding.class,
            crate::fsread::escape(&finding.credits())
        );
    }
    if facts.findings.len() > MAX_FINDING_LINES {
        let _ = writeln!(
            text,
            "    … and {} more in the report",
            facts.findings.len() - MAX_FINDING_LINES
        );
    }
    let (spent, price_hint) = cost(run);
    let _ = writeln!(text, "  cost: {spent}");
    if let Some(hint) = price_hint {
        let _ = writeln!(text, "    hint: {hint}");
    }
    if let Some((markdown, html)) = facts.paths {
        let _ = writeln!(text, "  report: {}", markdown.display());
        let _ = writeln!(text, "          {}", html.display());
    }
    let failed = failed(run);
    for worker in &failed {
        let _ = writeln!(
            text,
            "  {} ({}): {} — {}",
            worker.dispatch_name,
            worker.provider,
            worker.ending,
            crate::fsread::escape(&worker.detail)
        );
        if let Some(fix) = crate::advice::for_ending(worker.provider, worker.ending, Some(&run.dir))
        {
            let _ = writeln!(text, "    fix: {fix}");
        }
    }
    if facts.verdict.is_none() && failed.is_empty() {
        let _ = writeln!(text, "  resume: `{}`", facts.resume);
    }
    text
}

/// `6 (3 full-consensus, 2 partial-consensus, 1 refuted)`: the report's
/// findings, each counted once whatever number of claims it merges.
fn counted(findings: &[crate::report::findings::Finding]) -> String {
    if findings.is_empty() {
        return "none".to_owned();
    }
    let mut per_class: BTreeMap<crate::vocab::FinalClass, usize> = BTreeMap::new();
    for finding in findings {
        *per_class.entry(finding.class).or_default() += 1;
    }
    let counts: Vec<String> = per_class
        .iter()
        .map(|(class, count)| format!("{count} {class}"))
        .collect();
    format!("{} ({})", findings.len(), counts.join(", "))
}

/// Each rostered worker whose own dispatch's latest attempt did not
/// complete (the report writer included; convergence rounds not).
pub fn failed(run: &Run) -> Vec<Failed> {
    let Ok(state) = run.team_state() else {
        return Vec::new();
    };
    run.assignments
        .iter()
        .filter_map(|assignment| {
            let record = state.latest(&assignment.dispatch_name)?;
            let ending = record.ending?;
            (ending != Ending::Completed).then(|| Failed {
                dispatch_name: assignment.dispatch_name.clone(),
                provider: assignment.provider,
                ending,
                detail: record.detail.clone().unwrap_or_default(),
            })
        })
        .collect()
}

/// The cost line's text, `$0.42, 85.2k tokens (estimated …)` (or
/// `≥ $0.42 + unpriced`, `unpriced`), from the recorded usage; and the hint
/// for the models that have no price, when some have none.
fn cost(run: &Run) -> (String, Option<String>) {
    let Ok(state) = crate::run::team_state::read_raw(run) else {
        return ("not recorded".to_owned(), None);
    };
    let totals = crate::usage::recorded_totals(&state);
    let mut text = if totals.tokens == 0 && totals.cost_usd == 0.0 {
        "none recorded".to_owned()
    } else {
        format!(
            "{}, {} tokens",
            totals.cost(),
            crate::table::human(totals.tokens)
        )
    };
    if let Some(estimate) = crate::estimate::read(run) {
        let _ = write!(text, " (estimated {})", estimate.short());
    }
    let env = |name: &str| std::env::var(name).ok();
    let hint = crate::usage::Prices::load(&env).ok().and_then(|prices| {
        let models = crate::usage::unpriced_models(&crate::usage::recorded_parts(&state), &prices);
        (!models.is_empty()).then(|| crate::usage::price_hint(&models, &prices.as_of))
    });
    (text, hint)
}
