//! Kimi Code (`kimi -p … --output-format stream-json`): its lines as
//! events.
//!
//! Each assistant message is printed whole when its step ends (the last
//! one holds the answer); `meta` lines say the version, the retries of a
//! failed request (`turn.step.retrying`) and, last, the session id
//! (`session.resume_hint`). It prints no token usage: its session log has it.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::descriptor::{
    Argv, Crash, Duties, Duty, LoggedUsage, Lookup, ModelNote, NativeModel, Refused, Request, SessionLog, os,
    pointer_prompt,
};
use super::{
    Credentials, Descriptor, Event, Identity, LookAlike, Models, Program, ReadOnly, RetryCause,
    State, Tokens, content_text, number, owned, text,
};

/// The variable of kimi's env-key auth.
const ENV_AUTH: &str = "KIMI_MODEL_API_KEY";

/// Kimi Code.
pub(super) const DESCRIPTOR: Descriptor = Descriptor {
    binary: "kimi",
    program: "kimi-code",
    read_only: ReadOnly::Missing("`-p` forces auto-approval of every tool call"),
    // `KIMI_MODEL_*` env-key auth, `KIMI_CODE_HOME`, telemetry and update
    // switches; Moonshot's platform keys.
    env: &["KIMI_*", "MOONSHOT_*"],
    models: Models {
        worker: "kimi-k2.7-code",
        critic: Some("kimi-k3"),
        report_writer: None,
    },
    model_env: None,
    model_flag: None,
    duties: Duties {
        default_analyser: false,
        report_writer: Duty::Never,
        executor: Duty::Never,
    },
    native_model: NativeModel::AsGiven,
    state: State {
        home: ".kimi-code",
        relocated_by: Some("KIMI_CODE_HOME"),
        file_beside: None,
    },
    landlock: true,
    credentials: Credentials {
        env: &["KIMI_MODEL_API_KEY"],
        file: "config.toml",
    },
    default_slots: 2,
    install: "install Kimi Code: `npm install -g @moonshot-ai/kimi-code` (node 22.19 or newer)",
    log_in: "run `kimi` and `/login`, or set `KIMI_MODEL_API_KEY` with `KIMI_MODEL_NAME`",
    usage_missing: "kimi's stream output carries no token usage (`okstra usage` reads its session log)",
    session_log: Some(SessionLog {
        files: session_files,
        needle: "usage.record",
        usage: usage_record,
    }),
    env_auth: Some(ENV_AUTH),
    no_update_env: &["KIMI_CODE_NO_AUTO_UPDATE"],
    model_note: Some(ModelNote {
        note: model_note,
        fix: "name the model in kimi's `config.toml`, or pass `--worker-model kimi=<alias>`",
    }),
    identity: Identity {
        reads_help: false,
        look_alike,
        installed_as: |_| None,
        refused: Some(Refused {
            program: Program::LegacyKimiCli,
            found: "the archived PyPI kimi-cli, which runs nothing headless",
            expected: "Kimi Code (npm `@moonshot-ai/kimi-code`)",
            fix: "uninstall the archived PyPI `kimi-cli` (`pip uninstall kimi-cli`) and install Kimi Code: `npm install -g @moonshot-ai/kimi-code`",
        }),
        crash: Some(Crash {
            needle: "createZstdDecompress",
            detail: "it crashed at start-up: kimi-code needs node 22.19 or newer",
        }),
    },
    argv,
};

/// kimi-code has no stdin or file prompt and no read-only headless mode
/// (`-p` forces auto-approval); the role cannot change that. With env-key
/// auth, `-m` names an alias from `config.toml`, so the model goes in
/// `KIMI_MODEL_NAME`.
fn argv(request: &Request<'_>) -> Argv {
    let mut env_set = vec![("KIMI_CODE_NO_AUTO_UPDATE", "1".into())];
    let mut args = vec!["-p".into(), pointer_prompt(request.prompt_path)];
    if request.env_auth {
        env_set.push(("KIMI_MODEL_NAME", request.model.to_owned()));
    } else {
        args.extend(["-m".into(), request.model.to_owned()]);
    }
    args.extend(os(&["--output-format", "stream-json"]));
    Argv {
        args,
        prompt_on_stdin: false,
        env_set,
    }
}

