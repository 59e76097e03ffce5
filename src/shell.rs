//! Command lines okstra prints for a person or a host to run (the resume
//! line of `okstra run`, the `submit`, `wait` and `cancel` lines of `okstra
//! next`): every word quoted for a POSIX shell only when it needs it, and
//! okstra named the way it was started, so the line runs where the host
//! runs it.

use std::ffi::OsStr;
use std::path::Path;

/// `text` quoted for a POSIX shell when it needs it.
pub fn word(text: &str) -> String {
    if !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:=@,".contains(&b))
    {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// A path as one shell word.
pub fn path_word(path: &Path) -> String {
    word(&path.to_string_lossy())
}

/// How to name okstra in a command line: `okstra` when it was started by
/// that name from `PATH`, else the absolute path of the running binary (a
/// host's shell may not have the folder it was started from on `PATH`).
pub fn okstra() -> String {
    let started_as = std::env::args_os().next();
    if started_as.as_deref() == Some(OsStr::new("okstra")) {
        return "okstra".to_owned();
    }
    std::env::current_exe().map_or_else(|_| "okstra".to_owned(), |exe| path_word(&exe))
}

/// `okstra <args…>`, each argument a shell word.
pub fn okstra_line(args: &[&str]) -> String {
    let mut line = okstra();
    for arg in args {
        line.push(' ');
        line.push_str(&word(arg));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_only_when_needed() {
        assert_eq!(
            word("/p/.okstra/tasks/a/b/c/x-001"),
            "/p/.okstra/tasks/a/b/c/x-001"
        );
        assert_eq!(word("/my runs/it's"), r"'/my runs/it'\''s'");
        assert_eq!(word(""), "''");
        assert_eq!(word("--json"), "--json");
    }
}
