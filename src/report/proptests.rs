//! Property tests of the report parsers: worker result items, the strict
//! report parser, the invariant checks and the report model: whatever the
//! input, no panic and bounded time. And of the renderers: whatever text a
//! model wrote, both templates render it and no stray control reaches a file.

use std::collections::HashMap;

use proptest::prelude::*;
use serde_json::Value;

use super::{model, render, strict_json, validate};
use crate::fsread::is_stray_control;
use crate::fuzz::{bounded, bytes, config, damaged, json_value};

const RESULT: &[u8] = b"# Findings\n\n| ID | Claim |\n|----|-------|\n| F-1 | slow |\n| `F-2` | also |\n\n- [F-3] a list item\n- F-4: another\n";
const REPORT: &[u8] = include_bytes!("../../tests/fixtures/reports/v2-valid/report/data.json");
const REPORT_V1: &[u8] = include_bytes!("../../tests/fixtures/reports/v1-valid/report/data.json");

/// Pieces of hostile model text: Markdown and HTML syntax, template syntax,
/// controls, odd whitespace.
const PIECES: &[&str] = &[
    "a",
    "word",
    " ",
    "\n",
    "\n\n",
    "\r",
    "\t",
    "|",
    "`",
    "```",
    "<b>",
    "&",
    "\"",
    "'",
    "\u{0}",
    "\u{1b}[31m",
    "\u{7}",
    "\u{b}",
    "\u{85}",
    "\u{9b}",
    "\u{a0}",
    "日本",
    "{{ x }}",
    "{% if %}",
    "<br>",
    "*",
    "#",
    "- ",
    "none",
    "\n \n",
];

fn model_text() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PIECES), 0..8).prop_map(|pieces| pieces.concat())
}

/// Replace every string in `value` (but the ones the model reads as
/// words: `schemaVersion`, step `kind`) with the next of `texts`.
fn replace_text(value: &mut Value, key: &str, texts: &mut impl Iterator<Item = String>) {
    match value {
        Value::String(text) if !matches!(key, "schemaVersion" | "kind") => {
            *text = texts.next().unwrap_or_default();
        }
        Value::Array(items) => {
            for item in items {
                replace_text(item, key, texts);
            }
        }
        Value::Object(fields) => {
            for (key, field) in fields {
                replace_text(field, key, texts);
            }
        }
        _ => {}
    }
}

fn check_report(input: &[u8]) {
    if let Ok(value) = bounded(|| strict_json::from_slice(input)) {
        assert_eq!(
            Some(&value),
            serde_json::from_slice::<Value>(input).ok().as_ref(),
            "the strict parser reads what serde_json reads"
        );
        let _ = bounded(|| validate::invariants(&value, None, &HashMap::new()));
        let _ = bounded(|| serde_json::from_value::<model::Report>(value));
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn worker_result_items_never_panic(input in damaged(RESULT), noise in bytes()) {
        for text in [String::from_utf8_lossy(&input), String::from_utf8_lossy(&noise)] {
            let _ = bounded(|| crate::items::counts(&text));
            let _ = bounded(|| crate::items::parse(&text));
        }
    }

    #[test]
    fn damaged_reports_never_panic(input in damaged(REPORT)) {
        check_report(&input);
    }

    #[test]
    fn any_model_text_renders_and_no_stray_control_reaches_a_file(
        v1 in any::<bool>(),
        texts in prop::collection::vec(model_text(), 1..64),
        facts in prop::collection::vec(("x[a-zA-Z]{0,8}", json_value()), 0..4),
    ) {
        let mut value: Value = serde_json::from_slice(if v1 { REPORT_V1 } else { REPORT }).unwrap();
        replace_text(&mut value, "", &mut texts.into_iter().cycle());
        for (key, fact) in facts {
            value["task"][key] = fact;
        }
        let report: model::Report = serde_json::from_value(value).unwrap();
        let (markdown, html) = bounded(|| render::render(&report)).unwrap();
        prop_assert!(!markdown.chars().any(is_stray_control), "{markdown:?}");
        prop_assert!(!html.chars().any(|c| is_stray_control(c) && c != '\r'), "{html:?}");
        prop_assert!(!html.contains("<b>"), "model markup printed as markup: {html:?}");
    }

    #[test]
    fn any_json_as_a_report_never_panics(value in json_value(), noise in bytes()) {
        check_report(value.to_string().as_bytes());
        check_report(&noise);
    }
}
