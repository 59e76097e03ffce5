//! provider-exec: refusals — usage and help, the preflight exit codes 64–69
//! and 127, and files that end the sidecar without starting the CLI.

use pretty_assertions::assert_eq;

use super::*;

use crate::support::limit;

/// Runs a refused invocation: the code, one `error:` line naming `needle`,
/// and nothing started or written.
fn refused(world: &World, args: &[OsString], code: i32, needle: &str) {
    let before = world.listing("run");
    let run = world.run(args);
    assert_eq!(run.code(), code, "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.starts_with("okstra-provider-exec: error: "),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(needle),
        "`{needle}` not in {}",
        run.stderr
    );
    assert_eq!(run.stdout, b"");
    assert_eq!(world.listing("run"), before, "something was written");
    assert!(world.listing("fake").is_empty(), "the CLI was started");
}

#[test]
fn usage_errors_exit_64() {
    let world = World::new("claude", "record.sh");
    let args = world.args("claude", &[]);
    refused(&world, &args[..3], 64, "usage:");
    refused(
        &world,
        &world.args("claude", &["", "", "5", "extra"]),
        64,
        "usage:",
    );
    refused(&world, &world.args("gemini", &[]), 64, "`gemini`");
    // A value echoed back stays one inert line: no terminal escape, no forged line.
    refused(
        &world,
        &world.args("gem\u{1b}[2Jini\nokstra-provider-exec: error: forged", &[]),
        64,
        "`gem\\e[2Jini\\nokstra-provider-exec: error: forged`",
    );
    refused(&world, &[], 64, "got 0");
}

#[test]
fn help_prints_the_contract_and_exits_0() {
    let world = World::empty();
    let link = world.path("okstra-kimi-exec");
    symlink(okstra_path(), &link).unwrap();
    fs::create_dir(world.path("own")).unwrap();
    let own_link = world.path("own/okstra-kimi-exec");
    symlink(wrapper_path(), &own_link).unwrap();
    let wrapper = "okstra provider-exec <provider>";
    let fixed = "okstra-kimi-exec <project-root>";
    let runs: [(PathBuf, &[&str], &str); 9] = [
        (okstra_path(), &["provider-exec", "--help"], wrapper),
        (okstra_path(), &["provider-exec", "-h"], wrapper),
        (
            okstra_path(),
            &["provider-exec", "codex", "--help"],
            wrapper,
        ),
        (wrapper_path(), &["--help"], wrapper),
        (wrapper_path(), &["codex", "-h"], wrapper),
        (link.clone(), &["--help"], fixed),
        (link.clone(), &["-h"], fixed),
        (own_link.clone(), &["--help"], fixed),
        (own_link.clone(), &["-h"], fixed),
    ];
    for (program, args, usage) in runs {
        let run = Command::new(program).args(args).output().unwrap();
        let stdout = String::from_utf8_lossy(&run.stdout);
        assert_eq!(run.status.code(), Some(0), "{stdout}");
        assert!(stdout.contains(usage), "`{usage}` not in {stdout}");
        assert!(stdout.contains("124 idle timeout"), "{stdout}");
        assert_eq!(run.stderr, b"");
    }
}

#[test]
fn a_bad_project_root_exits_65() {
    let world = World::new("claude", "record.sh");
    let mut args = world.args("claude", &[]);
    args[1] = world.path("missing").into();
    refused(&world, &args, 65, "missing");
    args[1] = world.prompt().into();
    refused(&world, &args, 65, "task.md");
    args[1] = "".into();
    refused(&world, &args, 65, "project root");
}

#[test]
fn an_empty_model_exits_66() {
    let world = World::new("claude", "record.sh");
    let mut args = world.args("claude", &[]);
    args[2] = "".into();
    refused(&world, &args, 66, "model");
}

