//! What a run analysed, in git terms: the commit the project was at when the
//! run was rendered ([`Source`]), and for a run scoped to a change
//! (`--diff BASE...HEAD`) the change itself ([`Change`]): its commits, its
//! diff for the brief, and the changed line ranges a finding is checked
//! against (a claim outside them is pre-existing).
//!
//! Both are recorded in the run manifest at render time (`source`,
//! `change`), so the gate, SARIF and the pull-request review judge the run
//! by the tree it saw, not by whatever is checked out later. git runs
//! through [`crate::git::Git`] (no hook, fsmonitor or filter of anybody's,
//! no terminal), its output read up to a cap.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

/// Most bytes of `git diff` okstra reads; a larger change is refused.
const MAX_DIFF_BYTES: usize = 32 * 1024 * 1024;
/// Most bytes of the diff put into the brief; the rest is named, not shown.
pub const MAX_BRIEF_DIFF_BYTES: usize = 256 * 1024;

/// The commit a run analysed (run manifest `source`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    /// `git rev-parse HEAD` in the project root.
    pub commit: String,
    /// Whether the working tree matched that commit (no staged, unstaged or
    /// untracked change outside `.okstra/`).
    pub clean: bool,
    /// Where the project lies in its repository (`git rev-parse
    /// --show-prefix`: `services/api/`, or empty at the top): what makes a
    /// project path a repository path, as code scanning and a pull request
    /// name files. `None` in a run recorded before okstra kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
}

/// A change a run is scoped to (run manifest `change`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    /// As given: `BASE...HEAD`.
    pub spec: String,
    pub base_commit: String,
    pub head_commit: String,
    /// Where `HEAD` left `BASE`: the diff is taken from here, as a pull
    /// request's is.
    pub merge_base: String,
    /// Every changed file with the new-side line ranges its hunks changed.
    pub files: Vec<ChangedFile>,
}

/// One file of a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangedFile {
    /// Relative to the project root, `/`-separated.
    pub path: String,
    /// `[first, last]` line ranges (1-based, inclusive) of the head side
    /// that the change added or modified; a pure deletion is the line it
    /// left behind.
    pub hunks: Vec<[u32; 2]>,
}

impl Change {
    /// Whether `path` lines `start..=end` meet a changed hunk.
    pub fn touches(&self, path: &str, start: u32, end: u32) -> bool {
        self.files
            .iter()
            .filter(|file| file.path == path)
            .flat_map(|file| &file.hunks)
            .any(|[first, last]| start <= *last && *first <= end)
    }
}

/// A change resolved at render time: the record and the brief's section.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub change: Change,
    /// Markdown appended to the brief.
    pub brief_section: String,
}

/// The commit `project_root` is at and whether its tree is clean; `None`
/// when it is not a git work tree (or git is missing).
pub fn source(project_root: &Path) -> Option<Source> {
    let commit = git(project_root, &["rev-parse", "--verify", "-q", "HEAD"]).ok()?;
    let commit = commit.trim().to_owned();
    if commit.is_empty() {
        return None;
    }
    let status = git(
        project_root,
        &[
            "status",
            "--porcelain",
            "--untracked-files=normal",
            "--",
            ".",
            ":(exclude).okstra",
        ],
    )
    .ok()?;
    let prefix = git(project_root, &["rev-parse", "--show-prefix"])
        .ok()
        .map(|prefix| prefix.trim_end_matches('\n').to_owned());
    Some(Source {
        commit,
        clean: status.trim().is_empty(),
        prefix,
    })
}

/// The bytes of `path` (relative, `/`-separated) at `commit` in the git
/// work tree `project_root`; `None` when git cannot show it.
pub fn file_at(project_root: &Path, commit: &str, path: &str) -> Option<String> {
    if !commit.bytes().all(|b| b.is_ascii_hexdigit()) || path.starts_with('-') {
        return None;
    }
    git(
        project_root,
        // `./`: the path is the project's, which may lie in a subfolder of
        // its repository.
        &["cat-file", "blob", &format!("{commit}:./{path}")],
    )
    .ok()
}

