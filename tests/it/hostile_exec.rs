//! Integration tests: hostile conditions for `okstra provider-exec` (issue
//! 13): leftovers that used to cost the full grace period, a killed
//! wrapper's group, a planted log symlink and a full disk. Each test bounds
//! its wall time.

use std::ffi::OsString;
use std::fs::{self, File};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use nix::unistd::Pid;
use serde_json::Value;

use crate::support::{Project, limit, okstra_path, wait_for};

/// A provider-exec sandbox: `bin/codex` is a fixture script.
struct Exec {
    project: Project,
}

impl Exec {
    fn new(script: &str) -> Exec {
        let project = Project::new();
        project.fake_cli("codex", &format!("providers/{script}"));
        fs::create_dir(project.path("run")).unwrap();
        fs::write(project.path("run/task.md"), "do the thing\n").unwrap();
        Exec { project }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.project.path(rel)
    }

    fn args(&self, extra: &[&str]) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![
            "provider-exec".into(),
            "codex".into(),
            self.project.root().into(),
            "m".into(),
            self.path("run/task.md").into(),
        ];
        args.extend(extra.iter().map(OsString::from));
        args
    }

    fn command(&self, program: &Path, args: &[OsString]) -> Command {
        let mut cmd = self.project.command(program);
        cmd.args(args)
            .stdout(Stdio::null())
            .stderr(File::create(self.path("stderr")).unwrap());
        cmd
    }

    fn spawn(&self, extra: &[&str]) -> Child {
        self.command(&okstra_path(), &self.args(extra))
            .spawn()
            .unwrap()
    }

    fn status(&self) -> Value {
        serde_json::from_slice(&fs::read(self.path("run/task.md.status.json")).unwrap()).unwrap()
    }

    fn grandchild(&self) -> Pid {
        let path = self.path("fake/grandchild.pid");
        Pid::from_raw(wait_for(limit(), "the grandchild's pid", || {
            fs::read_to_string(&path).ok()?.trim().parse().ok()
        }))
    }
}

/// Wait for `child` at most [`limit`]; how long it took.
fn finish(child: &mut Child) -> (i32, Duration) {
    let start = Instant::now();
    let status = wait_for(limit(), "the wrapper to exit", || child.try_wait().unwrap());
    (status.code().unwrap_or(-1), start.elapsed())
}

/// Gone, or a zombie nobody reaped yet.
fn is_gone(pid: Pid) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z'))
    })
}

#[test]
fn the_wrapper_ends_soon_after_its_cli_when_only_leftovers_remain() {
    let exec = Exec::new("forks-grandchild.sh");
    let start = Instant::now();
    let mut child = exec.spawn(&[]);
    let grandchild = exec.grandchild();
    let (code, _) = finish(&mut child);
    assert_eq!(code, 0);
    // Well under the 5 s grace it used to wait for its own zombie.
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    assert!(is_gone(grandchild));
    assert_eq!(exec.status()["reason"], "exited");
}

#[test]
fn a_cli_ignoring_sigterm_costs_one_grace_period_not_two() {
    let exec = Exec::new("ignores-term.sh");
    let start = Instant::now();
    let mut child = exec.spawn(&["", "", "1"]);
    let (code, _) = finish(&mut child);
    assert_eq!(code, 124);
    assert!(
        start.elapsed() < Duration::from_secs(9),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(exec.status()["killed"], true);
}

#[test]
fn a_sigkilled_wrapper_takes_the_whole_cli_group_down() {
    let exec = Exec::new("forks-grandchild-waits.sh");
    let mut child = exec.spawn(&[]);
    let grandchild = exec.grandchild();
    let _cleanup = KillOnDrop(grandchild);
    // The guardian is started once the CLI has run for a moment: it is the
    // wrapper's second child.
    let wrapper = child.id();
    wait_for(limit(), "the guardian to start", || {
        (children(wrapper).len() >= 2).then_some(())
    });
    child.kill().unwrap();
    child.wait().unwrap();
    wait_for(
        limit(),
        "the grandchild to be stopped by the guardian",
        || is_gone(grandchild).then_some(()),
    );
}

/// The children of process `pid` (all its threads'), from `/proc`.
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .filter_map(|pid| pid.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// Kill `pid` on drop (a failing test leaves no `sleep 300`).
struct KillOnDrop(Pid);
impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(self.0, Signal::SIGKILL);
    }
}

#[test]
fn a_log_symlink_is_replaced_not_followed() {
    let exec = Exec::new("ok.sh");
    let victim = exec.path("victim");
    fs::write(&victim, "keep me\n").unwrap();
    symlink(&victim, exec.path("run/task.log")).unwrap();
    let mut child = exec.spawn(&[]);
    let (code, _) = finish(&mut child);
    assert_eq!(
        code,
        0,
        "{}",
        fs::read_to_string(exec.path("stderr")).unwrap()
    );
    assert_eq!(fs::read_to_string(&victim).unwrap(), "keep me\n");
    let log = exec.path("run/task.log");
    assert!(log.symlink_metadata().unwrap().is_file());
    assert!(fs::read_to_string(log).unwrap().contains("\"result\""));
}

#[test]
fn a_full_disk_still_ends_with_a_terminal_sidecar() {
    // A 256 KiB filesystem of our own, in a user and mount namespace.
    let probe = Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "true"])
        .stderr(Stdio::null())
        .status();
    if !probe.is_ok_and(|status| status.success()) {
        eprintln!("skipped: no unprivileged mount namespaces here");
        return;
    }
    let exec = Exec::new("stream.sh");
    let run_dir = exec.path("run");
    // The tmpfs lives only in the namespace: a shell there mounts it over
    // the run folder, runs the wrapper, and copies the sidecar out.
    let status_copy = exec.path("fake/status.json");
    let script = format!(
        "mount -t tmpfs -o size=256k tmpfs '{run}' && printf 'do it\\n' > '{run}/task.md' && \"$0\" \"$@\"; code=$?; cp '{run}/task.md.status.json' '{copy}'; exit $code",
        run = run_dir.display(),
        copy = status_copy.display()
    );
    let mut args: Vec<OsString> = vec![
        "--user".into(),
        "--map-root-user".into(),
        "--mount".into(),
        "sh".into(),
        "-c".into(),
        script.into(),
        okstra_path().into(),
    ];
    args.extend(exec.args(&[]));
    let mut cmd = exec.command(Path::new("unshare"), &args);
    cmd.env("FAKE_BYTES", "1048576");
    let mut child = cmd.spawn().unwrap();
    let (code, _) = finish(&mut child);
    let stderr = fs::read_to_string(exec.path("stderr")).unwrap();
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("log write failed"), "{stderr}");
    let status: Value = serde_json::from_slice(&fs::read(&status_copy).unwrap()).unwrap();
    assert_eq!(status["stage"], "exited", "{stderr}");
    assert_eq!(status["exit_code"], 0);
}
