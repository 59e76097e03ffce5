//! Integration tests: the prompt library, as rendered into real bundles.
//!
//! Every task type × lead runtime is rendered by the real binary and
//! snapshotted (one file per combination), and the rules the prompts must
//! keep are checked directly: rosters and phase rules appear where they must,
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

    /// All rendered Markdown, each file under a `--- <path> ---` header, with
    /// the run folder shown as `[RUN]` and the project as `[PROJECT]`.
    ///
    /// To keep the snapshot reviewable, text is shown once: a handoff or
    /// prompt shows each instruction-set document it embeds as a reference,
    /// and a prompt of the same kind as one already shown (another analyser,
    /// a later convergence round) is shown as a line diff against it.
    fn snapshot_text(&self) -> String {
        let files = self.markdown_files();
        let documents: Vec<(String, String)> = files
            .iter()
            .filter(|f| f.starts_with("instruction-set/"))
            .map(|f| (f.clone(), self.read(f)))
            .collect();
        let embed = |mut text: String| {
            for (file, body) in &documents {
                text = text.replace(body, &format!("[embedded: {file}]\n"));
            }
            text
        };
        let mut shown_by_kind: Vec<(String, String, String)> = Vec::new();
        let mut out = String::new();
        for file in &files {
            let body = if file.starts_with("instruction-set/") {
                self.read(file)
            } else {
                embed(self.read(file))
            };
            let kind = prompt_kind(file);
            let base = kind
                .as_ref()
                .and_then(|kind| shown_by_kind.iter().find(|(k, _, _)| k == kind));
            if let Some((_, base_file, base_body)) = base {
                let diff = line_diff(base_body, &body);
                writeln!(out, "--- {file} (diff against {base_file}) ---\n{diff}").unwrap();
            } else {
                writeln!(out, "--- {file} ---\n{body}").unwrap();
                if let Some(kind) = kind {
                    shown_by_kind.push((kind, file.clone(), body));
                }
            }
        }
        hide_workspaces(
            &out.replace(self.run_dir.to_str().unwrap(), "[RUN]")
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

/// Prompts of one kind share most of their text: initial prompts of one
/// role, and reverify prompts. Other files have no kind.
fn prompt_kind(file: &str) -> Option<String> {
    let name = file.strip_prefix("prompts/")?;
    if name.contains("-reverify-r") {
        return Some("reverify".to_owned());
    }
    [
        "-executor.md",
        "-verifier.md",
        "-worker-critic.md",
        "-worker.md",
    ]
    .iter()
    .find(|suffix| name.ends_with(*suffix))
    .map(|suffix| (*suffix).to_owned())
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

#[test]
fn every_task_type_and_runtime_renders_the_expected_bundle() {
    for task_type in TASK_TYPES {
        for runtime in RUNTIMES {
            let bundle = Bundle::standard(task_type, runtime);
            insta::assert_snapshot!(format!("{task_type}__{runtime}"), bundle.snapshot_text());
        }
    }
    // The defect hunt of project-analysis, once.
    let bundle = Bundle::render(
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
    insta::assert_snapshot!("defect-hunt__claude-code", bundle.snapshot_text());
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

/// The snapshot filter leaves no temporary path behind, and its diff is exact.
#[test]
fn snapshot_filter_only_rewrites_the_project_path() {
    let bundle = Bundle::standard("project-analysis", "external");
    let text = bundle.snapshot_text();
    assert!(text.contains("`[RUN]/run-manifest.json`"));
    assert!(text.contains("`[PROJECT]`"));
    assert!(!text.contains(Path::new(&bundle.root).to_str().unwrap()));
    assert_eq!(
        line_diff("a\nb\nc\n", "a\nB\nc\nd\n"),
        "@@ 2\n+ B\n- b\n@@ 4\n+ d\n"
    );
    assert_eq!(line_diff("same\n", "same\n"), "");
}