/// Resolve `spec` (`BASE...HEAD`, or `BASE` for `BASE...HEAD`) in
/// `project_root`. The head must be the commit checked out: the workers
/// read the working tree, so a diff of another commit would not be what
/// they see.
pub fn resolve(spec: &str, project_root: &Path) -> Result<Resolved> {
    let (base, head) = match spec.split_once("...") {
        Some((base, head)) => (base, if head.is_empty() { "HEAD" } else { head }),
        None => (spec, "HEAD"),
    };
    if base.is_empty() || !is_revision(base) || !is_revision(head) {
        bail!(
            "invalid `--diff` value `{spec}`: expected `BASE...HEAD` (two revisions, such as \
             `origin/main...HEAD`)"
        );
    }
    let commit = |revision: &str| -> Result<String> {
        let out = git(
            project_root,
            &[
                "rev-parse",
                "--verify",
                "-q",
                &format!("{revision}^{{commit}}"),
            ],
        )
        .with_context(|| {
            format!(
                "invalid `--diff` value `{spec}`: `{revision}` is not a commit in `{}`",
                project_root.display()
            )
        })?;
        Ok(out.trim().to_owned())
    };
    let base_commit = commit(base)?;
    let head_commit = commit(head)?;
    let checked_out = commit("HEAD")?;
    if head_commit != checked_out {
        bail!(
            "invalid `--diff` value `{spec}`: its head `{head}` is `{}` but the project has `{}` \
             checked out; check the head out first (the workers read the working tree)",
            short(&head_commit),
            short(&checked_out)
        );
    }
    let merge_base = git(project_root, &["merge-base", &base_commit, &head_commit])
        .with_context(|| {
            format!("invalid `--diff` value `{spec}`: `{base}` and `{head}` share no history")
        })?
        .trim()
        .to_owned();
    let range = format!("{merge_base}..{head_commit}");
    let flags = ["diff", "--no-color", "--no-ext-diff", "--no-textconv"];
    let unified = git(
        project_root,
        &[&flags[..], &["--unified=0", &range]].concat(),
    )
    .context("cannot read the change's hunks")?;
    let files = hunks(&unified);
    let text = git(
        project_root,
        &[&flags[..], &["--stat", "--patch", &range]].concat(),
    )
    .context("cannot read the change's diff")?;
    let change = Change {
        spec: spec.to_owned(),
        base_commit,
        head_commit,
        merge_base,
        files,
    };
    let brief_section = brief_section(&change, &text);
    Ok(Resolved {
        change,
        brief_section,
    })
}

