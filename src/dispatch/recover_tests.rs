//! Recovery from realistic logs of each CLI's stream format.

use std::fmt::Write;

use pretty_assertions::assert_eq;

use super::*;

fn block(result: &str) -> String {
    format!(
        "Done.\n{RESULT_BEGIN}\n{result}\n{RESULT_END}\n{WORKER_RESULTS_BEGIN}\naudit\n{WORKER_RESULTS_END}\n"
    )
}

fn json_line(value: &serde_json::Value) -> String {
    format!("{value}\n")
}

fn expected() -> Blocks {
    Blocks {
        result: "## 1. Findings\n| F-001 | x |\n".into(),
        worker_results: Some("audit\n".into()),
    }
}

const RESULT: &str = "## 1. Findings\n| F-001 | x |";

#[test]
fn claude_result_field() {
    let log = [
        json_line(&serde_json::json!({"type":"system","subtype":"init","session_id":"s"})),
        json_line(&serde_json::json!({"type":"assistant","message":{"content":[{"type":"text","text":"thinking"}]}})),
        "progress on stderr\n".to_owned(),
        json_line(&serde_json::json!({"type":"result","subtype":"success","is_error":false,"result":block(RESULT)})),
    ]
    .concat();
    let transcript = parse(Provider::Claude, log.as_bytes());
    assert_eq!(transcript.blocks(), Some(expected()));
    assert!(!transcript.reported_failure);
    assert_eq!(transcript.errors, vec!["progress on stderr".to_owned()]);
}

#[test]
fn codex_last_agent_message() {
    let log = [
        json_line(&serde_json::json!({"type":"thread.started","thread_id":"t"})),
        json_line(&serde_json::json!({"type":"item.completed","item":{"id":"1","type":"agent_message","text":"first"}})),
        json_line(&serde_json::json!({"type":"item.completed","item":{"id":"2","type":"agent_message","text":block(RESULT)}})),
        json_line(&serde_json::json!({"type":"turn.completed","usage":{"input_tokens":5}})),
    ]
    .concat();
    assert_eq!(
        parse(Provider::Codex, log.as_bytes()).blocks(),
        Some(expected())
    );
}

#[test]
fn gemini_style_deltas_are_joined_and_the_echoed_prompt_is_ignored() {
    let text = block(RESULT);
    let (a, b) = text.split_at(20);
    let log = [
        json_line(&serde_json::json!({"type":"init","session_id":"s"})),
        // The prompt holds an example block; a user message never counts.
        json_line(&serde_json::json!({"type":"message","role":"user","content":format!("{RESULT_BEGIN}\n(the full Result)\n{RESULT_END}")})),
        json_line(&serde_json::json!({"type":"message","role":"assistant","content":a,"delta":true})),
        json_line(&serde_json::json!({"type":"message","role":"assistant","content":b,"delta":true})),
        json_line(&serde_json::json!({"type":"result","status":"success","stats":{}})),
    ]
    .concat();
    assert_eq!(
        parse(Provider::Antigravity, log.as_bytes()).blocks(),
        Some(expected())
    );
}

#[test]
fn antigravity_result_response() {
    let log = json_line(&serde_json::json!({"type":"result","response":block(RESULT)}));
    assert_eq!(
        parse(Provider::Antigravity, log.as_bytes()).blocks(),
        Some(expected())
    );
}

#[test]
fn grok_build_text_events_and_vibe_kit_messages() {
    let text = block(RESULT);
    let (a, b) = text.split_at(30);
    let log = [
        json_line(&serde_json::json!({"type":"text","data":a})),
        json_line(&serde_json::json!({"type":"text","data":b})),
        json_line(&serde_json::json!({"type":"end","stopReason":"end_turn","usage":{}})),
    ]
    .concat();
    assert_eq!(
        parse(Provider::Grok, log.as_bytes()).blocks(),
        Some(expected())
    );
    let vibe = [
        json_line(&serde_json::json!({"role":"user","content":"Read the task"})),
        json_line(&serde_json::json!({"role":"assistant","content":block(RESULT)})),
    ]
    .concat();
    assert_eq!(
        parse(Provider::Grok, vibe.as_bytes()).blocks(),
        Some(expected())
    );
}

#[test]
fn kimi_last_assistant_line() {
    let log = [
        json_line(&serde_json::json!({"role":"meta","type":"system.version","version":"2.1.0"})),
        json_line(&serde_json::json!({"role":"assistant","content":"Let me look.","tool_calls":[]})),
        json_line(&serde_json::json!({"role":"tool","tool_call_id":"c","content":format!("{RESULT_BEGIN}\nfrom a file\n{RESULT_END}")})),
        json_line(&serde_json::json!({"role":"assistant","content":[{"type":"text","text":block(RESULT)}]})),
        json_line(&serde_json::json!({"role":"meta","type":"session.resume_hint","session_id":"k"})),
    ]
    .concat();
    assert_eq!(
        parse(Provider::Kimi, log.as_bytes()).blocks(),
        Some(expected())
    );
}

#[test]
fn an_unfinished_block_is_not_a_result_and_the_last_complete_one_wins() {
    let text = format!(
        "{RESULT_BEGIN}\nold\n{RESULT_END}\n{RESULT_BEGIN}\nnew\n{RESULT_END}\n{RESULT_BEGIN}\ncut off"
    );
    assert_eq!(
        last_block(&text, RESULT_BEGIN, RESULT_END),
        Some("new\n".into())
    );
    assert_eq!(
        last_block(&format!("{RESULT_BEGIN}\nno end"), RESULT_BEGIN, RESULT_END),
        None
    );
    assert_eq!(
        last_block(
            &format!("{RESULT_BEGIN}\n\n{RESULT_END}"),
            RESULT_BEGIN,
            RESULT_END
        ),
        None
    );
}

#[test]
fn errors_and_failure_flags_are_collected() {
    let log = [
        json_line(&serde_json::json!({"type":"assistant","message":{"content":[{"type":"text","text":"Not logged in · Please run /login"}]},"error":"authentication_failed"})),
        json_line(&serde_json::json!({"type":"result","subtype":"success","is_error":true,"result":"Not logged in · Please run /login"})),
    ]
    .concat();
    let transcript = parse(Provider::Claude, log.as_bytes());
    assert!(transcript.reported_failure);
    assert!(transcript.blocks().is_none());
    assert!(
        transcript
            .errors
            .iter()
            .any(|e| e.contains("authentication_failed"))
    );
    assert_eq!(transcript.tail.len(), 2);
}

#[test]
fn the_tail_keeps_the_last_forty_lines() {
    let log = (0..100).fold(String::new(), |mut log, i| {
        let _ = writeln!(log, "line {i}");
        log
    });
    let transcript = parse(Provider::Codex, log.as_bytes());
    assert_eq!(transcript.tail.len(), TAIL_LINES);
    assert_eq!(transcript.tail.last().unwrap(), "line 99");
}
