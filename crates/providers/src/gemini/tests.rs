use super::*;
use crate::Options;
use crate::conversation::{CallDefect, ErrorKind, Message, ToolResult};
use crate::conversation::{Class, ToolSpec};
use crate::sse::Decoder;
use crate::testing::{CHUNKINGS, expected, read, run, summarize};
use pretty_assertions::assert_eq;
use serde_json::json;

fn mapped(name: &str) -> Vec<Result<Vec<StreamEvent>, ProviderError>> {
    let bytes = read(name);
    CHUNKINGS
        .iter()
        .map(|&c| run(GeminiMapper::default(), &bytes, c))
        .collect()
}

fn mapped_str(stream: &str) -> Result<Vec<StreamEvent>, ProviderError> {
    run(GeminiMapper::default(), stream.as_bytes(), 1)
}

fn call(id: &str, name: &str, input: Value, signature: Option<&str>) -> Block {
    let mut call = ToolUse::from_raw(id.into(), name.into(), "");
    call.input = input;
    call.signature = signature.map(str::to_owned);
    Block::ToolUse(call)
}

/// Round 1 of the reference scenario as neutral blocks, from expected.json.
fn expected_round1() -> Vec<Block> {
    let want = &expected("samples/gemini-parallel-function-calls.expected.json")["round1"];
    let mut blocks = vec![Block::Thinking {
        text: want["thought_text"].as_str().unwrap().into(),
        signature: None,
    }];
    for (n, c) in want["function_calls"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        blocks.push(call(
            &format!("{GENERATED_ID_PREFIX}1_{}", n + 1),
            c["name"].as_str().unwrap(),
            c["args"].clone(),
            c["thoughtSignature"].as_str(),
        ));
    }
    blocks
}

#[test]
fn parallel_calls_map_to_the_expected_blocks_at_every_chunking() {
    let want = &expected("samples/gemini-parallel-function-calls.expected.json")["round1"];
    let usage = &want["usage_last"];
    for name in [
        "samples/gemini-parallel-function-calls.sse",
        "samples/gemini-parallel-function-calls.crlf.sse",
    ] {
        for events in mapped(name) {
            let events = events.unwrap();
            let thinking: String = events
                .iter()
                .filter_map(|e| match e {
                    StreamEvent::ThinkingDelta(t) => Some(t.as_str()),
                    _ => None,
                })
                .collect();
            assert_eq!(thinking, want["thought_text"].as_str().unwrap());
            let s = summarize(&events);
            assert_eq!(s.blocks, expected_round1(), "{name}");
            assert_eq!(s.stop, Some(StopReason::ToolUse));
            let count = |k: &str| usage[k].as_u64().unwrap();
            assert_eq!(
                s.usage,
                Some(Usage {
                    input_tokens: count("promptTokenCount"),
                    output_tokens: count("candidatesTokenCount") + count("thoughtsTokenCount"),
                    cache_read_tokens: 0,
                    cache_write_tokens: 0,
                    reasoning_tokens: count("thoughtsTokenCount"),
                })
            );
        }
    }
}

#[test]
fn a_call_is_emitted_as_soon_as_its_chunk_arrives() {
    let bytes = read("samples/gemini-parallel-function-calls.sse");
    // Up to the end of the second event: the first call is in, the stream is not over.
    let second_end = bytes
        .windows(2)
        .enumerate()
        .filter(|(_, w)| w == b"\n\n")
        .nth(1)
        .unwrap()
        .0
        + 2;
    let mut decoder = Decoder::default();
    let mut events = Vec::new();
    decoder.feed(&bytes[..second_end], &mut events).unwrap();
    let mut mapper = GeminiMapper::default();
    let mut out = Vec::new();
    for ev in events {
        mapper.map(ev, &mut out).unwrap();
    }
    assert!(!mapper.is_done());
    let blocks: Vec<Block> = out
        .into_iter()
        .filter_map(|e| match e {
            StreamEvent::Block(b) => Some(b),
            _ => None,
        })
        .collect();
    assert_eq!(blocks, expected_round1()[..2].to_vec());
}

