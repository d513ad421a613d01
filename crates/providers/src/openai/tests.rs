use super::*;
use crate::Options;
use crate::conversation::ToolResult;
use crate::conversation::{Class, ToolSpec};
use crate::testing::{CHUNKINGS, expected, read, run, summarize};
use pretty_assertions::assert_eq;
use serde_json::json;

fn mapped(name: &str) -> Vec<Result<Vec<StreamEvent>, ProviderError>> {
    let bytes = read(name);
    CHUNKINGS
        .iter()
        .map(|&c| run(OpenAiMapper::new("openai"), &bytes, c))
        .collect()
}

fn calls(blocks: &[Block]) -> Vec<&ToolUse> {
    blocks
        .iter()
        .filter_map(|b| match b {
            Block::ToolUse(c) => Some(c),
            _ => None,
        })
        .collect()
}

#[test]
fn interleaved_parallel_calls_match_the_expected_calls_at_every_chunking() {
    let want = expected("samples/openai-chat-parallel-tools.expected.json");
    for name in [
        "samples/openai-chat-parallel-tools.sse",
        "samples/openai-chat-parallel-tools.crlf.sse",
    ] {
        for events in mapped(name) {
            let s = summarize(&events.unwrap());
            let got = calls(&s.blocks);
            let expected_calls = want["round1"]["tool_calls"].as_array().unwrap();
            assert_eq!(got.len(), expected_calls.len(), "{name}");
            for (call, exp) in got.iter().zip(expected_calls) {
                assert_eq!(call.id, exp["id"].as_str().unwrap());
                assert_eq!(call.name, exp["name"].as_str().unwrap());
                assert_eq!(call.input, exp["parsed"]);
                assert_eq!(call.arguments_text(), exp["arguments"].as_str().unwrap());
                assert_eq!(call.defect, None);
            }
            assert_eq!(s.stop, Some(StopReason::ToolUse));
            let u = s.usage.unwrap();
            assert_eq!((u.input_tokens, u.output_tokens), (96, 52));
        }
    }
}

#[test]
fn round_two_text_is_one_block_with_usage() {
    let want = expected("samples/openai-chat-parallel-tools.expected.json");
    for events in mapped("samples/openai-chat-parallel-tools-round2.sse") {
        let s = summarize(&events.unwrap());
        let text = want["round2"]["content"].as_str().unwrap();
        assert_eq!(s.blocks, vec![Block::text(text)]);
        assert_eq!(s.text, text);
        assert_eq!(s.stop, Some(StopReason::EndTurn));
        assert_eq!(s.usage.unwrap().output_tokens, 31);
    }
}

#[test]
fn a_call_is_emitted_once_a_later_index_starts_and_its_arguments_parse() {
    // Index 0 is complete when index 1 begins; it must be emitted before the stream finishes.
    let bytes = read("recorded/openai-python__chat-parallel-tool-calls.recorded.sse");
    let mut mapper = OpenAiMapper::new("openai");
    let mut decoder = crate::sse::Decoder::default();
    let mut events = Vec::new();
    decoder.feed(&bytes, &mut events).unwrap();
    let mut out = Vec::new();
    let mut first_call_at = None;
    let mut finish_at = None;
    for (i, ev) in events.into_iter().enumerate() {
        if ev.data.contains("\"finish_reason\":\"tool_calls\"") {
            finish_at = Some(i);
        }
        mapper.map(ev, &mut out).unwrap();
        if first_call_at.is_none()
            && out
                .iter()
                .any(|e| matches!(e, StreamEvent::Block(Block::ToolUse(_))))
        {
            first_call_at = Some(i);
        }
    }
    assert!(
        first_call_at.unwrap() < finish_at.unwrap(),
        "{first_call_at:?} vs {finish_at:?}"
    );
    let s = summarize(&out);
    let names: Vec<&str> = calls(&s.blocks).iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["GetWeatherArgs", "get_stock_price"]);
}

#[test]
fn interleaved_fragments_never_emit_a_call_early() {
    // In the interleaved sample, index 1 starts while index 0 is still `""`; nothing may be
    // emitted until index 0's arguments parse.
    for events in mapped("samples/openai-chat-parallel-tools.sse") {
        for e in events.unwrap() {
            if let StreamEvent::Block(Block::ToolUse(c)) = e {
                assert_eq!(c.defect, None, "{c:?}");
            }
        }
    }
}

