//! Shared helpers: the real binary, the one temp-project builder
//! ([`Project`]), process-group guards ([`Group`]) and bounded waits.
//!
//! A test that needs a project builds it here, so every test renders runs the
//! same way and runs the binary with the same clean environment:
//!
//! ```ignore
//! let project = Project::new().key("demo", "perf", "checkout");
//! project.fake_cli("claude", "workers/claude.sh");
//! let run = project.render(&["--task-type", "project-analysis"]);
//! project.okstra().args(["dispatch"]).arg(&run).assert().success();
//! ```

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::symlink;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use serde_json::Value;
use tempfile::TempDir;

/// The one wall-time bound of the suite when [`LIMIT_VARIABLE`] is unset.
/// Generous: the slowest test (a whole `okstra run`) takes seconds.
const DEFAULT_LIMIT: Duration = Duration::from_mins(2);

/// Whole seconds that replace [`DEFAULT_LIMIT`] on a slow machine.
pub const LIMIT_VARIABLE: &str = "OKSTRA_TEST_LIMIT_SECS";

/// The one wall-time bound on every command a test runs ([`okstra`],
/// [`Project::okstra`], [`bounded`]) and on every wait for something to
/// happen ([`wait_for`], [`Group::wait`]), so a hang fails the test instead
/// of CI. No test sets its own: a slow machine sets [`LIMIT_VARIABLE`].
pub fn limit() -> Duration {
    static LIMIT: OnceLock<Duration> = OnceLock::new();
    *LIMIT.get_or_init(|| match std::env::var(LIMIT_VARIABLE) {
        Err(_) => DEFAULT_LIMIT,
        Ok(text) => match text.trim().parse::<u64>() {
            Ok(seconds) if seconds > 0 => Duration::from_secs(seconds),
            _ => panic!("{LIMIT_VARIABLE}={text:?}: whole seconds above 0, please"),
        },
    })
}

/// `cmd` as an `assert_cmd` command bounded by [`limit`]: for an end-to-end
/// command that is not `okstra` itself (a shell, `script`).
pub fn bounded(cmd: Command) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::from_std(cmd);
    cmd.timeout(limit());
    cmd
}

/// okstra's own variables and host-session markers: never inherited.
const OKSTRA_ENV: [&str; 10] = [
    "OKSTRA_CONTAINMENT",
    "OKSTRA_CONFINE",
    "OKSTRA_PROVIDER_SLOTS",
    "OKSTRA_DEFAULT_LEAD_MODEL",
    "OKSTRA_DEFAULT_CLAUDE_MODEL",
    "OKSTRA_DEFAULT_CODEX_MODEL",
    "OKSTRA_DEFAULT_ANTIGRAVITY_MODEL",
    "OKSTRA_DEFAULT_REPORT_WRITER_MODEL",
    "OKSTRA_DEFAULT_EXECUTOR",
    "CLAUDECODE",
];

/// Provider credentials and config homes: a project's children never see
/// the developer's, so a probe can't log in or read a real config.
const PROVIDER_ENV: [&str; 18] = [
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CONFIG_DIR",
    "OPENAI_API_KEY",
    "CODEX_API_KEY",
    "CODEX_HOME",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "XAI_API_KEY",
    "GROK_API_KEY",
    "KIMI_MODEL_API_KEY",
    "KIMI_CODE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_STATE_HOME",
];

/// The `okstra` binary under test, bounded by [`limit`], with a clean
/// environment for okstra's own variables so the developer's settings never
/// leak into a test. For a command that needs no project (`--help`,
/// `validate` on a fixture).
pub fn okstra() -> assert_cmd::Command {
    let mut cmd = Command::new(okstra_path());
    for name in OKSTRA_ENV {
        cmd.env_remove(name);
    }
    bounded(cmd)
}

/// Path of the built binary (for tests that spawn it themselves).
pub fn okstra_path() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_okstra"))
}

