//! A CLI's own session log: where the usage of a CLI whose stream carries
//! none is read ([`crate::providers::Descriptor::session_log`]). The stream's last line
//! names the session; the CLI's file says where its log files are and what
//! one usage line holds, and this reads them in bounded memory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::ids::is_valid_id;
use super::lines;
use super::{ModelKey, Source, Tokens, Usage};
use crate::providers::Provider;

/// `provider`'s state folder, from the environment, when it keeps its usage
/// in a session log.
pub fn state_folder(provider: Provider, env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let descriptor = provider.descriptor();
    descriptor.session_log?;
    let home = env("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    descriptor.state.folder(env, home.as_deref())
}

/// The usage `provider` logged for `session` in its state folder `state`;
/// `None` when it keeps no session log, the session has no log there, or
/// its id is not a plain name. `model` is named when a line names none.
pub fn usage(
    provider: Provider,
    state: &Path,
    session: &str,
    model: Option<&str>,
) -> Option<Usage> {
    let log = provider.descriptor().session_log?;
    if !is_valid_id(session) {
        return None;
    }
    let finder = memchr::memmem::Finder::new(log.needle.as_bytes());
    let fallback = model.unwrap_or("unknown").to_owned();
    let mut models: BTreeMap<ModelKey, Tokens> = BTreeMap::new();
    let mut read_any = false;
    for file in (log.files)(state, session) {
        let Ok(file) = lines::open_regular(&file) else {
            continue;
        };
        read_any = true;
        let _ = lines::for_each_line(file, |line| {
            if finder.find(line).is_none() {
                return;
            }
            let Some(logged) = (log.usage)(line) else {
                return;
            };
            let key = ModelKey::new(logged.model.unwrap_or_else(|| fallback.clone()));
            models.entry(key).or_default().add(&logged.tokens);
        });
    }
    read_any.then(|| Usage {
        provider: provider.as_str().to_owned(),
        source: Source::SessionLog,
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
        let agents = dir.path().join("sessions/wd-1f2e/k-7f3a/agents");
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
        let kimi = Provider::Kimi;
        let usage = super::usage(kimi, dir.path(), "k-7f3a", Some("kimi-k3")).unwrap();
        assert_eq!(usage.source, Source::SessionLog);
        assert_eq!(usage.provider, "kimi");
        let k26 = usage.models[&ModelKey::new("kimi-k2.6")];
        assert_eq!(
            (k26.input, k26.cache_read, k26.cache_write, k26.output),
            (12, 900, 40, 6)
        );
        assert_eq!(usage.models[&ModelKey::new("kimi-k3")].input, 100);
        assert!(super::usage(kimi, dir.path(), "other", None).is_none());
        assert!(super::usage(kimi, dir.path(), "../wd-1f2e", None).is_none());
        assert!(super::usage(kimi, &dir.path().join("absent"), "k-7f3a", None).is_none());
        assert!(super::usage(Provider::Codex, dir.path(), "k-7f3a", None).is_none());
    }

    #[test]
    fn the_folder_honours_kimi_code_home() {
        let env = |name: &str| (name == "KIMI_CODE_HOME").then(|| "/k".to_owned());
        assert_eq!(
            state_folder(Provider::Kimi, &env),
            Some(PathBuf::from("/k"))
        );
        let env = |name: &str| (name == "HOME").then(|| "/h".to_owned());
        assert_eq!(
            state_folder(Provider::Kimi, &env),
            Some(PathBuf::from("/h/.kimi-code"))
        );
        assert_eq!(state_folder(Provider::Kimi, &|_| None), None);
        assert_eq!(state_folder(Provider::Claude, &env), None);
    }
}
