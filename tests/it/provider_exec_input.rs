//! provider-exec: what the CLI is given — the prompt on stdin or as a
//! pointer in argv, the environment and working folder, symlinked prompts
//! and wrappers, a non-UTF-8 model.

use pretty_assertions::assert_eq;

use super::*;

use crate::support::limit;

#[test]
fn a_one_mib_prompt_reaches_a_stdin_cli_byte_for_byte() {
    let world = World::new("claude", "record.sh");
    let prompt: Vec<u8> = (0..1024 * 1024)
        .map(|i| b"abc\r\n\x00\xff"[i % 7])
        .collect();
    fs::write(world.prompt(), &prompt).unwrap();
    let run = world.run(&world.args("claude", &["", "verifier"]));
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert!(
        world.recorded("stdin") == prompt,
        "stdin differs from the prompt"
    );
    assert_eq!(
        world.recorded_argv(),
        [
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--model",
            "test-model",
            "--permission-mode",
            "plan"
        ]
    );
    let status = world.status();
    assert_eq!(status["idle_timeout_seconds"], 1500);
    assert_eq!(status["role"], "verifier");
}

/// The guardian is forked while the prompt thread is still filling the CLI's
/// stdin: its copy of that pipe's write end (or of any other) would keep the
/// CLI from ever seeing EOF, and the run would hang.
#[test]
fn a_cli_that_reads_its_prompt_late_still_gets_eof() {
    let world = World::new("claude", "late-reader.sh");
    let prompt = vec![b'p'; 1024 * 1024];
    fs::write(world.prompt(), &prompt).unwrap();
    let run = world.run(&world.args("claude", &["", "verifier"]));
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert!(
        world.recorded("stdin") == prompt,
        "stdin differs from the prompt"
    );
    assert_eq!(world.status()["reason"], "exited");
}

#[test]
fn a_crlf_prompt_survives_on_stdin() {
    let world = World::new("codex", "record.sh");
    fs::write(world.prompt(), b"line one\r\nline two\r\n").unwrap();
    let run = world.run(&world.args("codex", &[]));
    assert_eq!(run.code(), 0);
    assert_eq!(world.recorded("stdin"), b"line one\r\nline two\r\n");
}

#[test]
fn argv_providers_get_a_short_pointer_and_an_empty_stdin() {
    let world = World::new("kimi", "record.sh");
    fs::write(world.prompt(), vec![b'x'; 1024 * 1024]).unwrap();
    let run = world.run(&world.args("kimi", &[]));
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let pointer = format!(
        "Read the task in {} and follow it.",
        world.prompt().display()
    );
    assert_eq!(
        world.recorded_argv(),
        [
            "-p",
            &pointer,
            "-m",
            "test-model",
            "--output-format",
            "stream-json"
        ]
    );
    assert_eq!(world.recorded("stdin"), b"");
    let env = String::from_utf8(world.recorded("env")).unwrap();
    assert!(env.lines().any(|line| line == "KIMI_CODE_NO_AUTO_UPDATE=1"));
}

#[test]
fn host_session_markers_are_removed_and_the_cwd_is_the_worktree() {
    let world = World::new("claude", "record.sh");
    let worktree = world.path("worktree");
    fs::create_dir(&worktree).unwrap();
    let mut cmd = world.command(
        &okstra_path(),
        &prepend(
            "provider-exec",
            &world.args("claude", &[worktree.to_str().unwrap(), "executor"]),
        ),
    );
    cmd.env("CLAUDECODE", "1")
        .env("CLAUDE_CODE_ENTRYPOINT", "cli")
        .env("KEEP_ME", "yes")
        .env("OKSTRA_PASS_ENV", "FAKE_*,KEEP_ME,CLAUDECODE")
        .stdout(File::create(world.path("stdout")).unwrap())
        .stderr(File::create(world.path("stderr")).unwrap());
    let run = world.run_with(cmd.spawn().unwrap(), limit());
    assert_eq!(run.code(), 0);
    let env = String::from_utf8(world.recorded("env")).unwrap();
    assert!(!env.contains("CLAUDECODE="));
    assert!(!env.contains("CLAUDE_CODE_ENTRYPOINT="));
    assert!(env.lines().any(|line| line == "KEEP_ME=yes"));
    assert!(env.lines().any(|line| line == "DISABLE_AUTOUPDATER=1"));
    assert_eq!(
        String::from_utf8(world.recorded("cwd")).unwrap().trim(),
        worktree.to_str().unwrap()
    );
    assert!(world.recorded_argv().ends_with(&["acceptEdits".to_owned()]));
    assert_eq!(world.status()["idle_timeout_seconds"], 1500);
}

