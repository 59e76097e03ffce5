//! The report invariants no JSON Schema can express, and the worker-result
//! item index they need.
//!
//! Every check reads the raw `serde_json::Value`, so it still runs (and says
//! something useful) when the schema found problems too: a wrong type simply
//! skips the invariant that needed it. Each worker result file is read and
//! indexed once, on its own thread, while data.json is parsed and checked.

use std::collections::HashMap;
use std::path::Path;
use std::thread::{self, JoinHandle};

use serde_json::Value;

use crate::fsread;
use crate::items;
use crate::severity::{self};
use crate::vocab::FinalClass;

pub use super::facts::{Computed, Rostered, RunFacts};
pub use super::rules::{Indexed, LedgerClasses, Problem, rows};
use super::verification;
use crate::derive::reliability::Reliability;

/// Rule name of a schema violation (every other rule is an invariant).
pub const SCHEMA_RULE: &str = "schema";

mod sources;

pub use sources::PendingIndexes;
use sources::{shown_path, source_items};

/// Sort problems by pointer (array indices compared as numbers, so
/// `/consensus/2` comes before `/consensus/10`), then rule, then message.
pub fn sort(problems: &mut [Problem]) {
    problems.sort_by_cached_key(|problem| {
        let segments: Vec<(u8, u64, String)> = problem
            .pointer
            .split('/')
            .map(|segment| match segment.parse::<u64>() {
                Ok(number) => (0, number, String::new()),
                Err(_) => (1, 0, segment.to_owned()),
            })
            .collect();
        (
            segments,
            problem.rule != SCHEMA_RULE,
            problem.rule,
            problem.message.clone(),
        )
    });
}

/// The three synthesised row tables: key in data.json and id prefix.
pub const ROW_TABLES: [(&str, &str); 3] = [
    ("consensus", "C"),
    ("differences", "D"),
    ("primaryEvidence", "E"),
];

/// Every invariant problem in `report`; `run` is `None` when no run manifest
/// was found, which skips the checks that need the roster or worker results.
/// `indexes` holds the finished [`PendingIndexes`] (empty without a run).
pub fn invariants(
    report: &Value,
    run: Option<&RunFacts>,
    indexes: &HashMap<String, Indexed>,
) -> Vec<Problem> {
    let mut problems = Vec::new();
    verdict_card(report, &mut problems);
    routing(report, &mut problems);
    task_type(report, run, &mut problems);
    if let Some(run) = run {
        schema_version(report, run, &mut problems);
        header(report, run, &mut problems);
        if let Some(ledger) = &run.ledger {
            convergence(report, ledger, &mut problems);
            if run.records.is_some()
                && let Ok(ledger) = ledger
            {
                super::records::ledger_complete(report, ledger, &mut problems);
            }
        }
        super::records::usage(report, run, &mut problems);
    }
    reliability(report, run, &mut problems);
    super::floor::severities(report, indexes, &mut problems);
    let ledger = run
        .and_then(|run| run.ledger.as_ref())
        .and_then(|ledger| ledger.as_ref().ok());
    verification::check(
        report,
        run.and_then(|run| run.verification.as_ref()),
        ledger,
        &mut problems,
    );
    row_ids(report, &mut problems);
    source_items(report, run, indexes, &mut problems);
    coverage(report, run, indexes, &mut problems);
    problems
}

fn verdict_card(report: &Value, problems: &mut Vec<Problem>) {
    for key in ["verdictToken", "direction"] {
        let card = report.pointer(&format!("/verdictCard/{key}"));
        let verdict = report.pointer(&format!("/finalVerdict/{key}"));
        if let (Some(Value::String(card)), Some(Value::String(verdict))) = (card, verdict)
            && card != verdict
        {
            problems.push(Problem::new(
                "verdict-card",
                format!("/verdictCard/{key}"),
                format!(
                    "`verdictCard.{key}` is `{card}` but `finalVerdict.{key}` is `{verdict}`; \
                     they must match byte for byte"
                ),
            ));
        }
    }
}

