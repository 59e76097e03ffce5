//! Integration tests for `okstra provider-exec`: the real binary against fake
//! provider CLIs (`tests/fixtures/providers/*.sh`) put first on `PATH` under
//! each provider's binary name. Every test bounds its own wall time and waits
//! on the status sidecar or the process, never on fixed sleeps.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::support::{Project, okstra_path, repo_root, wait_for};

/// Generous bound for a run that should finish promptly on a loaded machine.
const QUICK: Duration = Duration::from_secs(30);

static STATUS_SCHEMA: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    let text = fs::read_to_string(repo_root().join("schemas/status.schema.json")).unwrap();
    jsonschema::validator_for(&serde_json::from_str(&text).unwrap()).unwrap()
});

/// A project (fake CLIs in its `bin/`, first on `PATH`; `FAKE_DIR` where
/// they record what they saw) with a prompt at `run/task.md` beside it.
struct World {
    project: Project,
}

/// A finished wrapper run.
struct Run {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: String,
}

impl Run {
    fn code(&self) -> i32 {
        self.status
            .code()
            .expect("the wrapper exits, it is not killed")
    }
}

impl World {
    /// `binary` on `PATH` runs `tests/fixtures/providers/<script>`.
    fn new(binary: &str, script: &str) -> Self {
        let world = Self::empty();
        world.install(binary, script);
        world
    }

    fn empty() -> Self {
        let project = Project::new();
        fs::create_dir(project.path("run")).unwrap();
        fs::write(project.path("run/task.md"), "do the thing\n").unwrap();
        Self { project }
    }

    fn install(&self, binary: &str, script: &str) {
        self.project
            .fake_cli(binary, &format!("providers/{script}"));
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.project.path(rel)
    }
    fn project(&self) -> PathBuf {
        self.project.root().to_path_buf()
    }
    fn fake(&self) -> PathBuf {
        self.path("fake")
    }
    fn prompt(&self) -> PathBuf {
        self.path("run/task.md")
    }
    fn sidecar(&self) -> PathBuf {
        self.path("run/task.md.status.json")
    }
    fn log(&self) -> PathBuf {
        self.path("run/task.log")
    }

