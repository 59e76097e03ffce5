//! The final report: `okstra validate` and `okstra report`.
//!
//! `data.json` is the only authored artifact. Validation runs the schema that
//! its `schemaVersion` selects (every violation at once, with JSON pointers)
//! and then the invariants a schema cannot express (`validate.rs`). Rendering
//! refuses an invalid report, then derives the AI handoff Markdown and the
//! human HTML from the data, deterministically: `view.rs` builds one view of
//! it, `render.rs` lays it out with the templates in `templates/report/`
//! (Markdown filters in `markdown.rs`, the HTML escape in `html.rs`).
//!
//! Schema 2.1 adds `reliability`, whether the run was cross-verified, and
//! `verification`, who found and who verified each claim. okstra computes
//! those two and the report's `workerCoverage` and `usageSummary` from the
//! run's records (`reliability.rs`, `verification.rs`, `crate::coverage`,
//! `crate::usage`), and [`finalize`] writes all four into data.json once
//! the report writer has ended, before anything validates it (`okstra run`,
//! `okstra next`, and `okstra report` on a run); `okstra validate` only
//! checks them, against the same records.
//!
//! Validation runs at one of two levels, and says which: `schema` (the JSON
//! Schema and the report's own invariants) always, and `records` when the
//! report sits in its run folder: also against the roster and worker
//! results, and for 2.1 reports the team state's attempts and usage and the
//! convergence ledger (every claim of the ledger in the report, in its
//! class). A report folder without its run (a CI artifact) is checked at the
//! `schema` level.
//!
//! Exit codes: 0 valid / written; 1 the report is invalid (nothing rendered
//! by `report`); 2 okstra could not check it (missing file, bad JSON, unknown
//! `schemaVersion`). Problems are data and go to stdout for `validate`; the
//! one-line summary and warnings go to stderr.

pub mod anchor;

mod blocks;
mod checks;
mod facts;
pub mod fields;
pub mod findings;
mod floor;
mod html;
mod markdown;
mod model;
#[cfg(test)]
mod proptests;
mod records;
mod render;
mod rules;
pub mod sarif;
mod strict_json;
mod validate;
pub mod verification;
mod view;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Serialize;
use serde_json::Value;

use crate::cli::{ReportArgs, ReportFormat, ValidateArgs};
use crate::diag;
use crate::durable::write_atomic_public;
use crate::exit::ExitStatus;
use crate::output::{Answer, Reply};
use crate::run::Run;
use crate::run::layout::{
    REPORT_DATA_NAME, REPORT_HTML_NAME, REPORT_MARKDOWN_NAME, REPORT_SARIF_NAME, RUN_MANIFEST,
    RunLayout,
};
use crate::schema;
use crate::{confine, fsread};

pub use self::blocks::{finalize, needs_finalize};
use self::validate::{PendingIndexes, Problem, Rostered, RunFacts, SCHEMA_RULE};
use crate::derive;
use crate::derive::reliability::{self, Reliability};
use crate::run::{Parts, Records};
use crate::vocab::Level;

/// Every final-report schema okstra reads, oldest first, as (`schemaVersion`,
/// embedded schema in `schemas/`). The last one is what new runs are written
/// against. A new version is its schema file and one line here.
pub const SCHEMAS: &[(&str, &str)] = &[
    ("1.0", "final-report-v1.0.schema.json"),
    ("2.0", "final-report-v2.0.schema.json"),
    ("2.1", "final-report-v2.1.schema.json"),
    ("2.2", "final-report-v2.2.schema.json"),
];
/// The schema new runs are written against: (`schemaVersion`, file).
pub const CURRENT: (&str, &str) = SCHEMAS[SCHEMAS.len() - 1];
/// The rules of the blocks okstra writes from a run's records (from 2.1 on):
/// a problem there is fixed by writing them again, never by hand.
const OKSTRA_RULES: [&str; 4] = ["reliability", "verification", "coverage", "usage"];
/// The first version with the `reliability` block, and whose coverage and
/// usage okstra writes (and so checks against the records).
const RELIABILITY_SINCE: &str = "2.1";

/// The embedded schema of report version `version`, if okstra knows it.
pub fn schema_of(version: &str) -> Option<&'static str> {
    SCHEMAS
        .iter()
        .find(|(known, _)| *known == version)
        .map(|(_, file)| *file)
}

