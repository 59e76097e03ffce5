//! Paths recorded in a run manifest, made to work where the run is now.
//!
//! A run manifest stores absolute paths (its `runDir`, and every prompt,
//! Result Path, heartbeat and log path under it). A run folder that was
//! moved or copied (a renamed project, an archive, a fixture) keeps them
//! pointing at the old place, and for a copy the old place may still exist
//! and hold another run's files. So every command reads them through one
//! rule: a path under the recorded `runDir` is taken from the folder the
//! run is in now; a relative path is taken from that folder too; any other
//! absolute path is used as it is. No file is looked at to decide.

use std::path::{Path, PathBuf};

/// `recorded`, from a manifest whose `runDir` was `recorded_root`, for the
/// run that now lives in `run_dir`.
/// Takes the recorded path by value: it is returned as it is in the usual
/// case, a run read where it was made.
pub fn reroot(recorded: PathBuf, recorded_root: Option<&Path>, run_dir: &Path) -> PathBuf {
    if recorded.is_relative() {
        return run_dir.join(recorded);
    }
    if recorded_root == Some(run_dir) {
        return recorded;
    }
    match recorded_root.and_then(|root| recorded.strip_prefix(root).ok()) {
        Some(suffix) if suffix.as_os_str().is_empty() => run_dir.to_path_buf(),
        Some(suffix) => run_dir.join(suffix),
        None => recorded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_the_run_and_nothing_else() {
        let here = Path::new("/tmp/moved-run");
        let old = Some(Path::new("/gone/run-1"));
        let reroot = |recorded: &str, root| reroot(recorded.into(), root, here);
        assert_eq!(
            reroot("/gone/run-1/results/a.md", old),
            here.join("results/a.md")
        );
        assert_eq!(reroot("/gone/run-1", old), here);
        assert_eq!(reroot("results/a.md", None), here.join("results/a.md"));
        assert_eq!(reroot("/elsewhere/a.md", old), Path::new("/elsewhere/a.md"));
        // A sibling whose name merely starts like the run folder is not in it.
        assert_eq!(
            reroot("/gone/run-10/a.md", old),
            Path::new("/gone/run-10/a.md")
        );
        assert_eq!(
            reroot("/gone/run-1/a.md", None),
            Path::new("/gone/run-1/a.md")
        );
    }
}
