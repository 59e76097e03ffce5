//! Integration tests for `okstra install`, `okstra completions` and
//! `okstra man`: the real binary installing into a temporary HOME (set for
//! the child only), checked file by file and byte for byte.

use std::fs;
use std::path::PathBuf;
use std::process::Command;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::support::{okstra, okstra_path, tree};

/// A temporary HOME and a separate bin folder.
struct World {
    dir: TempDir,
}

impl World {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("home")).unwrap();
        fs::create_dir(dir.path().join("bin")).unwrap();
        Self { dir }
    }
    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
    fn bin(&self) -> PathBuf {
        self.dir.path().join("bin")
    }
    fn install(&self, extra: &[&str]) -> assert_cmd::assert::Assert {
        let mut cmd = okstra();
        cmd.arg("install")
            .arg("--bin-dir")
            .arg(self.bin())
            .args(extra);
        self.env(&mut cmd);
        cmd.assert()
    }
    fn uninstall(&self, extra: &[&str]) -> assert_cmd::assert::Assert {
        let mut cmd = okstra();
        cmd.args(["install", "--uninstall"]).args(extra);
        self.env(&mut cmd);
        cmd.assert()
    }
    fn env(&self, cmd: &mut assert_cmd::Command) {
        cmd.env("HOME", self.home());
        for name in [
            "XDG_STATE_HOME",
            "XDG_CACHE_HOME",
            "XDG_CONFIG_HOME",
            "CLAUDE_CONFIG_DIR",
            "CODEX_HOME",
        ] {
            cmd.env_remove(name);
        }
    }
}

/// A user's own settings: their key order, their own Stop hook.
const USER_SETTINGS: &str = r#"{
  "model": "opus",
  "permissions": {
    "allow": [
      "Bash(git status)"
    ]
  },
  "hooks": {
    "Stop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "notify-send 'claude is done'"
          }
        ]
      }
    ]
  }
}
"#;

fn stderr_of(assert: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&assert.get_output().stderr).into_owned()
}

fn okstra_real() -> PathBuf {
    fs::canonicalize(okstra_path()).unwrap()
}

