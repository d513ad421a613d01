//! The event-stream framing and the mapper, fed frames encoded by AWS's crate and AWS's own
//! test frames, at every chunk boundary.

use super::eventstream::{EventStreamDecoder, encode};
use super::*;
use crate::Failure;
use crate::conversation::{Block, StopReason, ToolUse, Usage};
use crate::framing::Framing;
use crate::testing::WIRE;
use crate::{Mapper, StreamEvent};
use pretty_assertions::assert_eq;

mod auth_tests;
mod request_tests;

/// Runs a fresh mapper over `reads` through the event-stream decoder, as `drive_framed` does.
fn run_reads(reads: &[&[u8]]) -> (Vec<StreamEvent>, Option<ProviderError>) {
    let mut mapper = BedrockMapper::after("bedrock", &[]);
    let mut decoder = EventStreamDecoder::default();
    let mut out = Vec::new();
    for read in reads {
        let mut events = Vec::new();
        let fed = decoder.feed(read, &mut events);
        for ev in events {
            if mapper.is_done() {
                break;
            }
            if let Err(e) = mapper.map(ev, &mut out) {
                return (out, Some(e));
            }
        }
        if let Err(message) = fed {
            let e = ProviderError::Protocol {
                provider: "bedrock".into(),
                message: message.to_string(),
            };
            return (out, Some(e));
        }
    }
    if !mapper.is_done()
        && let Err(e) = mapper.finish(decoder.finish(), &mut out)
    {
        return (out, Some(e));
    }
    (out, None)
}

/// The same bytes cut at every boundary: one read, every split in two, and reads of 1..=7
/// bytes.
fn every_chunking(bytes: &[u8]) -> Vec<Vec<&[u8]>> {
    let mut all = vec![vec![bytes]];
    for i in 1..bytes.len() {
        all.push(vec![&bytes[..i], &bytes[i..]]);
    }
    for size in 1..=7 {
        all.push(bytes.chunks(size).collect());
    }
    all
}

