//! Integration tests: hostile input and hostile filesystems (issue 13).
//! One test per reproduced failure, through the real binary, each bounded in
//! wall time: special files, oversized files, symlinks out of the project,
//! manifest paths out of the run, a reused pid, terminal escapes, stale
//! staging folders and duplicate keys (provider-exec: `hostile_exec.rs`).

use std::fs::{self, File};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use nix::sys::stat::Mode;
use nix::unistd::mkfifo;
use serde_json::{Value, json};

use crate::support::{Group, Project, copy_dir, manifest, okstra, repo_root, unix_now};

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn outcome(cmd: &mut assert_cmd::Command) -> Out {
    let output = cmd.output().unwrap();
    Out {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// A project whose root `proj/` has `outside/` beside it, rendered as a
/// project analysis.
fn hostile_project() -> Project {
    Project::in_folder("proj").default_flag("--task-type", "project-analysis")
}

/// A folder beside the project (outside it).
fn outside(project: &Project) -> PathBuf {
    let path = project.path("outside");
    fs::create_dir_all(&path).unwrap();
    path
}

/// Render with `brief` as the task brief, whatever happens.
fn launch(project: &Project, brief: &str) -> Out {
    outcome(&mut project.render_command(&["--json", "--task-brief", brief]))
}

fn write_manifest(run: &Path, value: &Value) {
    fs::write(run.join("run-manifest.json"), value.to_string()).unwrap();
}

fn assignment(run: &Path, index: usize) -> Value {
    manifest(run)["assignments"][index].clone()
}

fn path_of(assignment: &Value, field: &str) -> PathBuf {
    PathBuf::from(assignment[field].as_str().unwrap())
}

fn fifo(path: &Path) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let _ = fs::remove_file(path);
    mkfifo(path, Mode::S_IRWXU).unwrap();
}

fn sparse(path: &Path, len: u64) {
    File::create(path).unwrap().set_len(len).unwrap();
}

fn dead_pid() -> i32 {
    let mut child = Command::new("true").spawn().unwrap();
    child.wait().unwrap();
    i32::try_from(child.id()).unwrap()
}

// ------------------------------------------------------ 1. special files

#[test]
fn a_fifo_or_a_device_as_the_brief_is_refused_at_once() {
    let project = hostile_project();
    fifo(&project.root().join("fifo.md"));
    let out = launch(&project, "fifo.md");
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("is a FIFO, not a regular file"),
        "{}",
        out.stderr
    );
    symlink("/dev/zero", project.root().join("zero.md")).unwrap();
    let out = launch(&project, "zero.md");
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("is a device"), "{}", out.stderr);
    assert!(!project.root().join(".okstra/tasks").exists());
}

#[test]
fn a_fifo_run_log_is_refused_instead_of_blocking_the_render() {
    let project = hostile_project();
    let run = project.render(&[]);
    fifo(&run.parent().unwrap().join("runs.jsonl"));
    let out = launch(&project, "brief.md");
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("runs.jsonl` is a FIFO"),
        "{}",
        out.stderr
    );
}

