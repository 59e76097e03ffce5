//! What `okstra install` puts where, per host: the wrapper links, each
//! host's `okstra` skill and its reap hook. Pure: paths come from a [`Homes`]
//! value resolved once from the environment, so tests pin every path.
//! The hosts are lead hosts, not provider CLIs (`crate::providers`): this
//! folder names them.
//!
//! Decisions (from the hosts research):
//! - Claude Code: a personal skill `<config>/skills/okstra/SKILL.md` whose
//!   frontmatter registers the sub-agent-stop hook (`okstra hook
//!   subagent-stop`: native workers' answers back to okstra) for the session
//!   it leads, and two reap hook groups (`Stop`, `SubagentStop`) in
//!   `<config>/settings.json`. No worker agent definitions: native workers
//!   are dispatched with the general-purpose `Agent` tool (name, model and
//!   prompt given inline).
//! - Codex: a user skill `~/.agents/skills/okstra/SKILL.md` and two groups
//!   in `$CODEX_HOME/hooks.json`: `Stop` (reap) and `SubagentStop` (the
//!   answers' hook); Codex runs them only after the user trusts them with
//!   `/hooks`.
//! - Antigravity: a skill `~/.gemini/antigravity-cli/skills/okstra/SKILL.md`
//!   and **no hook**: agy's hook file moved between versions, its schema is
//!   unstable and a wrong shape is dropped silently.

use std::path::{Path, PathBuf};

use super::json_doc::Json;
use crate::catalog::Provider;
use crate::template;
use crate::vocab::Host;

/// The folders the hosts are installed into.
#[derive(Debug, Clone)]
pub struct Homes {
    pub home: PathBuf,
    /// `CLAUDE_CONFIG_DIR`, else `~/.claude`.
    pub claude: PathBuf,
    /// `CODEX_HOME`, else `~/.codex`.
    pub codex: PathBuf,
}

impl Homes {
    /// From the environment; `None` without an absolute `HOME`.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Option<Self> {
        let absolute = |name: &str| {
            env(name)
                .map(PathBuf::from)
                .filter(|path| path.is_absolute())
        };
        let home = absolute("HOME")?;
        Some(Self {
            claude: absolute("CLAUDE_CONFIG_DIR").unwrap_or_else(|| home.join(".claude")),
            codex: absolute("CODEX_HOME").unwrap_or_else(|| home.join(".codex")),
            home,
        })
    }
}

/// One thing to put in place.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A symlink `path` → `target`.
    Link { path: PathBuf, target: PathBuf },
    /// A file okstra owns whole.
    File { path: PathBuf, bytes: Vec<u8> },
    /// Hook groups merged into a JSON settings file the user owns.
    Hooks {
        path: PathBuf,
        groups: Vec<(String, Json)>,
    },
}

/// The `okstra-<provider>-exec` links in `bin_dir`, all pointing at `target`
/// (the wrapper's own binary, or okstra).
pub fn wrapper_links(bin_dir: &Path, target: &Path) -> Vec<Item> {
    Provider::ALL
        .iter()
        .map(|provider| Item::Link {
            path: bin_dir.join(provider.wrapper()),
            target: target.to_owned(),
        })
        .collect()
}

/// `path` quoted for a POSIX shell.
fn shell_quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

/// `path` as a shell word: bare when that is safe (so a host's command
/// allow-list such as `Bash(/usr/bin/okstra *)` matches it), else quoted.
fn shell_word(path: &Path) -> String {
    let text = path.display().to_string();
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._+-".contains(&b));
    if plain { text } else { shell_quote(path) }
}

/// The hook command: reap the project's dead wrappers, never fail, never
/// print (a hook's exit 2 would block the host; reap only stops groups whose
/// wrapper is already gone, so running it after every turn is safe).
pub(super) fn reap_command(okstra: &Path, project_root: Option<&str>) -> String {
    let root = project_root.map_or_else(String::new, |root| format!(" --project-root {root}"));
    format!(
        "{} reap{root} --execute >/dev/null 2>&1 || true",
        shell_quote(okstra)
    )
}

