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

/// A complete OpenAI Responses stream: each block one output item, added, streamed and done.
/// `Thinking(summary, encrypted)` is a reasoning item (`rs_N`) carrying `encrypted` as its
/// encrypted content and `summary` (when not empty) as its one summary text; text arrives in two
/// deltas, call arguments in two fragments. Ends with `response.completed` and its usage.
pub fn responses(
    blocks: &[B],
    input_tokens: u64,
    output_tokens: u64,
    reasoning_tokens: u64,
) -> Vec<String> {
    let mut seq = 0;
    let mut ev = |mut data: Value| {
        data["sequence_number"] = json!(seq);
        seq += 1;
        let name = data["type"].as_str().expect("type").to_owned();
        event(&name, data)
    };
    let response = |status: &str, output: Vec<Value>, usage: Value| {
        json!({"id":"resp_test","object":"response","created_at":1,"status":status,
            "model":"o-test","output":output,"usage":usage})
    };
    let mut out = vec![ev(json!({"type":"response.created",
        "response":response("in_progress", vec![], Value::Null)}))];
    let mut done_items = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        let (added, done) = match b {
            B::Thinking(summary, encrypted) => {
                let id = format!("rs_{i}");
                let parts: Vec<Value> = if summary.is_empty() {
                    vec![]
                } else {
                    vec![json!({"type":"summary_text","text":summary})]
                };
                (
                    json!({"id":id,"type":"reasoning","summary":[]}),
                    json!({"id":id,"type":"reasoning","summary":parts,"encrypted_content":encrypted}),
                )
            }
            B::Text(t) => {
                let id = format!("msg_{i}");
                (
                    json!({"id":id,"type":"message","status":"in_progress","role":"assistant","content":[]}),
                    json!({"id":id,"type":"message","status":"completed","role":"assistant",
                        "content":[{"type":"output_text","annotations":[],"text":t}]}),
                )
            }
            B::Tool(call_id, name, args) => {
                let id = format!("fc_{i}");
                (
                    json!({"id":id,"type":"function_call","status":"in_progress","arguments":"",
                        "call_id":call_id,"name":name}),
                    json!({"id":id,"type":"function_call","status":"completed","arguments":args,
                        "call_id":call_id,"name":name}),
                )
            }
        };
        let item_id = added["id"].clone();
        out.push(ev(
            json!({"type":"response.output_item.added","output_index":i,"item":added}),
        ));
        match b {
            B::Thinking(summary, _) if !summary.is_empty() => {
                out.push(ev(json!({"type":"response.reasoning_summary_text.delta",
                    "item_id":item_id,"output_index":i,"summary_index":0,"delta":summary})));
            }
            B::Thinking(..) => {}
            B::Text(t) => {
                let (a, b2) = halves(t);
                for half in [a, b2] {
                    out.push(ev(
                        json!({"type":"response.output_text.delta","item_id":item_id,
                        "output_index":i,"content_index":0,"delta":half}),
                    ));
                }
            }
            B::Tool(_, _, args) => {
                let (a, b2) = halves(args);
                for half in [a, b2] {
                    out.push(ev(json!({"type":"response.function_call_arguments.delta",
                        "item_id":item_id,"output_index":i,"delta":half})));
                }
            }
        }
        out.push(ev(
            json!({"type":"response.output_item.done","output_index":i,"item":done.clone()}),
        ));
        done_items.push(done);
    }
    let usage = json!({"input_tokens":input_tokens,"input_tokens_details":{"cached_tokens":0},
        "output_tokens":output_tokens,"output_tokens_details":{"reasoning_tokens":reasoning_tokens},
        "total_tokens":input_tokens + output_tokens});
    out.push(ev(json!({"type":"response.completed",
        "response":response("completed", done_items, usage)})));
    out
}
