//! Integration tests for `okstra doctor` and for what its cache feeds: the
//! run manifest's `providerClis`, the sidecar's `cli_version`, and
//! provider-exec driving the community vibe-kit grok. Fake CLIs are the
//! scripts in `tests/fixtures/doctor/`, copied into a `bin/` folder that is
//! first on `PATH`; HOME and the cache folder are temporary, for the child only.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::PathBuf;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::support::{okstra, repo_root};

struct World {
    dir: TempDir,
}

impl World {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["bin", "home", "cache", "fake", "project"] {
            fs::create_dir(dir.path().join(sub)).unwrap();
        }
        fs::write(dir.path().join("project/brief.md"), "# Why?\n").unwrap();
        Self { dir }
    }
    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
    /// Copy fixture `script` to `bin/<binary>` (a file of its own, so its
    /// mtime and the cache entry belong to this test).
    fn cli(&self, binary: &str, script: &str) -> &Self {
        let target = self.path("bin").join(binary);
        fs::copy(
            repo_root().join("tests/fixtures/doctor").join(script),
            &target,
        )
        .unwrap();
        self
    }
    fn command(&self) -> assert_cmd::Command {
        let mut cmd = okstra();
        cmd.env(
            "PATH",
            format!("{}:/usr/bin:/bin", self.path("bin").display()),
        )
        .env("HOME", self.path("home"))
        .env("XDG_CACHE_HOME", self.path("cache"))
        .env("FAKE_DIR", self.path("fake"))
        .current_dir(self.path("project"));
        for name in [
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "CLAUDE_CODE_OAUTH_TOKEN",
            "CLAUDE_CODE_USE_BEDROCK",
            "CLAUDE_CODE_USE_VERTEX",
            "CLAUDE_CONFIG_DIR",
            "OPENAI_API_KEY",
            "CODEX_API_KEY",
            "CODEX_HOME",
            "GEMINI_API_KEY",
            "GOOGLE_API_KEY",
            "GOOGLE_GENAI_USE_VERTEXAI",
            "XAI_API_KEY",
            "GROK_API_KEY",
            "KIMI_MODEL_API_KEY",
            "KIMI_CODE_HOME",
        ] {
            cmd.env_remove(name);
        }
        cmd
    }
    fn doctor_json(&self, extra: &[&str], code: i32) -> Value {
        let output = self
            .command()
            .args(["doctor", "--json"])
            .args(extra)
            .assert()
            .code(code)
            .get_output()
            .clone();
        serde_json::from_slice(&output.stdout).unwrap()
    }
    fn calls(&self) -> String {
        fs::read_to_string(self.path("fake/calls")).unwrap_or_default()
    }
}

fn provider<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["providers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["provider"] == name)
        .unwrap_or_else(|| panic!("no {name} in {report}"))
}