#[test]
fn install_every_host_twice_then_uninstall_restores_home_exactly() {
    let world = World::new();
    fs::create_dir(world.home().join(".claude")).unwrap();
    fs::write(world.home().join(".claude/settings.json"), USER_SETTINGS).unwrap();
    let before = tree(&world.home());

    let first = world
        .install(&["--claude-code", "--codex", "--antigravity"])
        .success();
    let stderr = stderr_of(&first);
    assert!(stderr.contains("no hook is installed"), "{stderr}");
    assert!(stderr.contains("/hooks"), "{stderr}");

    for provider in ["claude", "codex", "antigravity", "grok", "kimi"] {
        let link = world.bin().join(format!("okstra-{provider}-exec"));
        // The wrapper's own binary, built beside okstra, not okstra itself.
        assert_eq!(
            fs::read_link(&link).unwrap(),
            okstra_real().with_file_name("okstra-provider-exec")
        );
    }
    for skill in [
        ".claude/skills/okstra/SKILL.md",
        ".agents/skills/okstra/SKILL.md",
        ".gemini/antigravity-cli/skills/okstra/SKILL.md",
    ] {
        let text = fs::read_to_string(world.home().join(skill)).unwrap();
        assert!(text.starts_with("---\nname: okstra\n"), "{skill}: {text}");
        assert!(
            text.contains("--render-only --json --yes --lead-runtime"),
            "{skill}"
        );
        assert!(
            text.contains(&okstra_real().display().to_string()),
            "{skill}"
        );
    }

    // The user's settings keep their keys, their order and their own hook.
    let settings = fs::read_to_string(world.home().join(".claude/settings.json")).unwrap();
    assert!(settings.find("\"model\"").unwrap() < settings.find("\"permissions\"").unwrap());
    let value: Value = serde_json::from_str(&settings).unwrap();
    assert_eq!(value["permissions"]["allow"], json!(["Bash(git status)"]));
    let stop = value["hooks"]["Stop"].as_array().unwrap();
    assert_eq!(stop.len(), 2);
    assert_eq!(
        stop[0]["hooks"][0]["command"],
        json!("notify-send 'claude is done'")
    );
    let ours = stop[1]["hooks"][0]["command"].as_str().unwrap();
    assert!(
        ours.contains(" reap --project-root \"$CLAUDE_PROJECT_DIR\" --execute"),
        "{ours}"
    );
    assert_eq!(value["hooks"]["SubagentStop"][0], stop[1]);
    let codex: Value =
        serde_json::from_slice(&fs::read(world.home().join(".codex/hooks.json")).unwrap()).unwrap();
    assert!(
        codex["hooks"]["Stop"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .contains(" reap --execute")
    );
    assert!(
        world
            .home()
            .join(".local/state/okstra/install.json")
            .is_file()
    );

    // A second install changes nothing and says so.
    let installed_home = tree(&world.home());
    let installed_bin = tree(&world.bin());
    let second = world
        .install(&["--claude-code", "--codex", "--antigravity"])
        .success();
    assert!(
        stderr_of(&second).contains("nothing changed"),
        "{}",
        stderr_of(&second)
    );
    assert_eq!(tree(&world.home()), installed_home);
    assert_eq!(tree(&world.bin()), installed_bin);

    let dry = world.uninstall(&["--dry-run"]).success();
    let plan = String::from_utf8_lossy(&dry.get_output().stdout).into_owned();
    assert!(plan.contains("would remove okstra's hooks from"), "{plan}");
    assert!(plan.contains("okstra-kimi-exec"), "{plan}");
    assert_eq!(tree(&world.home()), installed_home);
    assert_eq!(tree(&world.bin()), installed_bin);

    world.uninstall(&[]).success();
    assert_eq!(tree(&world.home()), before);
    assert!(tree(&world.bin()).is_empty());
    // And nothing is left to remove.
    let again = world.uninstall(&[]).success();
    assert!(stderr_of(&again).contains("nothing to remove"));
}

#[test]
fn uninstall_keeps_what_the_user_changed_after_installing() {
    let world = World::new();
    world.install(&["--claude-code"]).success();
    let settings_path = world.home().join(".claude/settings.json");
    let mut value: Value = serde_json::from_slice(&fs::read(&settings_path).unwrap()).unwrap();
    value["theme"] = json!("dark");
    fs::write(
        &settings_path,
        serde_json::to_string_pretty(&value).unwrap(),
    )
    .unwrap();
    let skill = world.home().join(".claude/skills/okstra/SKILL.md");
    fs::write(&skill, "my own notes\n").unwrap();

    let done = world.uninstall(&[]).success();
    assert!(stderr_of(&done).contains("left"), "{}", stderr_of(&done));
    assert_eq!(fs::read_to_string(&skill).unwrap(), "my own notes\n");
    let after: Value = serde_json::from_slice(&fs::read(&settings_path).unwrap()).unwrap();
    assert_eq!(after, json!({"theme": "dark"}));
}

#[test]
fn dry_run_shows_a_diff_and_writes_nothing() {
    let world = World::new();
    fs::create_dir(world.home().join(".claude")).unwrap();
    fs::write(world.home().join(".claude/settings.json"), USER_SETTINGS).unwrap();
    let before = tree(&world.home());
    let run = world.install(&["--claude-code", "--dry-run"]).success();
    let stdout = String::from_utf8_lossy(&run.get_output().stdout).into_owned();
    assert!(stdout.contains("would link "), "{stdout}");
    assert!(
        stdout.contains("/.claude/skills/okstra/SKILL.md"),
        "{stdout}"
    );
    assert!(stdout.contains("would change "), "{stdout}");
    assert!(stdout.contains("@@"), "{stdout}");
    assert!(
        stdout.contains("+        \"SubagentStop\": [")
            || stdout.contains("+    \"SubagentStop\": ["),
        "{stdout}"
    );
    assert!(
        !stdout.contains("-            \"command\": \"notify-send"),
        "{stdout}"
    );
    assert_eq!(tree(&world.home()), before);
    assert!(tree(&world.bin()).is_empty());
}

#[test]
fn claude_config_dir_is_honoured() {
    let world = World::new();
    let config = world.dir.path().join("claude-config");
    let mut cmd = okstra();
    world.env(&mut cmd);
    cmd.args(["install", "--claude-code", "--bin-dir"])
        .arg(world.bin())
        .env("CLAUDE_CONFIG_DIR", &config)
        .assert()
        .success();
    assert!(config.join("skills/okstra/SKILL.md").is_file());
    assert!(config.join("settings.json").is_file());
    assert!(!world.home().join(".claude").exists());
}

#[test]
fn broken_settings_are_never_overwritten() {
    let world = World::new();
    fs::create_dir(world.home().join(".claude")).unwrap();
    let path = world.home().join(".claude/settings.json");
    fs::write(&path, "{ \"model\": \"opus\", }\n").unwrap();
    let run = world.install(&["--claude-code"]).code(2);
    let stderr = stderr_of(&run);
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(stderr.contains("is not valid JSON"), "{stderr}");
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "{ \"model\": \"opus\", }\n"
    );
    // Refused before anything was written.
    assert!(!world.home().join(".claude/skills").exists());
    assert!(!world.home().join(".local").exists());
    assert!(tree(&world.bin()).is_empty());
}

