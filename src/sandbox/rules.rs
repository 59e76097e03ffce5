//! What a provider CLI may write under Landlock: a pure function from the
//! provider's descriptor and one attempt to paths ([`write_set`]).
//!
//! Each CLI's own state folders were measured by tracing the installed
//! CLIs (`strace -f` of a start and a failing headless call, fresh `HOME`;
//! docs/workspaces.md has the figures): claude writes beneath `~/.claude`
//! (`$CLAUDE_CONFIG_DIR`) and replaces `~/.claude.json` through a temporary
//! file and a lock folder beside it in `~` — which no rule here allows, so
//! it skips that update and runs on; kimi-code beneath `~/.kimi-code`
//! (`$KIMI_CODE_HOME`); the community grok beneath `~/.grok` (and a
//! `.grok/` folder in the project, refused: it says so and runs on); Grok
//! Build beneath `~/.grok` by its own docs; codex beneath `~/.codex`
//! (`$CODEX_HOME`), though codex is not confined here at all (see
//! [`confined`]). Antigravity could not be installed here; its folder is
//! the documented `~/.gemini`.
//!
//! Every attempt may also write a scratch folder of its own (its
//! `TMPDIR`), `/dev/null` and the terminal (`/dev/tty`, `/dev/pts`); the
//! Executor its copy; and every CLI the folders the user names in
//! [`super::WRITABLE_ENV`]. Never the project: a path that is the project,
//! lies in it or holds it is refused ([`WriteSet::refused`]), whichever
//! rule named it.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use crate::catalog::Provider;

/// A way to read the CLI's environment (`HOME`, `CLAUDE_CONFIG_DIR` …).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<OsString>;

/// Whether okstra confines `provider`'s CLI with Landlock (its
/// descriptor says; codex, whose own sandbox cannot run inside a Landlock
/// domain, is the one it does not).
pub fn confined(provider: Provider) -> bool {
    provider.descriptor().landlock
}

/// One attempt, as far as its write set goes.
#[derive(Debug, Clone)]
pub struct Attempt<'a> {
    /// The user's project (canonical): never writable.
    pub project: &'a Path,
    /// The Executor's copy, when the attempt may write one.
    pub copy: Option<&'a Path>,
    /// The attempt's own scratch folder (its `TMPDIR`).
    pub scratch: &'a Path,
    /// Folders the user lets every CLI write ([`super::WRITABLE_ENV`]).
    pub extra: &'a [PathBuf],
}

/// What one CLI may write.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteSet {
    /// Folders: everything beneath them may be written.
    pub dirs: Vec<PathBuf>,
    /// Files that may be written in place (never replaced or removed).
    pub files: Vec<PathBuf>,
    /// Folders the CLI keeps its own state in, to be made before it starts
    /// when missing (a rule needs a folder that exists).
    pub state: Vec<PathBuf>,
    /// Paths a rule named that are refused, and why.
    pub refused: Vec<(PathBuf, &'static str)>,
}

/// The terminal and the null device, as every CLI uses them.
const DEVICE_DIRS: [&str; 1] = ["/dev/pts"];
const DEVICE_FILES: [&str; 2] = ["/dev/null", "/dev/tty"];

/// `provider`'s own state: the folders it keeps, and the files beside them.
fn state_of(provider: Provider, env: Env<'_>) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let home = absolute(env, "HOME");
    let in_home = |name: &str| home.as_ref().map(|home| home.join(name));
    let state = provider.descriptor().state;
    match state.relocated_by.and_then(|name| absolute(env, name)) {
        // Relocated, the file it keeps beside the folder lives inside it.
        Some(dir) => (vec![dir], Vec::new()),
        None => (
            in_home(state.home).into_iter().collect(),
            state.file_beside.and_then(in_home).into_iter().collect(),
        ),
    }
}

