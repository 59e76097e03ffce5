//! Unit tests of the Claude transcript reader.

use std::fs;

use super::*;
use crate::usage::ids::is_valid_id;
use crate::usage::price::Prices;

const LEAD: &str = "11111111-2222-4333-8444-555555555555";

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/usage")
        .join(name)
}

/// A projects root with the lead's transcript and one sub-agent's.
fn projects(project_root: &Path) -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let root = home.path().join("projects");
    let folder = root.join(slug(project_root));
    fs::create_dir_all(folder.join(LEAD).join("subagents")).unwrap();
    fs::copy(
        fixture("claude-session.jsonl"),
        folder.join(format!("{LEAD}.jsonl")),
    )
    .unwrap();
    fs::copy(
        fixture("claude-subagent.jsonl"),
        folder.join(LEAD).join("subagents/agent-a7c3.jsonl"),
    )
    .unwrap();
    // Another project's folder is searched after the project's own.
    fs::create_dir_all(root.join("-elsewhere")).unwrap();
    (home, root)
}

fn read(found: &Found) -> Ledger {
    let mut ledger = Ledger::default();
    for (owner, path) in &found.files {
        ledger.read(owner, path).unwrap();
    }
    ledger
}

#[test]
fn slugs_and_ids_follow_claude_code() {
    assert_eq!(slug(Path::new("/home/me/my.proj_x")), "-home-me-my-proj-x");
    assert!(is_valid_id(LEAD));
    for bad in ["", "../x", "a/b", "a b", &"a".repeat(129)] {
        assert!(!is_valid_id(bad), "{bad:?}");
    }
}

#[test]
fn roots_honour_claude_config_dir() {
    let env = |name: &str| match name {
        "CLAUDE_CONFIG_DIR" => Some("/a, /b".to_owned()),
        _ => None,
    };
    assert_eq!(
        projects_roots(&env),
        vec![PathBuf::from("/a/projects"), PathBuf::from("/b/projects")]
    );
    let env = |name: &str| (name == "HOME").then(|| "/h".to_owned());
    assert_eq!(
        projects_roots(&env),
        vec![
            PathBuf::from("/h/.claude/projects"),
            PathBuf::from("/h/.config/claude/projects")
        ]
    );
}

#[test]
fn transcript_lines_are_deduplicated_like_ccusage() {
    let project = Path::new("/tmp/proj");
    let (_home, root) = projects(project);
    let found = find(&[root], project, &[LEAD.to_owned()], &[]);
    assert!(found.missing.is_empty());
    assert_eq!(found.files.len(), 2);
    let ledger = read(&found);
    let lead = ledger.usage(&None).unwrap();
    let opus = Tokens {
        input: 13,
        cache_read: 22_237,
        cache_write: 2_285,
        cache_write_1h: 2_285,
        output: 280,
        reasoning: None,
    };
    let fast = Tokens {
        input: 40,
        cache_read: 24_422,
        cache_write: 1_000,
        cache_write_1h: 0,
        output: 500,
        reasoning: None,
    };
    let haiku = Tokens {
        input: 900,
        output: 12,
        ..Tokens::default()
    };
    let sonnet = Tokens {
        input: 100,
        cache_write: 5_000,
        output: 3_000,
        ..Tokens::default()
    };
    let expected = BTreeMap::from([
        (ModelKey::new("claude-opus-4-8"), opus),
        (
            ModelKey {
                id: "claude-opus-4-8".into(),
                fast: true,
            },
            fast,
        ),
        (ModelKey::new("claude-haiku-4-5-20251001"), haiku),
        (ModelKey::new("claude-sonnet-4-6"), sonnet),
    ]);
    assert_eq!(lead.models, expected);
    assert_eq!(lead.source, Source::ClaudeJsonl);
    // Priced per model, each rounded to the microdollar: opus 0.041034
    // (1h writes at $10), fast opus 2 × 0.031161, haiku 0.00096, sonnet
    // 100 × 3 + 5000 × 3.75 + 3000 × 15 = 0.064050.
    let record = lead.priced(&Prices::embedded());
    assert_eq!(record.cost_usd, Some(0.168_366));
    assert_eq!(record.input_tokens, Some(13 + 40 + 900 + 100));
}

#[test]
fn a_claimed_sub_agent_is_the_workers_not_the_leads() {
    let project = Path::new("/tmp/proj");
    let (_home, root) = projects(project);
    let workers = [("claude-worker".to_owned(), "a7c3".to_owned())];
    let found = find(&[root], project, &[LEAD.to_owned()], &workers);
    assert_eq!(found.files.len(), 2);
    assert_eq!(found.files[0].0.as_deref(), Some("claude-worker"));
    let ledger = read(&found);
    let worker = ledger.usage(&Some("claude-worker".into())).unwrap();
    assert_eq!(worker.tokens().output, 3_000);
    let lead = ledger.usage(&None).unwrap();
    assert!(
        !lead
            .models
            .contains_key(&ModelKey::new("claude-sonnet-4-6"))
    );
}

#[test]
fn unknown_ids_are_reported_missing() {
    let project = Path::new("/tmp/proj");
    let (_home, root) = projects(project);
    let workers = [("w".to_owned(), "nope".to_owned())];
    let found = find(
        &[root.clone(), root.join("absent")],
        project,
        &["gone".to_owned()],
        &workers,
    );
    assert!(found.files.is_empty());
    assert_eq!(
        found.missing,
        vec![
            (None, "gone".to_owned()),
            (Some("w".to_owned()), "nope".to_owned())
        ]
    );
}

#[test]
fn a_session_found_in_another_projects_folder_counts() {
    let project = Path::new("/tmp/proj");
    let (_home, root) = projects(project);
    fs::copy(
        fixture("claude-subagent.jsonl"),
        root.join("-elsewhere/s2.jsonl"),
    )
    .unwrap();
    let found = find(&[root], project, &["s2".to_owned()], &[]);
    assert_eq!(found.files.len(), 1);
    assert_eq!(read(&found).usage(&None).unwrap().tokens().input, 100);
}
