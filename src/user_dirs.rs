//! okstra's per-user folders, found the one way the XDG base-directory
//! specification says: an environment variable only counts when it holds an
//! absolute path, else the documented default under `HOME`.
//!
//! - [`state_dir`]: `$XDG_STATE_HOME/okstra`, default
//!   `~/.local/state/okstra` — the install manifest, isolated copies.
//! - [`runtime_dir`]: `$XDG_RUNTIME_DIR/okstra` when the session has one
//!   (a per-user tmpfs the system empties at logout), else the state
//!   folder — provider slot locks.
//!
//! Each takes the environment as a function, so tests pass their own.

use std::ffi::OsString;
use std::path::PathBuf;

/// A way to read an environment variable (`std::env::var_os` in use).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<OsString>;

/// `name`'s value if it is an absolute path (relative and empty values are
/// ignored, as the specification asks).
fn absolute(env: Env<'_>, name: &str) -> Option<PathBuf> {
    env(name)
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
}

/// okstra's per-user state folder, or `None` when neither
/// `XDG_STATE_HOME` nor `HOME` is an absolute path.
pub fn state_dir(env: Env<'_>) -> Option<PathBuf> {
    absolute(env, "XDG_STATE_HOME")
        .or_else(|| absolute(env, "HOME").map(|home| home.join(".local/state")))
        .map(|state| state.join("okstra"))
}

/// okstra's per-user runtime folder: under `XDG_RUNTIME_DIR` when set,
/// else the state folder.
pub fn runtime_dir(env: Env<'_>) -> Option<PathBuf> {
    absolute(env, "XDG_RUNTIME_DIR")
        .map(|runtime| runtime.join("okstra"))
        .or_else(|| state_dir(env))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| OsString::from(value))
        }
    }

    #[test]
    fn only_absolute_values_count() {
        type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>, Option<&'a str>);
        let cases: &[Case<'_>] = &[
            (
                &[
                    ("XDG_STATE_HOME", "/s"),
                    ("HOME", "/h"),
                    ("XDG_RUNTIME_DIR", "/r"),
                ],
                Some("/s/okstra"),
                Some("/r/okstra"),
            ),
            (
                &[
                    ("XDG_STATE_HOME", "rel"),
                    ("HOME", "/h"),
                    ("XDG_RUNTIME_DIR", ""),
                ],
                Some("/h/.local/state/okstra"),
                Some("/h/.local/state/okstra"),
            ),
            (&[("HOME", "h")], None, None),
        ];
        for (pairs, state, runtime) in cases {
            let env = env(pairs);
            assert_eq!(state_dir(&env), state.map(PathBuf::from), "{pairs:?}");
            assert_eq!(runtime_dir(&env), runtime.map(PathBuf::from), "{pairs:?}");
        }
    }
}