#[test]
fn a_bad_prompt_exits_67() {
    let world = World::new("claude", "record.sh");
    let mut args = world.args("claude", &[]);
    args[3] = world.path("run/missing.md").into();
    refused(&world, &args, 67, "missing.md");
    args[3] = world.path("run").into();
    refused(&world, &args, 67, "not a regular file");
    // As root a mode-000 file is still readable, so "unreadable" is a
    // dangling symlink here.
    symlink(world.path("nowhere.md"), world.path("run/dangling.md")).unwrap();
    args[3] = world.path("run/dangling.md").into();
    refused(&world, &args, 67, "dangling.md");
    args[3] = "".into();
    refused(&world, &args, 67, "prompt");
}

#[test]
fn a_worktree_that_is_not_a_folder_exits_68() {
    let world = World::new("claude", "record.sh");
    let file = world.path("run/task.md");
    refused(
        &world,
        &world.args("claude", &[file.to_str().unwrap()]),
        68,
        "task.md",
    );
}

#[test]
fn odd_idle_timeouts_exit_69() {
    let world = World::new("claude", "record.sh");
    for bad in [
        "-1",
        "1.5",
        " 5",
        "+5",
        "5s",
        "0x10",
        "99999999999999999999999",
    ] {
        refused(
            &world,
            &world.args("claude", &["", "", bad]),
            69,
            &format!("`{bad}`"),
        );
    }
}

#[test]
fn a_cli_missing_from_path_exits_127() {
    let world = World::empty();
    refused(&world, &world.args("codex", &[]), 127, "`codex`");
    refused(&world, &world.args("antigravity", &[]), 127, "`agy`");
}

#[test]
fn empty_optional_arguments_mean_their_defaults() {
    let world = World::new("claude", "record.sh");
    let run = world.run(&world.args("claude", &["", "", ""]));
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let status = world.status();
    assert_eq!(status["role"], "worker");
    assert_eq!(status["idle_timeout_seconds"], 600);
    assert_eq!(str_field(&status, "cwd"), world.project().to_str().unwrap());
}

// ------------------------------------------------ failures after `started`

#[test]
fn a_log_path_that_is_a_folder_ends_the_sidecar_without_starting_the_cli() {
    let world = World::new("claude", "record.sh");
    fs::create_dir(world.log()).unwrap();
    let run = world.run(&world.args("claude", &[]));
    assert_eq!(run.code(), 73);
    assert!(run.stderr.contains("cannot create log"), "{}", run.stderr);
    let status = world.status();
    assert_eq!(status["stage"], "exited");
    assert_eq!(status["reason"], "log-unavailable");
    assert_eq!(status["exit_code"], 73);
    assert!(world.listing("fake").is_empty(), "the CLI was started");
}

#[test]
fn a_cli_that_cannot_be_executed_ends_as_spawn_failed() {
    let world = World::empty();
    let fake = world.path("bin/codex");
    fs::write(&fake, "#!/nonexistent/interpreter\n").unwrap();
    fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).unwrap();
    let run = world.run(&world.args("codex", &[]));
    assert_eq!(run.code(), 127, "{}", run.stderr);
    let status = world.status();
    assert_eq!(status["reason"], "spawn-failed");
    assert!(str_field(&status, "error").contains("cannot start"));
}

#[test]
fn a_status_folder_removed_mid_run_keeps_the_childs_exit_code() {
    let world = World::new("claude", "waits-for-go.sh");
    let child = world.spawn(&world.args("claude", &[]));
    world.wait_running();
    fs::remove_dir_all(world.path("run")).unwrap();
    fs::write(world.fake().join("go"), b"").unwrap();
    let run = world.run_with(child, limit());
    assert_eq!(run.code(), 7);
    assert_eq!(run.stdout, b"started\nfinishing\n");
    assert!(
        run.stderr.contains("cannot write final status"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_unwritable_sidecar_refuses_to_start_the_cli() {
    // As root a read-only folder is still writable; a folder squatting on
    // the sidecar's name makes the atomic rename fail instead.
    let world = World::new("codex", "record.sh");
    fs::create_dir(world.sidecar()).unwrap();
    let run = world.run(&world.args("codex", &[]));
    assert_eq!(run.code(), 73);
    assert!(run.stderr.contains("cannot write status"), "{}", run.stderr);
    assert!(world.listing("fake").is_empty(), "the CLI was started");
    assert!(!world.log().exists());
}
