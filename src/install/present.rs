//! Which okstra integrations a host has, for `okstra doctor`: the skill and
//! hooks `okstra install` writes, and the okstra plugin installed through
//! the host's own plugin manager. Read-only, bounded reads, nothing parsed
//! but the hosts' JSON settings.
//!
//! Registered twice is worth a warning: Claude Code then shows `/okstra`
//! beside `/okstra:okstra` and runs the reap hook twice after each turn;
//! Codex lists both skills (it does not merge same-named skills).

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::hosts::{self, Homes};
use crate::fsread;
use crate::vocab::Host;

/// One integration found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Integration {
    /// `claude-code`, `codex` or `antigravity`.
    pub host: &'static str,
    /// `install-skill`, `install-hooks`, `plugin`.
    pub kind: &'static str,
    pub path: PathBuf,
}

/// Every integration found, and one warning per host that has okstra twice.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Integrations {
    pub found: Vec<Integration>,
    pub warnings: Vec<String>,
}

/// Look at the hosts' folders under `HOME` (honouring `CLAUDE_CONFIG_DIR`
/// and `CODEX_HOME`); nothing when `HOME` is not an absolute path.
pub fn integrations(env: &dyn Fn(&str) -> Option<String>) -> Integrations {
    let Some(homes) = Homes::from_env(env) else {
        return Integrations::default();
    };
    let mut found = Vec::new();
    let mut add = |host: Host, kind: &'static str, path: PathBuf| {
        found.push(Integration {
            host: host.as_str(),
            kind,
            path,
        });
    };
    for host in hosts::HOSTS {
        let skill = hosts::skill_path(host, &homes);
        if skill.is_file() {
            add(host, "install-skill", skill);
        }
        if let Some(settings) = hosts::settings_path(host, &homes)
            && has_okstra_hook(&settings)
        {
            add(host, "install-hooks", settings);
        }
    }
    // Codex's older user skill root still loads in some builds.
    let legacy = homes.codex.join("skills/okstra/SKILL.md");
    if legacy.is_file() {
        add(Host::Codex, "legacy-skill", legacy);
    }
    for (host, config) in [
        (Host::ClaudeCode, &homes.claude),
        (Host::Codex, &homes.codex),
    ] {
        let caches = plugin_caches(config);
        // Enabled in Claude Code's settings, but not (yet) in its cache.
        let enabled = (host == Host::ClaudeCode && caches.is_empty())
            .then(|| claude_enabled_plugin(&config.join("settings.json")))
            .flatten();
        for dir in caches.into_iter().chain(enabled) {
            add(host, "plugin", dir);
        }
    }
    let warnings = twice(&found);
    Integrations { found, warnings }
}

/// `<config>/plugins/cache/<marketplace>/okstra`: where a host keeps an
/// installed okstra plugin.
fn plugin_caches(config: &Path) -> Vec<PathBuf> {
    let Ok(markets) = std::fs::read_dir(config.join("plugins/cache")) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = markets
        .flatten()
        .map(|market| market.path().join("okstra"))
        .filter(|dir| dir.is_dir())
        .collect();
    found.sort();
    found
}

/// The settings file, when Claude Code's `enabledPlugins` turns on an
/// `okstra@…` plugin.
fn claude_enabled_plugin(settings: &Path) -> Option<PathBuf> {
    let value = read_json(settings)?;
    let enabled = value.get("enabledPlugins")?.as_object()?;
    enabled
        .iter()
        .any(|(name, on)| name.starts_with("okstra@") && on.as_bool() == Some(true))
        .then(|| settings.to_path_buf())
}

/// Whether a hooks settings file holds an okstra hook group (reap, or the
/// sub-agent-stop hook that brings native answers back).
fn has_okstra_hook(settings: &Path) -> bool {
    let Some(value) = read_json(settings) else {
        return false;
    };
    value
        .get("hooks")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|events| events.values())
        .filter_map(Value::as_array)
        .flatten()
        .any(hosts::is_okstra_group)
}

fn read_json(path: &Path) -> Option<Value> {
    let bytes = fsread::read(path, fsread::Kind::Manifest).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// One warning per host where okstra is registered twice.
fn twice(found: &[Integration]) -> Vec<String> {
    let mut warnings = Vec::new();
    for host in hosts::HOSTS {
        let of = |kind: &str| {
            found
                .iter()
                .filter(|i| i.host == host.as_str() && i.kind == kind)
                .map(|i| format!("`{}`", i.path.display()))
                .collect::<Vec<_>>()
        };
        let installed = [of("install-skill"), of("legacy-skill")].concat();
        let plugins = of("plugin");
        let fix = match host {
            Host::ClaudeCode => {
                "`okstra install --uninstall`, or `claude plugin uninstall okstra@okstra`"
            }
            Host::Codex => {
                "`okstra install --uninstall`, or remove the plugin in Codex's `/plugins`"
            }
            Host::Antigravity => "`okstra install --uninstall`",
        };
        if !plugins.is_empty() && !installed.is_empty() {
            warnings.push(format!(
                "okstra is registered twice in {}: by `okstra install` ({}) and as a plugin ({}); \
                 the skill shows twice and its hooks run twice; keep one ({fix})",
                host.as_str(),
                installed.join(", "),
                plugins.join(", ")
            ));
        } else if installed.len() > 1 || plugins.len() > 1 {
            warnings.push(format!(
                "okstra is registered twice in {}: {}; keep one ({fix})",
                host.as_str(),
                [installed, plugins].concat().join(", ")
            ));
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_install_and_a_plugin_in_one_host_is_a_warning() {
        let home = tempfile::tempdir().unwrap();
        let root = home.path();
        let env = |name: &str| match name {
            "HOME" => Some(root.display().to_string()),
            _ => None,
        };
        assert_eq!(integrations(&env).found, Vec::new());
        let skill = root.join(".claude/skills/okstra/SKILL.md");
        std::fs::create_dir_all(skill.parent().unwrap()).unwrap();
        std::fs::write(&skill, "---\nname: okstra\n---\n").unwrap();
        let one = integrations(&env);
        assert_eq!(one.found.len(), 1);
        assert!(one.warnings.is_empty());
        std::fs::create_dir_all(root.join(".claude/plugins/cache/okstra/okstra/0.1.0")).unwrap();
        let both = integrations(&env);
        let kinds: Vec<(&str, &str)> = both.found.iter().map(|i| (i.host, i.kind)).collect();
        assert_eq!(
            kinds,
            [("claude-code", "install-skill"), ("claude-code", "plugin")]
        );
        assert_eq!(both.warnings.len(), 1);
        assert!(
            both.warnings[0].starts_with("okstra is registered twice in claude-code"),
            "{}",
            both.warnings[0]
        );
        // Codex: the skill in both user roots.
        for dir in [".agents/skills/okstra", ".codex/skills/okstra"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
            std::fs::write(root.join(dir).join("SKILL.md"), "x").unwrap();
        }
        assert_eq!(integrations(&env).warnings.len(), 2);
    }
}
