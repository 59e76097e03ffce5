//! Integration tests: okstra's one lock (`durable::Lock`) against real
//! holders — a `flock(1)` process holding the `.okstra/` folder or a run's
//! lease. A second okstra says whom it waits for, goes on once a killed
//! holder's lock is gone, and gives up at its bound with one error line and
//! exit 2.

use std::fs;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::fcntl::{Flock, FlockArg};

use crate::support::{Group, Project, limit, okstra_path, wait_for};

/// `flock(1)` holding `path` (a file or a folder) in a group of its own,
/// once it holds it.
fn hold(path: &Path) -> Group {
    let holder = Group::spawn(&["flock", path.to_str().unwrap(), "sleep", "120"]);
    wait_for(limit(), "flock(1) to take the lock", || {
        // flock(1) may not have created the file yet.
        let file = fs::File::open(path).ok()?;
        Flock::lock(file, FlockArg::LockExclusiveNonblock)
            .is_err()
            .then_some(())
    });
    holder
}

#[test]
fn a_second_okstra_says_whom_it_waits_for_and_goes_on_once_the_holder_is_killed() {
    let world = Project::new();
    let okstra_dir = world.okstra_dir();
    fs::create_dir_all(&okstra_dir).unwrap();
    let holder = hold(&okstra_dir);
    let holder_pid = holder.pid();
    let stderr_path = world.path("cleanup.stderr");
    let mut cmd = world.command(okstra_path());
    cmd.args(["cleanup", "--json"])
        .stdout(Stdio::null())
        .stderr(fs::File::create(&stderr_path).unwrap());
    let mut cleanup = Group::start(cmd);
    let said = wait_for(limit(), "the waiting line", || {
        let text = fs::read_to_string(&stderr_path).unwrap();
        text.contains("waiting for").then_some(text)
    });
    assert!(
        said.contains(&format!(
            "waiting for pid {holder_pid} (`flock {} sleep 120`) to release the render lock on `{}` (giving up after 2m)",
            okstra_dir.display(),
            okstra_dir.display()
        )),
        "{said}"
    );
    assert!(cleanup.is_running(), "it gave up at once: {said}");
    // The holder dies without letting go: its lock goes with it.
    let killed = Instant::now();
    drop(holder);
    let status = cleanup.wait(limit());
    assert_eq!(
        status.code(),
        Some(0),
        "{}",
        fs::read_to_string(&stderr_path).unwrap()
    );
    assert!(killed.elapsed() < Duration::from_secs(20));
    let stderr = fs::read_to_string(&stderr_path).unwrap();
    assert_eq!(stderr.matches("waiting for").count(), 1, "{stderr}");
}

#[test]
fn a_second_driver_gives_up_at_its_bound_with_one_error_line_and_exit_2() {
    let world = Project::new();
    let run = world.render(&[
        "--task-type",
        "project-analysis",
        "--workers",
        "claude,codex,report-writer",
        "--lead-runtime",
        "external",
    ]);
    let lease = run.join("state/run.lease");
    let holder = hold(&lease);
    let started = Instant::now();
    let output = world
        .okstra()
        .args(["dispatch", run.to_str().unwrap()])
        .output()
        .unwrap();
    let waited = started.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    // `okstra dispatch` waits five seconds for the lease (`LEASE_WAIT`).
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(waited >= Duration::from_secs(5), "{waited:?}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    let flock = format!(
        "pid {} (`flock {} sleep 120`)",
        holder.pid(),
        lease.display()
    );
    assert_eq!(
        lines[0],
        format!(
            "okstra: waiting for {flock} to release the run `{}` (giving up after 5s)",
            run.display()
        ),
    );
    assert_eq!(
        lines[1],
        format!(
            "error: gave up waiting for the run `{}` after 5s: `{}` is locked by {flock}; another okstra drives it: wait for it, or stop it with `okstra cancel {}`",
            run.display(),
            lease.display(),
            run.display()
        ),
    );
    assert!(output.stdout.is_empty());
}
