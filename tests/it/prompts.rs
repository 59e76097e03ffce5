//! Integration tests: the prompt library, as rendered into real bundles.
//!
//! Every task type × lead runtime is rendered by the real binary and each
//! section of each kind of document is snapshotted once, with the bundles
//! and prompts it stands in (`prompts__<kind>__<section>`, and the kind's
//! outline), and the rules the prompts must keep are checked directly: rosters and phase rules appear where they must,
//! shared text is delivered the right way, nothing is left unrendered, and no
//! bundle carries text meant for another task type.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{Project, hide_workspaces};

const TASK_TYPES: [&str; 7] = [
    "requirements-discovery",
    "error-analysis",
    "implementation-planning",
    "project-analysis",
    "feature-analysis",
    "change-impact-analysis",
    "implementation",
];

const RUNTIMES: [&str; 4] = ["claude-code", "codex", "antigravity", "external"];

/// The roster every snapshot uses: three analysers (so convergence runs with
/// reverify prompts), a critic and a report writer.
const WORKERS: &str = "claude,codex,kimi,report-writer";
const CRITIC: &str = "kimi";

/// One rendered run in its own temporary project.
struct Bundle {
    _project: Project,
    root: PathBuf,
    run_dir: PathBuf,
}

impl Bundle {
    fn render(task_type: &str, runtime: &str, extra: &[&str]) -> Bundle {
        let project = Project::new()
            .brief("# Checkout is slow\n\nThe cart total takes seconds.\n")
            .key("demo", "shop", "t1");
        if task_type == "implementation" {
            crate::support::git_init(project.root());
        }
        let output = project
            .render_command(
                &[
                    &["--task-type", task_type, "--lead-runtime", runtime],
                    extra,
                ]
                .concat(),
            )
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "render failed for {task_type} × {runtime} {extra:?}:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let handoff = PathBuf::from(String::from_utf8(output.stdout).unwrap().trim());
        let run_dir = handoff.parent().unwrap().to_path_buf();
        Bundle {
            root: project.root().to_path_buf(),
            _project: project,
            run_dir,
        }
    }

    fn standard(task_type: &str, runtime: &str) -> Bundle {
        Bundle::render(
            task_type,
            runtime,
            &["--workers", WORKERS, "--critic", CRITIC],
        )
    }

    fn read(&self, relative: &str) -> String {
        fs::read_to_string(self.run_dir.join(relative))
            .unwrap_or_else(|err| panic!("cannot read {relative}: {err}"))
    }

    fn exists(&self, relative: &str) -> bool {
        self.run_dir.join(relative).exists()
    }

    fn manifest(&self) -> Value {
        serde_json::from_str(&self.read("run-manifest.json")).unwrap()
    }

    /// Every rendered Markdown file (handoff, instruction set, prompts),
    /// relative to the run folder, sorted.
    fn markdown_files(&self) -> Vec<String> {
        let mut files = vec!["handoff.md".to_owned()];
        for dir in ["instruction-set", "prompts"] {
            for entry in fs::read_dir(self.run_dir.join(dir)).unwrap() {
                let name = entry.unwrap().file_name().into_string().unwrap();
                if Path::new(&name).extension().is_some_and(|ext| ext == "md") {
                    files.push(format!("{dir}/{name}"));
                }
            }
        }
        files.sort();
        files
    }

    /// `file` as the section snapshots show it: each instruction-set
    /// document a handoff or prompt embeds shown as a reference, the run
    /// folder as `[RUN]`, the project as `[PROJECT]`, copies hidden.
    fn shown(&self, file: &str) -> String {
        let mut text = self.read(file);
        if !file.starts_with("instruction-set/") {
            for document in self
                .markdown_files()
                .iter()
                .filter(|f| f.starts_with("instruction-set/"))
            {
                text = text.replace(&self.read(document), &format!("[embedded: {document}]\n"));
            }
        }
        hide_workspaces(
            &text
                .replace(self.run_dir.to_str().unwrap(), "[RUN]")
                .replace(self.root.to_str().unwrap(), "[PROJECT]"),
        )
    }