    /// `okstra provider-exec <provider> <project> <model> <prompt> [extra…]`.
    fn args(&self, provider: &str, extra: &[&str]) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![
            provider.into(),
            self.project().into(),
            "test-model".into(),
            self.prompt().into(),
        ];
        args.extend(extra.iter().map(OsString::from));
        args
    }

    fn command(&self, program: &Path, args: &[OsString]) -> Command {
        let mut cmd = self.project.command(program);
        cmd.args(args);
        cmd
    }

    /// `okstra provider-exec …`, stdout and stderr to files.
    fn spawn(&self, args: &[OsString]) -> Child {
        let mut cmd = self.command(&okstra_path(), &prepend("provider-exec", args));
        cmd.stdout(File::create(self.path("stdout")).unwrap())
            .stderr(File::create(self.path("stderr")).unwrap());
        cmd.spawn().unwrap()
    }

    fn run(&self, args: &[OsString]) -> Run {
        self.run_with(self.spawn(args), QUICK)
    }

    /// Wait for `child` within `limit` (killing it and failing otherwise).
    fn run_with(&self, mut child: Child, limit: Duration) -> Run {
        let status = wait_child(&mut child, limit);
        Run {
            status,
            stdout: fs::read(self.path("stdout")).unwrap_or_default(),
            stderr: fs::read_to_string(self.path("stderr")).unwrap_or_default(),
        }
    }

    /// The sidecar, parsed and validated against `status.schema.json`.
    fn status(&self) -> Value {
        read_status(&self.sidecar())
    }

    /// Wait until the sidecar names the CLI's process group (it is running).
    fn wait_running(&self) -> Value {
        wait_for(QUICK, "the sidecar to record the pgid", || {
            let text = fs::read(self.sidecar()).ok()?;
            let value: Value = serde_json::from_slice(&text).ok()?;
            value.get("pgid")?;
            Some(value)
        })
    }

    fn grandchild(&self) -> Pid {
        let text = wait_for(QUICK, "the grandchild pid file", || {
            fs::read_to_string(self.fake().join("grandchild.pid"))
                .ok()
                .filter(|text| text.ends_with('\n'))
        });
        Pid::from_raw(text.trim().parse().unwrap())
    }

    fn recorded(&self, what: &str) -> Vec<u8> {
        fs::read(self.fake().join(what)).unwrap()
    }

    fn recorded_argv(&self) -> Vec<String> {
        String::from_utf8(self.recorded("argv"))
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn listing(&self, rel: &str) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(self.path(rel))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

fn prepend(first: &str, rest: &[OsString]) -> Vec<OsString> {
    std::iter::once(OsString::from(first))
        .chain(rest.iter().cloned())
        .collect()
}

fn wait_child(child: &mut Child, limit: Duration) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the wrapper did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn read_status(path: &Path) -> Value {
    let value: Value = serde_json::from_slice(&fs::read(path).unwrap()).unwrap();
    let errors: Vec<String> = STATUS_SCHEMA
        .iter_errors(&value)
        .map(|err| format!("{}: {err}", err.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "sidecar breaks the schema: {errors:#?}\n{value:#}"
    );
    value
}

/// Gone, or a zombie nobody reaps (our container's pid 1 may not reap).
fn is_gone(pid: Pid) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

fn assert_gone(pid: Pid) {
    wait_for(QUICK, "the grandchild to be gone", || {
        is_gone(pid).then_some(())
    });
}

/// Best-effort cleanup so a failing test leaves nothing running.
struct Reap(Pid);
impl Drop for Reap {
    fn drop(&mut self) {
        let _ = kill(self.0, Signal::SIGKILL);
    }
}

/// Size of a file, and whether two files are identical, read in chunks (a
/// 200 MiB stream is never held in memory).
fn same_contents(left: &Path, right: &Path) -> (u64, bool) {
    let (mut left, mut right) = (File::open(left).unwrap(), File::open(right).unwrap());
    let (mut a, mut b) = (vec![0; 1 << 20], vec![0; 1 << 20]);
    let mut total = 0;
    loop {
        let n = read_full(&mut left, &mut a);
        let m = read_full(&mut right, &mut b);
        if n != m || a[..n] != b[..m] {
            return (total, false);
        }
        if n == 0 {
            return (total, true);
        }
        total += n as u64;
    }
}

fn read_full(file: &mut File, buf: &mut [u8]) -> usize {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]).unwrap() {
            0 => break,
            n => filled += n,
        }
    }
    filled
}

fn str_field<'a>(status: &'a Value, name: &str) -> &'a str {
    status[name]
        .as_str()
        .unwrap_or_else(|| panic!("no `{name}` in {status:#}"))
}

// ---------------------------------------------------------------- streaming

#[test]
fn streams_merged_output_to_stdout_and_the_log() {
    let world = World::new("claude", "ok.sh");
    let run = world.run(&world.args("claude", &[]));
    let expected = "{\"type\":\"init\"}\nprogress on stderr\n{\"type\":\"message\",\"text\":\"hi\"}\n{\"type\":\"result\",\"is_error\":false}\n";
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(String::from_utf8_lossy(&run.stdout), expected);
    assert_eq!(fs::read_to_string(world.log()).unwrap(), expected);
    assert_eq!(run.stderr, "");
    let status = world.status();
    assert_eq!(status["schemaVersion"], 1);
    assert_eq!(status["stage"], "exited");
    assert_eq!(status["exit_code"], 0);
    assert_eq!(status["reason"], "exited");
    assert_eq!(status["wrapper"], "okstra-claude-exec");
    assert_eq!(status["role"], "worker");
    assert_eq!(status["idle_timeout_seconds"], 600);
    assert_eq!(status["pgid"], status["child_pid"]);
    assert_eq!(
        str_field(&status, "log_path"),
        world.log().to_str().unwrap()
    );
    assert!(status.get("timeout").is_none());
    assert_eq!(status["output_bytes"], expected.len());
}

