//! Worker result items: the one parser that finds them, shared by
//! `okstra validate` (which counts ids) and `okstra items` / `okstra
//! converge` (which need the whole item).
//!
//! An item is the leading cell of a table body row (`| F-001 | … |`) or a
//! `[ID]` prefix on a bullet or numbered entry (`- [F-001] …`, `2. [1.1] …`).
//! Table header rows, separator rows and fenced code blocks are skipped, and
//! emphasis or code marks around an id are ignored. Each item knows the
//! `## ` heading it sits under, its text, and the evidence that text cites:
//! `path:line` references, backticked commands and quoted output.

use std::collections::HashMap;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// One item of a worker's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Item {
    pub id: String,
    /// The `## ` heading the item is under, without the hashes (`""` before
    /// the first one).
    pub section: String,
    /// The item as written, without its id.
    pub text: String,
    /// 1-based line of the item in its file.
    pub line: usize,
    pub evidence: Vec<Evidence>,
}

/// One checkable thing an item (or a verdict) cites.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    pub kind: EvidenceKind,
    pub text: String,
}

/// What kind of citation it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EvidenceKind {
    /// `src/cart.rs:88` (or `:88-94`).
    PathLine,
    /// A backticked span with an argument: `` `cargo test cart` ``.
    Command,
    /// Quoted output of at least [`MIN_QUOTE`] characters: `"error: 429"`.
    Quote,
}

/// Shortest quoted text taken as quoted output rather than a word in quotes.
const MIN_QUOTE: usize = 3;

/// What [`scan`] finds on one line.
enum Found<'a> {
    /// An item: its id, the `## ` section it is under, its text, its line.
    Item(&'a str, &'a str, &'a str, usize),
    /// An indented line continuing the last list item.
    More(&'a str),
}

/// Walk `text` once, reporting items and continuation lines in order.
fn scan<'a>(text: &'a str, mut found: impl FnMut(Found<'a>)) {
    let mut section = "";
    let mut in_fence: Option<&str> = None;
    // Whether the last line was a list item that indented lines continue.
    let mut continuing = false;
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(index, raw)| (index + 1, raw, raw.trim()))
        .peekable();
    while let Some((number, raw, line)) = lines.next() {
        if let Some(fence) = in_fence {
            if line.starts_with(fence) {
                in_fence = None;
            }
            continue;
        }
        if line.starts_with("```") || line.starts_with("~~~") {
            in_fence = Some(&line[..3]);
            continuing = false;
            continue;
        }
        if let Some(heading) = line.strip_prefix("## ") {
            section = heading.trim();
            continuing = false;
            continue;
        }
        let item = if let Some(cells) = line.strip_prefix('|') {
            continuing = false;
            if is_separator(line) || lines.peek().is_some_and(|(_, _, next)| is_separator(next)) {
                continue; // a separator, or the header row above one
            }
            let (first, rest) = cells.split_once('|').unwrap_or((cells, ""));
            clean_id(first).map(|id| (id, rest.trim().trim_end_matches('|').trim()))
        } else if let Some(body) = list_item_body(line) {
            let item = bracketed_id(body);
            continuing = item.is_some();
            item
        } else {
            if continuing && !line.is_empty() && raw.starts_with([' ', '\t']) {
                found(Found::More(line));
            } else {
                continuing = false;
            }
            continue;
        };
        if let Some((id, rest)) = item {
            found(Found::Item(id, section, rest, number));
        }
    }
}

/// Every item of `text`, in file order.
pub fn parse(text: &str) -> Vec<Item> {
    let mut items: Vec<Item> = Vec::new();
    scan(text, |found| match found {
        Found::Item(id, section, rest, line) => items.push(Item {
            id: id.to_owned(),
            section: section.to_owned(),
            text: rest.to_owned(),
            line,
            evidence: Vec::new(),
        }),
        Found::More(line) => {
            if let Some(last) = items.last_mut() {
                last.text.push(' ');
                last.text.push_str(line);
            }
        }
    });
    for item in &mut items {
        item.evidence = evidence(&item.text);
    }
    items
}

/// How often each item id occurs in `text` (what `validate` checks).
pub fn counts(text: &str) -> HashMap<String, u32> {
    let mut counts: HashMap<String, u32> = HashMap::new();
    scan(text, |found| {
        if let Found::Item(id, ..) = found {
            match counts.get_mut(id) {
                Some(count) => *count += 1,
                None => {
                    counts.insert(id.to_owned(), 1);
                }
            }
        }
    });
    counts
}