    fn all_markdown(&self) -> Vec<(String, String)> {
        self.markdown_files()
            .into_iter()
            .map(|file| {
                let body = self.read(&file);
                (file, body)
            })
            .collect()
    }
}

/// `text` with the bundle's own values as placeholders, so that the bundles
/// and prompts that differ only by them share a section text: its task
/// type (`[TASK-TYPE]`, where a heading or the run id names it; not in a
/// list of every task type) and, in a prompt, the
/// prompt's dispatch name (`[DISPATCH]`), model (`[MODEL]`) and worker id
/// in its result's first line (`[WORKER]`). Another
/// bundle's or prompt's value stays as it is, so a prompt that names the
/// wrong one still shows.
fn own_values(bundle: &Bundle, text: &str, dispatch: Option<&str>) -> String {
    let manifest = bundle.manifest();
    let task_type = manifest["taskType"].as_str().unwrap();
    let mut text = text.to_owned();
    for form in [
        "({}",
        "{}-0",
        "(`{}`)",
        "`{}` for",
        "profile: `{}`",
        "— {} result",
    ] {
        let (left, right) = form.split_once("{}").unwrap();
        text = text.replace(
            &format!("{left}{task_type}{right}"),
            &format!("{left}[TASK-TYPE]{right}"),
        );
    }
    let Some(dispatch) = dispatch else {
        return text;
    };
    let assignment = manifest["assignments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["dispatchName"] == dispatch)
        .unwrap();
    let model = assignment["modelExecutionValue"].as_str().unwrap();
    let worker = assignment["workerId"].as_str().unwrap();
    let text = text
        .replace(&format!("`{model}`"), "`[MODEL]`")
        .replace(&format!("`# {worker} — "), "`# [WORKER] — ");
    replace_name(&text, dispatch, "[DISPATCH]")
}

/// `text` with each `name` that is a whole name (no letter, digit or `-`
/// on either side: `kimi-worker` is not part of `kimi-worker-critic`)
/// replaced by `with`.
fn replace_name(text: &str, name: &str, with: &str) -> String {
    let part = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-');
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(name) {
        let before = rest[..at].chars().last().or_else(|| out.chars().last());
        let after = rest[at + name.len()..].chars().next();
        out.push_str(&rest[..at]);
        if part(before) || part(after) {
            out.push_str(name);
        } else {
            out.push_str(with);
        }
        rest = &rest[at + name.len()..];
    }
    out.push_str(rest);
    out
}

/// What a rendered file is, for the section snapshots: a prompt's kind
/// (`worker`, `worker-critic`, `executor`, `verifier`, `report-writer`:
/// every prompt of one kind shares its sections), else the document's name
/// (`handoff`, `lead-contract`, …).
fn document_kind(file: &str) -> String {
    let name = file.rsplit('/').next().unwrap().trim_end_matches(".md");
    if !file.starts_with("prompts/") {
        return name.to_owned();
    }
    [
        "executor",
        "verifier",
        "worker-critic",
        "worker",
        "report-writer",
    ]
    .into_iter()
    .find(|kind| name.ends_with(kind))
    .unwrap_or(name)
    .to_owned()
}

/// `text` cut at its `## ` headings outside code fences: (the heading, or
/// `head` for what comes before the first, and the section's text).
fn sections(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = vec![("head".to_owned(), String::new())];
    let mut fenced = false;
    for line in text.split_inclusive('\n') {
        if line.starts_with("```") {
            fenced = !fenced;
        }
        if !fenced && let Some(heading) = line.strip_prefix("## ") {
            out.push((heading.trim_end().to_owned(), String::new()));
        }
        out.last_mut().unwrap().1.push_str(line);
    }
    out.retain(|(heading, text)| heading != "head" || !text.is_empty());
    out
}

/// A snapshot name for `heading`: its words, lower case, joined by `-`,
/// without a leading section number.
fn slug(heading: &str) -> String {
    let words: Vec<String> = heading
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    let start = usize::from(
        words
            .first()
            .is_some_and(|w| w.chars().all(|c| c.is_ascii_digit())),
    );
    let slug = words[start..].join("-");
    slug.chars()
        .take(48)
        .collect::<String>()
        .trim_end_matches('-')
        .to_owned()
}

/// Where a section text stands: the bundle (`<task type> × <runtime>`) and,
/// for a prompt, its dispatch name.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Place {
    bundle: usize,
    dispatch: Option<String>,
}