/// Whether `version` is a known version at or after `since` (versions are
/// listed oldest first).
fn is_at_least(version: &str, since: &str) -> bool {
    let position = |wanted: &str| SCHEMAS.iter().position(|(known, _)| *known == wanted);
    matches!((position(version), position(since)), (Some(found), Some(since)) if found >= since)
}

/// A report read from disk with whatever its run manifest tells us.
struct Loaded {
    data_path: PathBuf,
    schema_version: String,
    value: Value,
    run: Option<RunFacts>,
    /// Worker result files being indexed (started as soon as the manifest
    /// was read); `None` without a run or when only the schema is checked.
    pending: Option<PendingIndexes>,
}

impl Level {
    /// What the level checked, for the one summary line; `invariants` is
    /// false when only the JSON Schema was checked (`--schema-only`).
    fn scope(self, invariants: bool) -> &'static str {
        match (self, invariants) {
            (_, false) => "only the JSON Schema; `--schema-only` skipped the invariants",
            (Level::Schema, true) => {
                "the schema and the report's own invariants; no run records found"
            }
            (Level::Records, true) => {
                "the schema, the report's own invariants and the run's records"
            }
        }
    }
}

/// The outcome of checking one report.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Verdict {
    valid: bool,
    /// The report's own `schemaVersion` (the answer's is its own).
    #[serde(rename = "reportSchemaVersion")]
    schema_version: String,
    data_path: PathBuf,
    /// `schema`, or `records` when the run's records were checked too.
    level: Level,
    /// False when no run manifest was found and the roster / worker-result
    /// checks were skipped (the `schema` level).
    cross_file_checks: bool,
    problems: Vec<Problem>,
}

pub fn validate_command(args: &ValidateArgs) -> Result<Reply> {
    let mut loaded = load(&args.target, !args.schema_only)?;
    if args.schema_only {
        loaded.run = None;
    }
    let verdict = check(&mut loaded, !args.schema_only)?;
    let reply = Reply::pretty(&verdict, args.json)?;
    let skipped = (!verdict.cross_file_checks && !args.schema_only)
        .then(|| skipped_warning(&verdict.data_path));
    let summary = if verdict.valid {
        format!(
            "`{}` is a valid v{} report at the `{}` level ({})",
            verdict.data_path.display(),
            verdict.schema_version,
            verdict.level.as_str(),
            verdict.level.scope(!args.schema_only)
        )
    } else {
        format!(
            "`{}` is not a valid v{} report at the `{}` level: {} problem{}",
            verdict.data_path.display(),
            verdict.schema_version,
            verdict.level.as_str(),
            verdict.problems.len(),
            if verdict.problems.len() == 1 { "" } else { "s" }
        )
    };
    let rewrite = loaded
        .run
        .as_ref()
        .filter(|_| {
            verdict
                .problems
                .iter()
                .any(|problem| OKSTRA_RULES.contains(&problem.rule))
                && is_at_least(&verdict.schema_version, RELIABILITY_SINCE)
        })
        .map(|run| {
            format!(
                "okstra writes `reliability`, `verification`, `workerCoverage` and `usageSummary` \
                 from the run's records; `okstra report {}` writes them again",
                run.run_dir.display()
            )
        });
    let status = if verdict.valid {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    };
    // The command ends here: freeing a 10 MB report node by node would be a
    // measurable share of the run (see benches/validate.sh), so leave it to
    // process exit.
    std::mem::forget(loaded);
    // The verdict's line comes after the problems it counts.
    Ok(reply
        .then_say(move || {
            if let Some(skipped) = skipped {
                diag::warning(skipped);
            }
            diag::progress(summary);
            if let Some(rewrite) = rewrite {
                diag::note(rewrite);
            }
        })
        .with_status(status))
}

