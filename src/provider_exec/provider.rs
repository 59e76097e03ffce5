//! Each provider CLI's headless command line, as a pure function.
//!
//! [`plan`] turns a validated [`Invocation`] into a [`CommandPlan`]: program,
//! argv, environment changes, where the prompt goes and the working folder.
//! Each CLI's own part (its flags, its read-only switch, where its prompt
//! goes) is its descriptor's `argv` in `crate::providers`; the environment
//! every CLI gets is here.
//! Nothing here touches the system, so every provider's exact command line is
//! pinned by unit tests. The facts behind each form (flags, stdin handling,
//! permissions) were measured against the installed CLIs; see
//! `research/provider-clis.md` in the shared notes.
//!
//! Prompt delivery: claude and codex read the prompt on **stdin**, so its
//! bytes reach them exactly and no size limit applies. kimi, antigravity and
//! grok cannot take a prompt on stdin, so they get a short argv instruction
//! naming the absolute prompt path (Grok Build via its `--prompt-file`, the
//! community vibe-kit grok via a pointer in `-p`);
//! the prompt's own bytes never go into argv (Linux caps one argument at
//! 128 KiB).
//!
//! Environment: a CLI gets only the variables the catalog lists as neutral
//! (`NEUTRAL_ENV`), its own provider's (`Provider::env_names`) and the ones
//! the user passes (`--pass-env`, carried here in [`PASS_ENV`]); never the
//! host session's markers. kimi and grok read untrusted code with every tool
//! call approved: they must not hold the user's `OPENAI_API_KEY` or
//! `GITHUB_TOKEN` while they do.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::catalog::{HOST_SESSION_MARKERS, NEUTRAL_ENV, Provider};
use crate::providers::{Program, Request};

/// Extra variable names (or `PREFIX*` patterns) a CLI may see, comma
/// separated: how `--pass-env` reaches provider-exec without changing its
/// positional argv contract. Never passed on to the CLI itself.
pub const PASS_ENV: &str = "OKSTRA_PASS_ENV";

/// Everything `plan` needs, already validated by preflight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    pub provider: Provider,
    pub model: OsString,
    /// The prompt path made absolute without resolving symlinks.
    pub prompt_path: PathBuf,
    /// Worktree if given, else project root; absolute.
    pub execution_root: PathBuf,
    pub role: String,
    /// `None` when the idle watchdog is disabled (`0`).
    pub idle_timeout_secs: Option<u64>,
    /// The CLI's env-key auth variable is set ([`Descriptor::env_auth`]):
    /// a CLI whose model flag then names an alias of its configuration
    /// gets the model through a variable instead.
    ///
    /// [`Descriptor::env_auth`]: crate::providers::Descriptor::env_auth
    pub env_auth: bool,
    /// Which program answers to the CLI's binary name, when okstra knows
    /// (its install path or the doctor's cache): the community
    /// `@vibe-kit/grok-cli` is driven with the flags it has.
    pub program: Option<Program>,
    /// Names (or `PREFIX*` patterns) passed with `--pass-env`, checked.
    pub pass_env: Vec<String>,
}

impl Invocation {
    /// Only the catalog's writing role (`executor`) may write; any other
    /// word, known role or not, runs in the CLI's read-only mode.
    fn may_write(&self) -> bool {
        self.role
            .parse::<crate::catalog::Role>()
            .is_ok_and(crate::catalog::Role::may_write)
    }
}

/// Where the child's stdin comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stdin {
    /// The prompt file's bytes, then EOF.
    Prompt,
    /// `/dev/null`: nothing waits on a stdin that never closes.
    Null,
}

/// A provider CLI's complete headless command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandPlan {
    /// Binary name, looked up on `PATH`.
    pub program: &'static str,
    pub args: Vec<OsString>,
    /// Inherited variables the CLI may see: names, or prefixes ending in `*`.
    pub env_keep: Vec<String>,
    /// Never passed, even when kept or passed by the user.
    pub env_remove: Vec<&'static str>,
    pub env_set: Vec<(&'static str, OsString)>,
    pub stdin: Stdin,
    pub cwd: PathBuf,
}