/// The places a section text stands in, in few lines: for each dispatch
/// name (of a prompt), the task types under the same runtimes on one line,
/// the runtimes listed unless they are every one; `every bundle` when it
/// stands in all of them.
fn places_text(places: &[Place], labels: &[(String, String)]) -> String {
    let mut by_dispatch: Vec<(Option<String>, Vec<usize>)> = Vec::new();
    for place in places {
        match by_dispatch.iter_mut().find(|(d, _)| *d == place.dispatch) {
            Some((_, bundles)) => bundles.push(place.bundle),
            None => by_dispatch.push((place.dispatch.clone(), vec![place.bundle])),
        }
    }
    let mut out = String::new();
    for (dispatch, bundles) in by_dispatch {
        let prefix = dispatch.map_or(String::new(), |d| format!("{d} in "));
        if bundles.len() == labels.len() {
            writeln!(out, "- {prefix}every bundle").unwrap();
            continue;
        }
        let mut tasks: Vec<(&str, Vec<&str>)> = Vec::new();
        for &bundle in &bundles {
            let (task, runtime) = &labels[bundle];
            match tasks.iter_mut().find(|(t, _)| t == task) {
                Some((_, runtimes)) => runtimes.push(runtime),
                None => tasks.push((task, vec![runtime])),
            }
        }
        // Task types with the same runtimes share a line.
        let mut lines: Vec<(String, Vec<&str>)> = Vec::new();
        for (task, runtimes) in tasks {
            let runtimes = if runtimes.len() == RUNTIMES.len() {
                "every runtime".to_owned()
            } else {
                runtimes.join(", ")
            };
            match lines.iter_mut().find(|(r, _)| *r == runtimes) {
                Some((_, tasks)) => tasks.push(task),
                None => lines.push((runtimes, vec![task])),
            }
        }
        for (runtimes, tasks) in lines {
            writeln!(out, "- {prefix}{} × {runtimes}", tasks.join(", ")).unwrap();
        }
    }
    out
}

/// A minimal line diff (longest common subsequence): `- ` lines only in
/// `base`, `+ ` lines only in `other`, `@@ <line>` before each change.
fn line_diff(base: &str, other: &str) -> String {
    let a: Vec<&str> = base.lines().collect();
    let b: Vec<&str> = other.lines().collect();
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out, mut in_change) = (0, 0, String::new(), false);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            i += 1;
            j += 1;
            in_change = false;
            continue;
        }
        if !in_change {
            writeln!(out, "@@ {}", j + 1).unwrap();
            in_change = true;
        }
        if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            writeln!(out, "+ {}", b[j]).unwrap();
            j += 1;
        } else {
            writeln!(out, "- {}", a[i]).unwrap();
            i += 1;
        }
    }
    out
}

fn assert_no_text(bundle: &Bundle, label: &str, forbidden: &[&str]) {
    for (file, body) in bundle.all_markdown() {
        let lower = body.to_lowercase();
        for needle in forbidden {
            assert!(
                !lower.contains(&needle.to_lowercase()),
                "{label}: `{file}` contains `{needle}`"
            );
        }
    }
}

/// A section's texts, each with the places it stands in.
type Texts = Vec<(String, Vec<Place>)>;

/// Every bundle of the matrix: each task type under each runtime with the
/// standard roster, and the defect hunt of `project-analysis` once.
fn matrix() -> Vec<((String, String), Bundle)> {
    let mut bundles = Vec::new();
    for task_type in TASK_TYPES {
        for runtime in RUNTIMES {
            let label = (task_type.to_owned(), runtime.to_owned());
            bundles.push((label, Bundle::standard(task_type, runtime)));
        }
    }
    let defects = Bundle::render(
        "project-analysis",
        "claude-code",
        &[
            "--workers",
            WORKERS,
            "--critic",
            CRITIC,
            "--focus",
            "defects",
        ],
    );
    bundles.push((
        ("defect-hunt".to_owned(), "claude-code".to_owned()),
        defects,
    ));
    bundles
}

