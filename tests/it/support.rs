//! Shared helpers: the real binary, temp projects, bounded waits.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use assert_cmd::Command;

/// The `okstra` binary under test, with a clean environment for okstra's own
/// variables so the developer's settings never leak into a test.
pub fn okstra() -> Command {
    let mut cmd = Command::cargo_bin("okstra").expect("the okstra binary is built for tests");
    for name in [
        "OKSTRA_DEFAULT_LEAD_MODEL",
        "OKSTRA_DEFAULT_CLAUDE_MODEL",
        "OKSTRA_DEFAULT_CODEX_MODEL",
        "OKSTRA_DEFAULT_ANTIGRAVITY_MODEL",
        "OKSTRA_DEFAULT_REPORT_WRITER_MODEL",
        "OKSTRA_DEFAULT_EXECUTOR",
        "CLAUDECODE",
    ] {
        cmd.env_remove(name);
    }
    cmd
}

/// Path of the built binary (for tests that spawn it themselves).
pub fn okstra_path() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_okstra"))
}

/// The repository root (fixtures, examples).
pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Poll `check` every 10 ms until it returns `Some`, or panic after `limit`.
pub fn wait_for<T>(limit: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The team state file of a run folder (`state/team-state-<runId>.json`).
pub fn team_state_path(run: &Path) -> PathBuf {
    std::fs::read_dir(run.join("state"))
        .expect("a run folder has a state folder")
        .flatten()
        .map(|entry| entry.path())
        .find(|path| {
            path.file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with("team-state-"))
        })
        .expect("a rendered run has a team state")
}