/// What `provider`'s CLI may write in `attempt`, its environment `env`.
pub fn write_set(provider: Provider, env: Env<'_>, attempt: &Attempt<'_>) -> WriteSet {
    let (state, state_files) = state_of(provider, env);
    let mut set = WriteSet::default();
    let mut dirs: Vec<PathBuf> = state.clone();
    dirs.push(attempt.scratch.to_path_buf());
    dirs.extend(attempt.copy.map(Path::to_path_buf));
    dirs.extend(attempt.extra.iter().cloned());
    dirs.extend(DEVICE_DIRS.iter().map(PathBuf::from));
    let mut files = state_files;
    files.extend(DEVICE_FILES.iter().map(PathBuf::from));
    for (paths, into) in [(dirs, &mut set.dirs), (files, &mut set.files)] {
        for path in paths {
            match refusal(&path, attempt.project) {
                Some(why) => set.refused.push((path, why)),
                None if !into.contains(&path) => into.push(path),
                None => {}
            }
        }
    }
    set.state = state
        .into_iter()
        .filter(|dir| set.dirs.contains(dir))
        .collect();
    set
}

/// Why `path` may not be written by a CLI of `project`, if it may not.
pub fn refusal(path: &Path, project: &Path) -> Option<&'static str> {
    let path = lexical(path);
    let project = lexical(project);
    if !path.is_absolute() {
        Some("it is not an absolute path")
    } else if path.starts_with(&project) {
        Some("it is the project or lies in it")
    } else if project.starts_with(&path) {
        Some("it holds the project")
    } else {
        None
    }
}

/// `path` with `.` and `..` resolved on the text alone.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// `name`'s value when it is an absolute path.
fn absolute(env: Env<'_>, name: &str) -> Option<PathBuf> {
    env(name)
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
}

