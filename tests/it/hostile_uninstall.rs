//! Integration tests: hostile input, round two — `okstra install
//! --uninstall` with an edited install record. The record is a file anyone
//! can edit; uninstall must remove only what install writes (and only while
//! it is unchanged), name everything else on stderr and keep it, finish the
//! other entries, and rewrite the record to list what it kept.

use std::fmt::Write as _;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tempfile::TempDir;

use crate::support::{okstra, read_json};

/// A temporary HOME, a bin folder and a folder `outside` install's places.
struct World {
    dir: TempDir,
}

impl World {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["home", "bin", "outside"] {
            fs::create_dir(dir.path().join(sub)).unwrap();
        }
        World { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn okstra(&self, args: &[&str]) -> std::process::Output {
        let mut cmd = okstra();
        cmd.args(args).env("HOME", self.path("home"));
        for name in [
            "XDG_STATE_HOME",
            "XDG_CACHE_HOME",
            "XDG_CONFIG_HOME",
            "CLAUDE_CONFIG_DIR",
            "CODEX_HOME",
        ] {
            cmd.env_remove(name);
        }
        cmd.output().unwrap()
    }

    fn record_path(&self) -> PathBuf {
        self.path("home/.local/state/okstra/install.json")
    }
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .fold(String::new(), |mut hex, byte| {
            let _ = write!(hex, "{byte:02x}");
            hex
        })
}

const USER_SETTINGS: &str = "{\n  \"model\": \"opus\"\n}\n";

#[test]
fn uninstall_keeps_and_names_what_an_edited_record_points_outside_installs_places() {
    let world = World::new();
    fs::create_dir(world.path("home/.claude")).unwrap();
    fs::write(world.path("home/.claude/settings.json"), USER_SETTINGS).unwrap();
    let bin = world.path("bin");
    let install = world.okstra(&[
        "install",
        "--claude-code",
        "--codex",
        "--bin-dir",
        bin.to_str().unwrap(),
    ]);
    assert!(
        install.status.success(),
        "{}",
        String::from_utf8_lossy(&install.stderr)
    );

    // What an edited record points at: none of it okstra's.
    let precious = world.path("outside/precious\u{1b}[2J.txt");
    fs::write(&precious, "keep me\n").unwrap();
    let link = world.path("outside/my-link");
    symlink(world.path("outside"), &link).unwrap();
    let empty = world.path("outside/empty");
    fs::create_dir(&empty).unwrap();
    let foreign_settings = world.path("outside/other.json");
    fs::write(&foreign_settings, "{}\n").unwrap();
    let fake_backup = world.path("outside/never-backed-up.json");
    fs::write(&fake_backup, "{\"mine\": true}\n").unwrap();

    let mut record = read_json(&world.record_path());
    let records = record["records"].as_array_mut().unwrap();
    let reap_group = records.iter().find(|r| r["kind"] == "hooks").unwrap()["groups"][0].clone();
    // The codex hooks file was created by okstra: give it a "backup" that
    // install never wrote.
    let codex_hooks = records
        .iter_mut()
        .find(|r| r["kind"] == "hooks" && r["path"].as_str().unwrap().ends_with("hooks.json"))
        .unwrap();
    codex_hooks["backup"] = json!(fake_backup);
    records.extend([
        json!({"kind": "file", "path": precious, "sha256": sha256(b"keep me\n")}),
        json!({"kind": "link", "path": link, "target": world.path("outside")}),
        json!({"kind": "dir", "path": empty}),
        json!({"kind": "hooks", "path": foreign_settings, "groups": [reap_group],
               "created": true, "backup": null}),
    ]);
    fs::write(
        world.record_path(),
        serde_json::to_vec_pretty(&record).unwrap(),
    )
    .unwrap();

    let out = world.okstra(&["install", "--uninstall"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(!out.stderr.contains(&0x1b), "raw ESC on stderr: {stderr}");
    for named in [
        "precious\\e[2J.txt",
        "my-link",
        "empty",
        "other.json",
        "never-backed-up.json",
    ] {
        let lines: Vec<&str> = stderr.lines().filter(|l| l.contains(named)).collect();
        assert_eq!(lines.len(), 1, "{named}: {stderr}");
        assert!(lines[0].starts_with("warning: "), "{}", lines[0]);
    }
    assert!(
        stderr
            .lines()
            .last()
            .unwrap()
            .starts_with("error: kept 5 recorded entries"),
        "{stderr}"
    );

    // Everything outside is still there, as it was.
    assert_eq!(fs::read_to_string(&precious).unwrap(), "keep me\n");
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(empty.is_dir());
    assert_eq!(fs::read_to_string(&foreign_settings).unwrap(), "{}\n");
    assert_eq!(
        fs::read_to_string(&fake_backup).unwrap(),
        "{\"mine\": true}\n"
    );
    // What install really wrote is gone; the user's settings are back.
    assert_eq!(fs::read_dir(&bin).unwrap().count(), 0);
    for gone in [
        ".claude/skills",
        ".agents",
        ".codex",
        ".local/state/okstra/backups",
    ] {
        assert!(!world.path("home").join(gone).exists(), "{gone}");
    }
    assert_eq!(
        fs::read_to_string(world.path("home/.claude/settings.json")).unwrap(),
        USER_SETTINGS
    );

    // The record now lists what was kept, and only that.
    let left = read_json(&world.record_path());
    let mut kept: Vec<(String, PathBuf)> = left["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] != "dir" || r["path"] == json!(empty))
        .map(|r| {
            (
                r["kind"].as_str().unwrap().to_owned(),
                PathBuf::from(r["path"].as_str().unwrap()),
            )
        })
        .collect();
    let mut expected = vec![
        ("hooks".to_owned(), world.path("home/.codex/hooks.json")),
        ("file".to_owned(), precious.clone()),
        ("link".to_owned(), link.clone()),
        ("hooks".to_owned(), foreign_settings.clone()),
        ("dir".to_owned(), empty.clone()),
    ];
    kept.sort();
    expected.sort();
    assert_eq!(kept, expected, "{left:#}");
    let codex = left["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == json!(world.path("home/.codex/hooks.json")))
        .unwrap();
    assert_eq!(codex["groups"], json!([]));
    assert_eq!(codex["backup"], json!(fake_backup));
    for dir in left["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "dir" && r["path"] != json!(empty))
    {
        let path = Path::new(dir["path"].as_str().unwrap());
        assert!(
            world.record_path().starts_with(path),
            "only the state folder's own folders stay recorded: {dir}"
        );
    }

    // A second uninstall touches nothing and says the same.
    let again = world.okstra(&["install", "--uninstall"]);
    assert_eq!(again.status.code(), Some(2));
    assert_eq!(fs::read_to_string(&precious).unwrap(), "keep me\n");
    assert_eq!(read_json(&world.record_path()), left);
}

#[test]
fn a_settings_backup_that_changed_since_install_is_kept_not_restored_or_removed() {
    let world = World::new();
    fs::create_dir(world.path("home/.claude")).unwrap();
    let settings = world.path("home/.claude/settings.json");
    fs::write(&settings, USER_SETTINGS).unwrap();
    let bin = world.path("bin");
    let install = world.okstra(&[
        "install",
        "--claude-code",
        "--bin-dir",
        bin.to_str().unwrap(),
    ]);
    assert!(install.status.success());
    let record: Value = read_json(&world.record_path());
    let backup = record["records"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|r| r["backup"].as_str())
        .map(PathBuf::from)
        .unwrap();
    fs::write(&backup, "{\"swapped\": true}\n").unwrap();

    let out = world.okstra(&["install", "--uninstall"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("it changed since okstra backed the settings up"),
        "{stderr}"
    );
    assert_eq!(
        fs::read_to_string(&backup).unwrap(),
        "{\"swapped\": true}\n"
    );
    let after: Value = serde_json::from_slice(&fs::read(&settings).unwrap()).unwrap();
    assert_eq!(after, json!({"model": "opus"}));
    assert_eq!(fs::read_dir(&bin).unwrap().count(), 0);
    assert!(world.record_path().is_file());
}

/// Issue 33, item 10: install and uninstall through a symlinked settings
/// file (dotfiles) keep the file's mode as well as its bytes.
#[test]
fn install_and_uninstall_through_a_symlinked_settings_file_keep_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let world = World::new();
    let real = world.path("home/dotfiles/claude-settings.json");
    fs::create_dir_all(real.parent().unwrap()).unwrap();
    fs::write(&real, USER_SETTINGS).unwrap();
    fs::set_permissions(&real, fs::Permissions::from_mode(0o644)).unwrap();
    fs::create_dir(world.path("home/.claude")).unwrap();
    symlink(&real, world.path("home/.claude/settings.json")).unwrap();
    let mode = || fs::metadata(&real).unwrap().permissions().mode() & 0o777;
    let bin = world.path("bin");
    let install = world.okstra(&[
        "install",
        "--claude-code",
        "--bin-dir",
        bin.to_str().unwrap(),
    ]);
    assert!(
        install.status.success(),
        "{}",
        String::from_utf8_lossy(&install.stderr)
    );
    assert_ne!(fs::read_to_string(&real).unwrap(), USER_SETTINGS);
    assert_eq!(mode(), 0o644, "install changed the mode");
    let out = world.okstra(&["install", "--uninstall"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(fs::read_to_string(&real).unwrap(), USER_SETTINGS);
    assert_eq!(mode(), 0o644, "uninstall left another mode");
    assert!(
        fs::symlink_metadata(world.path("home/.claude/settings.json"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}
