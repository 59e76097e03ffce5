//! Integration tests: okstra packaged as a Claude Code plugin and a Codex
//! plugin. The manifests and marketplace entries parse, name files that
//! exist, carry okstra's version, and the version check hook says what it
//! should.

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::{limit, okstra_path, read_json, repo_root, wait_for};

/// A path a manifest names (`./x/y`), under the plugin root.
fn named(root: &Path, relative: &str) -> PathBuf {
    assert!(
        relative.starts_with("./") && !relative.contains(".."),
        "{relative}"
    );
    root.join(relative.trim_start_matches("./"))
}

/// Every hook command's `${CLAUDE_PLUGIN_ROOT}/…` file exists and runs.
fn hook_files_exist(root: &Path, hooks: &Value) {
    for groups in hooks["hooks"].as_object().unwrap().values() {
        for group in groups.as_array().unwrap() {
            for handler in group["hooks"].as_array().unwrap() {
                let command = handler["command"].as_str().unwrap();
                assert!(handler["timeout"].as_u64().unwrap() > 0);
                if let Some(rest) = command.strip_prefix("\"${CLAUDE_PLUGIN_ROOT}/") {
                    let file = root.join(rest.trim_end_matches('"'));
                    let mode = fs::metadata(&file).unwrap().permissions().mode();
                    assert!(mode & 0o111 != 0, "{} is not executable", file.display());
                } else {
                    assert!(command.starts_with("'okstra' "), "{command}");
                }
            }
        }
    }
}

/// A plugin manifest: okstra's name and version, a skill folder with the
/// `okstra` skill, a hooks file whose commands exist.
fn check_manifest(root: &Path, manifest: &Value) {
    assert_eq!(manifest["name"], "okstra");
    assert_eq!(manifest["version"], env!("CARGO_PKG_VERSION"));
    let skills = named(root, manifest["skills"].as_str().unwrap());
    let skill = fs::read_to_string(skills.join("okstra/SKILL.md")).unwrap();
    assert!(skill.starts_with("---\nname: okstra\n"), "{skill}");
    let hooks = read_json(&named(root, manifest["hooks"].as_str().unwrap()));
    hook_files_exist(root, &hooks);
}

#[test]
fn the_claude_code_plugin_and_its_marketplace_name_files_that_exist() {
    let root = repo_root();
    let manifest = read_json(&root.join(".claude-plugin/plugin.json"));
    check_manifest(root, &manifest);
    let market = read_json(&root.join(".claude-plugin/marketplace.json"));
    assert!(market["owner"]["name"].is_string());
    let entry = &market["plugins"][0];
    assert_eq!(entry["name"], "okstra");
    assert_eq!(entry["version"], env!("CARGO_PKG_VERSION"));
    let source = named(root, entry["source"].as_str().unwrap());
    assert!(source.join(".claude-plugin/plugin.json").is_file());
    let hooks = read_json(&named(root, manifest["hooks"].as_str().unwrap()));
    let events: Vec<&String> = hooks["hooks"].as_object().unwrap().keys().collect();
    assert_eq!(events, ["SessionStart", "Stop", "SubagentStop"]);
}

#[test]
fn the_codex_plugin_and_its_marketplace_name_files_that_exist() {
    let root = repo_root();
    let manifest = read_json(&root.join(".codex-plugin/plugin.json"));
    check_manifest(root, &manifest);
    assert_eq!(manifest["interface"]["displayName"], "okstra");
    let market = read_json(&root.join(".agents/plugins/marketplace.json"));
    let entry = &market["plugins"][0];
    assert_eq!(entry["name"], "okstra");
    assert_eq!(entry["source"]["source"], "local");
    let source = named(root, entry["source"]["path"].as_str().unwrap());
    assert!(source.join(".codex-plugin/plugin.json").is_file());
}

/// Run the version check with `bin` as the whole `PATH` (plus the shell's
/// tools); its stdout and exit code.
fn check_version(bin: &Path) -> (String, i32) {
    let script = repo_root().join("plugin/bin/okstra-check-version.sh");
    let mut child = Command::new(&script)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_for(limit(), "the version check", || child.try_wait().unwrap());
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut out).unwrap();
    (out, status.code().unwrap())
}

#[test]
fn the_version_check_is_silent_only_for_a_fitting_okstra() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    fs::create_dir(&empty).unwrap();
    let (said, code) = check_version(&empty);
    assert_eq!(code, 0);
    assert!(said.contains("okstra binary is not on PATH"), "{said}");

    let real = dir.path().join("real");
    fs::create_dir(&real).unwrap();
    symlink(okstra_path(), real.join("okstra")).unwrap();
    assert_eq!(check_version(&real), (String::new(), 0));

    let old = dir.path().join("old");
    fs::create_dir(&old).unwrap();
    let fake = old.join("okstra");
    fs::write(&fake, "#!/bin/sh\necho 'okstra 9.9.9'\n").unwrap();
    fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).unwrap();
    let (said, code) = check_version(&old);
    assert_eq!(code, 0);
    assert!(said.contains("the okstra on PATH is 9.9.9"), "{said}");
}
