//! Integration tests for `okstra doctor` and for what its cache feeds: the
//! run manifest's `providerClis`, the sidecar's `cli_version`, and
//! provider-exec driving the community vibe-kit grok. Fake CLIs are the
//! scripts in `tests/fixtures/doctor/`, copied into a `bin/` folder that is
//! first on `PATH`; HOME and the cache folder are temporary, for the child only.

use std::fs;
use std::os::unix::fs::symlink;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::support::{Project, repo_root};

/// The doctor tests' project: key `demo/cli/versions`, brief `# Why?`.
fn doctor_project() -> Project {
    Project::new()
        .brief("# Why?\n")
        .key("demo", "cli", "versions")
}

/// `okstra doctor --json <extra>`, which must exit `code`; its report.
fn doctor_json(project: &Project, extra: &[&str], code: i32) -> Value {
    let output = project
        .okstra()
        .args(["doctor", "--json"])
        .args(extra)
        .assert()
        .code(code)
        .get_output()
        .clone();
    serde_json::from_slice(&output.stdout).unwrap()
}

/// What the fake CLIs were called with, one call a line.
fn calls(project: &Project) -> String {
    fs::read_to_string(project.path("fake/calls")).unwrap_or_default()
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
    let world = doctor_project();
    world
        .copy_cli("claude", "doctor/claude-ok.sh")
        .copy_cli("codex", "doctor/codex.sh")
        .copy_cli("grok", "doctor/grok-vibe-kit.sh")
        .copy_cli("kimi", "doctor/kimi-legacy.sh");
    fs::create_dir(world.path("home/.codex")).unwrap();
    fs::write(
        world.path("home/.codex/auth.json"),
        "{\"token\":\"codex-secret\"}",
    )
    .unwrap();
    let output = world
        .okstra()
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
        .okstra()
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
    // Every provider that is not ready gets a fix line, after its notes.
    for (name, fix) in [
        (
            "antigravity",
            "antigravity: fix: install Antigravity's `agy`",
        ),
        ("grok", "grok: fix: set `XAI_API_KEY`"),
        ("kimi", "kimi: fix: uninstall the archived PyPI `kimi-cli`"),
    ] {
        assert!(table.contains(fix), "{fix} not in:\n{table}");
        assert!(
            !provider(&report, name)["fixes"]
                .as_array()
                .unwrap()
                .is_empty(),
            "{name} has no fix in the JSON"
        );
    }
    assert_eq!(claude["fixes"], json!([]));
}

