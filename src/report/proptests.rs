//! Property tests of the report parsers: worker result items, the strict
//! report parser, the invariant checks and the report model: whatever the
//! input, no panic and bounded time.

use std::collections::HashMap;

use proptest::prelude::*;
use serde_json::Value;

use super::{model, strict_json, validate};
use crate::fuzz::{bounded, bytes, config, damaged, json_value};

const RESULT: &[u8] = b"# Findings\n\n| ID | Claim |\n|----|-------|\n| F-1 | slow |\n| `F-2` | also |\n\n- [F-3] a list item\n- F-4: another\n";
const REPORT: &[u8] = include_bytes!("../../tests/fixtures/reports/v2-valid/report/data.json");

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
    fn any_json_as_a_report_never_panics(value in json_value(), noise in bytes()) {
        check_report(value.to_string().as_bytes());
        check_report(&noise);
    }
}