#[test]
fn long_arguments_in_small_fragments_map_in_linear_time() {
    // A file written through a call's arguments arrives in thousands of fragments; parsing the
    // growing arguments at each one took time quadratic in their length (here ~8 GB of parsing).
    let chunk = |delta: Value| {
        let c = json!({"choices":[{"index":0,"delta":delta,"finish_reason":null}]});
        format!("data: {c}\n\n")
    };
    let mut stream = chunk(
        json!({"tool_calls":[{"index":0,"id":"c1","function":{"name":"write_file","arguments":"{\"content\":\""}}]}),
    );
    let fragment =
        chunk(json!({"tool_calls":[{"index":0,"function":{"arguments":"0123456789abcdef"}}]}));
    stream.push_str(&fragment.repeat(32 * 1024));
    stream.push_str(&chunk(
        json!({"tool_calls":[{"index":0,"function":{"arguments":"\"}"}}]}),
    ));
    stream.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n");
    let started = std::time::Instant::now();
    let s = summarize(&run(OpenAiMapper::new("openai"), stream.as_bytes(), 0).unwrap());
    let took = started.elapsed();
    assert_eq!(
        calls(&s.blocks)[0].input["content"].as_str().unwrap().len(),
        512 * 1024
    );
    assert!(took < std::time::Duration::from_secs(10), "{took:?}");
}

#[test]
fn ollama_whole_calls_and_reasoning() {
    let bytes = read("samples/ollama-openai-compat-tools.sse");
    for &c in CHUNKINGS {
        let s = summarize(&run(OpenAiMapper::new("ollama"), &bytes, c).unwrap());
        assert_eq!(
            s.blocks[0],
            Block::Thinking {
                text: "Two independent lookups; call get_weather for each city.".into(),
                signature: None
            }
        );
        let got = calls(&s.blocks);
        assert_eq!(got.len(), 2);
        assert_eq!(
            (got[0].id.as_str(), &got[0].input),
            ("call_k3x9q2mw", &json!({"city":"Paris","unit":"celsius"}))
        );
        assert_eq!(
            (got[1].id.as_str(), &got[1].input),
            ("call_7fz0pd1c", &json!({"city":"Zürich","unit":"celsius"}))
        );
        assert_eq!(
            got[0].raw_input, None,
            "canonical arguments need no raw copy"
        );
        assert_eq!(s.usage.unwrap().input_tokens, 181);
    }
}

#[test]
fn llamacpp_reasoning_content_and_usage_by_default() {
    let bytes = read("samples/llamacpp-openai-compat-tools.sse");
    for &c in CHUNKINGS {
        let s = summarize(&run(OpenAiMapper::new("llamacpp"), &bytes, c).unwrap());
        assert!(
            matches!(&s.blocks[0], Block::Thinking { text, .. } if text == "Need weather for two cities.")
        );
        let got = calls(&s.blocks);
        assert_eq!(got[1].input, json!({"city":"Zürich","unit":"celsius"}));
        assert_eq!(got[1].id, "B5nT0vQ8cX2kM7hP4rW9yF1zL6jS3eGd");
        assert_eq!(s.usage.unwrap().output_tokens, 57);
    }
}

#[test]
fn missing_ids_are_generated_and_object_arguments_accepted() {
    let stream = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"glob\",\"arguments\":{\"pattern\":\"*.rs\"}}}]}}]}\n\n\
                  data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
                  data: [DONE]\n\n";
    let s = summarize(&run(OpenAiMapper::new("vllm"), stream.as_bytes(), 1).unwrap());
    let got = calls(&s.blocks);
    assert_eq!(got[0].id, "call_rounds_1_1");
    assert_eq!(got[0].input, json!({"pattern":"*.rs"}));
    assert_eq!(
        s.stop,
        Some(StopReason::ToolUse),
        "calls make it a tool round whatever finish_reason says"
    );
}

#[test]
fn errors_in_the_stream_in_every_shape() {
    for (stream, needle) in [
        (
            "data: {\"error\":{\"message\":\"context too long\",\"type\":\"invalid_request_error\"}}\n\n",
            "context too long",
        ),
        (
            "data: {\"object\":\"error\",\"message\":\"bad\",\"type\":\"BadRequestError\",\"code\":400}\n\n",
            "bad",
        ),
        (
            "error: {\"code\":400,\"message\":\"the request exceeds the available context size\"}\n\n",
            "exceeds",
        ),
    ] {
        let err = run(OpenAiMapper::new("llamacpp"), stream.as_bytes(), 3).unwrap_err();
        assert!(matches!(err, ProviderError::Stream { .. }), "{err}");
        assert!(err.to_string().contains(needle), "{err}");
    }
}