#[test]
fn non_zero_exit_passes_through() {
    let world = World::new("codex", "fail.sh");
    let run = world.run(&world.args("codex", &[]));
    assert_eq!(run.code(), 3);
    let status = world.status();
    assert_eq!(status["exit_code"], 3);
    assert_eq!(status["reason"], "exited");
}

#[test]
fn child_killed_by_a_signal_reports_128_plus_n() {
    let world = World::new("kimi", "killed.sh");
    let run = world.run(&world.args("kimi", &[]));
    assert_eq!(run.code(), 137);
    let status = world.status();
    assert_eq!(status["exit_code"], 137);
    assert_eq!(status["child_signal"], "SIGKILL");
    assert_eq!(status["reason"], "exited");
    assert!(status.get("terminated_by").is_none());
}

#[test]
fn invalid_utf8_output_passes_through_byte_for_byte() {
    let world = World::new("grok", "binary.sh");
    let run = world.run(&world.args("grok", &[]));
    assert_eq!(run.code(), 0);
    let expected = b"start \xff\xfe \x00 \x80\x81 end\r\n".to_vec();
    assert_eq!(run.stdout, expected);
    assert_eq!(fs::read(world.log()).unwrap(), expected);
}

#[test]
fn two_hundred_mib_reach_stdout_and_the_log_identically() {
    const BYTES: u64 = 200 * 1024 * 1024;
    let world = World::new("codex", "stream.sh");
    let mut cmd = world.command(
        &okstra_path(),
        &prepend("provider-exec", &world.args("codex", &[])),
    );
    cmd.env("FAKE_BYTES", BYTES.to_string())
        .stdout(File::create(world.path("stdout")).unwrap())
        .stderr(File::create(world.path("stderr")).unwrap());
    let run = world.run_with(cmd.spawn().unwrap(), Duration::from_mins(2));
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(
        same_contents(&world.path("stdout"), &world.log()),
        (BYTES, true)
    );
    assert_eq!(world.status()["output_bytes"], BYTES);
}

#[test]
fn a_reader_closing_our_stdout_stops_neither_the_child_nor_the_log() {
    let world = World::new("claude", "chatty-long.sh");
    let mut cmd = world.command(
        &okstra_path(),
        &prepend("provider-exec", &world.args("claude", &[])),
    );
    cmd.stdout(Stdio::piped())
        .stderr(File::create(world.path("stderr")).unwrap());
    let mut child = cmd.spawn().unwrap();
    let mut head = [0_u8; 10];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut head)
        .unwrap();
    drop(child.stdout.take());
    let status = wait_child(&mut child, QUICK);
    assert_eq!(status.code(), Some(0));
    assert!(
        world.fake().join("finished").exists(),
        "the child ran to its end"
    );
    assert_eq!(fs::metadata(world.log()).unwrap().len(), 2_097_152);
    let sidecar = world.status();
    assert_eq!(sidecar["stdout_closed"], true);
    assert_eq!(sidecar["exit_code"], 0);
}

// ------------------------------------------------------------ idle watchdog

#[test]
fn a_silent_child_is_stopped_by_the_idle_watchdog() {
    let world = World::new("claude", "silent.sh");
    let run = world.run(&world.args("claude", &["", "", "1"]));
    assert_eq!(run.code(), 124);
    let status = world.status();
    assert_eq!(status["exit_code"], 124);
    assert_eq!(status["timeout"], true);
    assert_eq!(status["terminated_by"], "idle-watchdog");
    assert_eq!(status["reason"], "idle-timeout");
    assert_eq!(status["killed"], false);
    assert!(status["idle_seconds"].as_u64().unwrap() >= 1);
    let idle_at = status["idle_at_ts"].as_u64().unwrap();
    assert!(idle_at >= status["started_ts"].as_u64().unwrap());
    assert!(idle_at <= status["ended_ts"].as_u64().unwrap());
    assert_gone(Pid::from_raw(
        i32::try_from(status["pgid"].as_i64().unwrap()).unwrap(),
    ));
}

