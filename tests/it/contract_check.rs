//! The contract checker: what the bundle's documents claim, checked against
//! the real CLI (`okstra __check-args`), the schemas it ships and its files.
//! A plain function over (file name, text) pairs, so tests can feed it a
//! deliberately broken copy of a rendered document.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::schema_walk::{all_nodes, enum_of, path_segments, resolve};
use crate::support::{okstra, repo_root};

/// The schemas the bundle ships in `instruction-set/` (file there, file in
/// `schemas/`), plus the manifests okstra writes, which prompts also name.
const SHIPPED: [(&str, &str); 4] = [
    ("final-report-schema.json", "final-report-v2.2.schema.json"),
    ("team-state-schema.json", "team-state.schema.json"),
    ("round-plan-schema.json", "round-plan.schema.json"),
    (
        "convergence-ledger-schema.json",
        "convergence-ledger.schema.json",
    ),
];
/// Also `okstra next --json`'s answer, which the lead documents read field
/// by field, and the report inputs, which the report writer does.
const MANIFEST_SCHEMAS: [&str; 4] = [
    "run-manifest.schema.json",
    "task-manifest.schema.json",
    "next-answer.schema.json",
    "report-inputs.schema.json",
];

/// What the checker knows about one bundle: its files, its manifest's
/// assignments and the schemas it ships.
pub struct Checker {
    run_dir: String,
    /// Every file and folder in the bundle, relative to the run folder.
    files: BTreeSet<String>,
    /// Result, worker-results, error and heartbeat paths of the roster.
    worker_paths: BTreeSet<String>,
    /// The task type, for its verdict tokens.
    task_type: String,
    /// The closed lists found so far (a deleted table must not pass).
    pub lists_seen: BTreeSet<&'static str>,
    /// The first dispatch name of the roster, for `<dispatch name>`.
    sample_dispatch: String,
    /// Names that are fields without a schema: command output fields and
    /// the lead-event fields the lead contract's event table defines.
    output_fields: BTreeSet<String>,
    schemas: BTreeMap<&'static str, Value>,
}

impl Checker {
    pub fn new(run_dir: &Path) -> Checker {
        let mut files = BTreeSet::new();
        collect(run_dir, run_dir, &mut files);
        let manifest: Value =
            serde_json::from_str(&fs::read_to_string(run_dir.join("run-manifest.json")).unwrap())
                .unwrap();
        let mut worker_paths = BTreeSet::new();
        for assignment in manifest["assignments"].as_array().unwrap() {
            for key in [
                "resultPath",
                "workerResultsPath",
                "errorPath",
                "heartbeatPath",
            ] {
                if let Some(path) = assignment[key].as_str() {
                    worker_paths.insert(path.to_owned());
                }
            }
        }
        let mut schemas = BTreeMap::new();
        for (shipped, source) in SHIPPED {
            let text = fs::read_to_string(run_dir.join("instruction-set").join(shipped))
                .unwrap_or_else(|err| panic!("the bundle does not ship `{shipped}`: {err}"));
            let from_repo = fs::read_to_string(repo_root().join("schemas").join(source)).unwrap();
            assert_eq!(
                text, from_repo,
                "`{shipped}` differs from `schemas/{source}`"
            );
            schemas.insert(source, serde_json::from_str(&text).unwrap());
        }
        for name in MANIFEST_SCHEMAS {
            let text = fs::read_to_string(repo_root().join("schemas").join(name)).unwrap();
            schemas.insert(name, serde_json::from_str(&text).unwrap());
        }
        Checker {
            run_dir: run_dir.to_string_lossy().into_owned(),
            files,
            worker_paths,
            task_type: manifest["taskType"].as_str().unwrap().to_owned(),
            sample_dispatch: manifest["assignments"][0]["dispatchName"]
                .as_str()
                .unwrap()
                .to_owned(),
            lists_seen: BTreeSet::new(),
            output_fields: OUTPUT_FIELDS
                .iter()
                .map(|&field| field.to_owned())
                .collect(),
            schemas,
        }
    }

