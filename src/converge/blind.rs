//! What a blind round hides from a reviewer: who wrote a claim. A claim's
//! text (and an earlier verdict's evidence) is shown with every worker
//! name and every item id of the run's results replaced, because a name
//! ("as codex found") or an owner-local id ("the steps F-1 and F-2 lack")
//! tells the reviewer whose claim it reads.
//!
//! A word is a run of letters, digits, `.`, `_` and `-` (a path such as
//! `src/F-1.py` is not the id `F-1`). Names (worker ids, providers, their
//! CLIs, the roster's models) are matched without regard to case and
//! become `[a worker]`. An item id is matched exactly, and only when it
//! holds a letter and a digit (`F-001`, `K-2`, `AG-3`): a bare `1` or
//! `1.2` is as likely a count or a version as an id, and stays. An id of
//! the same author that the reviewer has under a label becomes that label
//! (`Item 4`); any other becomes `[an item]`.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

/// What the reviewers of one round must not read.
#[derive(Debug, Default)]
pub struct Blind {
    /// Lowercase worker names.
    names: HashSet<String>,
    /// Every result's item ids.
    ids: HashSet<String>,
}

/// What a hidden name becomes.
pub const NAME: &str = "[a worker]";
/// What a hidden item id becomes when the reviewer has no label for it.
pub const ITEM: &str = "[an item]";

impl Blind {
    /// Hide `names` (any case) and the item `ids` of every result.
    pub fn new<'a>(
        names: impl IntoIterator<Item = &'a str>,
        ids: impl IntoIterator<Item = &'a str>,
    ) -> Blind {
        Blind {
            names: names
                .into_iter()
                .filter(|name| !name.is_empty())
                .map(str::to_lowercase)
                .collect(),
            ids: ids
                .into_iter()
                .filter(|id| looks_like_an_id(id))
                .map(str::to_owned)
                .collect(),
        }
    }

    /// `text` written by `author`, as a reviewer whose labels are `labels`
    /// (item id → label) may read it.
    pub fn text<'t>(
        &self,
        text: &'t str,
        author: &str,
        labels: &HashMap<String, String>,
    ) -> Cow<'t, str> {
        let mut out = String::new();
        let mut last = 0;
        let mut changed = false;
        for (start, word) in words(text) {
            let core = word.trim_end_matches(['.', '-', '_']);
            let shown = if self.names.contains(&core.to_lowercase()) {
                Some(Cow::Borrowed(NAME))
            } else if self.ids.contains(core) {
                let label = labels.get(&format!("{author}:{core}"));
                Some(label.map_or(Cow::Borrowed(ITEM), |label| Cow::Owned(label.clone())))
            } else {
                None
            };
            if let Some(shown) = shown {
                out.push_str(&text[last..start]);
                out.push_str(&shown);
                last = start + core.len();
                changed = true;
            }
        }
        if !changed {
            return Cow::Borrowed(text);
        }
        out.push_str(&text[last..]);
        Cow::Owned(out)
    }
}

/// An id worth hiding: a letter and a digit, nothing but word characters.
fn looks_like_an_id(id: &str) -> bool {
    id.bytes().any(|b| b.is_ascii_alphabetic())
        && id.bytes().any(|b| b.is_ascii_digit())
        && id.bytes().all(is_word_byte)
}

fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-')
}

/// Each word of `text` with its byte offset.
fn words(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let bytes = text.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < bytes.len() && !is_word_byte(bytes[at]) {
            at += 1;
        }
        if at >= bytes.len() {
            return None;
        }
        let start = at;
        while at < bytes.len() && is_word_byte(bytes[at]) {
            at += 1;
        }
        Some((start, &text[start..at]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ids_are_hidden_and_nothing_else() {
        let blind = Blind::new(
            ["claude", "codex", "opus", "gpt-5.6-sol"],
            ["F-001", "F-002", "F-1", "1.2", "2"],
        );
        let labels: HashMap<String, String> = [("claude:F-002".to_owned(), "Item 4".to_owned())]
            .into_iter()
            .collect();
        let rows = [
            (
                "the steps F-001 and F-002 lack a lock.",
                "the steps [an item] and Item 4 lack a lock.",
            ),
            (
                "as Codex found (F-1), Claude's check races",
                "as [a worker] found ([an item]), [a worker]'s check races",
            ),
            ("GPT-5.6-sol agrees", "[a worker] agrees"),
            // Paths, counts and versions stay.
            (
                "src/F-1.py:2 sees 2 of 1.2 items",
                "src/F-1.py:2 sees 2 of 1.2 items",
            ),
            ("codexes and claudeish", "codexes and claudeish"),
            ("F-0010 is not F-001", "F-0010 is not [an item]"),
        ];
        for (text, shown) in rows {
            assert_eq!(blind.text(text, "claude", &labels), shown, "{text}");
        }
        // The same id by another author is not that author's label.
        assert_eq!(blind.text("see F-002", "codex", &labels), "see [an item]");
        assert!(matches!(
            blind.text("nothing to hide", "claude", &labels),
            Cow::Borrowed(_)
        ));
    }
}