#[test]
fn status_never_blocks_on_fifo_sidecars_events_heartbeats_or_logs() {
    let project = hostile_project();
    let run = project.render(&[]);
    let first = assignment(&run, 0);
    let second = assignment(&run, 1);
    let prompt = path_of(&first, "promptPath");
    fifo(&PathBuf::from(format!("{}.status.json", prompt.display())));
    fifo(&run.join("state/lead-events.jsonl"));
    fifo(&path_of(&second, "heartbeatPath"));
    // The second worker's sidecar names its log, a FIFO too.
    let second_prompt = path_of(&second, "promptPath");
    let log = second_prompt.with_extension("log");
    fifo(&log);
    fs::write(
        format!("{}.status.json", second_prompt.display()),
        json!({"schemaVersion": 1, "stage": "started", "pid": dead_pid(),
               "started_ts": unix_now(), "log_path": log})
        .to_string(),
    )
    .unwrap();
    let out = run_status(&run, &["--log-tail", "5"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("is a FIFO"), "{}", out.stdout);
    let out = run_status(&run, &["--json", "--log-tail", "5"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

fn run_status(run_dir: &Path, extra: &[&str]) -> Out {
    outcome(okstra().arg("status").args(extra).arg(run_dir))
}

#[test]
fn a_fifo_run_manifest_is_skipped_by_the_board_and_refused_by_event() {
    let project = hostile_project();
    let run = project.render(&[]);
    fifo(&run.join("run-manifest.json"));
    let out = outcome(
        okstra()
            .args(["status", "--project-root"])
            .arg(project.root()),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("skipping a run"), "{}", out.stderr);
    let out = outcome(okstra().arg("event").arg(&run).arg("phase-start"));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("is a FIFO"), "{}", out.stderr);
}

// ----------------------------------------------------------- 2. sizes

#[test]
fn an_oversized_or_endless_brief_is_refused_with_its_size_and_the_limit() {
    let project = hostile_project();
    sparse(&project.root().join("huge.md"), 2 << 30);
    let out = launch(&project, "huge.md");
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("is 2147483648 bytes, over the 4194304-byte limit for a brief"),
        "{}",
        out.stderr
    );
}

/// A copy of the valid v2 report fixture in a temp folder.
fn report_run() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    copy_dir(&repo_root().join("tests/fixtures/reports/v2-valid"), &run);
    (dir, run)
}

#[test]
fn validate_refuses_a_huge_report_before_parsing_and_a_flood_of_tiny_values() {
    let dir = tempfile::tempdir().unwrap();
    let huge = dir.path().join("data.json");
    sparse(&huge, 100 << 20);
    let out = outcome(okstra().arg("validate").arg(&huge));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("is 104857600 bytes, over the 33554432-byte limit for a report"),
        "{}",
        out.stderr
    );
    // Under the size limit, but 2 bytes per value: refused, not a 16× tree.
    let mut flood = String::from(r#"{"schemaVersion":"2.0","x":["#);
    flood.push_str(&"0,".repeat(2 << 20));
    flood.push_str("0]}");
    fs::write(&huge, flood).unwrap();
    let out = outcome(okstra().arg("validate").arg(&huge));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("values (one per 8 bytes"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_worker_result_that_is_a_fifo_or_endless_is_reported_not_read() {
    let (_dir, run) = report_run();
    fifo(&run.join("results/claude-worker.md"));
    let out = outcome(okstra().arg("validate").arg(&run));
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("is a FIFO"), "{}", out.stdout);
    fs::remove_file(run.join("results/claude-worker.md")).unwrap();
    sparse(&run.join("results/claude-worker.md"), 1 << 30);
    let out = outcome(okstra().arg("validate").arg(&run));
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stdout.contains("over the 16777216-byte limit"),
        "{}",
        out.stdout
    );
}

// ------------------------------------------------- 3. symlinked .okstra

#[test]
fn a_symlinked_okstra_or_task_folder_is_refused_and_nothing_is_written_outside() {
    let project = hostile_project();
    let outside = outside(&project);
    symlink(&outside, project.root().join(".okstra")).unwrap();
    let out = launch(&project, "brief.md");
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains(".okstra` is a symlink"),
        "{}",
        out.stderr
    );
    assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);

    fs::remove_file(project.root().join(".okstra")).unwrap();
    fs::create_dir_all(project.root().join(".okstra/tasks")).unwrap();
    symlink(&outside, project.root().join(".okstra/tasks/demo")).unwrap();
    let out = launch(&project, "brief.md");
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("tasks/demo` is a symlink"),
        "{}",
        out.stderr
    );
    assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);
}