#[test]
fn done_without_final_blank_line_completes_and_no_done_is_truncated() {
    let text =
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n";
    let s = summarize(&run(OpenAiMapper::new("llamacpp"), text.as_bytes(), 2).unwrap());
    assert_eq!(s.stop, Some(StopReason::EndTurn));
    let cut = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n";
    let err = run(OpenAiMapper::new("openai"), cut.as_bytes(), 2).unwrap_err();
    assert!(matches!(
        err,
        ProviderError::Truncated {
            expected: "[DONE]",
            ..
        }
    ));
}

#[test]
fn length_cut_arguments_are_truncated_calls() {
    let stream = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"grep\",\"arguments\":\"{\\\"pat\"}}]}}]}\n\n\
                  data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n";
    let s = summarize(&run(OpenAiMapper::new("openai"), stream.as_bytes(), 0).unwrap());
    assert_eq!(calls(&s.blocks)[0].defect, Some(CallDefect::Truncated));
    assert_eq!(s.stop, Some(StopReason::MaxTokens));
}

#[test]
fn round_two_request_matches_the_reference_body() {
    let reference = expected("samples/openai-chat-parallel-tools.requests.json");
    let want = &reference["round2_request"];
    let bytes = read("samples/openai-chat-parallel-tools.sse");
    let blocks = summarize(&run(OpenAiMapper::new("openai"), &bytes, 1).unwrap()).blocks;
    let result = |id: &str, content: &str| ToolResult {
        tool_use_id: id.into(),
        name: "get_weather".into(),
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
    };
    let messages = vec![
        Message::User(want["messages"][1]["content"].as_str().unwrap().into()),
        Message::Assistant {
            blocks,
            provider: "openai".into(),
        },
        Message::ToolResults(vec![
            result(
                "call_Jq3VnY7sXbT2kL9mWp4cR8dA",
                r#"{"temp_c":18,"conditions":"cloudy"}"#,
            ),
            result(
                "call_Hd5FzU1eQr6gNs0xKv2tB7yM",
                r#"{"temp_c":14,"conditions":"light rain"}"#,
            ),
        ]),
    ];
    let function = &want["tools"][0]["function"];
    let tool = ToolSpec {
        name: function["name"].as_str().unwrap().into(),
        description: function["description"].as_str().unwrap().into(),
        input_schema: function["parameters"].clone(),
        class: Class::Safe,
    };
    let tools = [&tool];
    let request = Request {
        system: want["messages"][0]["content"].as_str().unwrap(),
        messages: &messages,
        tools: &tools,
        max_tokens: None,
        tool_choice: crate::ToolChoice::Auto,
        cache: None,
        output_schema: None,
    };
    let got = serde_json::to_value(build_request(
        "gpt-4.1",
        Flavor::OpenAi,
        &request,
        &Options::default(),
    ))
    .unwrap();
    // The reference uses strict mode and an explicit tool_choice; rounds' schemas have optional
    // properties (strict mode forbids them) and "auto" is the default.
    let mut want = want.clone();
    want.as_object_mut().unwrap().remove("tool_choice");
    want["tools"][0]["function"]
        .as_object_mut()
        .unwrap()
        .remove("strict");
    assert_eq!(got, want);
}

#[test]
fn compatible_servers_get_system_role_and_max_tokens_and_errors_are_marked() {
    let call = ToolUse::from_raw("c1".into(), "grep".into(), r#"{"pattern":"x"}"#);
    let messages = vec![
        Message::User("q".into()),
        Message::Assistant {
            blocks: vec![Block::text("looking"), Block::ToolUse(call.clone())],
            provider: "x".into(),
        },
        Message::ToolResults(vec![ToolResult::error(
            &call,
            crate::conversation::ErrorKind::Denied,
            "not allowed",
        )]),
    ];
    let request = Request {
        system: "sys",
        messages: &messages,
        tools: &[],
        max_tokens: Some(100),
        tool_choice: crate::ToolChoice::Auto,
        cache: None,
        output_schema: None,
    };
    let got = serde_json::to_value(build_request(
        "qwen",
        Flavor::Compatible,
        &request,
        &Options::default(),
    ))
    .unwrap();
    assert_eq!(got["messages"][0], json!({"role":"system","content":"sys"}));
    assert_eq!(got["messages"][2]["content"], "looking");
    assert_eq!(
        got["messages"][3],
        json!({"role":"tool","tool_call_id":"c1","content":"Error: not allowed"})
    );
    assert_eq!(got["max_tokens"], 100);
    assert!(got.get("max_completion_tokens").is_none() && got.get("parallel_tool_calls").is_none());
}
