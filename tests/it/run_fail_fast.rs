//! After the preflight, `okstra run` fails fast: a provider whose
//! credentials were refused gets no further attempt in the run, and the
//! first batch of reviewers stops as soon as too few of them can still
//! complete. The fake team logs each model call in `fake/calls.log`.

use std::fs;

use pretty_assertions::assert_eq;

use super::{attempts, run, run_dir, team_project};

fn calls(world: &crate::support::Project) -> Vec<String> {
    fs::read_to_string(world.path("fake/calls.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// claude is refused, codex would answer only after a minute: the quorum
/// (two of two) is lost at claude's ending, so codex is stopped, not waited for.
#[test]
fn a_lost_quorum_stops_the_batch_at_once() {
    let world = team_project();
    let (outcome, code, stderr) = run(
        &world,
        "claude,codex,report-writer",
        &[("FAKE_AUTH_FAIL", "claude"), ("FAKE_SLEEP_CODEX", "60")],
    );
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(outcome["valid"], false);
    let reason = outcome["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("stopped early: at most 1 of the 2 reviewers"),
        "{reason}"
    );
    let run = run_dir(&outcome);
    let codex = &attempts(&run, "codex-worker")[0];
    assert_eq!(codex["ending"], "cancelled", "{codex}");
    assert!(
        codex["detail"]
            .as_str()
            .unwrap()
            .starts_with("stopped early"),
        "{codex}"
    );
    assert_eq!(attempts(&run, "claude-worker")[0]["ending"], "auth");
    assert!(!calls(&world).iter().any(|c| c.ends_with(" report")));
}

/// claude's credentials are refused in the first batch; codex and kimi go
/// on, but claude's report writer is never started: it ends `auth`, "not
/// started", and the run ends without a report.
#[test]
fn an_auth_ending_stops_the_providers_later_attempts() {
    let world = team_project();
    let (outcome, code, stderr) = run(
        &world,
        "claude,codex,kimi,report-writer",
        &[("FAKE_AUTH_FAIL", "claude")],
    );
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        outcome["reason"], "the report writer did not complete",
        "{outcome}"
    );
    let run = run_dir(&outcome);
    let writer = attempts(&run, "report-writer");
    assert_eq!(writer.len(), 1, "{writer:?}");
    assert_eq!(writer[0]["ending"], "auth");
    assert!(
        writer[0]["detail"]
            .as_str()
            .unwrap()
            .starts_with("not started: `claude` ended `auth` earlier in this run"),
        "{writer:?}"
    );
    let calls = calls(&world);
    assert_eq!(
        calls.iter().filter(|c| c.starts_with("claude ")).count(),
        1,
        "{calls:?}"
    );
    assert!(calls.iter().any(|c| c == "kimi reviewer"), "{calls:?}");
}