/// The repository root (fixtures, examples).
pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A temporary project for one test, removed when dropped.
///
/// Layout of its temp folder: the project root `project/` (or another name
/// with [`Project::in_folder`]) holding `brief.md`; `bin/` with the fake
/// provider CLIs [`Project::fake_cli`] installs and `fake/` where they
/// record; `home/` and `cache/` for the child's `HOME` and `XDG_CACHE_HOME`.
/// Anything else a test writes with [`Project::path`] sits beside the root,
/// outside the project.
///
/// Every command runs in the root with the task key and brief as defaults
/// (see [`Project::render_command`]).
pub struct Project {
    _temp: TempDir,
    /// The temp folder, canonical.
    base: PathBuf,
    root: PathBuf,
    defaults: Vec<(&'static str, String)>,
    /// Variables every command gets ([`Project::credentials`]).
    env: Vec<(&'static str, &'static str)>,
}

/// One key variable per provider: what the preflight of `okstra run` and
/// `okstra ask` looks for. The fake CLIs never read them.
pub const FAKE_CREDENTIALS: [(&str, &str); 5] = [
    ("ANTHROPIC_API_KEY", "fake-anthropic"),
    ("OPENAI_API_KEY", "fake-openai"),
    ("GEMINI_API_KEY", "fake-gemini"),
    ("XAI_API_KEY", "fake-xai"),
    ("KIMI_MODEL_API_KEY", "fake-kimi"),
];

impl Project {
    /// A project in `project/` with `brief.md` = `# question\nwhy?\n` and
    /// the task key `demo/g/t`.
    pub fn new() -> Project {
        Project::in_folder("project")
    }

    /// The same in the folder `name` (a test that needs the root's name).
    pub fn in_folder(name: &str) -> Project {
        let temp = tempfile::tempdir().unwrap();
        // Canonical, so the paths okstra prints and the ones tests build agree.
        let base = temp.path().canonicalize().unwrap();
        let root = base.join(name);
        fs::create_dir_all(&root).unwrap();
        for sub in ["bin", "fake", "home", "cache"] {
            fs::create_dir_all(base.join(sub)).unwrap();
        }
        let project = Project {
            _temp: temp,
            base,
            root,
            defaults: Vec::new(),
            env: Vec::new(),
        };
        project.key("demo", "g", "t").brief("# question\nwhy?\n")
    }

    /// Use `project/group/task` as the task key.
    pub fn key(mut self, project: &str, group: &str, task: &str) -> Project {
        self.set_default("--project-id", project);
        self.set_default("--task-group", group);
        self.set_default("--task-id", task);
        self
    }

    /// Write `text` as `brief.md` in the root.
    pub fn brief(mut self, text: &str) -> Project {
        fs::write(self.root.join("brief.md"), text).unwrap();
        self.set_default("--task-brief", "brief.md");
        self
    }

    /// Give every command a key variable for each provider
    /// ([`FAKE_CREDENTIALS`]), so a run's preflight finds credentials.
    pub fn credentials(mut self) -> Project {
        self.env.extend(FAKE_CREDENTIALS);
        self
    }

    /// Contain this project's runs with copies, as on a machine without
    /// Landlock (`OKSTRA_CONTAINMENT=copies` on every command).
    pub fn copies(mut self) -> Project {
        self.env.push(("OKSTRA_CONTAINMENT", "copies"));
        self
    }

    /// The folders of the copies of run `run_id` of this project, okstra's
    /// own git folders aside (a project under the default task key
    /// `demo/g/t` unless [`Project::key`] changed it).
    pub fn copies_of(&self, run_id: &str) -> Vec<PathBuf> {
        let default = |flag: &str| {
            self.defaults
                .iter()
                .find(|(name, _)| *name == flag)
                .map(|(_, value)| value.clone())
                .expect("a project always has a task key")
        };
        let Ok(hashes) = fs::read_dir(self.workspaces()) else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for hash in hashes.flatten() {
            let run = hash
                .path()
                .join(default("--project-id"))
                .join(default("--task-group"))
                .join(default("--task-id"))
                .join(run_id);
            for entry in fs::read_dir(&run).into_iter().flatten().flatten() {
                if !entry.file_name().to_string_lossy().starts_with('.') {
                    found.push(entry.path());
                }
            }
        }
        found.sort();
        found
    }

    /// Pass `flag value` on every render whose extra flags don't name `flag`
    /// (say `--task-type project-analysis`).
    pub fn default_flag(mut self, flag: &'static str, value: &str) -> Project {
        self.set_default(flag, value);
        self
    }

    fn set_default(&mut self, flag: &'static str, value: &str) {
        self.defaults.retain(|(name, _)| *name != flag);
        self.defaults.push((flag, value.to_owned()));
    }

    /// The project root (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The project's `.okstra` folder.
    pub fn okstra_dir(&self) -> PathBuf {
        self.root.join(".okstra")
    }

