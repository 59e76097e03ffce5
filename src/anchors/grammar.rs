//! The anchor grammar: what a worker writes to point at code, found in the
//! free text of an evidence cell.
//!
//! ```text
//! anchor    = location [ separator ] [ excerpt ]
//! location  = path ":" line [ ("-" | "–") line ]        src/cart.rs:88   src/cart.rs:88-94
//! path      = no spaces, a "/" or a ".", not a URL      (bare, or in backticks)
//! separator = spaces, then at most one of  — – - : = →  and spaces
//! excerpt   = a backticked code span that is not itself a location
//! ```
//!
//! A cell may hold several anchors, one after another. An excerpt written
//! inside a Markdown table cell may escape its pipes as `\|`; they are
//! unescaped. Anything else in the text (prose, commands,
//! quoted output) is not an anchor and is left to the evidence scan of
//! `items`.

use serde::{Deserialize, Serialize};

/// Most anchors kept per text (as many as `items` keeps citations).
pub const MAX_ANCHORS: usize = 32;
/// Most bytes of a path or an excerpt kept (as `items` keeps of a citation).
pub const MAX_PART_BYTES: usize = 512;

/// One anchor as written: a file, a line range, maybe the code it points at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Anchor {
    /// The path as written (relative to the project, or absolute).
    pub path: String,
    /// First line, 1-based as written (0 is kept, and fails the check).
    pub start: u32,
    /// Last line; equal to `start` for a single line.
    pub end: u32,
    /// The backticked code after the location, unescaped, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt: Option<String>,
}

impl Anchor {
    /// `18` or `18-22`, as the lines are shown.
    pub fn lines(&self) -> String {
        lines(self.start, self.end)
    }
}

/// `18` or `18-22`.
pub fn lines(start: u32, end: u32) -> String {
    if start == end {
        start.to_string()
    } else {
        format!("{start}-{end}")
    }
}

/// Every anchor in `text`, in order, at most [`MAX_ANCHORS`].
pub fn parse(text: &str) -> Vec<Anchor> {
    let mut anchors = Vec::new();
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < text.len() && anchors.len() < MAX_ANCHORS {
        if bytes[at] == b'`' {
            let Some(span) = code_span(text, at) else {
                at += 1;
                continue;
            };
            at = span.end;
            if let Some(anchor) = location(span.text.trim()) {
                at = with_excerpt(text, at, anchor, &mut anchors);
            }
            continue;
        }
        let starts_word = text[..at]
            .chars()
            .next_back()
            .is_none_or(|c| is_boundary(c) || c == '`');
        if !starts_word || is_boundary(text[at..].chars().next().unwrap_or(' ')) {
            at += text[at..].chars().next().map_or(1, char::len_utf8);
            continue;
        }
        let end = text[at..]
            .find(|c: char| is_boundary(c) || c == '`')
            .map_or(text.len(), |offset| at + offset);
        let word = trim_word(&text[at..end]);
        at = end;
        if let Some(anchor) = location(word) {
            at = with_excerpt(text, at, anchor, &mut anchors);
        }
    }
    anchors
}

/// Characters that end a bare word.
fn is_boundary(c: char) -> bool {
    c.is_whitespace() || matches!(c, '|' | ',' | ';' | '(' | ')' | '[' | ']' | '<' | '>')
}

/// A bare word without the emphasis and punctuation prose puts around it.
fn trim_word(word: &str) -> &str {
    word.trim_matches(|c: char| matches!(c, '*' | '_' | '"' | '\'' | '“' | '”'))
        .trim_end_matches(['.', ':'])
}

/// Take an excerpt right after the location that ends at `at`, push the
/// anchor, and return where scanning goes on.
fn with_excerpt(text: &str, at: usize, mut anchor: Anchor, anchors: &mut Vec<Anchor>) -> usize {
    let rest = &text[at..];
    let spaces = rest.len() - rest.trim_start_matches([' ', '\t']).len();
    let mut next = at + spaces;
    let after = &text[next..];
    for separator in ["—", "–", "→", "-", ":", "="] {
        if let Some(tail) = after.strip_prefix(separator) {
            let trimmed = tail.trim_start_matches([' ', '\t']);
            if trimmed.starts_with('`') {
                next = text.len() - trimmed.len();
            }
            break;
        }
    }
    let mut resume = at;
    if text[next..].starts_with('`')
        && let Some(span) = code_span(text, next)
        && location(span.text.trim()).is_none()
    {
        let excerpt = span.text.replace("\\|", "|");
        let excerpt = excerpt.trim();
        if !excerpt.is_empty() {
            anchor.excerpt = Some(crate::fsread::clip(excerpt, MAX_PART_BYTES));
        }
        resume = span.end;
    }
    anchors.push(anchor);
    resume
}

/// A code span opened at `open` (a run of backticks): its text and the
/// byte after its closing run.
struct Span<'a> {
    text: &'a str,
    end: usize,
}

