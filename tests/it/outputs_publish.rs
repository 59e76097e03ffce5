//! `okstra publish github` against a local HTTP server standing in for
//! GitHub's REST API (which these tests cannot reach): what it asks for,
//! what it posts, that it posts once, and how it refuses.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::{Value, json};

use super::{git, team_run};
use crate::run::team_project;
use crate::support::Project;
use crate::support::commit_all;

pub(super) const TOKEN: &str = "tok-secret-8c1f";

/// One request the server received.
#[derive(Debug, Clone)]
pub(super) struct Request {
    method: String,
    /// Path and query.
    target: String,
    /// Lower-case names.
    headers: Vec<(String, String)>,
    body: String,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

type Route = dyn Fn(&Request) -> (u16, Value) + Send + Sync;

/// A one-thread HTTP/1.1 server on 127.0.0.1; every connection answers one
/// request and closes.
pub(super) struct Server {
    port: u16,
    seen: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    fn start(route: Arc<Route>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen_in, stop_in) = (seen.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop_in.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                if let Some(request) = serve(stream, &*route) {
                    seen_in.lock().unwrap().push(request);
                }
            }
        });
        Server {
            port,
            seen,
            stop,
            thread: Some(thread),
        }
    }

    pub(super) fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn requests(&self) -> Vec<Request> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Read one request from `stream`, answer it with `route`.
