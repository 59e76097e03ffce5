//! Render a report's Markdown and HTML from the templates in
//! `templates/report/`.
//!
//! The environment is the shared one (`template::environment`: strict,
//! embedded, auto-escape by file extension) plus what only the report needs:
//! the Markdown filters, the HTML `paragraphs` filter, the report's own
//! Markdown auto-escape, and a formatter that gives printed text its one
//! escape. In a `.html` template every printed value that is not markup a
//! macro made goes through [`html::escape`]; in a report `.md` template
//! every printed value that is not markup a filter or macro made goes
//! through [`markdown::escape_html`] (a worker's `<script>` must not reach
//! a Markdown viewer as HTML). Printed values of both lose their stray
//! control characters (model text may carry NUL or terminal escapes; none
//! reach the file).

use std::borrow::Cow;

use minijinja::value::Serde;
use minijinja::{AutoEscape, Environment, Value, context};

use super::model::Report;
use super::view::View;
use super::{html, markdown};
use crate::fsread::is_stray_control;
use crate::template;

const MARKDOWN_V1: &str = "templates/report/final-report-v1.md.j2";
const MARKDOWN_V2: &str = "templates/report/final-report-v2.md.j2";
const HTML: &str = "templates/report/final-report.html.j2";
/// The auto-escape of the report's Markdown templates (minijinja's custom
/// mode: the formatter below does it, and values a filter or macro made
/// are marked safe).
const MARKDOWN_ESCAPE: &str = "markdown";

/// The report's Markdown and HTML, rendered from one view of `report`.
pub fn render(report: &Report) -> Result<(String, String), template::Error> {
    let env = environment();
    let view = Value::from(Serde(&View::new(report)));
    let markdown_name = if report.is_v1() {
        MARKDOWN_V1
    } else {
        MARKDOWN_V2
    };
    let markdown = template::render(&env, markdown_name, context! { report => view.clone() })?;
    let html = template::render(&env, HTML, context! { report => view })?;
    Ok((markdown, html))
}

fn environment() -> Environment<'static> {
    let mut env = template::environment();
    env.set_auto_escape_callback(|name| {
        if name.starts_with("templates/report/") && name.ends_with(".md.j2") {
            AutoEscape::Custom(MARKDOWN_ESCAPE.into())
        } else {
            template::auto_escape(name)
        }
    });
    markdown::add_filters(&mut env);
    env.add_filter("paragraphs", paragraphs);
    // HTML only: model text with its code spans as code, and a path as
    // code that breaks only after a `/`. Both escape what they print.
    env.add_filter("rich", |text: &str| {
        Value::from_safe_string(html::inline_code(text))
    });
    env.add_filter("code", |text: &str| {
        Value::from_safe_string(html::code(text))
    });
    env.set_formatter(|out, state, value| {
        let text = value
            .as_str()
            .map_or_else(|| Cow::Owned(value.to_string()), Cow::Borrowed);
        let plain = |out: &mut minijinja::Output<'_>, text: &str| {
            text.split(is_stray_control)
                .try_for_each(|piece| out.write_str(piece))
        };
        match state.auto_escape() {
            // Markup a macro made: its text was escaped when it was printed.
            AutoEscape::Html if value.is_safe() => out.write_str(&text),
            AutoEscape::Html => out.write_str(&html::escape(&text)),
            AutoEscape::Custom(mode) if *mode == *MARKDOWN_ESCAPE && !value.is_safe() => {
                plain(out, &markdown::escape_html(&text))
            }
            _ => plain(out, &text),
        }
        .map_err(minijinja::Error::from)
    });
    env
}

/// Text as HTML paragraphs: split at blank lines, each paragraph trimmed and
/// cut into its lines (the template joins them with `<br>`).
fn paragraphs(text: &str) -> Vec<Vec<String>> {
    text.split("\n\n")
        .map(str::trim)
        .filter(|paragraph| !paragraph.is_empty())
        .map(|paragraph| paragraph.split('\n').map(str::to_owned).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paragraphs_split_at_blank_lines_and_keep_their_lines() {
        assert_eq!(
            paragraphs("  one\ntwo \n\n\n\nthree\n\n \n"),
            vec![
                vec!["one".to_owned(), "two".to_owned()],
                vec!["three".to_owned()]
            ]
        );
    }

    #[test]
    fn html_and_markdown_templates_each_escape_their_way() {
        let mut env = environment();
        env.add_template(
            "t.html.j2",
            "{% macro m() %}<b>{% endmacro %}{{ text }}|{{ m() }}",
        )
        .unwrap();
        env.add_template(
            "templates/report/t.md.j2",
            "{% macro m(x) %}<br>{{ x }}{% endmacro %}{{ text }}|{{ m(text) }}|{{ text|cell }}|{{ text|code_cell }}|{{ text|verbatim }}",
        )
        .unwrap();
        env.add_template("t.md.j2", "{{ text }}").unwrap();
        let text = "<a href='x'>\u{0}\u{1b}[1m</a>";
        assert_eq!(
            template::render(&env, "t.html.j2", context! { text }).unwrap(),
            "&lt;a href=&#39;x&#39;&gt;[1m&lt;/a&gt;|<b>"
        );
        // The report's Markdown: model text starts no HTML; a macro's and a
        // cell's own markup stays; code is literal.
        assert_eq!(
            template::render(&env, "templates/report/t.md.j2", context! { text }).unwrap(),
            "&lt;a href='x'>[1m&lt;/a>|<br>&lt;a href='x'>[1m&lt;/a>|&lt;a href='x'>[1m&lt;/a>|`<a href='x'>[1m</a>`|<a href='x'>[1m</a>"
        );
        // Another Markdown template (a prompt) is printed as is.
        assert_eq!(
            template::render(&env, "t.md.j2", context! { text }).unwrap(),
            "<a href='x'>[1m</a>"
        );
    }
}
