//! Worker result items: the one parser that finds them, shared by
//! `okstra validate` (which counts ids) and `okstra items` / `okstra
//! converge` (which need the whole item).
//!
//! An item is the leading cell of a table body row (`| F-001 | … |`) or a
//! `[ID]` prefix on a bullet or numbered entry (`- [F-001] …`, `2. [1.1] …`).
//! Table header rows, separator rows and fenced code blocks are skipped, and
//! emphasis or code marks around an id are ignored. Each item knows the
//! `## ` heading it sits under, its text, the evidence that text cites
//! (`path:line` references, the excerpts after them, backticked commands
//! and quoted output) and its anchors as written (`anchors::grammar`; okstra
//! checks them when convergence accepts the result).
//!
//! What is kept is capped (docs/hostile-files.md), so memory follows the
//! caps, not the file: a result of a million one-line items or an item
//! citing a million things (both fit in the 16 MiB result limit) costs the
//! caps. An item over a per-item cap is cut and marked `truncated`; items
//! past the per-result cap are left out; either way [`Parsed::warnings`]
//! says so in one line each, never silently.

use std::collections::HashMap;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::anchors::{self, Anchor};
use crate::fsread;

/// Most items kept per result; later ones are left out (and said to be).
/// Real results hold tens; the convergence benchmark uses 200.
pub const MAX_ITEMS: usize = 500;
/// Most bytes of an item's text kept (a finding is a paragraph, not a file).
pub const MAX_TEXT_BYTES: usize = 8 * 1024;
/// Most bytes of an item's `## ` heading kept.
pub const MAX_SECTION_BYTES: usize = 256;
/// Most citations kept per item (one item cited 1.2 M in a hostile result);
/// as many as the anchors kept.
pub const MAX_CITATIONS: usize = anchors::grammar::MAX_ANCHORS;
/// Most bytes of one citation kept (as of an anchor's path or excerpt).
pub const MAX_CITATION_BYTES: usize = anchors::grammar::MAX_PART_BYTES;

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
    /// Its anchors as written (`path:line`, maybe an excerpt), unchecked.
    pub anchors: Vec<Anchor>,
    /// Cut to the per-item caps: text, heading, citations or a citation.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
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
    /// The backticked code right after a `path:line`: what it points at.
    Excerpt,
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

/// The items of one result, within the caps.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// At most [`MAX_ITEMS`], in file order.
    pub items: Vec<Item>,
    /// Items past [`MAX_ITEMS`], not kept.
    pub left_out: usize,
    /// The line of the first item left out.
    pub first_left_out: Option<usize>,
    /// The first item cut to the per-item caps, as it was before the cut.
    pub first_cut: Option<Uncut>,
}

/// An item's size before it was cut (for the warning).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uncut {
    pub id: String,
    pub line: usize,
    pub text_bytes: usize,
    pub citations: usize,
}

impl Parsed {
    /// One line per cap the result `path` of worker `owner` hit, for
    /// `warning:`: items cut (and marked `truncated`), items left out.
    pub fn warnings(&self, owner: &str, path: &Path) -> Vec<String> {
        let mut lines = Vec::new();
        let cut = self.items.iter().filter(|item| item.truncated).count();
        if let Some(first) = &self.first_cut {
            lines.push(format!(
                "{cut} item{} of `{owner}` in `{}` cut to the caps per item ({MAX_TEXT_BYTES} \
                 bytes of text, {MAX_SECTION_BYTES} of heading, {MAX_CITATIONS} citations of \
                 {MAX_CITATION_BYTES} bytes) and marked `truncated`; the first, `{owner}:{}` \
                 (line {}), had {} bytes and {} citations",
                if cut == 1 { "" } else { "s" },
                path.display(),
                first.id,
                first.line,
                first.text_bytes,
                first.citations
            ));
        }
        if self.left_out > 0 {
            lines.push(format!(
                "`{owner}`'s result `{}` has {} items, over the cap of {MAX_ITEMS} per result; \
                 the {} from line {} on are left out",
                path.display(),
                self.items.len() + self.left_out,
                self.left_out,
                self.first_left_out.unwrap_or_default()
            ));
        }
        lines
    }
}