fn serve(stream: TcpStream, route: &Route) -> Option<Request> {
    stream
        .set_read_timeout(Some(crate::support::limit()))
        .ok()?;
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let target = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let length: usize = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let request = Request {
        method,
        target,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    let (status, answer) = route(&request);
    let text = answer.to_string();
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
    let _ = stream.flush();
    Some(request)
}

/// What the fake GitHub knows and how it answers.
pub(super) struct Github {
    head: String,
    /// The file the pull request changes, as the repository names it.
    file: String,
    /// The patch of that file the pull request's files list gives.
    patch: String,
    /// The review body posted so far (listed on page 2 of the reviews).
    posted: Mutex<Option<Value>>,
    /// Answer every request with this status instead (401, 403…).
    fail_get: Option<u16>,
    fail_post: Option<u16>,
}

const PULL: &str = "/repos/acme/shop/pulls/7";

/// Lines 1 and 2 of src/inventory.py are in the diff; 3 is not.
const PATCH: &str = "@@ -1,2 +1,2 @@\n-old first line\n+new first line\n second line";

impl Github {
    fn new(head: &str) -> Arc<Github> {
        Github::with_patch(head, PATCH)
    }

    /// A pull request whose change to `src/inventory.py` is `patch`.
    pub(super) fn with_patch(head: &str, patch: &str) -> Arc<Github> {
        Github::changing(head, "src/inventory.py", patch)
    }

    /// A pull request whose change to `file` (the repository's path) is
    /// `patch`.
    fn changing(head: &str, file: &str, patch: &str) -> Arc<Github> {
        Arc::new(Github {
            head: head.to_owned(),
            file: file.to_owned(),
            patch: patch.to_owned(),
            posted: Mutex::new(None),
            fail_get: None,
            fail_post: None,
        })
    }

    fn answer(&self, request: &Request) -> (u16, Value) {
        let (path, query) = request
            .target
            .split_once('?')
            .unwrap_or((request.target.as_str(), ""));
        let page = query
            .split('&')
            .find_map(|pair| pair.strip_prefix("page="))
            .and_then(|n| n.parse::<u32>().ok())
            .unwrap_or(1);
        if request.method == "GET"
            && let Some(status) = self.fail_get
        {
            return (status, json!({"message": "Bad credentials"}));
        }
        match (request.method.as_str(), path) {
            ("GET", PULL) => (200, json!({"number": 7, "head": {"sha": self.head}})),
            ("GET", p) if p == format!("{PULL}/reviews") => {
                let mut list: Vec<Value> = Vec::new();
                match page {
                    1 => {
                        for id in 0..100 {
                            list.push(json!({"id": id, "body": "LGTM"}));
                        }
                    }
                    2 => {
                        list.push(json!({"id": 100, "body": "a human's review"}));
                        if let Some(posted) = self.posted.lock().unwrap().as_ref() {
                            list.push(json!({"id": 999, "body": posted["body"],
                                "html_url": "https://github.example/acme/shop/pull/7#r999"}));
                        }
                    }
                    _ => {}
                }
                (200, Value::Array(list))
            }
            ("GET", p) if p == format!("{PULL}/files") => {
                let files = if page == 1 {
                    json!([{"filename": self.file, "status": "modified",
                            "patch": self.patch},
                           {"filename": "README.md", "status": "modified"}])
                } else {
                    json!([])
                };
                (200, files)
            }
            ("POST", p) if p == format!("{PULL}/reviews") => {
                if let Some(status) = self.fail_post {
                    return (
                        status,
                        json!({"message": "Unprocessable Entity",
                               "errors": ["Line could not be resolved"]}),
                    );
                }
                let body: Value = serde_json::from_str(&request.body).unwrap_or(Value::Null);
                *self.posted.lock().unwrap() = Some(body);
                (
                    200,
                    json!({"id": 999, "html_url": "https://github.example/acme/shop/pull/7#r999"}),
                )
            }
            _ => (404, json!({"message": "Not Found"})),
        }
    }
}

pub(super) fn serve_github(github: &Arc<Github>) -> Server {
    let github = github.clone();
    Server::start(Arc::new(move |request: &Request| github.answer(request)))
}

pub(super) struct Out {
    pub(super) code: i32,
    pub(super) stdout: String,
    pub(super) stderr: String,
}

/// `okstra publish github <run> --repo acme/shop --pr 7 --api-url <server>`.
pub(super) fn publish(
    project: &Project,
    run: &Path,
    api: &str,
    token: Option<&str>,
    extra: &[&str],
) -> Out {
    let mut cmd = project.okstra();
    cmd.args(["publish", "github"])
        .arg(run)
        .args(["--repo", "acme/shop", "--pr", "7", "--api-url", api])
        .args(extra)
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN");
    if let Some(token) = token {
        cmd.env("GITHUB_TOKEN", token);
    }
    let output = cmd.output().unwrap();
    let out = Out {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    assert!(!out.stdout.contains(TOKEN) && !out.stderr.contains(TOKEN));
    out
}

/// A committed project and a finished headless run of it; the run folder
/// and the commit it analysed.
fn published_run() -> (Project, std::path::PathBuf, String) {
    let project = team_project();
    commit_all(project.root());
    let run = team_run(&project, "publish", &[]);
    let head = git(project.root(), &["rev-parse", "HEAD"])
        .trim()
        .to_owned();
    (project, run, head)
}

#[test]
fn publish_posts_one_review_once_pinned_to_the_analysed_commit() {
    let (project, run, head) = published_run();
    let github = Github::new(&head);
    let server = serve_github(&github);

    let first = publish(&project, &run, &server.url(), Some(TOKEN), &[]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(
        first.stdout,
        "https://github.example/acme/shop/pull/7#r999\n"
    );
    let requests = server.requests();
    let calls: Vec<(String, String)> = requests
        .iter()
        .map(|r| (r.method.clone(), r.target.clone()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("GET".into(), PULL.to_owned()),
            ("GET".into(), format!("{PULL}/reviews?per_page=100&page=1")),
            ("GET".into(), format!("{PULL}/reviews?per_page=100&page=2")),
            ("GET".into(), format!("{PULL}/files?per_page=100&page=1")),
            ("POST".into(), format!("{PULL}/reviews")),
        ]
    );
    for request in &requests {
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {TOKEN}").as_str())
        );
        assert_eq!(
            request.header("accept"),
            Some("application/vnd.github+json")
        );
        assert!(request.header("user-agent").unwrap().starts_with("okstra/"));
    }
    let post = &requests[4];
    assert_eq!(post.header("content-type"), Some("application/json"));
    let body: Value = serde_json::from_str(&post.body).unwrap();
    assert_eq!(body["event"], "COMMENT");
    assert_eq!(body["commit_id"], head.as_str());
    let summary = body["body"].as_str().unwrap();
    assert!(summary.starts_with("<!-- okstra-review run:"), "{summary}");
    // The statement every output gives, in the same words.
    assert!(
        summary.contains("**Cross-verified**: 3 of 3 reviewers completed their own work"),
        "{summary}"
    );
    assert!(summary.contains("### Outside the diff"), "{summary}");
    // The false lead codex and kimi refuted is no alert: only counted.
    assert!(!summary.contains("`src/inventory.py:3`"), "{summary}");
    assert!(
        summary.contains("1 refuted claim (withdrawn by its owner or refuted by reviewers"),
        "{summary}"
    );
    let comments = body["comments"].as_array().unwrap();
    assert!(!comments.is_empty());
    for comment in comments {
        assert_eq!(comment["path"], "src/inventory.py");
        assert_eq!(comment["side"], "RIGHT");
        let line = comment["line"].as_u64().unwrap();
        assert!(line == 1 || line == 2, "{comment}");
        let text = comment["body"].as_str().unwrap();
        assert!(text.starts_with("**okstra · "), "{text}");
        assert!(
            text.contains("Found by ") || text.contains("Found independently by "),
            "{text}"
        );
    }

    // Publishing the same run again finds the marker (on page 2) and posts
    // nothing.
    let again = publish(&project, &run, &server.url(), Some(TOKEN), &[]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again.stderr.contains("already published"),
        "{}",
        again.stderr
    );
    let posts = server
        .requests()
        .iter()
        .filter(|r| r.method == "POST")
        .count();
    assert_eq!(posts, 1);
}

#[test]
fn publish_dry_run_prints_the_body_and_posts_nothing() {
    let (project, run, head) = published_run();
    let github = Github::new(&head);
    let server = serve_github(&github);
    let dry = publish(&project, &run, &server.url(), None, &["--dry-run"]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    let body: Value = serde_json::from_str(&dry.stdout).unwrap();
    assert_eq!(body["event"], "COMMENT");
    assert!(server.requests().iter().all(|r| r.method == "GET"));
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.header("authorization").is_none())
    );
    // The real post sends exactly that body.
    let real = publish(&project, &run, &server.url(), Some(TOKEN), &[]);
    assert_eq!(real.code, 0, "{}", real.stderr);
    let posted = github.posted.lock().unwrap().clone().unwrap();
    assert_eq!(posted, body);
}

#[test]
fn publish_refuses_a_moved_head_and_turns_api_errors_into_one_line() {
    let (project, run, head) = published_run();

    let moved = Github::new(&"f".repeat(40));
    let server = serve_github(&moved);
    let out = publish(&project, &run, &server.url(), Some(TOKEN), &[]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("refusing to publish: pull request #7"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains(&head), "{}", out.stderr);
    assert!(server.requests().iter().all(|r| r.method == "GET"));
    drop(server);

    for (status, get, says) in [
        (401, true, "answered 401"),
        (403, true, "needs `pull-requests: write`"),
        (422, false, "Line could not be resolved"),
    ] {
        let github = Arc::new(Github {
            head: head.clone(),
            file: "src/inventory.py".to_owned(),
            patch: PATCH.to_owned(),
            posted: Mutex::new(None),
            fail_get: get.then_some(status),
            fail_post: (!get).then_some(status),
        });
        let server = serve_github(&github);
        let out = publish(&project, &run, &server.url(), Some(TOKEN), &[]);
        assert_eq!(out.code, 2, "{status}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert!(out.stderr.contains(says), "{status}: {}", out.stderr);
    }

    for (api, token, says) in [
        (
            "http://example.com",
            Some(TOKEN),
            "plain http is allowed only to a loopback host",
        ),
        ("http://127.0.0.1:9", None, "no token: set `GITHUB_TOKEN`"),
    ] {
        let out = publish(&project, &run, api, token, &[]);
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert!(out.stderr.contains(says), "{}", out.stderr);
    }
}

/// The team project in `services/tiny/` of a repository (as the README's own
/// demo project lies in `examples/tiny-service/`), committed.
fn subfolder_project() -> Project {
    let brief =
        std::fs::read_to_string(crate::support::repo_root().join("examples/brief.md")).unwrap();
    let project = Project::in_folder("repo/services/tiny")
        .key("demo", "review", "reservations")
        .brief(&brief)
        .credentials();
    crate::support::copy_dir(
        &crate::support::repo_root().join("examples/tiny-service"),
        project.root(),
    );
    for binary in ["claude", "codex", "agy", "grok", "kimi"] {
        project.fake_cli(binary, "workers/team.py");
    }
    let repo = project.root().parent().unwrap().parent().unwrap();
    git(repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join(".gitignore"), ".okstra/\n").unwrap();
    git(repo, &["add", "."]);
    git(repo, &["commit", "-q", "-m", "monorepo"]);
    project
}

#[test]
fn a_project_in_a_subfolder_names_files_as_its_repository_does() {
    let project = subfolder_project();
    let run = team_run(&project, "subfolder", &[]);
    let repo = project.root().parent().unwrap().parent().unwrap();
    let head = git(repo, &["rev-parse", "HEAD"]).trim().to_owned();
    let prefix = "services/tiny/";

    // SARIF: every location relative to the repository's root, and the
    // log still valid against the SARIF 2.1.0 schema.
    let out = tempfile::tempdir().unwrap();
    let log = super::sarif_of(&run, &out.path().join("run.sarif"));
    assert_eq!(super::violations(&log), Vec::<String>::new());
    let locations: Vec<&Value> = log["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["locations"].as_array().into_iter().flatten())
        .map(|l| &l["physicalLocation"]["artifactLocation"])
        .collect();
    assert!(!locations.is_empty(), "{log}");
    for location in &locations {
        let uri = location["uri"].as_str().unwrap();
        assert!(uri.starts_with(prefix), "{uri}");
        assert_eq!(location["uriBaseId"], "%SRCROOT%");
    }
    assert!(log["runs"][0]["originalUriBaseIds"]["%SRCROOT%"].is_object());

    // The review: findings at lines the pull request changed go inline,
    // at the repository's path of the file.
    let github = Github::changing(
        &head,
        &format!("{prefix}src/inventory.py"),
        "@@ -1,30 +1,30 @@\n-old\n+new\n",
    );
    let server = serve_github(&github);
    let out = publish(&project, &run, &server.url(), Some(TOKEN), &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let posted = github.posted.lock().unwrap().clone().unwrap();
    let comments = posted["comments"].as_array().unwrap();
    assert!(!comments.is_empty(), "nothing placed inline: {posted}");
    for comment in comments {
        assert_eq!(comment["path"], format!("{prefix}src/inventory.py"));
    }

    // `okstra gate --json` names the same files.
    let gate = project
        .okstra()
        .arg("gate")
        .arg(&run)
        .args(["--fail-on", "info", "--json"])
        .output()
        .unwrap();
    let gate: Value = serde_json::from_slice(&gate.stdout).unwrap();
    let counted = gate["counted"].as_array().unwrap();
    assert!(!counted.is_empty(), "{gate}");
    for finding in counted {
        if let Some(location) = finding["location"].as_str() {
            assert!(location.starts_with(prefix), "{location}");
        }
    }
}
