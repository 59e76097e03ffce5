//! okstra packaged as a host plugin, beside `okstra install`: the files under
//! `plugin/` that `.claude-plugin/plugin.json` (Claude Code) and
//! `.codex-plugin/plugin.json` (Codex) point at, generated here so they can
//! never drift from the installed skill and hooks.
//!
//! - Each host's `okstra` skill is the same template `okstra install`
//!   renders, with `okstra` taken from `PATH`.
//! - [`HOOKS`] is the one list of the plugin's hooks (add a hook there; the
//!   hook files are rendered from it): a `SessionStart` check that the
//!   installed `okstra --version` fits this plugin, the reap hook after
//!   each turn (`Stop`, and `SubagentStop` in Claude Code), and in Codex the
//!   answers' hook (`SubagentStop`: `okstra hook subagent-stop`, which
//!   brings a native worker's answer back; Claude Code's skill registers
//!   it in its own frontmatter).
//! - `plugin/bin/okstra-check-version.sh` is the version check: silent when
//!   the installed okstra has this plugin's major and minor version, one
//!   line for the session otherwise; it never blocks (exit 0).
//!
//! The committed files are checked against [`files`] by a test; after a
//! change, regenerate them with `OKSTRA_BLESS_PLUGIN=1 cargo test plugin_files`.

use std::path::Path;

use super::hosts;
use super::json_doc::Json;
use crate::template;
use crate::vocab::Host;

/// The plugin's version: okstra's own.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// Where the version check lives, relative to the plugin root.
const CHECK_SCRIPT: &str = "plugin/bin/okstra-check-version.sh";
/// How long a host waits for the version check.
const CHECK_TIMEOUT_SECS: u64 = 10;

/// What one plugin hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// The version check script, through `${CLAUDE_PLUGIN_ROOT}`.
    CheckVersion,
    /// `okstra reap --execute` for the session's project (never fails).
    Reap,
    /// `okstra hook subagent-stop`: a native worker's answer back to okstra.
    Answers,
}

/// One hook of the plugin: the host event, which hosts get it, and what it
/// runs.
#[derive(Debug, Clone, Copy)]
pub struct PluginHook {
    pub event: &'static str,
    pub hosts: &'static [Host],
    pub action: Action,
}

/// Every hook the plugins register, in file order. Extend here.
pub const HOOKS: &[PluginHook] = &[
    PluginHook {
        event: "SessionStart",
        hosts: &[Host::ClaudeCode, Host::Codex],
        action: Action::CheckVersion,
    },
    PluginHook {
        event: "Stop",
        hosts: &[Host::ClaudeCode, Host::Codex],
        action: Action::Reap,
    },
    PluginHook {
        event: "SubagentStop",
        hosts: &[Host::ClaudeCode, Host::Codex],
        action: Action::Answers,
    },
    PluginHook {
        event: "SubagentStop",
        hosts: &[Host::ClaudeCode],
        action: Action::Reap,
    },
];

/// The hosts that get a plugin.
pub const PLUGIN_HOSTS: [Host; 2] = [Host::ClaudeCode, Host::Codex];

/// The hook group one action becomes on `host`.
fn group(action: Action, host: Host) -> Json {
    match action {
        Action::CheckVersion => {
            let handler = Json::Object(vec![
                ("type".to_owned(), Json::String("command".to_owned())),
                (
                    "command".to_owned(),
                    Json::String(format!("\"${{CLAUDE_PLUGIN_ROOT}}/{CHECK_SCRIPT}\"")),
                ),
                (
                    "timeout".to_owned(),
                    Json::Number(CHECK_TIMEOUT_SECS.into()),
                ),
            ]);
            Json::Object(vec![("hooks".to_owned(), Json::Array(vec![handler]))])
        }
        Action::Reap => {
            let root = (host == Host::ClaudeCode).then_some(hosts::CLAUDE_PROJECT_ROOT);
            hosts::hook_group(&hosts::reap_command(Path::new("okstra"), root))
        }
        Action::Answers => hosts::hook_group(&hosts::subagent_stop_command(Path::new("okstra"))),
    }
}

/// The hooks file of `host`'s plugin.
pub fn hooks_file(host: Host) -> String {
    let mut events: Vec<(String, Json)> = Vec::new();
    for hook in HOOKS.iter().filter(|hook| hook.hosts.contains(&host)) {
        let entry = group(hook.action, host);
        match events.iter_mut().find(|(event, _)| event == hook.event) {
            Some((_, Json::Array(groups))) => groups.push(entry),
            _ => events.push((hook.event.to_owned(), Json::Array(vec![entry]))),
        }
    }
    let doc = Json::Object(vec![
        (
            "description".to_owned(),
            Json::String(
                "okstra: check that the installed okstra fits this plugin, reap dead worker \
                 wrappers after each turn, and take native workers' answers back"
                    .to_owned(),
            ),
        ),
        ("hooks".to_owned(), Json::Object(events)),
    ]);
    doc.to_pretty() + "\n"
}