#[test]
fn reap_and_status_refuse_a_symlinked_okstra_and_stop_nothing() {
    let project = hostile_project();
    let other = hostile_project();
    let run = other.render(&[]);
    let mut group = Group::spawn(&["sh", "-c", "sleep 300; exit 0"]);
    let prompt = path_of(&assignment(&run, 0), "promptPath");
    fs::write(
        format!("{}.status.json", prompt.display()),
        json!({"schemaVersion": 1, "stage": "started", "pid": dead_pid(),
               "pgid": group.pid(), "started_ts": unix_now() - 1,
               "argv": ["sh", "-c", "sleep 300; exit 0"]})
        .to_string(),
    )
    .unwrap();
    symlink(other.root().join(".okstra"), project.root().join(".okstra")).unwrap();
    let out = outcome(
        okstra()
            .args(["reap", "--execute", "--project-root"])
            .arg(project.root()),
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("is a symlink"), "{}", out.stderr);
    assert!(group.is_running());
    let out = outcome(
        okstra()
            .args(["status", "--project-root"])
            .arg(project.root()),
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("is a symlink"), "{}", out.stderr);
}

// --------------------------------------------- 4. manifest paths outside

#[test]
fn event_refuses_a_lead_events_path_outside_the_run() {
    let project = hostile_project();
    let run = project.render(&[]);
    let target = outside(&project).join("events.jsonl");
    let mut value = manifest(&run);
    value["leadEventsPath"] = json!(target);
    write_manifest(&run, &value);
    let out = outcome(okstra().arg("event").arg(&run).arg("phase-start"));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("is outside the run folder"),
        "{}",
        out.stderr
    );
    assert!(!target.exists());
    // A relative escape is the same thing.
    value["leadEventsPath"] = json!("../../../../../../outside/events.jsonl");
    write_manifest(&run, &value);
    let out = outcome(okstra().arg("event").arg(&run).arg("phase-start"));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(!target.exists());
}

#[test]
fn report_refuses_a_data_path_outside_the_run() {
    let (dir, run) = report_run();
    let elsewhere = dir.path().join("elsewhere/report");
    fs::create_dir_all(&elsewhere).unwrap();
    fs::copy(run.join("report/data.json"), elsewhere.join("data.json")).unwrap();
    let mut value = manifest(&run);
    value["finalReport"]["dataPath"] = json!(elsewhere.join("data.json"));
    write_manifest(&run, &value);
    let out = outcome(okstra().arg("report").arg(&run));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("`finalReport.dataPath`"),
        "{}",
        out.stderr
    );
    assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 1);
}

#[test]
fn validate_refuses_result_paths_outside_the_run() {
    let (dir, run) = report_run();
    fs::write(dir.path().join("x.md"), "| F-1 | x |\n").unwrap();
    for outside in [json!("../x.md"), json!(dir.path().join("x.md"))] {
        let mut value = manifest(&run);
        value["assignments"][0]["resultPath"] = outside;
        write_manifest(&run, &value);
        let out = outcome(okstra().arg("validate").arg(&run));
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert!(
            out.stderr.contains("`assignments[0].resultPath`")
                && out.stderr.contains("is outside the run folder"),
            "{}",
            out.stderr
        );
    }
}

// ------------------------------------------------------- 5. reused pid

