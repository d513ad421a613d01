//! Builders for provider streams, so tests read as the conversation they script. Tool arguments
//! are split into fragments, as real providers send them.

#![allow(dead_code)]

use serde_json::{Value, json};

/// An Anthropic reply that only answers `text` (1 token in, 1 out).
pub fn answer(text: &str) -> super::mock::Reply {
    super::mock::Reply::sse(anthropic(&[B::Text(text)], "end_turn", 1, 1))
}

/// One block of a scripted model response.
pub enum B<'a> {
    Text(&'a str),
    Thinking(&'a str, &'a str),
    /// id, name, arguments as JSON text (sent in two fragments).
    Tool(&'a str, &'a str, &'a str),
}

fn event(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn halves(s: &str) -> (&str, &str) {
    let mut mid = s.len() / 2;
    while !s.is_char_boundary(mid) {
        mid += 1;
    }
    s.split_at(mid)
}

/// A complete Anthropic Messages stream.
pub fn anthropic(blocks: &[B], stop: &str, input_tokens: u64, output_tokens: u64) -> Vec<String> {
    let usage = json!({"input_tokens":input_tokens,"output_tokens":1});
    anthropic_with_usage(blocks, stop, usage, output_tokens)
}

/// An Anthropic stream whose `message_start` reports `usage` (with cache fields, say).
pub fn anthropic_with_usage(
    blocks: &[B],
    stop: &str,
    usage: Value,
    output_tokens: u64,
) -> Vec<String> {
    let mut out = vec![event(
        "message_start",
        json!({"type":"message_start","message":{"id":"msg_test","type":"message","role":"assistant",
            "model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,
            "usage":usage}}),
    )];
    out.extend(anthropic_blocks(blocks, 0));
    out.push(event(
        "message_delta",
        json!({"type":"message_delta","delta":{"stop_reason":stop,"stop_sequence":null},"usage":{"output_tokens":output_tokens}}),
    ));
    out.push(event("message_stop", json!({"type":"message_stop"})));
    out
}

/// Just the content block events of an Anthropic stream, numbered from `first`.
pub fn anthropic_blocks(blocks: &[B], first: usize) -> Vec<String> {
    let mut out = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        let index = first + i;
        let delta = |d: Value| {
            event(
                "content_block_delta",
                json!({"type":"content_block_delta","index":index,"delta":d}),
            )
        };
        match b {
            B::Text(t) => {
                out.push(event("content_block_start", json!({"type":"content_block_start","index":index,"content_block":{"type":"text","text":""}})));
                let (a, b2) = halves(t);
                out.push(delta(json!({"type":"text_delta","text":a})));
                out.push(delta(json!({"type":"text_delta","text":b2})));
            }
            B::Thinking(t, sig) => {
                out.push(event("content_block_start", json!({"type":"content_block_start","index":index,"content_block":{"type":"thinking","thinking":"","signature":""}})));
                out.push(delta(json!({"type":"thinking_delta","thinking":t})));
                out.push(delta(json!({"type":"signature_delta","signature":sig})));
            }
            B::Tool(id, name, args) => {
                out.push(event("content_block_start", json!({"type":"content_block_start","index":index,"content_block":{"type":"tool_use","id":id,"name":name,"input":{}}})));
                let (a, b2) = halves(args);
                out.push(delta(json!({"type":"input_json_delta","partial_json":""})));
                out.push(delta(json!({"type":"input_json_delta","partial_json":a})));
                out.push(delta(json!({"type":"input_json_delta","partial_json":b2})));
            }
        }
        out.push(event(
            "content_block_stop",
            json!({"type":"content_block_stop","index":index}),
        ));
    }
    out
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let c = json!({"id":"chatcmpl-test","object":"chat.completion.chunk","created":1,"model":"gpt-test",
        "choices":[{"index":0,"delta":delta,"logprobs":null,"finish_reason":finish}]});
    format!("data: {c}\n\n")
}

/// A complete Chat Completions stream: text first, then tool calls (each call's arguments in
/// two fragments), the finish chunk, the usage chunk and `[DONE]`.
pub fn openai(
    blocks: &[B],
    finish: &str,
    prompt_tokens: u64,
    completion_tokens: u64,
) -> Vec<String> {
    let mut out = vec![chunk(json!({"role":"assistant","content":null}), None)];
    let mut index = 0;
    for b in blocks {
        match b {
            B::Text(t) => {
                let (a, b2) = halves(t);
                out.push(chunk(json!({"content":a}), None));
                out.push(chunk(json!({"content":b2}), None));
            }
            B::Thinking(..) => {}
            B::Tool(id, name, args) => {
                let (a, b2) = halves(args);
                out.push(chunk(json!({"tool_calls":[{"index":index,"id":id,"type":"function","function":{"name":name,"arguments":""}}]}), None));
                out.push(chunk(
                    json!({"tool_calls":[{"index":index,"function":{"arguments":a}}]}),
                    None,
                ));
                out.push(chunk(
                    json!({"tool_calls":[{"index":index,"function":{"arguments":b2}}]}),
                    None,
                ));
                index += 1;
            }
        }
    }
    out.push(chunk(json!({}), Some(finish)));
    let usage = json!({"id":"chatcmpl-test","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[],
        "usage":{"prompt_tokens":prompt_tokens,"completion_tokens":completion_tokens,"total_tokens":prompt_tokens+completion_tokens}});
    out.push(format!("data: {usage}\n\n"));
    out.push("data: [DONE]\n\n".to_owned());
    out
}

/// A complete Gemini `streamGenerateContent?alt=sse` stream, with CRLF line endings as the real
/// API sends them. Each block is its own chunk; a `Thinking` block's second field is used as the
/// `thoughtSignature` of the following function call.
pub fn gemini(blocks: &[B], prompt_tokens: u64, output_tokens: u64) -> Vec<String> {
    let mut out = Vec::new();
    let mut signature: Option<&str> = None;
    let n = blocks.len();
    for (i, b) in blocks.iter().enumerate() {
        let part = match b {
            B::Text(t) => json!({"text": t}),
            B::Thinking(_, sig) => {
                signature = Some(sig);
                continue;
            }
            B::Tool(_, name, args) => {
                let args: Value = serde_json::from_str(args).expect("tool args are JSON");
                let mut p = json!({"functionCall": {"name": name, "args": args}});
                if let Some(sig) = signature.take() {
                    p["thoughtSignature"] = json!(sig);
                }
                p
            }
        };
        let mut candidate = json!({"content": {"parts": [part], "role": "model"}, "index": 0});
        if i + 1 == n {
            candidate["finishReason"] = json!("STOP");
        }
        let chunk = json!({"candidates": [candidate],
            "usageMetadata": {"promptTokenCount": prompt_tokens, "candidatesTokenCount": output_tokens,
                "totalTokenCount": prompt_tokens + output_tokens},
            "modelVersion": "gemini-test"});
        out.push(format!("data: {chunk}\r\n\r\n"));
    }
    out
}
