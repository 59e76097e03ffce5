//! Integration tests: `okstra validate` and `okstra report`, through the real
//! binary, against the run-folder fixtures in `tests/fixtures/reports/`.
//!
//! The HTML tests open the rendered file in headless Chromium. Without a
//! Chromium on `PATH` they print a notice and skip, unless
//! `OKSTRA_REQUIRE_BROWSER=1` (set by `.ci/run`) makes the browser required.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::support::{copy_dir, limit, okstra, repo_root, wait_for};

#[path = "report_reliability.rs"]
mod reliability;
#[path = "report_verification.rs"]
mod verification;

fn fixture(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures/reports").join(name)
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(args: &[&str]) -> Run {
    let output = okstra().args(args).output().unwrap();
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

fn validate(target: &Path) -> Run {
    run(&["validate", target.to_str().unwrap()])
}

// ---------------------------------------------------------------- valid

#[test]
fn valid_v2_run_folder_passes() {
    let out = validate(&fixture("v2-valid"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr.contains("is a valid v2.0 report"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("warning"), "{}", out.stderr);
}

#[test]
fn valid_v1_run_folder_passes() {
    let out = validate(&fixture("v1-valid"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("is a valid v1.0 report"),
        "{}",
        out.stderr
    );
}

#[test]
fn valid_v2_1_and_v2_2_run_folders_pass_against_their_records() {
    for (name, version) in [
        ("v2.1-valid", "2.1"),
        ("v2.2-valid", "2.2"),
        ("v2.2-unverified", "2.2"),
    ] {
        let out = validate(&fixture(name));
        assert_eq!(out.code, 0, "{name}: {}{}", out.stdout, out.stderr);
        assert!(
            out.stderr
                .contains(&format!("is a valid v{version} report")),
            "{name}: {}",
            out.stderr
        );
        assert!(!out.stderr.contains("warning"), "{name}: {}", out.stderr);
    }
}

#[test]
fn example_report_is_valid_and_matches_the_fixture() {
    let example = repo_root().join("examples/report");
    assert_eq!(validate(&example).code, 0);
    for file in [
        "report/data.json",
        "run-manifest.json",
        "state/convergence-ledger.json",
        "state/team-state-error-analysis-001.json",
    ] {
        assert_eq!(
            fs::read(example.join(file)).unwrap(),
            fs::read(fixture("v2.2-valid").join(file)).unwrap(),
            "examples/report must stay a copy of the valid v2.2 fixture ({file})"
        );
    }
}

#[test]
fn a_data_json_path_finds_its_run_manifest_by_walking_up() {
    let out = validate(&fixture("v2-valid/report/data.json"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("skipped"), "{}", out.stderr);
    // The cross-file checks really ran: a broken citation is caught this way too.
    let out = validate(&fixture("invalid-source-missing/report/data.json"));
    assert_eq!(out.code, 1);
    assert!(out.stdout.contains("claude:F-999"), "{}", out.stdout);
}

#[test]
fn a_bare_data_json_gets_intrinsic_checks_and_says_what_it_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("data.json");
    fs::copy(fixture("invalid-source-missing/report/data.json"), &bare).unwrap();
    let out = run(&["validate", "--json", bare.to_str().unwrap()]);
    assert_eq!(
        out.code, 0,
        "no manifest, so the missing item cannot be seen"
    );
    assert!(
        out.stderr
            .contains("skipped the roster and worker-result checks")
    );
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["crossFileChecks"], false);
    assert_eq!(json["valid"], true);

    // Intrinsic checks still run: a worker absent from coverage is unknown.
    fs::copy(fixture("invalid-source-unrostered/report/data.json"), &bare).unwrap();
    let out = validate(&bare);
    assert_eq!(out.code, 1);
    assert!(
        out.stdout
            .contains("/consensus/0/sourceItems/2: [source-item]")
            && out.stdout.contains("not on `workerCoverage`"),
        "{}",
        out.stdout
    );
}

// ---------------------------------------------------------------- invariants

/// Validate an invalid fixture: exit 1, exactly the `expected` problem lines
/// (as `pointer: [rule] message-fragment`) in order, nothing else.
fn assert_invalid(name: &str, expected: &[(&str, &str, &str)]) {
    let out = validate(&fixture(name));
    assert_eq!(out.code, 1, "{name}: {}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), expected.len(), "{name}:\n{}", out.stdout);
    for (line, (pointer, rule, fragment)) in lines.iter().zip(expected) {
        let prefix = format!("{pointer}: [{rule}] ");
        assert!(
            line.starts_with(&prefix) && line.contains(fragment),
            "{name}: expected `{prefix}…{fragment}…`, got `{line}`"
        );
    }
    assert!(
        out.stderr.contains("is not a valid v2.0 report"),
        "{}",
        out.stderr
    );
}

#[test]
fn verdict_card_must_byte_match_the_final_verdict() {
    assert_invalid(
        "invalid-verdict-card",
        &[
            (
                "/verdictCard/direction",
                "verdict-card",
                "`proceed-with-changes` but `finalVerdict.direction` is `proceed`",
            ),
            (
                "/verdictCard/verdictToken",
                "verdict-card",
                "`LIKELY-ROOT-CAUSE` but `finalVerdict.verdictToken` is `ROOT-CAUSE-FOUND`",
            ),
        ],
    );
}

#[test]
fn routing_must_agree_with_the_first_next_step() {
    assert_invalid(
        "invalid-routing",
        &[(
            "/workflow/nextRecommendedPhase",
            "next-step-routing",
            "is `implementation` but `recommendedNextSteps[0]` routes to `implementation-planning`",
        )],
    );
}

#[test]
fn row_ids_must_be_unique() {
    assert_invalid(
        "invalid-row-id",
        &[(
            "/consensus/2/id",
            "row-id",
            "`C-002` is already used by `/consensus/1`",
        )],
    );
}

#[test]
fn source_items_must_name_a_rostered_worker() {
    assert_invalid(
        "invalid-source-unrostered",
        &[(
            "/consensus/0/sourceItems/2",
            "source-item",
            "names worker `kimi`, who is not on the run's roster",
        )],
    );
}

#[test]
fn source_items_must_exist_in_the_worker_result() {
    assert_invalid(
        "invalid-source-missing",
        &[(
            "/primaryEvidence/0/sourceItems/0",
            "source-item",
            "item `F-999` does not appear in `results/claude-worker.md`",
        )],
    );
}

#[test]
fn source_items_must_be_unique_in_the_worker_result() {
    assert_invalid(
        "invalid-source-duplicate",
        &[(
            "/consensus/1/sourceItems/1",
            "source-item",
            "item `1.2` appears 2 times in `results/codex-worker.md`",
        )],
    );
}

#[test]
fn every_rostered_worker_needs_coverage() {
    assert_invalid(
        "invalid-coverage-missing",
        &[(
            "/workerCoverage",
            "coverage",
            "rostered worker `grok` (analyser, grok) has no coverage entry",
        )],
    );
}

#[test]
fn coverage_may_not_invent_workers() {
    assert_invalid(
        "invalid-coverage-unrostered",
        &[(
            "/workerCoverage/3/workerId",
            "coverage",
            "worker `kimi` is not on the run's roster",
        )],
    );
}

#[test]
fn a_worker_that_produced_nothing_needs_a_classified_reason() {
    assert_invalid(
        "invalid-coverage-no-reason",
        &[(
            "/workerCoverage/2",
            "schema",
            "\"failure\" is a required property",
        )],
    );
}

#[test]
fn task_block_header_and_run_must_agree_on_the_task_type() {
    assert_invalid(
        "invalid-task-type",
        &[
            (
                "/header/taskType",
                "task-type",
                "`feature-analysis` but the run manifest says `error-analysis`",
            ),
            (
                "/task/taskType",
                "task-type",
                "for `error-analysis` but `header.taskType` is `feature-analysis`",
            ),
        ],
    );
}

#[test]
fn schema_violations_are_listed_all_at_once_and_sorted() {
    let out = validate(&fixture("invalid-schema"));
    assert_eq!(out.code, 1);
    insta::assert_snapshot!(out.stdout, @r#"
    /: [schema] "humanSummary" is a required property
    /consensus/0/sourceItems/0: [schema] "claude" does not match "^[a-z][a-z-]*:[A-Za-z0-9._-]+$"
    /consensus/1/convergence: [schema] "unanimous" is not one of "full-consensus", "partial-consensus" or 2 other candidates
    /differences/0/id: [schema] "D-1" does not match "^D-[0-9]{3,}$"
    /header/reportOwner: [schema] "Okstra lead" was expected
    /primaryEvidence/2/sourceItems: [schema] [] has less than 1 item
    "#);
    assert!(out.stderr.contains("6 problems"), "{}", out.stderr);
}

#[test]
fn a_v1_header_is_wrong_in_a_v2_report_and_the_other_way_round() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data.json");
    let mut data: Value =
        serde_json::from_str(&fs::read_to_string(fixture("v1-valid/report/data.json")).unwrap())
            .unwrap();
    data["schemaVersion"] = "2.0".into();
    fs::write(&path, data.to_string()).unwrap();
    let out = validate(&path);
    assert_eq!(out.code, 1);
    assert!(
        out.stdout.contains("/header/reportAuthor: [schema]"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("/header/reportOwner: [schema]"),
        "{}",
        out.stdout
    );
}

#[test]
fn json_output_lists_every_problem_with_rule_and_pointer() {
    let out = run(&[
        "validate",
        "--json",
        fixture("invalid-verdict-card").to_str().unwrap(),
    ]);
    assert_eq!(out.code, 1);
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["valid"], false);
    assert_eq!(json["schemaVersion"], 1);
    assert_eq!(json["reportSchemaVersion"], "2.0");
    assert_eq!(json["crossFileChecks"], true);
    let problems: Vec<(&str, &str)> = json["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["rule"].as_str().unwrap(), p["pointer"].as_str().unwrap()))
        .collect();
    assert_eq!(
        problems,
        vec![
            ("verdict-card", "/verdictCard/direction"),
            ("verdict-card", "/verdictCard/verdictToken")
        ]
    );

    let out = run(&["validate", "--json", fixture("v2-valid").to_str().unwrap()]);
    assert_eq!(out.code, 0);
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["valid"], true);
    assert_eq!(json["problems"], serde_json::json!([]));
}

// ---------------------------------------------------------------- cannot check

#[test]
fn could_not_check_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, Option<&str>, &str); 5] = [
        ("missing.json", None, "does not exist"),
        (
            "bad.json",
            Some("{\"schemaVersion\": \"2.0\","),
            "is not valid JSON",
        ),
        (
            "future.json",
            Some("{\"schemaVersion\": \"3.0\"}"),
            "unknown `schemaVersion` \"3.0\"",
        ),
        (
            "none.json",
            Some("{\"header\": {}}"),
            "has no `schemaVersion`",
        ),
        (
            "number.json",
            Some("{\"schemaVersion\": 2}"),
            "unknown `schemaVersion` 2",
        ),
    ];
    for (name, contents, message) in cases {
        let path = dir.path().join(name);
        if let Some(contents) = contents {
            fs::write(&path, contents).unwrap();
        }
        for subcommand in ["validate", "report"] {
            let out = run(&[subcommand, path.to_str().unwrap()]);
            assert_eq!(out.code, 2, "{subcommand} {name}: {}", out.stderr);
            assert!(
                out.stderr.contains(message),
                "{subcommand} {name}: {}",
                out.stderr
            );
            assert_eq!(out.stdout, "", "{subcommand} {name}");
        }
    }
    // A folder that is neither a run folder nor a report folder.
    let out = validate(dir.path());
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("neither a run folder"),
        "{}",
        out.stderr
    );
    // A run folder whose manifest points at a report that was never written.
    let run_dir = dir.path().join("run");
    copy_dir(&fixture("v2-valid"), &run_dir);
    fs::remove_file(run_dir.join("report/data.json")).unwrap();
    let out = validate(&run_dir);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("cannot read report"), "{}", out.stderr);
}