fn routing(report: &Value, problems: &mut Vec<Problem>) {
    let Some(first) = report.pointer("/recommendedNextSteps/0") else {
        return;
    };
    let expected = match first.get("kind").and_then(Value::as_str) {
        Some("phase") => match first.get("phase").and_then(Value::as_str) {
            Some(phase) => Some(phase),
            None => return,
        },
        Some(_) => None,
        None => return,
    };
    let actual = match report.pointer("/workflow/nextRecommendedPhase") {
        Some(Value::String(phase)) => Some(phase.as_str()),
        Some(Value::Null) => None,
        _ => return,
    };
    if actual != expected {
        let show =
            |phase: Option<&str>| phase.map_or_else(|| "null".to_owned(), |p| format!("`{p}`"));
        problems.push(Problem::new(
            "next-step-routing",
            "/workflow/nextRecommendedPhase",
            format!(
                "`workflow.nextRecommendedPhase` is {} but `recommendedNextSteps[0]` routes to {}",
                show(actual),
                show(expected)
            ),
        ));
    }
}

fn task_type(report: &Value, run: Option<&RunFacts>, problems: &mut Vec<Problem>) {
    let header = report.pointer("/header/taskType").and_then(Value::as_str);
    let block = report.pointer("/task/taskType").and_then(Value::as_str);
    if let (Some(header), Some(block)) = (header, block)
        && header != block
    {
        problems.push(Problem::new(
            "task-type",
            "/task/taskType",
            format!("the task block is for `{block}` but `header.taskType` is `{header}`"),
        ));
    }
    if let (Some(header), Some(Some(run_type))) = (header, run.map(|run| run.task_type.as_deref()))
        && header != run_type
    {
        problems.push(Problem::new(
            "task-type",
            "/header/taskType",
            format!("`header.taskType` is `{header}` but the run manifest says `{run_type}`"),
        ));
    }
}

/// The report uses the schema its run manifest names, or a later one (okstra
/// writes its own blocks in the current schema's shape, and moves the
/// report's `schemaVersion` up with them).
fn schema_version(report: &Value, run: &RunFacts, problems: &mut Vec<Problem>) {
    if let (Some(found), Some(expected)) = (
        report.get("schemaVersion").and_then(Value::as_str),
        run.schema_version.as_deref(),
    ) && found != expected
        && !super::is_at_least(found, expected)
    {
        problems.push(Problem::new(
            "schema-version",
            "/schemaVersion",
            format!(
                "the report uses schema `{found}` but the run manifest expects `{expected}` (or a \
                 later one)"
            ),
        ));
    }
}

fn row_ids(report: &Value, problems: &mut Vec<Problem>) {
    let mut seen: HashMap<&str, (&str, usize)> = HashMap::new();
    for (table, _) in ROW_TABLES {
        for (index, row) in rows(report, table) {
            let Some(id) = row.get("id").and_then(Value::as_str) else {
                continue;
            };
            if let Some((first_table, first_index)) = seen.get(id) {
                problems.push(Problem::new(
                    "row-id",
                    format!("/{table}/{index}/id"),
                    format!(
                        "row id `{id}` is already used by `/{first_table}/{first_index}`; every \
                         row needs a fresh id"
                    ),
                ));
            } else {
                seen.insert(id, (table, index));
            }
        }
    }
}

/// `header.taskKey` and `header.runId` name this run.
fn header(report: &Value, run: &RunFacts, problems: &mut Vec<Problem>) {
    for (key, expected) in [("taskKey", &run.task_key), ("runId", &run.run_id)] {
        if let (Some(found), Some(expected)) = (
            report
                .pointer(&format!("/header/{key}"))
                .and_then(Value::as_str),
            expected.as_deref(),
        ) && found != expected
        {
            problems.push(Problem::new(
                "header",
                format!("/header/{key}"),
                format!("`header.{key}` is `{found}` but the run manifest says `{expected}`"),
            ));
        }
    }
}