/// Each section of each kind of document is snapshotted once, whatever
/// number of bundles and prompts carry it: `prompts__<kind>__<section>`
/// holds every text the section has across the matrix (the first whole, the
/// others as a line diff against it where that is shorter), each with the
/// places it stands in;
/// `prompts__<kind>__outline` the kind's headings in order. A change to one
/// template section changes one small snapshot; a section that appears in,
/// leaves or moves in one bundle changes its places or the outline.
#[test]
fn every_section_of_every_bundle_is_snapshotted_once() {
    let bundles = matrix();
    let labels: Vec<(String, String)> = bundles.iter().map(|(label, _)| label.clone()).collect();
    // (kind, section slug) → the section's heading and its texts, each
    // with where it stands, in the order first met.
    let mut units: std::collections::BTreeMap<(String, String), (String, Texts)> =
        std::collections::BTreeMap::new();
    for (index, (_, bundle)) in bundles.iter().enumerate() {
        for file in bundle.markdown_files() {
            let kind = document_kind(&file);
            let dispatch = file
                .strip_prefix("prompts/")
                .map(|name| name.trim_end_matches(".md").to_owned());
            let mut seen: Vec<String> = Vec::new();
            let text = own_values(bundle, &bundle.shown(&file), dispatch.as_deref());
            let sections = sections(&text);
            // The document's outline: its headings in order, so a section
            // moved shows too.
            let outline = sections.iter().fold(String::new(), |mut outline, (h, _)| {
                writeln!(outline, "{h}").unwrap();
                outline
            });
            let mut all = vec![("outline".to_owned(), outline)];
            all.extend(sections);
            for (heading, text) in all {
                let mut key = slug(&heading);
                let mut n = 1;
                while seen.contains(&key) {
                    n += 1;
                    key = format!("{}-{n}", slug(&heading));
                }
                seen.push(key.clone());
                let place = Place {
                    bundle: index,
                    dispatch: dispatch.clone(),
                };
                let (_, texts) = units
                    .entry((kind.clone(), key))
                    .or_insert_with(|| (heading.clone(), Vec::new()));
                match texts.iter_mut().find(|(t, _)| *t == text) {
                    Some((_, places)) => places.push(place),
                    None => texts.push((text, vec![place])),
                }
            }
        }
    }
    for ((kind, key), (heading, texts)) in &units {
        let mut out = format!("`{heading}` of {kind}: {} text(s)\n", texts.len());
        let (first, _) = &texts[0];
        for (n, (text, places)) in texts.iter().enumerate() {
            let mut places = places.clone();
            places.sort();
            // Another text as a diff against the first while that is the
            // shorter; whole when it has little in common with it.
            let diff = line_diff(first, text);
            let shown = if n > 0 && diff.lines().count() < text.lines().count() {
                (" (diff against 1)", diff.as_str())
            } else {
                ("", text.as_str())
            };
            writeln!(
                out,
                "\n=== {}{} in:\n{}===",
                n + 1,
                shown.0,
                places_text(&places, &labels)
            )
            .unwrap();
            out.push_str(shown.1);
        }
        insta::assert_snapshot!(format!("{kind}__{key}"), out);
    }
    // A section no bundle has any more leaves no snapshot behind.
    let mut stale = Vec::new();
    for entry in fs::read_dir(crate::support::repo_root().join("tests/it/snapshots")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if let Some(unit) = name
            .strip_prefix("it__prompts__")
            .and_then(|rest| rest.strip_suffix(".snap"))
            && !units
                .keys()
                .any(|(kind, key)| format!("{kind}__{key}") == unit)
        {
            stale.push(name);
        }
    }
    assert!(stale.is_empty(), "snapshots of no section: {stale:?}");
}