    /// Every problem in `docs`, each as `file: what`.
    pub fn check(&mut self, docs: &[(String, String)]) -> Vec<String> {
        let mut problems = Vec::new();
        // Lead-event fields are free-form in the schema: the event table of
        // the lead contract defines them.
        for (_, text) in docs {
            for table in tables(text) {
                let is_event_table = table
                    .first()
                    .is_some_and(|head| head.first().is_some_and(|c| c == "Kind"));
                if is_event_table && let Some(fields) = table_column_spans(&table, "Fields") {
                    self.output_fields.extend(fields);
                }
            }
        }
        let all_text: String = docs.iter().map(|(_, text)| text.as_str()).collect();
        let mut commands: Vec<(String, Vec<String>)> = Vec::new();
        for (name, text) in docs {
            let spans = code_spans(text);
            for span in &spans {
                if let Some(rest) = span.strip_prefix("okstra ") {
                    for argv in command_variants(rest, &self.run_dir) {
                        commands.push((format!("{name}: `{span}`"), argv));
                    }
                }
                if WRAPPER_CALL.is_match(span) {
                    problems.push(format!(
                        "{name}: `{span}` calls a wrapper that may not be on PATH"
                    ));
                }
                if let Some(flag) = FLAG.captures(span)
                    && !CLI_FLAGS.contains(&flag[1])
                {
                    problems.push(format!(
                        "{name}: `{span}`: okstra has no flag `{}`",
                        &flag[1]
                    ));
                }
                self.check_field_path(name, span, &mut problems);
                self.check_file_name(name, span, &all_text, &mut problems);
            }
            self.check_run_paths(name, text, &all_text, &mut problems);
            self.check_json_examples(name, text, &mut problems);
            self.check_closed_lists(name, text, &mut problems);
        }
        problems.extend(check_args(&commands));
        for (name, text) in docs {
            check_sections(name, text, docs, &mut problems);
            check_scoped_flags(name, text, &mut problems);
            check_events(name, text, &mut problems);
            check_repair_promise(name, text, &all_text, &mut problems);
        }
        problems
    }

    /// A dotted path (`header.reportAuthor`, `dispatches[].usage`) or a
    /// camelCase word must name a field of one of the schemas.
    fn check_field_path(&self, doc: &str, span: &str, problems: &mut Vec<String>) {
        if !FIELD_PATH.is_match(span)
            || FILE_NAME.is_match(span)
            || self.output_fields.contains(span)
        {
            return;
        }
        let segments = path_segments(span);
        // A dotted path that starts at a schema's top level
        // (`verdictCard.verdictToken`) must resolve from that top level;
        // any other (`failure.reason`) from some object of some schema.
        let rooted: Vec<&Value> = self
            .schemas
            .values()
            .filter(|schema| segments.len() > 1 && schema["properties"].get(&segments[0]).is_some())
            .collect();
        let found = if rooted.is_empty() {
            self.schemas.values().any(|schema| {
                let mut nodes = Vec::new();
                all_nodes(schema, &mut nodes, 0);
                nodes
                    .iter()
                    .any(|node| !resolve(schema, node, &segments).is_empty())
            })
        } else {
            rooted
                .iter()
                .any(|schema| !resolve(schema, schema, &segments).is_empty())
        };
        if !found {
            problems.push(format!("{doc}: field `{span}` is in no schema"));
        }
    }

    /// A bare file name of the run (`data.json`, `final-report.html`,
    /// `team-state-schema.json`) must be in the bundle or produced.
    fn check_file_name(&self, doc: &str, span: &str, all_text: &str, problems: &mut Vec<String>) {
        if !RUN_FILE_NAME.is_match(span) {
            return;
        }
        let known = self
            .files
            .iter()
            .chain(self.worker_paths.iter())
            .any(|file| file == span || file.ends_with(&format!("/{span}")));
        if !known && producer(span).is_none_or(|command| !all_text.contains(command)) {
            problems.push(format!(
                "{doc}: `{span}` is not in the bundle and no command the bundle names produces it"
            ));
        }
    }