/// The report agrees with the convergence ledger: a row's `convergence` is
/// the class of one of its source items, no `contested` item is cited as
/// consensus, and every `contested` item appears in `differences`.
fn convergence(
    report: &Value,
    ledger: &Result<LedgerClasses, String>,
    problems: &mut Vec<Problem>,
) {
    let ledger = match ledger {
        Ok(ledger) => ledger,
        Err(reason) => {
            problems.push(Problem::new(
                "convergence",
                "",
                format!("the run's convergence ledger cannot be used: {reason}"),
            ));
            return;
        }
    };
    let class_of = |item: &str| ledger.classes.get(item).copied().flatten();
    let source_items = |row: &Value| -> Vec<String> {
        row.get("sourceItems")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    };
    for (table, _) in ROW_TABLES {
        for (index, row) in rows(report, table) {
            let sources = source_items(row);
            let known: Vec<(&str, FinalClass)> = sources
                .iter()
                .filter_map(|item| class_of(item).map(|class| (item.as_str(), class)))
                .collect();
            if let Some(claimed) = row.get("convergence").and_then(Value::as_str)
                && FinalClass::ALL
                    .iter()
                    .any(|class| class.as_str() == claimed)
                && !known.is_empty()
                && !known.iter().any(|(_, class)| class.as_str() == claimed)
            {
                let classes = known
                    .iter()
                    .map(|(item, class)| format!("`{item}` is `{class}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                problems.push(Problem::new(
                    "convergence",
                    format!("/{table}/{index}/convergence"),
                    format!(
                        "`{claimed}` is not the class of any of the row's source items in `{}` \
                         ({classes})",
                        ledger.shown
                    ),
                ));
            }
            if table == "consensus" {
                for (position, item) in sources.iter().enumerate() {
                    let why = match class_of(item) {
                        Some(FinalClass::Contested) => {
                            "a contested item belongs in `differences`, not `consensus`"
                        }
                        Some(FinalClass::Refuted) => {
                            "a refuted claim is never consensus: okstra lists it apart with its \
                             refutation"
                        }
                        _ => continue,
                    };
                    let class = class_of(item).map_or("", FinalClass::as_str);
                    problems.push(Problem::new(
                        "convergence",
                        format!("/consensus/{index}/sourceItems/{position}"),
                        format!("`{item}` is `{class}` in `{}`; {why}", ledger.shown),
                    ));
                }
                one_finding(index, &sources, ledger, problems);
            }
        }
    }
    let differing: std::collections::HashSet<String> = rows(report, "differences")
        .flat_map(|(_, row)| source_items(row))
        .collect();
    let mut contested: Vec<&String> = ledger
        .classes
        .iter()
        .filter(|(item, class)| {
            **class == Some(FinalClass::Contested) && !differing.contains(*item)
        })
        .map(|(item, _)| item)
        .collect();
    contested.sort();
    for item in contested {
        problems.push(Problem::new(
            "convergence",
            "/differences",
            format!(
                "`{item}` is `contested` in `{}` but no `differences` row cites it",
                ledger.shown
            ),
        ));
    }
}

/// A consensus row is one finding: every claim of the ledger it cites was
/// merged into one by its reviewers (`derive::identity`). Claims reviewers
/// did not say are the same — two workers' claims at the same lines,
/// perhaps saying opposite things — are separate rows, each found by its
/// own owner.
fn one_finding(
    index: usize,
    sources: &[String],
    ledger: &LedgerClasses,
    problems: &mut Vec<Problem>,
) {
    let mut first: Option<(&str, usize)> = None;
    for (position, item) in sources.iter().enumerate() {
        let Some(&finding) = ledger.finding.get(item) else {
            continue;
        };
        match first {
            None => first = Some((item, finding)),
            Some((seen, seen_finding)) if seen_finding != finding => {
                problems.push(Problem::new(
                    "convergence",
                    format!("/consensus/{index}/sourceItems/{position}"),
                    format!(
                        "`{item}` and `{seen}` are two findings in `{}`: no quorum of reviewers \
                         said they are the same claim, so they are two rows, each found by its \
                         own owner",
                        ledger.shown
                    ),
                ));
            }
            Some(_) => {}
        }
    }
}

