//! `okstra run`: the headless lead. It carries a whole cross-verified run
//! out with okstra's own commands, in the order the lead contract gives a
//! host lead, and judges nothing itself:
//!
//! 1. dispatch the first batch (analysers; or the Executor, then the
//!    verifiers) and wait for it;
//! 2. Phase 5.5: plan each convergence round, dispatch its reviewers,
//!    record their verdicts, until a stop; then classify;
//! 3. the critic, when rostered;
//! 4. coverage and usage into `state/report-inputs.json`, then the report
//!    writer; `okstra validate`; when the report is invalid, one repair
//!    attempt with the validator's messages appended to the writer's
//!    prompt; then `okstra report`.
//!
//! Every step is a lead event, so `okstra status` shows the run live. Exit
//! 0 with a valid report, 1 when the run ended without one, 2 on bad input,
//! 128+N when interrupted.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::catalog::{REPORT_WRITER, Role, Runner, TaskType};
use crate::cli::RunArgs;
use crate::converge;
use crate::coverage;
use crate::diag;
use crate::dispatch::{self, Batch, Kind, Options};
use crate::ending::Ending;
use crate::exit::{self, ExitStatus};
use crate::lifecycle;
use crate::run::layout::RunLayout;
use crate::run::manifest::RunManifest;
use crate::run::team_state;

/// What `okstra run --json` prints at the end.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Outcome {
    run_dir: PathBuf,
    valid: bool,
    markdown: Option<PathBuf>,
    html: Option<PathBuf>,
    /// Why the run ended without a valid report.
    reason: Option<String>,
    convergence: Option<converge::Classified>,
}

/// `okstra run`.
pub fn run_command(args: &RunArgs) -> Result<ExitStatus> {
    // Check the engine flags before anything is rendered or started.
    Options::from_args(&args.engine)?;
    let run_dir = match &args.run_dir {
        Some(dir) => dir.clone(),
        None => render(args)?,
    };
    let manifest = RunManifest::load(&run_dir)?;
    let lead = Lead {
        manifest: &manifest,
        args,
        events: lifecycle::Run::load(&run_dir)?,
    };
    let outcome = lead.carry_out();
    let outcome = match outcome {
        Ok(Step::Done(outcome)) => outcome,
        Ok(Step::Interrupted(signal)) => {
            lead.event("run-interrupted", &[("signal", signal.as_str())]);
            return Ok(ExitStatus::Code(exit::from_signal(signal as i32)));
        }
        Err(err) => {
            lead.event("run-failed", &[("error", &format!("{err:#}"))]);
            return Err(err);
        }
    };
    let mut stdout = std::io::stdout().lock();
    if args.launch.json {
        writeln!(stdout, "{}", serde_json::to_string(&outcome)?)?;
    } else if let (Some(markdown), Some(html)) = (&outcome.markdown, &outcome.html) {
        writeln!(stdout, "{}", markdown.display())?;
        writeln!(stdout, "{}", html.display())?;
    }
    drop(stdout);
    if outcome.valid {
        Ok(ExitStatus::Success)
    } else {
        diag::error(format_args!(
            "the run ended without a valid report: {}",
            outcome.reason.as_deref().unwrap_or("see `okstra status`")
        ));
        Ok(ExitStatus::Failure)
    }
}

/// Render a headless run from the launcher's flags.
fn render(args: &RunArgs) -> Result<PathBuf> {
    let mut launch = args.launch.clone();
    launch.headless = true;
    crate::bundle::prepare();
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let env = |name: &str| std::env::var(name).ok();
    let settings = crate::settings::resolve(&launch, &env, &cwd)?;
    let paths = crate::bundle::render_run(&settings)?;
    diag::progress(format_args!(
        "rendered headless run `{}`",
        paths.run_dir.display()
    ));
    Ok(paths.run_dir)
}

/// How a step ended: go on, or stop.
enum Step<T> {
    Done(T),
    Interrupted(nix::sys::signal::Signal),
}

struct Lead<'a> {
    manifest: &'a RunManifest,
    args: &'a RunArgs,
    events: lifecycle::Run,
}

