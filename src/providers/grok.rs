//! grok: xAI's Grok Build (`--output-format streaming-json`) and the
//! community vibe-kit `grok`, which prints its messages as JSON lines only
//! at the end. Their lines as events.
//!
//! Grok Build sends the answer as `text` pieces, per-response usage on
//! `usage` lines and its totals, session id and cost on `end` (an all-zero
//! usage there means unknown). vibe-kit prints `role: assistant` messages
//! and reports an API failure as one of them, exiting 0.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::descriptor::{Argv, Duties, Duty, NativeModel, Request, pointer_prompt};
use super::{
    Credentials, Descriptor, ErrorKind, Event, Identity, LookAlike, ModelTokens, Models, Program,
    ReadOnly, Scope, State, Tokens, UsageReport, content_text, owned, text, usage_of,
};

/// How vibe-kit grok starts the message it prints for an API failure.
const VIBE_KIT_ERROR: &str = "Sorry, I encountered an error";

/// Why an `end` line's usage does not count.
const ZERO_END: &str =
    "the grok `end` line reported all-zero usage, which Grok Build uses for unknown";

/// xAI's Grok Build, or the vibe-kit `grok` under the same name.
pub(super) const DESCRIPTOR: Descriptor = Descriptor {
    binary: "grok",
    program: "grok-build",
    read_only: ReadOnly::Missing(
        "the vibe-kit `grok` that npm installs under the same name always auto-approves",
    ),
    // Grok Build reads `XAI_API_KEY`; vibe-kit `GROK_API_KEY`,
    // `GROK_BASE_URL`, `GROK_MODEL`.
    env: &["XAI_*", "GROK_*"],
    models: Models {
        worker: "grok-build-0.1",
        critic: Some("grok-4.5"),
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
        home: ".grok",
        relocated_by: None,
        file_beside: None,
    },
    landlock: true,
    credentials: Credentials {
        env: &["XAI_API_KEY", "GROK_API_KEY"],
        file: "user-settings.json",
    },
    default_slots: 2,
    install: "install xAI's Grok Build CLI (`grok`)",
    log_in: "set `XAI_API_KEY` (Grok Build) or `GROK_API_KEY` (vibe-kit grok)",
    usage_missing: "no grok `usage` or `end` line (the vibe-kit `grok` prints no usage; Grok Build prints it on `end`)",
    session_log: None,
    env_auth: None,
    no_update_env: &[],
    model_note: None,
    identity: Identity {
        reads_help: true,
        look_alike,
        installed_as,
        refused: None,
        crash: None,
    },
    argv,
};

fn argv(request: &Request<'_>) -> Argv {
    let dir = request.execution_root.as_os_str().to_owned();
    let model = request.model.to_owned();
    let args = if request.program == Some(Program::VibeKitGrok) {
        // vibe-kit grok: no prompt file, no stdin, no output format, no
        // read-only mode (headless always auto-approves); it prints its
        // messages as JSON lines only at the end. A pointer prompt keeps
        // argv small; `-d` sets its folder.
        vec![
            "-p".into(),
            pointer_prompt(request.prompt_path),
            "-d".into(),
            dir,
            "-m".into(),
            model,
        ]
    } else {
        // xAI's Grok Build (`--output-format streaming-json`, `--cwd`): its
        // `--prompt-file` reads the prompt itself, byte for byte.
        let mut args = vec![
            "--prompt-file".into(),
            request.prompt_path.as_os_str().to_owned(),
            "-m".into(),
            model,
            "--output-format".into(),
            "streaming-json".into(),
            "--cwd".into(),
            dir,
            "--no-auto-update".into(),
        ];
        // Its own Landlock sandbox too: writes only to `~/.grok` and temp
        // folders (docs.x.ai/build/features/sandbox), nested inside okstra's.
        if request.may_write {
            args.push("--always-approve".into());
        } else {
            args.extend(["--sandbox".into(), "read-only".into()]);
        }
        args
    };
    Argv {
        args,
        prompt_on_stdin: false,
        env_set: Vec::new(),
    }
}

/// A `grok` whose real path lies in an npm install of `@vibe-kit/grok-cli`
/// (its bin link points into that package) is vibe-kit's, known without
/// starting node.
fn installed_as(real_path: &Path) -> Option<Program> {
    let components: Vec<_> = real_path
        .components()
        .map(std::path::Component::as_os_str)
        .collect();
    components
        .windows(2)
        .any(|pair| pair[0] == "@vibe-kit" && pair[1] == "grok-cli")
        .then_some(Program::VibeKitGrok)
}

/// vibe-kit grok has `--max-tool-rounds` and `--directory` but no
/// `--output-format`; Grok Build has `--output-format`.
fn look_alike(_version: &str, help: Option<&str>) -> Option<LookAlike> {
    let help = help?;
    if help.contains("--max-tool-rounds")
        || (help.contains("--directory") && !help.contains("--output-format"))
    {
        return Some(LookAlike {
            program: Program::VibeKitGrok,
            detail: "the community vibe-kit grok, not xAI's Grok Build: okstra drives it with `-p`, `-d`, `-m` (no streaming, no read-only mode)",
        });
    }
    (!help.contains("--output-format")).then_some(LookAlike {
        program: Program::Unrecognised,
        detail: "`grok --help` shows neither Grok Build's `--output-format` nor vibe-kit's `--max-tool-rounds`",
    })
}

