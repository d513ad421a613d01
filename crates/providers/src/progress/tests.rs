//! What each provider counts as progress, checked event by event: content moves it, keep-alives
//! do not. The driver's use of it (idle timeout, cap) is tested in `drive_tests.rs`.

use super::*;
use crate::anthropic::AnthropicMapper;
use crate::conversation::Block;
use crate::gemini::GeminiMapper;
use crate::openai::OpenAiMapper;
use crate::openai_responses::ResponsesMapper;
use crate::sse::Decoder;
use crate::testing::{WIRE, progress_steps, read};
use crate::{Mapper, StreamEvent};
use serde_json::json;

#[test]
fn empty_text_is_no_progress_and_content_adds_its_bytes() {
    let mut p = Progress::default();
    p.text("");
    assert_eq!(p.total(), 0);
    p.text("héllo");
    assert_eq!(p.total(), 6);
    p.json(&json!({"path": "a b"}));
    assert_eq!(p.total(), 6 + r#"{"path":"a b"}"#.len() as u64);
    p.block();
    assert_eq!(p.total(), 6 + 14 + BLOCK_BYTES);
}

#[test]
fn the_count_saturates_instead_of_wrapping() {
    let mut p = Progress(u64::MAX - 1);
    p.bytes(10);
    p.block();
    assert_eq!(p.total(), u64::MAX);
}

#[test]
fn sizes_show_in_mib_when_whole() {
    assert_eq!(show_bytes(MAX_RESPONSE_BYTES), "32 MiB");
    assert_eq!(show_bytes(1000), "1000 bytes");
}

/// Runs `table` (raw SSE, progress expected) through `mapper` and compares event by event.
fn check<M: Mapper>(mapper: M, table: &[(&str, bool)]) {
    let events: Vec<&str> = table.iter().map(|(e, _)| *e).collect();
    let (got, _) = progress_steps(mapper, &events);
    for ((event, want), got) in table.iter().zip(got) {
        assert_eq!(got, *want, "{event}");
    }
}

/// One SSE event named after its data's `type` (Anthropic and the Responses API do this).
fn typed(data: serde_json::Value) -> String {
    format!(
        "event: {}\ndata: {data}\n\n",
        data["type"].as_str().unwrap()
    )
}

#[test]
fn anthropic_pings_usage_and_empty_deltas_are_not_progress() {
    let start = |index: u64, block: serde_json::Value| {
        typed(json!({"type":"content_block_start","index":index,"content_block":block}))
    };
    let delta = |index: u64, delta: serde_json::Value| {
        typed(json!({"type":"content_block_delta","index":index,"delta":delta}))
    };
    let usage = json!({"input_tokens":5,"output_tokens":1});
    let table = [
        (
            typed(json!({"type":"message_start","message":{"usage":usage}})),
            false,
        ),
        (typed(json!({"type":"ping"})), false),
        (": a comment\n\n".to_owned(), false),
        (start(0, json!({"type":"text","text":""})), true),
        (delta(0, json!({"type":"text_delta","text":""})), false),
        (delta(0, json!({"type":"text_delta","text":"hi"})), true),
        (typed(json!({"type":"content_block_stop","index":0})), false),
        (
            start(
                1,
                json!({"type":"tool_use","id":"t1","name":"bash","input":{}}),
            ),
            true,
        ),
        (
            delta(1, json!({"type":"input_json_delta","partial_json":""})),
            false,
        ),
        (
            delta(
                1,
                json!({"type":"input_json_delta","partial_json":"{\"a\""}),
            ),
            true,
        ),
        (typed(json!({"type":"ping"})), false),
        (typed(json!({"type":"some_future_event"})), false),
        (
            start(2, json!({"type":"thinking","thinking":"","signature":""})),
            true,
        ),
        (
            delta(2, json!({"type":"thinking_delta","thinking":"hmm"})),
            true,
        ),
        (
            delta(2, json!({"type":"signature_delta","signature":"sig"})),
            true,
        ),
        (
            typed(
                json!({"type":"message_delta","delta":{"stop_reason":null},"usage":{"output_tokens":9}}),
            ),
            false,
        ),
    ];
    let table: Vec<(&str, bool)> = table.iter().map(|(e, p)| (e.as_str(), *p)).collect();
    check(AnthropicMapper::default(), &table);
}

fn chat(delta: &str) -> String {
    format!(
        "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":null}}]}}\n\n"
    )
}