#[test]
fn round_two_keeps_the_signature_only_empty_part() {
    let want = &expected("samples/gemini-parallel-function-calls.expected.json")["round2"];
    let text = want["text"].as_str().unwrap();
    for events in mapped("samples/gemini-parallel-function-calls-round2.sse") {
        let s = summarize(&events.unwrap());
        assert_eq!(
            s.blocks,
            vec![
                Block::text(text),
                Block::Text {
                    text: String::new(),
                    signature: Some(want["trailing_signature"].as_str().unwrap().into()),
                },
            ]
        );
        assert_eq!(s.text, text);
        assert_eq!(s.stop, Some(StopReason::EndTurn));
        let u = s.usage.unwrap();
        assert_eq!((u.input_tokens, u.output_tokens), (142, 33));
    }
}

#[test]
fn recorded_googleai_fixtures_map() {
    for events in
        mapped("recorded/vertexai-sdk-test-data__googleai-thinking-function-call-signature.sse")
    {
        let s = summarize(&events.unwrap());
        assert_eq!(s.stop, Some(StopReason::ToolUse));
        let [Block::Thinking { text, signature }, Block::ToolUse(now)] = &s.blocks[..] else {
            panic!("{:?}", s.blocks)
        };
        // The two summary chunks are one thinking block; it has nothing to echo.
        assert!(text.starts_with("**Calculating the Days**"), "{text}");
        assert!(text.contains("**Determining the Approach**"), "{text}");
        assert_eq!(signature, &None);
        assert_eq!(
            (now.id.as_str(), now.name.as_str(), &now.input),
            ("gemini_call_1_1", "now", &json!({}))
        );
        let sig = now.signature.as_deref().unwrap();
        assert!(sig.starts_with("CiIBVKhc7vB+vaaq6rA/KC79") && sig.ends_with("XMlLleEs0"));
        assert_eq!(sig.len(), 1140);
        let u = s.usage.unwrap();
        assert_eq!((u.input_tokens, u.output_tokens), (38, 6 + 168));
    }
    for events in mapped("recorded/vertexai-sdk-test-data__googleai-basic-reply-short.sse") {
        let s = summarize(&events.unwrap());
        let text = "The capital of Wyoming is **Cheyenne**.\n";
        assert_eq!(s.blocks, vec![Block::text(text)]);
        assert_eq!(s.text, text);
        assert_eq!(s.stop, Some(StopReason::EndTurn));
    }
}

#[test]
fn a_bare_json_error_mid_stream_is_an_error_at_every_chunking() {
    for (name, message) in [
        (
            "samples/gemini-error-midstream.sse",
            "The model is overloaded. Please try again later. (UNAVAILABLE)",
        ),
        // Every chunk here says STOP: reading on to EOF is what finds the error.
        (
            "recorded/vertexai-sdk-test-data__vertexai-error-mid-stream.txt",
            "The operation was cancelled. (CANCELLED)",
        ),
    ] {
        for events in mapped(name) {
            let err = events.unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("gemini: error in stream: {message}"),
                "{name}"
            );
            assert!(matches!(err, ProviderError::Stream { .. }));
        }
    }
}

#[test]
fn an_error_chunk_in_data_and_a_blocked_prompt_are_errors() {
    let err = mapped_str("data: {\"error\": {\"code\": 500, \"message\": \"boom\", \"status\": \"INTERNAL\"}}\r\n\r\n")
        .unwrap_err();
    assert_eq!(err.to_string(), "gemini: error in stream: boom (INTERNAL)");
    let err = mapped_str("data: {\"promptFeedback\": {\"blockReason\": \"PROHIBITED_CONTENT\"},\"usageMetadata\": {\"promptTokenCount\": 5}}\n\n")
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "gemini: the prompt was blocked (PROHIBITED_CONTENT)"
    );
    assert!(
        !err.is_retryable(),
        "the same prompt would be blocked again"
    );
}

#[test]
fn a_bare_error_fails_as_soon_as_it_is_complete_not_at_eof() {
    let mut mapper = GeminiMapper::default();
    let lines = |ls: &[&str]| ls.iter().map(|l| l.to_string()).collect::<Vec<_>>();
    // A stray non-JSON line is an unknown SSE field; a JSON body is collected across reads.
    mapper
        .stray(lines(&["junk: 1", "{", "  \"error\": {"]))
        .unwrap();
    mapper
        .stray(lines(&[
            "    \"message\": \"quota {x}\",",
            "    \"status\": \"RESOURCE_EXHAUSTED\"",
            "  }",
        ]))
        .unwrap();
    let err = mapper.stray(lines(&["}"])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "gemini: error in stream: quota {x} (RESOURCE_EXHAUSTED)"
    );
}