/// Every item of `text`, in file order, within the caps.
pub fn parse(text: &str) -> Parsed {
    let mut parsed = Parsed::default();
    // The item being read, text whole until it is finished (its evidence
    // is read from all of it, then it is cut).
    let mut current: Option<Item> = None;
    scan(text, |found| match found {
        Found::Item(id, section, rest, line) => {
            if let Some(done) = current.take() {
                finish(done, &mut parsed);
            }
            if parsed.items.len() < MAX_ITEMS {
                let (section, cut) = capped(section, MAX_SECTION_BYTES);
                current = Some(Item {
                    id: id.to_owned(),
                    section,
                    text: rest.to_owned(),
                    line,
                    evidence: Vec::new(),
                    anchors: Vec::new(),
                    truncated: cut,
                });
            } else {
                parsed.left_out += 1;
                parsed.first_left_out.get_or_insert(line);
            }
        }
        Found::More(line) => {
            if let Some(item) = current.as_mut() {
                item.text.push(' ');
                item.text.push_str(line);
            }
        }
    });
    if let Some(done) = current.take() {
        finish(done, &mut parsed);
    }
    parsed
}

/// Read a finished item's evidence from its whole text, cut it to the
/// caps, and keep it.
fn finish(mut item: Item, parsed: &mut Parsed) {
    let (evidence, citations, cut_citation) = capped_evidence(&item.text);
    item.evidence = evidence;
    item.anchors = anchors::parse(&item.text);
    let text_bytes = item.text.len();
    let (text, cut_text) = capped(&item.text, MAX_TEXT_BYTES);
    item.text = text;
    item.truncated |= cut_text || cut_citation || citations > MAX_CITATIONS;
    if item.truncated && parsed.first_cut.is_none() {
        parsed.first_cut = Some(Uncut {
            id: item.id.clone(),
            line: item.line,
            text_bytes,
            citations,
        });
    }
    parsed.items.push(item);
}

/// `text` cut to `max` bytes (with `…`), and whether it was cut.
fn capped(text: &str, max: usize) -> (String, bool) {
    (fsread::clip(text, max), text.len() > max)
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

/// The checkable citations in `text`, in order, at most [`MAX_CITATIONS`]
/// of them (each cut to [`MAX_CITATION_BYTES`]); with how many `text` has
/// in all and whether one kept was cut.
fn capped_evidence(text: &str) -> (Vec<Evidence>, usize, bool) {
    let mut found = Vec::new();
    let mut total = 0;
    let mut cut = false;
    let excerpts: Vec<String> = anchors::parse(text)
        .into_iter()
        .filter_map(|anchor| anchor.excerpt)
        .collect();
    each_citation(text, |kind, citation| {
        total += 1;
        if found.len() < MAX_CITATIONS {
            let (text, clipped) = capped(citation, MAX_CITATION_BYTES);
            cut |= clipped;
            // Code after a `path:line` is what it points at, not a command.
            let kind = if kind == EvidenceKind::Command
                && excerpts.iter().any(|e| *e == citation.replace("\\|", "|"))
            {
                EvidenceKind::Excerpt
            } else {
                kind
            };
            found.push(Evidence { kind, text });
        }
    });
    (found, total, cut)
}

/// Call `cite` with every checkable citation in `text`, in order:
/// backticked spans, then `path:line` words, then quoted output.
fn each_citation(text: &str, mut cite: impl FnMut(EvidenceKind, &str)) {
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
            cite(EvidenceKind::Command, span);
        } else if is_path_line(span) {
            cite(EvidenceKind::PathLine, span);
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
            cite(EvidenceKind::PathLine, word);
        }
    }
    for (open, close) in [('"', '"'), ('“', '”')] {
        let mut rest = outside.as_str();
        while let Some(start) = rest.find(open) {
            let after = &rest[start + open.len_utf8()..];
            let Some(end) = after.find(close) else { break };
            let quoted = after[..end].trim();
            if quoted.chars().count() >= MIN_QUOTE {
                cite(EvidenceKind::Quote, quoted);
            }
            rest = &after[end + close.len_utf8()..];
        }
    }
}

