//! Integration tests for the provider-exec wrapper: the real binaries against
//! fake provider CLIs (`tests/fixtures/providers/*.sh`) put first on `PATH`
//! under each provider's binary name. [`World::run`] starts the wrapper's own
//! binary, `okstra-provider-exec` (the one `okstra dispatch` starts); the
//! tests that name [`okstra_path`] run `okstra provider-exec`, and `entries`
//! checks that the two behave the same. Every test bounds its own wall time
//! and waits on the status sidecar or the process, never on fixed sleeps.
//!
//! This file holds the `World` fixture and shared helpers; the tests live in
//! `output`, `stop`, `input`, `preflight` and `entries`.

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
use serde_json::Value;

use crate::support::{Project, limit, okstra_path, repo_root, wait_for};

#[path = "provider_exec_entries.rs"]
mod entries;
#[path = "provider_exec_input.rs"]
mod input;
#[path = "provider_exec_output.rs"]
mod output;
#[path = "provider_exec_preflight.rs"]
mod preflight;
#[path = "provider_exec_stop.rs"]
mod stop;

static STATUS_SCHEMA: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    let text = fs::read_to_string(repo_root().join("schemas/status.schema.json")).unwrap();
    jsonschema::validator_for(&serde_json::from_str(&text).unwrap()).unwrap()
});

/// The wrapper's own binary, built beside `okstra`.
fn wrapper_path() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_okstra-provider-exec"))
}

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

    /// `<provider> <project> <model> <prompt> [extra…]`: the arguments
    /// after `okstra-provider-exec` or `okstra provider-exec`.
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

    /// `okstra-provider-exec …`, stdout and stderr to files.
    fn spawn(&self, args: &[OsString]) -> Child {
        self.spawn_program(&wrapper_path(), args)
    }

    /// `program args…`, stdout and stderr to files.
    fn spawn_program(&self, program: &Path, args: &[OsString]) -> Child {
        let mut cmd = self.command(program, args);
        cmd.stdout(File::create(self.path("stdout")).unwrap())
            .stderr(File::create(self.path("stderr")).unwrap());
        cmd.spawn().unwrap()
    }

    fn run(&self, args: &[OsString]) -> Run {
        self.run_with(self.spawn(args), limit())
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
        wait_for(limit(), "the sidecar to record the pgid", || {
            let text = fs::read(self.sidecar()).ok()?;
            let value: Value = serde_json::from_slice(&text).ok()?;
            value.get("pgid")?;
            Some(value)
        })
    }

    fn grandchild(&self) -> Pid {
        let text = wait_for(limit(), "the grandchild pid file", || {
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

fn str_field<'a>(status: &'a Value, name: &str) -> &'a str {
    status[name]
        .as_str()
        .unwrap_or_else(|| panic!("no `{name}` in {status:#}"))
}
