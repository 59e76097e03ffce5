//! Convergence: anchors checked against the run's snapshot of the project
//! (never the live tree), only claims reviewed, overlapping claims presented
//! once with a verdict each, and verdict anchors in adversarial runs.

use std::os::unix::fs::symlink;

use super::*;
use crate::support::{copy_dir, read_json};

fn bounded(args: &[&str]) -> Out {
    let output = okstra().args(args).output().unwrap();
    Out {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

const INVENTORY: &str = "\
def reserve(self, sku, quantity):
    # Check first, then take the lock.
    if self.available(sku) < quantity:
        return False

    with self._lock:
        self._reserved[sku] = self._reserved.get(sku, 0) + quantity
    return True
";

impl RunDir {
    fn root(&self) -> &Path {
        self.dir.ancestors().nth(6).unwrap()
    }

    fn write(&self, file: &str, bytes: &[u8]) {
        let path = self.root().join(file);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, bytes).unwrap();
    }

    /// `okstra items --json`, each item by its id.
    fn items(&self) -> Value {
        let out = bounded(&["items", self.path(), "--json"]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let listed: Value = serde_json::from_str(&out.stdout).unwrap();
        let mut by_id = serde_json::Map::new();
        for item in listed["items"].as_array().unwrap() {
            by_id.insert(item["itemId"].as_str().unwrap().to_owned(), item.clone());
        }
        Value::Object(by_id)
    }
}

fn git(root: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .unwrap();
    assert!(status.status.success(), "git {args:?}: {status:?}");
}

/// claude's result: one claim per way an anchor can resolve, and a
/// description.
const CLAUDE: &str = "\
# claude

## 2. Components

| ID | Component | Path |
|---|---|---|
| C-1 | Inventory | src/inv.py:1 |

## 5. Findings

| ID | Finding | Evidence |
|---|---|---|
| F-1 | checks outside the lock | src/inv.py:3 `if self.available(sku) < quantity:` |
| F-2 | returns True | src/inv.py:1 `return True` |
| F-3 | past the end | src/inv.py:99 |
| F-4 | outside the project | ../../etc/passwd:1 |
| F-5 | a symlink out | src/out.py:1 |
| F-6 | a binary file | logo.png:1 |
| F-7 | no anchor at all | it just is |
";

#[test]
fn anchors_are_checked_against_the_snapshot_not_the_live_tree() {
    for in_git in [false, true] {
        let run = RunDir::render("claude,codex,report-writer");
        run.write("src/inv.py", INVENTORY.as_bytes());
        run.write("logo.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
        symlink("/etc/hostname", run.root().join("src/out.py")).unwrap();
        if in_git {
            fs::write(run.root().join(".gitignore"), ".okstra/\n").unwrap();
            git(run.root(), &["init", "-q"]);
            git(run.root(), &["add", "-A"]);
            git(run.root(), &["commit", "-q", "-m", "one"]);
        }
        run.result("claude", CLAUDE);
        run.result("codex", "## 5. Findings\n\n- [1] retries (src/inv.py:7)\n");
        let items = run.items();
        let status = |id: &str| items[id]["anchorStatus"].as_str().unwrap().to_owned();
        let reason = |id: &str| {
            items[id]["anchors"][0]["reason"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        };
        assert_eq!(status("claude:F-1"), "verified", "git {in_git}");
        assert_eq!(status("claude:F-2"), "moved");
        assert_eq!(items["claude:F-2"]["anchors"][0]["foundAt"], "8");
        assert_eq!(items["claude:F-2"]["anchors"][0]["lines"], "1");
        assert_eq!(status("claude:F-3"), "unanchored");
        assert_eq!(
            reason("claude:F-3"),
            "line 99 is past the end of `src/inv.py` (8 lines)"
        );
        assert_eq!(
            reason("claude:F-4"),
            "`../../etc/passwd` leads outside the project"
        );
        assert_eq!(
            reason("claude:F-5"),
            "`src/out.py` leads outside the project"
        );
        assert_eq!(reason("claude:F-6"), "`logo.png` is a binary file");
        assert_eq!(status("claude:F-7"), "none");
        assert_eq!(items["claude:F-7"]["claim"], true);
        assert_eq!(items["claude:C-1"]["claim"], false, "a description");
        assert!(
            items["claude:F-1"]["anchors"][0]["excerptSha256"]
                .as_str()
                .unwrap()
                .len()
                == 64
        );
        let record = read_json(&run.dir.join("state/snapshot.json"));
        assert_eq!(record["kind"], if in_git { "git" } else { "directory" });
        assert_eq!(record["taken"], "first-check");

        // The user edits the file after the snapshot; a worker that cites
        // the edit is checked against the snapshot, where it is not.
        run.write(
            "src/inv.py",
            INVENTORY.replace("< quantity", "<= quantity").as_bytes(),
        );
        run.result("claude", &CLAUDE.replace("< quantity:`", "<= quantity:`"));
        let items = run.items();
        assert_eq!(
            items["claude:F-1"]["anchors"][0]["reason"], "the excerpt is not in `src/inv.py`",
            "git {in_git}"
        );
        // codex's result did not change: its anchors were not checked again.
        assert_eq!(items["codex:1"]["anchorStatus"], "verified");
    }
}

#[test]
fn only_claims_are_reviewed_and_overlapping_ones_are_presented_once() {
    let run = RunDir::render("claude,codex,kimi,report-writer");
    run.write("src/inv.py", INVENTORY.as_bytes());
    let describe = "## 2. Components\n\n| ID | Component | Path |\n|---|---|---|\n\
                    | C-1 | Inventory | src/inv.py:1 |\n| C-2 | Lock | src/inv.py:6 |\n\n";
    run.result(
        "claude",
        &format!(
            "{describe}## 5. Findings\n\n| ID | Finding | Evidence |\n|---|---|---|\n\
             | F-1 | the check runs outside the lock | src/inv.py:3-7 `if self.available(sku) < quantity:` |\n"
        ),
    );
    run.result(
        "codex",
        &format!(
            "{describe}## 5. Findings\n\n- [1.1] two reserves can both pass the check \
             (src/inv.py:6 `with self._lock:`)\n"
        ),
    );
    run.result(
        "kimi",
        &format!(
            "{describe}## 5. Findings\n\n- [K-1] it returns True (src/inv.py:8 `return True`)\n"
        ),
    );
    let plan = run.plan(1, &[]);
    // The six component rows are descriptions: not one is reviewed.
    assert_eq!(plan["descriptive"], 6);
    let mut planned: Vec<&str> = plan["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["itemId"].as_str().unwrap())
        .collect();
    planned.sort_unstable();
    assert_eq!(planned, ["claude:F-1", "codex:1.1", "kimi:K-1"]);
    assert_eq!(
        plan["groups"],
        json!([{"id": "G-1", "items": ["claude:F-1", "codex:1.1"], "at": "src/inv.py:3-7"}])
    );
    // kimi reported neither: one entry, one label (and one verdict) each.
    let kimi = reviewer(&plan, "kimi");
    let labels: Vec<(&str, &str)> = kimi["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["label"].as_str().unwrap(), l["itemId"].as_str().unwrap()))
        .collect();
    assert_eq!(labels.len(), 2, "{labels:?}");
    assert!(labels.iter().all(|(label, _)| label.starts_with("Item 1")));
    let prompt = fs::read_to_string(kimi["promptPath"].as_str().unwrap()).unwrap();
    assert!(
        prompt.contains("### Items 1a–1b: claims at overlapping lines (`src/inv.py:3-7`)"),
        "{prompt}"
    );
    assert_eq!(prompt.matches("#### Item 1").count(), 2);
    // codex found the same thing itself, and still reviews claude's claim.
    assert_eq!(batch(&plan, "codex"), ["claude:F-1", "kimi:K-1"]);
    assert_eq!(batch(&plan, "claude"), ["codex:1.1", "kimi:K-1"]);

    let label = |worker: &str, item: &str| {
        reviewer(&plan, worker)["labels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["itemId"] == item)
            .unwrap()["label"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (first, second) = (label("kimi", "claude:F-1"), label("kimi", "codex:1.1"));
    write_verdicts(
        &kimi["resultPath"],
        &[
            (
                &first,
                "AGREE",
                "src/inv.py:3 `if self.available(sku) < quantity:`",
                "",
            ),
            (&second, "AGREE", &format!("same claim as {first}"), ""),
        ],
    );
    for (worker, other) in [("claude", "codex:1.1"), ("codex", "claude:F-1")] {
        write_verdicts(
            &reviewer(&plan, worker)["resultPath"],
            &[
                (
                    &label(worker, other),
                    "AGREE",
                    "src/inv.py:6 `with self._lock:`",
                    "",
                ),
                (
                    &label(worker, "kimi:K-1"),
                    "AGREE",
                    "src/inv.py:8 `return True`",
                    "",
                ),
            ],
        );
    }
    run.record(1);
    let ledger = run.ledger();
    let codex = item(&ledger, "codex:1.1");
    let from_kimi = codex["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["reviewer"] == "kimi")
        .unwrap();
    assert_eq!(from_kimi["sameAs"], "claude:F-1");
    assert_eq!(
        from_kimi["evidence"],
        "src/inv.py:3 `if self.available(sku) < quantity:`"
    );
    assert_eq!(from_kimi["anchorStatus"], "verified");
    // kimi, the one reviewer who saw both, said they are the same claim:
    // one finding, found by both owners.
    assert_eq!(codex["mergedWith"], json!(["claude:F-1"]));
    assert_eq!(
        item(&ledger, "claude:F-1")["mergedWith"],
        json!(["codex:1.1"])
    );
    assert!(codex.get("corroboratedBy").is_none(), "{codex}");
    // Each member keeps its own verdicts; a finder's review of the other
    // member is recorded, but only kimi's counts.
    assert_eq!(
        item(&ledger, "claude:F-1")["verdicts"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(codex["finalClass"], "full-consensus");
}

#[test]
fn an_unresolvable_verdict_anchor_does_not_count() {
    let run = RunDir::render("claude,codex,kimi,report-writer");
    run.write("src/inv.py", INVENTORY.as_bytes());
    run.result(
        "claude",
        "## 5. Findings\n\n- [F-1] it returns True (src/inv.py:8 `return True`)\n",
    );
    run.result(
        "codex",
        "## 5. Findings\n\n- [1] the lock (src/inv.py:6 `with self._lock:`)\n",
    );
    run.result("kimi", "## 5. Findings\n\n- [K] the check (src/inv.py:3)\n");
    let plan = run.plan(1, &[]);
    for (worker, verdict, evidence) in [
        (
            "codex",
            "DISAGREE",
            "src/inv.py:40 `return None` is what it does",
        ),
        // An anchor of kimi's own: the lines before the claim's.
        (
            "kimi",
            "AGREE",
            "src/inv.py:6 `with self._lock:` then it returns",
        ),
    ] {
        let reviewer = reviewer(&plan, worker);
        let rows: Vec<(String, &str, &str, &str)> = reviewer["labels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                let mine = l["itemId"] == "claude:F-1";
                (
                    l["label"].as_str().unwrap().to_owned(),
                    if mine { verdict } else { "AGREE" },
                    if mine {
                        evidence
                    } else {
                        "src/inv.py:1 `def reserve`"
                    },
                    "",
                )
            })
            .collect();
        let rows: Vec<(&str, &str, &str, &str)> = rows
            .iter()
            .map(|(l, v, e, a)| (l.as_str(), *v, *e, *a))
            .collect();
        write_verdicts(&reviewer["resultPath"], &rows);
    }
    run.record(1);
    let ledger = run.ledger();
    let claim = item(&ledger, "claude:F-1");
    let disagree = claim["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["reviewer"] == "codex")
        .unwrap();
    assert_eq!(disagree["anchorStatus"], "unanchored");
    assert_eq!(
        disagree["anchors"][0]["reason"],
        "line 40 is past the end of `src/inv.py` (8 lines), and the excerpt is not in `src/inv.py`"
    );
    // Its DISAGREE is not counted: kimi's checked AGREE decides.
    assert_eq!(claim["finalClass"], "full-consensus");
    assert_eq!(claim["open"], false);
}

/// Every anchor `examples/seeded-shop/expected-findings.json` documents
/// resolves in that project (so its line numbers cannot drift from the
/// code), and `benches/seeded_score.py` matches claims to the seeded
/// defects by those anchors.
#[test]
fn the_seeded_examples_documented_anchors_resolve_and_score() {
    let run = RunDir::render("claude,codex,report-writer");
    let example = repo_root().join("examples/seeded-shop");
    copy_dir(&example, run.root());
    let expected = read_json(&example.join("expected-findings.json"));
    let entries: Vec<&Value> = expected["defects"]
        .as_array()
        .unwrap()
        .iter()
        .chain(expected["falseLeads"].as_array().unwrap())
        .collect();
    let mut result = "## 5. Findings\n\n| ID | Finding | Evidence |\n|---|---|---|\n".to_owned();
    for entry in &entries {
        let anchors: Vec<String> = entry["anchors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().replace('|', "\\|"))
            .collect();
        let _ = writeln!(
            result,
            "| {} | {} | {} |",
            entry["id"].as_str().unwrap(),
            entry["title"].as_str().unwrap(),
            anchors.join("; ")
        );
    }
    run.result("claude", &result);
    run.result(
        "codex",
        "## 5. Findings\n\n- [1] the cart (shop/cart.py:31)\n",
    );
    let items = run.items();
    for entry in &entries {
        let id = format!("claude:{}", entry["id"].as_str().unwrap());
        assert_eq!(items[&id]["anchorStatus"], "verified", "{}", items[&id]);
        assert_eq!(
            items[&id]["anchors"].as_array().unwrap().len(),
            entry["anchors"].as_array().unwrap().len(),
            "{id}"
        );
    }
    let out = bounded(&["converge", "classify", run.path()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let score = assert_cmd::Command::new("python3")
        .arg(repo_root().join("benches/seeded_score.py"))
        .arg(&run.dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&score.stdout);
    assert!(score.status.success(), "{text}");
    assert!(text.contains("found 7/7, confirmed 0/7"), "{text}");
    assert!(
        text.contains("S2 (easy) average_price divides by zero on an empty cart: worker-unique; found by claude, codex"),
        "{text}"
    );
    assert!(text.contains("L1 (false lead)"), "{text}");
}

/// A snapshot record that cannot be read is an error naming it, never a
/// reason to take another snapshot behind the run's back.
#[test]
fn a_broken_snapshot_record_is_refused_not_replaced() {
    let run = RunDir::render("claude,codex,report-writer");
    run.write("src/inv.py", INVENTORY.as_bytes());
    run.result(
        "claude",
        "## 5. Findings\n\n- [F-1] x (src/inv.py:8 `return True`)\n",
    );
    fs::create_dir_all(run.dir.join("state")).unwrap();
    fs::write(
        run.dir.join("state/snapshot.json"),
        "{\"schemaVersion\": 1}",
    )
    .unwrap();
    let out = bounded(&["items", run.path(), "--json"]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(
        out.stderr
            .contains("state/snapshot.json` is not a snapshot record okstra can read"),
        "{}",
        out.stderr
    );
    assert_eq!(
        fs::read_to_string(run.dir.join("state/snapshot.json")).unwrap(),
        "{\"schemaVersion\": 1}"
    );
}