#[test]
fn output_then_silence_is_an_idle_timeout() {
    let world = World::new("codex", "then-silent.sh");
    let run = world.run(&world.args("codex", &["", "", "1"]));
    assert_eq!(run.code(), 124);
    assert_eq!(run.stdout, b"{\"type\":\"init\"}\n");
    assert_eq!(world.status()["terminated_by"], "idle-watchdog");
}

#[test]
fn a_slow_child_that_keeps_printing_outlives_the_timeout() {
    let world = World::new("kimi", "slow.sh");
    let run = world.run(&world.args("kimi", &["", "", "2"]));
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert!(String::from_utf8_lossy(&run.stdout).ends_with("tick 7\ndone\n"));
    assert!(world.status().get("timeout").is_none());
}

#[test]
fn idle_timeout_zero_disables_the_watchdog() {
    let timed = World::new("grok", "quiet-then-done.sh");
    assert_eq!(timed.run(&timed.args("grok", &["", "", "1"])).code(), 124);
    let world = World::new("grok", "quiet-then-done.sh");
    let run = world.run(&world.args("grok", &["", "", "0"]));
    assert_eq!(run.code(), 0);
    assert_eq!(run.stdout, b"done\n");
    assert_eq!(world.status()["idle_timeout_seconds"], 0);
}

#[test]
fn a_child_ignoring_sigterm_is_killed_after_the_grace_period() {
    let world = World::new("claude", "ignores-term.sh");
    let run = world.run(&world.args("claude", &["", "", "1"]));
    assert_eq!(run.code(), 124);
    let status = world.status();
    assert_eq!(status["killed"], true);
    assert_eq!(status["terminated_by"], "idle-watchdog");
}

// ------------------------------------------------- leftovers and the pipe

#[test]
fn a_grandchild_holding_stdout_does_not_keep_us_waiting() {
    let world = World::new("codex", "forks-grandchild.sh");
    let child = world.spawn(&world.args("codex", &[]));
    let grandchild = world.grandchild();
    let _reap = Reap(grandchild);
    let run = world.run_with(child, QUICK);
    assert_eq!(run.code(), 0);
    assert_eq!(run.stdout, b"started\n");
    assert_gone(grandchild);
    assert_eq!(world.status()["reason"], "exited");
}

#[test]
fn a_setsid_grandchild_holding_stdout_does_not_keep_us_waiting() {
    let world = World::new("kimi", "setsid-grandchild.sh");
    let child = world.spawn(&world.args("kimi", &[]));
    let grandchild = world.grandchild();
    let _reap = Reap(grandchild);
    let run = world.run_with(child, QUICK);
    assert_eq!(run.code(), 0);
    // It left our process group, but it re-parented to us and was stopped.
    assert_gone(grandchild);
    assert_eq!(world.status()["stage"], "exited");
}

#[test]
fn a_child_that_closes_stdout_is_still_waited_for() {
    let world = World::new("claude", "closes-stdout.sh");
    let run = world.run(&world.args("claude", &[]));
    assert_eq!(run.code(), 5);
    assert!(world.fake().join("finished").exists());
    assert_eq!(run.stdout, b"closing\n");
    assert_eq!(world.status()["exit_code"], 5);
}

// ------------------------------------------------------------------ signals

fn signal_test(signal: Signal, expected: i32) {
    let world = World::new("claude", "forks-grandchild-waits.sh");
    let child = world.spawn(&world.args("claude", &[]));
    let grandchild = world.grandchild();
    let _reap = Reap(grandchild);
    let running = world.wait_running();
    assert_eq!(running["stage"], "started");
    kill(Pid::from_raw(i32::try_from(child.id()).unwrap()), signal).unwrap();
    let run = world.run_with(child, QUICK);
    assert_eq!(run.code(), expected);
    let status = world.status();
    assert_eq!(status["stage"], "exited");
    assert_eq!(status["reason"], "signal");
    assert_eq!(status["terminated_by"], "signal");
    assert_eq!(status["signal"], signal.as_str());
    assert_eq!(status["exit_code"], expected);
    assert_gone(grandchild);
    assert_gone(Pid::from_raw(
        i32::try_from(status["pgid"].as_i64().unwrap()).unwrap(),
    ));
}