    /// Every absolute path into the run folder exists, is a worker's path,
    /// or is produced by a command the bundle names.
    fn check_run_paths(&self, doc: &str, text: &str, all_text: &str, problems: &mut Vec<String>) {
        let pattern = Regex::new(&format!(
            r"{}(/(?:[^\s`|)\]<,;]|<[^>\n]*>)*)?",
            regex::escape(&self.run_dir)
        ))
        .unwrap();
        for found in pattern.find_iter(text) {
            let path = found.as_str().trim_end_matches(['.', ':']);
            let relative = path
                .strip_prefix(&self.run_dir)
                .unwrap()
                .trim_start_matches('/');
            self.check_run_path(doc, relative, found.as_str(), all_text, problems);
        }
        // Paths relative to the run folder (`state/lead-events.jsonl`).
        for span in code_spans(text) {
            if RELATIVE_RUN_PATH.is_match(&span) {
                self.check_run_path(doc, &span, &span, all_text, problems);
            }
        }
    }

    /// One run path, relative to the run folder, as `written` in the text.
    fn check_run_path(
        &self,
        doc: &str,
        relative: &str,
        written: &str,
        all_text: &str,
        problems: &mut Vec<String>,
    ) {
        // `prompts/*-reverify-r<N>.md`, `prompts/<dispatch name>.md`:
        // sample values for the wildcard and the placeholders.
        let relative = PLACEHOLDER
            .replace_all(
                &relative.replace('*', &self.sample_dispatch),
                |caps: &regex::Captures| {
                    if &caps[0] == "<N>" {
                        "1".to_owned()
                    } else {
                        self.sample_dispatch.clone()
                    }
                },
            )
            .into_owned();
        let path = &format!("{}/{relative}", self.run_dir);
        if relative.is_empty()
            || self.files.contains(&relative)
            || self.worker_paths.contains(path)
            || (relative.starts_with("results/") || relative.starts_with("state/heartbeats/"))
                && self
                    .worker_paths
                    .iter()
                    .any(|worker| reverify_of(worker, path))
        {
            return;
        }
        // A file the bundle itself tells someone to write.
        let written_by_lead = [written, relative.as_str(), path.as_str()]
            .iter()
            .any(|form| all_text.contains(&format!("write `{form}`")));
        match producer(&relative) {
            _ if written_by_lead => {}
            Some(command) if all_text.contains(command) => {}
            Some(command) => problems.push(format!(
                "{doc}: `{path}` is produced by `{command}`, which the bundle never names"
            )),
            None => problems.push(format!(
                "{doc}: `{path}` is not in the bundle and nothing produces it"
            )),
        }
    }

    /// A fenced JSON example validates against the schema it shows.
    fn check_json_examples(&self, doc: &str, text: &str, problems: &mut Vec<String>) {
        for block in fenced_blocks(text, "json") {
            let Ok(value) = serde_json::from_str::<Value>(&block) else {
                problems.push(format!("{doc}: a ```json example is not JSON"));
                continue;
            };
            let fits = self
                .schemas
                .values()
                .any(|schema| jsonschema::validator_for(schema).unwrap().is_valid(&value));
            if !fits {
                problems.push(format!(
                    "{doc}: a ```json example validates against no shipped schema"
                ));
            }
        }
    }

