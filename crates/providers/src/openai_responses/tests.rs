use super::*;
use crate::Options;
use crate::conversation::{Class, ErrorKind, Message, ToolResult, ToolSpec};
use crate::providers::Flavor;
use crate::testing::{CHUNKINGS, WIRE, read, run, summarize};
use crate::{Effort, ToolChoice};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const ROUND1: &str = "samples/openai-responses-reasoning-tools.sse";
const ROUND2: &str = "samples/openai-responses-reasoning-tools-round2.sse";
const ENCRYPTED: &str = "Z0FBQUFBQnN5bnRoZXRpYy1lbmNyeXB0ZWQtcmVhc29uaW5nLW5vdC12YWxpZA==";
const SUMMARY_1: &str =
    "**Reading both files**\n\nThe user wants a.txt and b.txt — two independent reads.";
const SUMMARY_2: &str = "Both can run at once.";

fn mapped(name: &str) -> Vec<Vec<StreamEvent>> {
    let bytes = read(name);
    CHUNKINGS
        .iter()
        .map(|&c| {
            run(ResponsesMapper::new("openai"), &bytes, c).unwrap_or_else(|e| panic!("{c}: {e}"))
        })
        .collect()
}

fn thinking(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ThinkingDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn round1_blocks() -> Vec<Block> {
    let b = r#"{"path": "Z\u00fcrich/b.txt"}"#;
    vec![
        Block::Reasoning {
            id: "rs_0a1b2c3d4e5f6071829300000000000001".into(),
            encrypted_content: Some(ENCRYPTED.into()),
            summary: vec![SUMMARY_1.into(), SUMMARY_2.into()],
        },
        Block::text("Reading both files ✓"),
        Block::ToolUse(ToolUse::from_raw(
            "call_Rk2dQ9xVb7mN4pL8sT1wY6zA".into(),
            "read_file".into(),
            r#"{"path":"a.txt"}"#,
        )),
        Block::ToolUse(
            ToolUse::from_raw(
                "call_Hc5fJ3uWq0eK9rX2vB8nM1tG".into(),
                "read_file".into(),
                b,
            )
            .keep_raw(b),
        ),
    ]
}

#[test]
fn reasoning_text_and_calls_map_to_blocks_in_order_at_every_chunking() {
    for events in mapped(ROUND1) {
        assert_eq!(thinking(&events), format!("{SUMMARY_1}\n\n{SUMMARY_2}"));
        let s = summarize(&events);
        assert_eq!(s.blocks, round1_blocks());
        assert_eq!(s.text, "Reading both files ✓");
        assert_eq!(s.stop, Some(StopReason::ToolUse));
        assert_eq!(
            s.usage,
            Some(Usage {
                input_tokens: 1200 - 1024,
                output_tokens: 310,
                cache_read_tokens: 1024,
                cache_write_tokens: 0,
                reasoning_tokens: 256,
            })
        );
    }
}

#[test]
fn a_reasoning_item_without_a_summary_is_kept_for_its_encrypted_content() {
    for events in mapped(ROUND2) {
        let s = summarize(&events);
        assert_eq!(
            s.blocks,
            vec![
                Block::Reasoning {
                    id: "rs_0a1b2c3d4e5f6071829300000000000005".into(),
                    encrypted_content: Some(
                        "Z0FBQUFBQnN5bnRoZXRpYy1yb3VuZC10d28tbm90LXZhbGlk".into()
                    ),
                    summary: vec![],
                },
                Block::text("a.txt says alpha; Zürich/b.txt says beta — done ☔"),
            ]
        );
        assert_eq!(s.stop, Some(StopReason::EndTurn));
        assert_eq!(s.usage.unwrap().reasoning_tokens, 64);
    }
}

#[test]
fn the_reference_sample_of_two_function_calls_maps_to_two_calls() {
    for events in mapped("samples/openai-responses-function-calls.sse") {
        let s = summarize(&events);
        let calls: Vec<(&str, &Value)> = s
            .blocks
            .iter()
            .map(|b| match b {
                Block::ToolUse(c) => (c.id.as_str(), &c.input),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            calls,
            [
                (
                    "call_Jq3VnY7sXbT2kL9mWp4cR8dA",
                    &json!({"city":"Paris","unit":"celsius"})
                ),
                (
                    "call_Hd5FzU1eQr6gNs0xKv2tB7yM",
                    &json!({"city":"Zürich","unit":"celsius"})
                ),
            ]
        );
        let u = s.usage.unwrap();
        assert_eq!((u.input_tokens, u.output_tokens), (96, 52));
        assert_eq!(s.stop, Some(StopReason::ToolUse));
    }
}

#[test]
fn a_call_is_emitted_as_soon_as_its_item_is_done() {
    let bytes = read(ROUND1);
    let text = String::from_utf8(bytes.clone()).unwrap();
    // Up to the first call's `output_item.done`: the response is still going.
    let marker = "\"type\":\"function_call\",\"status\":\"completed\"";
    let end = text.find(marker).unwrap() + text[text.find(marker).unwrap()..].find("\n\n").unwrap();
    let mut mapper = ResponsesMapper::new("openai");
    let mut decoder = crate::sse::Decoder::default();
    let mut events = Vec::new();
    decoder.feed(&bytes[..end + 2], &mut events).unwrap();
    let mut out = Vec::new();
    for ev in events {
        mapper.map(ev, &mut out).unwrap();
    }
    assert!(!mapper.is_done());
    let calls = out
        .iter()
        .filter(|e| matches!(e, StreamEvent::Block(Block::ToolUse(_))))
        .count();
    assert_eq!(calls, 1);
}

#[test]
fn an_incomplete_response_cuts_the_open_call_and_drops_half_reasoning() {
    for events in mapped("samples/openai-responses-incomplete.sse") {
        let s = summarize(&events);
        let [Block::ToolUse(call)] = s.blocks.as_slice() else {
            panic!("{:?}", s.blocks)
        };
        assert_eq!(call.id, "call_cut");
        assert_eq!(call.defect, Some(CallDefect::Truncated));
        assert_eq!(call.raw_input.as_deref(), Some(r#"{"path":"a."#));
        assert_eq!(s.stop, Some(StopReason::MaxTokens));
        assert_eq!(s.usage.unwrap().output_tokens, 16);
    }
}

fn event(data: Value) -> String {
    format!(
        "event: {}\ndata: {data}\n\n",
        data["type"].as_str().unwrap()
    )
}

fn run_events(events: &[Value]) -> Result<Vec<StreamEvent>, ProviderError> {
    let bytes: String = events.iter().cloned().map(event).collect();
    run(ResponsesMapper::new("openai"), bytes.as_bytes(), 0)
}

#[test]
fn a_content_filter_ends_the_response_as_a_refusal() {
    let events = run_events(&[
        json!({"type":"response.output_item.added","output_index":0,"item":{"type":"message","id":"m","content":[]}}),
        json!({"type":"response.output_text.delta","output_index":0,"item_id":"m","content_index":0,"delta":"Sure, here"}),
        json!({"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"content_filter"}}}),
    ])
    .unwrap();
    let s = summarize(&events);
    assert_eq!(s.blocks, vec![Block::text("Sure, here")]);
    assert_eq!(s.stop, Some(StopReason::Refusal));
}

#[test]
fn failed_responses_and_error_events_are_stream_errors_naming_the_cause() {
    let failed = run_events(&[
        json!({"type":"response.failed","response":{"status":"failed",
        "error":{"code":"server_error","message":"The model failed to generate a response."}}}),
    ])
    .unwrap_err();
    assert!(matches!(failed, ProviderError::Stream { .. }), "{failed:?}");
    assert_eq!(
        failed.to_string(),
        "openai: error in stream: The model failed to generate a response. (server_error)"
    );
    assert!(failed.is_retryable());
    let error = run_events(&[json!({"type":"error","code":"ERR_SOMETHING",
        "message":"Something went wrong","param":null,"sequence_number":1})])
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "openai: error in stream: Something went wrong (ERR_SOMETHING)"
    );
}

#[test]
fn a_stream_without_its_terminal_event_is_truncated_but_a_missing_blank_line_is_not() {
    let bytes = read(ROUND1);
    let text = std::str::from_utf8(&bytes).unwrap();
    let cut = text.find("event: response.completed").unwrap();
    let err = run(ResponsesMapper::new("openai"), &bytes[..cut], 0).unwrap_err();
    assert!(
        matches!(
            err,
            ProviderError::Truncated {
                expected: "response.completed",
                ..
            }
        ),
        "{err:?}"
    );
    let unterminated = text.trim_end_matches('\n');
    let s = summarize(&run(ResponsesMapper::new("openai"), unterminated.as_bytes(), 0).unwrap());
    assert_eq!(s.stop, Some(StopReason::ToolUse));
}

#[test]
fn deltas_without_their_done_events_still_make_blocks_when_the_response_completes() {
    let events = run_events(&[
        json!({"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc","call_id":"c1","name":"grep","arguments":""}}),
        json!({"type":"response.function_call_arguments.delta","output_index":0,"item_id":"fc","delta":"{\"pattern\":"}),
        json!({"type":"response.function_call_arguments.delta","output_index":0,"item_id":"fc","delta":"\"x\"}"}),
        json!({"type":"response.completed","response":{"status":"completed"}}),
    ])
    .unwrap();
    let s = summarize(&events);
    let [Block::ToolUse(call)] = s.blocks.as_slice() else {
        panic!("{:?}", s.blocks)
    };
    assert_eq!(
        (call.id.as_str(), &call.input),
        ("c1", &json!({"pattern":"x"}))
    );
    assert_eq!(s.stop, Some(StopReason::ToolUse));
    // Every other event type is ignored, whatever it carries.
    let events = run_events(&[
        json!({"type":"response.web_search_call.searching","output_index":0,"item_id":"ws"}),
        json!({"type":"response.output_item.added","output_index":0,"item":{"type":"web_search_call","id":"ws"}}),
        json!({"type":"response.completed","response":{"status":"completed","usage":null}}),
    ])
    .unwrap();
    assert_eq!(summarize(&events).blocks, vec![]);
}

// ---- request ----

fn schema() -> &'static jsonschema::Validator {
    static SCHEMA: std::sync::OnceLock<jsonschema::Validator> = std::sync::OnceLock::new();
    SCHEMA.get_or_init(|| {
        let path = format!("{WIRE}/openai-responses-request.schema.json");
        let schema: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        jsonschema::validator_for(&schema).unwrap()
    })
}

/// Serializes a body, failing the test unless it validates against the vendored SDK schema.
fn body(
    model: &str,
    provider: &str,
    flavor: Flavor,
    request: &Request,
    options: &Options,
) -> Value {
    let got =
        serde_json::to_value(build_request(model, provider, flavor, request, options)).unwrap();
    let errors: Vec<String> = schema()
        .iter_errors(&got)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{got:#}");
    got
}

fn tool() -> ToolSpec {
    ToolSpec {
        name: "read_file".into(),
        description: "Read a file.".into(),
        input_schema: json!({"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}),
        class: Class::Safe,
    }
}

fn result(id: &str, content: &str) -> ToolResult {
    ToolResult {
        tool_use_id: id.into(),
        name: "read_file".into(),
        is_error: false,
        content: content.into(),
        error_kind: None,
        duration_ms: 0,
        truncated: false,
        bytes: 0,
        full_output: None,
        redacted: Vec::new(),
        volatile: Vec::new(),
        exit_code: None,
        media: Vec::new(),
    }
}

#[test]
fn round_two_echoes_the_reasoning_item_unchanged_before_the_calls_and_their_outputs() {
    let blocks = summarize(&run(ResponsesMapper::new("openai"), &read(ROUND1), 1).unwrap()).blocks;
    let messages = vec![
        Message::User("read both files".into()),
        Message::Assistant {
            blocks,
            provider: "openai".into(),
        },
        Message::ToolResults(vec![
            result("call_Rk2dQ9xVb7mN4pL8sT1wY6zA", "alpha"),
            result("call_Hc5fJ3uWq0eK9rX2vB8nM1tG", "beta"),
        ]),
    ];
    let spec = tool();
    let tools = [&spec];
    let request = Request {
        system: "Be brief.",
        messages: &messages,
        tools: &tools,
        max_tokens: Some(2000),
        tool_choice: ToolChoice::Auto,
        cache: None,
        output_schema: None,
    };
    let got = body(
        "o4-mini",
        "openai",
        Flavor::OpenAi,
        &request,
        &Options::default(),
    );
    assert_eq!(
        got,
        json!({
            "model": "o4-mini",
            "stream": true,
            "store": false,
            "instructions": "Be brief.",
            "input": [
                {"type":"message","role":"user","content":"read both files"},
                {"type":"reasoning","id":"rs_0a1b2c3d4e5f6071829300000000000001",
                 "summary":[{"type":"summary_text","text":SUMMARY_1},{"type":"summary_text","text":SUMMARY_2}],
                 "encrypted_content":ENCRYPTED},
                {"type":"message","role":"assistant","content":"Reading both files ✓"},
                {"type":"function_call","call_id":"call_Rk2dQ9xVb7mN4pL8sT1wY6zA","name":"read_file",
                 "arguments":"{\"path\":\"a.txt\"}"},
                {"type":"function_call","call_id":"call_Hc5fJ3uWq0eK9rX2vB8nM1tG","name":"read_file",
                 "arguments":"{\"path\": \"Z\\u00fcrich/b.txt\"}"},
                {"type":"function_call_output","call_id":"call_Rk2dQ9xVb7mN4pL8sT1wY6zA","output":"alpha"},
                {"type":"function_call_output","call_id":"call_Hc5fJ3uWq0eK9rX2vB8nM1tG","output":"beta"},
            ],
            "tools": [{"type":"function","name":"read_file","description":"Read a file.",
                       "parameters":spec.input_schema,"strict":false}],
            "parallel_tool_calls": true,
            "include": ["reasoning.encrypted_content"],
            "max_output_tokens": 2000,
        })
    );
    // The same turn made under the other name of the same endpoint is echoed too.
    let forced = body(
        "o4-mini",
        "openai-responses",
        Flavor::OpenAi,
        &request,
        &Options::default(),
    );
    assert_eq!(forced["input"], got["input"]);
}

#[test]
fn other_providers_thinking_and_foreign_reasoning_are_never_sent() {
    let call = ToolUse::from_raw("toolu_1".into(), "read_file".into(), r#"{"path":"a"}"#);
    let reasoning = |enc: Option<&str>| Block::Reasoning {
        id: "rs_1".into(),
        encrypted_content: enc.map(Into::into),
        summary: vec!["why".into()],
    };
    let messages = vec![
        Message::User("q".into()),
        Message::Assistant {
            blocks: vec![
                Block::Thinking {
                    text: "hmm".into(),
                    signature: Some("sig".into()),
                },
                Block::RedactedThinking { data: "xx".into() },
                Block::Text {
                    text: "".into(),
                    signature: Some("gemini-sig".into()),
                },
                Block::text("looking"),
                Block::ToolUse(call.clone()),
            ],
            provider: "anthropic".into(),
        },
        Message::ToolResults(vec![ToolResult::error(&call, ErrorKind::Denied, "no")]),
        // Reasoning from a compatible server's Responses endpoint stays there.
        Message::Assistant {
            blocks: vec![reasoning(Some("enc")), Block::text("ok")],
            provider: "ollama".into(),
        },
        // Our own reasoning without encrypted content cannot be sent back by id alone.
        Message::Assistant {
            blocks: vec![reasoning(None), Block::text("fine")],
            provider: "openai".into(),
        },
        Message::User("next".into()),
    ];
    let request = Request {
        system: "",
        messages: &messages,
        tools: &[],
        max_tokens: None,
        tool_choice: ToolChoice::Auto,
        cache: None,
        output_schema: None,
    };
    let got = body(
        "gpt-4.1",
        "openai",
        Flavor::OpenAi,
        &request,
        &Options::default(),
    );
    assert_eq!(
        got["input"],
        json!([
            {"type":"message","role":"user","content":"q"},
            {"type":"message","role":"assistant","content":"looking"},
            {"type":"function_call","call_id":"toolu_1","name":"read_file","arguments":"{\"path\":\"a\"}"},
            {"type":"function_call_output","call_id":"toolu_1","output":"Error: no"},
            {"type":"message","role":"assistant","content":"ok"},
            {"type":"message","role":"assistant","content":"fine"},
            {"type":"message","role":"user","content":"next"},
        ])
    );
    // gpt-4.1 is no reasoning model: no encrypted reasoning asked for, no instructions, no tools.
    for absent in [
        "include",
        "reasoning",
        "instructions",
        "tools",
        "tool_choice",
        "temperature",
    ] {
        assert!(got.get(absent).is_none(), "{absent}: {got}");
    }
}

#[test]
fn options_become_reasoning_effort_and_temperature() {
    let messages = vec![Message::User("q".into())];
    let spec = tool();
    let tools = [&spec];
    let request = Request {
        system: "s",
        messages: &messages,
        tools: &tools,
        max_tokens: None,
        tool_choice: ToolChoice::None,
        cache: None,
        output_schema: None,
    };
    let effort = Options {
        reasoning_effort: Some(Effort::High),
        ..Options::default()
    };
    let got = body("o3", "openai", Flavor::OpenAi, &request, &effort);
    assert_eq!(got["reasoning"], json!({"effort":"high"}));
    assert_eq!(got["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(got["tool_choice"], "none");
    let warm = Options {
        temperature: Some(0.3),
        ..Options::default()
    };
    let got = body(
        "gpt-4.1",
        "openai-responses",
        Flavor::OpenAi,
        &request,
        &warm,
    );
    assert_eq!(got["temperature"], json!(0.3));
    assert!(got.get("include").is_none());
    // A compatible server gets the effort but no request for OpenAI's encrypted reasoning.
    let got = body(
        "gpt-oss:20b",
        "ollama",
        Flavor::Compatible,
        &request,
        &effort,
    );
    assert_eq!(got["reasoning"], json!({"effort":"high"}));
    assert!(got.get("include").is_none());
}

#[test]
fn the_vendored_schema_rejects_what_the_sdk_type_rejects() {
    let ok = json!({"model":"o3","stream":true,"input":[{"role":"user","content":"q"}]});
    assert!(schema().is_valid(&ok));
    for bad in [
        json!({"model":"o3","stream":false,"input":[]}),
        json!({"model":"o3","stream":true,"input":[],"reasoning":{"effort":"extreme"}}),
        json!({"model":"o3","stream":true,"input":[],"temperature":2.5}),
        json!({"model":"o3","stream":true,"input":[],"unknown":1}),
        json!({"model":"o3","stream":true,"input":[{"type":"reasoning","id":"rs","encrypted_content":"e"}]}),
        json!({"model":"o3","stream":true,"input":[{"type":"function_call","call_id":"c","name":"n"}]}),
        json!({"model":"o3","stream":true,"input":[],"tools":[{"type":"function","name":"n"}]}),
        json!({"model":"o3","stream":true,"input":[],"include":["reasoning.everything"]}),
    ] {
        assert!(!schema().is_valid(&bad), "accepted {bad}");
    }
}