#[test]
fn doctor_tells_present_missing_and_look_alike_clis_apart() {
    let world = World::new();
    world
        .cli("claude", "claude-ok.sh")
        .cli("codex", "codex.sh")
        .cli("grok", "grok-vibe-kit.sh")
        .cli("kimi", "kimi-legacy.sh");
    fs::create_dir(world.path("home/.codex")).unwrap();
    fs::write(
        world.path("home/.codex/auth.json"),
        "{\"token\":\"codex-secret\"}",
    )
    .unwrap();
    let output = world
        .command()
        .args(["doctor", "--json"])
        .env("ANTHROPIC_API_KEY", "sk-ant-very-secret")
        .assert()
        .success()
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(!stdout.contains("very-secret") && !stdout.contains("codex-secret"));
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["ready"], json!(true));
    assert_eq!(report["required"], json!(["claude", "codex"]));

    let claude = provider(&report, "claude");
    assert_eq!(claude["version"], json!("2.1.197"));
    assert_eq!(claude["program"], json!("expected"));
    assert_eq!(claude["credentials"], json!(["ANTHROPIC_API_KEY set"]));
    assert_eq!(claude["ready"], json!(true));
    let codex = provider(&report, "codex");
    assert_eq!(codex["version"], json!("0.171.0"));
    let found = codex["credentials"][0].as_str().unwrap();
    assert!(
        found.starts_with("found ") && found.ends_with("/.codex/auth.json"),
        "{found}"
    );

    let grok = provider(&report, "grok");
    assert_eq!(grok["program"], json!("vibe-kit-grok"));
    assert_eq!(grok["version"], json!("1.0.1"));
    assert_eq!(grok["ready"], json!(false), "no grok credentials");
    let kimi = provider(&report, "kimi");
    assert_eq!(kimi["program"], json!("legacy-kimi-cli"));
    assert_eq!(kimi["ready"], json!(false));
    assert_eq!(kimi["notes"].as_array().unwrap().len(), 1, "{kimi}");
    let note = kimi["notes"][0].as_str().unwrap();
    assert!(
        note.contains("archived PyPI `kimi-cli`") && note.contains("@moonshot-ai/kimi-code"),
        "{note}"
    );
    assert!(
        !world.path("fake/bare-kimi").exists(),
        "kimi was started with no arguments"
    );

    let agy = provider(&report, "antigravity");
    assert_eq!(agy["path"], Value::Null);
    assert_eq!(agy["ready"], json!(false));
    assert_eq!(agy["notes"], json!(["`agy` is not on PATH"]));

    // The table says the same in columns.
    let table = world
        .command()
        .arg("doctor")
        .env("ANTHROPIC_API_KEY", "x")
        .env("OPENAI_API_KEY", "x")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let table = String::from_utf8_lossy(&table);
    assert!(table.starts_with("PROVIDER"), "{table}");
    for expected in [
        "vibe-kit-grok",
        "legacy-kimi-cli",
        "missing",
        "2.1.197",
        "antigravity: `agy` is not on PATH",
    ] {
        assert!(table.contains(expected), "{expected} not in:\n{table}");
    }
}

#[test]
fn findings_are_cached_per_cli_path_and_mtime() {
    let world = World::new();
    world.cli("claude", "claude-ok.sh").cli("codex", "codex.sh");
    world.doctor_json(&["--provider", "claude,codex"], 1);
    assert_eq!(world.calls(), "claude --version\ncodex --version\n");
    let again = world.doctor_json(&["--provider", "claude", "--provider", "codex"], 1);
    assert_eq!(
        world.calls().lines().count(),
        2,
        "a cached CLI was asked again"
    );
    assert_eq!(provider(&again, "codex")["cached"], json!(true));
    assert_eq!(provider(&again, "codex")["version"], json!("0.171.0"));
    let cache: Value =
        serde_json::from_slice(&fs::read(world.path("cache/okstra/doctor.json")).unwrap()).unwrap();
    assert_eq!(cache["entries"].as_object().unwrap().len(), 2);

    // A new build (another mtime) is asked again.
    let codex = world.path("bin/codex");
    let file = fs::File::options().write(true).open(&codex).unwrap();
    file.set_modified(
        std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000),
    )
    .unwrap();
    drop(file);
    world.doctor_json(&["--provider", "codex"], 1);
    assert_eq!(world.calls().lines().last(), Some("codex --version"));
    assert_eq!(world.calls().lines().count(), 3);
}

#[test]
fn doctor_fails_when_a_default_provider_is_missing() {
    let world = World::new();
    world.cli("claude", "claude-ok.sh");
    let report = world.doctor_json(&[], 1);
    assert_eq!(report["ready"], json!(false));
    let table = world
        .command()
        .arg("doctor")
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let table = String::from_utf8_lossy(&table);
    let codex_row = table.lines().find(|l| l.starts_with("codex")).unwrap();
    assert!(
        codex_row.contains("missing") && codex_row.trim_end().ends_with("NO"),
        "{codex_row}"
    );
    // A non-default provider is judged only when asked for.
    world
        .command()
        .args(["doctor", "--provider", "grok"])
        .assert()
        .code(1);
    world
        .command()
        .args(["doctor", "--provider", "gemini"])
        .assert()
        .code(2)
        .stderr("error: unknown provider `gemini`, expected one of `claude|codex|antigravity|grok|kimi`\n");
}

