//! provider-exec: stopping — the idle watchdog, the grace period,
//! grandchildren holding stdout, signals to the wrapper, and a `SIGKILL`ed
//! wrapper taking its CLI down.

use pretty_assertions::assert_eq;

use super::*;

use crate::support::limit;

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
    wait_for(limit(), "the grandchild to be gone", || {
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
    let run = world.run_with(child, limit());
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
    let run = world.run_with(child, limit());
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
    let run = world.run_with(child, limit());
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