pub fn report_command(args: &ReportArgs) -> Result<Reply> {
    // A run's data.json gets okstra's own block before it is checked, as in
    // `okstra run`: a host lead renders through here.
    if let Some(run_dir) = run_of(&args.target)? {
        finalize(&run_dir)?;
    }
    if args.format == ReportFormat::Sarif {
        return sarif_command(args);
    }
    let mut loaded = load(&args.target, true)?;
    let verdict = check(&mut loaded, true)?;
    if !verdict.cross_file_checks {
        diag::warning(skipped_warning(&verdict.data_path));
    }
    if !verdict.valid {
        for problem in &verdict.problems {
            diag::detail(problem_line(problem));
        }
        diag::error(format_args!(
            "refusing to render `{}`: it has {} problem{} (see `okstra validate`)",
            verdict.data_path.display(),
            verdict.problems.len(),
            if verdict.problems.len() == 1 { "" } else { "s" }
        ));
        return Ok(Reply::status(ExitStatus::Failure));
    }
    let (markdown_path, html_path) = write_outputs(loaded, args.out_dir.as_deref())?;
    let written = Rendered {
        html: html_path,
        markdown: markdown_path,
    };
    Reply::answer(&written, args.json)
}

/// `okstra report --format sarif`: the findings of a valid report as one
/// SARIF log, written atomically (or to stdout with `--out -`).
fn sarif_command(args: &ReportArgs) -> Result<Reply> {
    let checked = check_report(&args.target)?;
    if !checked.is_valid() {
        for problem in &checked.problems {
            diag::detail(problem);
        }
        diag::error(format_args!(
            "refusing to write SARIF for `{}`: it has {} problem{} (see `okstra validate`)",
            checked.data_path.display(),
            checked.problems.len(),
            if checked.problems.len() == 1 { "" } else { "s" }
        ));
        return Ok(Reply::status(ExitStatus::Failure));
    }
    let findings = findings::collect(&checked.value, checked.run_dir.as_deref())?;
    let verification = findings::verification(&checked.value);
    let log = sarif::log(&findings, &checked.value, &verification);
    let out = match &args.out {
        Some(path) if path.as_os_str() == "-" => {
            return Reply::foreign_json(&log);
        }
        Some(path) => path.clone(),
        None => checked
            .data_path
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
            .join(REPORT_SARIF_NAME),
    };
    let mut bytes = serde_json::to_vec_pretty(&log).context("cannot serialise the SARIF log")?;
    bytes.push(b'\n');
    write_atomic_public(&out, &bytes)
        .with_context(|| format!("cannot write `{}`", out.display()))?;
    Reply::answer(&SarifWritten { sarif: out }, args.json)
}

/// Where `okstra report sarif` wrote the log: `{"sarif": path}`, or the
/// path as text.
#[derive(Serialize)]
struct SarifWritten {
    sarif: PathBuf,
}

impl Answer for SarifWritten {
    const SCHEMA: &'static str = "report-answer.schema.json";
    const VERSION: Option<u32> = Some(1);
}

impl crate::output::Text for SarifWritten {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(out, "{}", self.sarif.display())
    }
}

/// Validate and render a report beside its data.json; the two paths, or
/// the problems when it is invalid.
pub fn render(target: &Path) -> Result<Result<(PathBuf, PathBuf), Vec<String>>> {
    let mut loaded = load(target, true)?;
    let verdict = check(&mut loaded, true)?;
    if !verdict.valid {
        return Ok(Err(verdict.problems.iter().map(problem_line).collect()));
    }
    write_outputs(loaded, None).map(Ok)
}

/// A report as the outputs read it (SARIF, the gate, the pull-request
/// review): validated like `okstra validate` does, nothing written.
pub struct Checked {
    pub data_path: PathBuf,
    /// The raw report; the typed views are built from it when it is valid.
    pub value: Value,
    /// The run folder, when a run manifest was found.
    pub run_dir: Option<PathBuf>,
    /// One line per problem (`okstra validate`'s lines); empty when valid.
    pub problems: Vec<String>,
}

