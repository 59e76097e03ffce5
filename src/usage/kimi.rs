//! kimi-code's session log: the only place kimi records token usage.
//!
//! kimi's `stream-json` output carries none, but its last line names the
//! session (`session.resume_hint`), and the session's agents each log
//! `{"type":"usage.record","model":…,"usage":{"inputOther","output",
//! "inputCacheRead","inputCacheCreation"}}` lines to
//! `$KIMI_CODE_HOME/sessions/<workdir key>/<session id>/agents/<agent>/wire.jsonl`
//! (`KIMI_CODE_HOME` defaults to `~/.kimi-code`). The four buckets are
//! disjoint; compaction calls (`usageScope: "session"`) are real spend and
//! count too. Replays on resume are not re-appended (research/usage.md §5).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::ids::is_valid_id;
use super::lines;
use super::{ModelKey, Source, Tokens, Usage};
use crate::providers::Provider;

/// The folder holding kimi's sessions, from the environment.
pub fn sessions_root(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let home = env("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let folder = Provider::Kimi
        .descriptor()
        .state
        .folder(env, home.as_deref())?;
    Some(folder.join("sessions"))
}

#[derive(Debug, Deserialize)]
struct RecordWire {
    #[serde(rename = "type")]
    kind: Option<String>,
    model: Option<String>,
    usage: Option<UsageWire>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct UsageWire {
    #[serde(default)]
    input_other: u64,
    #[serde(default)]
    output: u64,
    #[serde(default)]
    input_cache_read: u64,
    #[serde(default)]
    input_cache_creation: u64,
}

/// Bytes every usage record line contains.
const NEEDLE: &[u8] = b"usage.record";

/// The usage kimi logged for `session` under `root`; `None` when the
/// session has no log there (or its id is not a plain name).
pub fn session_usage(root: &Path, session: &str, model: Option<&str>) -> Option<Usage> {
    if !is_valid_id(session) {
        return None;
    }
    let mut workdirs: Vec<PathBuf> = std::fs::read_dir(root)
        .ok()?
        .flatten()
        .map(|e| e.path().join(session).join("agents"))
        .filter(|p| p.is_dir())
        .collect();
    workdirs.sort();
    let agents = workdirs.first()?;
    let mut logs: Vec<PathBuf> = std::fs::read_dir(agents)
        .ok()?
        .flatten()
        .map(|e| e.path().join("wire.jsonl"))
        .collect();
    logs.sort();
    let finder = memchr::memmem::Finder::new(NEEDLE);
    let fallback = model.unwrap_or("unknown").to_owned();
    let mut models: BTreeMap<ModelKey, Tokens> = BTreeMap::new();
    let mut read_any = false;
    for log in &logs {
        let Ok(file) = lines::open_regular(log) else {
            continue;
        };
        read_any = true;
        let _ = lines::for_each_line(file, |line| {
            if finder.find(line).is_none() {
                return;
            }
            let Ok(record) = serde_json::from_slice::<RecordWire>(line) else {
                return;
            };
            let (Some("usage.record"), Some(usage)) = (record.kind.as_deref(), record.usage) else {
                return;
            };
            let tokens = Tokens {
                input: usage.input_other,
                cache_read: usage.input_cache_read,
                cache_write: usage.input_cache_creation,
                cache_write_1h: 0,
                output: usage.output,
                reasoning: None,
            };
            let key = ModelKey::new(record.model.unwrap_or_else(|| fallback.clone()));
            models.entry(key).or_default().add(&tokens);
        });
    }
    read_any.then(|| Usage {
        provider: "kimi".to_owned(),
        source: Source::KimiSession,
        reason: None,
        models,
        cli_cost_usd: None,
    })
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn usage_records_of_every_agent_add_up() {
        let dir = tempfile::tempdir().unwrap();
        let agents = dir.path().join("wd-1f2e/k-7f3a/agents");
        fs::create_dir_all(agents.join("main")).unwrap();
        fs::create_dir_all(agents.join("sub-1")).unwrap();
        fs::write(
            agents.join("main/wire.jsonl"),
            concat!(
                r#"{"type":"turn.begin","time":1}"#,
                "\n",
                r#"{"type":"usage.record","model":"kimi-k2.6","usage":{"inputOther":10,"output":5,"inputCacheRead":900,"inputCacheCreation":40},"usageScope":"turn","time":2}"#,
                "\n",
                r#"{"type":"usage.record","model":"kimi-k2.6","usage":{"inputOther":2,"output":1,"inputCacheRead":0,"inputCacheCreation":0},"usageScope":"session","time":3}"#,
                "\n",
            ),
        )
        .unwrap();
        fs::write(
            agents.join("sub-1/wire.jsonl"),
            r#"{"type":"usage.record","usage":{"inputOther":100,"output":50}}"#,
        )
        .unwrap();
        let usage = session_usage(dir.path(), "k-7f3a", Some("kimi-k3")).unwrap();
        assert_eq!(usage.source, Source::KimiSession);
        let k26 = usage.models[&ModelKey::new("kimi-k2.6")];
        assert_eq!(
            (k26.input, k26.cache_read, k26.cache_write, k26.output),
            (12, 900, 40, 6)
        );
        assert_eq!(usage.models[&ModelKey::new("kimi-k3")].input, 100);
        assert!(session_usage(dir.path(), "other", None).is_none());
        assert!(session_usage(dir.path(), "../wd-1f2e", None).is_none());
        assert!(session_usage(&dir.path().join("absent"), "k-7f3a", None).is_none());
    }

    #[test]
    fn the_root_honours_kimi_code_home() {
        let env = |name: &str| (name == "KIMI_CODE_HOME").then(|| "/k".to_owned());
        assert_eq!(sessions_root(&env), Some(PathBuf::from("/k/sessions")));
        let env = |name: &str| (name == "HOME").then(|| "/h".to_owned());
        assert_eq!(
            sessions_root(&env),
            Some(PathBuf::from("/h/.kimi-code/sessions"))
        );
        assert_eq!(sessions_root(&|_| None), None);
    }
}