    /// Closed lists the text states must equal the schema's enums.
    fn check_closed_lists(&mut self, doc: &str, text: &str, problems: &mut Vec<String>) {
        let report = &self.schemas["final-report-v2.2.schema.json"];
        let team = &self.schemas["team-state.schema.json"];
        let ledger = &self.schemas["convergence-ledger.schema.json"];
        let plan = &self.schemas["round-plan.schema.json"];
        let seen = &mut self.lists_seen;
        let mut compare =
            |what: &'static str, stated: BTreeSet<String>, schema: BTreeSet<String>| {
                seen.insert(what);
                if stated != schema {
                    problems.push(format!(
                        "{doc}: {what} {stated:?} differ from the schema's {schema:?}"
                    ));
                }
            };
        let coverage = &report["$defs"]["WorkerCoverage"]["properties"];
        for table in tables(text) {
            let column = |title: &str| table_column(&table, title);
            if let Some(endings) = column("Ending") {
                compare(
                    "ending classes",
                    endings,
                    enum_of(&team["$defs"]["dispatch"]["properties"]["ending"]),
                );
            }
            if let Some(statuses) = column("Report `terminalStatus`") {
                compare(
                    "report statuses",
                    statuses,
                    enum_of(&coverage["terminalStatus"]),
                );
            }
            if let Some(mut reasons) = column("Report `failure.reason`") {
                reasons.remove("—");
                let allowed = enum_of(&coverage["failure"]["properties"]["reason"]);
                if !reasons.is_subset(&allowed) {
                    compare("failure reasons", reasons, allowed);
                }
            }
            if let Some(classes) = column("Final class") {
                compare(
                    "convergence classes",
                    classes,
                    enum_of(&ledger["$defs"]["item"]["properties"]["finalClass"]),
                );
            }
        }
        for line in text.lines() {
            if line.starts_with("Convergence stops with ") {
                compare(
                    "stop reasons",
                    backticked(line),
                    enum_of(&ledger["properties"]["stoppedBecause"]),
                );
            }
            if let Some(rest) = line.split("When its `stoppedBecause` is set (").nth(1) {
                let stated = backticked(rest.split(')').next().unwrap_or_default());
                compare(
                    "round-plan stop reasons",
                    stated,
                    enum_of(&plan["properties"]["stoppedBecause"]),
                );
            }
            if line.contains("`AGREE`, `DISAGREE` or `SUPPLEMENT`")
                || line.contains("`AGREE`, `DISAGREE`, `SUPPLEMENT`")
            {
                let stated: BTreeSet<String> = backticked(line)
                    .into_iter()
                    .filter(|word| word.chars().all(|c| c.is_ascii_uppercase()))
                    .collect();
                compare(
                    "verdict words",
                    stated,
                    enum_of(&ledger["$defs"]["verdict"]["properties"]["verdict"]),
                );
            }
            if let Some(rest) = line.strip_prefix(VERDICT_TOKENS_LINE) {
                let (tokens, directions) = rest
                    .split_once(" the same `direction` (")
                    .unwrap_or((rest, ""));
                let tokens: BTreeSet<String> = backticked(tokens)
                    .into_iter()
                    .filter(|token| token.chars().all(|c| c.is_ascii_uppercase() || c == '-'))
                    .collect();
                compare(
                    "verdict tokens",
                    tokens,
                    verdict_tokens(report, &self.task_type),
                );
                compare(
                    "directions",
                    backticked(directions),
                    enum_of(&report["$defs"]["Direction"]),
                );
            }
        }
    }
}

/// The documents a section reference may name, and their files.
const NAMED_DOCUMENTS: [(&str, &str); 3] = [
    ("lead contract", "instruction-set/lead-contract.md"),
    ("team contract", "instruction-set/team-contract.md"),
    ("common contract", "instruction-set/common-contract.md"),
];

/// `section N` (of a named document, or of the one it is in) must be a
/// `## N.` heading of that document.
fn check_sections(doc: &str, text: &str, docs: &[(String, String)], problems: &mut Vec<String>) {
    for found in SECTION_REF.captures_iter(text) {
        // A bare `section N` is one of the lead contract's own only there
        // (elsewhere it is a result section, `4. **…**`).
        if found.get(1).is_none() && doc != "instruction-set/lead-contract.md" {
            continue;
        }
        let number = &found[2];
        let target = found.get(1).map_or(doc, |name| {
            NAMED_DOCUMENTS
                .iter()
                .find(|(named, _)| named.eq_ignore_ascii_case(name.as_str()))
                .map_or(doc, |(_, file)| *file)
        });
        // An eager handoff embeds the documents it names.
        let body = docs
            .iter()
            .find(|(name, _)| name == target)
            .or_else(|| docs.iter().find(|(name, _)| name == doc))
            .map_or("", |(_, body)| body.as_str());
        let heading = format!("## {number}. ");
        if !body.lines().any(|line| line.starts_with(&heading)) {
            problems.push(format!(
                "{doc}: `{}` points at a section `{target}` does not have",
                found[0].trim()
            ));
        }
    }
}