/// The version check script, `@MINOR@` standing for `major.minor`.
const CHECK_SCRIPT_TEXT: &str = r#"#!/bin/sh
# okstra plugin hook (SessionStart): is the okstra on PATH the version this
# plugin was made for (@MINOR@.x)? Silent when it is; one line for the session
# when it is not. Never blocks the host: always exits 0.
# Generated by okstra (src/install/plugin.rs); do not edit.
want="@MINOR@"
if ! command -v okstra >/dev/null 2>&1; then
  echo "okstra plugin: the okstra binary is not on PATH; install okstra $want.x before using it"
  exit 0
fi
have=$(okstra --version 2>/dev/null | sed -n '1s/^okstra //p')
case "$have" in
  "$want".*) ;;
  *) echo "okstra plugin: this plugin needs okstra $want.x but the okstra on PATH is ${have:-unknown}; install a matching okstra" ;;
esac
exit 0
"#;

/// The version check script.
pub fn check_script() -> String {
    let minor = VERSION
        .rsplit_once('.')
        .map_or(VERSION, |(major_minor, _)| major_minor);
    CHECK_SCRIPT_TEXT.replace("@MINOR@", minor)
}

/// The plugin's `okstra` skill for `host`: the installed one, with `okstra`
/// taken from `PATH`.
pub fn skill(host: Host) -> Result<String, template::Error> {
    hosts::skill_text(host, Path::new("okstra"))
}

/// The folder of `host`'s plugin files under `plugin/`.
pub fn host_dir(host: Host) -> &'static str {
    match host {
        Host::ClaudeCode => "plugin/claude-code",
        Host::Codex => "plugin/codex",
        Host::Antigravity => "plugin/antigravity",
    }
}

/// Every generated plugin file: (path relative to the repository, bytes).
pub fn files() -> Result<Vec<(String, String)>, template::Error> {
    let mut files = vec![(CHECK_SCRIPT.to_owned(), check_script())];
    for host in PLUGIN_HOSTS {
        let dir = host_dir(host);
        files.push((format!("{dir}/skills/okstra/SKILL.md"), skill(host)?));
        files.push((format!("{dir}/hooks.json"), hooks_file(host)));
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    /// The committed plugin files are what okstra generates (set
    /// `OKSTRA_BLESS_PLUGIN=1` to rewrite them after a change).
    #[test]
    fn plugin_files_are_up_to_date() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let bless = std::env::var_os("OKSTRA_BLESS_PLUGIN").is_some();
        for (relative, text) in files().unwrap() {
            let path = root.join(&relative);
            if bless {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, &text).unwrap();
                if relative == CHECK_SCRIPT {
                    use std::os::unix::fs::PermissionsExt as _;
                    let mode = std::fs::Permissions::from_mode(0o755);
                    std::fs::set_permissions(&path, mode).unwrap();
                }
            }
            let committed = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                committed == text,
                "`{relative}` is stale; run `OKSTRA_BLESS_PLUGIN=1 cargo test plugin_files` and \
                 commit the result"
            );
        }
    }

    #[test]
    fn each_host_gets_its_hooks_from_the_one_list() {
        let claude: serde_json::Value =
            serde_json::from_str(&hooks_file(Host::ClaudeCode)).unwrap();
        let events: Vec<&String> = claude["hooks"].as_object().unwrap().keys().collect();
        assert_eq!(events, ["SessionStart", "Stop", "SubagentStop"]);
        let codex: serde_json::Value = serde_json::from_str(&hooks_file(Host::Codex)).unwrap();
        let events: Vec<&String> = codex["hooks"].as_object().unwrap().keys().collect();
        assert_eq!(events, ["SessionStart", "Stop", "SubagentStop"]);
        // The reap and answers groups are the ones uninstall and doctor
        // recognise.
        assert!(hosts::is_okstra_group(&claude["hooks"]["Stop"][0]));
        assert!(hosts::is_okstra_group(&codex["hooks"]["Stop"][0]));
        // Both take native workers' answers back through the hook.
        for doc in [&claude, &codex] {
            let answers = &doc["hooks"]["SubagentStop"][0];
            assert!(hosts::is_okstra_group(answers));
            assert!(
                answers["hooks"][0]["command"]
                    .as_str()
                    .unwrap()
                    .contains("hook subagent-stop")
            );
        }
        let check = claude["hooks"]["SessionStart"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap();
        assert_eq!(check, format!("\"${{CLAUDE_PLUGIN_ROOT}}/{CHECK_SCRIPT}\""));
        assert!(
            check_script().contains(&format!("want=\"{}\"", VERSION.rsplit_once('.').unwrap().0))
        );
    }
}