fn code_span(text: &str, open: usize) -> Option<Span<'_>> {
    let ticks = text[open..].bytes().take_while(|b| *b == b'`').count();
    let body = open + ticks;
    let mut search = body;
    while let Some(offset) = text[search..].find('`') {
        let close = search + offset;
        let run = text[close..].bytes().take_while(|b| *b == b'`').count();
        if run == ticks {
            return Some(Span {
                text: &text[body..close],
                end: close + run,
            });
        }
        search = close + run;
    }
    None
}

/// `src/cart.rs:88` or `src/cart.rs:88-94` as an anchor without excerpt.
pub fn location(word: &str) -> Option<Anchor> {
    let (path, lines) = word.rsplit_once(':')?;
    let (start, end) = if let Some((start, end)) = lines.split_once(['-', '–']) {
        (number(start)?, number(end)?)
    } else {
        let line = number(lines)?;
        (line, line)
    };
    let is_path = !path.is_empty()
        && path.len() <= MAX_PART_BYTES
        && !path.contains("://")
        && !path.contains(char::is_whitespace)
        && (path.contains('/') || path.contains('.'))
        && !path.ends_with(['.', '/'])
        && !is_host(path);
    is_path.then(|| Anchor {
        path: path.to_owned(),
        start,
        end,
        excerpt: None,
    })
}

/// `127.0.0.1` or `example.com`: a host before a port, not a file.
fn is_host(path: &str) -> bool {
    const DOMAINS: [&str; 6] = ["com", "org", "net", "edu", "gov", "internal"];
    !path.contains('/')
        && (path.bytes().all(|b| b.is_ascii_digit() || b == b'.')
            || path
                .rsplit_once('.')
                .is_some_and(|(_, last)| DOMAINS.contains(&last)))
}

fn number(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // A line number past u32 is as good as one past the end of the file.
    Some(text.parse().unwrap_or(u32::MAX))
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn anchor(path: &str, start: u32, end: u32, excerpt: Option<&str>) -> Anchor {
        Anchor {
            path: path.to_owned(),
            start,
            end,
            excerpt: excerpt.map(str::to_owned),
        }
    }

    #[test]
    fn locations_ranges_and_excerpts() {
        assert_eq!(
            parse(
                "src/inventory.py:18-22 `if self.available(sku) < quantity:`; \
                 `src/server.py:15` — `int(body.get(\"quantity\", 1))`, tests/t.py:9"
            ),
            vec![
                anchor(
                    "src/inventory.py",
                    18,
                    22,
                    Some("if self.available(sku) < quantity:")
                ),
                anchor(
                    "src/server.py",
                    15,
                    15,
                    Some("int(body.get(\"quantity\", 1))")
                ),
                anchor("tests/t.py", 9, 9, None),
            ]
        );
    }

    #[test]
    fn table_cells_escape_pipes_and_double_ticks_hold_backticks() {
        assert_eq!(
            parse("see (a/b.sh:3–4 ``x=`y` \\|\\| z``)."),
            vec![anchor("a/b.sh", 3, 4, Some("x=`y` || z"))]
        );
    }

    #[test]
    fn an_excerpt_must_follow_its_location() {
        // A code span after prose is a command, not an excerpt; two
        // backticked locations in a row are two anchors.
        assert_eq!(
            parse("run `cargo test` then check `a.rs:1` `b.rs:2`"),
            vec![anchor("a.rs", 1, 1, None), anchor("b.rs", 2, 2, None)]
        );
        assert_eq!(
            parse("a.rs:1 and `x + 1`"),
            vec![anchor("a.rs", 1, 1, None)]
        );
    }

    #[test]
    fn what_is_not_an_anchor() {
        for text in [
            "at 10:30 it failed",
            "see https://example.com:443",
            "serves on 127.0.0.1:8080",
            "calls api.example.com:443",
            "http://x.org/a.rs:9",
            "version v1:2x",
            "src/:3",
            "file.:3",
            "`submit()` is fine",
            "a.rs:",
            "a.rs:-3",
            "unclosed `a.rs:3",
        ] {
            let found = parse(text);
            assert!(
                found.is_empty() || text.starts_with("unclosed"),
                "{text}: {found:?}"
            );
        }
        assert_eq!(parse("unclosed `a.rs:3"), vec![anchor("a.rs", 3, 3, None)]);
        assert_eq!(parse("huge a.rs:99999999999")[0].start, u32::MAX);
    }

    #[test]
    fn anchors_are_capped_per_text() {
        let text = vec!["a.rs:1 `x`"; MAX_ANCHORS * 2].join(" ");
        assert_eq!(parse(&text).len(), MAX_ANCHORS);
        let long = format!("a.rs:1 `{}`", "y ".repeat(MAX_PART_BYTES));
        let excerpt = parse(&long)[0].excerpt.clone().unwrap();
        assert!(excerpt.len() <= MAX_PART_BYTES + '…'.len_utf8());
    }
}