/// Every bundle holds what it must: the handoff, every instruction-set
/// document (the preflight in `implementation` only), one prompt per
/// assignment of its manifest and nothing else; every worker prompt opens
/// with its reading confirmation.
#[test]
fn every_bundle_holds_its_documents_and_one_prompt_per_assignment() {
    for ((task_type, runtime), bundle) in matrix() {
        let mut expected: Vec<String> = [
            "handoff.md",
            "instruction-set/adapter.md",
            "instruction-set/common-contract.md",
            "instruction-set/convergence.md",
            "instruction-set/lead-contract.md",
            "instruction-set/profile.md",
            "instruction-set/team-contract.md",
        ]
        .map(str::to_owned)
        .to_vec();
        if task_type == "implementation" {
            expected.push("instruction-set/coding-conventions-preflight.md".to_owned());
        }
        for assignment in bundle.manifest()["assignments"].as_array().unwrap() {
            let name = assignment["dispatchName"].as_str().unwrap();
            expected.push(format!("prompts/{name}.md"));
        }
        expected.sort();
        assert_eq!(bundle.markdown_files(), expected, "{task_type} × {runtime}");
        for file in expected.iter().filter(|f| f.starts_with("prompts/")) {
            let prompt = bundle.read(file);
            assert!(
                prompt.contains("## 0. Reading confirmation"),
                "{task_type} × {runtime}: `{file}` has no reading confirmation"
            );
        }
    }
}

#[test]
fn no_rendered_file_keeps_template_syntax_or_placeholders() {
    for task_type in TASK_TYPES {
        for runtime in RUNTIMES {
            let bundle = Bundle::standard(task_type, runtime);
            for (file, body) in bundle.all_markdown() {
                for needle in ["{{", "}}", "{%", "%}", "{#", "TODO", "TBD", "FIXME", "XXX"] {
                    assert!(
                        !body.contains(needle),
                        "{task_type} × {runtime}: `{file}` contains `{needle}`"
                    );
                }
                for needle in [" None", "`None`", "(None", "model: \"unmapped\""] {
                    assert!(
                        !body.contains(needle),
                        "{task_type} × {runtime}: `{file}` renders a missing value (`{needle}`)"
                    );
                }
            }
        }
    }
}

#[test]
fn each_profile_carries_its_roster_and_its_own_rules() {
    let rules: [(&str, &[&str]); 7] = [
        (
            "requirements-discovery",
            &[
                "Functional requirements",
                "Clarification questions",
                "--resume-clarification",
            ],
        ),
        (
            "error-analysis",
            &[
                "Hypotheses",
                "Root cause",
                "Clarification questions",
                "never apply a fix",
            ],
        ),
        (
            "implementation-planning",
            &["Step plan", "Plan verification is on", "--approved-plan"],
        ),
        ("project-analysis", &["Components", "Breadth first"]),
        (
            "feature-analysis",
            &["How it works", "Edge cases and failure modes"],
        ),
        (
            "change-impact-analysis",
            &["Indirect impact", "Compatibility"],
        ),
        (
            "implementation",
            &[
                "is the only writer",
                "Verifiers are read-only",
                "Fix cycle: yes",
                "Plan conformance",
            ],
        ),
    ];
    for (task_type, phrases) in rules {
        let bundle = Bundle::standard(task_type, "claude-code");
        let profile = bundle.read("instruction-set/profile.md");
        assert!(profile.starts_with(&format!("# Phase profile: `{task_type}`")));
        for assignment in bundle.manifest()["assignments"].as_array().unwrap() {
            let name = assignment["dispatchName"].as_str().unwrap();
            let model = assignment["modelExecutionValue"].as_str().unwrap();
            assert!(
                profile.contains(&format!("`{name}` (")) && profile.contains(&format!("`{model}`")),
                "{task_type}: roster entry for {name} missing"
            );
        }
        for phrase in phrases {
            assert!(profile.contains(phrase), "{task_type}: `{phrase}` missing");
        }
        // The analysers' prompts carry the same result sections.
        let prompt = if task_type == "implementation" {
            bundle.read("prompts/claude-executor.md")
        } else {
            bundle.read("prompts/codex-worker.md")
        };
        let first_section = profile
            .lines()
            .find(|line| line.starts_with("1. **"))
            .unwrap();
        assert!(
            prompt.contains(first_section),
            "{task_type}: worker prompt lacks `{first_section}`"
        );
    }
}