#[test]
fn a_foreign_file_in_the_bin_dir_is_not_clobbered() {
    let world = World::new();
    let squatter = world.bin().join("okstra-grok-exec");
    fs::write(&squatter, "#!/bin/sh\n").unwrap();
    let run = world.install(&[]).code(2);
    assert!(
        stderr_of(&run).contains("okstra-grok-exec"),
        "{}",
        stderr_of(&run)
    );
    assert_eq!(fs::read_to_string(&squatter).unwrap(), "#!/bin/sh\n");
}

#[test]
fn help_lists_the_new_commands() {
    let output = okstra().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&output.stdout);
    for command in ["install", "doctor", "completions", "man"] {
        assert!(
            help.lines()
                .any(|line| line.trim_start().starts_with(command)),
            "{command} missing from --help:\n{help}"
        );
    }
}

fn shell_has(shell: &str) -> bool {
    Command::new(shell)
        .args(["-c", "exit 0"])
        .status()
        .is_ok_and(|status| status.success())
}

#[test]
fn completions_parse_in_their_shells() {
    for shell in ["bash", "zsh", "fish"] {
        let output = okstra().args(["completions", shell]).output().unwrap();
        assert!(output.status.success(), "{shell}");
        assert!(!output.stdout.is_empty(), "{shell}");
        if !shell_has(shell) {
            eprintln!(
                "notice: `{shell}` is not installed; its completion script was not syntax-checked"
            );
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("okstra.completion");
        fs::write(&script, &output.stdout).unwrap();
        let check = if shell == "fish" {
            "--no-execute"
        } else {
            "-n"
        };
        let status = Command::new(shell)
            .arg(check)
            .arg(&script)
            .status()
            .unwrap();
        assert!(status.success(), "{shell} rejects the completion script");
    }
    okstra().args(["completions", "tcsh"]).assert().code(2);
}

/// What bash completes after each enumerated option: the closed set's real
/// values, never file names (the bash script is sourced and asked).
#[test]
fn completions_offer_the_values_of_enumerated_options() {
    if !shell_has("bash") {
        eprintln!("notice: `bash` is not installed; completion values were not checked");
        return;
    }
    let output = okstra().args(["completions", "bash"]).output().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("okstra.bash");
    fs::write(&script, &output.stdout).unwrap();
    // A file whose name would be offered if completion fell back to files.
    fs::write(dir.path().join("brief.md"), "").unwrap();
    let complete = |words: &str| -> String {
        let program = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}}-1)); \
             _okstra okstra \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             echo \"${{COMPREPLY[*]}}\"",
            script.display()
        );
        let output = Command::new("bash")
            .args(["-c", &program])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(output.status.success(), "{words}");
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    };
    assert_eq!(
        complete("okstra --task-type ''"),
        "requirements-discovery error-analysis implementation-planning project-analysis feature-analysis change-impact-analysis implementation"
    );
    assert_eq!(complete("okstra ask --task-type pro"), "project-analysis");
    assert_eq!(
        complete("okstra --lead-runtime ''"),
        "claude-code codex antigravity external"
    );
    assert_eq!(complete("okstra run --fix-cycle ''"), "yes no");
    assert_eq!(
        complete("okstra doctor --provider ''"),
        "claude codex antigravity grok kimi"
    );
    // The values are offered, the checks stay okstra's: one line naming the
    // value and what is expected.
    okstra()
        .args(["doctor", "--provider", "gemini"])
        .assert()
        .code(2)
        .stderr("error: unknown provider `gemini`, expected one of `claude|codex|antigravity|grok|kimi`\n");
}

#[test]
fn man_renders_a_roff_page() {
    let output = okstra().arg("man").output().unwrap();
    assert!(output.status.success());
    let page = String::from_utf8_lossy(&output.stdout);
    assert!(
        page.starts_with(".ie") || page.contains(".TH okstra"),
        "{page}"
    );
    assert!(page.contains("install"), "{page}");
}