/// Read a worker's result file, refusing what is not a regular file
/// (a FIFO would block, a device never ends, a symlink may point anywhere)
/// or is larger than the result limit (`fsread::Kind::Result`). Invalid
/// UTF-8 is replaced, not refused.
pub fn read_result(path: &Path) -> io::Result<String> {
    // Through the one bounded reader: no FIFO blocks us, no symlink is
    // followed, and a file past the result limit is refused, not cut.
    let bytes =
        crate::fsread::read_no_follow(path, crate::fsread::Kind::Result).map_err(|err| {
            let kind = if err.is_not_found() {
                io::ErrorKind::NotFound
            } else {
                io::ErrorKind::InvalidInput
            };
            io::Error::new(kind, format!("{err:#}"))
        })?;
    Ok(match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) => String::from_utf8_lossy(err.as_bytes()).into_owned(),
    })
}

/// Every checkable citation in `text`, in order.
pub fn evidence(text: &str) -> Vec<Evidence> {
    let mut found = Vec::new();
    // Backticked spans: a command when it has an argument, else maybe a
    // `path:line` reference in code marks.
    let mut outside = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('`') {
        outside.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let Some(end) = after.find('`') else {
            outside.push_str(&rest[start..]);
            rest = "";
            break;
        };
        let span = after[..end].trim();
        if span.contains(char::is_whitespace) {
            found.push(Evidence {
                kind: EvidenceKind::Command,
                text: span.to_owned(),
            });
        } else if is_path_line(span) {
            found.push(Evidence {
                kind: EvidenceKind::PathLine,
                text: span.to_owned(),
            });
        }
        outside.push(' ');
        rest = &after[end + 1..];
    }
    outside.push_str(rest);
    for word in outside.split_whitespace() {
        let word =
            word.trim_matches(|ch: char| matches!(ch, '(' | ')' | ',' | ';' | '*' | '[' | ']'));
        let word = word.trim_end_matches(['.', ':']);
        if is_path_line(word) {
            found.push(Evidence {
                kind: EvidenceKind::PathLine,
                text: word.to_owned(),
            });
        }
    }
    for (open, close) in [('"', '"'), ('“', '”')] {
        let mut rest = outside.as_str();
        while let Some(start) = rest.find(open) {
            let after = &rest[start + open.len_utf8()..];
            let Some(end) = after.find(close) else { break };
            let quoted = after[..end].trim();
            if quoted.chars().count() >= MIN_QUOTE {
                found.push(Evidence {
                    kind: EvidenceKind::Quote,
                    text: quoted.to_owned(),
                });
            }
            rest = &after[end + close.len_utf8()..];
        }
    }
    found
}

/// Whether `text` cites anything checkable.
pub fn is_checkable(text: &str) -> bool {
    !evidence(text).is_empty()
}

/// `src/cart.rs:88`, `Cargo.toml:3-9`, `a/b:12`: a path (with a `/` or a
/// `.`) then `:` and a line number (or range).
fn is_path_line(word: &str) -> bool {
    let Some((path, line)) = word.rsplit_once(':') else {
        return false;
    };
    let line = line.split_once('-').map_or(line, |(start, _)| start);
    !path.is_empty()
        && !path.contains("://")
        && (path.contains('/') || path.contains('.'))
        && !path.ends_with(['.', '/'])
        && !line.is_empty()
        && line.bytes().all(|b| b.is_ascii_digit())
}

fn is_separator(line: &str) -> bool {
    line.starts_with('|')
        && line.contains('-')
        && line
            .chars()
            .all(|ch| matches!(ch, '|' | '-' | ':' | ' ' | '\t'))
}

/// Whether `candidate` has the shape of an item id.
pub fn is_id(candidate: &str) -> bool {
    !candidate.is_empty()
        && candidate
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// The id in a table cell: `F-001`, `**F-001**`, `` `F-001` `` or `[F-001]`.
fn clean_id(cell: &str) -> Option<&str> {
    let cell = cell.trim().trim_matches(|ch| ch == '*' || ch == '`').trim();
    let cell = cell
        .strip_prefix('[')
        .and_then(|inner| inner.strip_suffix(']'))
        .unwrap_or(cell);
    is_id(cell).then_some(cell)
}

/// The text after a bullet (`-`, `*`, `+`) or a number marker (`3.`, `3)`).
fn list_item_body(line: &str) -> Option<&str> {
    if let Some(rest) = line
        .strip_prefix("- ")
        .or_else(|| line.strip_prefix("* "))
        .or_else(|| line.strip_prefix("+ "))
    {
        return Some(rest);
    }
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let rest = &line[digits..];
    rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") "))
}

