//! Integration tests: hostile input, round three (issue 33) — what okstra
//! writes and removes: `cleanup` given a workspace path through a symlinked
//! folder or a copied marker, `land` given a symlink out of the project, a
//! right-to-left override in a file name and an 80 MiB file, the Markdown
//! report given workers' HTML, `publish github` given a server message that
//! quotes the token, and renders killed midway. Each through the real
//! binary; the host-lead side of the round is `hostile_lead.rs`.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::run::{IMPLEMENTATION, attempts, run_dir, run_with, team_project};
use crate::support::{
    Project, commit_all, copy_dir, okstra, read_json, repo_root, team_state_path,
};

// ------------------------------------------------------------- 3. cleanup

/// Point the recorded workspace of `run`'s kimi attempt at `path`.
fn record_workspace(run: &Path, path: &Path) {
    let file = team_state_path(run);
    let mut state = read_json(&file);
    for record in state["dispatches"].as_array_mut().unwrap() {
        if record["dispatchName"] == "kimi-worker" {
            record["workspace"]["path"] = json!(path);
        }
    }
    fs::write(&file, serde_json::to_vec_pretty(&state).unwrap()).unwrap();
}

#[test]
fn cleanup_removes_only_copies_beneath_its_own_folder_reached_through_no_symlink() {
    // Copies, as where Landlock is missing: kimi then works in one.
    let world = team_project().copies();
    let run = world.render(&[
        "--headless",
        "--task-type",
        "project-analysis",
        "--workers",
        "claude,kimi,report-writer",
    ]);
    let (code, _, stderr) =
        world.outcome(&["dispatch", run.to_str().unwrap(), "--workers", "kimi"]);
    assert_eq!(code, 0, "{stderr}");
    let copy = PathBuf::from(
        attempts(&run, "kimi-worker")[0]["workspace"]["path"]
            .as_str()
            .unwrap(),
    );
    let marker = copy.join(".okstra-workspace.json");
    assert!(marker.is_file(), "kimi worked in a copy");
    let cleanup = || {
        let (code, stdout, stderr) =
            world.outcome(&["cleanup", "--json", "--older-than", "0s", "--execute"]);
        assert_eq!(code, 0, "{stderr}");
        serde_json::from_str::<Value>(&stdout).unwrap()
    };
    let outcome = |report: &Value, path: &Path| -> String {
        report["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|item| item["target"] == path.to_str().unwrap())
            .map_or_else(String::new, |item| item["outcome"].to_string())
    };

    // The user's `src/`, reached through a symlink to the project, with
    // the copy's marker copied into it.
    let outside = world.path("outside");
    fs::create_dir_all(&outside).unwrap();
    symlink(world.root(), outside.join("projlink")).unwrap();
    fs::copy(&marker, world.root().join("src/.okstra-workspace.json")).unwrap();
    let through_link = outside.join("projlink/src");
    record_workspace(&run, &through_link);
    let report = cleanup();
    assert!(
        outcome(&report, &through_link).contains("skipped"),
        "{report}"
    );
    assert!(
        world.root().join("src/inventory.py").is_file(),
        "src/ was removed"
    );

    // A folder of the user's outside the project holding a copied marker.
    let victim = outside.join("victim");
    fs::create_dir_all(&victim).unwrap();
    fs::write(victim.join("keep.txt"), "the user's\n").unwrap();
    fs::copy(&marker, victim.join(".okstra-workspace.json")).unwrap();
    record_workspace(&run, &victim);
    let report = cleanup();
    assert!(outcome(&report, &victim).contains("skipped"), "{report}");
    assert!(
        victim.join("keep.txt").is_file(),
        "the user's folder was removed"
    );

    // The copy okstra made, where okstra made it, goes.
    record_workspace(&run, &copy);
    let report = cleanup();
    assert_eq!(outcome(&report, &copy), "\"removed\"", "{report}");
    assert!(!copy.exists());
}

// ---------------------------------------------------------------- 5. land

/// An implementation run of the team project in git whose Executor made
/// `edit` (`FAKE_EDIT`) and fixed what its verifiers found, carried out to
/// its report.
fn implemented(edit: &str) -> (Project, PathBuf) {
    let world = team_project();
    commit_all(world.root());
    let (outcome, code, stderr) = run_with(
        &world,
        IMPLEMENTATION,
        &[("FAKE_EDIT", edit), ("FAKE_FIX_EDIT", "1")],
    );
    assert_eq!(code, 0, "{stderr}");
    (world, run_dir(&outcome))
}

#[test]
fn land_refuses_a_symlink_out_of_the_project_and_prints_no_bidi_control() {
    let (world, run) = implemented("link");
    let secret = world.path("outside/secret.txt");
    fs::create_dir_all(secret.parent().unwrap()).unwrap();
    fs::write(&secret, "the user's\n").unwrap();
    let (code, stdout, stderr) = world.outcome(&["land", run.to_str().unwrap(), "--check"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        !stdout.contains('\u{202e}') && !stderr.contains('\u{202e}'),
        "{stdout}{stderr}"
    );
    let line = stdout
        .lines()
        .find(|line| line.starts_with("symlink-outside: "))
        .unwrap_or_else(|| panic!("no symlink-outside line:\n{stdout}"));
    assert!(line.contains("docs/notes\\u{202e}dm.txt"), "{line}");
    assert!(line.contains("../../outside/secret.txt"), "{line}");
    // Nothing lands while it stands.
    let (code, stdout, stderr) = world.outcome(&["land", run.to_str().unwrap()]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        world
            .root()
            .join("docs/notes\u{202e}dm.txt")
            .symlink_metadata()
            .is_err()
    );
}

#[test]
fn land_streams_an_80_mib_file_into_the_working_tree() {
    let (world, run) = implemented("big");
    let (code, stdout, stderr) = world.outcome(&["land", run.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.lines().any(|line| line == "write data/big.bin"),
        "{stdout}"
    );
    let landed = fs::read(world.root().join("data/big.bin")).unwrap();
    assert_eq!(landed.len(), 80 << 20);
    let pattern: Vec<u8> = (0..=255).collect();
    assert!(landed.chunks(256).all(|chunk| chunk == pattern.as_slice()));
}

// ------------------------------------------------- 6. the report's Markdown

#[test]
fn the_markdown_report_carries_no_raw_html_from_workers() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    copy_dir(&repo_root().join("tests/fixtures/reports/v2-valid"), &run);
    let data = run.join("report/data.json");
    let mut value = read_json(&data);
    let add = |value: &mut Value, pointer: &str, html: &str| {
        let text = value.pointer(pointer).unwrap().as_str().unwrap().to_owned();
        *value.pointer_mut(pointer).unwrap() = json!(format!("{text} {html}"));
    };
    add(
        &mut value,
        "/humanSummary/headline",
        "<script>alert(1)</script>",
    );
    add(
        &mut value,
        "/humanSummary/paragraphs/0",
        "<img src=x onerror=alert(1)>",
    );
    add(
        &mut value,
        "/consensus/0/finding",
        "<iframe src=\"https://evil.example\"></iframe>",
    );
    fs::write(&data, value.to_string()).unwrap();
    let output = okstra().arg("report").arg(&run).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let markdown = fs::read_to_string(run.join("report/final-report.md")).unwrap();
    let lower = markdown.to_ascii_lowercase();
    for tag in ["<script", "<img", "<iframe", "</script", "</iframe"] {
        assert!(!lower.contains(tag), "raw {tag} in\n{markdown}");
    }
    // The text is still there, shown, not run.
    assert!(
        markdown.contains("&lt;script>alert(1)&lt;/script>"),
        "{markdown}"
    );
    assert!(
        markdown.contains("&lt;img src=x onerror=alert(1)>"),
        "{markdown}"
    );
}

// ------------------------------------------------------------- 7. publish

const TOKEN: &str = "ghp_tok3nQuotedBackByTheServer";

/// A server on 127.0.0.1 that refuses every request with 422 and a message
/// quoting the token it was sent, as a careless proxy might.
fn quoting_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut token = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("authorization:") {
                    line[line.len() - value.len()..]
                        .trim()
                        .clone_into(&mut token);
                }
            }
            let body = json!({"message": format!("Validation Failed: {token} may not do this"),
                              "errors": [{"message": format!("token {token}")}]})
            .to_string();
            let mut stream = stream;
            let _ = write!(
                stream,
                "HTTP/1.1 422 X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

#[test]
fn publish_never_prints_the_token_a_server_quotes_back() {
    let world = team_project();
    commit_all(world.root());
    let (outcome, code, stderr) = run_with(
        &world,
        &[
            "--task-type",
            "project-analysis",
            "--workers",
            "claude,codex,report-writer",
        ],
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    let run = run_dir(&outcome);
    let port = quoting_server();
    let output = world
        .okstra()
        .args(["publish", "github"])
        .arg(&run)
        .args(["--repo", "acme/shop", "--pr", "7", "--api-url"])
        .arg(format!("http://127.0.0.1:{port}"))
        .env("GITHUB_TOKEN", TOKEN)
        .env_remove("GH_TOKEN")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("answered 422"), "{stderr}");
    assert!(
        !stderr.contains(TOKEN) && !stdout.contains(TOKEN),
        "{stderr}"
    );
    assert!(stderr.contains("Validation Failed: Bearer ***"), "{stderr}");
}

// ------------------------------------------- 10. renders killed midway

#[test]
fn a_killed_renders_staging_folder_goes_with_the_next_render_or_cleanup() {
    let world = Project::new().default_flag("--task-type", "project-analysis");
    world.render(&[]);
    let okstra_dir = world.okstra_dir();
    // Left by a render killed a moment ago: fresh, with files in it.
    let killed = okstra_dir.join(".staging-killed");
    fs::create_dir_all(killed.join("prompts")).unwrap();
    fs::write(killed.join("prompts/x.md"), "half\n").unwrap();
    world.render(&[]);
    assert!(!killed.exists(), "the next render kept it");
    // And `okstra cleanup` lists it, then removes it.
    fs::create_dir_all(killed.join("state")).unwrap();
    let (code, stdout, stderr) = world.outcome(&["cleanup", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let listed: Value = serde_json::from_str(&stdout).unwrap();
    let staged = |report: &Value| -> Vec<String> {
        report["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|item| item["kind"] == "staging")
            .map(|item| item["target"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(staged(&listed), [killed.to_str().unwrap()], "{listed}");
    assert!(killed.exists(), "a dry run removed it");
    let (code, stdout, stderr) = world.outcome(&["cleanup", "--json", "--execute"]);
    assert_eq!(code, 0, "{stderr}");
    let removed: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(staged(&removed), [killed.to_str().unwrap()], "{removed}");
    assert!(!killed.exists());
}