#[test]
fn openai_chat_role_usage_and_empty_chunks_are_not_progress() {
    let call = |c: &str| chat(&format!("{{\"tool_calls\":[{c}]}}"));
    let table = [
        (chat(r#"{"role":"assistant","content":null}"#), false),
        (chat(r#"{"content":""}"#), false),
        (chat("{}"), false),
        (": keep-alive\n\n".to_owned(), false),
        ("data: {\"id\":\"c\",\"choices\":[]}\n\n".to_owned(), false),
        (chat(r#"{"content":"hi"}"#), true),
        (chat(r#"{"reasoning_content":"so"}"#), true),
        (call(r#"{"index":0,"id":"call_1","type":"function","function":{"name":"bash","arguments":""}}"#), true),
        (call(r#"{"index":0,"id":"call_1","function":{"arguments":""}}"#), false),
        (call(r#"{"index":0,"function":{"arguments":"{\"a\""}}"#), true),
        (call(r#"{"index":1,"function":{}}"#), true),
        ("data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}}\n\n".to_owned(), false),
    ];
    let table: Vec<(&str, bool)> = table.iter().map(|(e, p)| (e.as_str(), *p)).collect();
    check(OpenAiMapper::new("openai"), &table);
}

#[test]
fn openai_responses_lifecycle_events_and_repeated_items_are_not_progress() {
    let message = json!({"type":"message","content":[{"type":"output_text","text":"hi"}]});
    let call = json!({"type":"function_call","call_id":"c1","name":"bash","arguments":"{}"});
    let table = [
        (
            typed(json!({"type":"response.created","response":{}})),
            false,
        ),
        (
            typed(json!({"type":"response.in_progress","response":{}})),
            false,
        ),
        (
            typed(
                json!({"type":"response.output_item.added","output_index":0,"item":{"type":"message","content":[]}}),
            ),
            true,
        ),
        (
            typed(json!({"type":"response.output_text.delta","output_index":0,"delta":""})),
            false,
        ),
        (
            typed(json!({"type":"response.output_text.delta","output_index":0,"delta":"hi"})),
            true,
        ),
        // `done` repeats the item whole: nothing new.
        (
            typed(json!({"type":"response.output_item.done","output_index":0,"item":message})),
            false,
        ),
        (
            typed(
                json!({"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","call_id":"c1","name":"bash","arguments":""}}),
            ),
            true,
        ),
        (
            typed(
                json!({"type":"response.function_call_arguments.delta","output_index":1,"delta":"{}"}),
            ),
            true,
        ),
        (
            typed(json!({"type":"response.output_item.done","output_index":1,"item":call})),
            false,
        ),
        // An item that only ever arrives whole is content.
        (
            typed(json!({"type":"response.output_item.done","output_index":2,"item":message})),
            true,
        ),
        (
            typed(
                json!({"type":"response.reasoning_summary_text.delta","output_index":3,"delta":"so"}),
            ),
            true,
        ),
    ];
    let table: Vec<(&str, bool)> = table.iter().map(|(e, p)| (e.as_str(), *p)).collect();
    check(ResponsesMapper::new("openai"), &table);
}

fn gemini(chunk: serde_json::Value) -> String {
    format!("data: {chunk}\n\n")
}

#[test]
fn gemini_usage_only_and_empty_parts_are_not_progress() {
    let part = |p: serde_json::Value| {
        gemini(json!({"candidates":[{"content":{"role":"model","parts":[p]}}]}))
    };
    let table = [
        (
            gemini(json!({"usageMetadata":{"promptTokenCount":3}})),
            false,
        ),
        (
            gemini(json!({"candidates":[{"content":{"role":"model","parts":[]}}]})),
            false,
        ),
        (part(json!({"text":""})), false),
        (part(json!({"text":"hi"})), true),
        (part(json!({"text":"so","thought":true})), true),
        (
            part(json!({"functionCall":{"name":"bash","args":{}}})),
            true,
        ),
        (part(json!({"text":"","thoughtSignature":"c2ln"})), true),
    ];
    let table: Vec<(&str, bool)> = table.iter().map(|(e, p)| (e.as_str(), *p)).collect();
    check(GeminiMapper::default(), &table);
}

/// Maps a whole recorded response (up to any error in it): the progress counted, and the bytes
/// of streamed text, thinking and tool input the events carried.
fn count<M: Mapper>(mut mapper: M, bytes: &[u8]) -> (u64, u64) {
    let mut decoder = Decoder::default();
    let mut events = Vec::new();
    let _ = decoder.feed(bytes, &mut events);
    let mut out = Vec::new();
    for ev in events {
        if mapper.is_done() || mapper.map(ev, &mut out).is_err() {
            break;
        }
    }
    let carried = out
        .iter()
        .map(|e| match e {
            StreamEvent::TextDelta(t) | StreamEvent::ThinkingDelta(t) => t.len(),
            StreamEvent::Block(Block::ToolUse(call)) => call.input.to_string().len(),
            _ => 0,
        })
        .sum::<usize>();
    (mapper.progress().total(), carried as u64)
}

#[test]
fn every_recorded_response_counts_at_least_the_content_it_carried() {
    let mut checked = 0;
    for dir in ["samples", "recorded"] {
        for entry in std::fs::read_dir(format!("{WIRE}/{dir}")).unwrap() {
            let path = entry.unwrap().path();
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.extension().is_none_or(|e| e != "sse") || file.starts_with("sse-edge") {
                continue;
            }
            let bytes = read(&format!("{dir}/{file}"));
            let (total, carried) = if file.starts_with("anthropic") {
                count(AnthropicMapper::default(), &bytes)
            } else if file.contains("gemini") || file.starts_with("vertexai") {
                count(GeminiMapper::default(), &bytes)
            } else if file.starts_with("openai-responses") {
                count(ResponsesMapper::new("openai"), &bytes)
            } else {
                count(OpenAiMapper::new("openai"), &bytes)
            };
            assert!(
                total >= carried,
                "{file}: counted {total} < carried {carried}"
            );
            assert!(carried == 0 || total > 0, "{file}");
            checked += 1;
        }
    }
    assert!(checked >= 20, "{checked}");
}