/// Phrases that tell a reader nothing was found, which an unverified report
/// with no rows may not say: its reviewers may simply have failed.
const NO_FINDINGS: &[&str] = &[
    "no findings",
    "no issues found",
    "found no issues",
    "no problems found",
    "nothing was found",
    "found nothing",
];

/// The `reliability` block (schema 2.1): in a run folder it must be what the
/// run's records give; without one, it must at least agree with itself. Either
/// way a report that was not cross-verified claims no consensus, and one with
/// no rows at all does not say it found nothing.
fn reliability(report: &Value, run: Option<&RunFacts>, problems: &mut Vec<Problem>) {
    let Some(block) = report.get("reliability").and_then(Value::as_object) else {
        return;
    };
    match run.and_then(|run| run.reliability.as_ref()) {
        Some(Ok(computed)) => against_records(block, computed, problems),
        Some(Err(reason)) => problems.push(Problem::new(
            "reliability",
            "/reliability",
            format!("`reliability` cannot be checked against the run's records: {reason}"),
        )),
        None => self_consistent(block, problems),
    }
    let count = |key: &str| block.get(key).and_then(Value::as_u64);
    if let (Some(claimed), Some(rounds)) = (
        report
            .pointer("/workflow/convergenceRounds")
            .and_then(Value::as_u64),
        count("roundsRun"),
    ) && claimed != rounds
    {
        problems.push(Problem::new(
            "reliability",
            "/workflow/convergenceRounds",
            format!(
                "`workflow.convergenceRounds` is {claimed} but `reliability.roundsRun` is {rounds}"
            ),
        ));
    }
    if block.get("crossVerified").and_then(Value::as_bool) != Some(false) {
        return;
    }
    for (index, row) in rows(report, "consensus") {
        if let Some(claimed) = row.get("convergence").and_then(Value::as_str)
            && [FinalClass::FullConsensus, FinalClass::PartialConsensus]
                .iter()
                .any(|class| class.as_str() == claimed)
        {
            problems.push(Problem::new(
                "reliability",
                format!("/consensus/{index}/convergence"),
                format!(
                    "`{claimed}` claims the finding was cross-verified, but \
                     `reliability.crossVerified` is false; an unverified finding belongs in \
                     `differences`"
                ),
            ));
        }
    }
    if rows(report, "consensus").next().is_none() && rows(report, "differences").next().is_none() {
        no_findings_claims(report, problems);
    }
}

/// One problem per field of the block that differs from the records' answer.
fn against_records(
    block: &serde_json::Map<String, Value>,
    computed: &Reliability,
    problems: &mut Vec<Problem>,
) {
    let Ok(Value::Object(expected)) = serde_json::to_value(computed) else {
        return;
    };
    let show = |value: Option<&Value>| match value {
        None => "none".to_owned(),
        Some(Value::String(text)) => format!("`{text}`"),
        Some(other) => format!("`{other}`"),
    };
    for (key, found) in block {
        let wanted = expected.get(key);
        if wanted != Some(found) {
            problems.push(Problem::new(
                "reliability",
                format!("/reliability/{key}"),
                format!(
                    "`reliability.{key}` is {} but okstra computes {} from the run's records; \
                     okstra writes this block, never edit it",
                    show(Some(found)),
                    show(wanted)
                ),
            ));
        }
    }
}

