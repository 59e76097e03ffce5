//! Integration tests: the report's `verification` block (schema 2.1) and
//! what the report shows of it — who found each row's claims, who reviewed
//! them and how, the anchors; the unverifiable claims apart; usage with a
//! cost column and a total; code spans as code — in Markdown, in HTML, and
//! in headless Chromium.

use std::fs;
use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::Value;

use super::{chromium, fixture, render, run, run_chromium, screenshot_shows_content, validate};
use crate::support::{copy_dir, read_json};

/// A copy of the cross-verified fixture run, with costs in its usage (the
/// records': claude's attempts and the report writer priced, codex's model
/// unpriced, grok's usage unread, no lead model) and code in a finding.
fn priced_run() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture("v2.2-valid"), dir.path());
    let path = dir.path().join("report/data.json");
    let mut data = read_json(&path);
    data["consensus"][0]["finding"] = "Timeouts in `PaymentClient::submit` retry forever.".into();
    fs::write(&path, serde_json::to_string_pretty(&data).unwrap()).unwrap();
    dir
}

#[test]
fn the_block_is_okstras_and_a_hand_edit_fails_against_the_ledger() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture("v2.2-valid"), dir.path());
    assert_eq!(validate(dir.path()).code, 0);
    let path = dir.path().join("report/data.json");
    let mut data = read_json(&path);
    // A reviewer's AGREE turned into a DISAGREE by hand.
    data["verification"]["items"][0]["reviews"][0]["verdict"] = "DISAGREE".into();
    fs::write(&path, serde_json::to_string_pretty(&data).unwrap()).unwrap();
    let out = validate(dir.path());
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(
        out.stdout.trim(),
        "/verification/items/0: [verification] the verification of `claude:F-001` is not what \
         okstra computes from the run's records; okstra writes this block, never edit it"
    );
    // `okstra report` writes okstra's block back.
    let out = run(&["report", dir.path().to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        read_json(&path)["verification"]["items"][0]["reviews"][0]["verdict"],
        "AGREE"
    );
}

#[test]
fn a_consensus_row_citing_an_unverifiable_claim_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture("v2.2-valid"), dir.path());
    let path = dir.path().join("report/data.json");
    let mut data = read_json(&path);
    // `codex:2.1` cites no line of the project: the ledger says unverifiable.
    data["consensus"][0]["sourceItems"]
        .as_array_mut()
        .unwrap()
        .push("codex:2.1".into());
    fs::write(&path, serde_json::to_string_pretty(&data).unwrap()).unwrap();
    let out = validate(dir.path());
    assert_eq!(out.code, 1);
    assert!(
        out.stdout.contains(
            "/consensus/0/sourceItems/1: [anchors] `codex:2.1` is `unverifiable` (it cites no \
             anchor); an unverifiable claim is listed apart, never cited as consensus"
        ),
        "{}",
        out.stdout
    );
}

#[test]
fn every_row_says_who_found_it_and_who_verified_it_with_costs_and_a_total() {
    let run_dir = priced_run();
    let (out_dir, out) = render(run_dir.path());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let markdown = fs::read_to_string(out_dir.path().join("final-report.md")).unwrap();
    // Found by its owner alone (nobody said codex's claim is the same one),
    // verified by codex with a line of its own.
    assert!(
        markdown.contains(
            "- C-001: found by `claude`; verified by `codex`; anchors \
             `src/payments/client.rs:88` verified; reviews: `codex` on `claude:F-001` AGREE — \
             src/payments/client.rs:106 `Err(err) if err.is_timeout() => continue,` sends the \
             request again at once, with no attempt count."
        ),
        "{markdown}"
    );
    assert!(markdown.contains("| `codex` | codex | 88,012 | 6,102 | 50,000 | unpriced |"));
    assert!(markdown.contains("| **Total** | | 208,522 | 18,752 | 660,000 | ≥ $1.04 + unpriced |"));
    let html = fs::read_to_string(out_dir.path().join("final-report.html")).unwrap();
    assert!(html.contains(
        "<td><code>claude</code><br><span class=\"ev\">verified by <code>codex</code></span></td>\
         <td><span class=\"nowrap\"><code>codex</code> <span class=\"badge agree\">AGREE</span>\
         </span></td>"
    ));
    assert!(html.contains("Timeouts in <code>PaymentClient::submit</code> retry forever."));
    assert!(html.contains("<code>src/<wbr>payments/<wbr>client.rs:88</code>"));
    assert!(html.contains(
        "<tr class=\"total\"><td>Total</td><td></td><td>208,522</td><td>18,752</td>\
         <td>660,000</td><td>≥ $1.04 + unpriced</td></tr>"
    ));
    assert!(html.contains("<td>$0.92</td>") && html.contains("<td>$0.12</td>"));
    check_in_a_browser(&out_dir.path().join("final-report.html"));
}

