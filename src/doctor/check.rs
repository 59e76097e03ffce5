//! What the doctor learns about one CLI: its version and which program it
//! really is (from `--version`, and for grok from `--help`), and whether
//! credentials look configured (from the environment and files under
//! `HOME`; a secret is never read or printed, only "set" or "found").
//!
//! Every CLI is started through `child::run_captured`: a bounded wall time,
//! a bounded output buffer, stdin on `/dev/null`, in its own process group
//! (killed whole at the end), as a child of the doctor's sub-reaper (so a
//! daemon it starts with `setsid` is killed too), and never without
//! arguments: a bare `kimi` from the legacy `PyPI` package pipes a remote
//! installer into a shell.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use regex::Regex;

use crate::catalog::Provider;
use crate::child::{self, Subreaper};
use crate::cli_facts::Program;

/// How long `--version` or `--help` may take (node CLIs start in 0.3–3 s).
pub const VERSION_LIMIT: Duration = Duration::from_secs(10);
/// How much of a CLI's output is kept (the rest is read and dropped).
const OUTPUT_LIMIT: usize = 16 * 1024;

/// The outcome of one bounded run.
#[derive(Debug, Clone, Default)]
pub struct Captured {
    /// The exit code; `None` when killed by a signal.
    pub code: Option<i32>,
    /// stdout and stderr merged, lossily decoded, at most [`OUTPUT_LIMIT`] bytes.
    pub output: String,
    pub timed_out: bool,
}

/// Run `program args…` for at most `limit` (`child::run_captured`: its own
/// group, stdin `/dev/null`, the group stopped at the end), as a child of
/// `subreaper` when there is one, so a daemon it starts with `setsid` is
/// stopped too.
pub fn run_bounded(
    program: &Path,
    args: &[&str],
    limit: Duration,
    subreaper: Option<&Subreaper>,
) -> io::Result<Captured> {
    let mut builder = child::Builder::new(program);
    // A probe never outlives the okstra that asked (even one SIGKILLed).
    builder.die_with_parent().args(args).env("NO_COLOR", "1");
    // Every CLI's switch is set, whichever program this is: none updates
    // itself while it is only asked its version.
    for name in Provider::ALL
        .iter()
        .flat_map(|provider| provider.descriptor().no_update_env)
    {
        builder.env(name, "1");
    }
    let capture = child::Capture {
        limit,
        keep: OUTPUT_LIMIT,
        merge: true,
        input: None,
    };
    let captured = child::run_captured(builder, &capture, subreaper)?;
    Ok(Captured {
        code: captured.code,
        output: String::from_utf8_lossy(&captured.stdout).into_owned(),
        timed_out: captured.timed_out,
    })
}

/// What `--version` (and `--help` for grok) said about a CLI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub version: Option<String>,
    pub program: Program,
    pub detail: Option<String>,
}

/// Ask the CLI at `path` who it is.
pub fn identify(provider: Provider, path: &Path, subreaper: Option<&Subreaper>) -> Identity {
    let version = match run_bounded(path, &["--version"], VERSION_LIMIT, subreaper) {
        Ok(captured) => captured,
        Err(err) => {
            return Identity {
                version: None,
                program: Program::Unrecognised,
                detail: Some(format!("cannot run `{} --version`: {err}", path.display())),
            };
        }
    };
    let help = if provider.descriptor().identity.reads_help && version.code == Some(0) {
        run_bounded(path, &["--help"], VERSION_LIMIT, subreaper).ok()
    } else {
        None
    };
    classify(provider, &version, help.as_ref())
}

/// The pure part of [`identify`]: outputs → identity.
pub fn classify(provider: Provider, version: &Captured, help: Option<&Captured>) -> Identity {
    let text = version.output.as_str();
    let parsed = parse_version(text);
    let unrecognised = |detail: String| Identity {
        version: parsed.clone(),
        program: Program::Unrecognised,
        detail: Some(detail),
    };
    if version.timed_out {
        return unrecognised(format!(
            "`{} --version` did not finish within {} s",
            provider.binary(),
            VERSION_LIMIT.as_secs()
        ));
    }
    // `--help` was read only after a `--version` that succeeded; read but
    // unreadable, it shows nothing.
    let identity = provider.descriptor().identity;
    let help = (identity.reads_help && version.code == Some(0))
        .then(|| help.map_or("", |help| help.output.as_str()));
    if let Some(other) = (identity.look_alike)(text, help) {
        return Identity {
            version: parsed,
            program: other.program,
            detail: Some(other.detail.to_owned()),
        };
    }
    if let Some(crash) = identity.crash.filter(|crash| text.contains(crash.needle)) {
        return unrecognised(crash.detail.to_owned());
    }
    if version.code != Some(0) {
        return unrecognised(format!(
            "`{} --version` failed ({}): {}",
            provider.binary(),
            version.code.map_or_else(
                || "killed by a signal".to_owned(),
                |code| format!("exit {code}")
            ),
            first_line(text)
        ));
    }
    Identity {
        version: parsed,
        program: Program::Expected,
        detail: None,
    }
}