#[test]
fn an_error_body_cut_short_is_still_an_error() {
    let err = mapped_str("data: {\"candidates\": []}\n\n{\n  \"error\": {\n    \"code\": 503,\n")
        .unwrap_err();
    assert!(matches!(err, ProviderError::Stream { .. }), "{err}");
}

#[test]
fn a_stream_cut_before_its_finish_reason_is_truncated() {
    let bytes = read("samples/gemini-parallel-function-calls.crlf.sse");
    // A third in, half way, and inside the JSON of the last (finishing) chunk.
    for cut in [bytes.len() / 3, bytes.len() / 2, bytes.len() - 10] {
        for &chunk in CHUNKINGS {
            let err = run(GeminiMapper::default(), &bytes[..cut], chunk).unwrap_err();
            assert!(
                matches!(
                    err,
                    ProviderError::Truncated {
                        expected: "finishReason",
                        ..
                    }
                ),
                "{cut}: {err}"
            );
        }
    }
}

#[test]
fn a_last_chunk_without_its_blank_line_still_counts() {
    let bytes = read("samples/gemini-parallel-function-calls.sse");
    let s = summarize(&run(GeminiMapper::default(), bytes.trim_ascii_end(), 3).unwrap());
    assert_eq!(s.blocks, expected_round1());
}

#[test]
fn repeated_finish_reasons_do_not_end_the_stream_early() {
    let chunk = |t: &str| {
        format!(
            "data: {{\"candidates\": [{{\"content\": {{\"parts\": [{{\"text\": \"{t}\"}}]}},\"finishReason\": \"STOP\"}}]}}\n\n"
        )
    };
    // Older captures end with a content-less chunk; unknown SSE fields are ignored.
    let stream = format!(
        "{}{}retry-later: x\ndata: {{\"candidates\": [{{\"content\": {{}},\"finishReason\": \"STOP\"}}]}}\n\n",
        chunk("First "),
        chunk("Second ")
    );
    let s = summarize(&mapped_str(&stream).unwrap());
    assert_eq!(s.blocks, vec![Block::text("First Second ")]);
    assert_eq!(s.stop, Some(StopReason::EndTurn));
}

#[test]
fn signed_parts_stay_separate_blocks_in_order() {
    let stream = "data: {\"candidates\": [{\"content\": {\"parts\": [\
        {\"text\": \"plan\", \"thought\": true},\
        {\"text\": \"a\", \"thoughtSignature\": \"S1\"},\
        {\"text\": \"b\"}, {\"text\": \"c\"},\
        {\"functionCall\": {\"name\": \"f\", \"args\": {\"x\": 1}, \"id\": \"srv-1\"}},\
        {\"functionCall\": {\"name\": \"g\", \"args\": \"oops\"}},\
        {\"text\": \"\", \"thoughtSignature\": \"S2\"}]}, \"finishReason\": \"MAX_TOKENS\"}]}\n\n";
    let s = summarize(&mapped_str(stream).unwrap());
    let mut bad = ToolUse::from_raw("gemini_call_1_1".into(), "g".into(), "\"oops\"");
    assert!(matches!(bad.defect, Some(CallDefect::InvalidJson(_))));
    bad.signature = None;
    assert_eq!(
        s.blocks,
        vec![
            Block::Thinking {
                text: "plan".into(),
                signature: None
            },
            Block::Text {
                text: "a".into(),
                signature: Some("S1".into())
            },
            Block::text("bc"),
            call("srv-1", "f", json!({"x": 1}), None),
            Block::ToolUse(bad),
            Block::Text {
                text: String::new(),
                signature: Some("S2".into())
            },
        ]
    );
    assert_eq!(s.text, "abc");
    assert_eq!(s.stop, Some(StopReason::MaxTokens));
}