/// Build the headless command for `invocation`: the CLI's own line from
/// its descriptor (`crate::providers`), the environment okstra gives every
/// CLI around it.
pub fn plan(invocation: &Invocation) -> CommandPlan {
    let inv = invocation;
    let line = (inv.provider.descriptor().argv)(&Request {
        model: &inv.model,
        prompt_path: &inv.prompt_path,
        execution_root: &inv.execution_root,
        may_write: inv.may_write(),
        idle_timeout_secs: inv.idle_timeout_secs,
        env_auth: inv.env_auth,
        program: inv.program,
    });
    let stdin = if line.prompt_on_stdin {
        Stdin::Prompt
    } else {
        Stdin::Null
    };
    CommandPlan {
        program: inv.provider.binary(),
        args: line.args,
        env_keep: NEUTRAL_ENV
            .iter()
            .chain(inv.provider.env_names())
            .map(|name| (*name).to_owned())
            .chain(inv.pass_env.iter().cloned())
            .collect(),
        env_remove: HOST_SESSION_MARKERS
            .iter()
            .copied()
            .chain([
                super::status::ATTEMPT_ENV,
                PASS_ENV,
                crate::sandbox::CONFINE_ENV,
                crate::sandbox::WRITABLE_ENV,
            ])
            .collect(),
        env_set: line.env_set,
        stdin,
        cwd: inv.execution_root.clone(),
    }
}

impl CommandPlan {
    /// The CLI's whole environment, from `inherited` (okstra's own): the
    /// kept variables, minus the removed ones, plus the plan's own settings.
    pub fn environment(
        &self,
        inherited: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Vec<(OsString, OsString)> {
        let mut env: Vec<(OsString, OsString)> = inherited
            .into_iter()
            .filter(|(name, _)| {
                name.to_str().is_some_and(|name| {
                    !self.env_remove.contains(&name)
                        && self.env_keep.iter().any(|keep| env_matches(name, keep))
                })
            })
            .collect();
        for (name, value) in &self.env_set {
            env.retain(|(kept, _)| kept != name);
            env.push(((*name).into(), value.clone()));
        }
        env
    }
}

/// Whether variable `name` is `pattern`, or starts with it when the
/// pattern ends in `*`.
pub fn env_matches(name: &str, pattern: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == pattern,
    }
}

/// The names in a `--pass-env` list (comma separated, as [`PASS_ENV`]
/// carries it): each a variable name (`[A-Za-z_][A-Za-z0-9_]*`), or a
/// non-empty prefix of one followed by `*`. The first bad entry is the error.
pub fn parse_pass_env(text: &str) -> Result<Vec<String>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(|entry| check_pass_env(entry).map(|()| entry.to_owned()))
        .collect()
}

