//! Claude Code session transcripts: the lead's own tokens and those of
//! `native-session` Claude workers. Claude Code is the lead *host* here
//! (its transcripts), which is why this file, outside `crate::providers`,
//! names it.
//!
//! A session's transcript is `<projects>/<cwd slug>/<session id>.jsonl`
//! (`<projects>` is `$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`
//! or `~/.config/claude/projects`), its sub-agents' are
//! `<session id>/subagents/agent-<agent id>.jsonl` beside it. The lead
//! records the ids with `okstra event <run> session --field sessionId=<id>`
//! (plus `--field worker=<dispatch name>` for a native worker's session or
//! agent id). The lead is charged its own transcript and every sub-agent
//! transcript of its session that no worker claimed (wrapper agents are the
//! lead's orchestration cost).
//!
//! Claude Code writes one line per content block, each repeating the
//! message's usage, and sidechain replays repeat a parent's message id with
//! a new request id; so lines are deduplicated as ccusage does: by
//! (message id, request id), and by message id alone when either line is a
//! sidechain; of two duplicates a non-sidechain line wins, else the larger.
//! Files are streamed; memory grows with distinct messages, not bytes.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::lines;
use super::{ModelKey, Source, Tokens, Usage};
use crate::providers::ClaudeUsage;

/// Who a transcript's tokens are charged to: the lead (`None`) or a worker.
type Owner = Option<String>;

/// The transcript roots to search, from the environment.
pub fn projects_roots(env: &dyn Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    if let Some(dirs) = env("CLAUDE_CONFIG_DIR").filter(|d| !d.trim().is_empty()) {
        return dirs
            .split(',')
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(|d| Path::new(d).join("projects"))
            .collect();
    }
    let Some(home) = env("HOME").filter(|h| !h.is_empty()) else {
        return Vec::new();
    };
    let config = env("XDG_CONFIG_HOME")
        .filter(|d| !d.is_empty())
        .map_or_else(|| Path::new(&home).join(".config"), PathBuf::from);
    vec![
        Path::new(&home).join(".claude/projects"),
        config.join("claude/projects"),
    ]
}