/// A flag written on its own (`--wait`) after an `okstra <command>` on the
/// same line must be one of that command's flags.
fn check_scoped_flags(doc: &str, text: &str, problems: &mut Vec<String>) {
    let mut in_block = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block {
            continue;
        }
        let mut command: Option<String> = None;
        for found in CODE_SPAN.captures_iter(line) {
            let span = found[1].replace("\\|", "|");
            if let Some(rest) = span.strip_prefix("okstra") {
                let sub = rest
                    .split_whitespace()
                    .next()
                    .filter(|word| !word.starts_with('-'))
                    .unwrap_or_default();
                command = Some(sub.to_owned());
                continue;
            }
            let (Some(sub), Some(flag)) = (&command, FLAG.captures(&span)) else {
                continue;
            };
            if !command_flags(sub).contains(&flag[1]) {
                problems.push(format!(
                    "{doc}: `{span}` follows `okstra {sub}`, which has no flag `{}`",
                    &flag[1]
                ));
            }
        }
    }
}

/// No instruction has the lead record an event okstra records itself (the
/// kinds `okstra event --help` lists).
fn check_events(doc: &str, text: &str, problems: &mut Vec<String>) {
    for span in code_spans(text) {
        let Some(rest) = span.strip_prefix("okstra event ") else {
            continue;
        };
        let Some(kind) = rest.split_whitespace().nth(1) else {
            continue;
        };
        if OKSTRA_EVENTS.contains(kind) {
            problems.push(format!(
                "{doc}: `{span}` has the lead record `{kind}`, which okstra records itself"
            ));
        }
    }
}

/// The report writer is promised one repair attempt: the binary makes it
/// (its help says so), and no document has the lead repair the report.
fn check_repair_promise(doc: &str, text: &str, all_text: &str, problems: &mut Vec<String>) {
    if doc == "prompts/report-writer.md" && text.contains("you get one repair attempt") {
        for (command, needle) in [("run", "one repair"), ("next", "repairs")] {
            if !help(&[command]).contains(needle) {
                problems.push(format!(
                    "{doc}: promises one repair attempt, but `okstra {command} --help` does not say it repairs"
                ));
            }
        }
    }
    if !all_text.contains("you get one repair attempt") || doc.starts_with("prompts/") {
        return;
    }
    for sentence in text.lines().flat_map(|line| line.split(". ")) {
        let lower = sentence.to_lowercase();
        let names_report = lower.contains("data.json") || lower.contains("data file");
        let edits = [
            "you may edit",
            "fix exactly",
            "repair it yourself",
            "write the report yourself",
        ]
        .iter()
        .any(|verb| lower.contains(verb));
        if names_report && edits {
            problems.push(format!(
                "{doc}: has the lead repair the report, which okstra's one repair attempt does: `{}`",
                sentence.trim()
            ));
        }
    }
}

/// `section N`, with the document it names when it names one.
static SECTION_REF: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:(lead contract|team contract|common contract),? )?section ([0-9]+)")
        .unwrap()
});

/// `okstra <args> --help`.
fn help(args: &[&str]) -> String {
    let output = okstra().args(args).arg("--help").output().unwrap();
    String::from_utf8(output.stdout).unwrap()
}

/// The long flags of `okstra <sub>` (the top level's for `""`).
fn command_flags(sub: &str) -> BTreeSet<String> {
    static CACHE: LazyLock<std::sync::Mutex<BTreeMap<String, BTreeSet<String>>>> =
        LazyLock::new(Default::default);
    let mut cache = CACHE.lock().unwrap();
    cache
        .entry(sub.to_owned())
        .or_insert_with(|| {
            let args: Vec<&str> = if sub.is_empty() { vec![] } else { vec![sub] };
            let flag = Regex::new(r"--[a-z][a-z-]*").unwrap();
            flag.find_iter(&help(&args))
                .map(|found| found.as_str().to_owned())
                .collect()
        })
        .clone()
}

/// The event kinds okstra records itself, from `okstra event --help`.
static OKSTRA_EVENTS: LazyLock<BTreeSet<String>> = LazyLock::new(|| {
    let text = help(&["event"]).replace('\n', " ");
    let listed = text
        .split("the engine): ")
        .nth(1)
        .and_then(|rest| rest.split('.').next())
        .unwrap_or_default()
        .to_owned();
    let kinds: BTreeSet<String> = listed
        .split(',')
        .map(|kind| kind.trim().to_owned())
        .filter(|kind| !kind.is_empty())
        .collect();
    assert!(
        kinds.contains("worker-complete"),
        "no event list in `okstra event --help`"
    );
    kinds
});