/// Without the run's records: the counts the block states must support what
/// it says.
fn self_consistent(block: &serde_json::Map<String, Value>, problems: &mut Vec<Problem>) {
    let count = |key: &str| block.get(key).and_then(Value::as_u64);
    if let (Some(completed), Some(rostered)) =
        (count("reviewersCompleted"), count("reviewersRostered"))
        && completed > rostered
    {
        problems.push(Problem::new(
            "reliability",
            "/reliability/reviewersCompleted",
            format!("{completed} reviewers completed but only {rostered} were rostered"),
        ));
    }
    if let (Some(rounds), Some(listed)) = (
        count("roundsRun"),
        block.get("rounds").and_then(Value::as_array),
    ) && usize::try_from(rounds).ok() != Some(listed.len())
    {
        problems.push(Problem::new(
            "reliability",
            "/reliability/rounds",
            format!(
                "`reliability.roundsRun` is {rounds} but `reliability.rounds` lists {}",
                listed.len()
            ),
        ));
    }
    if block.get("crossVerified").and_then(Value::as_bool) == Some(true) {
        let completed = count("reviewersCompleted").unwrap_or(0);
        let required = count("reviewersRequired").unwrap_or(0);
        let why = if completed < required {
            Some(format!(
                "`reliability.reviewersCompleted` ({completed}) is below \
                 `reliability.reviewersRequired` ({required})"
            ))
        } else if count("roundsRun") == Some(0) {
            Some("no convergence round ran".to_owned())
        } else {
            None
        };
        if let Some(why) = why {
            problems.push(Problem::new(
                "reliability",
                "/reliability/crossVerified",
                format!("`reliability.crossVerified` is true but {why}"),
            ));
        }
    }
}

/// Text fields of an unverified report with no rows that say nothing was
/// found.
fn no_findings_claims(report: &Value, problems: &mut Vec<Problem>) {
    let mut fields: Vec<(String, &str)> = Vec::new();
    for pointer in [
        "/humanSummary/headline",
        "/finalVerdict/statement",
        "/verdictCard/headline",
        "/task/userNarrative",
    ] {
        if let Some(text) = report.pointer(pointer).and_then(Value::as_str) {
            fields.push((pointer.to_owned(), text));
        }
    }
    for list in ["/humanSummary/paragraphs", "/verdictCard/keyRisks"] {
        let texts = report.pointer(list).and_then(Value::as_array);
        for (index, text) in texts.into_iter().flatten().enumerate() {
            if let Some(text) = text.as_str() {
                fields.push((format!("{list}/{index}"), text));
            }
        }
    }
    for (pointer, text) in fields {
        let lower = text.to_lowercase();
        if let Some(phrase) = NO_FINDINGS.iter().find(|phrase| lower.contains(*phrase)) {
            problems.push(Problem::new(
                "reliability",
                pointer,
                format!(
                    "says \"{phrase}\", but the run was not cross-verified \
                     (`reliability.crossVerified` is false): failed reviewers may be why nothing \
                     was found; say that no finding was cross-verified"
                ),
            ));
        }
    }
}