    /// The folder of run `sequence` of `task_type` under the task key.
    pub fn run_dir(&self, task_type: &str, sequence: u32) -> PathBuf {
        let default = |flag: &str| {
            self.defaults
                .iter()
                .find(|(name, _)| *name == flag)
                .map(|(_, value)| value.as_str())
                .expect("a project always has a task key")
        };
        self.okstra_dir()
            .join("tasks")
            .join(default("--project-id"))
            .join(default("--task-group"))
            .join(default("--task-id"))
            .join(format!("{task_type}-{sequence:03}"))
    }

    /// Where isolated copies of this project's runs go (`HOME` is the temp
    /// folder's `home/`).
    pub fn workspaces(&self) -> PathBuf {
        self.path("home/.local/state/okstra/workspaces")
    }

    /// `rel` in the temp folder, beside the root: outside the project.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.base.join(rel)
    }

    /// Install `tests/fixtures/<fixture>` as `bin/<binary>` (a symlink).
    pub fn fake_cli(&self, binary: &str, fixture: &str) -> &Project {
        let target = repo_root().join("tests/fixtures").join(fixture);
        assert!(target.is_file(), "no fixture {fixture}");
        symlink(target, self.path("bin").join(binary)).unwrap();
        self
    }

    /// Copy `tests/fixtures/<fixture>` to `bin/<binary>`: a file of its own,
    /// so its mtime belongs to this test.
    pub fn copy_cli(&self, binary: &str, fixture: &str) -> &Project {
        fs::copy(
            repo_root().join("tests/fixtures").join(fixture),
            self.path("bin").join(binary),
        )
        .unwrap();
        self
    }

    /// `program` in the root with the project's clean environment: okstra's
    /// variables and provider credentials removed, `HOME` and
    /// `XDG_CACHE_HOME` in the temp folder (so isolated copies go to
    /// `home/.local/state/okstra/workspaces`), the fake credentials when the
    /// project has them, `PATH=bin:/usr/bin:/bin` (the
    /// fake CLIs and the system's tools, never the developer's real CLIs),
    /// `FAKE_DIR=fake`, `OKSTRA_PASS_ENV=FAKE_*` (a provider CLI sees only
    /// allowlisted variables; the fakes' `FAKE_*` switches are passed the way
    /// a user passes `--pass-env`), `OKSTRA_WRITABLE=fake` (a CLI confined by
    /// Landlock may write there), and stdin empty.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(&self.root)
            .env("HOME", self.path("home"))
            .env("XDG_CACHE_HOME", self.path("cache"))
            // Provider slots are per user: each project is its own user.
            .env("XDG_RUNTIME_DIR", self.path("runtime"))
            .env(
                "PATH",
                format!("{}:/usr/bin:/bin", self.path("bin").display()),
            )
            .env("FAKE_DIR", self.path("fake"))
            .env("OKSTRA_PASS_ENV", "FAKE_*")
            // The fakes record what they do in `fake/`: a folder the user
            // lets every confined CLI write, as a real tool's cache would be.
            .env("OKSTRA_WRITABLE", self.path("fake"))
            .stdin(Stdio::null());
        for name in OKSTRA_ENV.iter().chain(&PROVIDER_ENV) {
            cmd.env_remove(name);
        }
        for (name, value) in &self.env {
            cmd.env(name, value);
        }
        cmd
    }

    /// `okstra` as [`Project::command`] runs it, bounded by [`limit`].
    pub fn okstra(&self) -> assert_cmd::Command {
        bounded(self.command(okstra_path()))
    }

    /// `okstra <args>` in the project: its exit code, stdout and stderr.
    pub fn outcome(&self, args: &[&str]) -> (i32, String, String) {
        let output = self.okstra().args(args).output().unwrap();
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    /// `okstra <leading>`, each default (task key, `--task-brief brief.md`,
    /// any [`Project::default_flag`]) unless `extra` names its flag, then
    /// `extra`: `task_command(&["run"], …)` starts a headless run.
    pub fn task_command(&self, leading: &[&str], extra: &[&str]) -> assert_cmd::Command {
        let mut cmd = self.okstra();
        cmd.args(leading);
        for (flag, value) in &self.defaults {
            if !extra.contains(flag) {
                cmd.arg(flag).arg(value);
            }
        }
        cmd.args(extra);
        cmd
    }

    /// `okstra --render-only --yes` with the defaults and `extra`, as
    /// [`Project::task_command`].
    pub fn render_command(&self, extra: &[&str]) -> assert_cmd::Command {
        self.task_command(&["--render-only", "--yes"], extra)
    }

    /// Render with `--json` and `extra`, which must succeed; the run folder.
    pub fn render(&self, extra: &[&str]) -> PathBuf {
        let output = self
            .render_command(&[&["--json"], extra].concat())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "render {extra:?} failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let paths: Value = serde_json::from_slice(&output.stdout).unwrap();
        PathBuf::from(paths["runDir"].as_str().unwrap())
    }
}