/// The page as Chromium builds it: the matrix of claims × workers with each
/// verdict, the anchors, the unverifiable claim, the cost column and total;
/// and it shows on a phone's screen.
fn check_in_a_browser(page: &Path) {
    let Some(browser) = chromium() else { return };
    let dom = run_chromium(&browser, page, &["--dump-dom".to_owned()]);
    let matrix = dom
        .find("<h2>Who found and who verified what</h2>")
        .expect("the matrix section");
    let matrix = &dom[matrix..dom[matrix..].find("</section>").unwrap() + matrix];
    assert!(matrix.contains("<th>claude</th><th>codex</th>"), "{matrix}");
    // Row C-001, claude's claim: claude found it; codex agreed, with a line
    // of its own as evidence (it did not find this claim: its own is C-004).
    assert!(matrix.contains(
        "<td class=\"verdict-agree\"><span class=\"badge agree\">AGREE</span>\
         <span class=\"ev\">src/payments/client.rs:106 <code>Err(err) if err.is_timeout() \
         =&gt; continue,</code> sends the request again at once, with no attempt count</span></td>"
    ));
    assert!(matrix.contains("<code>loop {</code>"), "{matrix}");
    assert!(dom.contains("<h2>Unverifiable claims</h2>"));
    assert!(dom.contains("<th>Cost</th>") && dom.contains("≥ $1.04 + unpriced"));
    screenshot_shows_content(&browser, page, 390, 844);
}

#[test]
fn a_report_without_the_block_renders_as_before() {
    let (out_dir, out) = render(&fixture("v2-valid"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let html = fs::read_to_string(out_dir.path().join("final-report.html")).unwrap();
    assert!(!html.contains("Who found and who verified what"));
    assert!(!html.contains("<th>Found by</th>"));
    let value: Value = read_json(&fixture("v2-valid/report/data.json"));
    assert!(value.get("verification").is_none());
}

/// The report writer quotes the code in `primaryEvidence`; okstra checks
/// each row's location and excerpt against the run's snapshot, writes what
/// it found into `verification.evidence`, and both views say it. A quote
/// the code does not hold is shown as not found, and a hand edit of the
/// finding fails validation.
#[test]
fn evidence_rows_are_checked_against_the_snapshot_and_the_views_say_so() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture("v2.2-valid"), dir.path());
    let path = dir.path().join("report/data.json");
    let mut data = read_json(&path);
    assert_eq!(
        data["verification"]["evidence"][0]["anchorStatus"],
        "verified"
    );
    // The writer misquotes line 88.
    data["primaryEvidence"][0]["excerpt"] = "loop { retry(); }".into();
    fs::write(&path, serde_json::to_string_pretty(&data).unwrap()).unwrap();
    let out = validate(dir.path());
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stdout.contains(
            "/verification/evidence: [verification] `verification.evidence` is not what okstra \
             finds at the `primaryEvidence` rows' locations in the run's snapshot"
        ),
        "{}",
        out.stdout
    );

    // `okstra report` writes what okstra found, and shows it.
    let (views, out) = render(dir.path());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let evidence = read_json(&path)["verification"]["evidence"].clone();
    let statuses: Vec<(&str, &str)> = evidence
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["id"].as_str().unwrap(),
                e["anchorStatus"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [
            ("E-001", "unanchored"),
            ("E-002", "none"),
            ("E-003", "none")
        ]
    );
    assert_eq!(validate(dir.path()).code, 0);
    let markdown = fs::read_to_string(views.path().join("final-report.md")).unwrap();
    assert!(
        markdown.contains(
            "| `src/payments/client.rs:88` | `loop { retry(); }` | not found: the excerpt is not \
             in `src/payments/client.rs` |"
        ),
        "{markdown}"
    );
    assert!(
        markdown.contains("| `lb access log, 12th 14:02-14:09` | - | no line of the project |"),
        "{markdown}"
    );
    let html = fs::read_to_string(views.path().join("final-report.html")).unwrap();
    assert!(
        html.contains("<th>Checked by okstra</th>")
            && html.contains(r#"<span class="badge unanchored">unanchored</span>"#),
        "{html}"
    );
}

/// `okstra validate` only reads: on a run whose snapshot record is gone it
/// says the block no longer matches, and takes no snapshot to check the
/// evidence against.
#[test]
fn validate_takes_no_snapshot_of_a_run_without_one() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture("v2.2-valid"), dir.path());
    fs::remove_file(dir.path().join("state/snapshot.json")).unwrap();
    fs::remove_dir_all(dir.path().join("snapshot")).unwrap();
    let before = crate::support::tree(dir.path());
    let out = validate(dir.path());
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stdout
            .contains("/verification/snapshot: [verification]"),
        "{}",
        out.stdout
    );
    assert_eq!(crate::support::tree(dir.path()), before);
}