#[test]
fn plan_verification_and_fix_cycle_follow_their_flags() {
    let off = Bundle::render(
        "implementation-planning",
        "codex",
        &["--no-plan-verification"],
    );
    assert!(
        off.read("instruction-set/profile.md")
            .contains("Plan verification is off")
    );
    assert!(
        !off.read("prompts/claude-worker.md")
            .contains("**Plan verification**")
    );
    let on = Bundle::render("implementation-planning", "codex", &[]);
    assert!(
        on.read("prompts/claude-worker.md")
            .contains("7. **Plan verification**")
    );

    // The default roster has one verifier: no convergence, and its own
    // defects drive the fix cycle.
    let single = Bundle::render("implementation", "claude-code", &[]);
    assert!(
        single
            .read("instruction-set/convergence.md")
            .contains("Convergence is **off**")
    );
    assert!(
        single
            .read("instruction-set/profile.md")
            .contains("this run has one verifier, so there is no convergence")
    );
    assert!(single.exists("prompts/codex-verifier.md"));
    assert!(!single.exists("prompts/codex-verifier-reverify-r1.md"));

    let no_fix = Bundle::render("implementation", "codex", &["--fix-cycle", "no"]);
    assert!(
        no_fix
            .read("instruction-set/profile.md")
            .contains("Fix cycle: no")
    );
    assert!(
        !no_fix
            .read("prompts/claude-executor.md")
            .contains("fix-request.md")
    );
}

#[test]
fn a_cli_wrapper_executor_gets_the_preflight_appended_and_a_native_one_a_pointer() {
    let marker = "1. **Find the written rules.**";

    let wrapped = Bundle::render("implementation", "claude-code", &["--executor", "codex"]);
    let prompt = wrapped.read("prompts/codex-executor.md");
    assert!(prompt.contains("runner `cli-wrapper`"));
    assert!(
        prompt.contains(marker),
        "the wrapped executor lacks the preflight"
    );
    assert!(prompt.contains("appended at the end of this prompt"));

    let native = Bundle::render("implementation", "claude-code", &["--executor", "claude"]);
    let prompt = native.read("prompts/claude-executor.md");
    assert!(prompt.contains("runner `native-session`"));
    assert!(
        !prompt.contains(marker),
        "the native executor got the preflight inlined"
    );
    // Named relative to the run folder the prompt names once.
    assert!(prompt.contains("`instruction-set/coding-conventions-preflight.md`"));
    assert!(
        native
            .read("instruction-set/coding-conventions-preflight.md")
            .contains(marker)
    );

    // Verifiers never get it.
    assert!(!native.read("prompts/codex-verifier.md").contains(marker));
}

#[test]
fn analysis_bundles_carry_no_implementation_text_and_vice_versa() {
    for runtime in RUNTIMES {
        for task_type in TASK_TYPES {
            let bundle = Bundle::standard(task_type, runtime);
            if task_type == "implementation" {
                assert_no_text(
                    &bundle,
                    &format!("{task_type} × {runtime}"),
                    &["analyser", "adversarial", "clarification"],
                );
            } else {
                assert!(!bundle.exists("instruction-set/coding-conventions-preflight.md"));
                assert_no_text(
                    &bundle,
                    &format!("{task_type} × {runtime}"),
                    &[
                        "executor",
                        "verifier",
                        "preflight",
                        "fix-request",
                        "fix cycle",
                    ],
                );
            }
        }
    }
}