/// The sub-agent-stop hook: hand a finished sub-agent's final message to
/// okstra (`okstra hook subagent-stop` reads the host's JSON on stdin,
/// takes an okstra task's answer and ignores everything else). It prints
/// nothing on stdout and never fails, so it can never block the host.
pub fn subagent_stop_command(okstra: &Path) -> String {
    format!(
        "{} hook subagent-stop >/dev/null 2>&1 || true",
        shell_quote(okstra)
    )
}

/// Seconds a host waits for the hook (reap's stop takes at most ~5 s per group).
pub const HOOK_TIMEOUT_SECS: u64 = 60;

/// One hook group, keys in the order the hosts' docs write them.
pub(super) fn hook_group(command: &str) -> Json {
    let handler = Json::Object(vec![
        ("type".to_owned(), Json::String("command".to_owned())),
        ("command".to_owned(), Json::String(command.to_owned())),
        ("timeout".to_owned(), Json::Number(HOOK_TIMEOUT_SECS.into())),
    ]);
    Json::Object(vec![("hooks".to_owned(), Json::Array(vec![handler]))])
}

/// Every host, for the checks that look at all of them.
pub const HOSTS: [Host; 3] = [Host::ClaudeCode, Host::Codex, Host::Antigravity];

/// The folder `host` reads user skills from.
fn skills_dir(host: Host, homes: &Homes) -> PathBuf {
    match host {
        Host::ClaudeCode => homes.claude.join("skills"),
        Host::Codex => homes.home.join(".agents/skills"),
        Host::Antigravity => homes.home.join(".gemini/antigravity-cli/skills"),
    }
}

/// The skill file okstra writes for `host`.
pub fn skill_path(host: Host, homes: &Homes) -> PathBuf {
    skills_dir(host, homes).join("okstra").join("SKILL.md")
}

/// The settings file okstra merges `host`'s hook into, if it has one.
pub fn settings_path(host: Host, homes: &Homes) -> Option<PathBuf> {
    match host {
        Host::ClaudeCode => Some(homes.claude.join("settings.json")),
        Host::Codex => Some(homes.codex.join("hooks.json")),
        Host::Antigravity => None,
    }
}

/// Whether `name` is one of the `okstra-<provider>-exec` links.
pub fn is_wrapper_name(name: &str) -> bool {
    Provider::ALL
        .iter()
        .any(|provider| provider.wrapper() == name)
}

/// Whether `group` is exactly a hook group okstra merges (a reap group or
/// the sub-agent-stop group), for some okstra binary (a path whose file
/// name starts with `okstra`): what uninstall checks before it takes a
/// recorded group out of a user's file.
pub fn is_okstra_group(group: &serde_json::Value) -> bool {
    let Some(command) = group
        .pointer("/hooks/0/command")
        .and_then(serde_json::Value::as_str)
    else {
        return false;
    };
    let Some(quoted) = command
        .split(" reap")
        .next()
        .and_then(|head| head.split(" hook subagent-stop").next())
    else {
        return false;
    };
    let Some(okstra) = quoted
        .strip_prefix('\'')
        .and_then(|rest| rest.strip_suffix('\''))
        .map(|inner| PathBuf::from(inner.replace(r"'\''", "'")))
    else {
        return false;
    };
    let is_okstra = okstra
        .file_name()
        .is_some_and(|name| name.to_string_lossy().starts_with("okstra"));
    let reap = [Some(CLAUDE_PROJECT_ROOT), None]
        .iter()
        .any(|root| hook_group(&reap_command(&okstra, *root)).to_value() == *group);
    is_okstra && (reap || hook_group(&subagent_stop_command(&okstra)).to_value() == *group)
}

/// The project root Claude Code's reap hook names.
pub(super) const CLAUDE_PROJECT_ROOT: &str = "\"$CLAUDE_PROJECT_DIR\"";

