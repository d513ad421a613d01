use super::request::VERTEX_VERSION;
use super::*;
use crate::Options;
use crate::conversation::{Class, ToolSpec};
use crate::conversation::{ErrorKind, ToolResult};
use crate::testing::{CHUNKINGS, expected, read, run, summarize};
use pretty_assertions::assert_eq;
use serde_json::json;

fn mapped(name: &str) -> Vec<Result<Vec<StreamEvent>, ProviderError>> {
    let bytes = read(name);
    CHUNKINGS
        .iter()
        .map(|&c| run(AnthropicMapper::default(), &bytes, c))
        .collect()
}

/// The expected.json content blocks as neutral blocks.
fn expected_blocks(v: &Value) -> Vec<Block> {
    v["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| match b["type"].as_str().unwrap() {
            "text" => Block::text(b["text"].as_str().unwrap()),
            "thinking" => Block::Thinking {
                text: b["thinking"].as_str().unwrap().into(),
                signature: Some(b["signature"].as_str().unwrap().into()),
            },
            "tool_use" => {
                let mut call = ToolUse::from_raw(
                    b["id"].as_str().unwrap().into(),
                    b["name"].as_str().unwrap().into(),
                    "",
                );
                call.input = b["input"].clone();
                Block::ToolUse(call)
            }
            other => panic!("unexpected block type {other}"),
        })
        .collect()
}

#[test]
fn parallel_tools_stream_maps_to_the_expected_blocks_at_every_chunking() {
    let want = expected("samples/anthropic-parallel-tools.expected.json");
    for (name, key) in [
        ("samples/anthropic-parallel-tools.sse", "round1"),
        ("samples/anthropic-parallel-tools-round2.sse", "round2"),
    ] {
        for events in mapped(name) {
            let s = summarize(&events.unwrap());
            assert_eq!(s.blocks, expected_blocks(&want[key]), "{name}");
            let usage = s.usage.unwrap();
            assert_eq!(
                usage.input_tokens,
                want[key]["usage"]["input_tokens"].as_u64().unwrap()
            );
            assert_eq!(
                usage.output_tokens,
                want[key]["usage"]["output_tokens"].as_u64().unwrap()
            );
            let stop = want[key]["stop_reason"].as_str().unwrap();
            assert_eq!(s.stop, Some(stop_reason(stop)));
        }
    }
}

#[test]
fn thinking_and_signature_are_kept_exactly() {
    let want = expected("samples/anthropic-thinking-tools.expected.json");
    for events in mapped("samples/anthropic-thinking-tools.sse") {
        let s = summarize(&events.unwrap());
        assert_eq!(s.blocks, expected_blocks(&want["round1"]));
    }
}

#[test]
fn an_error_event_mid_stream_is_an_error_not_a_success() {
    for events in mapped("samples/anthropic-error-midstream.sse") {
        let err = events.unwrap_err();
        assert!(matches!(err, ProviderError::Stream { .. }));
        assert_eq!(
            err.to_string(),
            "anthropic: error in stream: Overloaded (overloaded_error)"
        );
        assert!(err.is_retryable());
    }
}

#[test]
fn a_tool_call_cut_off_by_max_tokens_is_marked_and_never_parsed() {
    for events in mapped("samples/anthropic-max-tokens-mid-tool.sse") {
        let s = summarize(&events.unwrap());
        assert_eq!(s.stop, Some(StopReason::MaxTokens));
        assert_eq!(s.blocks[0], Block::text("Checking Paris first."));
        let Block::ToolUse(call) = &s.blocks[1] else {
            panic!("{:?}", s.blocks)
        };
        assert_eq!(call.defect, Some(CallDefect::Truncated));
        assert_eq!(call.raw_input.as_deref(), Some("{\"city\": \"Par"));
        assert_eq!(call.input, json!({}));
    }
}

#[test]
fn recorded_sdk_fixtures_map_without_the_final_blank_line() {
    for events in mapped("recorded/anthropic-sdk-python__tool_use_response.sse") {
        let s = summarize(&events.unwrap());
        assert_eq!(s.stop, Some(StopReason::ToolUse));
        let Some(Block::ToolUse(call)) = s.blocks.last() else {
            panic!("{:?}", s.blocks)
        };
        assert_eq!(call.name, "get_weather");
        assert!(call.input.get("location").is_some(), "{:?}", call.input);
    }
    for events in mapped("recorded/anthropic-sdk-python__incomplete_partial_json_response.sse") {
        let s = summarize(&events.unwrap());
        assert_eq!(s.stop, Some(StopReason::MaxTokens));
        let Some(Block::ToolUse(call)) = s.blocks.last() else {
            panic!("{:?}", s.blocks)
        };
        assert_eq!(call.defect, Some(CallDefect::Truncated));
    }
    for events in mapped("recorded/anthropic-sdk-python__thinking-signature-refusal.sse") {
        let s = summarize(&events.unwrap());
        assert_eq!(s.stop, Some(StopReason::Refusal));
        assert!(
            matches!(
                &s.blocks[0],
                Block::Thinking {
                    signature: Some(_),
                    ..
                }
            ),
            "{:?}",
            s.blocks
        );
    }
}