#[test]
fn findings_are_cached_per_cli_path_and_mtime() {
    let world = doctor_project();
    world
        .copy_cli("claude", "doctor/claude-ok.sh")
        .copy_cli("codex", "doctor/codex.sh");
    doctor_json(&world, &["--provider", "claude,codex"], 1);
    // Both are asked at once, so in either order.
    let mut asked: Vec<String> = calls(&world).lines().map(str::to_owned).collect();
    asked.sort();
    assert_eq!(asked, ["claude --version", "codex --version"]);
    let again = doctor_json(&world, &["--provider", "claude", "--provider", "codex"], 1);
    assert_eq!(
        calls(&world).lines().count(),
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
    doctor_json(&world, &["--provider", "codex"], 1);
    assert_eq!(calls(&world).lines().last(), Some("codex --version"));
    assert_eq!(calls(&world).lines().count(), 3);
}

/// The doctor says how a run rendered now keeps its CLIs from the project:
/// Landlock on these machines (Linux 6.18, ABI 7), copies when forced, and
/// why.
#[test]
fn doctor_says_how_runs_are_contained() {
    let world = doctor_project();
    let containment = |world: &Project| -> (String, Value) {
        let table = world.okstra().arg("doctor").output().unwrap();
        let line = String::from_utf8_lossy(&table.stdout)
            .lines()
            .find(|line| line.starts_with("containment: "))
            .unwrap_or_else(|| panic!("no containment line"))
            .to_owned();
        let report = world.okstra().args(["doctor", "--json"]).output().unwrap();
        let report: Value = serde_json::from_slice(&report.stdout).unwrap();
        (line, report["containment"].clone())
    };
    let (line, json) = containment(&world);
    let abi = json["abi"].as_u64().unwrap();
    assert!(abi >= 3, "{json}");
    assert_eq!(json["mode"], "landlock");
    assert_eq!(line, format!("containment: landlock (ABI {abi})"));
    let forced = doctor_project().copies();
    let (line, json) = containment(&forced);
    assert_eq!(
        line,
        "containment: copies — `OKSTRA_CONTAINMENT=copies` asks for them"
    );
    assert_eq!(json["mode"], "copies");
}

#[test]
fn doctor_fails_when_a_default_provider_is_missing() {
    let world = doctor_project();
    world.copy_cli("claude", "doctor/claude-ok.sh");
    let report = doctor_json(&world, &[], 1);
    assert_eq!(report["ready"], json!(false));
    let table = world
        .okstra()
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
    // `NO` and `no` are told apart under the table.
    let grok_row = table.lines().find(|l| l.starts_with("grok")).unwrap();
    assert!(grok_row.trim_end().ends_with("no"), "{grok_row}");
    assert!(
        table.contains(
            "\nREADY: `NO` not ready and checked for the exit code (claude, codex); `no` not ready, not needed unless your roster names it\n"
        ),
        "{table}"
    );
    // A non-default provider is judged only when asked for.
    world
        .okstra()
        .args(["doctor", "--provider", "grok"])
        .assert()
        .code(1);
    world.okstra()
        .args(["doctor", "--provider", "gemini"])
        .assert()
        .code(2)
        .stderr("error: unknown provider `gemini`, expected one of `claude|codex|antigravity|grok|kimi`\n");
}

#[test]
fn a_probe_of_a_claude_that_is_not_logged_in_ends_auth() {
    let world = doctor_project();
    world.copy_cli("claude", "doctor/claude-not-logged-in.sh");
    let output = world
        .okstra()
        .args(["doctor", "--json", "--probe", "--provider", "claude"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    // The probe says what it does while it waits, and how it ended.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("okstra: probing claude: one tiny headless run"),
        "{stderr}"
    );
    assert!(
        stderr.contains("okstra: claude: the probe ended `auth` after"),
        "{stderr}"
    );
    let claude = provider(&report, "claude");
    assert_eq!(claude["probe"]["ending"], json!("auth"), "{claude}");
    assert!(
        claude["fixes"][0].as_str().unwrap().contains("`/login`"),
        "{claude}"
    );
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

    let world = doctor_project();
    world.copy_cli("claude", "doctor/claude-ok.sh");
    let report = doctor_json(&world, &["--probe", "--provider", "claude"], 0);
    assert_eq!(
        provider(&report, "claude")["probe"]["ending"],
        json!("completed")
    );
}

/// Render a run with `workers` in `world`'s project; returns the manifest and stderr.
fn render(world: &Project, workers: &str) -> (Value, String) {
    let output = world
        .render_command(&[
            "--json",
            "--task-type",
            "project-analysis",
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
    let world = doctor_project();
    world
        .copy_cli("claude", "doctor/claude-ok.sh")
        .copy_cli("codex", "doctor/codex.sh");
    let (manifest, stderr) = render(&world, "claude,codex,report-writer");
    // Not cached yet: recorded as unknown, never asked at render.
    assert_eq!(
        manifest["providerClis"]["codex"]["version"],
        json!("unknown")
    );
    assert!(
        calls(&world).is_empty(),
        "render started a CLI: {}",
        calls(&world)
    );
    assert!(!stderr.contains("warning"), "{stderr}");

    doctor_json(&world, &[], 1);
    world.copy_cli("kimi", "doctor/kimi-legacy.sh");
    doctor_json(&world, &["--provider", "kimi"], 1);
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
fn exec(world: &Project, provider: &str) -> (i32, String, Option<Value>) {
    let prompt = world.path("task.md");
    fs::write(&prompt, "do it\n").unwrap();
    let output = world
        .okstra()
        .arg("provider-exec")
        .arg(provider)
        .arg(world.root())
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
    let world = doctor_project();
    world.copy_cli("codex", "doctor/codex.sh");
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
    doctor_json(&world, &["--provider", "codex"], 1);
    let (_, _, sidecar) = exec(&world, "codex");
    assert_eq!(sidecar.unwrap()["cli_version"], json!("0.171.0"));
}

fn recorded_argv(world: &Project) -> Vec<String> {
    fs::read_to_string(world.path("fake/argv"))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn vibe_kit_argv(world: &Project) -> Vec<String> {
    vec![
        "-p".to_owned(),
        format!(
            "Read the task in {} and follow it.",
            world.path("task.md").display()
        ),
        "-d".to_owned(),
        world.root().display().to_string(),
        "-m".to_owned(),
        "m-1".to_owned(),
    ]
}

#[test]
fn vibe_kit_grok_is_driven_once_the_doctor_has_seen_it() {
    let world = doctor_project();
    world.copy_cli("grok", "doctor/grok-vibe-kit.sh");
    // Unknown to okstra: the Grok Build command line, which vibe-kit rejects.
    let (code, _, _) = exec(&world, "grok");
    assert_eq!(code, 1);
    doctor_json(&world, &["--provider", "grok"], 1);
    let (code, stderr, sidecar) = exec(&world, "grok");
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(recorded_argv(&world), vibe_kit_argv(&world));
    assert_eq!(sidecar.unwrap()["cli_version"], json!("1.0.1"));
}

#[test]
fn vibe_kit_grok_is_recognised_by_its_npm_install_path() {
    let world = doctor_project();
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
    let world = doctor_project();
    world.copy_cli("kimi", "doctor/kimi-legacy.sh");
    doctor_json(&world, &["--provider", "kimi"], 1);
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
    let world = doctor_project();
    world.copy_cli("kimi", "doctor/kimi-code.sh");
    let report = doctor_json(&world, &["--provider", "kimi"], 1);
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
    let report = doctor_json(&world, &["--provider", "kimi"], 0);
    let kimi = provider(&report, "kimi");
    assert_eq!(kimi["ready"], json!(true), "{kimi}");
    assert_eq!(kimi["credentials"].as_array().unwrap().len(), 1);
}

/// A CLI that starts a daemon with `setsid` (its own session, outside the
/// CLI's process group, as the interactive codex does) while the doctor asks
/// it for its version: the doctor is a sub-reaper, so the daemon re-parents
/// to it and is stopped with the probe, not left running.
#[test]
fn the_doctor_leaves_no_daemon_a_cli_started_with_setsid() {
    let world = doctor_project();
    world.copy_cli("kimi", "providers/setsid-grandchild.sh");
    let output = world
        .okstra()
        .args(["doctor", "--json", "--provider", "kimi"])
        .output()
        .unwrap();
    assert!(output.status.code().is_some(), "the doctor ends");
    let pid: i32 = fs::read_to_string(world.path("fake/grandchild.pid"))
        .expect("the fake CLI ran and started its daemon")
        .trim()
        .parse()
        .unwrap();
    let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok();
    if alive {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert!(!alive, "the daemon {pid} outlived the doctor");
}