/// `host`'s `okstra` skill, naming okstra as `okstra` (a path, or a bare
/// name found on `PATH`): what `okstra install` writes and the plugins ship.
pub fn skill_text(host: Host, okstra: &Path) -> Result<String, template::Error> {
    let (runtime, project_root) = match host {
        Host::ClaudeCode => ("claude-code", "\"${CLAUDE_PROJECT_DIR}\""),
        Host::Codex => ("codex", "\"$PWD\""),
        Host::Antigravity => ("antigravity", "\"$PWD\""),
    };
    let env = template::environment();
    // The skill's own frontmatter registers the answers' hook on Claude
    // Code (for the session the skill leads, no settings file touched); a
    // YAML double-quoted string is a JSON string.
    let subagent_stop = serde_json::Value::String(subagent_stop_command(okstra)).to_string();
    template::render(
        &env,
        "templates/install/skill.md.j2",
        minijinja::context! {
            host => host.as_str(),
            runtime => runtime,
            okstra => shell_word(okstra),
            project_root => project_root,
            subagent_stop => subagent_stop,
        },
    )
}

/// Everything `host` gets.
pub fn host_items(host: Host, homes: &Homes, okstra: &Path) -> Result<Vec<Item>, template::Error> {
    let skill_dir = skills_dir(host, homes);
    let text = skill_text(host, okstra)?;
    let mut items = vec![Item::File {
        path: skill_dir.join("okstra").join("SKILL.md"),
        bytes: text.into_bytes(),
    }];
    match host {
        Host::ClaudeCode => {
            let group = hook_group(&reap_command(okstra, Some(CLAUDE_PROJECT_ROOT)));
            items.push(Item::Hooks {
                path: homes.claude.join("settings.json"),
                groups: vec![
                    ("Stop".to_owned(), group.clone()),
                    ("SubagentStop".to_owned(), group),
                ],
            });
        }
        Host::Codex => {
            // Codex runs hooks in the session's folder: reap that project.
            // Its skills register no hooks, so the answers' hook goes here.
            items.push(Item::Hooks {
                path: homes.codex.join("hooks.json"),
                groups: vec![
                    ("Stop".to_owned(), hook_group(&reap_command(okstra, None))),
                    (
                        "SubagentStop".to_owned(),
                        hook_group(&subagent_stop_command(okstra)),
                    ),
                ],
            });
        }
        Host::Antigravity => {}
    }
    Ok(items)
}