#[test]
fn a_stream_that_ends_before_its_stop_is_truncated() {
    let bytes = read("samples/anthropic-parallel-tools.sse");
    let cut = &bytes[..bytes.len() / 2];
    let err = run(AnthropicMapper::default(), cut, 5).unwrap_err();
    assert!(
        matches!(
            err,
            ProviderError::Truncated {
                expected: "message_stop",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn every_stop_reason_maps() {
    for (wire, ours) in [
        ("end_turn", StopReason::EndTurn),
        ("tool_use", StopReason::ToolUse),
        ("max_tokens", StopReason::MaxTokens),
        ("stop_sequence", StopReason::StopSequence),
        ("pause_turn", StopReason::PauseTurn),
        ("refusal", StopReason::Refusal),
        (
            "model_context_window_exceeded",
            StopReason::ContextWindowExceeded,
        ),
        ("something_new", StopReason::Other),
    ] {
        let stream = format!(
            "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"usage\":{{\"input_tokens\":1,\"output_tokens\":1}}}}}}\n\n\
             event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"{wire}\"}},\"usage\":{{\"output_tokens\":2}}}}\n\n\
             event: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
        );
        let s = summarize(&run(AnthropicMapper::default(), stream.as_bytes(), 0).unwrap());
        assert_eq!(s.stop, Some(ours), "{wire}");
    }
}

#[test]
fn redacted_thinking_arrives_whole_and_is_kept() {
    let stream = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"redacted_thinking\",\"data\":\"EncRyPtEd\"}}\n\n\
        event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
        event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\n\
        event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    let s = summarize(&run(AnthropicMapper::default(), stream.as_bytes(), 1).unwrap());
    assert_eq!(
        s.blocks,
        vec![Block::RedactedThinking {
            data: "EncRyPtEd".into()
        }]
    );
}

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Get the current weather for a city.".into(),
        input_schema: json!({"type":"object","properties":{"city":{"type":"string","description":"City name"},
            "unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"]}),
        class: Class::Safe,
    }
}

fn result(id: &str, content: &str) -> ToolResult {
    ToolResult {
        tool_use_id: id.into(),
        name: "get_weather".into(),
        is_error: false,
        content: content.into(),
        error_kind: None,
        duration_ms: 1,
        truncated: false,
        bytes: 0,
        full_output: None,
        redacted: Vec::new(),
        volatile: Vec::new(),
        exit_code: None,
        media: Vec::new(),
    }
}

/// Round 2 of a reference conversation, built from the mapped round-1 stream.
fn round_two(sample: &str) -> (Value, Value) {
    let reference = expected(&format!("samples/{sample}.requests.json"));
    let model = reference["round2_request"]["model"]
        .as_str()
        .unwrap()
        .to_owned();
    round_two_for(sample, Host::Anthropic { model: &model }, "anthropic")
}

/// [`round_two`] for `host`, with the conversation recorded by the provider named `own`.
fn round_two_for(sample: &str, host: Host<'_>, own: &str) -> (Value, Value) {
    let reference = expected(&format!("samples/{sample}.requests.json"));
    let want = reference["round2_request"].clone();
    let bytes = read(&format!("samples/{sample}.sse"));
    let blocks = summarize(&run(AnthropicMapper::default(), &bytes, 3).unwrap()).blocks;
    let messages = vec![
        Message::User(want["messages"][0]["content"].as_str().unwrap().into()),
        Message::Assistant {
            blocks,
            provider: own.into(),
        },
        Message::ToolResults(vec![
            result(
                "toolu_01A09q90qw90lq917835lq9a",
                r#"{"temp_c":18,"conditions":"cloudy"}"#,
            ),
            result(
                "toolu_01B7KhGz2sT4c9PqWmYx3VnD",
                r#"{"temp_c":14,"conditions":"light rain"}"#,
            ),
        ]),
    ];
    let tool = weather_tool();
    let tools = [&tool];
    let request = Request {
        system: want["system"].as_str().unwrap_or(""),
        messages: &messages,
        tools: &tools,
        max_tokens: Some(want["max_tokens"].as_u64().unwrap() as u32),
        tool_choice: crate::ToolChoice::Auto,
        cache: None,
        output_schema: None,
    };
    // The reference's thinking budget, as `--thinking-budget` asks for it.
    let options = Options {
        thinking_budget: want["thinking"]["budget_tokens"].as_u64().map(|b| b as u32),
        ..Options::default()
    };
    let got = serde_json::to_value(build_body(host, own, &request, &options)).unwrap();
    (got, want)
}

/// The reference shows one tool_result with block-array content; rounds sends the equivalent
/// string form, which the API documents as the same thing.
fn text_blocks_to_string(v: &mut Value) {
    for m in v["messages"].as_array_mut().unwrap() {
        for b in m["content"].as_array_mut().into_iter().flatten() {
            if let Some(parts) = b["content"].as_array() {
                let text: String = parts.iter().map(|p| p["text"].as_str().unwrap()).collect();
                b["content"] = Value::String(text);
            }
        }
    }
}

#[test]
fn round_two_request_matches_the_reference_body() {
    let (got, mut want) = round_two("anthropic-parallel-tools");
    text_blocks_to_string(&mut want);
    assert_eq!(got, want);
}

/// Claude on Vertex: the body the anthropic SDK's Vertex client (`AnthropicVertex`) sends for
/// the same round-2 request, captured by fixtures/vertex/sdk_vertex_request.py: no `model`
/// (it is in the URL), `anthropic_version: "vertex-2023-10-16"`, thinking (signed on Vertex)
/// echoed, the rest as Anthropic's own API takes it.
#[test]
fn vertex_round_two_matches_the_sdk_vertex_client() {
    for sample in ["anthropic-parallel-tools", "anthropic-thinking-tools"] {
        let (got, _) = round_two_for(sample, Host::Vertex, "vertex");
        let path = format!(
            "{}/../../fixtures/vertex/{sample}.vertex-request.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let captured: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let mut want = captured["body"].clone();
        text_blocks_to_string(&mut want);
        // rounds always names the tool choice; `auto` is the API's default when it is absent.
        if want.get("tool_choice").is_none() {
            want["tool_choice"] = json!({"type": "auto"});
        }
        assert_eq!(got, want, "{sample}");
        assert!(got.get("model").is_none());
        assert_eq!(got["anthropic_version"], VERTEX_VERSION);
    }
}

/// A Vertex body asks for the hour-long cache in the body's `anthropic_beta`, where Vertex
/// reads betas; Anthropic's own body never carries the field.
#[test]
fn vertex_body_carries_betas_and_anthropic_body_does_not() {
    let messages = vec![Message::User("a".into())];
    let cache = crate::Cache {
        ttl: CacheTtl::OneHour,
        key: "k".into(),
    };
    let request = Request {
        system: "s",
        messages: &messages,
        tools: &[],
        max_tokens: None,
        tool_choice: crate::ToolChoice::Auto,
        cache: Some(&cache),
        output_schema: None,
    };
    let vertex = serde_json::to_value(build_body(
        Host::Vertex,
        "vertex",
        &request,
        &Options::default(),
    ))
    .unwrap();
    assert_eq!(vertex["anthropic_beta"], json!([EXTENDED_TTL_BETA]));
    assert_eq!(
        vertex["system"][0]["cache_control"],
        json!({"type":"ephemeral","ttl":"1h"})
    );
    let own = serde_json::to_value(build_request("m", &request, &Options::default())).unwrap();
    assert!(own.get("anthropic_beta").is_none() && own.get("anthropic_version").is_none());
    assert_eq!(own["model"], "m");
}

#[test]
fn round_two_echoes_the_thinking_block_unchanged_before_the_tool_calls() {
    let (got, mut want) = round_two("anthropic-thinking-tools");
    text_blocks_to_string(&mut want);
    assert_eq!(got["messages"], want["messages"]);
}

#[test]
fn thinking_from_another_provider_is_not_sent_and_turns_merge() {
    let messages = vec![
        Message::User("a".into()),
        Message::Assistant {
            blocks: vec![
                Block::Thinking {
                    text: "t".into(),
                    signature: Some("sig".into()),
                },
                Block::text(""),
                Block::ToolUse(ToolUse::from_raw(
                    "c1".into(),
                    "read_file".into(),
                    r#"{"path":"x"}"#,
                )),
            ],
            provider: "openai".into(),
        },
        Message::ToolResults(vec![ToolResult::error(
            &ToolUse::from_raw("c1".into(), "read_file".into(), "{}"),
            ErrorKind::Denied,
            "nope",
        )]),
        Message::User("next".into()),
    ];
    let request = Request {
        system: "",
        messages: &messages,
        tools: &[],
        max_tokens: None,
        tool_choice: crate::ToolChoice::Auto,
        cache: None,
        output_schema: None,
    };
    let got = serde_json::to_value(build_request("m", &request, &Options::default())).unwrap();
    assert_eq!(
        got["messages"],
        json!([
            {"role":"user","content":"a"},
            {"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"read_file","input":{"path":"x"}}]},
            {"role":"user","content":[
                {"type":"tool_result","tool_use_id":"c1","content":"nope","is_error":true},
                {"type":"text","text":"next"}
            ]}
        ])
    );
    assert_eq!(got["max_tokens"], DEFAULT_MAX_TOKENS);
    assert!(
        got.get("tools").is_none()
            && got.get("tool_choice").is_none()
            && got.get("system").is_none()
    );
}
