//! provider-exec: the CLI's output and exit — merged to stdout and the log
//! byte for byte (invalid UTF-8, 200 MiB, a closed reader), exit codes
//! passed through.

use pretty_assertions::assert_eq;

use super::*;

use crate::support::limit;

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
    let run = world.run_with(cmd.spawn().unwrap(), limit());
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(
        same_contents(&world.path("stdout"), &world.log()),
        (BYTES, true)
    );
    assert_eq!(world.status()["output_bytes"], BYTES);
}

/// `okstra dispatch` sends a wrapper's stdout to `/dev/null`: the copy to
/// it is skipped, and the log must still get every byte.
#[test]
fn with_stdout_on_dev_null_the_log_still_gets_every_byte() {
    const BYTES: u64 = 3 * 1024 * 1024 + 17;
    let world = World::new("codex", "stream.sh");
    let mut cmd = world.command(
        &okstra_path(),
        &prepend("provider-exec", &world.args("codex", &[])),
    );
    cmd.env("FAKE_BYTES", BYTES.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(File::create(world.path("stderr")).unwrap());
    let run = world.run_with(cmd.spawn().unwrap(), limit());
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let log = fs::read(world.log()).unwrap();
    assert_eq!(log.len() as u64, BYTES);
    assert!(log.starts_with(b"okstra provider-exec stream line"));
    let status = world.status();
    assert_eq!(status["output_bytes"], BYTES);
    assert_ne!(
        status["stdout_closed"], true,
        "a skipped copy is not a closed stdout"
    );
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
    let status = wait_child(&mut child, limit());
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