#[test]
fn every_finish_reason_maps_case_insensitively() {
    for (wire, ours) in [
        ("STOP", StopReason::EndTurn),
        ("stop", StopReason::EndTurn),
        ("MAX_TOKENS", StopReason::MaxTokens),
        ("SAFETY", StopReason::Refusal),
        ("RECITATION", StopReason::Refusal),
        ("BLOCKLIST", StopReason::Refusal),
        ("PROHIBITED_CONTENT", StopReason::Refusal),
        ("SPII", StopReason::Refusal),
        ("IMAGE_SAFETY", StopReason::Refusal),
        ("MALFORMED_FUNCTION_CALL", StopReason::Other),
        ("UNEXPECTED_TOOL_CALL", StopReason::Other),
        ("TOO_MANY_TOOL_CALLS", StopReason::Other),
        ("FINISH_REASON_UNSPECIFIED", StopReason::Other),
        ("SOMETHING_NEW", StopReason::Other),
    ] {
        let stream = format!("data: {{\"candidates\": [{{\"finishReason\": \"{wire}\"}}]}}\n\n");
        let s = summarize(&mapped_str(&stream).unwrap());
        assert_eq!(s.stop, Some(ours), "{wire}");
    }
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

fn result(id: &str, content: &str, is_error: bool) -> ToolResult {
    ToolResult {
        tool_use_id: id.into(),
        name: "get_weather".into(),
        is_error,
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

fn body(system: &str, messages: &[Message], tools: &[&ToolSpec], max: Option<u32>) -> Value {
    body_for("gemini-2.5-flash", system, messages, tools, max)
}

fn body_for(
    model: &str,
    system: &str,
    messages: &[Message],
    tools: &[&ToolSpec],
    max: Option<u32>,
) -> Value {
    let request = Request {
        system,
        messages,
        tools,
        max_tokens: max,
        tool_choice: crate::ToolChoice::Auto,
        cache: None,
        output_schema: None,
    };
    serde_json::to_value(build_request(model, &request, &Options::default())).unwrap()
}

#[test]
fn round_two_request_matches_the_reference_body() {
    let mut want =
        expected("samples/gemini-parallel-function-calls.requests.json")["round2_request"].clone();
    let bytes = read("samples/gemini-parallel-function-calls.crlf.sse");
    let blocks = summarize(&run(GeminiMapper::default(), &bytes, 5).unwrap()).blocks;
    let ids: Vec<String> = blocks
        .iter()
        .filter_map(|b| match b {
            Block::ToolUse(c) => Some(c.id.clone()),
            _ => None,
        })
        .collect();
    let messages = vec![
        Message::User(
            want["contents"][0]["parts"][0]["text"]
                .as_str()
                .unwrap()
                .into(),
        ),
        Message::Assistant {
            blocks,
            provider: "gemini".into(),
        },
        Message::ToolResults(vec![
            result(&ids[0], r#"{"temp_c":18,"conditions":"cloudy"}"#, false),
            result(&ids[1], r#"{"temp_c":14,"conditions":"light rain"}"#, false),
        ]),
    ];
    let tool = weather_tool();
    let system = want["systemInstruction"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    let max = want["generationConfig"]["maxOutputTokens"]
        .as_u64()
        .unwrap() as u32;
    let mut got = body(system, &messages, &[&tool], Some(max));

    // Deliberate differences from the reference, nothing else:
    // - we declare tools with `parametersJsonSchema` (our schemas use JSON Schema keywords the
    //   OpenAPI-subset `parameters` rejects);
    for d in want["tools"][0]["functionDeclarations"]
        .as_array_mut()
        .unwrap()
    {
        let schema = d.as_object_mut().unwrap().remove("parameters").unwrap();
        d["parametersJsonSchema"] = schema;
    }
    // - we do not ask for thought summaries (no thinkingConfig);
    want["generationConfig"]
        .as_object_mut()
        .unwrap()
        .remove("thinkingConfig");
    // - a tool's output is text, sent under the documented `output` key rather than spread
    //   into `response`: parse it back to compare the content.
    for part in got["contents"][2]["parts"].as_array_mut().unwrap() {
        let response = &mut part["functionResponse"]["response"];
        *response = serde_json::from_str(response["output"].as_str().unwrap()).unwrap();
    }
    assert_eq!(got, want);
}

#[test]
fn other_providers_signatures_and_invented_ids_are_never_sent() {
    let mut signed_call = ToolUse::from_raw("toolu_1".into(), "get_weather".into(), "{}");
    signed_call.signature = Some("anthropic-sig".into());
    let mut invented = ToolUse::from_raw("gemini_call_1".into(), "get_weather".into(), "{}");
    invented.signature = Some("SIG".into());
    let issued = ToolUse::from_raw("srv-7".into(), "get_weather".into(), r#"{"city":"Oslo"}"#);
    let messages = vec![
        Message::User("a".into()),
        Message::Assistant {
            blocks: vec![
                Block::Text {
                    text: "hi".into(),
                    signature: Some("anthropic-sig".into()),
                },
                Block::Thinking {
                    text: "t".into(),
                    signature: Some("anthropic-thinking".into()),
                },
                Block::text(""),
                Block::ToolUse(signed_call),
            ],
            provider: "anthropic".into(),
        },
        Message::ToolResults(vec![result("toolu_1", "ok", false)]),
        Message::Assistant {
            blocks: vec![
                Block::Thinking {
                    text: "summary".into(),
                    signature: None,
                },
                Block::Thinking {
                    text: "".into(),
                    signature: Some("T".into()),
                },
                Block::ToolUse(invented),
                Block::ToolUse(issued),
            ],
            provider: "gemini".into(),
        },
        Message::ToolResults(vec![
            result("gemini_call_1", "ok", false),
            ToolResult::error(
                &ToolUse::from_raw("srv-7".into(), "get_weather".into(), "{}"),
                ErrorKind::Denied,
                "nope",
            ),
        ]),
        Message::User("next".into()),
    ];
    let got = body("", &messages, &[], None);
    assert_eq!(
        got,
        json!({"contents": [
            {"role": "user", "parts": [{"text": "a"}]},
            {"role": "model", "parts": [
                {"text": "hi"},
                {"functionCall": {"name": "get_weather", "args": {}}}
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"output": "ok"}}}
            ]},
            {"role": "model", "parts": [
                {"text": "", "thought": true, "thoughtSignature": "T"},
                {"functionCall": {"name": "get_weather", "args": {}}, "thoughtSignature": "SIG"},
                {"functionCall": {"id": "srv-7", "name": "get_weather", "args": {"city": "Oslo"}}}
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"output": "ok"}}},
                {"functionResponse": {"id": "srv-7", "name": "get_weather", "response": {"error": "nope"}}},
                {"text": "next"}
            ]}
        ]})
    );
}

#[test]
fn gemini_3_gets_the_sentinel_on_each_steps_first_unsigned_call_only() {
    let foreign = |id: &str| Block::ToolUse(ToolUse::from_raw(id.into(), "f".into(), "{}"));
    let mut signed = ToolUse::from_raw("gemini_call_1".into(), "f".into(), "{}");
    signed.signature = Some("SIG".into());
    let messages = vec![
        Message::User("a".into()),
        Message::Assistant {
            blocks: vec![Block::text("two at once"), foreign("c1"), foreign("c2")],
            provider: "openai".into(),
        },
        Message::ToolResults(vec![result("c1", "1", false), result("c2", "2", false)]),
        Message::Assistant {
            blocks: vec![Block::ToolUse(signed)],
            provider: "gemini".into(),
        },
        Message::ToolResults(vec![result("gemini_call_1", "3", false)]),
    ];
    let signatures = |model: &str| -> Vec<Value> {
        let got = body_for(model, "", &messages, &[], None);
        got["contents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["role"] == "model")
            .flat_map(|c| c["parts"].as_array().unwrap().clone())
            .map(|p| p["thoughtSignature"].clone())
            .collect()
    };
    let skip = json!(UNSIGNED_CALL);
    assert_eq!(
        signatures("gemini-3-flash-preview"),
        [Value::Null, skip.clone(), Value::Null, json!("SIG")],
        "the text part and the second parallel call stay unsigned; Gemini's own signature stays"
    );
    assert_eq!(
        signatures("gemini-2.5-pro"),
        [Value::Null, Value::Null, Value::Null, json!("SIG")]
    );
    for (model, validates) in [
        ("gemini-3-pro-preview", true),
        ("models/gemini-3.5-flash", true),
        ("gemini-10-ultra", true),
        ("gemini-flash-latest", true),
        ("gemini-2.5-flash", false),
        ("gemini-1.5-pro", false),
        ("gemma-3-27b-it", false),
    ] {
        assert_eq!(validates_call_signatures(model), validates, "{model}");
    }
}

#[test]
fn the_url_follows_the_sdk_convention() {
    assert_eq!(
        crate::providers::Wire::Gemini.url("http://127.0.0.1:9/", "gemini-2.5-flash"),
        "http://127.0.0.1:9/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
}