/// One `--pass-env` entry, checked (see [`parse_pass_env`]).
pub fn check_pass_env(entry: &str) -> Result<(), String> {
    let name = entry.strip_suffix('*').unwrap_or(entry);
    let mut bytes = name.bytes();
    let good = bytes
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if good {
        Ok(())
    } else {
        Err(format!(
            "`{entry}` is not an environment variable name: expected one like `AWS_PROFILE`, or a prefix ending in `*` like `AWS_*`"
        ))
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn invocation(provider: Provider, role: &str) -> Invocation {
        Invocation {
            provider,
            model: "m-1".into(),
            prompt_path: "/runs/t/claude.md".into(),
            execution_root: "/src/wt".into(),
            role: role.into(),
            idle_timeout_secs: Some(600),
            env_auth: false,
            program: None,
            pass_env: Vec::new(),
        }
    }

    fn argv(plan: &CommandPlan) -> Vec<String> {
        std::iter::once(plan.program.to_owned())
            .chain(plan.args.iter().map(|a| a.to_string_lossy().into_owned()))
            .collect()
    }

    fn env(plan: &CommandPlan) -> Vec<(String, String)> {
        plan.env_set
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.to_string_lossy().into_owned()))
            .collect()
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    const POINTER: &str = "Read the task in /runs/t/claude.md and follow it.";

    #[test]
    fn claude_reads_the_prompt_on_stdin_in_plan_mode() {
        let plan = plan(&invocation(Provider::Claude, "worker"));
        assert_eq!(
            argv(&plan),
            strings(&[
                "claude",
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--model",
                "m-1",
                "--permission-mode",
                "plan",
            ])
        );
        assert_eq!(plan.stdin, Stdin::Prompt);
        assert_eq!(env(&plan), vec![("DISABLE_AUTOUPDATER".into(), "1".into())]);
        assert_eq!(plan.cwd, PathBuf::from("/src/wt"));
    }

    #[test]
    fn claude_executor_may_edit() {
        let plan = plan(&invocation(Provider::Claude, "executor"));
        assert_eq!(
            argv(&plan)[7..],
            strings(&["--permission-mode", "acceptEdits"])
        );
    }

    #[test]
    fn codex_runs_exec_with_a_read_only_sandbox() {
        let plan = plan(&invocation(Provider::Codex, "verifier"));
        assert_eq!(
            argv(&plan),
            strings(&[
                "codex",
                "exec",
                "--json",
                "-m",
                "m-1",
                "-s",
                "read-only",
                "-C",
                "/src/wt",
                "--skip-git-repo-check",
                "-",
            ])
        );
        assert_eq!(plan.stdin, Stdin::Prompt);
        assert!(plan.env_set.is_empty());
    }

    #[test]
    fn codex_executor_writes_to_the_workspace() {
        let plan = plan(&invocation(Provider::Codex, "executor"));
        assert_eq!(argv(&plan)[5..7], strings(&["-s", "workspace-write"]));
    }

    #[test]
    fn antigravity_gets_a_pointer_and_a_long_print_timeout() {
        let plan = plan(&invocation(Provider::Antigravity, "analyser"));
        assert_eq!(
            argv(&plan),
            strings(&[
                "agy",
                "-p",
                POINTER,
                "--output-format",
                "stream-json",
                "--model",
                "m-1",
                "--print-timeout",
                "86400s",
            ])
        );
        assert_eq!(plan.stdin, Stdin::Null);
        assert!(plan.env_set.is_empty());
    }

    #[test]
    fn antigravity_executor_skips_permissions_and_outlives_a_huge_idle_timeout() {
        let mut inv = invocation(Provider::Antigravity, "executor");
        inv.idle_timeout_secs = Some(100_000);
        let plan = plan(&inv);
        assert_eq!(
            argv(&plan)[7..],
            strings(&[
                "--print-timeout",
                "100000s",
                "--dangerously-skip-permissions"
            ])
        );
    }

    #[test]
    fn grok_build_reads_the_prompt_file_itself() {
        let plan = plan(&invocation(Provider::Grok, "critic"));
        assert_eq!(
            argv(&plan),
            strings(&[
                "grok",
                "--prompt-file",
                "/runs/t/claude.md",
                "-m",
                "m-1",
                "--output-format",
                "streaming-json",
                "--cwd",
                "/src/wt",
                "--no-auto-update",
                "--sandbox",
                "read-only",
            ])
        );
        assert_eq!(plan.stdin, Stdin::Null);
    }

    #[test]
    fn vibe_kit_grok_gets_the_flags_it_has() {
        let mut inv = invocation(Provider::Grok, "executor");
        inv.program = Some(Program::VibeKitGrok);
        let plan = plan(&inv);
        assert_eq!(
            argv(&plan),
            strings(&["grok", "-p", POINTER, "-d", "/src/wt", "-m", "m-1"])
        );
        assert_eq!(plan.stdin, Stdin::Null);
        assert!(plan.env_set.is_empty());
    }

    #[test]
    fn grok_executor_approves_tools() {
        let plan = plan(&invocation(Provider::Grok, "executor"));
        assert_eq!(argv(&plan).last().unwrap(), "--always-approve");
    }

    #[test]
    fn kimi_gets_a_pointer_and_no_auto_update() {
        let plan = plan(&invocation(Provider::Kimi, "worker"));
        assert_eq!(
            argv(&plan),
            strings(&[
                "kimi",
                "-p",
                POINTER,
                "-m",
                "m-1",
                "--output-format",
                "stream-json",
            ])
        );
        assert_eq!(plan.stdin, Stdin::Null);
        assert_eq!(
            env(&plan),
            vec![("KIMI_CODE_NO_AUTO_UPDATE".into(), "1".into())]
        );
        // No read-only headless mode exists, so the executor's argv is the same.
        assert_eq!(
            argv(&super::plan(&invocation(Provider::Kimi, "executor"))),
            argv(&plan)
        );
    }

    #[test]
    fn kimi_with_env_key_auth_names_the_model_in_env() {
        let mut inv = invocation(Provider::Kimi, "worker");
        inv.env_auth = true;
        let plan = plan(&inv);
        assert_eq!(
            argv(&plan),
            strings(&["kimi", "-p", POINTER, "--output-format", "stream-json"])
        );
        assert_eq!(
            env(&plan),
            vec![
                ("KIMI_CODE_NO_AUTO_UPDATE".into(), "1".into()),
                ("KIMI_MODEL_NAME".into(), "m-1".into()),
            ]
        );
    }

    #[test]
    fn every_provider_drops_host_session_markers_and_runs_in_the_execution_root() {
        for &provider in Provider::ALL {
            let plan = plan(&invocation(provider, "worker"));
            assert_eq!(
                plan.env_remove,
                vec![
                    "CLAUDECODE",
                    "CLAUDE_CODE_ENTRYPOINT",
                    "CLAUDE_CODE_SSE_PORT",
                    "OKSTRA_EXEC_ATTEMPT",
                    "OKSTRA_PASS_ENV",
                    "OKSTRA_CONFINE",
                    "OKSTRA_WRITABLE"
                ]
            );
            assert_eq!(plan.cwd, PathBuf::from("/src/wt"));
            assert_eq!(plan.program, provider.binary());
        }
    }

    #[test]
    fn argv_never_carries_prompt_text() {
        for &provider in Provider::ALL {
            let plan = plan(&invocation(provider, "worker"));
            let total: usize = plan.args.iter().map(|a| a.len()).sum();
            assert!(total < 512, "{provider}: argv is {total} bytes");
        }
    }

    fn environment(plan: &CommandPlan, inherited: &[(&str, &str)]) -> Vec<String> {
        let mut names: Vec<String> = plan
            .environment(
                inherited
                    .iter()
                    .map(|(name, value)| (OsString::from(name), OsString::from(value))),
            )
            .into_iter()
            .map(|(name, value)| format!("{}={}", name.to_string_lossy(), value.to_string_lossy()))
            .collect();
        names.sort();
        names
    }

    /// What a user's shell typically holds: every provider's secret, a
    /// forge token, a cloud key, and the neutral basics.
    const SHELL: &[(&str, &str)] = &[
        ("PATH", "/usr/bin"),
        ("HOME", "/home/u"),
        ("LC_ALL", "C.UTF-8"),
        ("XDG_CONFIG_HOME", "/home/u/.config"),
        ("https_proxy", "http://proxy:3128"),
        ("ANTHROPIC_API_KEY", "a"),
        ("OPENAI_API_KEY", "o"),
        ("GEMINI_API_KEY", "g"),
        ("XAI_API_KEY", "x"),
        ("MOONSHOT_API_KEY", "m"),
        ("KIMI_MODEL_API_KEY", "k"),
        ("GITHUB_TOKEN", "gh"),
        ("AWS_SECRET_ACCESS_KEY", "aws"),
        ("CLAUDECODE", "1"),
        ("OKSTRA_PASS_ENV", "GITHUB_TOKEN"),
        ("OKSTRA_EXEC_ATTEMPT", "2"),
    ];

    #[test]
    fn each_cli_sees_only_its_own_provider_s_secrets() {
        let neutral = [
            "HOME=/home/u",
            "LC_ALL=C.UTF-8",
            "PATH=/usr/bin",
            "XDG_CONFIG_HOME=/home/u/.config",
            "https_proxy=http://proxy:3128",
        ];
        let with = |extra: &[&str]| -> Vec<String> {
            let mut all: Vec<String> = neutral
                .iter()
                .chain(extra)
                .map(|s| (*s).to_owned())
                .collect();
            all.sort();
            all
        };
        let kimi = plan(&invocation(Provider::Kimi, "analyser"));
        assert_eq!(
            environment(&kimi, SHELL),
            with(&[
                "KIMI_CODE_NO_AUTO_UPDATE=1",
                "KIMI_MODEL_API_KEY=k",
                "MOONSHOT_API_KEY=m"
            ])
        );
        let grok = plan(&invocation(Provider::Grok, "critic"));
        assert_eq!(environment(&grok, SHELL), with(&["XAI_API_KEY=x"]));
        let codex = plan(&invocation(Provider::Codex, "analyser"));
        assert_eq!(environment(&codex, SHELL), with(&["OPENAI_API_KEY=o"]));
        let claude = plan(&invocation(Provider::Claude, "analyser"));
        assert_eq!(
            environment(&claude, SHELL),
            with(&[
                "ANTHROPIC_API_KEY=a",
                "AWS_SECRET_ACCESS_KEY=aws",
                "DISABLE_AUTOUPDATER=1"
            ])
        );
        let agy = plan(&invocation(Provider::Antigravity, "analyser"));
        assert_eq!(environment(&agy, SHELL), with(&["GEMINI_API_KEY=g"]));
    }

    #[test]
    fn passed_names_and_prefixes_are_added_but_markers_never() {
        let mut inv = invocation(Provider::Kimi, "analyser");
        inv.pass_env = vec!["GITHUB_TOKEN".into(), "AWS_*".into(), "CLAUDECODE".into()];
        let env = environment(&plan(&inv), SHELL);
        assert!(env.contains(&"GITHUB_TOKEN=gh".to_owned()));
        assert!(env.contains(&"AWS_SECRET_ACCESS_KEY=aws".to_owned()));
        assert!(!env.iter().any(|line| line.starts_with("CLAUDECODE=")));
        assert!(!env.iter().any(|line| line.starts_with("OKSTRA_")));
    }

    #[test]
    fn pass_env_lists_are_names_or_prefixes() {
        assert_eq!(
            parse_pass_env("GITHUB_TOKEN, AWS_*,,_X1").unwrap(),
            vec!["GITHUB_TOKEN", "AWS_*", "_X1"]
        );
        assert_eq!(parse_pass_env("").unwrap(), Vec::<String>::new());
        for bad in ["1ABC", "A-B", "*", "A*B", "A B", "É"] {
            let err = parse_pass_env(bad).unwrap_err();
            assert!(err.starts_with(&format!("`{bad}` is not")), "{err}");
        }
    }
}
