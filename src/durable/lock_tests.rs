//! The lock against real holders: `flock(1)` processes on real files.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::*;

/// A `flock(1)` holding `path` (and the `sleep` it runs, which shares the
/// lock) in a group of its own; the group is killed when dropped.
struct Holder(Child);

impl Holder {
    fn start(path: &Path, shared: bool) -> Holder {
        let mut command = Command::new("flock");
        if shared {
            command.arg("--shared");
        }
        let child = command
            .arg(path)
            .args(["sleep", "60"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("flock(1) is installed");
        let holder = Holder(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        // Free to an exclusive try until flock(1) holds it (either way).
        while Lock::on(path, "the test lock")
            .try_acquire()
            .is_ok_and(|free| free.is_some())
        {
            assert!(Instant::now() < deadline, "flock(1) never took the lock");
            std::thread::sleep(Duration::from_millis(10));
        }
        holder
    }

    fn pid(&self) -> i32 {
        i32::try_from(self.0.id()).unwrap()
    }

    /// SIGKILL the whole group (nothing it holds is released by itself)
    /// and reap the leader.
    fn kill(&mut self) {
        let _ = killpg(Pid::from_raw(self.pid()), Signal::SIGKILL);
        let _ = self.0.wait();
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        self.kill();
    }
}

#[test]
fn a_second_holder_waits_until_the_first_lets_go() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.lock");
    let mut holder = Holder::start(&path, false);
    assert!(Lock::on(&path, "it").try_acquire().unwrap().is_none());
    let started = Instant::now();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            std::thread::sleep(Duration::from_millis(1500));
            holder.kill();
        });
        let lock = Lock::on(&path, "the test lock")
            .wait(Duration::from_secs(30))
            .acquire()
            .unwrap();
        assert_eq!(lock.path(), path);
    });
    assert!(started.elapsed() >= Duration::from_millis(1400));
}

#[test]
fn the_bound_gives_up_naming_the_file_and_its_holder() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.lock");
    let holder = Holder::start(&path, false);
    let started = Instant::now();
    let err = Lock::on(&path, "the team state of `r`")
        .wait(Duration::from_millis(1300))
        .hint("stop it first")
        .acquire()
        .unwrap_err();
    assert!(started.elapsed() >= Duration::from_millis(1300));
    assert!(err.is_busy());
    let text = err.to_string();
    assert!(
        text.starts_with("gave up waiting for the team state of `r` after 1s: "),
        "{text}"
    );
    assert!(text.contains(&format!("`{}`", path.display())), "{text}");
    if Path::new("/proc/locks").exists() {
        assert!(
            text.contains(&format!("locked by pid {} (`flock ", holder.pid())),
            "{text}"
        );
    }
    assert!(text.ends_with("; stop it first"), "{text}");
    assert!(!text.contains('\n'), "{text}");
}

#[test]
fn the_callers_holder_comes_before_the_kernels() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.lease");
    let _holder = Holder::start(&path, false);
    let err = Lock::on(&path, "the lease")
        .holder(|| Some("pid 7 (`okstra run`)".to_owned()))
        .acquire()
        .unwrap_err();
    // Tried once, no wait: the message names none.
    assert_eq!(
        err.to_string(),
        format!(
            "the lease: `{}` is locked by pid 7 (`okstra run`)",
            path.display()
        )
    );
}

#[test]
fn a_killed_holder_leaves_no_stale_lock() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.lock");
    let mut holder = Holder::start(&path, false);
    holder.kill();
    // The file stays; the lock does not.
    assert!(path.exists());
    let started = Instant::now();
    let lock = Lock::on(&path, "the test lock")
        .wait(Duration::from_secs(30))
        .acquire()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    drop(lock);
}

#[test]
fn readers_share_and_keep_a_writer_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.lock");
    let _reader = Holder::start(&path, true);
    let ours = Lock::on(&path, "it")
        .existing()
        .shared()
        .try_acquire()
        .unwrap();
    assert!(ours.is_some());
    assert!(Lock::on(&path, "it").try_acquire().unwrap().is_none());
}

#[test]
fn a_missing_existing_lock_says_so_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("none.lock");
    let err = Lock::on(&path, "it").existing().acquire().unwrap_err();
    assert!(err.is_missing(), "{err}");
    assert!(!path.exists());
}

#[test]
fn a_folder_is_locked_as_itself_and_a_link_is_not_a_lock_file() {
    let dir = tempfile::tempdir().unwrap();
    let folder = Lock::on(dir.path(), "it").folder().acquire().unwrap();
    assert!(
        Lock::on(dir.path(), "it")
            .folder()
            .try_acquire()
            .unwrap()
            .is_none()
    );
    drop(folder);
    let target = dir.path().join("target");
    std::os::unix::fs::symlink(&target, dir.path().join("link.lock")).unwrap();
    assert!(
        Lock::on(&dir.path().join("link.lock"), "it")
            .acquire()
            .is_err()
    );
    assert!(!target.exists());
    // A folder where a lock file belongs is refused, never taken.
    let err = Lock::on(dir.path(), "it").acquire().unwrap_err();
    assert!(!err.is_busy() && !err.is_missing(), "{err}");
    let file = dir.path().join("file");
    std::fs::write(&file, b"").unwrap();
    let err = Lock::on(&file, "it").folder().acquire().unwrap_err();
    assert!(err.to_string().contains("is not a folder"), "{err}");
}

#[test]
fn proc_locks_lines_name_the_holder_not_a_waiter() {
    let locks = "\
1: POSIX  ADVISORY  WRITE 10 fe:00:99 0 EOF
2: FLOCK  ADVISORY  WRITE 0 fe:00:99 0 EOF
2: -> FLOCK  ADVISORY  WRITE 11 fe:00:99 0 EOF
3: FLOCK  ADVISORY  READ 12 fe:00:99 0 EOF
4: FLOCK  ADVISORY  WRITE 13 08:02:131 0 EOF
";
    assert_eq!(holder_in(locks, 0xfe, 0, 99), Some(12));
    assert_eq!(holder_in(locks, 8, 2, 131), Some(13));
    assert_eq!(holder_in(locks, 8, 2, 132), None);
    assert_eq!(holder_in("garbage\n\n1: FLOCK", 8, 2, 131), None);
}
