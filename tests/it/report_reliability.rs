//! Integration tests: the report's `reliability` block (schema 2.1) through
//! the real binary. `okstra report` on a run writes okstra's block into
//! data.json before it checks it; `okstra validate` checks the block against
//! the run's records (a run folder) or against itself (a bare data.json);
//! and a report that was not cross-verified says so first and never reads
//! as "nothing found".

use std::fs;
use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::Value;

use super::{fixture, render, run, validate};
use crate::support::{copy_dir, read_json};

/// One bare-report case: its name, the edit, the problems it must cause
/// (`pointer`, `rule`, message fragment).
type BareCase = (
    &'static str,
    fn(&mut Value),
    &'static [(&'static str, &'static str, &'static str)],
);

/// One run-records case: its name, the edit, the reason okstra must find.
type RecordsCase = (&'static str, fn(&Path), Option<&'static str>);

/// A copy of fixture `name` in a fresh folder.
fn copy(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture(name), dir.path());
    dir
}

/// Change the JSON file at `path` with `change`.
fn edit(path: &Path, change: impl FnOnce(&mut Value)) {
    let mut value = read_json(path);
    change(&mut value);
    fs::write(path, serde_json::to_string_pretty(&value).unwrap()).unwrap();
}

#[test]
fn a_hand_edited_block_fails_against_the_run_records_in_one_line() {
    let dir = copy("v2.2-unverified");
    edit(&dir.path().join("report/data.json"), |data| {
        data["reliability"]["crossVerified"] = true.into();
    });
    let out = validate(dir.path());
    assert_eq!(out.code, 1, "{}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{}", out.stdout);
    assert!(
        lines[0].starts_with("/reliability/crossVerified: [reliability] ")
            && lines[0].contains("is `true` but okstra computes `false`"),
        "{}",
        lines[0]
    );
}

#[test]
fn a_bare_data_json_block_must_agree_with_itself() {
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("data.json");
    let cases: [BareCase; 4] = [
        (
            "claims cross-verification one reviewer cannot give",
            |data| data["reliability"]["crossVerified"] = true.into(),
            &[(
                "/reliability/crossVerified",
                "reliability",
                "`reliability.reviewersCompleted` (1) is below `reliability.reviewersRequired` (2)",
            )],
        ),
        (
            "unverified without a reason",
            |data| {
                data["reliability"]
                    .as_object_mut()
                    .unwrap()
                    .remove("reason");
            },
            &[(
                "/reliability",
                "schema",
                "\"reason\" is a required property",
            )],
        ),
        (
            "unverified with a consensus row",
            |data| {
                data["consensus"] = serde_json::json!([{
                    "id": "C-001",
                    "finding": "Timeouts are retried without a limit.",
                    "convergence": "partial-consensus",
                    "sourceItems": ["claude:F-001"]
                }]);
            },
            &[(
                "/consensus/0/convergence",
                "reliability",
                "`partial-consensus` claims the finding was cross-verified",
            )],
        ),
        (
            "unverified, no rows, and \"no findings\"",
            |data| {
                data["differences"] = serde_json::json!([]);
                data["humanSummary"]["paragraphs"][1] = "The analysis produced no findings.".into();
            },
            &[(
                "/humanSummary/paragraphs/1",
                "reliability",
                "says \"no findings\", but the run was not cross-verified",
            )],
        ),
    ];
    for (name, change, expected) in cases {
        fs::copy(fixture("v2.2-unverified/report/data.json"), &bare).unwrap();
        let out = validate(&bare);
        assert_eq!(out.code, 0, "{name}: the unchanged copy is valid");
        edit(&bare, change);
        let out = validate(&bare);
        assert_eq!(out.code, 1, "{name}: {}", out.stderr);
        let lines: Vec<&str> = out.stdout.lines().collect();
        assert_eq!(lines.len(), expected.len(), "{name}:\n{}", out.stdout);
        for (line, (pointer, rule, fragment)) in lines.iter().zip(expected) {
            assert!(
                line.starts_with(&format!("{pointer}: [{rule}] ")) && line.contains(fragment),
                "{name}: expected `{pointer}: [{rule}] …{fragment}…`, got `{line}`"
            );
        }
    }
}

#[test]
fn a_cross_verified_report_may_say_it_found_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("data.json");
    fs::copy(fixture("v2.2-valid/report/data.json"), &bare).unwrap();
    edit(&bare, |data| {
        data["consensus"] = serde_json::json!([]);
        data["differences"] = serde_json::json!([]);
        data["humanSummary"]["paragraphs"][1] = "Both reviewers checked: no findings.".into();
    });
    let out = validate(&bare);
    assert_eq!(out.code, 0, "{}", out.stdout);
}