/// Each worker prompt names its roots once (the project root, the run
/// folder) and every other path relative to the run folder.
#[test]
fn every_prompt_names_its_exact_model_result_path_and_role() {
    for runtime in RUNTIMES {
        let bundle = Bundle::standard("feature-analysis", runtime);
        let manifest = bundle.manifest();
        let run_dir = bundle.run_dir.to_str().unwrap();
        let root = bundle.root.to_str().unwrap();
        for assignment in manifest["assignments"].as_array().unwrap() {
            let name = assignment["dispatchName"].as_str().unwrap();
            let prompt = bundle.read(&format!("prompts/{name}.md"));
            let model = assignment["modelExecutionValue"].as_str().unwrap();
            let result = assignment["resultPath"].as_str().unwrap();
            assert!(prompt.contains(&format!("**Model:** `{model}`")), "{name}");
            let relative = result
                .strip_prefix(run_dir)
                .unwrap()
                .trim_start_matches('/');
            assert!(
                prompt.contains(&format!("**Result Path:** `{relative}`")),
                "{name}"
            );
            assert_eq!(
                prompt.matches(root).count(),
                1,
                "{name}: the root named more than once"
            );
            assert!(
                !prompt.contains(run_dir),
                "{name}: an absolute path into the run"
            );
            assert!(prompt.contains("**Role:** "), "{name}");
            assert!(prompt.contains("## 0. Reading confirmation"), "{name}");
        }
    }
}

#[test]
fn reverify_prompts_are_left_to_converge_plan() {
    // `okstra converge plan` renders each round's reverify prompts with the
    // batch inlined (tests/it/converge.rs); the bundle renders none, but the
    // convergence document still names every reverify dispatch.
    let bundle = Bundle::standard("error-analysis", "codex");
    let manifest = bundle.manifest();
    let rounds = manifest["convergence"]["effectiveMaxRounds"]
        .as_u64()
        .unwrap();
    assert!(rounds >= 1);
    let convergence = bundle.read("instruction-set/convergence.md");
    for round in 1..=rounds {
        for reviewer in ["claude", "codex", "kimi"] {
            let file = format!("prompts/{reviewer}-worker-reverify-r{round}.md");
            assert!(!bundle.exists(&file), "{file}");
            assert!(manifest["promptSha256"][&file].is_null(), "{file}");
            assert!(convergence.contains(&format!("`{reviewer}-worker-reverify-r{round}`")));
        }
    }
    assert!(convergence.contains("okstra converge plan"));
    assert!(!bundle.exists("prompts/kimi-worker-critic-reverify-r1.md"));
    assert!(!bundle.exists("prompts/report-writer-reverify-r1.md"));

    let single = Bundle::render(
        "error-analysis",
        "codex",
        &["--workers", "claude,report-writer"],
    );
    let reverify: Vec<_> = single
        .markdown_files()
        .into_iter()
        .filter(|f| f.contains("-reverify-"))
        .collect();
    assert!(reverify.is_empty(), "{reverify:?}");
    assert!(
        single
            .read("instruction-set/convergence.md")
            .contains("Convergence is **off**")
    );
}

#[test]
fn lazy_runtimes_point_to_documents_and_eager_ones_embed_them() {
    let lazy = Bundle::standard("project-analysis", "claude-code");
    let handoff = lazy.read("handoff.md");
    assert!(
        handoff.contains(
            lazy.run_dir
                .join("instruction-set/lead-contract.md")
                .to_str()
                .unwrap()
        )
    );
    assert!(!handoff.contains("# Lead contract"));

    for runtime in ["codex", "antigravity", "external"] {
        let eager = Bundle::standard("project-analysis", runtime);
        let handoff = eager.read("handoff.md");
        for doc in [
            "lead-contract.md",
            "team-contract.md",
            "adapter.md",
            "profile.md",
            "common-contract.md",
            "convergence.md",
        ] {
            let body = eager.read(&format!("instruction-set/{doc}"));
            assert!(
                handoff.contains(&body),
                "{runtime}: {doc} not embedded whole"
            );
        }
    }
}

