//! The one rule for a session or agent id a CLI reports: it becomes part
//! of a file name, so only letters, digits, `-` and `_` are taken.

/// A session or agent id is used in a file name: letters, digits, `-`, `_`.
pub fn is_valid_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}
