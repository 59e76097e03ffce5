//! The slug rule, in one place: `^[a-z0-9][a-z0-9._-]{0,127}$`.
//!
//! A slug is a name okstra puts into paths and logs, so it can never leave
//! its folder or break a line: a lowercase ASCII letter or digit, then up to
//! 127 more of those or `.`, `_`, `-`. Task-key parts and related tasks
//! (`settings`) and lead-event kinds (`lifecycle::event`) are slugs; each
//! caller words its own refusal. The JSON Schemas repeat the pattern as data
//! (`slug` and `taskKey` in the task manifest, `kind` in a lead event); a
//! test below keeps them equal to [`PATTERN`].

/// The rule as a regular expression, for messages and schemas.
pub const PATTERN: &str = "^[a-z0-9][a-z0-9._-]{0,127}$";

/// The longest slug, in bytes (every accepted character is one byte).
pub const MAX_LEN: usize = 128;

/// Whether `value` is a slug.
pub fn is_slug(value: &str) -> bool {
    let lower_or_digit = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = value.as_bytes();
    let Some((first, rest)) = bytes.split_first() else {
        return false;
    };
    bytes.len() <= MAX_LEN
        && lower_or_digit(first)
        && rest.iter().all(|b| lower_or_digit(b) || b"._-".contains(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_and_refuses_by_the_rule() {
        let longest = "a".repeat(MAX_LEN);
        for good in ["a", "0", "phase-start", "worker.dispatched_2", &longest] {
            assert!(is_slug(good), "{good:?}");
        }
        let too_long = "a".repeat(MAX_LEN + 1);
        for bad in [
            "", "Phase", "-x", ".x", "_x", "a b", "é", "a/b", "..", "a\n", "aB", &too_long,
        ] {
            assert!(!is_slug(bad), "{bad:?}");
        }
    }

    #[test]
    fn agrees_with_the_pattern() {
        let regex = regex::Regex::new(PATTERN).unwrap();
        let long = "a".repeat(MAX_LEN);
        let longer = "a".repeat(MAX_LEN + 1);
        let samples = [
            "", "a", "z9", "9z", "a.b_c-d", "-a", "A", "a\n", "é", "ab\u{0}", &long, &longer,
        ];
        for sample in samples {
            assert_eq!(is_slug(sample), regex.is_match(sample), "{sample:?}");
        }
    }

    #[test]
    fn schemas_repeat_the_same_pattern() {
        let pattern = |schema: &str, pointer: &str| -> String {
            let text = crate::schema::text(schema).unwrap();
            let value: serde_json::Value = serde_json::from_str(text).unwrap();
            value.pointer(pointer).unwrap().as_str().unwrap().to_owned()
        };
        assert_eq!(
            pattern("lead-event.schema.json", "/properties/kind/pattern"),
            PATTERN
        );
        let task = "task-manifest.schema.json";
        assert_eq!(pattern(task, "/$defs/slug/pattern"), PATTERN);
        let part = PATTERN.trim_start_matches('^').trim_end_matches('$');
        assert_eq!(
            pattern(task, "/properties/taskKey/pattern"),
            format!("^{part}/{part}/{part}$")
        );
    }
}