/// The folders of a [`super::WRITABLE_ENV`] value (`:`-separated), each
/// absolute; the first that is not is the error.
pub fn parse_writable(value: &std::ffi::OsStr) -> Result<Vec<PathBuf>, String> {
    use std::os::unix::ffi::OsStrExt;
    value
        .as_bytes()
        .split(|b| *b == b':')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let path = PathBuf::from(std::ffi::OsStr::from_bytes(part));
            if path.is_absolute() {
                Ok(path)
            } else {
                Err(format!(
                    "`{}` is not an absolute path: expected folders like `/home/me/.cache/tool`, separated by `:`",
                    path.display()
                ))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> {
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| OsString::from(value))
        }
    }

    fn paths(items: &[&str]) -> Vec<PathBuf> {
        items.iter().map(PathBuf::from).collect()
    }

    const HOME: &[(&str, &str)] = &[("HOME", "/home/u")];

    fn attempt<'a>(copy: Option<&'a Path>, extra: &'a [PathBuf]) -> Attempt<'a> {
        Attempt {
            project: Path::new("/home/u/src/app"),
            copy,
            scratch: Path::new("/home/u/.local/state/okstra/scratch/a1"),
            extra,
        }
    }

    #[test]
    fn each_cli_writes_its_own_state_the_scratch_and_the_terminal() {
        let common_dirs = ["/home/u/.local/state/okstra/scratch/a1", "/dev/pts"];
        let cases: [(Provider, &[&str], &[&str]); 5] = [
            (
                Provider::Claude,
                &["/home/u/.claude"],
                &["/home/u/.claude.json"],
            ),
            (Provider::Codex, &["/home/u/.codex"], &[]),
            (Provider::Antigravity, &["/home/u/.gemini"], &[]),
            (Provider::Grok, &["/home/u/.grok"], &[]),
            (Provider::Kimi, &["/home/u/.kimi-code"], &[]),
        ];
        for (provider, state, state_files) in cases {
            let set = write_set(provider, &env(HOME), &attempt(None, &[]));
            let mut dirs = paths(state);
            dirs.extend(paths(&common_dirs));
            let mut files = paths(state_files);
            files.extend(paths(&["/dev/null", "/dev/tty"]));
            assert_eq!(set.dirs, dirs, "{provider}");
            assert_eq!(set.files, files, "{provider}");
            assert_eq!(set.state, paths(state), "{provider}");
            assert!(set.refused.is_empty(), "{provider}");
        }
    }

    #[test]
    fn relocated_state_folders_follow_their_variables() {
        let relocated: &[(&str, &str)] = &[
            ("HOME", "/home/u"),
            ("CLAUDE_CONFIG_DIR", "/cfg/claude"),
            ("CODEX_HOME", "/cfg/codex"),
            ("KIMI_CODE_HOME", "/cfg/kimi"),
        ];
        let leaked: &'static [(&'static str, &'static str)] = Box::leak(relocated.into());
        for (provider, dir) in [
            (Provider::Claude, "/cfg/claude"),
            (Provider::Codex, "/cfg/codex"),
            (Provider::Kimi, "/cfg/kimi"),
        ] {
            let set = write_set(provider, &env(leaked), &attempt(None, &[]));
            assert_eq!(set.state, paths(&[dir]), "{provider}");
            // A relocated claude keeps its `.claude.json` in the folder.
            assert!(!set.files.iter().any(|f| f.ends_with(".claude.json")));
        }
        // A relative value is no location: the default holds.
        let relative: &'static [(&'static str, &'static str)] =
            &[("HOME", "/home/u"), ("KIMI_CODE_HOME", "kimi")];
        let set = write_set(Provider::Kimi, &env(relative), &attempt(None, &[]));
        assert_eq!(set.state, paths(&["/home/u/.kimi-code"]));
    }

    #[test]
    fn the_executor_writes_its_copy_and_the_user_adds_folders() {
        let extra = paths(&["/opt/cache"]);
        let set = write_set(
            Provider::Claude,
            &env(HOME),
            &attempt(Some(Path::new("/state/ws/run/claude")), &extra),
        );
        assert!(set.dirs.contains(&PathBuf::from("/state/ws/run/claude")));
        assert!(set.dirs.contains(&PathBuf::from("/opt/cache")));
    }

    #[test]
    fn nothing_that_is_holds_or_lies_in_the_project_is_writable() {
        // The project under a CLI's state folder, a state folder in the
        // project, and folders the user named that reach it.
        let inside: &'static [(&'static str, &'static str)] = &[
            ("HOME", "/home/u"),
            ("KIMI_CODE_HOME", "/home/u/src/app/.kimi"),
            ("CLAUDE_CONFIG_DIR", "/home/u/src/app/../app/cfg"),
        ];
        let extra = paths(&["/home", "/home/u/src/app/build", "/home/u/src/other"]);
        for provider in [Provider::Kimi, Provider::Claude] {
            let set = write_set(
                provider,
                &env(inside),
                &attempt(Some(Path::new("/home/u/src/app")), &extra),
            );
            let refused: Vec<&Path> = set.refused.iter().map(|(p, _)| p.as_path()).collect();
            assert!(refused.contains(&Path::new("/home")), "{refused:?}");
            assert!(refused.contains(&Path::new("/home/u/src/app/build")));
            assert!(refused.contains(&Path::new("/home/u/src/app")));
            assert!(set.dirs.contains(&PathBuf::from("/home/u/src/other")));
            for dir in set.dirs.iter().chain(&set.files) {
                assert_eq!(refusal(dir, Path::new("/home/u/src/app")), None, "{dir:?}");
            }
            assert!(set.state.is_empty(), "{provider}: {:?}", set.state);
        }
    }

    #[test]
    fn writable_folders_are_absolute() {
        assert_eq!(
            parse_writable("/a::/b/c".as_ref()).unwrap(),
            paths(&["/a", "/b/c"])
        );
        assert!(
            parse_writable("/a:rel".as_ref())
                .unwrap_err()
                .contains("`rel` is not an absolute path")
        );
    }
}
