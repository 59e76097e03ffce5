//! Integration tests: hostile input, round two — memory. A worker's huge
//! output and huge results, each run through the real binary under a 1 GiB
//! address-space cap (`ulimit -v`), where the first hardening pass aborted
//! (`memory allocation of … bytes failed`): each must now finish cleanly,
//! with one warning line per cut and the attempt or item recorded.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::support::{Project, okstra_path, read_json, team_state_path};

/// The address-space cap the tester used (`ulimit -v`, in KiB): 1 GiB.
const ADDRESS_SPACE_KIB: u32 = 1024 * 1024;

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    /// The `warning:` lines on stderr.
    fn warnings(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|line| line.starts_with("warning: "))
            .collect()
    }
}

/// `okstra <args>` in `project` under the address-space cap, to completion,
/// with `env` added (for the fake CLIs).
fn capped(project: &Project, args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut cmd = project.command("sh");
    cmd.envs(env.iter().copied())
        .arg("-c")
        .arg(format!("ulimit -v {ADDRESS_SPACE_KIB}; exec \"$0\" \"$@\""))
        .arg(okstra_path())
        .args(args);
    let output = crate::support::bounded(cmd).output().unwrap();
    Out {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// A project-analysis run of claude and codex with `external` as lead.
fn analysis(project: &Project) -> String {
    let run = project.render(&[
        "--task-type",
        "project-analysis",
        "--workers",
        "claude,codex,report-writer",
        "--lead-runtime",
        "external",
    ]);
    run.to_str().unwrap().to_owned()
}

#[test]
fn a_worker_printing_a_300_mb_line_is_cut_while_read_and_its_attempt_completes() {
    // 300 MB, as reproduced: past the 256 MiB a log is read of (so its start
    // is skipped); 100 MB: read, and cut to 32 MiB while it streams past.
    for (bytes, cut) in [
        ("300000000", "only its last 256 MiB read"),
        (
            "100000000",
            "1 line longer than 32 MiB cut to that length while reading",
        ),
    ] {
        let project = Project::new();
        project.fake_cli("claude", "workers/long-line.sh");
        let run = analysis(&project);
        let out = capped(
            &project,
            &["dispatch", &run, "--workers", "claude", "--json"],
            &[("FAKE_LINE_BYTES", bytes)],
        );
        assert_eq!(out.code, 0, "{bytes}: {}", out.stderr);
        let summary: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        assert_eq!(summary["allCompleted"], true, "{bytes}: {summary:#}");
        let warnings = out.warnings();
        assert_eq!(warnings.len(), 1, "{bytes}: {}", out.stderr);
        assert!(
            warnings[0].contains("claude-worker.log`: ") && warnings[0].contains(cut),
            "{bytes}: {}",
            warnings[0]
        );
        let state = read_json(&team_state_path(Path::new(&run)));
        let record = &state["dispatches"][0];
        assert_eq!(record["dispatchName"], "claude-worker");
        assert_eq!(record["ending"], "completed", "{bytes}: {record:#}");
        assert_eq!(record["recoveredFrom"], "stream");
        let result = fs::read_to_string(record["resultPath"].as_str().unwrap()).unwrap();
        assert!(result.contains("| F-001 | claude sees it |"), "{result}");
    }
}

/// A 7.6 MB results table: 81 205 short findings citing two things each.
fn big_table() -> String {
    let mut text =
        String::from("# claude\n\n## 1. Findings\n\n| ID | Finding | Evidence |\n|---|---|---|\n");
    let mut n = 0;
    while text.len() < 7_600_000 {
        n += 1;
        let _ = writeln!(
            text,
            "| F-{n:05} | the cache at src/cache.rs:{n} is stale | `src/a.rs:{n}` `cargo test c{n}` |"
        );
    }
    text
}

/// One 10 MB item citing 1.25 million `path:line`s.
fn huge_item() -> String {
    let mut text =
        String::from("# codex\n\n## 1. Findings\n\n| ID | Finding |\n|---|---|\n| F-001 | ");
    for n in 0..1_250_000 {
        let _ = write!(text, "a.rs:{} ", n % 10);
    }
    text.push_str("|\n| F-002 | a sane one at src/b.rs:2 |\n");
    text
}

fn result_path(run: &str, worker: &str) -> String {
    let manifest = read_json(&Path::new(run).join("run-manifest.json"));
    manifest["assignments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["workerId"] == worker)
        .unwrap()["resultPath"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn find<'a>(items: &'a Value, id: &str) -> &'a Value {
    items
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["itemId"] == id)
        .unwrap_or_else(|| panic!("no item {id}"))
}

#[test]
fn a_huge_results_table_and_a_huge_item_are_capped_and_marked_not_aborted() {
    let project = Project::new();
    let run = analysis(&project);
    fs::write(result_path(&run, "claude"), big_table()).unwrap();
    fs::write(result_path(&run, "codex"), huge_item()).unwrap();
    let expect_warnings = |out: &Out, what: &str| {
        assert_eq!(out.code, 0, "{what}: {}", out.stderr);
        let warnings = out.warnings();
        assert_eq!(warnings.len(), 2, "{what}: {}", out.stderr);
        assert!(
            warnings[0].contains("has 81205 items")
                && warnings[0].contains(", over the cap of 500 per result; the 80705")
                && warnings[0].contains(" from line 507 on are left out"),
            "{what}: {}",
            warnings[0]
        );
        assert!(
            warnings[1].starts_with("warning: 1 item of `codex` in `")
                && warnings[1].contains("marked `truncated`; the first, `codex:F-001` (line 7)")
                && warnings[1].contains("and 1250000 citations"),
            "{what}: {}",
            warnings[1]
        );
    };

    let out = capped(&project, &["items", &run, "--json"], &[]);
    expect_warnings(&out, "items");
    let listed: Value = serde_json::from_str(&out.stdout).unwrap();
    let items = &listed["items"];
    assert_eq!(items.as_array().unwrap().len(), 500 + 2);
    let huge = find(items, "codex:F-001");
    assert_eq!(huge["truncated"], true);
    assert_eq!(huge["evidence"].as_array().unwrap().len(), 32);
    assert!(huge["text"].as_str().unwrap().len() <= 8 * 1024 + 3);
    assert_eq!(find(items, "codex:F-002")["truncated"], false);
    assert_eq!(find(items, "claude:F-00500")["truncated"], false);

    let out = capped(&project, &["converge", "classify", &run, "--json"], &[]);
    expect_warnings(&out, "classify");
    let ledger = read_json(&Path::new(&run).join("state/convergence-ledger.json"));
    assert_eq!(ledger["items"].as_array().unwrap().len(), 502);
    assert_eq!(find(&ledger["items"], "codex:F-001")["truncated"], true);
    assert!(
        find(&ledger["items"], "codex:F-002")
            .get("truncated")
            .is_none()
    );

    let out = capped(
        &project,
        &["converge", "plan", &run, "--round", "1", "--json"],
        &[],
    );
    expect_warnings(&out, "plan");
    let plan: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(plan["items"].as_array().unwrap().len(), 502);
    assert_eq!(find(&plan["items"], "codex:F-001")["truncated"], true);
    let prompt = plan["reviewers"][0]["promptPath"].as_str().unwrap();
    assert!(fs::metadata(prompt).unwrap().len() < 4 * 1024 * 1024);
}