/// A process leading its own group; the whole group is stopped on drop, so a
/// failing assertion never leaves a `sleep 300` behind: SIGTERM first (an
/// `okstra dispatch` then stops its wrappers, which live in groups of their
/// own and would outlive a SIGKILL), SIGKILL after a grace. The child is
/// public for tests that read its pipes or poll it themselves.
pub struct Group(pub Child);

impl Group {
    /// `argv` in a new group, stdio null.
    pub fn spawn(argv: &[&str]) -> Group {
        let mut cmd = Command::new(argv[0]);
        cmd.args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        Group::start(cmd)
    }

    /// `cmd` (stdio as the caller set it) in a new group.
    pub fn start(mut cmd: Command) -> Group {
        Group(cmd.process_group(0).spawn().unwrap())
    }

    pub fn pid(&self) -> i32 {
        i32::try_from(self.0.id()).unwrap()
    }

    pub fn is_running(&mut self) -> bool {
        self.0.try_wait().unwrap().is_none()
    }

    /// Send `signal` to the leader itself (not its group).
    pub fn signal(&self, signal: Signal) {
        kill(Pid::from_raw(self.pid()), signal).unwrap();
    }

    /// Its exit status, once it has exited (at most `limit`).
    pub fn wait(&mut self, limit: Duration) -> ExitStatus {
        wait_for(limit, "the process to exit", || self.0.try_wait().unwrap())
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        let pid = self.pid();
        // Only while the leader is still our child (running, or a zombie
        // not reaped yet) is its id sure to be its group's: once reaped, the
        // kernel may hand the id to another test's new process group, and
        // signalling it would stop a stranger (seen: another test's wrapper).
        if is_our_group_leader(pid) {
            let group = Pid::from_raw(pid);
            let _ = killpg(group, Signal::SIGTERM);
            let deadline = Instant::now() + Duration::from_secs(10);
            while is_running(pid) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = killpg(group, Signal::SIGKILL);
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Fields 3 to 5 of `/proc/<pid>/stat` (state, parent pid, process group),
/// when the process exists.
fn proc_stat(pid: i32) -> Option<(char, u32, i32)> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let parent = fields.next()?.parse().ok()?;
    let group = fields.next()?.parse().ok()?;
    Some((state, parent, group))
}

/// Whether `pid` is a child of this test process that leads its own group.
fn is_our_group_leader(pid: i32) -> bool {
    proc_stat(pid).is_some_and(|(_, parent, group)| parent == std::process::id() && group == pid)
}

/// Whether our child `pid` has not exited yet (a zombie has).
fn is_running(pid: i32) -> bool {
    proc_stat(pid).is_some_and(|(state, parent, _)| parent == std::process::id() && state != 'Z')
}

/// Poll `check` every 10 ms until it returns `Some`, or panic after `limit`.
pub fn wait_for<T>(limit: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Seconds since the epoch, as okstra's clock counts them.
pub fn unix_now() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    )
    .unwrap()
}

/// A JSON file, parsed.
pub fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
}

/// A run folder's `run-manifest.json`.
pub fn manifest(run: &Path) -> Value {
    read_json(&run.join("run-manifest.json"))
}

/// Copy the tree `from` to `to` (regular files and folders). A tree of this
/// repository (`examples/…`, `tests/fixtures/…`) is copied as git sees it:
/// what git ignores is left out, so a run the README's demo or a developer
/// left in `examples/tiny-service/.okstra/` (or Python's `__pycache__/`)
/// never reaches a test's project.
pub fn copy_dir(from: &Path, to: &Path) {
    match not_ignored(from) {
        Some(files) => {
            fs::create_dir_all(to).unwrap();
            for relative in files {
                let source = from.join(&relative);
                // Tracked, but deleted in this checkout: as git status says.
                if !source.exists() {
                    continue;
                }
                let target = to.join(&relative);
                fs::create_dir_all(target.parent().unwrap()).unwrap();
                fs::copy(&source, &target).unwrap();
            }
        }
        None => copy_every_file(from, to),
    }
}