/// The archived `PyPI` `kimi-cli` says so, or names a 1.x version.
fn look_alike(version: &str, _help: Option<&str>) -> Option<LookAlike> {
    (version.contains("kimi-cli is no longer maintained") || version.starts_with("kimi, version 1."))
        .then_some(LookAlike {
            program: Program::LegacyKimiCli,
            detail: "this is the archived PyPI `kimi-cli`, which runs nothing headless; install `@moonshot-ai/kimi-code` (npm) instead",
        })
}

/// The session log kimi keeps of `session` in its state folder: each
/// agent's `sessions/<workdir key>/<session>/agents/<agent>/wire.jsonl`
/// (the first workdir holding the session). Its stream carries no usage,
/// but its last line names the session (`session.resume_hint`); replays on
/// resume are not re-appended (research/usage.md §5).
fn session_files(state: &Path, session: &str) -> Vec<PathBuf> {
    let Ok(workdirs) = std::fs::read_dir(state.join("sessions")) else {
        return Vec::new();
    };
    let mut workdirs: Vec<PathBuf> = workdirs
        .flatten()
        .map(|entry| entry.path().join(session).join("agents"))
        .filter(|path| path.is_dir())
        .collect();
    workdirs.sort();
    let Some(Ok(agents)) = workdirs.first().map(std::fs::read_dir) else {
        return Vec::new();
    };
    let mut logs: Vec<PathBuf> = agents
        .flatten()
        .map(|entry| entry.path().join("wire.jsonl"))
        .collect();
    logs.sort();
    logs
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

/// A `{"type":"usage.record","model":…,"usage":{"inputOther","output",
/// "inputCacheRead","inputCacheCreation"}}` line: four disjoint buckets.
/// Compaction calls (`usageScope: "session"`) are real spend and count too.
fn usage_record(line: &[u8]) -> Option<LoggedUsage> {
    let record = serde_json::from_slice::<RecordWire>(line).ok()?;
    let (Some("usage.record"), Some(usage)) = (record.kind.as_deref(), record.usage) else {
        return None;
    };
    let tokens = Tokens {
        input: usage.input_other,
        cache_read: usage.input_cache_read,
        cache_write: usage.input_cache_creation,
        cache_write_1h: 0,
        output: usage.output,
        reasoning: None,
    };
    Some(LoggedUsage {
        model: record.model,
        tokens,
    })
}

/// Bytes of kimi's `config.toml` read to look for a model alias.
const CONFIG_LIMIT: u64 = 256 * 1024;

/// kimi-code's `-m` takes a model *alias* from its `config.toml`, not a
/// model id. A note when okstra's default kimi model is not named there and
/// no env-key auth (which makes the command line name the model in
/// `KIMI_MODEL_NAME` instead) is set.
fn model_note(env: &Lookup<'_>, home: Option<&Path>) -> Option<String> {
    if env(ENV_AUTH).is_some_and(|key| !key.is_empty()) {
        return None;
    }
    let config = DESCRIPTOR
        .state
        .folder(env, home)?
        .join(DESCRIPTOR.credentials.file);
    let model = DESCRIPTOR.models.worker;
    // Only a regular file is opened: a FIFO would block the open itself.
    let named = Some(&config)
        .filter(|path| path.is_file())
        .and_then(|path| std::fs::File::open(path).ok())
        .and_then(|file| {
            let mut text = String::new();
            file.take(CONFIG_LIMIT).read_to_string(&mut text).ok()?;
            Some(text.contains(model))
        });
    match named {
        Some(true) => None,
        _ => Some(format!(
            "kimi's `-m` names a model alias from `{}`, and okstra's default `{model}` is not one there; configure it, pass `--worker-model kimi=<alias>`, or set `KIMI_MODEL_API_KEY` with `KIMI_MODEL_NAME`",
            config.display()
        )),
    }
}

pub(super) fn decode(event: &Value, out: &mut Vec<Event>) {
    match (text(event, "/role"), text(event, "/type").unwrap_or("")) {
        (Some("meta"), "system.version") => out.push(Event::Started {
            session: None,
            model: None,
        }),
        (Some("meta"), "turn.step.retrying") => out.push(retry(event)),
        (Some("meta"), "session.resume_hint") => {
            if let Some(session) = owned(event, "/session_id") {
                out.push(Event::SessionId(session));
            }
            out.push(Event::Final {
                failed: false,
                error: None,
            });
        }
        (Some("assistant"), _) => {
            if let Some(said) = content_text(event.get("content")) {
                out.push(Event::Text(said));
            }
            for call in event
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                out.push(Event::ToolUse {
                    name: text(call, "/function/name").unwrap_or("a tool").to_owned(),
                    argument: None,
                });
            }
        }
        (Some("tool"), _) => out.push(Event::ToolResult),
        _ => {}
    }
}

