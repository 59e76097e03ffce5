//! Markdown text for the AI handoff report: the filters its templates use.
//!
//! The layout lives in `templates/report/final-report-v1.md.j2` and
//! `final-report-v2.md.j2` (with `sections.md.j2`). Schema v1 keeps the
//! historical numbered layout with its visible `## Verdict Card` /
//! `## 7. Final Verdict` pair. Schema v2 states the verdict once, from
//! `finalVerdict` plus the card's headline and risks, and orders the rest for
//! an agent picking up the work: routing first, then findings with their
//! traceable `sourceItems`. The output depends only on the data, so the same
//! report always renders to the same bytes.
//!
//! What model text needs to sit safely in Markdown is here: no HTML
//! ([`escape_html`]: GitHub and most viewers render raw HTML in Markdown, so
//! a worker's `<script>` or `<img onerror>` would run or show as markup),
//! one line for a heading or bullet ([`inline`]), a table cell that cannot
//! split its row ([`cell`]), a code span ([`code_cell`]) and a code fence
//! ([`fence_for`]) that their content cannot close early.
//!
//! The report's Markdown templates escape every printed value with
//! [`escape_html`] (`render.rs`, the `markdown` auto-escape). What these
//! filters make is marked safe and printed as made: a cell's own `<br>`, a
//! code span's and a fence's content (literal there, so left as it is).

use std::borrow::Cow;

use minijinja::{Environment, Value};

/// Register the Markdown filters on the report environment.
pub fn add_filters(env: &mut Environment<'_>) {
    env.add_filter("inline", inline);
    env.add_filter("cell", cell);
    env.add_filter("code_cell", code_cell);
    env.add_filter("fence", |lines: Vec<String>| fence_for(&lines));
    env.add_filter("verbatim", verbatim);
    env.add_filter("trim_end", trim_end);
}

/// `text` with every `<` that could open HTML (a tag, a closing tag, a
/// comment, a declaration or an autolink: `<` before a letter, `/`, `!` or
/// `?`, as the `CommonMark` spec reads it) written `&lt;`, which shows as `<` and
/// starts nothing. Other text, `a < b` included, stays as it is.
pub fn escape_html(text: &str) -> Cow<'_, str> {
    let opens = |next: Option<char>| {
        next.is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '/' | '!' | '?'))
    };
    let mut chars = text.char_indices().peekable();
    let mut out: Option<String> = None;
    while let Some((at, c)) = chars.next() {
        if c == '<' && opens(chars.peek().map(|(_, next)| *next)) {
            out.get_or_insert_with(|| text[..at].to_owned())
                .push_str("&lt;");
        } else if let Some(out) = &mut out {
            out.push(c);
        }
    }
    out.map_or(Cow::Borrowed(text), Cow::Owned)
}

/// Text printed as it is, inside a code fence (where nothing is markup and
/// [`fence_for`] keeps it from closing the fence).
fn verbatim(text: &str) -> Value {
    Value::from_safe_string(text.to_owned())
}

/// Text as a paragraph: trailing blank lines and spaces dropped.
fn trim_end(text: &str) -> String {
    text.trim_end().to_owned()
}

/// Text for one line (a heading, a bullet): line breaks become spaces.
fn inline(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Text for a table cell: one line (its lines joined by `<br>`, the one
/// markup it makes), no HTML of its own, `|` escaped so it cannot split
/// the row.
fn cell(text: &str) -> Value {
    Value::from_safe_string(cell_text(text))
}

fn cell_text(text: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        return "-".to_owned();
    }
    text.lines()
        .map(|line| escape_html(line.trim()))
        .collect::<Vec<_>>()
        .join("<br>")
        .replace('|', "\\|")
}

/// A code span in a table cell, with a delimiter longer than any backtick run
/// inside it (its content is literal: nothing in it is markup).
fn code_cell(text: &str) -> Value {
    Value::from_safe_string(code_span(text))
}

fn code_span(text: &str) -> String {
    let one_line = inline(text).replace('|', "\\|");
    if one_line.is_empty() {
        return "-".to_owned();
    }
    let ticks = "`".repeat(longest_run(&one_line, '`') + 1);
    let pad = if one_line.starts_with('`') || one_line.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{one_line}{pad}{ticks}")
}

/// A code fence that no line of `lines` can close early.
fn fence_for(lines: &[String]) -> String {
    let longest = lines
        .iter()
        .map(|line| longest_run(line, '`'))
        .max()
        .unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

fn longest_run(text: &str, ch: char) -> usize {
    let (mut longest, mut current) = (0, 0);
    for c in text.chars() {
        if c == ch {
            current += 1;
            longest = longest.max(current);
        } else {
            current = 0;
        }
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_cannot_break_a_table_row() {
        assert_eq!(cell_text("a | b\nc"), "a \\| b<br>c");
        assert_eq!(cell_text("  "), "-");
        assert_eq!(cell_text("<b>x</b>\n<br>"), "&lt;b>x&lt;/b><br>&lt;br>");
    }

    #[test]
    fn only_what_could_open_html_is_escaped() {
        for (text, escaped) in [
            (
                "<script>alert(1)</script>",
                "&lt;script>alert(1)&lt;/script>",
            ),
            (
                "<img src=x onerror=alert(1)>",
                "&lt;img src=x onerror=alert(1)>",
            ),
            (
                "<!-- c --> <?php ?> <![CDATA[x]]>",
                "&lt;!-- c --> &lt;?php ?> &lt;![CDATA[x]]>",
            ),
            ("<https://evil.example>", "&lt;https://evil.example>"),
            ("Vec<String>", "Vec&lt;String>"),
            ("a < b, a <= b, 1<2, <", "a < b, a <= b, 1<2, <"),
            ("é<é ← <", "é<é ← <"),
        ] {
            assert_eq!(escape_html(text), escaped, "{text}");
        }
        assert!(matches!(escape_html("a < b"), Cow::Borrowed(_)));
    }

    #[test]
    fn code_spans_and_fences_outgrow_their_content() {
        assert_eq!(code_span("a`b"), "``a`b``");
        assert_eq!(code_span("`x`"), "`` `x` ``");
        assert_eq!(fence_for(&["````".to_owned()]), "`````");
        assert_eq!(fence_for(&["plain".to_owned()]), "```");
    }
}
