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
//! What model text needs to sit safely in Markdown is here: one line for a
//! heading or bullet ([`inline`]), a table cell that cannot split its row
//! ([`cell`]), a code span ([`code_cell`]) and a code fence ([`fence_for`])
//! that their content cannot close early.

use minijinja::Environment;

/// Register the Markdown filters on the report environment.
pub fn add_filters(env: &mut Environment<'_>) {
    env.add_filter("inline", inline);
    env.add_filter("cell", cell);
    env.add_filter("code_cell", code_cell);
    env.add_filter("fence", |lines: Vec<String>| fence_for(&lines));
    env.add_filter("trim_end", trim_end);
}

/// Text as a paragraph: trailing blank lines and spaces dropped.
fn trim_end(text: &str) -> String {
    text.trim_end().to_owned()
}

/// Text for one line (a heading, a bullet): line breaks become spaces.
fn inline(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Text for a table cell: one line, `|` escaped so it cannot split the row.
fn cell(text: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        return "-".to_owned();
    }
    text.lines()
        .map(str::trim)
        .collect::<Vec<_>>()
        .join("<br>")
        .replace('|', "\\|")
}

/// A code span in a table cell, with a delimiter longer than any backtick run
/// inside it.
fn code_cell(text: &str) -> String {
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
        assert_eq!(cell("a | b\nc"), "a \\| b<br>c");
        assert_eq!(cell("  "), "-");
    }

    #[test]
    fn code_spans_and_fences_outgrow_their_content() {
        assert_eq!(code_cell("a`b"), "``a`b``");
        assert_eq!(code_cell("`x`"), "`` `x` ``");
        assert_eq!(fence_for(&["````".to_owned()]), "`````");
        assert_eq!(fence_for(&["plain".to_owned()]), "```");
    }
}