/// Whether `text` cites a command together with its output: a backticked
/// span with an argument that is not the excerpt of an anchor (`` `cargo
/// test cart` ``), and quoted output (`"1 failed"`).
pub fn brings_output(text: &str) -> bool {
    // Only text with a `path:line` can hold an excerpt: skip the anchor
    // parse for the rest (most verdicts).
    let located = text
        .as_bytes()
        .windows(2)
        .any(|pair| pair[0] == b':' && pair[1].is_ascii_digit());
    let excerpts: Vec<String> = if located {
        anchors::parse(text)
            .into_iter()
            .filter_map(|anchor| anchor.excerpt)
            .collect()
    } else {
        Vec::new()
    };
    let (mut command, mut output) = (false, false);
    each_citation(text, |kind, citation| match kind {
        EvidenceKind::Command if !excerpts.iter().any(|e| *e == citation.replace("\\|", "|")) => {
            command = true;
        }
        EvidenceKind::Quote => output = true,
        _ => {}
    });
    command && output
}

/// `src/cart.rs:88`, `Cargo.toml:3-9`, `a/b:12`: an anchor's location
/// (`anchors::grammar`, the one rule).
fn is_path_line(word: &str) -> bool {
    anchors::grammar::location(word).is_some()
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
    use std::fmt::Write as _;

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
        let items = parse(text).items;
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
            assert!(!capped_evidence(text).0.is_empty(), "{text}");
        }
        for text in [
            "",
            "looks right to me",
            "`submit()` is fine",
            "at 10:30 it failed",
            "see https://example.com:443",
            "it said \"ok\"",
        ] {
            assert!(capped_evidence(text).0.is_empty(), "{text}");
        }
    }

    #[test]
    fn a_command_with_its_output_is_told_from_an_excerpt() {
        for (text, expected) in [
            ("`cargo test cart` \"1 failed\"", true),
            ("ran `grep -n total src` and it printed “12: total”", true),
            ("`cargo test cart` failed", false),
            ("it printed \"error: 429\"", false),
            ("src/cart.rs:88 `total = sum(prices)` \"sums first\"", false),
            (
                "src/cart.rs:88 `total = sum(prices)`; `rg sum src` \"88: total\"",
                true,
            ),
        ] {
            assert_eq!(brings_output(text), expected, "{text}");
        }
    }

    #[test]
    fn an_item_over_the_caps_is_cut_and_marked_and_later_items_left_out() {
        let cites = vec!["a.rs:1"; MAX_CITATIONS * 3].join(" ");
        let long = "x".repeat(MAX_CITATION_BYTES * 2);
        let heading = "h".repeat(MAX_SECTION_BYTES * 2);
        let mut text = format!(
            "## {heading}\n| F-1 | {cites} `{long} arg` |\n## Short\n| F-2 | fine src/b.rs:2 |\n"
        );
        for n in 3..=MAX_ITEMS + 4 {
            let _ = write!(text, "- [F-{n}] more\n  continued\n");
        }
        let parsed = parse(&text);
        assert_eq!(parsed.items.len(), MAX_ITEMS);
        assert_eq!(
            (parsed.left_out, parsed.first_left_out),
            (4, Some(2 * MAX_ITEMS + 1))
        );
        let first = &parsed.items[0];
        assert!(first.truncated);
        assert_eq!(first.evidence.len(), MAX_CITATIONS);
        assert!(first.section.len() <= MAX_SECTION_BYTES + '…'.len_utf8());
        assert!(first.text.len() <= MAX_TEXT_BYTES + '…'.len_utf8());
        assert!(!parsed.items[1].truncated);
        assert_eq!(parsed.items[1].section, "Short");
        assert_eq!(parsed.items[MAX_ITEMS - 1].text, "more continued");
        assert_eq!(
            parsed.first_cut,
            Some(Uncut {
                id: "F-1".into(),
                line: 2,
                text_bytes: cites.len() + 1 + long.len() + 6,
                citations: MAX_CITATIONS * 3 + 1,
            })
        );
        let warnings = parsed.warnings("claude", Path::new("r.md"));
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0].starts_with("1 item of `claude` in `r.md` cut"),
            "{}",
            warnings[0]
        );
        assert!(
            warnings[0].contains("had 1702 bytes and 97 citations"),
            "{}",
            warnings[0]
        );
        assert!(
            warnings[1].ends_with("has 504 items, over the cap of 500 per result; the 4 from line 1001 on are left out"),
            "{}",
            warnings[1]
        );
        assert!(
            parse("| F-1 | ok `cargo test` |")
                .warnings("c", Path::new("r"))
                .is_empty()
        );
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
        assert_eq!(parse(&read_result(&bad).unwrap()).items[0].id, "F-1");
    }
}
