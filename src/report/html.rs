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
    fn classes_only_take_closed_set_values() {
        assert_eq!(class("full-consensus"), "full-consensus");
        assert_eq!(class("x\" onmouseover=\"y"), "");
    }
}