#[test]
fn report_writes_okstras_block_into_a_run_before_checking_it() {
    let dir = copy("v2.2-valid");
    let data_path = dir.path().join("report/data.json");
    let expected = read_json(&data_path)["reliability"].clone();
    // What a report writer hands over: 2.1 without the block, or even 2.0;
    // okstra writes its blocks in the current schema's shape.
    for version in ["2.1", "2.0"] {
        edit(&data_path, |data| {
            data.as_object_mut().unwrap().remove("reliability");
            data["schemaVersion"] = version.into();
        });
        let out = validate(dir.path());
        assert_eq!(
            out.code, 1,
            "{version}: nothing is valid before okstra's block"
        );
        let out = run(&["report", dir.path().to_str().unwrap()]);
        assert_eq!(out.code, 0, "{version}: {}", out.stderr);
        let data = read_json(&data_path);
        assert_eq!(data["schemaVersion"], "2.2", "{version}");
        assert_eq!(data["reliability"], expected, "{version}");
        assert_eq!(validate(dir.path()).code, 0, "{version}");
    }
    // A hand edit does not survive `okstra report`: okstra owns the block.
    edit(&data_path, |data| {
        data["reliability"]["roundsRun"] = 2.into();
    });
    let out = run(&["report", dir.path().to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(read_json(&data_path)["reliability"], expected);
}

#[test]
fn report_leaves_the_reports_of_older_runs_as_they_are() {
    for name in ["v2-valid", "v1-valid"] {
        let dir = copy(name);
        let data_path = dir.path().join("report/data.json");
        let before = fs::read(&data_path).unwrap();
        let out = run(&["report", dir.path().to_str().unwrap()]);
        assert_eq!(out.code, 0, "{name}: {}", out.stderr);
        assert_eq!(fs::read(&data_path).unwrap(), before, "{name}");
    }
}

/// The block follows the run's records: each edit of v2.2-valid's records
/// is one rule of `report::reliability`, seen through `okstra report`.
#[test]
fn the_block_okstra_writes_follows_the_run_records() {
    let cases: [RecordsCase; 4] = [
        ("as recorded", |_| {}, None),
        (
            "codex never answered round 1",
            |run| {
                edit(
                    &run.join("state/team-state-error-analysis-001.json"),
                    |state| {
                        for record in state["dispatches"].as_array_mut().unwrap() {
                            if record["dispatchName"] == "codex-worker-reverify-r1" {
                                record["ending"] = "auth".into();
                            }
                        }
                    },
                );
            },
            Some("reviewers-failed"),
        ),
        (
            "interrupted before round 1 was recorded",
            |run| {
                edit(&run.join("state/convergence-ledger.json"), |ledger| {
                    ledger["roundsRun"] = 0.into();
                });
            },
            Some("convergence-not-run"),
        ),
        (
            "codex's own work failed",
            |run| {
                edit(
                    &run.join("state/team-state-error-analysis-001.json"),
                    |state| {
                        for record in state["dispatches"].as_array_mut().unwrap() {
                            if record["dispatchName"] == "codex-worker" {
                                record["ending"] = "crash".into();
                            }
                        }
                    },
                );
            },
            Some("quorum-lost"),
        ),
    ];
    for (name, change, reason) in cases {
        let dir = copy("v2.2-valid");
        change(dir.path());
        let out = run(&["report", dir.path().to_str().unwrap()]);
        let block = read_json(&dir.path().join("report/data.json"))["reliability"].clone();
        assert_eq!(block["reason"].as_str(), reason, "{name}: {block}");
        assert_eq!(block["crossVerified"], reason.is_none(), "{name}");
        if reason.is_some() {
            // Its consensus rows now claim what the run cannot back.
            assert_eq!(out.code, 1, "{name}");
            assert!(
                out.stderr
                    .contains("claims the finding was cross-verified, but"),
                "{name}: {}",
                out.stderr
            );
        } else {
            assert_eq!(out.code, 0, "{name}: {}", out.stderr);
        }
    }
}

#[test]
fn an_unverified_report_says_so_first_in_markdown_and_html() {
    let (dir, out) = render(&fixture("v2.2-unverified"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let md = fs::read_to_string(dir.path().join("final-report.md")).unwrap();
    let mut paragraphs = md.split("\n\n");
    assert!(paragraphs.next().unwrap().starts_with("# "));
    assert_eq!(
        paragraphs.next().unwrap(),
        "> **Not cross-verified (quorum-lost)**: only 1 of 3 reviewers completed their own \
         work; cross-verification needs 2, so each finding is one model's word"
    );
    let consensus = &md[md.find("## Consensus").unwrap()..md.find("## Differences").unwrap()];
    assert!(
        consensus.contains("_No finding was cross-verified._"),
        "{consensus}"
    );
    assert!(!md.contains("_none_\n\n## Differences"), "{md}");

    let html = fs::read_to_string(dir.path().join("final-report.html")).unwrap();
    let banner = html
        .find("<p class=\"unverified\"><strong>Not cross-verified (quorum-lost)</strong>: only 1 of 3")
        .expect("the HTML states it");
    assert!(banner < html.find("<h2>Summary</h2>").unwrap());
    assert!(banner < html.find("<h2>Verdict</h2>").unwrap());
    assert!(html.contains("<p class=\"none\">No finding was cross-verified.</p>"));

    // A cross-verified report says so first too, in the same words.
    let (dir, out) = render(&fixture("v2.2-valid"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let md = fs::read_to_string(dir.path().join("final-report.md")).unwrap();
    let mut paragraphs = md.split("\n\n");
    paragraphs.next();
    assert!(
        paragraphs
            .next()
            .unwrap()
            .starts_with("> **Cross-verified**: "),
        "{md}"
    );
    assert!(
        md.contains(
            "\n- Verification: Cross-verified; 2 of 3 reviewers completed, 1 convergence round\n"
        ),
        "{md}"
    );
    assert!(!md.contains("Not cross-verified"));
}

#[test]
fn markdown_and_html_v2_2_snapshots() {
    for (name, fixture_name) in [
        ("v2_2", "v2.2-valid"),
        ("v2_2_unverified", "v2.2-unverified"),
    ] {
        let (dir, out) = render(&fixture(fixture_name));
        assert_eq!(out.code, 0, "{}", out.stderr);
        let md = fs::read_to_string(dir.path().join("final-report.md")).unwrap();
        insta::assert_snapshot!(format!("report_markdown_{name}"), md);
        let html = fs::read_to_string(dir.path().join("final-report.html")).unwrap();
        insta::assert_snapshot!(format!("report_html_{name}"), html);
    }
}
