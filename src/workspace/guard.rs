//! What a native Executor must leave untouched: the user's working tree,
//! index and refs.
//!
//! A native Executor runs in the host's own session, which okstra cannot
//! confine; its prompt names its copy, and okstra checks afterwards that it
//! kept to it. [`take`] records the user's repository before the attempt;
//! [`changed`] names what differs after it. The working tree is compared by
//! its tree (tracked and untracked files that are not ignored, taken on a
//! scratch index as a snapshot is), the index by its entries (`git ls-files
//! --stage`: mode, object and path, not the stat data a `git status`
//! refreshes), `HEAD` by what it names, and every ref outside okstra's own.

use std::path::Path;

use crate::digest::sha256_hex;
use crate::git::{self, Git};
use crate::run::team_state::Guard;

/// Refs okstra itself writes: never part of the comparison.
const OWN_REFS: [&str; 2] = ["refs/okstra/", "refs/heads/okstra/"];

/// The user's repository at `project` now. `scratch` is a folder of ours
/// for the scratch index.
pub fn take(project: &Path, scratch: &Path) -> Result<Guard, git::Error> {
    let git = Git::at(project);
    let tree = super::snapshot::tree_of_working_tree(project, scratch)?;
    let symbolic = match git.lines(["symbolic-ref", "-q", "HEAD"]) {
        Ok(lines) => lines.into_iter().next().unwrap_or_default(),
        // Exit 1 without a word: a detached `HEAD`.
        Err(git::Error::Failed { status, stderr, .. })
            if status == "exit 1" && stderr.trim().is_empty() =>
        {
            String::new()
        }
        Err(err) => return Err(err),
    };
    let commit = git.commit("HEAD")?.unwrap_or_default();
    let index = git.run(["ls-files", "--stage", "-z"])?;
    let refs: String = git
        .lines(["for-each-ref", "--format=%(refname) %(objectname)"])?
        .into_iter()
        .filter(|line| !OWN_REFS.iter().any(|own| line.starts_with(own)))
        .map(|line| line + "\n")
        .collect();
    Ok(Guard {
        tree,
        head: format!("{symbolic} {commit}").trim().to_owned(),
        index: sha256_hex(&index),
        refs: sha256_hex(refs.as_bytes()),
    })
}

/// What differs between `before` and `after`, in words (empty: nothing).
pub fn changed(before: &Guard, after: &Guard) -> Vec<&'static str> {
    let mut changed = Vec::new();
    if before.tree != after.tree {
        changed.push("its working tree");
    }
    if before.index != after.index {
        changed.push("its index");
    }
    if before.head != after.head {
        changed.push("its `HEAD`");
    }
    if before.refs != after.refs {
        changed.push("its refs");
    }
    changed
}