/// Claude Code's folder name for a working directory: every character but
/// ASCII letters and digits becomes `-`.
pub fn slug(cwd: &Path) -> String {
    cwd.to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// The transcripts found for the recorded ids, in the order to read them
/// (workers first, so their lines are theirs when the lead's repeat them).
#[derive(Debug, Default)]
pub struct Found {
    pub files: Vec<(Owner, PathBuf)>,
    /// Recorded ids with no transcript, with their owner.
    pub missing: Vec<(Owner, String)>,
}

/// Find the transcripts of the lead sessions `lead_ids` and the worker
/// sessions or agents `workers` (dispatch name, id) under `roots`,
/// preferring the project's own folder.
pub fn find(
    roots: &[PathBuf],
    project_root: &Path,
    lead_ids: &[String],
    workers: &[(String, String)],
) -> Found {
    let mut folders: Vec<PathBuf> = Vec::new();
    let own = slug(project_root);
    for root in roots {
        folders.push(root.join(&own));
        if let Ok(entries) = std::fs::read_dir(root) {
            let mut others: Vec<PathBuf> = entries
                .flatten()
                .filter(|e| e.file_name() != own.as_str())
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect();
            others.sort();
            folders.extend(others);
        }
    }
    let main_file = |id: &str| {
        folders
            .iter()
            .map(|folder| folder.join(format!("{id}.jsonl")))
            .find(|path| path.is_file())
    };
    let mut found = Found::default();
    let mut lead_sessions: Vec<PathBuf> = Vec::new();
    for id in lead_ids {
        match main_file(id) {
            Some(path) => {
                lead_sessions.push(path.with_extension(""));
                found.files.push((None, path));
            }
            None => found.missing.push((None, id.clone())),
        }
    }
    let mut claimed: Vec<PathBuf> = Vec::new();
    for (worker, id) in workers {
        let agent = lead_sessions.iter().find_map(|session| {
            let subagents = session.join("subagents");
            [format!("agent-{id}.jsonl"), format!("{id}.jsonl")]
                .into_iter()
                .map(|name| subagents.join(name))
                .find(|path| path.is_file())
        });
        match agent.or_else(|| main_file(id)) {
            Some(path) => {
                claimed.push(path.clone());
                found.files.insert(0, (Some(worker.clone()), path));
            }
            None => found.missing.push((Some(worker.clone()), id.clone())),
        }
    }
    for session in &lead_sessions {
        let Ok(entries) = std::fs::read_dir(session.join("subagents")) else {
            continue;
        };
        let mut agents: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .filter(|p| !claimed.contains(p))
            .collect();
        agents.sort();
        found.files.extend(agents.into_iter().map(|p| (None, p)));
    }
    found
}

/// The fields of a transcript line that carry usage.
#[derive(Debug, Deserialize)]
struct LineWire {
    #[serde(rename = "type")]
    kind: Option<String>,
    #[serde(rename = "requestId")]
    request_id: Option<String>,
    #[serde(rename = "isSidechain", default)]
    is_sidechain: bool,
    message: Option<MessageWire>,
}

#[derive(Debug, Deserialize)]
struct MessageWire {
    id: Option<String>,
    model: Option<String>,
    usage: Option<ClaudeUsage>,
}

/// One kept (deduplicated) assistant message.
#[derive(Debug)]
struct Entry {
    owner: usize,
    model: usize,
    fast: bool,
    sidechain: bool,
    tokens: Tokens,
}

/// Deduplicated assistant messages across every transcript of a run.
#[derive(Debug, Default)]
pub struct Ledger {
    owners: Vec<Owner>,
    models: Vec<String>,
    entries: Vec<Entry>,
    /// (message id, request id) → entry.
    by_request: HashMap<u64, usize>,
    /// message id → first entry, for the sidechain rule.
    by_message: HashMap<u64, usize>,
    /// Lines longer than the reader keeps, skipped.
    pub skipped_lines: u64,
}

fn hash(parts: &[&str]) -> u64 {
    let mut hasher = DefaultHasher::new();
    parts.hash(&mut hasher);
    hasher.finish()
}

/// Bytes every usage-bearing line contains (a cheap pre-filter before JSON).
const USAGE_NEEDLE: &[u8] = b"\"usage\"";

impl Ledger {
    fn intern(list: &mut Vec<String>, value: &str) -> usize {
        list.iter().position(|v| v == value).unwrap_or_else(|| {
            list.push(value.to_owned());
            list.len() - 1
        })
    }

    fn owner_index(&mut self, owner: &Owner) -> usize {
        self.owners
            .iter()
            .position(|o| o == owner)
            .unwrap_or_else(|| {
                self.owners.push(owner.clone());
                self.owners.len() - 1
            })
    }

    /// Stream one transcript into the ledger, charged to `owner`.
    pub fn read(&mut self, owner: &Owner, path: &Path) -> std::io::Result<()> {
        let owner = self.owner_index(owner);
        let file = lines::open_regular(path)?;
        let finder = memchr::memmem::Finder::new(USAGE_NEEDLE);
        let pass = lines::for_each_line(file, |line| {
            if finder.find(line).is_some() {
                self.feed(owner, line);
            }
        })?;
        self.skipped_lines += pass.skipped;
        Ok(())
    }

    fn feed(&mut self, owner: usize, line: &[u8]) {
        let Ok(wire) = serde_json::from_slice::<LineWire>(line) else {
            return;
        };
        if wire.kind.as_deref() != Some("assistant") {
            return;
        }
        let Some(message) = wire.message else { return };
        let (Some(id), Some(model), Some(usage)) = (message.id, message.model, message.usage)
        else {
            return;
        };
        if id.is_empty() || model.is_empty() || model == "<synthetic>" {
            return;
        }
        let tokens = usage.tokens();
        let request = wire.request_id.unwrap_or_default();
        let key = hash(&[&id, &request]);
        let message_key = hash(&[&id]);
        let existing = self.by_request.get(&key).copied().or_else(|| {
            self.by_message
                .get(&message_key)
                .copied()
                .filter(|&at| wire.is_sidechain || self.entries[at].sidechain)
        });
        let model = Ledger::intern(&mut self.models, &model);
        let fresh = Entry {
            owner,
            model,
            fast: usage.is_fast(),
            sidechain: wire.is_sidechain,
            tokens,
        };
        let Some(at) = existing else {
            self.entries.push(fresh);
            let at = self.entries.len() - 1;
            self.by_request.insert(key, at);
            self.by_message.entry(message_key).or_insert(at);
            return;
        };
        let kept = &mut self.entries[at];
        let replace = if kept.sidechain == fresh.sidechain {
            fresh.tokens.total() > kept.tokens.total()
        } else {
            kept.sidechain
        };
        if replace {
            // The first reader keeps the message (workers are read first).
            let owner = kept.owner;
            *kept = Entry { owner, ..fresh };
        }
    }

    /// The usage charged to `owner`; `None` when nothing was read for it.
    pub fn usage(&self, owner: &Owner) -> Option<Usage> {
        let index = self.owners.iter().position(|o| o == owner)?;
        let mut models: BTreeMap<ModelKey, Tokens> = BTreeMap::new();
        for entry in self.entries.iter().filter(|e| e.owner == index) {
            let key = ModelKey {
                id: self.models[entry.model].clone(),
                fast: entry.fast,
            };
            models.entry(key).or_default().add(&entry.tokens);
        }
        Some(Usage {
            provider: "claude".to_owned(),
            source: Source::ClaudeJsonl,
            reason: None,
            models,
            cli_cost_usd: None,
        })
    }
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
