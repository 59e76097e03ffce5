//! Checking anchors against a snapshot: does the file exist there, is the
//! line range inside it, and is the excerpt there (after whitespace is
//! normalised)?
//!
//! - `verified`: the file and the range exist, and the excerpt (if any) is
//!   found on lines that overlap the range;
//! - `moved`: the excerpt is found elsewhere in the file (also when the
//!   range itself does not exist): the lines it was found on are recorded
//!   beside the ones written, which stay as they are;
//! - `unanchored`: the path leads outside the project, the file is not in
//!   the snapshot (or is binary, a folder, too large), the range is not in
//!   the file and there is no excerpt to find, or the excerpt is nowhere in
//!   the file. The reason is recorded.
//!
//! A [`Checker`] reads each file once per check and keeps its normalised
//! text, so a thousand anchors over a few files cost a few reads.

use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;

use memchr::memmem;

use super::Checked;
use super::grammar::{Anchor, lines};
use super::snapshot::{Snapshot, normalise};
use crate::digest::sha256_hex;
use crate::vocab::AnchorStatus;

/// How far into a file a NUL byte makes it binary (git's own heuristic).
const BINARY_PROBE: usize = 8000;
/// An excerpt shorter than this (in non-space characters) identifies
/// nothing (`x`, `}`) and is ignored.
const MIN_EXCERPT: usize = 3;

/// A project file as the checker searches it.
struct Text {
    /// Lines of the file.
    line_count: u32,
    /// The non-empty lines, each whitespace-normalised, joined by one space.
    joined: String,
    /// For each non-empty line: its offset in `joined` and its number.
    marks: Vec<(usize, u32)>,
}

impl Text {
    fn new(bytes: &[u8]) -> Text {
        let text = String::from_utf8_lossy(bytes);
        let mut joined = String::with_capacity(text.len());
        let mut marks = Vec::new();
        let mut line_count = 0u32;
        for (index, line) in text.lines().enumerate() {
            line_count = u32::try_from(index + 1).unwrap_or(u32::MAX);
            let mut words = line.split_whitespace().peekable();
            if words.peek().is_none() {
                continue;
            }
            if !joined.is_empty() {
                joined.push(' ');
            }
            marks.push((joined.len(), line_count));
            for (n, word) in words.enumerate() {
                if n > 0 {
                    joined.push(' ');
                }
                joined.push_str(word);
            }
        }
        Text {
            line_count,
            joined,
            marks,
        }
    }

    /// The line that byte `offset` of `joined` is on.
    fn line_at(&self, offset: usize) -> u32 {
        let index = self.marks.partition_point(|(start, _)| *start <= offset);
        self.marks[index.saturating_sub(1)].1
    }

    /// The byte range of `joined` holding lines `start..=end`.
    fn span(&self, start: u32, end: u32) -> Option<(usize, usize)> {
        let first = self.marks.partition_point(|(_, line)| *line < start);
        let last = self.marks.partition_point(|(_, line)| *line <= end);
        if first >= last {
            return None;
        }
        let from = self.marks[first].0;
        let to = self
            .marks
            .get(last)
            .map_or(self.joined.len(), |(next, _)| next.saturating_sub(1));
        Some((from, to))
    }

    /// Every place `needle` is, as (first line, last line).
    fn find_all(&self, needle: &str) -> Vec<(u32, u32)> {
        memmem::find_iter(self.joined.as_bytes(), needle.as_bytes())
            .map(|at| (self.line_at(at), self.line_at(at + needle.len() - 1)))
            .collect()
    }

    /// Whether `needle` is on lines that overlap `start..=end` (the span is
    /// widened by the needle's length so an excerpt may run past the range).
    fn found_in(&self, needle: &str, start: u32, end: u32) -> bool {
        let Some((from, to)) = self.span(start, end) else {
            return false;
        };
        let from = from.saturating_sub(needle.len());
        let to = (to + needle.len()).min(self.joined.len());
        let mut at = from;
        while let Some(offset) = memmem::find(&self.joined.as_bytes()[at..to], needle.as_bytes()) {
            let (first, last) = (
                self.line_at(at + offset),
                self.line_at(at + offset + needle.len() - 1),
            );
            if first <= end && last >= start {
                return true;
            }
            at += offset + 1;
        }
        false
    }
}

/// Text with its whitespace runs made one space, trimmed.
fn normalise_space(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Checks anchors against one snapshot of one project.
pub struct Checker<'a> {
    snapshot: &'a dyn Snapshot,
    /// The project root as workers were told it (an absolute anchor under
    /// it is taken as relative to it).
    project_root: &'a Path,
    files: HashMap<String, Result<Rc<Text>, String>>,
}