fn coverage(
    report: &Value,
    run: Option<&RunFacts>,
    indexes: &HashMap<String, Indexed>,
    problems: &mut Vec<Problem>,
) {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let entries = report.get("workerCoverage").and_then(Value::as_array);
    for (index, entry) in entries.into_iter().flatten().enumerate() {
        let Some(worker) = entry.get("workerId").and_then(Value::as_str) else {
            continue;
        };
        let pointer = format!("/workerCoverage/{index}/workerId");
        if let Some(first) = seen.get(worker) {
            problems.push(Problem::new(
                "coverage",
                pointer,
                format!("worker `{worker}` is already covered by `/workerCoverage/{first}`"),
            ));
            continue;
        }
        seen.insert(worker, index);
        let Some(run) = run else { continue };
        match run.roster.iter().find(|w| w.worker_id == worker) {
            None => problems.push(Problem::new(
                "coverage",
                pointer,
                format!("worker `{worker}` is not on the run's roster"),
            )),
            Some(rostered) => {
                let reported = entry.get("itemsReported").and_then(Value::as_u64);
                let parsed = match indexes.get(worker) {
                    Some(Indexed::Items(items, _)) => {
                        Some(items.values().map(|n| u64::from(*n)).sum())
                    }
                    Some(Indexed::Unreadable(_)) => Some(0),
                    None => None,
                };
                if let (Some(reported), Some(parsed)) = (reported, parsed)
                    && reported != parsed
                {
                    problems.push(Problem::new(
                        "coverage",
                        format!("/workerCoverage/{index}/itemsReported"),
                        format!(
                            "worker `{worker}` reports {reported} items but {parsed} are parsed \
                             from its result `{}`",
                            shown_path(&rostered.result_path, &run.run_dir)
                        ),
                    ));
                }
                let provider = entry.get("provider").and_then(Value::as_str);
                if let Some(provider) = provider
                    && provider != rostered.provider
                {
                    problems.push(Problem::new(
                        "coverage",
                        format!("/workerCoverage/{index}/provider"),
                        format!(
                            "worker `{worker}` ran on `{}` but its coverage says `{provider}`",
                            rostered.provider
                        ),
                    ));
                }
                if let Some(Ok(records)) = &run.records
                    && let Some(computed) = records.coverage.iter().find(|e| e.worker_id == worker)
                {
                    super::records::coverage_against_records(entry, index, computed, problems);
                }
            }
        }
    }
    if let Some(Err(reason)) = run.and_then(|run| run.records.as_ref()) {
        problems.push(Problem::new(
            "coverage",
            "/workerCoverage",
            format!("`workerCoverage` cannot be checked against the run's records: {reason}"),
        ));
    }
    if let Some(run) = run {
        for rostered in run.covered() {
            if !seen.contains_key(rostered.worker_id.as_str()) {
                problems.push(Problem::new(
                    "coverage",
                    "/workerCoverage",
                    format!(
                        "rostered worker `{}` ({}, {}) has no coverage entry; every worker \
                         must be accounted for, with a failure reason if it produced nothing",
                        rostered.worker_id, rostered.role, rostered.provider
                    ),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_sort_numerically_by_pointer() {
        let mut problems = vec![
            Problem::new("row-id", "/consensus/10/id", String::new()),
            Problem::new("row-id", "/consensus/2/id", String::new()),
            Problem::new(SCHEMA_RULE, "/consensus/2/id", String::new()),
            Problem::new("coverage", "", String::new()),
        ];
        sort(&mut problems);
        let order: Vec<_> = problems
            .iter()
            .map(|p| (p.pointer.as_str(), p.rule))
            .collect();
        assert_eq!(
            order,
            vec![
                ("", "coverage"),
                ("/consensus/2/id", SCHEMA_RULE),
                ("/consensus/2/id", "row-id"),
                ("/consensus/10/id", "row-id"),
            ]
        );
    }

    #[test]
    fn routing_follows_the_first_step() {
        let report = serde_json::json!({
            "recommendedNextSteps": [{"kind": "action", "action": "ship", "reason": "done"}],
            "workflow": {"nextRecommendedPhase": "implementation"}
        });
        let problems = invariants(&report, None, &HashMap::new());
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].rule, "next-step-routing");
    }

    #[test]
    fn garbage_input_never_panics() {
        for value in [
            Value::Null,
            serde_json::json!([1, 2]),
            serde_json::json!({"consensus": "x", "workerCoverage": [1, {"workerId": 3}]}),
            serde_json::json!({"consensus": [{"id": 1, "sourceItems": [5, "nocolon"]}]}),
            serde_json::json!({"reliability": {"crossVerified": false, "roundsRun": -1,
                "rounds": 3}, "consensus": [{"convergence": 5}], "humanSummary": 7}),
            serde_json::json!({"reliability": {"crossVerified": true, "reviewersCompleted": "x"},
                "workflow": {"convergenceRounds": "2"}}),
        ] {
            let _ = invariants(&value, None, &HashMap::new());
        }
    }
}