/// `turn.step.retrying`: its error's name says why.
fn retry(event: &Value) -> Event {
    let name = text(event, "/error_name").unwrap_or("");
    let message = text(event, "/error_message").unwrap_or("");
    let cause = if name.contains("RateLimit") || message.contains("429") {
        RetryCause::RateLimit
    } else if name.contains("Connection") || message.to_lowercase().contains("connection") {
        RetryCause::Network
    } else {
        RetryCause::Other(name.to_owned())
    };
    Event::Retry {
        cause,
        attempt: number(event, "/failed_attempt"),
        max: number(event, "/max_attempts"),
        delay_ms: number(event, "/delay_ms"),
        text: format!("retrying: {name} {message}"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{assert_table, fixture};
    use super::super::{Line, Provider, decode};
    use super::*;

    /// The fake kimi's recorded stream lines (`tests/fixtures/workers/`).
    #[test]
    fn recorded_lines_decode_to_events() {
        assert_table(
            Provider::Kimi,
            &fixture("workers/kimi.sh"),
            &[
                vec![Event::Started {
                    session: None,
                    model: None,
                }],
                vec![Event::Text("Let me look.".into())],
                vec![Event::Text(
                    "=== OKSTRA RESULT BEGIN ===\n## 1. Findings\n| F-001 | kimi sees it | src/a.py:6 |\n=== OKSTRA RESULT END ===".into(),
                )],
                vec![
                    Event::SessionId("k-1".into()),
                    Event::Final {
                        failed: false,
                        error: None,
                    },
                ],
            ],
        );
    }

    /// Retries as measured offline (research/provider-clis.md §6, §7).
    #[test]
    fn retries_name_their_cause() {
        let cases: &[(&str, Event)] = &[
            (
                r#"{"role":"meta","type":"turn.step.retrying","failed_attempt":1,"next_attempt":2,"max_attempts":10,"delay_ms":528.9,"error_name":"APIConnectionError","error_message":"Connection error."}"#,
                Event::Retry {
                    cause: RetryCause::Network,
                    attempt: Some(1.0),
                    max: Some(10.0),
                    delay_ms: Some(528.9),
                    text: "retrying: APIConnectionError Connection error.".into(),
                },
            ),
            (
                r#"{"role":"meta","type":"turn.step.retrying","failed_attempt":2,"max_attempts":10,"delay_ms":39000,"error_name":"RateLimitError","error_message":"429"}"#,
                Event::Retry {
                    cause: RetryCause::RateLimit,
                    attempt: Some(2.0),
                    max: Some(10.0),
                    delay_ms: Some(39000.0),
                    text: "retrying: RateLimitError 429".into(),
                },
            ),
        ];
        for (line, event) in cases {
            assert_eq!(
                decode(Provider::Kimi, line),
                Line::Events(vec![event.clone()]),
                "{line}"
            );
        }
        let tools = r#"{"role":"assistant","content":"","tool_calls":[{"type":"function","function":{"name":"ReadFile"}}]}"#;
        assert_eq!(
            decode(Provider::Kimi, tools),
            Line::Events(vec![
                Event::Text(String::new()),
                Event::ToolUse {
                    name: "ReadFile".into(),
                    argument: None
                }
            ])
        );
    }

    #[test]
    fn kimi_notes_a_default_model_missing_from_its_config() {
        let home = tempfile::tempdir().unwrap();
        let none = |_: &str| None;
        assert!(model_note(&none, Some(home.path())).is_some());
        std::fs::create_dir(home.path().join(".kimi-code")).unwrap();
        std::fs::write(
            home.path().join(".kimi-code/config.toml"),
            "default_model = \"kimi-k2.7-code\"\n",
        )
        .unwrap();
        assert!(model_note(&none, Some(home.path())).is_none());
        let keyed = |name: &str| (name == "KIMI_MODEL_API_KEY").then(|| "k".to_owned());
        assert!(model_note(&keyed, None).is_none());
    }
}