// ---------------------------------------------------------------- report

/// Render `target` into a fresh folder; returns the folder and the output.
fn render(target: &Path) -> (tempfile::TempDir, Run) {
    let out_dir = tempfile::tempdir().unwrap();
    let out = run(&[
        "report",
        target.to_str().unwrap(),
        "--out-dir",
        out_dir.path().to_str().unwrap(),
    ]);
    (out_dir, out)
}

#[test]
fn report_writes_both_files_and_prints_their_paths() {
    let (dir, out) = render(&fixture("v2-valid"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let md = dir.path().join("final-report.md");
    let html = dir.path().join("final-report.html");
    assert_eq!(
        out.stdout,
        format!("{}\n{}\n", md.display(), html.display())
    );
    assert!(md.is_file() && html.is_file());
}

#[test]
fn report_defaults_to_beside_data_json_and_has_json_output() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture("v1-valid"), dir.path());
    let out = run(&["report", "--json", dir.path().to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    let md = PathBuf::from(json["markdown"].as_str().unwrap());
    assert_eq!(md, dir.path().join("report/final-report.md"));
    assert!(md.is_file());
    assert!(Path::new(json["html"].as_str().unwrap()).is_file());
}

#[test]
fn report_refuses_an_invalid_report_and_writes_nothing() {
    let (dir, out) = render(&fixture("invalid-routing"));
    assert_eq!(out.code, 1);
    assert_eq!(out.stdout, "");
    assert!(out.stderr.contains("refusing to render"), "{}", out.stderr);
    assert!(out.stderr.contains("[next-step-routing]"), "{}", out.stderr);
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn markdown_v2_snapshot() {
    let (dir, out) = render(&fixture("v2-valid"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let md = fs::read_to_string(dir.path().join("final-report.md")).unwrap();
    assert!(!md.contains("## Verdict Card") && !md.contains("## 7. Final Verdict"));
    insta::assert_snapshot!("report_markdown_v2", md);
}

#[test]
fn markdown_v1_snapshot() {
    let (dir, out) = render(&fixture("v1-valid"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let md = fs::read_to_string(dir.path().join("final-report.md")).unwrap();
    assert!(md.contains("\n## Verdict Card\n") && md.contains("\n## 7. Final Verdict\n"));
    insta::assert_snapshot!("report_markdown_v1", md);
}

#[test]
fn html_v2_snapshot() {
    let (dir, out) = render(&fixture("v2-valid"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let html = fs::read_to_string(dir.path().join("final-report.html")).unwrap();
    insta::assert_snapshot!("report_html_v2", html);
}

#[test]
fn html_v1_snapshot() {
    let (dir, out) = render(&fixture("v1-valid"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let html = fs::read_to_string(dir.path().join("final-report.html")).unwrap();
    insta::assert_snapshot!("report_html_v1", html);
}

#[test]
fn rendering_is_deterministic() {
    for name in ["v1-valid", "v2-valid", "v2.2-valid", "v2.2-unverified"] {
        let (first, _) = render(&fixture(name));
        let (second, _) = render(&fixture(name));
        for file in ["final-report.md", "final-report.html"] {
            assert_eq!(
                fs::read(first.path().join(file)).unwrap(),
                fs::read(second.path().join(file)).unwrap(),
                "{name}/{file} differs between two runs"
            );
        }
    }
}

#[test]
fn derived_reports_are_readable_by_everyone() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, out) = render(&fixture("v2-valid"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    for file in ["final-report.md", "final-report.html"] {
        let mode = fs::metadata(dir.path().join(file))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o644, "{file}");
    }
}

#[test]
fn html_is_self_contained_and_responsive() {
    let (dir, out) = render(&fixture("v2-valid"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let html = fs::read_to_string(dir.path().join("final-report.html")).unwrap();
    assert!(html.contains("<meta name=\"viewport\" content=\"width=device-width"));
    assert!(html.contains("max-width:60rem"));
    assert!(html.contains("<div class=\"scroll\"><table>"));
    for forbidden in [
        "<script", "<link", "src=", "href=", "http://", "https://", "@import", "url(",
    ] {
        assert!(
            !html.contains(forbidden),
            "the HTML must not contain `{forbidden}`"
        );
    }
    // The human body leads with the user-facing fields.
    let summary = html.find("Customers were charged twice").unwrap();
    let narrative = html.find("We looked for why some payments").unwrap();
    let consensus = html.find("Where the workers agree").unwrap();
    assert!(summary < narrative && narrative < consensus);
}

// ---------------------------------------------------------------- browser

/// The Chromium binary, or `None` when the environment opted out.
#[expect(
    clippy::print_stderr,
    reason = "a skipped check tells whoever runs the tests why, outside any `#[test]`"
)]
fn chromium() -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find_map(|name| which::which(name).ok());
    if found.is_some() {
        return found;
    }
    // CI installs Chromium and sets this, so there the check is required.
    assert!(
        std::env::var_os("OKSTRA_REQUIRE_BROWSER").is_none_or(|v| v != "1"),
        "headless Chromium is required here (OKSTRA_REQUIRE_BROWSER=1): install it \
         (`apt-get install -y chromium`)"
    );
    eprintln!(
        "notice: no Chromium on PATH, skipping the headless-browser check of the HTML report \
         (install `chromium` to run it; CI requires it)"
    );
    None
}

/// Run headless Chromium on `page` with `extra` arguments; returns stdout.
fn run_chromium(browser: &Path, page: &Path, extra: &[String]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut text).unwrap();
        text
    });
    let status = wait_for(limit(), "chromium to finish", || child.try_wait().unwrap());
    assert!(status.success(), "chromium failed: {status}");
    reader.join().unwrap()
}

/// Screenshot `page` at `width`×`height` and check it shows a real page.
fn screenshot_shows_content(browser: &Path, page: &Path, width: u32, height: u32) {
    let shots = tempfile::tempdir().unwrap();
    let png_path = shots.path().join("shot.png");
    run_chromium(
        browser,
        page,
        &[
            format!("--window-size={width},{height}"),
            format!("--screenshot={}", png_path.display()),
        ],
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(fs::File::open(&png_path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).unwrap();
    assert_eq!(
        (info.width, info.height),
        (width, height),
        "screenshot size"
    );
    let channels = info.color_type.samples();
    let mut colours = std::collections::HashSet::new();
    let mut inked = 0usize;
    for pixel in pixels[..info.buffer_size()].chunks_exact(channels) {
        let rgb = (pixel[0], pixel[1], pixel[2]);
        colours.insert(rgb);
        if rgb != (255, 255, 255) {
            inked += 1;
        }
    }
    let total = (width * height) as usize;
    assert!(
        colours.len() > 50,
        "{width}x{height}: only {} colours, the page looks blank",
        colours.len()
    );
    assert!(
        inked * 100 > total * 3,
        "{width}x{height}: only {inked} of {total} pixels are not white"
    );
}

#[test]
fn html_renders_in_headless_chromium_on_a_phone_and_a_laptop() {
    let Some(browser) = chromium() else { return };
    // The unverified report adds its banner above the summary.
    for name in ["v2-valid", "v2.2-unverified"] {
        let (dir, out) = render(&fixture(name));
        assert_eq!(out.code, 0, "{name}: {}", out.stderr);
        let page = dir.path().join("final-report.html");
        let phone = std::thread::scope(|scope| {
            let phone = scope.spawn(|| screenshot_shows_content(&browser, &page, 390, 844));
            screenshot_shows_content(&browser, &page, 1366, 900);
            phone.join()
        });
        if let Err(panic) = phone {
            std::panic::resume_unwind(panic);
        }
    }
}

/// The widths Chromium lays each table out at, `window` pixels wide: per
/// table (its section's heading), its scroll box's content and visible
/// widths and its column headers. Measured by a script added to a copy of
/// the page (the report itself has none).
fn table_widths(browser: &Path, page: &Path, window: u32) -> Vec<(String, u32, u32, Vec<String>)> {
    const MEASURE: &str = "<script>\n\
        const rows = [];\n\
        for (const box of document.querySelectorAll('.scroll')) {\n\
          let h = box.previousElementSibling;\n\
          while (h && h.tagName !== 'H2') h = h.previousElementSibling;\n\
          const heads = [...box.querySelectorAll('thead th')].map(th => th.textContent);\n\
          rows.push([h ? h.textContent : '', box.scrollWidth, box.clientWidth, heads.join(',')].join('\\t'));\n\
        }\n\
        const out = document.createElement('pre');\n\
        out.id = 'measured';\n\
        out.textContent = rows.join('\\n');\n\
        document.body.appendChild(out);\n\
        </script>";
    let html = fs::read_to_string(page).unwrap();
    let measured = page.with_file_name("measured.html");
    fs::write(
        &measured,
        html.replace("</body>", &format!("{MEASURE}</body>")),
    )
    .unwrap();
    let dom = run_chromium(
        browser,
        &measured,
        &[
            format!("--window-size={window},900"),
            "--dump-dom".to_owned(),
        ],
    );
    let start = dom.find("<pre id=\"measured\">").expect("the script ran") + 20;
    let end = start + dom[start..].find("</pre>").unwrap();
    dom[start..end]
        .lines()
        .map(|line| {
            let cells: Vec<&str> = line.split('\t').collect();
            (
                cells[0].to_owned(),
                cells[1].parse().unwrap(),
                cells[2].parse().unwrap(),
                cells[3].split(',').map(str::to_owned).collect(),
            )
        })
        .collect()
}

/// A run of five analysers (the fake team writing whole results, findings
/// anchored with excerpts): at 1400 pixels the matrix of who verified what
/// uses the window's width and shows every reviewer's column without a
/// sideways scroll, while the prose keeps its measure.
#[test]
fn the_verification_matrix_of_five_workers_fits_a_1400_pixel_window() {
    let Some(browser) = chromium() else { return };
    let world = crate::run::team_project();
    let output = world
        .task_command(
            &["run"],
            &[
                "--task-type",
                "project-analysis",
                "--workers",
                "claude,codex,antigravity,grok,kimi,report-writer",
                "--yes",
                "--json",
            ],
        )
        .env("FAKE_FULL", "1")
        .env("XAI_API_KEY", "fake-xai")
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let outcome: Value = serde_json::from_slice(&output.stdout).unwrap();
    let page = PathBuf::from(outcome["html"].as_str().unwrap());
    let tables = table_widths(&browser, &page, 1400);
    let (_, content, visible, headers) = tables
        .iter()
        .find(|(heading, ..)| heading == "Who found and who verified what")
        .expect("the report has the matrix");
    assert_eq!(
        headers[4..],
        ["claude", "codex", "antigravity", "grok", "kimi"],
        "{headers:?}"
    );
    assert!(
        content <= visible,
        "the matrix needs {content} px and shows {visible} px: the last columns hide behind a scroll"
    );
    assert!(
        *visible > 1200,
        "the matrix is kept to {visible} px of 1400"
    );
    // A narrow table keeps to the text's measure.
    let (_, _, usage, _) = tables
        .iter()
        .find(|(heading, ..)| heading == "Token usage")
        .expect("the report has its usage");
    assert!(*usage < 1000, "the usage table spreads to {usage} px");
}

#[test]
fn markup_in_model_text_stays_inert() {
    const SCRIPT: &str = "<script>alert(1)</script>";
    const IMG: &str = "\"><img src=x onerror=alert(2)>";
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture("v2-valid"), dir.path());
    let data_path = dir.path().join("report/data.json");
    let mut data: Value = serde_json::from_str(&fs::read_to_string(&data_path).unwrap()).unwrap();
    data["consensus"][0]["finding"] = format!("finding {SCRIPT} {IMG}").into();
    data["task"]["userNarrative"] = format!("narrative {IMG}").into();
    data["header"]["title"] = format!("title {SCRIPT}").into();
    data["workerCoverage"][2]["failure"]["logTail"][0] = SCRIPT.into();
    data["differences"][0]["positions"][0]["stance"] = IMG.into();
    fs::write(&data_path, serde_json::to_string_pretty(&data).unwrap()).unwrap();

    let out = run(&["report", dir.path().to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let page = dir.path().join("report/final-report.html");
    let html = fs::read_to_string(&page).unwrap();
    assert!(
        !html.contains("<script") && !html.contains("<img"),
        "{html}"
    );
    assert!(html.contains("finding &lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(html.contains("&quot;&gt;&lt;img src=x onerror=alert(2)&gt;"));
    assert!(html.contains("<title>title &lt;script&gt;alert(1)&lt;/script&gt;</title>"));

    let Some(browser) = chromium() else { return };
    let dom = run_chromium(&browser, &page, &["--dump-dom".to_owned()]);
    assert!(
        dom.contains("finding &lt;script&gt;alert(1)&lt;/script&gt;"),
        "{dom}"
    );
    assert!(!dom.contains("<script") && !dom.contains("<img"), "{dom}");
}

#[test]
fn report_renders_a_bare_data_json_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("data.json");
    fs::copy(fixture("v1-valid/report/data.json"), &bare).unwrap();
    let out = run(&["report", bare.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("skipped the roster and worker-result checks")
    );
    assert!(dir.path().join("final-report.md").is_file());
    assert!(dir.path().join("final-report.html").is_file());
}

#[test]
fn schema_only_skips_the_invariants() {
    let target = fixture("invalid-routing");
    let out = run(&["validate", "--schema-only", target.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    // It never claims the invariants it skipped.
    assert!(
        out.stderr
            .contains("report at the `schema` level (only the JSON Schema; `--schema-only` skipped the invariants)"),
        "{}",
        out.stderr
    );
    let out = run(&[
        "validate",
        "--schema-only",
        fixture("invalid-schema").to_str().unwrap(),
    ]);
    assert_eq!(out.code, 1);
    assert_eq!(out.stdout.lines().count(), 6);
}

#[test]
fn a_verdict_token_outside_the_task_types_list_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture("v2-valid"), dir.path());
    let data_path = dir.path().join("report/data.json");
    let mut data: Value = serde_json::from_str(&fs::read_to_string(&data_path).unwrap()).unwrap();
    // A project-analysis token in an error-analysis report, in both places.
    data["finalVerdict"]["verdictToken"] = "HEALTHY-WITH-GAPS".into();
    data["verdictCard"]["verdictToken"] = "HEALTHY-WITH-GAPS".into();
    fs::write(&data_path, serde_json::to_string_pretty(&data).unwrap()).unwrap();
    let out = validate(dir.path());
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stdout.contains("/finalVerdict/verdictToken"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("/verdictCard/verdictToken"),
        "{}",
        out.stdout
    );
}