impl Lead<'_> {
    fn dir(&self) -> &Path {
        &self.manifest.run_dir
    }

    /// Record a lead event and show its progress line on stderr; a failure
    /// to record is a warning, never the end of the run.
    fn event(&self, kind: &str, fields: &[(&str, &str)]) {
        let fields: BTreeMap<String, String> = fields
            .iter()
            .map(|(k, v)| ((*k).to_owned(), one_line(v)))
            .collect();
        if let Err(err) = lifecycle::append_event(&self.events, kind, &fields) {
            diag::warning(format_args!("cannot record lead event `{kind}`: {err:#}"));
        }
        // The same line `okstra event` prints, on stderr: stdout is the report's paths.
        diag::event(lifecycle::progress_line(kind, &fields));
    }

    /// Run one batch with the run's engine flags.
    fn batch(&self, kind: Kind, workers: Option<&[String]>) -> Result<Step<Batch>> {
        let options = Options::from_args(&self.args.engine)?;
        let batch = dispatch::run_batch(self.manifest, kind, workers, options)?;
        Ok(match self.ended(&batch) {
            Some(signal) => Step::Interrupted(signal),
            None => Step::Done(batch),
        })
    }

    /// Record how each attempt of a finished batch ended; the signal that
    /// interrupted it, if one did.
    fn ended(&self, batch: &Batch) -> Option<nix::sys::signal::Signal> {
        for row in &batch.rows {
            let ending = row.ending.map_or("none", Ending::as_str);
            if row.ending == Some(Ending::Completed) {
                self.event("worker-complete", &[("name", &row.dispatch_name)]);
            } else {
                self.event(
                    "worker-terminal",
                    &[("name", &row.dispatch_name), ("status", ending)],
                );
            }
        }
        batch.interrupted
    }

    fn carry_out(&self) -> Result<Step<Outcome>> {
        let manifest = self.manifest;
        let analysers = manifest
            .assignments
            .iter()
            .filter(|a| a.role.reviews())
            .count();
        self.event(
            "run-start",
            &[
                ("taskType", manifest.task_type.as_str()),
                ("workers", &manifest.assignments.len().to_string()),
            ],
        );

        // Phase 4/5: independent work.
        self.event("phase-start", &[("phase", "4")]);
        if let Step::Interrupted(signal) = self.batch(Kind::Initial, None)? {
            return Ok(Step::Interrupted(signal));
        }
        if manifest.task_type == TaskType::Implementation {
            self.event("phase-start", &[("phase", "5")]);
            if let Step::Interrupted(signal) = self.batch(Kind::Initial, None)? {
                return Ok(Step::Interrupted(signal));
            }
        }
        let completed = self.completed_reviewers()?;
        if completed == 0 {
            return Ok(Step::Done(self.without_report(
                "no analyser completed, so there is nothing to report".into(),
                None,
            )));
        }
        if analysers >= 2 && completed < 2 {
            self.event("convergence-skipped", &[("reason", "quorum")]);
            return Ok(Step::Done(self.without_report(
                format!(
                    "quorum lost: only {completed} of {analysers} analysers completed, so no finding could be cross-checked"
                ),
                None,
            )));
        }

        // Phase 5.5: convergence.
        self.event("phase-start", &[("phase", "5.5")]);
        let mut round = 1;
        loop {
            let plan = converge::plan::plan(
                self.dir(),
                round,
                converge::PlanOptions {
                    blind: true,
                    seed: None,
                },
            )?;
            for warning in &plan.warnings {
                diag::warning(warning);
            }
            if let Some(stop) = plan.stopped_because {
                self.event("convergence-skipped", &[("reason", stop.as_str())]);
                break;
            }
            if let Step::Interrupted(signal) = self.batch(Kind::Reverify(round), None)? {
                return Ok(Step::Interrupted(signal));
            }
            let recorded = converge::record::record(self.dir(), round)?;
            for problem in &recorded.problems {
                diag::warning(format_args!("round {round}: {}", problem.line()));
            }
            self.event(
                "round-complete",
                &[
                    ("round", &round.to_string()),
                    ("open", &recorded.open.len().to_string()),
                ],
            );
            if recorded.stopped_because.is_some() {
                break;
            }
            round += 1;
        }
        let classified = converge::classify(self.dir())?;

        // The implementation fix cycle: one fix pass for confirmed defects.
        if manifest.task_type == TaskType::Implementation
            && let Step::Interrupted(signal) = self.fix_pass(&classified)?
        {
            return Ok(Step::Interrupted(signal));
        }

        // Phase 5.6: the critic.
        if manifest.assignments.iter().any(|a| a.role == Role::Critic) {
            self.event("phase-start", &[("phase", "5.6")]);
            if let Step::Interrupted(signal) = self.batch(Kind::Critic, None)? {
                return Ok(Step::Interrupted(signal));
            }
        }

        // Phase 6: the report.
        self.event("phase-start", &[("phase", "6")]);
        if manifest.assignment(REPORT_WRITER).is_none() {
            return Ok(Step::Done(self.without_report(
                "no report writer is rostered: `okstra run` does not author reports itself".into(),
                Some(classified),
            )));
        }
        let inputs = coverage::write_inputs(manifest)?;
        self.event(
            "usage-collected",
            &[(
                "sources",
                inputs.usage_summary["source"]
                    .as_str()
                    .unwrap_or("unavailable"),
            )],
        );
        let writer = vec![REPORT_WRITER.to_owned()];
        if let Step::Interrupted(signal) = self.batch(Kind::Initial, Some(&writer))? {
            return Ok(Step::Interrupted(signal));
        }
        let data = RunLayout::of(self.dir()).report_data();
        let mut attempts = 1;
        let mut rendered = self.try_render(&data);
        if let Err(problems) = &rendered {
            // One repair attempt, with the validator's own words.
            attempts += 1;
            self.event(
                "report-repair",
                &[("problems", &problems.len().to_string())],
            );
            if let Step::Interrupted(signal) = self.repair(problems)? {
                return Ok(Step::Interrupted(signal));
            }
            rendered = self.try_render(&data);
        }
        match rendered {
            Ok((markdown, html)) => {
                self.event("report-validated", &[("attempts", &attempts.to_string())]);
                let verdict = report_verdict(&data).unwrap_or_else(|| "unknown".into());
                self.event("run-complete", &[("verdict", &verdict)]);
                Ok(Step::Done(Outcome {
                    run_dir: self.dir().to_path_buf(),
                    valid: true,
                    markdown: Some(markdown),
                    html: Some(html),
                    reason: None,
                    convergence: Some(classified),
                }))
            }
            Err(problems) => Ok(Step::Done(self.without_report(
                format!(
                    "the report is still invalid after one repair attempt ({} problem{}; see `okstra validate {}`)",
                    problems.len(),
                    if problems.len() == 1 { "" } else { "s" },
                    self.dir().display()
                ),
                Some(classified),
            ))),
        }
    }

    /// How many analysers (or verifiers) completed their own work.
    fn completed_reviewers(&self) -> Result<usize> {
        let state = team_state::read(&self.manifest.team_state_path)?;
        Ok(self
            .manifest
            .assignments
            .iter()
            .filter(|a| a.role.reviews())
            .filter(|a| {
                state
                    .latest(&a.dispatch_name)
                    .is_some_and(|r| r.ending == Some(Ending::Completed))
            })
            .count())
    }

    /// Validate and render the report; the validator's problem lines when
    /// it is invalid (a missing data.json is one such problem).
    fn try_render(&self, data: &Path) -> Result<(PathBuf, PathBuf), Vec<String>> {
        if !data.is_file() {
            return Err(vec![format!(
                "the report writer wrote no `{}`",
                data.display()
            )]);
        }
        // A data.json that is not JSON at all is a problem to repair, not
        // an error of okstra's.
        crate::report::render(self.dir()).unwrap_or_else(|err| Err(vec![format!("{err:#}")]))
    }

    /// Dispatch the report writer once more, its prompt followed by the
    /// validator's messages.
    fn repair(&self, problems: &[String]) -> Result<Step<()>> {
        let writer = self
            .manifest
            .assignment(REPORT_WRITER)
            .context("the report writer was rostered a moment ago")?;
        let original = crate::fsread::read(&writer.paths.prompt_path, crate::fsread::Kind::Result)
            .with_context(|| format!("cannot read `{}`", writer.paths.prompt_path.display()))?;
        let data = RunLayout::of(self.dir()).report_data();
        let mut prompt = String::from_utf8_lossy(&original).into_owned();
        prompt.push_str("\n\n## Repair: your report failed validation\n\n");
        let _ = write!(
            prompt,
            "`okstra validate` found these problems in the report you wrote (`{}`):\n\n",
            data.display()
        );
        for problem in problems {
            let _ = writeln!(prompt, "- {}", one_line(problem));
        }
        prompt.push_str(
            "\nFix exactly these problems and nothing else: do not change a finding's substance \
             or class. Then print the whole corrected data.json between the result markers, as \
             your final message.\n",
        );
        let path = writer
            .paths
            .prompt_path
            .with_file_name("report-writer.repair.md");
        crate::durable::write_atomic(&path, prompt.as_bytes())
            .with_context(|| format!("cannot write `{}`", path.display()))?;
        let state = team_state::read(&self.manifest.team_state_path)?;
        let planned = dispatch::repair_of(self.manifest, &state, REPORT_WRITER, &path)?;
        let options = Options::from_args(&self.args.engine)?;
        let batch = dispatch::run_planned(self.manifest, vec![planned], options)?;
        Ok(match batch.interrupted {
            Some(signal) => Step::Interrupted(signal),
            None => Step::Done(()),
        })
    }

    /// The lead contract's fix cycle (`--fix-cycle yes`): the verifiers'
    /// `blocking` and `major` defects (confirmed by convergence when it ran)
    /// go to `state/fix-request.md`, and the Executor gets its one fix pass
    /// (`okstra dispatch --fix`). Nothing to fix, or a fix pass that cannot
    /// be planned, is recorded and the run goes on to its report.
    fn fix_pass(&self, classified: &converge::Classified) -> Result<Step<()>> {
        let info = converge::RunInfo::load(self.dir())?;
        if !converge::plan::fix_cycle(&info)? {
            return Ok(Step::Done(()));
        }
        let defects = converge::fix::defects(&classified.ledger, classified.ledger.enabled);
        if defects.is_empty() {
            self.event(
                "fix-pass-skipped",
                &[("reason", "no blocking or major defect")],
            );
            return Ok(Step::Done(()));
        }
        let path = RunLayout::of(self.dir()).fix_request();
        crate::durable::write_atomic(&path, converge::fix::request(&defects).as_bytes())
            .with_context(|| format!("cannot write `{}`", path.display()))?;
        let state = team_state::read(&self.manifest.team_state_path)?;
        let planned = match dispatch::plan_fix_pass(self.manifest, &state, &path) {
            Ok(planned) if planned.runner == Runner::CliWrapper => planned,
            Ok(_) => {
                self.event(
                    "fix-pass-skipped",
                    &[("reason", "the Executor runs in a host session")],
                );
                return Ok(Step::Done(()));
            }
            Err(err) => {
                self.event("fix-pass-skipped", &[("reason", &format!("{err:#}"))]);
                return Ok(Step::Done(()));
            }
        };
        self.event("fix-pass", &[("defects", &defects.len().to_string())]);
        let options = Options::from_args(&self.args.engine)?;
        let batch = dispatch::run_planned(self.manifest, vec![planned], options)?;
        Ok(match self.ended(&batch) {
            Some(signal) => Step::Interrupted(signal),
            None => Step::Done(()),
        })
    }

    fn without_report(&self, reason: String, convergence: Option<converge::Classified>) -> Outcome {
        self.event("run-complete", &[("verdict", "none"), ("reason", &reason)]);
        Outcome {
            run_dir: self.dir().to_path_buf(),
            valid: false,
            markdown: None,
            html: None,
            reason: Some(reason),
            convergence,
        }
    }
}

/// The verdict token of a valid report, for the last lead event.
fn report_verdict(data: &Path) -> Option<String> {
    let bytes = crate::fsread::read(data, crate::fsread::Kind::Report).ok()?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    value
        .pointer("/finalVerdict/verdictToken")?
        .as_str()
        .map(str::to_owned)
}

/// Event field values are single lines of at most 4096 bytes.
fn one_line(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut cut = flat.len().min(4000);
    while !flat.is_char_boundary(cut) {
        cut -= 1;
    }
    flat[..cut].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_values_are_one_bounded_line() {
        assert_eq!(one_line("a\nb\u{1b}c"), "a b c");
        assert!(one_line(&"é".repeat(5000)).len() <= 4000);
    }
}
