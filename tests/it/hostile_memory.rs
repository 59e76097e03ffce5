//! Integration tests: hostile input, round two — memory. A worker's huge
//! output and huge results, each run through the real binary under a 1 GiB
//! address-space cap (`ulimit -v`), where the first hardening pass aborted
//! (`memory allocation of … bytes failed`): each must now finish cleanly,
//! with one warning line per cut and the attempt or item recorded.

use std::fs;
use std::path::Path;
use std::time::Duration;

use crate::support::{Project, okstra_path, read_json, team_state_path};

/// Wall-time bound on each command: the cut runs take a few seconds.
const LIMIT: Duration = Duration::from_mins(1);
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
    let output = assert_cmd::Command::from_std(cmd)
        .timeout(LIMIT)
        .output()
        .unwrap();
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