/// What the host cannot do or needs from the user, said once per install.
pub fn host_notes(host: Host) -> &'static [&'static str] {
    match host {
        Host::ClaudeCode => &[
            "claude-code: use `/okstra` in a session; a Claude Code started before `~/.claude/skills` existed needs a restart to see it",
            "claude-code: the reap hooks run after each turn in trusted folders only; `/okstra` registers the hook that hands native workers' answers to okstra for its session",
        ],
        Host::Codex => &[
            "codex: use `$okstra` (or `/skills`); the reap hook and the sub-agent-stop hook (native workers' answers) run only after you review and trust them with `/hooks` in Codex",
        ],
        Host::Antigravity => &[
            "antigravity: use `/okstra`; no hook is installed (agy's hook format is unstable and a wrong one is dropped silently), so run `okstra reap --execute` in the project after a run",
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn homes() -> Homes {
        Homes::from_env(&|name| match name {
            "HOME" => Some("/h".to_owned()),
            "CODEX_HOME" => Some("/c".to_owned()),
            "CLAUDE_CONFIG_DIR" => Some("relative/ignored".to_owned()),
            _ => None,
        })
        .unwrap()
    }

    #[test]
    fn homes_honour_absolute_overrides_only() {
        let homes = homes();
        assert_eq!(homes.claude, PathBuf::from("/h/.claude"));
        assert_eq!(homes.codex, PathBuf::from("/c"));
        assert!(Homes::from_env(&|_| None).is_none());
    }

    #[test]
    fn shell_words_are_bare_only_when_safe() {
        assert_eq!(shell_word(Path::new("/usr/bin/okstra")), "/usr/bin/okstra");
        assert_eq!(
            shell_word(Path::new("/my tools/okstra")),
            "'/my tools/okstra'"
        );
    }

    #[test]
    fn reap_commands_are_quoted_and_never_fail() {
        assert_eq!(
            reap_command(Path::new("/o/it's/okstra"), Some("\"$CLAUDE_PROJECT_DIR\"")),
            r#"'/o/it'\''s/okstra' reap --project-root "$CLAUDE_PROJECT_DIR" --execute >/dev/null 2>&1 || true"#
        );
        assert_eq!(
            reap_command(Path::new("/bin/okstra"), None),
            "'/bin/okstra' reap --execute >/dev/null 2>&1 || true"
        );
    }

    #[test]
    fn only_okstra_reap_groups_and_wrapper_names_are_recognised() {
        let okstra = Path::new("/o/it's/okstra");
        let claude = host_items(Host::ClaudeCode, &homes(), okstra).unwrap();
        let codex = host_items(Host::Codex, &homes(), okstra).unwrap();
        for items in [&claude, &codex] {
            let Item::Hooks { path, groups } = &items[1] else {
                panic!()
            };
            assert!(
                HOSTS
                    .iter()
                    .any(|&h| settings_path(h, &homes()).as_ref() == Some(path))
            );
            for (_, group) in groups {
                assert!(is_okstra_group(&group.to_value()));
            }
        }
        assert_eq!(
            skill_path(Host::Codex, &homes()),
            Path::new("/h/.agents/skills/okstra/SKILL.md")
        );
        let foreign = hook_group("notify-send done").to_value();
        let evil = hook_group(&reap_command(Path::new("/bin/rm"), None)).to_value();
        let tail = hook_group("'/bin/okstra' reap --execute; rm -rf ~").to_value();
        let hook_tail = hook_group("'/bin/okstra' hook subagent-stop; rm -rf ~").to_value();
        for group in [foreign, evil, tail, hook_tail, serde_json::json!({})] {
            assert!(!is_okstra_group(&group), "{group}");
        }
        assert!(is_wrapper_name("okstra-kimi-exec"));
        assert!(!is_wrapper_name("okstra-sh-exec"));
        assert!(!is_wrapper_name("okstra"));
    }

    #[test]
    fn each_host_gets_its_skill_and_only_supported_hooks() {
        let okstra = Path::new("/bin/okstra");
        let claude = host_items(Host::ClaudeCode, &homes(), okstra).unwrap();
        assert_eq!(claude.len(), 2);
        let Item::File { path, bytes } = &claude[0] else {
            panic!()
        };
        assert_eq!(path, Path::new("/h/.claude/skills/okstra/SKILL.md"));
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.starts_with("---\nname: okstra\n"), "{text}");
        assert!(text.contains("--lead-runtime claude-code"));
        assert!(text.contains("allowed-tools: Bash(/bin/okstra *)"));
        assert!(text.contains("$ARGUMENTS"));
        // The skill registers the answers' hook itself.
        assert!(
            text.contains("    - hooks:\n        - type: command\n          command: \"'/bin/okstra' hook subagent-stop"),
            "{text}"
        );
        let Item::Hooks { path, groups } = &claude[1] else {
            panic!()
        };
        assert_eq!(path, Path::new("/h/.claude/settings.json"));
        assert_eq!(groups.len(), 2);

        let codex = host_items(Host::Codex, &homes(), okstra).unwrap();
        let Item::File { path, bytes } = &codex[0] else {
            panic!()
        };
        assert_eq!(path, Path::new("/h/.agents/skills/okstra/SKILL.md"));
        assert!(!String::from_utf8_lossy(bytes).contains("$ARGUMENTS"));
        let Item::Hooks { path, groups } = &codex[1] else {
            panic!()
        };
        assert_eq!(path, Path::new("/c/hooks.json"));
        let events: Vec<&str> = groups.iter().map(|(event, _)| event.as_str()).collect();
        assert_eq!(events, ["Stop", "SubagentStop"]);
        assert!(!String::from_utf8_lossy(bytes).contains("hook subagent-stop"));

        let agy = host_items(Host::Antigravity, &homes(), okstra).unwrap();
        assert_eq!(agy.len(), 1);
    }
}