#[test]
fn sigterm_to_the_wrapper_stops_the_group() {
    signal_test(Signal::SIGTERM, 143);
}

#[test]
fn sigint_to_the_wrapper_stops_the_group() {
    signal_test(Signal::SIGINT, 130);
}

#[test]
fn sighup_to_the_wrapper_stops_the_group() {
    signal_test(Signal::SIGHUP, 129);
}

// ------------------------------------------------------------------ prompts

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
        .stdout(File::create(world.path("stdout")).unwrap())
        .stderr(File::create(world.path("stderr")).unwrap());
    let run = world.run_with(cmd.spawn().unwrap(), QUICK);
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
    let world = World::new("grok", "record.sh");
    let wrapper = world.path("bin/okstra-grok-exec");
    symlink(okstra_path(), &wrapper).unwrap();
    let args: Vec<OsString> = world.args("grok", &[]).split_off(1);
    let mut cmd = world.command(&wrapper, &args);
    cmd.stdout(File::create(world.path("stdout")).unwrap())
        .stderr(File::create(world.path("stderr")).unwrap());
    let run = world.run_with(cmd.spawn().unwrap(), QUICK);
    assert_eq!(run.code(), 0, "{}", run.stderr);
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
        ]
    );
    assert_eq!(world.status()["wrapper"], "okstra-grok-exec");
}

// ---------------------------------------------------------------- preflight

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
    refused(&world, &[], 64, "got 0");
}

#[test]
fn help_prints_the_contract_and_exits_0() {
    let world = World::empty();
    let link = world.path("okstra-kimi-exec");
    symlink(okstra_path(), &link).unwrap();
    let wrapper = "okstra provider-exec <provider>";
    let fixed = "okstra-kimi-exec <project-root>";
    let runs: [(PathBuf, &[&str], &str); 5] = [
        (okstra_path(), &["provider-exec", "--help"], wrapper),
        (okstra_path(), &["provider-exec", "-h"], wrapper),
        (
            okstra_path(),
            &["provider-exec", "codex", "--help"],
            wrapper,
        ),
        (link.clone(), &["--help"], fixed),
        (link.clone(), &["-h"], fixed),
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
    let run = world.run_with(child, QUICK);
    assert_eq!(run.code(), 7);
    assert_eq!(run.stdout, b"started\nfinishing\n");
    assert!(
        run.stderr.contains("cannot write final status"),
        "{}",
        run.stderr
    );
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
fn a_sigkilled_wrapper_takes_its_cli_down_and_leaves_the_pgid_to_reap() {
    let world = World::new("codex", "silent.sh");
    let mut child = world.spawn(&world.args("codex", &[]));
    let running = world.wait_running();
    let cli = Pid::from_raw(i32::try_from(running["child_pid"].as_i64().unwrap()).unwrap());
    let group = Pid::from_raw(i32::try_from(running["pgid"].as_i64().unwrap()).unwrap());
    child.kill().unwrap();
    child.wait().unwrap();
    // PR_SET_PDEATHSIG: the kernel kills the CLI when the wrapper dies.
    assert_gone(cli);
    // The CLI's own children are not covered; the recorded pgid lets a later
    // okstra reap them, which is what this does.
    let _ = nix::sys::signal::killpg(group, Signal::SIGKILL);
    assert_eq!(read_status(&world.sidecar())["stage"], "started");
}

#[test]
fn okstra_install_links_every_wrapper() {
    let world = World::empty();
    let target = world.path("links");
    let output = Command::new(okstra_path())
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
        assert_eq!(fs::read_link(&link).unwrap(), okstra_path());
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