/// Every file under `from` that git does not ignore (tracked, or new and not
/// ignored), relative to `from`; `None` when `from` lies outside this
/// repository or the repository is no git checkout (a source archive).
fn not_ignored(from: &Path) -> Option<Vec<PathBuf>> {
    let root = repo_root().canonicalize().ok()?;
    let from = from.canonicalize().ok()?;
    let relative = from.strip_prefix(&root).ok()?;
    if !root.join(".git").exists() {
        return None;
    }
    let output = Command::new("git")
        .arg("-C")
        .arg(&from)
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .output()
        .ok()
        .filter(|output| output.status.success())?;
    let mut files: Vec<PathBuf> = output
        .stdout
        .split(|byte| *byte == 0)
        .filter(|name| !name.is_empty())
        .map(|name| PathBuf::from(std::str::from_utf8(name).expect("a UTF-8 file name")))
        .collect();
    files.sort();
    files.dedup();
    assert!(
        !files.is_empty(),
        "git lists no file under `{}`",
        relative.display()
    );
    Some(files)
}

/// Copy every regular file and folder of `from` to `to`.
fn copy_every_file(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_every_file(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// `text` with every isolated copy's folder prefix
/// (`…/okstra/workspaces/<16 hex>`, which holds a temp folder and a hash of
/// the project's path) shown as `[WORKSPACES]`.
pub fn hide_workspaces(text: &str) -> String {
    static PREFIX: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"/[^\s`]*/okstra/workspaces/[0-9a-f]{16}").expect("a valid pattern")
    });
    PREFIX.replace_all(text, "[WORKSPACES]").into_owned()
}

/// Make `project` an empty git repository (an implementation run is only
/// rendered in one).
pub fn git_init(project: &Path) {
    git(project, &["init", "-q", "-b", "main"]);
}

/// Make `project` a git repository (ignoring `.okstra/`) with everything
/// committed on `main`.
pub fn commit_all(project: &Path) {
    git(project, &["init", "-q", "-b", "main"]);
    fs::write(project.join(".gitignore"), ".okstra/\n").unwrap();
    git(project, &["add", "."]);
    git(project, &["commit", "-q", "-m", "example"]);
}

/// `git args…` in `dir` as a test's author, which must succeed; its stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The team state file of a run folder (`state/team-state-<runId>.json`).
pub fn team_state_path(run: &Path) -> PathBuf {
    std::fs::read_dir(run.join("state"))
        .expect("a run folder has a state folder")
        .flatten()
        .map(|entry| entry.path())
        .find(|path| {
            path.file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with("team-state-"))
        })
        .expect("a rendered run has a team state")
}

/// What a folder holds: file bytes, link targets and (empty) folders, to
/// compare a folder before and after a command byte for byte.
#[derive(Debug, PartialEq, Eq)]
pub enum Node {
    File(Vec<u8>),
    Link(PathBuf),
    Dir,
}

pub fn tree(root: &Path) -> BTreeMap<PathBuf, Node> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Node>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let relative = path.strip_prefix(root).unwrap().to_owned();
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.file_type().is_symlink() {
                out.insert(relative, Node::Link(fs::read_link(&path).unwrap()));
            } else if meta.is_dir() {
                out.insert(relative, Node::Dir);
                walk(root, &path, out);
            } else {
                out.insert(relative, Node::File(fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// The one time limit stays one: no test file bounds a command or a wait
/// by a figure of its own ([`limit`] is the bound, [`LIMIT_VARIABLE`] its
/// knob), so a slow machine never has to hunt through files for them.
#[test]
fn no_test_file_sets_its_own_time_limit() {
    let own =
        regex::Regex::new(r"\.timeout\(|wait_for\(Duration|\.wait\(Duration|const \w+: Duration")
            .unwrap();
    let mut found = Vec::new();
    for entry in fs::read_dir(repo_root().join("tests/it")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension() != Some(OsStr::new("rs")) || path.ends_with("support.rs") {
            continue;
        }
        let text = fs::read_to_string(&path).unwrap();
        for (n, line) in text.lines().enumerate() {
            if own.is_match(line) {
                found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "use support::limit():\n{}",
        found.join("\n")
    );
}

/// A refusal as okstra makes one: exit 2, nothing on stdout, one line on
/// stderr that says `what`.
pub fn assert_refused(code: i32, stdout: &str, stderr: &str, what: &str) {
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(stdout, "", "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains(what), "{stderr}");
}