impl<'a> Checker<'a> {
    pub fn new(snapshot: &'a dyn Snapshot, project_root: &'a Path) -> Checker<'a> {
        Checker {
            snapshot,
            project_root,
            files: HashMap::new(),
        }
    }

    /// Read ahead every file `anchors` name.
    pub fn prefetch<'b>(&self, anchors: impl IntoIterator<Item = &'b Anchor>) {
        let paths: Vec<String> = anchors
            .into_iter()
            .filter_map(|a| self.project_path(&a.path).ok())
            .filter(|p| !self.files.contains_key(p))
            .collect();
        let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
        self.snapshot.prefetch(&paths);
    }

    /// `written` as a path inside the project, or why it is not one.
    fn project_path(&self, written: &str) -> Result<String, String> {
        let outside = || format!("`{written}` leads outside the project");
        let relative = if written.starts_with('/') {
            let root = self.project_root.to_string_lossy();
            let root = root.trim_end_matches('/');
            written
                .strip_prefix(root)
                .and_then(|rest| rest.strip_prefix('/'))
                .ok_or_else(outside)?
        } else {
            written
        };
        match normalise(relative) {
            Some(path) if !path.is_empty() => Ok(path),
            Some(_) => Err(format!("`{written}` names no file")),
            None => Err(outside()),
        }
    }

    /// The file's text, read once.
    fn text(&mut self, path: &str, written: &str) -> Result<Rc<Text>, String> {
        if let Some(found) = self.files.get(path) {
            return found.clone();
        }
        let read = self
            .snapshot
            .read(path)
            .map_err(|why| why.reason(written))
            .and_then(|bytes| {
                let probe = &bytes[..bytes.len().min(BINARY_PROBE)];
                if memchr::memchr(0, probe).is_some() {
                    Err(format!("`{written}` is a binary file"))
                } else {
                    Ok(Rc::new(Text::new(&bytes)))
                }
            });
        self.files.insert(path.to_owned(), read.clone());
        read
    }

    /// Check one anchor.
    pub fn check(&mut self, anchor: &Anchor) -> Checked {
        let excerpt = anchor
            .excerpt
            .as_deref()
            .map(normalise_space)
            .filter(|e| e.chars().filter(|c| !c.is_whitespace()).count() >= MIN_EXCERPT);
        let mut checked = Checked {
            path: anchor.path.clone(),
            lines: anchor.lines(),
            excerpt: anchor.excerpt.clone(),
            excerpt_sha256: excerpt.as_deref().map(|e| sha256_hex(e.as_bytes())),
            status: AnchorStatus::Unanchored,
            found_at: None,
            reason: None,
        };
        let text = match self
            .project_path(&anchor.path)
            .and_then(|path| self.text(&path, &anchor.path))
        {
            Ok(text) => text,
            Err(reason) => {
                checked.reason = Some(reason);
                return checked;
            }
        };
        let range_problem = if anchor.start == 0 {
            Some("lines start at 1".to_owned())
        } else if anchor.start > anchor.end {
            Some(format!(
                "the range {} ends before it starts",
                anchor.lines()
            ))
        } else if anchor.end > text.line_count {
            Some(format!(
                "line {} is past the end of `{}` ({} lines)",
                anchor.end, anchor.path, text.line_count
            ))
        } else {
            None
        };
        let Some(needle) = excerpt else {
            match range_problem {
                None => checked.status = AnchorStatus::Verified,
                Some(problem) => checked.reason = Some(problem),
            }
            return checked;
        };
        if range_problem.is_none() && text.found_in(&needle, anchor.start, anchor.end) {
            checked.status = AnchorStatus::Verified;
            return checked;
        }
        let nearest = text
            .find_all(&needle)
            .into_iter()
            .min_by_key(|(first, _)| first.abs_diff(anchor.start));
        if let Some((first, last)) = nearest {
            checked.status = AnchorStatus::Moved;
            checked.found_at = Some(lines(first, last));
        } else {
            let mut reason = format!("the excerpt is not in `{}`", anchor.path);
            if let Some(problem) = range_problem {
                reason = format!("{problem}, and {reason}");
            }
            checked.reason = Some(reason);
        }
        checked
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::anchors::grammar::parse;
    use crate::anchors::snapshot::DirSnapshot;

    const SOURCE: &str = "\
def reserve(self, sku, quantity):
    # Check first, then take the lock.
    if self.available(sku)   <  quantity:
        return False

    with self._lock:
        self._reserved[sku] = self._reserved.get(sku, 0) + quantity
    return True
";

    fn checked(text: &str) -> Vec<Checked> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/inv.py"), SOURCE).unwrap();
        let snapshot = DirSnapshot::new(dir.path()).unwrap();
        let mut checker = Checker::new(&snapshot, dir.path());
        let anchors = parse(text);
        checker.prefetch(&anchors);
        anchors.iter().map(|a| checker.check(a)).collect()
    }

    fn one(text: &str) -> (AnchorStatus, Option<String>, Option<String>) {
        let found = checked(text).remove(0);
        (found.status, found.found_at, found.reason)
    }

    #[test]
    fn a_range_and_its_excerpt_verify_after_whitespace_is_normalised() {
        assert_eq!(
            one("src/inv.py:3 `if self.available(sku) < quantity:`"),
            (AnchorStatus::Verified, None, None)
        );
        // An excerpt that runs over several lines of the range.
        assert_eq!(
            one("src/inv.py:6-7 `with self._lock: self._reserved[sku] =`"),
            (AnchorStatus::Verified, None, None)
        );
        assert_eq!(
            one("./src/inv.py:1-8"),
            (AnchorStatus::Verified, None, None)
        );
        // Trivial excerpts identify nothing and are ignored.
        assert_eq!(
            one("src/inv.py:2 `}`"),
            (AnchorStatus::Verified, None, None)
        );
    }

    #[test]
    fn an_excerpt_elsewhere_in_the_file_is_moved_with_its_lines() {
        assert_eq!(
            one("src/inv.py:1 `return True`"),
            (AnchorStatus::Moved, Some("8".to_owned()), None)
        );
        // A range past the end whose excerpt is in the file: moved too.
        assert_eq!(
            one("src/inv.py:40-41 `with self._lock:`"),
            (AnchorStatus::Moved, Some("6".to_owned()), None)
        );
    }

    #[test]
    fn what_does_not_resolve_says_why() {
        let reason = |text: &str| {
            let (status, _, reason) = one(text);
            assert_eq!(status, AnchorStatus::Unanchored, "{text}");
            reason.unwrap()
        };
        assert_eq!(
            reason("src/inv.py:9"),
            "line 9 is past the end of `src/inv.py` (8 lines)"
        );
        assert_eq!(reason("src/inv.py:0"), "lines start at 1");
        assert_eq!(
            reason("src/inv.py:5-3"),
            "the range 5-3 ends before it starts"
        );
        assert_eq!(
            reason("src/inv.py:3 `stock -= quantity`"),
            "the excerpt is not in `src/inv.py`"
        );
        assert_eq!(
            reason("src/inv.py:30 `stock -= quantity`"),
            "line 30 is past the end of `src/inv.py` (8 lines), and the excerpt is not in \
             `src/inv.py`"
        );
        assert_eq!(
            reason("src/gone.py:1"),
            "`src/gone.py` is not in the run's snapshot of the project"
        );
        assert_eq!(
            reason("../etc/passwd:1"),
            "`../etc/passwd` leads outside the project"
        );
        assert_eq!(
            reason("/etc/passwd:1"),
            "`/etc/passwd` leads outside the project"
        );
    }

    #[test]
    fn a_binary_file_is_not_an_anchor() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("logo.png"),
            b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR",
        )
        .unwrap();
        let snapshot = DirSnapshot::new(dir.path()).unwrap();
        let mut checker = Checker::new(&snapshot, dir.path());
        let found = checker.check(&parse("logo.png:1")[0]);
        assert_eq!(found.status, AnchorStatus::Unanchored);
        assert_eq!(found.reason.unwrap(), "`logo.png` is a binary file");
    }

    #[test]
    fn an_absolute_path_inside_the_project_is_taken_as_relative() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.py"), "x = 1\n").unwrap();
        let snapshot = DirSnapshot::new(dir.path()).unwrap();
        let mut checker = Checker::new(&snapshot, dir.path());
        let text = format!("{}/a.py:1 `x = 1`", dir.path().display());
        assert_eq!(
            checker.check(&parse(&text)[0]).status,
            AnchorStatus::Verified
        );
        let sibling = format!("{}-other/a.py:1", dir.path().display());
        assert_eq!(
            checker.check(&parse(&sibling)[0]).reason.unwrap(),
            format!(
                "`{}-other/a.py` leads outside the project",
                dir.path().display()
            )
        );
    }

    #[test]
    fn text_maps_offsets_to_lines() {
        let text = Text::new(b"a  b\n\n  c\nd\n");
        assert_eq!(text.joined, "a b c d");
        assert_eq!(text.line_count, 4);
        assert_eq!(text.find_all("b c"), vec![(1, 3)]);
        assert!(text.found_in("c d", 4, 4));
        assert!(!text.found_in("a b", 3, 4));
    }
}
