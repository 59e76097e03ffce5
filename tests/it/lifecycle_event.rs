//! Lifecycle: `okstra event` — sequence numbers under concurrency, the
//! progress line, and refused input.

use pretty_assertions::assert_eq;

use super::*;

use crate::support::limit;

#[test]
fn one_hundred_concurrent_events_get_distinct_sequence_numbers() {
    let project = Project::new();
    let run = project.render(&["--task-type", "project-analysis"]);
    let mut children: Vec<Child> = (0..100)
        .map(|n| {
            Command::new(okstra_path())
                .arg("event")
                .arg(&run)
                .arg("worker-dispatched")
                .args(["--field", &format!("n={n}"), "--field", "worker=codex"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let statuses = wait_for(limit(), "100 `okstra event` processes", || {
        let done: Vec<_> = children
            .iter_mut()
            .filter_map(|c| c.try_wait().unwrap())
            .collect();
        (done.len() == 100).then_some(done)
    });
    assert!(statuses.iter().all(std::process::ExitStatus::success));

    let log = fs::read_to_string(run.join("state/lead-events.jsonl")).unwrap();
    let lines: Vec<Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 100);
    let mut seqs: Vec<u64> = lines.iter().map(|l| l["seq"].as_u64().unwrap()).collect();
    // Appended in sequence order, so the file order already is 1..=100.
    assert_eq!(seqs, (1..=100).collect::<Vec<_>>());
    seqs.dedup();
    assert_eq!(seqs.len(), 100);
    let mut ns: Vec<u64> = lines
        .iter()
        .map(|l| l["fields"]["n"].as_str().unwrap().parse().unwrap())
        .collect();
    ns.sort_unstable();
    assert_eq!(ns, (0..100).collect::<Vec<_>>());
    for line in &lines {
        assert_eq!(line["kind"], "worker-dispatched");
        assert_eq!(line["runId"], "project-analysis-001");
        assert_eq!(line["schemaVersion"], 1);
        assert!(line["ts"].as_str().unwrap().ends_with('Z'));
    }
}

#[test]
fn event_prints_the_progress_line_and_refuses_bad_input() {
    let project = Project::new();
    let run = project.render(&["--task-type", "project-analysis"]);
    okstra()
        .arg("event")
        .arg(&run)
        .args([
            "phase-start",
            "--field",
            "phase=4",
            "--field",
            "note=two words",
        ])
        .assert()
        .success()
        .stdout("PROGRESS: phase-start note=\"two words\" phase=4\n");

    for (args, named) in [
        (vec!["Phase Start"], "`Phase Start`"),
        (vec!["ok", "--field", "novalue"], "`novalue`"),
        (vec!["ok", "--field", "9key=v"], "`9key`"),
        (vec!["ok", "--field", "k=a\nb"], "`k`"),
        // A session id okstra must find a transcript by: never empty.
        (vec!["session", "--field", "sessionId="], "`sessionId`"),
        (
            vec!["session", "--field", "worker=claude-worker"],
            "sessionId",
        ),
    ] {
        let assert = okstra()
            .arg("event")
            .arg(&run)
            .args(&args)
            .assert()
            .code(2)
            .stdout("");
        let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("error: "), "{stderr}");
        assert!(stderr.contains(named), "{stderr} should name {named}");
    }
    let log = fs::read_to_string(run.join("state/lead-events.jsonl")).unwrap();
    assert_eq!(log.lines().count(), 1, "refused events are not written");

    // A torn last line (a writer killed mid-write) does not break numbering.
    fs::write(
        run.join("state/lead-events.jsonl"),
        format!("{log}{{\"seq\":2,\"ki"),
    )
    .unwrap();
    okstra()
        .arg("event")
        .arg(&run)
        .arg("phase-end")
        .assert()
        .success();
    let log = fs::read_to_string(run.join("state/lead-events.jsonl")).unwrap();
    let last: Value = serde_json::from_str(log.lines().last().unwrap()).unwrap();
    assert_eq!(last["seq"], 2);
    assert_eq!(last["kind"], "phase-end");
}