pub(super) fn decode(event: &Value, out: &mut Vec<Event>) {
    match text(event, "/type").unwrap_or("") {
        "text" => {
            if let Some(piece) = owned(event, "/data") {
                out.push(Event::TextDelta(piece));
            }
        }
        "thought" => out.push(Event::Thinking),
        "tool_call" => out.push(Event::ToolUse {
            name: text(event, "/title")
                .or_else(|| text(event, "/toolName"))
                .unwrap_or("a tool")
                .to_owned(),
            argument: None,
        }),
        "tool_call_update" => out.push(Event::ToolResult),
        "error" => out.push(Event::Error {
            kind: ErrorKind::Other,
            code: None,
            text: text(event, "/message")
                .or_else(|| text(event, "/data"))
                .unwrap_or("")
                .to_owned(),
        }),
        "usage" => {
            if let Some(usage) = usage_of::<GrokUsage>(event.get("usage")) {
                out.push(Event::Usage(UsageReport {
                    scope: Scope::Step {
                        id: owned(event, "/messageId"),
                    },
                    models: vec![ModelTokens::unnamed(usage.tokens())],
                    cost_usd: None,
                }));
            }
        }
        "end" => end(event, out),
        _ if text(event, "/role") == Some("assistant") => {
            match content_text(event.get("content")) {
                Some(said) if said.starts_with(VIBE_KIT_ERROR) => out.push(Event::Error {
                    kind: ErrorKind::Other,
                    code: None,
                    text: said,
                }),
                Some(said) => out.push(Event::Text(said)),
                None => {}
            }
        }
        _ => {}
    }
}

/// Grok Build's `end`: the totals (the model named when `modelUsage` names
/// exactly one; the cost only when the usage is complete), the session id.
fn end(event: &Value, out: &mut Vec<Event>) {
    let tokens = usage_of::<GrokUsage>(event.get("usage"))
        .map(|usage| usage.tokens())
        .unwrap_or_default();
    if tokens.total() == 0 {
        out.push(Event::UsageUnknown(ZERO_END.to_owned()));
    } else {
        let model = event
            .get("modelUsage")
            .and_then(Value::as_object)
            .filter(|models| models.len() == 1)
            .and_then(|models| models.keys().next().cloned());
        let complete = event.get("usage_is_incomplete").and_then(Value::as_bool) != Some(true);
        out.push(Event::Usage(UsageReport {
            scope: Scope::Final,
            models: vec![ModelTokens {
                model,
                fast: false,
                tokens,
            }],
            cost_usd: event
                .get("total_cost_usd")
                .and_then(Value::as_f64)
                .filter(|_| complete),
        }));
    }
    if let Some(session) = owned(event, "/sessionId") {
        out.push(Event::SessionId(session));
    }
    out.push(Event::Final {
        failed: false,
        error: None,
    });
}

/// Grok Build's `usage` object (on `usage` and `end` lines).
#[derive(Debug, Default, Deserialize)]
#[expect(
    clippy::struct_field_names,
    reason = "the names are the CLI's wire format"
)]
struct GrokUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    reasoning_tokens: Option<u64>,
}

impl GrokUsage {
    /// `input_tokens` is uncached only; reasoning is inside output.
    fn tokens(&self) -> Tokens {
        Tokens {
            input: self.input_tokens,
            cache_read: self.cache_read_input_tokens,
            cache_write: self.cache_creation_input_tokens,
            cache_write_1h: 0,
            output: self.output_tokens,
            reasoning: self.reasoning_tokens,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{assert_table, fixture, io};
    use super::super::{Line, Provider, decode};
    use super::*;

    /// The fake grok's recorded stream lines (`tests/fixtures/workers/`).
    #[test]
    fn recorded_lines_decode_to_events() {
        assert_table(
            Provider::Grok,
            &fixture("workers/grok.sh"),
            &[
                vec![Event::TextDelta(
                    "=== OKSTRA RESULT BEGIN ===\n## 1. Findings\n".into(),
                )],
                vec![Event::TextDelta(
                    "| F-001 | grok sees it | src/a.py:7 |\n=== OKSTRA RESULT END ===".into(),
                )],
                vec![
                    Event::Usage(UsageReport {
                        scope: Scope::Final,
                        models: vec![ModelTokens::unnamed(io(4, 2))],
                        cost_usd: None,
                    }),
                    Event::SessionId("g-1".into()),
                    Event::Final {
                        failed: false,
                        error: None,
                    },
                ],
            ],
        );
    }

    /// Grok Build's documented lines and vibe-kit's failure message.
    #[test]
    fn usage_tools_and_failures_are_typed() {
        let cases: &[(&str, Vec<Event>)] = &[
            (
                r#"{"type":"usage","messageId":"resp_1","usage":{"input_tokens":812,"output_tokens":45}}"#,
                vec![Event::Usage(UsageReport {
                    scope: Scope::Step {
                        id: Some("resp_1".into()),
                    },
                    models: vec![ModelTokens::unnamed(io(812, 45))],
                    cost_usd: None,
                })],
            ),
            (
                r#"{"type":"end","stopReason":"end_turn","usage":{"input_tokens":0,"output_tokens":0}}"#,
                vec![
                    Event::UsageUnknown(ZERO_END.into()),
                    Event::Final {
                        failed: false,
                        error: None,
                    },
                ],
            ),
            (
                r#"{"type":"tool_call","toolCallId":"c","title":"Read","toolName":"read_file"}"#,
                vec![Event::ToolUse {
                    name: "Read".into(),
                    argument: None,
                }],
            ),
            (
                r#"{"role":"assistant","content":"Sorry, I encountered an error: 401"}"#,
                vec![Event::Error {
                    kind: ErrorKind::Other,
                    code: None,
                    text: "Sorry, I encountered an error: 401".into(),
                }],
            ),
        ];
        for (line, events) in cases {
            assert_eq!(
                decode(Provider::Grok, line),
                Line::Events(events.clone()),
                "{line}"
            );
        }
    }
}
