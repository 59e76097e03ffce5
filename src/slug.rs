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

/// Words of a text kept in a slug made from it.
const DERIVED_WORDS: usize = 8;
/// The longest slug made from a text: short enough to read in a path.
const DERIVED_MAX: usize = 48;

/// A slug made from free text (a question's first line): its first words,
/// lowercased, ASCII letters and digits only, joined with `-`, at most
/// [`DERIVED_MAX`] bytes; `fallback` when nothing is left (a question in
/// another script). Always satisfies [`is_slug`] when `fallback` does.
pub fn derive(text: &str, fallback: &str) -> String {
    let line = text
        .lines()
        .map(|l| l.trim_start_matches(['#', ' ', '\t', '>', '-', '*']))
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let mut slug = String::new();
    let words = line
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(DERIVED_WORDS);
    for word in words {
        let word = word.to_ascii_lowercase();
        let extra = usize::from(!slug.is_empty());
        if slug.len() + extra + word.len() > DERIVED_MAX {
            if slug.is_empty() {
                slug.push_str(&word[..DERIVED_MAX]);
            }
            break;
        }
        if extra == 1 {
            slug.push('-');
        }
        slug.push_str(&word);
    }
    if is_slug(&slug) {
        slug
    } else {
        fallback.to_owned()
    }
}

/// `base`, or `base-2`, `base-3` … : the first that `taken` says is free.
pub fn unique(base: &str, taken: impl Fn(&str) -> bool) -> String {
    if !taken(base) {
        return base.to_owned();
    }
    (2_u32..=u32::MAX)
        .map(|n| {
            let suffix = format!("-{n}");
            let mut head = base.to_owned();
            head.truncate(MAX_LEN - suffix.len());
            format!("{head}{suffix}")
        })
        .find(|candidate| !taken(candidate))
        .unwrap_or_else(|| base.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_derived_from_a_questions_first_line() {
        assert_eq!(
            derive("Why are reservations oversold?\nmore", "q"),
            "why-are-reservations-oversold"
        );
        assert_eq!(
            derive("# Checkout 500s since v2.3\n", "q"),
            "checkout-500s-since-v2-3"
        );
        assert_eq!(derive("\n\n  ", "question"), "question");
        assert_eq!(derive("予約が重複するのはなぜ？", "question"), "question");
        assert_eq!(
            derive("one two three four five six seven eight nine ten", "q"),
            "one-two-three-four-five-six-seven-eight"
        );
        let long = derive(&"x".repeat(300), "q");
        assert_eq!(long.len(), DERIVED_MAX);
        assert!(is_slug(&long));
    }

    #[test]
    fn unique_slugs_count_up_past_the_taken_ones() {
        let taken = ["why", "why-2"];
        assert_eq!(unique("why", |c| taken.contains(&c)), "why-3");
        assert_eq!(unique("new", |c| taken.contains(&c)), "new");
        let long = "a".repeat(MAX_LEN);
        let next = unique(&long, |c| c == long);
        assert!(is_slug(&next) && next.ends_with("-2"), "{next}");
    }

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