/// The line that states the run's verdict tokens, in the profile and the
/// report writer's prompt.
const VERDICT_TOKENS_LINE: &str = "Verdict tokens for this task type: ";

static PLACEHOLDER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"<[^>]+>").unwrap());
static CODE_SPAN: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"`([^`\n]+)`").unwrap());
/// A dotted field path, or one camelCase word.
static FIELD_PATH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?:[a-z][A-Za-z0-9]*(?:\[[0-9]*\])?(?:\.(?:<[a-z ]+>|[a-z][A-Za-z0-9]*)(?:\[[0-9]*\])?)+|[a-z]+[A-Z][A-Za-z0-9]*)$",
    )
    .unwrap()
});
/// A bare file name of the families a run folder holds (project files such
/// as `package.json` are not the bundle's business).
static RUN_FILE_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(data\.json|final-report\.(md|html)|[a-z-]+[.-]schema\.json|[a-z-]+-manifest\.json|team-state[a-z0-9-]*\.json|lead-events\.jsonl|convergence-ledger\.json|round-plan[a-z0-9<>-]*\.json|[a-z-]+\.status\.json|report-inputs\.json|ending-status\.json)$",
    )
    .unwrap()
});
/// A flag given on its own (`--kind reverify-r<N>`, `--detach`).
static FLAG: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^(--[a-z][a-z-]*)").unwrap());
/// Every long flag of every okstra (sub)command, from their `--help`.
static CLI_FLAGS: LazyLock<BTreeSet<String>> = LazyLock::new(|| {
    let help = |args: &[&str]| -> String {
        let output = okstra().args(args).arg("--help").output().unwrap();
        String::from_utf8(output.stdout).unwrap()
    };
    let top = help(&[]);
    let mut texts = vec![top.clone()];
    // The top level lists its commands in two groups.
    let commands = ["Start here:", "For leads and scripts:"]
        .into_iter()
        .flat_map(|heading| {
            top.split(heading)
                .nth(1)
                .unwrap_or_default()
                .split("\n\n")
                .next()
                .unwrap_or_default()
                .lines()
        })
        .filter_map(|line| line.strip_prefix("  ")?.split_whitespace().next());
    for command in commands {
        let text = help(&[command]);
        if let Some(list) = text.split("Commands:").nth(1) {
            for sub in list
                .lines()
                .filter_map(|line| line.strip_prefix("  ")?.split_whitespace().next())
            {
                texts.push(help(&[command, sub]));
            }
        }
        texts.push(text);
    }
    let flag = Regex::new(r"--[a-z][a-z-]*").unwrap();
    texts
        .iter()
        .flat_map(|text| {
            flag.find_iter(text)
                .map(|found| found.as_str().to_owned())
                .collect::<Vec<_>>()
        })
        .collect()
});
/// A path relative to the run folder: one of its folders, then a name.
static RELATIVE_RUN_PATH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(state|results|report|prompts|instruction-set|inputs)/[^\s`]*$").unwrap()
});
/// A file name, not a field path (`data.json`, `clippy.toml`).
static FILE_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\.(json|jsonl|toml|cfg|md|html|yaml|yml|lock|txt|rs|py|sh|log|js|ts)$").unwrap()
});
/// Fields of command output that no schema describes, with the command
/// that prints them: `okstra await --json` names the report's status and
/// reason for each dispatch.
const OUTPUT_FIELDS: [&str; 2] = ["terminalStatus", "failureReason"];
/// A command line that runs an `okstra-<provider>-exec` wrapper by name.
static WRAPPER_CALL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^okstra-[a-z]+-exec\s").unwrap());

/// Inline code spans and the lines of fenced code blocks, `\|` unescaped.
fn code_spans(text: &str) -> Vec<String> {
    let mut spans = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block {
            spans.push(line.trim().to_owned());
            continue;
        }
        for found in CODE_SPAN.captures_iter(line) {
            spans.push(found[1].replace("\\|", "|"));
        }
    }
    spans
}

fn fenced_blocks(text: &str, language: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut current, fence) {
            (None, Some(lang)) if lang.trim() == language => current = Some(String::new()),
            (Some(block), Some(_)) => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), None) => {
                block.push_str(line);
                block.push('\n');
            }
            _ => {}
        }
    }
    blocks
}

/// Sample values for the placeholders command lines use.
fn sample(placeholder: &str, run_dir: &str) -> String {
    match placeholder {
        "<run-dir>" | "<run>" => run_dir.to_owned(),
        "<N>" | "N" | "<count>" | "<round>" => "1".to_owned(),
        "<kind>" | "K" => "initial".to_owned(),
        "D" => "30m".to_owned(),
        "ID" => "claude".to_owned(),
        "<dir>" | "<project-root>" => "/tmp".to_owned(),
        _ => "sample".to_owned(),
    }
}

/// The argv lists one command line stands for: optional `[…]` parts kept,
/// each `a|b` alternative tried, placeholders filled, `…` dropped.
pub fn command_variants(line: &str, run_dir: &str) -> Vec<Vec<String>> {
    let filled = PLACEHOLDER.replace_all(line, |caps: &regex::Captures| sample(&caps[0], run_dir));
    let flat = filled.replace(['[', ']'], " ").replace("...", "…");
    let mut tokens: Vec<&str> = Vec::new();
    for token in flat.split_whitespace() {
        // `--flag …` is a value; a `…` anywhere else repeats what precedes.
        if token == "…" {
            if tokens.last().is_some_and(|last| last.starts_with("--")) {
                tokens.push("sample");
            }
            continue;
        }
        tokens.push(token);
    }
    let mut variants: Vec<Vec<String>> = vec![Vec::new()];
    for token in tokens {
        // `ID,…`: one sample stands for the list.
        let token = token.trim_end_matches('…').trim_end_matches(',');
        let choices: Vec<String> = token
            .split('|')
            .filter(|choice| !choice.is_empty())
            .map(|choice| {
                if choice.chars().all(|c| c.is_ascii_uppercase()) {
                    sample(choice, run_dir)
                } else {
                    choice.to_owned()
                }
            })
            .collect();
        if choices.is_empty() {
            continue;
        }
        variants = variants
            .into_iter()
            .flat_map(|argv| {
                choices.iter().map(move |choice| {
                    let mut next = argv.clone();
                    next.push(choice.clone());
                    next
                })
            })
            .collect();
    }
    variants
}

/// Parse every command with the real CLI (`okstra __check-args`). A
/// reference that omits required arguments (`okstra await --json` in prose)
/// is checked for its subcommand and flags alone.
pub fn check_args(commands: &[(String, Vec<String>)]) -> Vec<String> {
    let first = run_check_args(
        &commands
            .iter()
            .map(|(_, argv)| argv.clone())
            .collect::<Vec<_>>(),
    );
    let mut retry = Vec::new();
    let mut problems = Vec::new();
    for ((source, argv), result) in commands.iter().zip(first) {
        if result == "ok" {
            continue;
        }
        if result.starts_with("error[MissingRequiredArgument]")
            || result.starts_with("error[DisplayHelpOnMissingArgumentOrSubcommand]")
        {
            let mut with_help = argv.clone();
            with_help.push("--help".to_owned());
            retry.push((source, with_help));
        } else {
            problems.push(format!("{source} does not parse ({argv:?}): {result}"));
        }
    }
    let second = run_check_args(
        &retry
            .iter()
            .map(|(_, argv)| argv.clone())
            .collect::<Vec<_>>(),
    );
    for ((source, argv), result) in retry.into_iter().zip(second) {
        if result != "ok" {
            problems.push(format!("{source} does not parse ({argv:?}): {result}"));
        }
    }
    problems
}

fn run_check_args(argvs: &[Vec<String>]) -> Vec<String> {
    if argvs.is_empty() {
        return Vec::new();
    }
    let output = okstra()
        .arg("__check-args")
        .write_stdin(serde_json::to_vec(argvs).unwrap())
        .output()
        .unwrap();
    let lines: Vec<String> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(lines.len(), argvs.len(), "one result per command line");
    lines
}

/// The command that produces a run file, by its path relative to the run
/// folder (or its bare name); `None` when nothing does.
fn producer(relative: &str) -> Option<&'static str> {
    let name = relative.rsplit('/').next().unwrap_or(relative);
    let produced: [(&str, &str); 9] = [
        (
            r"^(state/)?round-plan-r[0-9]+\.json$",
            "okstra converge plan",
        ),
        (
            r"^prompts/(\*|[a-z0-9-]+)-reverify-r[0-9]+\.md$",
            "okstra converge plan",
        ),
        (
            r"^(state/)?convergence-ledger\.json$",
            "okstra converge record",
        ),
        (r"^(report/)?final-report\.(md|html)$", "okstra report"),
        (r"^state/dispatch\.log$", "okstra dispatch"),
        (
            r"^prompts/[a-z0-9-]+(\.attempt-[0-9]+)?\.log$",
            "okstra dispatch",
        ),
        (
            r"^prompts/[a-z0-9-]+\.md(\.attempt-[0-9]+)?\.status\.json$",
            "okstra dispatch",
        ),
        (r"^(state/)?report-inputs\.json$", "okstra coverage"),
        (r"^(report/)?data\.json$", "report-writer"),
    ];
    produced.iter().find_map(|(pattern, command)| {
        let pattern = Regex::new(pattern).unwrap();
        (pattern.is_match(relative) || pattern.is_match(name)).then_some(*command)
    })
}

/// Whether `path` is one of `worker`'s reverify paths
/// (`results/claude-worker-reverify-r1.md` for `results/claude-worker.md`).
fn reverify_of(worker: &str, path: &str) -> bool {
    let base = worker.rsplit_once('/').map_or(worker, |(_, name)| name);
    let (stem, suffix) = base.split_at(base.find('.').unwrap_or(base.len()));
    let name = path.rsplit_once('/').map_or(path, |(_, name)| name);
    name.strip_prefix(stem)
        .and_then(|rest| rest.strip_prefix("-reverify-r"))
        .map(|rest| rest.trim_start_matches(|c: char| c.is_ascii_digit() || c == 'N'))
        .is_some_and(|rest| rest == suffix)
}

fn collect(root: &Path, dir: &Path, files: &mut BTreeSet<String>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let relative = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        files.insert(relative.clone());
        files.insert(format!("{relative}/"));
        if path.is_dir() {
            collect(root, &path, files);
        }
    }
}

/// The verdict tokens the report schema allows for `task_type`.
fn verdict_tokens(report: &Value, task_type: &str) -> BTreeSet<String> {
    let defs = &report["$defs"]["VerdictTokens"];
    enum_of(&defs[task_type])
}

fn backticked(text: &str) -> BTreeSet<String> {
    CODE_SPAN
        .captures_iter(text)
        .map(|caps| caps[1].to_owned())
        .collect()
}

/// The Markdown tables of a text, each as rows of cells.
fn tables(text: &str) -> Vec<Vec<Vec<String>>> {
    let mut tables = Vec::new();
    let mut current: Vec<Vec<String>> = Vec::new();
    for line in text.lines() {
        if line.starts_with('|') {
            let cells = line
                .trim_matches('|')
                .split(" | ")
                .map(|cell| cell.trim().to_owned())
                .collect();
            current.push(cells);
        } else if !current.is_empty() {
            tables.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        tables.push(current);
    }
    tables
}

/// Every code span in the column titled `title` (rows after the separator).
fn table_column_spans(table: &[Vec<String>], title: &str) -> Option<BTreeSet<String>> {
    let index = table.first()?.iter().position(|cell| cell == title)?;
    Some(
        table
            .iter()
            .skip(2)
            .filter_map(|row| row.get(index))
            .flat_map(|cell| backticked(cell))
            .collect(),
    )
}

/// The backticked values of the column titled `title` (rows after the
/// separator), or `None` when the table has no such column.
fn table_column(table: &[Vec<String>], title: &str) -> Option<BTreeSet<String>> {
    let index = table.first()?.iter().position(|cell| cell == title)?;
    Some(
        table
            .iter()
            .skip(2)
            .filter_map(|row| row.get(index))
            .map(|cell| cell.trim_matches('`').to_owned())
            .collect(),
    )
}