fn tool_run_stream() -> Vec<u8> {
    let frames = [
        encode::event("messageStart", r#"{"role":"assistant"}"#),
        encode::event(
            "contentBlockDelta",
            r#"{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"Look at "}}}"#,
        ),
        encode::event(
            "contentBlockDelta",
            r#"{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"the files."}}}"#,
        ),
        encode::event(
            "contentBlockDelta",
            r#"{"contentBlockIndex":0,"delta":{"reasoningContent":{"signature":"EqQBsig=="}}}"#,
        ),
        encode::event("contentBlockStop", r#"{"contentBlockIndex":0}"#),
        encode::event(
            "contentBlockDelta",
            r#"{"contentBlockIndex":1,"delta":{"text":"Listing ✓"}}"#,
        ),
        encode::event("contentBlockStop", r#"{"contentBlockIndex":1}"#),
        encode::event(
            "contentBlockStart",
            r#"{"contentBlockIndex":2,"start":{"toolUse":{"toolUseId":"tooluse_abc","name":"list_files"}}}"#,
        ),
        encode::event(
            "contentBlockDelta",
            r#"{"contentBlockIndex":2,"delta":{"toolUse":{"input":"{\"path\":"}}}"#,
        ),
        encode::event(
            "contentBlockDelta",
            r#"{"contentBlockIndex":2,"delta":{"toolUse":{"input":"\".\"}"}}}"#,
        ),
        encode::event("contentBlockStop", r#"{"contentBlockIndex":2}"#),
        encode::event("messageStop", r#"{"stopReason":"tool_use"}"#),
        encode::event(
            "metadata",
            r#"{"usage":{"inputTokens":12,"outputTokens":34,"totalTokens":146,"cacheReadInputTokens":100,"cacheWriteInputTokens":0},"metrics":{"latencyMs":321}}"#,
        ),
    ];
    frames.concat()
}

fn tool_run_events() -> Vec<StreamEvent> {
    vec![
        StreamEvent::ThinkingDelta("Look at ".into()),
        StreamEvent::ThinkingDelta("the files.".into()),
        StreamEvent::Block(Block::Thinking {
            text: "Look at the files.".into(),
            signature: Some("EqQBsig==".into()),
        }),
        StreamEvent::TextDelta("Listing ✓".into()),
        StreamEvent::Block(Block::text("Listing ✓")),
        StreamEvent::Block(Block::ToolUse(ToolUse::from_raw(
            "tooluse_abc".into(),
            "list_files".into(),
            r#"{"path":"."}"#,
        ))),
        StreamEvent::Usage(Usage {
            input_tokens: 12,
            output_tokens: 34,
            cache_read_tokens: 100,
            ..Usage::default()
        }),
        StreamEvent::Done(StopReason::ToolUse),
    ]
}

#[test]
fn a_tool_round_maps_the_same_at_every_chunk_boundary() {
    let bytes = tool_run_stream();
    for reads in every_chunking(&bytes) {
        let (events, error) = run_reads(&reads);
        assert_eq!(error.map(|e| e.to_string()), None, "{} reads", reads.len());
        assert_eq!(events, tool_run_events(), "{} reads", reads.len());
    }
}

#[test]
fn a_stream_that_stopped_is_whole_without_its_usage() {
    let mut bytes = tool_run_stream();
    let metadata_len = encode::event(
        "metadata",
        r#"{"usage":{"inputTokens":12,"outputTokens":34,"totalTokens":146,"cacheReadInputTokens":100,"cacheWriteInputTokens":0},"metrics":{"latencyMs":321}}"#,
    )
    .len();
    bytes.truncate(bytes.len() - metadata_len);
    let (events, error) = run_reads(&[&bytes]);
    assert!(error.is_none());
    assert_eq!(events.last(), Some(&StreamEvent::Done(StopReason::ToolUse)));
}

#[test]
fn a_stream_cut_before_message_stop_is_truncated_and_its_call_never_runs() {
    let bytes = tool_run_stream();
    let cut = bytes
        .windows(b"messageStop".len())
        .position(|w| w == b"messageStop")
        .unwrap();
    // Back to the start of the messageStop frame: everything before it arrives whole.
    let frames_before: usize = {
        let mut at = 0;
        while at + 4 <= bytes.len() {
            let len = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
            if at + len > cut {
                break;
            }
            at += len;
        }
        at
    };
    let (events, error) = run_reads(&[&bytes[..frames_before]]);
    assert!(
        matches!(error, Some(ProviderError::Truncated { .. })),
        "{error:?}"
    );
    assert!(error.unwrap().is_retryable());
    assert!(events.iter().all(|e| !matches!(e, StreamEvent::Done(_))));
    // The control: cut inside the tool block, the open call is not emitted at all.
    let mid = bytes.windows(6).position(|w| w == b"\\\".\\\"}").unwrap();
    let (events, _) = run_reads(&[&bytes[..mid]]);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, StreamEvent::Block(Block::ToolUse(_))))
    );
}

#[test]
fn a_bad_crc_is_a_protocol_error_after_the_events_before_it() {
    let good = encode::event(
        "contentBlockDelta",
        r#"{"contentBlockIndex":0,"delta":{"text":"fine"}}"#,
    );
    let mut bad = encode::event(
        "contentBlockDelta",
        r#"{"contentBlockIndex":0,"delta":{"text":"flipped"}}"#,
    );
    let n = bad.len();
    bad[n - 8] ^= 0x20; // a payload byte: the message CRC no longer matches
    let bytes = [good.clone(), bad].concat();
    for reads in every_chunking(&bytes) {
        let (events, error) = run_reads(&reads);
        assert_eq!(events, vec![StreamEvent::TextDelta("fine".into())]);
        let error = error.expect("a bad CRC must fail");
        assert_eq!(error.kind(), Failure::Protocol, "{error}");
        assert!(
            error.to_string().contains("bad event stream frame"),
            "{error}"
        );
    }
    // The control: the same frame unflipped decodes.
    let (events, _) = run_reads(&[&good]);
    assert_eq!(events, vec![StreamEvent::TextDelta("fine".into())]);
}

#[test]
fn aws_own_test_frames_decode_and_their_bad_checksums_are_refused() {
    let frame =
        |name: &str| std::fs::read(format!("{WIRE}/bedrock/smithy-eventstream/{name}")).unwrap();
    for name in [
        "valid_with_all_headers_and_payload",
        "valid_no_headers",
        "valid_empty_payload",
    ] {
        let bytes = frame(name);
        for reads in every_chunking(&bytes) {
            let mut decoder = EventStreamDecoder::default();
            let mut events = Vec::new();
            for r in reads {
                decoder.feed(r, &mut events).unwrap();
            }
            assert_eq!(events.len(), 1, "{name}");
        }
    }
    for name in ["invalid_message_checksum", "invalid_prelude_checksum"] {
        let mut decoder = EventStreamDecoder::default();
        let mut events = Vec::new();
        let error = decoder.feed(&frame(name), &mut events).unwrap_err();
        assert!(
            error.to_string().contains("bad event stream frame"),
            "{name}: {error}"
        );
        assert!(events.is_empty());
    }
}

#[test]
fn an_oversized_frame_is_refused_before_it_is_buffered() {
    let mut decoder = EventStreamDecoder::default();
    let mut events = Vec::new();
    let error = decoder
        .feed(&(u32::MAX).to_be_bytes(), &mut events)
        .unwrap_err();
    assert!(error.to_string().contains("more than"), "{error}");
}

#[test]
fn exceptions_mid_stream_end_it_with_their_kind() {
    let cases = [
        (
            "throttlingException",
            "Too many requests",
            Failure::RateLimited,
        ),
        ("serviceUnavailableException", "busy", Failure::Overloaded),
        ("internalServerException", "oops", Failure::ServerError),
        (
            "modelStreamErrorException",
            "model broke",
            Failure::ServerError,
        ),
        ("validationException", "bad field", Failure::InvalidRequest),
        (
            "validationException",
            "Input is too long for requested model.",
            Failure::ContextTooLong,
        ),
        ("accessDeniedException", "no access", Failure::Auth),
        ("somethingNewException", "?", Failure::ServerError),
    ];
    for (kind, message, want) in cases {
        let bytes = [
            encode::event(
                "contentBlockDelta",
                r#"{"contentBlockIndex":0,"delta":{"text":"partial"}}"#,
            ),
            encode::exception(kind, message),
            encode::event("messageStop", r#"{"stopReason":"end_turn"}"#),
        ]
        .concat();
        for reads in every_chunking(&bytes) {
            let (events, error) = run_reads(&reads);
            assert_eq!(
                events,
                vec![StreamEvent::TextDelta("partial".into())],
                "{kind}"
            );
            let error = error.expect("an exception ends the stream");
            assert!(matches!(error, ProviderError::Stream { .. }), "{error:?}");
            assert_eq!(error.kind(), want, "{kind}: {message}");
            assert!(error.to_string().contains(message), "{error}");
        }
    }
    // An error message (`:message-type: error`) is an exception of its code.
    let bytes = encode::message(
        &[
            (":message-type", "error"),
            (":error-code", "ThrottlingException"),
            (":error-message", "slow down"),
        ],
        "",
    );
    let (_, error) = run_reads(&[&bytes]);
    assert_eq!(error.unwrap().kind(), Failure::RateLimited);
}

#[test]
fn http_error_types_classify_before_the_status() {
    let cases = [
        (
            "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/",
            "",
            Some(Failure::RateLimited),
        ),
        (
            "ValidationException",
            "prompt is too long: 210000 tokens > 200000 maximum",
            Some(Failure::ContextTooLong),
        ),
        (
            "ValidationException",
            "extraneous key [foo] is not permitted",
            Some(Failure::InvalidRequest),
        ),
        (
            "UnrecognizedClientException",
            "The security token included in the request is invalid.",
            Some(Failure::Auth),
        ),
        (
            "ExpiredTokenException",
            "The security token included in the request is expired",
            Some(Failure::Auth),
        ),
        ("ServiceQuotaExceededException", "", Some(Failure::Quota)),
        ("ModelNotReadyException", "", Some(Failure::Overloaded)),
        ("ResourceNotFoundException", "", Some(Failure::NotFound)),
        ("", "", None),
    ];
    for (kind, message, want) in cases {
        assert_eq!(mapper::kind_of(kind, message), want, "{kind}");
    }
}

#[test]
fn stop_reasons_map_to_rounds_own() {
    for (wire, want) in [
        ("end_turn", StopReason::EndTurn),
        ("tool_use", StopReason::ToolUse),
        ("max_tokens", StopReason::MaxTokens),
        ("stop_sequence", StopReason::StopSequence),
        ("guardrail_intervened", StopReason::Refusal),
        ("content_filtered", StopReason::Refusal),
        (
            "model_context_window_exceeded",
            StopReason::ContextWindowExceeded,
        ),
        ("malformed_tool_use", StopReason::Other),
    ] {
        let bytes = [
            encode::event("messageStop", &format!(r#"{{"stopReason":"{wire}"}}"#)),
            encode::event(
                "metadata",
                r#"{"usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2}}"#,
            ),
        ]
        .concat();
        let (events, error) = run_reads(&[&bytes]);
        assert!(error.is_none());
        assert_eq!(events.last(), Some(&StreamEvent::Done(want)), "{wire}");
    }
}

#[test]
fn redacted_reasoning_and_argument_less_calls_come_through() {
    let bytes = [
        encode::event(
            "contentBlockDelta",
            r#"{"contentBlockIndex":0,"delta":{"reasoningContent":{"redactedContent":"ZW5jcnlwdGVk"}}}"#,
        ),
        encode::event("contentBlockStop", r#"{"contentBlockIndex":0}"#),
        encode::event(
            "contentBlockStart",
            r#"{"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"","name":"now"}}}"#,
        ),
        encode::event("contentBlockStop", r#"{"contentBlockIndex":1}"#),
        encode::event("messageStop", r#"{"stopReason":"tool_use"}"#),
    ]
    .concat();
    let (events, error) = run_reads(&[&bytes]);
    assert!(error.is_none(), "{error:?}");
    assert_eq!(
        events[0],
        StreamEvent::Block(Block::RedactedThinking {
            data: "ZW5jcnlwdGVk".into()
        })
    );
    let StreamEvent::Block(Block::ToolUse(call)) = &events[1] else {
        panic!("{events:?}");
    };
    assert!(
        call.id.starts_with(mapper::GENERATED_ID_PREFIX),
        "{}",
        call.id
    );
    assert_eq!(call.input, serde_json::json!({}));
    assert!(call.defect.is_none());
}

#[test]
fn model_ids_are_one_percent_encoded_path_segment() {
    assert_eq!(
        converse_stream_url(
            "http://127.0.0.1:9",
            "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-7-sonnet-20250219-v1:0"
        ),
        "http://127.0.0.1:9/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-3-7-sonnet-20250219-v1%3A0/converse-stream"
    );
    // A model id cannot climb out of its segment.
    let url = converse_stream_url("http://h", "../../x?y#z");
    assert_eq!(url, "http://h/model/..%2F..%2Fx%3Fy%23z/converse-stream");
}

#[test]
fn the_environments_keys_are_trimmed_and_unsendable_ones_named_not_shown() {
    let padded = |v: &str| match v {
        "AWS_ACCESS_KEY_ID" => Some("AKIAEXAMPLE\n".to_owned()),
        "AWS_SECRET_ACCESS_KEY" => Some("  secret\r\n".to_owned()),
        "AWS_SESSION_TOKEN" => Some("\ttoken ".to_owned()),
        _ => None,
    };
    let keys = auth::env_keys(&padded).unwrap();
    assert_eq!(keys.access_key_id(), "AKIAEXAMPLE");
    assert_eq!(keys.secret_access_key(), "secret");
    assert_eq!(keys.session_token(), Some("token"));
    assert!(auth::check_env_keys(&padded).is_ok());
    for name in auth::ENV_KEYS {
        let broken = |v: &str| match v {
            v if v == name => Some("val\nue-hidden".to_owned()),
            v => padded(v),
        };
        let err = auth::check_env_keys(&broken).unwrap_err().to_string();
        assert!(err.contains(name) && !err.contains("hidden"), "{err}");
        assert!(auth::env_keys(&broken).is_err(), "{name}");
        let described = describe_credentials(&broken).join("; ");
        assert!(described.starts_with("none usable"), "{described}");
    }
}