/// A revision name okstra passes to git: no option, no whitespace, no
/// range of its own.
fn is_revision(text: &str) -> bool {
    !text.is_empty()
        && !text.starts_with('-')
        && !text.contains("..")
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-~^@{}".contains(c))
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

/// The brief's section for a change: what it is, the rule for pre-existing
/// claims, and the diff (cut at [`MAX_BRIEF_DIFF_BYTES`]).
fn brief_section(change: &Change, diff: &str) -> String {
    let cut = diff.len() > MAX_BRIEF_DIFF_BYTES;
    let shown = crate::fsread::clip(diff, MAX_BRIEF_DIFF_BYTES);
    // A fence longer than any backtick run in the diff.
    let longest = shown.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let mut section = format!(
        "\n\n## The change under review\n\nThis run is scoped to the change `{}`: from `{}` \
         (where the head left the base) to `{}`, {} file{}. Review the change and what it \
         affects. Cite `path:line` of the head side; a claim whose lines lie outside the \
         changed hunks is reported as pre-existing, and does not fail the change's gate.\n\n",
        change.spec,
        short(&change.merge_base),
        short(&change.head_commit),
        change.files.len(),
        if change.files.len() == 1 { "" } else { "s" },
    );
    if cut {
        let _ = write!(
            section,
            "The diff is {} bytes; the first {MAX_BRIEF_DIFF_BYTES} follow. Read the rest with \
             `git diff {}..{}`.\n\n",
            diff.len(),
            short(&change.merge_base),
            short(&change.head_commit)
        );
    }
    section.push_str(&fence);
    section.push_str("diff\n");
    section.push_str(&shown);
    if !shown.ends_with('\n') {
        section.push('\n');
    }
    section.push_str(&fence);
    section.push('\n');
    section
}

/// The changed head-side line ranges of a `git diff --unified=0`, per file.
pub fn hunks(diff: &str) -> Vec<ChangedFile> {
    let mut files: Vec<ChangedFile> = Vec::new();
    let mut current: Option<usize> = None;
    for line in diff.lines() {
        if let Some(path) = line.strip_prefix("+++ ") {
            current = path.strip_prefix("b/").map(|path| {
                files.push(ChangedFile {
                    path: path.trim_end().to_owned(),
                    hunks: Vec::new(),
                });
                files.len() - 1
            });
        } else if let Some(header) = line.strip_prefix("@@ ")
            && let (Some(index), Some(range)) = (current, new_range(header))
        {
            files[index].hunks.push(range);
        }
    }
    files.retain(|file| !file.hunks.is_empty());
    files
}

/// `-a,b +c,d @@ …` → the head side's changed lines `[c, c+d-1]`, or the
/// line a deletion left behind (`d` = 0).
fn new_range(header: &str) -> Option<[u32; 2]> {
    let new = header
        .split_whitespace()
        .find(|part| part.starts_with('+'))?;
    let new = &new[1..];
    let (start, count) = match new.split_once(',') {
        Some((start, count)) => (start.parse::<u32>().ok()?, count.parse::<u32>().ok()?),
        None => (new.parse::<u32>().ok()?, 1),
    };
    if count == 0 {
        let line = start.max(1);
        return Some([line, line]);
    }
    Some([start, start + count - 1])
}

/// Run git in `root` (through [`crate::git::Git`]: no hook, fsmonitor,
/// filter or external diff of anybody's runs) and return its stdout, at
/// most [`MAX_DIFF_BYTES`].
fn git(root: &Path, args: &[&str]) -> Result<String> {
    let stdout = crate::git::Git::at(root)
        .env("LC_ALL", "C")
        .run(args)
        .map_err(anyhow::Error::new)?;
    if stdout.len() > MAX_DIFF_BYTES {
        bail!(
            "`git {}` printed more than {MAX_DIFF_BYTES} bytes",
            args.first().copied().unwrap_or_default()
        );
    }
    Ok(String::from_utf8_lossy(&stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunks_are_the_head_sides_changed_lines() {
        let diff = "\
diff --git a/src/a.py b/src/a.py
--- a/src/a.py
+++ b/src/a.py
@@ -3,0 +4,2 @@ def f():
+x
+y
@@ -10 +12 @@
-a
+b
@@ -20,2 +21,0 @@
-gone
-gone
diff --git a/old.txt b/old.txt
--- a/old.txt
+++ /dev/null
@@ -1,2 +0,0 @@
-a
-b
";
        let files = hunks(diff);
        assert_eq!(
            files,
            vec![ChangedFile {
                path: "src/a.py".into(),
                hunks: vec![[4, 5], [12, 12], [21, 21]],
            }]
        );
        let change = Change {
            spec: "main...HEAD".into(),
            base_commit: "b".into(),
            head_commit: "h".into(),
            merge_base: "m".into(),
            files,
        };
        assert!(change.touches("src/a.py", 1, 4));
        assert!(change.touches("src/a.py", 12, 12));
        assert!(!change.touches("src/a.py", 6, 11));
        assert!(!change.touches("src/b.py", 4, 4));
    }

    #[test]
    fn revisions_are_plain_names() {
        for ok in [
            "main",
            "origin/main",
            "HEAD~2",
            "v1.0",
            "abc123",
            "HEAD^{commit}",
        ] {
            assert!(is_revision(ok), "{ok}");
        }
        for bad in ["", "-p", "--output=x", "a..b", "a b", "a;b"] {
            assert!(!is_revision(bad), "{bad}");
        }
    }

    #[test]
    fn the_brief_fences_the_diff_past_its_backticks() {
        let change = Change {
            spec: "main...HEAD".into(),
            base_commit: "b".into(),
            head_commit: "h".into(),
            merge_base: "m".into(),
            files: Vec::new(),
        };
        let section = brief_section(&change, "+```rust\n+fn x() {}\n");
        assert!(section.contains("\n````diff\n+```rust\n"), "{section}");
        assert!(section.ends_with("````\n"), "{section}");
    }
}