#[test]
fn claude_code_passes_family_tokens_to_native_workers_and_leaves_the_rest_to_okstra_next() {
    let bundle = Bundle::standard("feature-analysis", "claude-code");
    let adapter = bundle.read("instruction-set/adapter.md");
    assert!(adapter.contains("Agent(name: \"claude-worker\", model: \"opus\""));
    assert!(adapter.contains("Agent(name: \"report-writer\", model: \"sonnet\""));
    // Wrapper workers are never hand-started, and nothing okstra does is
    // left to the lead: no dispatch, await, convergence or event command.
    assert!(!adapter.contains("Agent(name: \"codex-worker\""));
    assert!(!adapter.contains("okstra-codex-exec"));
    for doc in [
        "handoff.md",
        "instruction-set/lead-contract.md",
        "instruction-set/adapter.md",
    ] {
        let text = bundle.read(doc);
        for command in [
            "okstra dispatch",
            "okstra await",
            "okstra converge",
            "okstra event",
            "okstra usage",
            "okstra coverage",
            "okstra report",
        ] {
            assert!(!text.contains(command), "{doc} names `{command}`");
        }
    }
    assert!(
        bundle
            .read("handoff.md")
            .contains(&format!("okstra next {} --json", bundle.run_dir.display()))
    );
    assert!(adapter.contains("SubagentStop"));
    assert!(adapter.contains("TaskStop"));
    for runtime in ["codex", "antigravity", "external"] {
        let other = Bundle::standard("feature-analysis", runtime);
        let adapter = other.read("instruction-set/adapter.md");
        assert!(!adapter.contains("TaskStop("), "{runtime}");
        assert!(!adapter.contains("Agent("), "{runtime}");
        // No hand-written detached wrapper lines, no output thrown away.
        assert!(!adapter.contains("setsid"), "{runtime}");
        assert!(!adapter.contains("/dev/null"), "{runtime}");
    }
}

#[test]
fn the_report_rules_list_every_ending_with_its_report_status() {
    let bundle = Bundle::standard("project-analysis", "external");
    let contract = bundle.read("instruction-set/common-contract.md");
    for (ending, status, reason) in [
        ("completed", "completed", "—"),
        ("empty-output", "failed", "`empty-output`"),
        ("idle-timeout", "timed-out", "`idle-timeout`"),
        ("auth", "unavailable", "`auth`"),
        ("cli-missing", "unavailable", "`cli-missing`"),
        ("cancelled", "cancelled", "`cancelled`"),
    ] {
        let row = format!("| `{ending}` | `{status}` | {reason} |");
        assert!(contract.contains(&row), "missing {row}");
    }
    let worker = bundle.read("prompts/claude-worker.md");
    assert!(worker.contains("=== OKSTRA RESULT BEGIN ==="));
    assert!(!worker.contains("reply with one line naming the Result Path"));
}

/// The snapshot filter leaves no temporary path behind, the sections are
/// cut at headings outside code, and the diff is exact.
#[test]
fn snapshot_filter_only_rewrites_the_project_path() {
    let bundle = Bundle::standard("project-analysis", "external");
    let text = bundle.shown("handoff.md");
    assert!(text.contains("`[RUN]`"));
    assert!(text.contains("[embedded: instruction-set/lead-contract.md]"));
    assert!(
        bundle
            .shown("prompts/claude-worker.md")
            .contains("`[PROJECT]`")
    );
    assert!(!text.contains(Path::new(&bundle.root).to_str().unwrap()));
    assert_eq!(
        sections("# T\nintro\n## 1. A b\nx\n```\n## not\n```\n## C\n"),
        [
            ("head".to_owned(), "# T\nintro\n".to_owned()),
            (
                "1. A b".to_owned(),
                "## 1. A b\nx\n```\n## not\n```\n".to_owned()
            ),
            ("C".to_owned(), "## C\n".to_owned()),
        ]
    );
    assert_eq!(slug("3. Root cause (`why`)"), "root-cause-why");
    assert_eq!(
        replace_name(
            "kimi-worker, kimi-worker-critic, `kimi-worker`",
            "kimi-worker",
            "[D]"
        ),
        "[D], kimi-worker-critic, `[D]`"
    );
    assert_eq!(
        document_kind("prompts/kimi-worker-critic.md"),
        "worker-critic"
    );
    assert_eq!(document_kind("instruction-set/profile.md"), "profile");
    assert_eq!(
        line_diff("a\nb\nc\n", "a\nB\nc\nd\n"),
        "@@ 2\n+ B\n- b\n@@ 4\n+ d\n"
    );
    assert_eq!(line_diff("same\n", "same\n"), "");
}