#[test]
fn a_probe_of_a_claude_that_is_not_logged_in_ends_auth() {
    let world = World::new();
    world.cli("claude", "claude-not-logged-in.sh");
    let report = world.doctor_json(&["--probe", "--provider", "claude"], 1);
    let claude = provider(&report, "claude");
    assert_eq!(claude["probe"]["ending"], json!("auth"), "{claude}");
    assert_eq!(claude["probe"]["exitCode"], json!(1));
    assert_eq!(claude["probe"]["model"], json!("opus"));
    assert!(
        claude["probe"]["logTail"]
            .as_array()
            .unwrap()
            .iter()
            .any(|line| line.as_str().unwrap().contains("authentication_failed"))
    );
    assert_eq!(claude["ready"], json!(false));

    let world = World::new();
    world.cli("claude", "claude-ok.sh");
    let report = world.doctor_json(&["--probe", "--provider", "claude"], 0);
    assert_eq!(
        provider(&report, "claude")["probe"]["ending"],
        json!("completed")
    );
}

/// Render a run with `workers` in `world`'s project; returns the manifest and stderr.
fn render(world: &World, workers: &str) -> (Value, String) {
    let output = world
        .command()
        .args([
            "--render-only",
            "--yes",
            "--json",
            "--task-type",
            "project-analysis",
            "--project-id",
            "demo",
            "--task-group",
            "cli",
            "--task-id",
            "versions",
            "--task-brief",
            "brief.md",
            "--workers",
            workers,
        ])
        .write_stdin("")
        .assert()
        .success()
        .get_output()
        .clone();
    let paths: Value = serde_json::from_slice(&output.stdout).unwrap();
    let manifest: Value =
        serde_json::from_slice(&fs::read(paths["runManifest"].as_str().unwrap()).unwrap()).unwrap();
    (
        manifest,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn the_run_manifest_records_cached_versions_and_warns_about_wrong_clis() {
    let world = World::new();
    world.cli("claude", "claude-ok.sh").cli("codex", "codex.sh");
    let (manifest, stderr) = render(&world, "claude,codex,report-writer");
    // Not cached yet: recorded as unknown, never asked at render.
    assert_eq!(
        manifest["providerClis"]["codex"]["version"],
        json!("unknown")
    );
    assert!(
        world.calls().is_empty(),
        "render started a CLI: {}",
        world.calls()
    );
    assert!(!stderr.contains("warning"), "{stderr}");

    world.doctor_json(&[], 1);
    world.cli("kimi", "kimi-legacy.sh");
    world.doctor_json(&["--provider", "kimi"], 1);
    let (manifest, stderr) = render(&world, "claude,codex,grok,kimi,report-writer");
    let clis = &manifest["providerClis"];
    assert_eq!(clis["codex"]["version"], json!("0.171.0"));
    assert_eq!(clis["codex"]["program"], json!("expected"));
    assert!(
        clis["codex"]["path"]
            .as_str()
            .unwrap()
            .ends_with("/bin/codex")
    );
    assert_eq!(
        clis["grok"],
        json!({"path": null, "version": "unknown", "program": null})
    );
    assert_eq!(clis["kimi"]["program"], json!("legacy-kimi-cli"));
    // claude is the host-native lead's own worker here, not a wrapper.
    assert!(clis.get("claude").is_none(), "{clis}");
    assert!(stderr.contains("warning: the roster runs `grok` through its wrapper, but `grok` is not on PATH; run `okstra doctor`"), "{stderr}");
    assert!(
        stderr.contains("is not the CLI okstra drives (legacy-kimi-cli); run `okstra doctor`"),
        "{stderr}"
    );
}

/// `okstra provider-exec <provider> <project> m <prompt>`; returns (code, stderr, sidecar).
fn exec(world: &World, provider: &str) -> (i32, String, Option<Value>) {
    let prompt = world.path("task.md");
    fs::write(&prompt, "do it\n").unwrap();
    let output = world
        .command()
        .arg("provider-exec")
        .arg(provider)
        .arg(world.path("project"))
        .arg("m-1")
        .arg(&prompt)
        .output()
        .unwrap();
    let sidecar = fs::read(world.path("task.md.status.json"))
        .ok()
        .map(|bytes| serde_json::from_slice(&bytes).unwrap());
    (
        output.status.code().unwrap(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        sidecar,
    )
}

#[test]
fn the_sidecar_records_the_cached_cli_version() {
    let world = World::new();
    world.cli("codex", "codex.sh");
    let (code, _, sidecar) = exec(&world, "codex");
    assert_eq!(code, 0);
    let sidecar = sidecar.unwrap();
    assert_eq!(sidecar["cli_version"], json!("unknown"));
    assert!(
        sidecar["cli_path"]
            .as_str()
            .unwrap()
            .ends_with("/bin/codex")
    );
    world.doctor_json(&["--provider", "codex"], 1);
    let (_, _, sidecar) = exec(&world, "codex");
    assert_eq!(sidecar.unwrap()["cli_version"], json!("0.171.0"));
}

fn recorded_argv(world: &World) -> Vec<String> {
    fs::read_to_string(world.path("fake/argv"))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn vibe_kit_argv(world: &World) -> Vec<String> {
    vec![
        "-p".to_owned(),
        format!(
            "Read the task in {} and follow it.",
            world.path("task.md").display()
        ),
        "-d".to_owned(),
        world.path("project").display().to_string(),
        "-m".to_owned(),
        "m-1".to_owned(),
    ]
}

#[test]
fn vibe_kit_grok_is_driven_once_the_doctor_has_seen_it() {
    let world = World::new();
    world.cli("grok", "grok-vibe-kit.sh");
    // Unknown to okstra: the Grok Build command line, which vibe-kit rejects.
    let (code, _, _) = exec(&world, "grok");
    assert_eq!(code, 1);
    world.doctor_json(&["--provider", "grok"], 1);
    let (code, stderr, sidecar) = exec(&world, "grok");
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(recorded_argv(&world), vibe_kit_argv(&world));
    assert_eq!(sidecar.unwrap()["cli_version"], json!("1.0.1"));
}

#[test]
fn vibe_kit_grok_is_recognised_by_its_npm_install_path() {
    let world = World::new();
    let package = world.path("lib/node_modules/@vibe-kit/grok-cli/dist");
    fs::create_dir_all(&package).unwrap();
    let script = package.join("index.js");
    fs::copy(
        repo_root().join("tests/fixtures/doctor/grok-vibe-kit.sh"),
        &script,
    )
    .unwrap();
    symlink(&script, world.path("bin/grok")).unwrap();
    let (code, stderr, _) = exec(&world, "grok");
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(recorded_argv(&world), vibe_kit_argv(&world));
}

#[test]
fn the_legacy_kimi_cli_is_refused_before_it_starts() {
    let world = World::new();
    world.cli("kimi", "kimi-legacy.sh");
    world.doctor_json(&["--provider", "kimi"], 1);
    let (code, stderr, sidecar) = exec(&world, "kimi");
    assert_eq!(code, 64);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("okstra-provider-exec: error: the `kimi` at `"),
        "{stderr}"
    );
    assert!(
        stderr.contains("archived PyPI kimi-cli") && stderr.contains("@moonshot-ai/kimi-code"),
        "{stderr}"
    );
    assert!(
        sidecar.is_none(),
        "nothing may be written before the CLI starts"
    );
}

#[test]
fn kimi_code_gets_a_note_when_the_default_model_is_no_alias_of_its_config() {
    let world = World::new();
    world.cli("kimi", "kimi-code.sh");
    let report = world.doctor_json(&["--provider", "kimi"], 1);
    let kimi = provider(&report, "kimi");
    assert_eq!(kimi["program"], json!("expected"));
    assert_eq!(kimi["version"], json!("2.1.0"));
    let notes = kimi["notes"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("`-m` names a model alias")),
        "{kimi}"
    );
    fs::create_dir(world.path("home/.kimi-code")).unwrap();
    fs::write(
        world.path("home/.kimi-code/config.toml"),
        "default_model = \"kimi-k2.7-code\"\n",
    )
    .unwrap();
    let report = world.doctor_json(&["--provider", "kimi"], 0);
    let kimi = provider(&report, "kimi");
    assert_eq!(kimi["ready"], json!(true), "{kimi}");
    assert_eq!(kimi["credentials"].as_array().unwrap().len(), 1);
}
