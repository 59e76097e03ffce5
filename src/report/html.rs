//! The human HTML report: its escape and its CSS classes.
//!
//! The page is laid out by `templates/report/final-report.html.j2`: one
//! self-contained file, inline CSS, no scripts, no fonts or images from
//! anywhere, so it opens the same from a laptop's disk or a phone's mail
//! attachment. Layout is one readable column (max width, viewport meta) whose
//! tables scroll sideways on narrow screens instead of squeezing the page.
//!
//! Every string that came from a model is printed through [`escape`] (the
//! report environment's formatter calls it for `.html` templates); nothing
//! from the report is ever emitted as markup, and a class attribute only ever
//! holds a closed-set value ([`class`]).

/// Escape text for HTML element content and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // NUL, ESC and the other controls are dropped: HTML forbids them.
            other if crate::fsread::is_stray_control(other) && other != '\r' => {}
            other => out.push(other),
        }
    }
    out
}

/// Model text as HTML: escaped, with each backticked span (`` `x` ``, or
/// ``` ``a `b` c`` ```) made a `<code>` element. An unclosed backtick stays
/// a backtick. Code breaks only after a `/` (see [`code`]).
pub fn inline_code(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    let mut rest = text;
    while let Some(open) = rest.find('`') {
        let ticks = rest[open..].bytes().take_while(|b| *b == b'`').count();
        let body = &rest[open + ticks..];
        let close = find_run(body, ticks);
        let Some(close) = close else {
            out.push_str(&escape(&rest[..open + ticks]));
            rest = &rest[open + ticks..];
            continue;
        };
        out.push_str(&escape(&rest[..open]));
        let inner = &body[..close];
        // CommonMark: one space on each side of a span is padding.
        let inner = if inner.len() > 2 && inner.starts_with(' ') && inner.ends_with(' ') {
            &inner[1..inner.len() - 1]
        } else {
            inner
        };
        out.push_str(&code(inner));
        rest = &body[close + ticks..];
    }
    out.push_str(&escape(rest));
    out
}

/// Where a run of exactly `ticks` backticks starts in `text`.
fn find_run(text: &str, ticks: usize) -> Option<usize> {
    let mut at = 0;
    while let Some(offset) = text[at..].find('`') {
        let start = at + offset;
        let run = text[start..].bytes().take_while(|b| *b == b'`').count();
        if run == ticks {
            return Some(start);
        }
        at = start + run;
    }
    None
}

/// `text` as a `<code>` element that a narrow column breaks only after a
/// `/` (a `<wbr>`), never inside a name: a path stays readable.
pub fn code(text: &str) -> String {
    format!("<code>{}</code>", escape(text).replace('/', "/<wbr>"))
}

/// A CSS class from a closed-set value (schema enums); anything else maps to
/// nothing, so a class attribute can never carry model text.
pub fn class(value: &str) -> &str {
    if value.bytes().all(|b| b.is_ascii_lowercase() || b == b'-') {
        value
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_model_text_is_escaped() {
        assert_eq!(
            escape("<script>alert(1)</script>\"'&"),
            "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;"
        );
    }

    #[test]
    fn backticks_become_code_that_breaks_only_after_a_slash() {
        assert_eq!(
            inline_code("see `src/a.rs:3` and ``x `y` z`` <b>"),
            "see <code>src/<wbr>a.rs:3</code> and <code>x `y` z</code> &lt;b&gt;"
        );
        assert_eq!(inline_code("a `b"), "a `b");
        assert_eq!(inline_code("`<i>`"), "<code>&lt;i&gt;</code>");
        assert_eq!(inline_code("`` ` ``"), "<code>`</code>");
    }

    #[test]
    fn classes_only_take_closed_set_values() {
        assert_eq!(class("full-consensus"), "full-consensus");
        assert_eq!(class("x\" onmouseover=\"y"), "");
    }
}
