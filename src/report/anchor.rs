//! Where a finding points in the project: its anchors, each a path relative
//! to the project root and a line range.
//!
//! [`of_evidence`] is the one place anchors come from. Today it reads the
//! `path:line` / `path:a-b` citations in a source item's evidence (the
//! worker result or the convergence ledger). When items carry checked
//! anchors (`anchorStatus`, per-anchor path, lines and excerpt), this is the
//! function that switches to them; SARIF, the gate and the pull-request
//! review only ever see [`Anchor`]s.
//!
//! A cited path is kept only when it names a place inside the project: an
//! absolute path is made relative to the project root when it lies under it
//! and dropped otherwise; `..`, empty and `.` components, and characters that
//! would break a Markdown code span or a URL, drop it too. Line numbers
//! start at 1; a range written backwards is read forwards.

use std::path::{Component, Path};

use crate::items::{Evidence, EvidenceKind};

/// One place a finding points at.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Anchor {
    /// Relative to the project root, `/`-separated, no `.` or `..`.
    pub path: String,
    /// First line, 1-based.
    pub start: u32,
    /// Last line (equal to `start` for one line).
    pub end: u32,
}

impl Anchor {
    /// `path:start` or `path:start-end`.
    pub fn label(&self) -> String {
        if self.start == self.end {
            format!("{}:{}", self.path, self.start)
        } else {
            format!("{}:{}-{}", self.path, self.start, self.end)
        }
    }
}

/// The anchors an item's evidence gives, in citation order, duplicates
/// dropped. `project_root` (absolute) lets an absolute citation inside the
/// project count.
pub fn of_evidence(evidence: &[Evidence], project_root: Option<&Path>) -> Vec<Anchor> {
    let mut anchors: Vec<Anchor> = Vec::new();
    for cited in evidence {
        if cited.kind != EvidenceKind::PathLine {
            continue;
        }
        if let Some(anchor) = parse(&cited.text, project_root)
            && !anchors.contains(&anchor)
        {
            anchors.push(anchor);
        }
    }
    anchors
}

/// `src/a.rs:12` or `src/a.rs:12-15` as an anchor inside the project.
pub fn parse(text: &str, project_root: Option<&Path>) -> Option<Anchor> {
    let (path, lines) = text.rsplit_once(':')?;
    let (start, end) = if let Some((start, end)) = lines.split_once('-') {
        (start.parse::<u32>().ok()?, end.parse::<u32>().ok()?)
    } else {
        let line = lines.parse::<u32>().ok()?;
        (line, line)
    };
    if start == 0 || end == 0 {
        return None;
    }
    let path = relative(path, project_root)?;
    Some(Anchor {
        path,
        start: start.min(end),
        end: start.max(end),
    })
}

/// Characters a kept path may hold: enough for real source trees, none that
/// breaks a code span, a link or a shell word.
fn is_path_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '/' | '.' | '_' | '-' | '+' | '@' | '~' | '=' | ',')
}

/// `path` relative to the project root, or `None` when it is not a plain
/// path inside the project.
fn relative(path: &str, project_root: Option<&Path>) -> Option<String> {
    if path.is_empty() || !path.chars().all(is_path_char) {
        return None;
    }
    let as_path = Path::new(path);
    let inside = if as_path.is_absolute() {
        as_path.strip_prefix(project_root?).ok()?
    } else {
        as_path
    };
    let mut parts: Vec<&str> = Vec::new();
    for component in inside.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str()?),
            Component::CurDir if parts.is_empty() => {}
            _ => return None,
        }
    }
    if parts.is_empty() {
        return None;
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cite(text: &str) -> Evidence {
        Evidence {
            kind: EvidenceKind::PathLine,
            text: text.to_owned(),
        }
    }

    #[test]
    fn citations_inside_the_project_become_anchors() {
        let root = Path::new("/work/project");
        let evidence = [
            cite("src/a.rs:12"),
            cite("./src/b.rs:9-3"),
            cite("/work/project/src/c.rs:4"),
            cite("src/a.rs:12"),
            Evidence {
                kind: EvidenceKind::Command,
                text: "cargo test x".to_owned(),
            },
        ];
        let anchors = of_evidence(&evidence, Some(root));
        let labels: Vec<String> = anchors.iter().map(Anchor::label).collect();
        assert_eq!(labels, ["src/a.rs:12", "src/b.rs:3-9", "src/c.rs:4"]);
    }

    #[test]
    fn paths_outside_the_project_or_odd_ones_are_dropped() {
        let root = Path::new("/work/project");
        for text in [
            "/etc/passwd:1",
            "../secret.rs:3",
            "src/../../x.rs:3",
            "src/a.rs:0",
            "src/a.rs:x",
            "src/a`b.rs:4",
            "src/[a](b).rs:4",
            ":4",
        ] {
            assert_eq!(parse(text, Some(root)), None, "{text}");
        }
        assert_eq!(parse("/work/project/a.rs:1", None), None);
    }
}