/// What a CLI with no read-only mode holds while it reads untrusted code:
/// the neutral variables, its own provider's, and what the user passed —
/// never another provider's key or the user's other secrets.
#[test]
fn a_cli_sees_only_its_own_providers_secrets() {
    let secrets = [
        ("ANTHROPIC_API_KEY", "sk-ant"),
        ("OPENAI_API_KEY", "sk-openai"),
        ("GEMINI_API_KEY", "gem"),
        ("XAI_API_KEY", "xai"),
        ("MOONSHOT_API_KEY", "moon"),
        ("KIMI_CODE_HOME", "/kimi-home"),
        ("GITHUB_TOKEN", "ghp"),
        ("AWS_SECRET_ACCESS_KEY", "aws"),
        ("DATABASE_URL", "postgres://secret"),
        ("LC_ALL", "C.UTF-8"),
        ("https_proxy", "http://proxy:3128"),
    ];
    let seen = |provider: &str, pass: &str| -> Vec<String> {
        let world = World::new(provider, "record.sh");
        let mut cmd = world.command(
            &okstra_path(),
            &prepend("provider-exec", &world.args(provider, &[])),
        );
        cmd.envs(secrets)
            .env("OKSTRA_PASS_ENV", pass)
            .stdout(File::create(world.path("stdout")).unwrap())
            .stderr(File::create(world.path("stderr")).unwrap());
        let run = world.run_with(cmd.spawn().unwrap(), limit());
        assert_eq!(run.code(), 0, "{}", run.stderr);
        let env = String::from_utf8(world.recorded("env")).unwrap();
        let mut names: Vec<String> = env
            .lines()
            .filter_map(|line| line.split_once('=').map(|(name, _)| name.to_owned()))
            .filter(|name| secrets.iter().any(|(secret, _)| secret == name))
            .collect();
        names.sort();
        // The basics a CLI needs are always there.
        for line in ["PATH=", "HOME=", "FAKE_DIR="] {
            assert!(
                env.lines().any(|l| l.starts_with(line)),
                "{provider}: no {line}"
            );
        }
        names
    };
    assert_eq!(
        seen("kimi", "FAKE_*"),
        [
            "KIMI_CODE_HOME",
            "LC_ALL",
            "MOONSHOT_API_KEY",
            "https_proxy"
        ]
    );
    assert_eq!(
        seen("grok", "FAKE_*"),
        ["LC_ALL", "XAI_API_KEY", "https_proxy"]
    );
    assert_eq!(
        seen("codex", "FAKE_*"),
        ["LC_ALL", "OPENAI_API_KEY", "https_proxy"]
    );
    assert_eq!(
        seen("claude", "FAKE_*"),
        [
            "ANTHROPIC_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "LC_ALL",
            "https_proxy"
        ]
    );
    // `--pass-env` adds names and prefixes.
    assert_eq!(
        seen("kimi", "FAKE_*,GITHUB_TOKEN,DATABASE_*"),
        [
            "DATABASE_URL",
            "GITHUB_TOKEN",
            "KIMI_CODE_HOME",
            "LC_ALL",
            "MOONSHOT_API_KEY",
            "https_proxy"
        ]
    );
}