impl Checked {
    pub fn is_valid(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Read and check the report at `target` (a run folder, a report folder or
/// a data.json). `Err` when it cannot be read at all (missing, not JSON,
/// an unknown `schemaVersion`).
pub fn check_report(target: &Path) -> Result<Checked> {
    let mut loaded = load(target, true)?;
    let verdict = check(&mut loaded, true)?;
    Ok(Checked {
        run_dir: loaded.run.as_ref().map(|run| run.run_dir.clone()),
        problems: verdict.problems.iter().map(problem_line).collect(),
        data_path: loaded.data_path,
        value: loaded.value,
    })
}

/// The run folder `target` names or sits in, if any (nothing is read but
/// the folders' names and whether a run manifest exists).
pub fn run_folder(target: &Path) -> Result<Option<PathBuf>> {
    run_of(target)
}

/// The problems `okstra validate` finds in the report at `target` (none
/// when it is valid); nothing is written.
pub fn problems(target: &Path) -> Result<Vec<String>> {
    let mut loaded = load(target, true)?;
    let verdict = check(&mut loaded, true)?;
    Ok(verdict.problems.iter().map(problem_line).collect())
}

/// The run folder `target` belongs to: itself when it holds a run manifest,
/// else the nearest one above a report folder or data.json.
fn run_of(target: &Path) -> Result<Option<PathBuf>> {
    if target.is_dir() && RunLayout::of(target).run_manifest().is_file() {
        return Ok(Some(target.to_path_buf()));
    }
    let data_path = if target.is_dir() {
        target.join(REPORT_DATA_NAME)
    } else {
        target.to_path_buf()
    };
    if !data_path.exists() {
        return Ok(None);
    }
    let absolute = fs::canonicalize(&data_path)
        .with_context(|| format!("cannot resolve `{}`", data_path.display()))?;
    Ok(absolute
        .ancestors()
        .skip(1)
        .find(|dir| RunLayout::of(dir).run_manifest().is_file())
        .map(Path::to_path_buf))
}

/// Write the Markdown and HTML of a valid report into `out_dir` (default:
/// beside data.json).
fn write_outputs(loaded: Loaded, out_dir: Option<&Path>) -> Result<(PathBuf, PathBuf)> {
    let report: model::Report = serde_json::from_value(loaded.value).with_context(|| {
        format!(
            "`{}` passed its schema but does not fit okstra's report model",
            loaded.data_path.display()
        )
    })?;
    let out_dir = match out_dir {
        Some(dir) => dir.to_path_buf(),
        None => loaded
            .data_path
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
    };
    fs::create_dir_all(&out_dir)
        .with_context(|| format!("cannot create `{}`", out_dir.display()))?;
    let markdown_path = out_dir.join(REPORT_MARKDOWN_NAME);
    let html_path = out_dir.join(REPORT_HTML_NAME);
    let (markdown, html) = render::render(&report)?;
    write_atomic_public(&markdown_path, markdown.as_bytes())
        .with_context(|| format!("cannot write `{}`", markdown_path.display()))?;
    write_atomic_public(&html_path, html.as_bytes())
        .with_context(|| format!("cannot write `{}`", html_path.display()))?;
    Ok((markdown_path, html_path))
}

/// A line of [`problems`] taken apart: its JSON pointer and its rule.
pub fn problem_parts(line: &str) -> Option<(&str, &str)> {
    let (pointer, rest) = line.split_once(": [")?;
    let (rule, _) = rest.split_once("] ")?;
    Some((pointer, rule))
}

/// The problems of a report for a person, one a line (`--json` is the
/// whole verdict).
impl Answer for Verdict {
    const SCHEMA: &'static str = "validate-answer.schema.json";
    const VERSION: Option<u32> = Some(1);
}

impl crate::output::Text for Verdict {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        for problem in &self.problems {
            writeln!(out, "{}", problem_line(problem))?;
        }
        Ok(())
    }
}

/// The two files `okstra report` rendered (fields in the order the JSON
/// has always listed them).
#[derive(Serialize)]
struct Rendered {
    html: PathBuf,
    markdown: PathBuf,
}

/// Markdown first, then HTML, a path a line.
impl Answer for Rendered {
    const SCHEMA: &'static str = "report-answer.schema.json";
    const VERSION: Option<u32> = Some(1);
}

impl crate::output::Text for Rendered {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(out, "{}", self.markdown.display())?;
        writeln!(out, "{}", self.html.display())
    }
}

fn problem_line(problem: &Problem) -> String {
    let pointer = if problem.pointer.is_empty() {
        "/"
    } else {
        &problem.pointer
    };
    format!("{pointer}: [{}] {}", problem.rule, problem.message)
}

fn skipped_warning(data_path: &Path) -> String {
    format!(
        "no `{RUN_MANIFEST}` found above `{}`; checked the schema and the report's own \
         invariants, skipped the roster and worker-result checks",
        data_path.display()
    )
}

/// Schema first, then (unless `invariants` is false) the invariants; all
/// problems sorted together.
fn check(loaded: &mut Loaded, invariants: bool) -> Result<Verdict> {
    let schema_name = schema_of(&loaded.schema_version)
        .context("the schema version was checked when the report was loaded")?;
    let violations = schema::violations(schema_name, &loaded.value)
        .with_context(|| format!("cannot check against `{schema_name}`"))?;
    let mut problems: Vec<Problem> = violations
        .0
        .into_iter()
        .map(|violation| Problem {
            rule: SCHEMA_RULE,
            pointer: violation.pointer,
            message: violation.message,
        })
        .collect();
    if invariants {
        // okstra's blocks, from the run's records read once: coverage, usage
        // and the ledger's completeness are okstra's from 2.1 on; the
        // reliability and verification blocks are checked when the report
        // carries them.
        if let Some(run) = loaded.run.as_mut() {
            let records =
                Records::open(&run.run_dir, Parts::FACTS).map_err(|err| format!("{err:#}"));
            run.ledger = match &records {
                Ok(records) => ledger_classes(records).map(Ok),
                Err(reason) => Some(Err(reason.clone())),
            };
            if is_at_least(&loaded.schema_version, RELIABILITY_SINCE) {
                run.records = Some(records.as_ref().map_err(Clone::clone).map(|records| {
                    validate::Computed {
                        coverage: derive::coverage::of(records),
                        usage: derive::usage::summary(records),
                    }
                }));
            }
            if loaded.value.get("reliability").is_some() {
                run.reliability = Some(
                    records
                        .as_ref()
                        .map_err(Clone::clone)
                        .map(derive::reliability::of),
                );
            }
            if loaded.value.get("verification").is_some() {
                run.verification = Some(match &records {
                    Ok(records) => verification::compute(records, Some(&loaded.value))
                        .map_err(|err| format!("{err:#}")),
                    Err(reason) => Err(reason.clone()),
                });
            }
            // The results the report cites are the ones okstra recorded.
            if let Ok(records) = &records {
                problems.extend(integrity(&loaded.value, records));
            }
        }
        let indexes = loaded
            .pending
            .take()
            .map(PendingIndexes::finish)
            .unwrap_or_default();
        problems.extend(validate::invariants(
            &loaded.value,
            loaded.run.as_ref(),
            &indexes,
        ));
    }
    validate::sort(&mut problems);
    Ok(Verdict {
        valid: problems.is_empty(),
        schema_version: loaded.schema_version.clone(),
        data_path: loaded.data_path.clone(),
        level: if loaded.run.is_some() {
            Level::Records
        } else {
            Level::Schema
        },
        cross_file_checks: loaded.run.is_some(),
        problems,
    })
}

/// Find data.json and its run manifest from a run folder or a data.json path;
/// with `index_results`, start indexing the worker results right away.
fn load(target: &Path, index_results: bool) -> Result<Loaded> {
    let (data_path, run) = if target.is_dir() {
        if RunLayout::of(target).run_manifest().is_file() {
            let (data_path, run) = read_manifest(target)?;
            (data_path, Some(run))
        } else if target.join(REPORT_DATA_NAME).exists() {
            let data_path = target.join(REPORT_DATA_NAME);
            let run = find_run(&data_path)?;
            (data_path, run)
        } else {
            bail!(
                "`{}` is neither a run folder (no `{RUN_MANIFEST}`) nor a report folder (no \
                 `{REPORT_DATA_NAME}`)",
                target.display()
            );
        }
    } else if target.exists() {
        // Not necessarily a regular file: the read below says what it is.
        (target.to_path_buf(), find_run(target)?)
    } else {
        bail!("`{}` does not exist", target.display());
    };
    let pending = run
        .as_ref()
        .filter(|_| index_results)
        .map(PendingIndexes::start);
    // Bounded (a report over the limit is refused before parsing), strict
    // (a duplicated key is an error) and within a memory budget.
    let bytes = fsread::read(&data_path, fsread::Kind::Report)
        .with_context(|| format!("cannot read report `{}`", data_path.display()))?;
    let value = strict_json::from_slice(&bytes)
        .with_context(|| format!("report `{}` is not valid JSON", data_path.display()))?;
    drop(bytes);
    let known = || {
        SCHEMAS
            .iter()
            .map(|(version, _)| format!("`{version}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let schema_version = match value.get("schemaVersion") {
        Some(Value::String(version)) if schema_of(version).is_some() => version.clone(),
        Some(other) => bail!(
            "report `{}` has unknown `schemaVersion` {other}; okstra knows {}",
            data_path.display(),
            known()
        ),
        None => bail!(
            "report `{}` has no `schemaVersion`, so okstra cannot pick a schema ({})",
            data_path.display(),
            known()
        ),
    };
    Ok(Loaded {
        data_path,
        schema_version,
        value,
        run,
        pending,
    })
}

/// Walk up from a data.json to the nearest run manifest, if any.
fn find_run(data_path: &Path) -> Result<Option<RunFacts>> {
    let absolute = fs::canonicalize(data_path)
        .with_context(|| format!("cannot resolve `{}`", data_path.display()))?;
    for dir in absolute.ancestors().skip(1) {
        if RunLayout::of(dir).run_manifest().is_file() {
            let (_, run) = read_manifest(dir)?;
            return Ok(Some(run));
        }
    }
    Ok(None)
}

/// Read the parts of a run the report checks need.
fn read_manifest(run_dir: &Path) -> Result<(PathBuf, RunFacts)> {
    let run = Run::open(run_dir)?;
    let path = run.layout().run_manifest();
    // Already confined to the run; a worker result read as evidence, or
    // the report written beside data.json, must not go through a link.
    let no_links = |resolved: &Path, what: &str| -> Result<PathBuf> {
        confine::inside_no_links(resolved, &run.dir, what)
            .with_context(|| format!("run manifest `{}` is refused", path.display()))
    };
    let mut roster = Vec::with_capacity(run.assignments.len());
    for (index, assignment) in run.assignments.iter().enumerate() {
        roster.push(Rostered {
            worker_id: assignment.worker_id.clone(),
            role: assignment.role.as_str().to_owned(),
            provider: assignment.provider.as_str().to_owned(),
            result_path: no_links(
                &assignment.paths.result_path,
                &format!("`assignments[{index}].resultPath`"),
            )?,
        });
    }
    let data_path = no_links(&run.report_data_path, "`finalReport.dataPath`")?;
    let facts = RunFacts {
        run_dir: run.dir.clone(),
        roster,
        task_type: Some(run.task_type.as_str().to_owned()),
        schema_version: run.report_schema_version.clone(),
        run_id: Some(run.run_id.clone()),
        task_key: Some(run.task_key.clone()),
        ledger: None,
        reliability: None,
        verification: None,
        records: None,
    };
    Ok((data_path, facts))
}

/// One problem per result the report cites (its source items' workers; with
/// a `verification` block, every round's verdicts too) that is not the file
/// okstra recorded.
fn integrity(report: &Value, records: &Records) -> Vec<Problem> {
    let cited: std::collections::BTreeSet<String> = validate::ROW_TABLES
        .iter()
        .flat_map(|(table, _)| validate::rows(report, table))
        .flat_map(|(_, row)| {
            row.get("sourceItems")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
        })
        .filter_map(|item| item.split_once(':').map(|(worker, _)| worker.to_owned()))
        .collect();
    let reviews = report.get("verification").is_some();
    derive::integrity::mismatches(records, &cited, reviews)
        .iter()
        .map(|mismatch| Problem {
            rule: "records",
            pointer: String::new(),
            message: mismatch.message(&records.run.dir),
        })
        .collect()
}

/// The convergence ledger's claims as the rules judge them (their classes,
/// their findings), when the run has a ledger.
fn ledger_classes(records: &Records) -> Option<validate::LedgerClasses> {
    let (ledger, judged) = derive::verification::judged(records)?;
    let path = records.layout().convergence_ledger();
    Some(validate::LedgerClasses {
        shown: path
            .strip_prefix(&records.run.dir)
            .unwrap_or(&path)
            .display()
            .to_string(),
        failed: ledger
            .items
            .iter()
            .enumerate()
            .filter(|(index, _)| {
                judged.outcome(*index).class == crate::vocab::FinalClass::Unverifiable
            })
            .map(|(_, item)| {
                (
                    item.item_id.clone(),
                    verification::failed_anchor(&item.anchoring.anchors),
                )
            })
            .collect(),
        classes: ledger
            .items
            .iter()
            .enumerate()
            .map(|(index, item)| (item.item_id.clone(), Some(judged.outcome(index).class)))
            .collect(),
        finding: ledger
            .items
            .iter()
            .enumerate()
            .map(|(index, item)| (item.item_id.clone(), judged.findings.of[index]))
            .collect(),
    })
}

#[cfg(test)]
mod tests;