/// The first version-looking token (`2.1.197`, `0.171.0`, `1.0.1-beta.2`).
pub fn parse_version(text: &str) -> Option<String> {
    static VERSION: std::sync::LazyLock<Option<Regex>> = std::sync::LazyLock::new(|| {
        Regex::new(r"\b[0-9]+\.[0-9]+(?:\.[0-9]+)?(?:[-+][0-9A-Za-z.-]+)?").ok()
    });
    VERSION
        .as_ref()?
        .find(text)
        .map(|found| found.as_str().to_owned())
}

/// The first non-empty line, at most 160 characters, with its control
/// characters escaped: it is a CLI's own output, printed by the doctor and
/// kept in its cache, and no terminal sequence in it may reach a screen.
pub fn first_line(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let line: String = line.chars().take(160).collect();
    crate::fsread::escape(&line).into_owned()
}

/// Where credentials for `provider` were seen: `NAME set` for a non-empty
/// variable, `found <file>` for a login or config file. Empty when none.
pub fn credentials(
    provider: Provider,
    env: &dyn Fn(&str) -> Option<String>,
    home: Option<&Path>,
) -> Vec<String> {
    let set = |name: &str| env(name).is_some_and(|value| !value.is_empty());
    let descriptor = provider.descriptor();
    let folder = descriptor.state.folder(env, home);
    let vars = descriptor.credentials.env;
    let files: Vec<PathBuf> = folder
        .map(|folder| folder.join(descriptor.credentials.file))
        .into_iter()
        .collect();
    let mut seen: Vec<String> = vars
        .iter()
        .filter(|name| set(name))
        .map(|name| format!("{name} set"))
        .collect();
    seen.extend(
        files
            .iter()
            .filter(|file| file.is_file())
            .map(|file| format!("found {}", file.display())),
    );
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(code: i32, text: &str) -> Captured {
        Captured {
            code: Some(code),
            output: text.to_owned(),
            timed_out: false,
        }
    }

    #[test]
    fn versions_are_read_from_the_first_token() {
        assert_eq!(
            parse_version("2.1.197 (Claude Code)").as_deref(),
            Some("2.1.197")
        );
        assert_eq!(
            parse_version("codex-cli 0.171.0\n").as_deref(),
            Some("0.171.0")
        );
        assert_eq!(
            parse_version("kimi, version 1.52.0").as_deref(),
            Some("1.52.0")
        );
        assert_eq!(parse_version("no digits"), None);
    }

    #[test]
    fn vibe_kit_grok_is_told_from_grok_build() {
        let help = out(0, "  -d, --directory <dir>\n  --max-tool-rounds <n>\n");
        let id = classify(Provider::Grok, &out(0, "1.0.1\n"), Some(&help));
        assert_eq!(id.program, Program::VibeKitGrok);
        assert_eq!(id.version.as_deref(), Some("1.0.1"));
        let build = out(0, "--cwd <path>\n--output-format <fmt>\n");
        let id = classify(Provider::Grok, &out(0, "grok 0.3.0"), Some(&build));
        assert_eq!(id.program, Program::Expected);
        let id = classify(Provider::Grok, &out(0, "x 1.0"), Some(&out(0, "usage: x")));
        assert_eq!(id.program, Program::Unrecognised);
    }

    #[test]
    fn legacy_kimi_and_old_node_are_named() {
        let legacy = out(
            0,
            "kimi, version 1.52.0\nkimi-cli is no longer maintained. Please use the new Kimi Code CLI.\n",
        );
        assert_eq!(
            classify(Provider::Kimi, &legacy, None).program,
            Program::LegacyKimiCli
        );
        let crash = out(
            1,
            "SyntaxError: ... does not provide an export named 'createZstdDecompress'",
        );
        let id = classify(Provider::Kimi, &crash, None);
        assert_eq!(id.program, Program::Unrecognised);
        assert!(id.detail.unwrap().contains("node 22.19"));
        assert_eq!(
            classify(Provider::Kimi, &out(0, "2.1.0"), None).program,
            Program::Expected
        );
    }

    #[test]
    fn a_failing_version_is_unrecognised() {
        let id = classify(Provider::Codex, &out(3, "\n boom \n"), None);
        assert_eq!(id.program, Program::Unrecognised);
        assert_eq!(
            id.detail.as_deref(),
            Some("`codex --version` failed (exit 3): boom")
        );
    }

    #[test]
    fn credentials_name_variables_and_files_never_values() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".codex")).unwrap();
        std::fs::write(home.path().join(".codex/auth.json"), "{\"secret\":1}").unwrap();
        let env = |name: &str| match name {
            "OPENAI_API_KEY" => Some("sk-very-secret".to_owned()),
            "CODEX_API_KEY" => Some(String::new()),
            _ => None,
        };
        let seen = credentials(Provider::Codex, &env, Some(home.path()));
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0], "OPENAI_API_KEY set");
        assert!(seen[1].starts_with("found ") && seen[1].ends_with(".codex/auth.json"));
        assert!(!seen.concat().contains("secret\""));
        assert!(credentials(Provider::Grok, &env, Some(home.path())).is_empty());
    }
}