#[test]
fn a_bad_pass_env_list_is_refused_before_anything_starts() {
    let world = World::new("kimi", "record.sh");
    let mut cmd = world.command(
        &okstra_path(),
        &prepend("provider-exec", &world.args("kimi", &[])),
    );
    cmd.env("OKSTRA_PASS_ENV", "FAKE_*,NOT-A-NAME")
        .stdout(File::create(world.path("stdout")).unwrap())
        .stderr(File::create(world.path("stderr")).unwrap());
    let run = world.run_with(cmd.spawn().unwrap(), limit());
    assert_eq!(run.code(), 64);
    assert_eq!(
        run.stderr,
        "okstra-provider-exec: error: invalid `OKSTRA_PASS_ENV`: `NOT-A-NAME` is not an environment variable name: expected one like `AWS_PROFILE`, or a prefix ending in `*` like `AWS_*`\n"
    );
    assert!(!world.sidecar().exists());
}

#[test]
fn a_symlinked_prompt_gets_its_sidecar_beside_the_link() {
    let world = World::new("codex", "record.sh");
    fs::create_dir(world.path("elsewhere")).unwrap();
    fs::write(world.path("elsewhere/real.md"), b"real prompt\n").unwrap();
    fs::remove_file(world.prompt()).unwrap();
    symlink(world.path("elsewhere/real.md"), world.prompt()).unwrap();
    let run = world.run(&world.args("codex", &[]));
    assert_eq!(run.code(), 0);
    assert_eq!(world.recorded("stdin"), b"real prompt\n");
    assert!(world.sidecar().is_file());
    assert!(world.log().is_file());
    assert_eq!(world.listing("elsewhere"), ["real.md"]);
}

#[test]
fn runs_through_a_symlink_named_after_the_provider() {
    // A link to okstra (what `okstra install` makes) or to the wrapper's own
    // binary.
    for target in [okstra_path(), wrapper_path()] {
        runs_through_a_link_to(&target);
    }
}

fn runs_through_a_link_to(target: &Path) {
    let world = World::new("grok", "record.sh");
    let wrapper = world.path("bin/okstra-grok-exec");
    symlink(target, &wrapper).unwrap();
    let args: Vec<OsString> = world.args("grok", &[]).split_off(1);
    let run = world.run_with(world.spawn_program(&wrapper, &args), limit());
    assert_eq!(run.code(), 0, "{}: {}", target.display(), run.stderr);
    assert_eq!(
        world.recorded_argv(),
        [
            "--prompt-file",
            world.prompt().to_str().unwrap(),
            "-m",
            "test-model",
            "--output-format",
            "streaming-json",
            "--cwd",
            world.project().to_str().unwrap(),
            "--no-auto-update",
            "--sandbox",
            "read-only",
        ]
    );
    assert_eq!(world.status()["wrapper"], "okstra-grok-exec");
}

#[test]
fn a_non_utf8_model_reaches_the_cli_unchanged() {
    let world = World::new("codex", "record.sh");
    let mut args = world.args("codex", &[]);
    args[2] = OsStr::from_bytes(b"model-\xff").to_owned();
    let run = world.run(&args);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(
        world.recorded("argv")[..].split(|b| *b == b'\n').nth(3),
        Some(&b"model-\xff"[..])
    );
}

#[test]
fn okstra_install_links_every_wrapper() {
    let world = World::empty();
    let target = world.path("links");
    let output = crate::support::okstra()
        .args(["install", "--bin-dir"])
        .arg(&target)
        .env("HOME", world.path("home"))
        .env_remove("XDG_STATE_HOME")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for provider in ["claude", "codex", "antigravity", "grok", "kimi"] {
        let link = target.join(format!("okstra-{provider}-exec"));
        // The wrapper's own binary beside okstra (its low memory for scripts
        // too).
        assert_eq!(fs::read_link(&link).unwrap(), wrapper_path());
        // The link fixes the provider: the usage line names it.
        let run = Command::new(&link).output().unwrap();
        assert_eq!(run.status.code(), Some(64));
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(
            stderr.contains(&format!("okstra-{provider}-exec <project-root>")),
            "{stderr}"
        );
    }
}