/// The id of a `[ID] text` item, allowing `**[ID]**` emphasis, and the text
/// after it.
fn bracketed_id(body: &str) -> Option<(&str, &str)> {
    let body = body.trim_start().trim_start_matches(['*', '`']);
    let inner = body.strip_prefix('[')?;
    let end = inner.find(']')?;
    let id = &inner[..end];
    let text = inner[end + 1..].trim_start_matches(['*', '`']).trim();
    is_id(id).then_some((id, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_come_from_table_rows_and_list_prefixes() {
        let text = "\
# Findings

| ID | Finding |
|----|---------|
| F-001 | the cache is never invalidated |
| **F-002** | retries are unbounded |

- [F-003] a bullet item
* **[1.1]** an emphasised item
12. [1.2] a numbered item
3) [x.y_z] another marker
- no id here
- [not an id] neither

```text
| F-001 | inside a fence does not count |
- [F-009] nor this
```
| F-001 | the same id again |
";
        let ids = counts(text);
        let mut found: Vec<_> = ids.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        found.sort_unstable();
        assert_eq!(
            found,
            vec![
                ("1.1", 1),
                ("1.2", 1),
                ("F-001", 2),
                ("F-002", 1),
                ("F-003", 1),
                ("x.y_z", 1)
            ]
        );
    }

    #[test]
    fn items_carry_section_text_line_and_evidence() {
        let text = "\
# claude

## 1. Findings

| ID | Finding | Evidence |
|----|---------|----------|
| F-001 | retries never stop | `src/client.rs:88` |

## 2. Reproduction

- [R-1] Run `cargo test retry` and see \"six requests\" in the log,
  then check config/payments.toml:12.
- [R-2] no evidence at all
";
        let items = parse(text);
        assert_eq!(items.len(), 3);
        assert_eq!(items[0].id, "F-001");
        assert_eq!(items[0].section, "1. Findings");
        assert_eq!(items[0].line, 7);
        assert_eq!(items[0].text, "retries never stop | `src/client.rs:88`");
        assert_eq!(
            items[0].evidence,
            vec![Evidence {
                kind: EvidenceKind::PathLine,
                text: "src/client.rs:88".to_owned()
            }]
        );
        assert_eq!(items[1].section, "2. Reproduction");
        assert!(
            items[1]
                .text
                .ends_with("then check config/payments.toml:12.")
        );
        let kinds: Vec<_> = items[1].evidence.iter().map(|e| e.kind).collect();
        assert_eq!(
            kinds,
            vec![
                EvidenceKind::Command,
                EvidenceKind::PathLine,
                EvidenceKind::Quote
            ]
        );
        assert!(items[2].evidence.is_empty());
    }

    #[test]
    fn only_checkable_citations_count() {
        for text in [
            "see src/cart.rs:88",
            "(client.rs:88-94)",
            "ran `grep -n total src`",
            "it printed \"error: 429 Too Many Requests\"",
        ] {
            assert!(is_checkable(text), "{text}");
        }
        for text in [
            "",
            "looks right to me",
            "`submit()` is fine",
            "at 10:30 it failed",
            "see https://example.com:443",
            "it said \"ok\"",
        ] {
            assert!(!is_checkable(text), "{text}");
        }
    }

    #[test]
    fn hostile_results_are_refused_or_cut() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(read_result(&fifo).is_err());
        assert_eq!(
            read_result(&dir.path().join("missing.md"))
                .unwrap_err()
                .kind(),
            io::ErrorKind::NotFound,
            "a missing result is told apart (convergence treats it as not done)"
        );
        assert!(read_result(dir.path()).is_err());
        let link = dir.path().join("link.md");
        std::os::unix::fs::symlink("/etc/hostname", &link).unwrap();
        assert!(read_result(&link).is_err());
        let bad = dir.path().join("bad.md");
        std::fs::write(&bad, b"- [F-1] caf\xff\n").unwrap();
        assert_eq!(parse(&read_result(&bad).unwrap())[0].id, "F-1");
    }
}