#[test]
fn the_reaper_spares_a_leader_whose_start_fits_but_whose_command_does_not() {
    let project = hostile_project();
    let run = project.render(&[]);
    let mut stranger = Group::spawn(&["sleep", "300"]);
    let prompt = path_of(&assignment(&run, 0), "promptPath");
    let sidecar = PathBuf::from(format!("{}.status.json", prompt.display()));
    fs::write(
        &sidecar,
        json!({"schemaVersion": 1, "stage": "started", "pid": dead_pid(),
               "pgid": stranger.pid(), "started_ts": unix_now() - 1,
               "argv": ["codex", "exec", "--json", "-"]})
        .to_string(),
    )
    .unwrap();
    let out = outcome(
        okstra()
            .args(["reap", "--execute", "--json", "--project-root"])
            .arg(project.root()),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(report["actions"][0]["action"], "mark-lost", "{report}");
    assert!(
        report["actions"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("not the recorded `codex exec --json -`"),
        "{report}"
    );
    assert!(stranger.is_running());
}

// ---------------------------------------------------- 6. control chars

#[test]
fn heartbeat_escapes_never_reach_the_terminal() {
    let project = hostile_project();
    let run = project.render(&[]);
    let first = assignment(&run, 0);
    let heartbeat = path_of(&first, "heartbeatPath");
    fs::create_dir_all(heartbeat.parent().unwrap()).unwrap();
    let now = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    fs::write(
        &heartbeat,
        format!(
            "{}\n",
            json!({"ts": now, "phase": "x\u{1b}[2J",
                   "summary": "a\u{1b}]0;pwned\u{7} b\u{1b}]52;c;Zm9v\u{7}\nerror: forged",
                   "blocker": "c\u{1b}[31m\ncd"})
        ),
    )
    .unwrap();
    let out = run_status(&run, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stdout.contains('\u{1b}'), "{:?}", out.stdout);
    assert!(!out.stdout.contains('\u{7}'), "{:?}", out.stdout);
    assert!(
        out.stdout.contains("a\\e]0;pwned\\u{7} b"),
        "{}",
        out.stdout
    );
    assert!(
        !out.stdout
            .lines()
            .any(|line| line.starts_with("error: forged")),
        "{}",
        out.stdout
    );
}

#[test]
fn an_error_echoing_a_value_with_a_newline_stays_one_line() {
    let project = hostile_project();
    let out = launch(&project, "no\nerror: forged\u{1b}[31m");
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("no\\nerror: forged\\e[31m"),
        "{}",
        out.stderr
    );
}

#[test]
fn report_output_drops_nul_and_terminal_escapes() {
    let (_dir, run) = report_run();
    let data = run.join("report/data.json");
    let mut value: Value = serde_json::from_slice(&fs::read(&data).unwrap()).unwrap();
    let headline = value["humanSummary"]["headline"]
        .as_str()
        .unwrap()
        .to_owned();
    value["humanSummary"]["headline"] = json!(format!("{headline}\u{0}\u{1b}[31m red\u{7}"));
    fs::write(&data, value.to_string()).unwrap();
    let out = outcome(okstra().arg("report").arg(&run));
    assert_eq!(out.code, 0, "{}", out.stderr);
    for name in ["final-report.md", "final-report.html"] {
        let text = fs::read(run.join("report").join(name)).unwrap();
        assert!(
            !text.iter().any(|b| matches!(b, 0 | 0x07 | 0x1b)),
            "{name} holds a control byte"
        );
        assert!(
            String::from_utf8_lossy(&text).contains("[31m red"),
            "{name}"
        );
    }
}

// ---------------------------------------------------------- 9. smaller

#[test]
fn stale_staging_folders_are_removed_by_the_next_render() {
    let project = hostile_project();
    project.render(&[]);
    let okstra_dir = project.root().join(".okstra");
    let old = okstra_dir.join(".staging-old");
    let fresh = okstra_dir.join(".staging-fresh");
    fs::create_dir_all(old.join("prompts")).unwrap();
    fs::create_dir_all(&fresh).unwrap();
    let hour_ago = SystemTime::now() - Duration::from_hours(1);
    File::open(&old).unwrap().set_modified(hour_ago).unwrap();
    // A symlink with such a name is not a staging folder: never followed.
    let outside = outside(&project);
    fs::write(outside.join("keep.md"), "the user's\n").unwrap();
    symlink(&outside, okstra_dir.join(".staging-link")).unwrap();
    project.render(&[]);
    assert!(!old.exists());
    // Old or new: under the lock every render holds while it stages, no
    // staging folder is a live render's (issue 33).
    assert!(!fresh.exists(), "a killed render's folder was kept");
    assert!(outside.join("keep.md").is_file());
}

#[test]
fn a_duplicated_key_or_a_fifo_data_json_is_named_as_such() {
    let (_dir, run) = report_run();
    let data = run.join("report/data.json");
    let text = fs::read_to_string(&data).unwrap();
    let doubled = text.replacen('{', r#"{"schemaVersion":"1.0","#, 1);
    fs::write(&data, doubled).unwrap();
    let out = outcome(okstra().arg("validate").arg(&run));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("duplicate key `schemaVersion`"),
        "{}",
        out.stderr
    );
    fifo(&data);
    let out = outcome(okstra().arg("validate").arg(&data));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("is a FIFO"), "{}", out.stderr);
    assert!(!out.stderr.contains("does not exist"), "{}", out.stderr);
}
