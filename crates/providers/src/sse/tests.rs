//! The decoder is fed every reference stream at every chunk boundary: whole, in 1-byte reads,
//! split in two at every position, and in pseudo-random reads of 1–7 bytes.

use super::*;
use pretty_assertions::assert_eq;
use serde_json::Value;

const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/wire");

fn decode(chunks: &[&[u8]]) -> (Vec<SseEvent>, Option<SseEvent>, Vec<String>) {
    let mut d = Decoder::default();
    let mut out = Vec::new();
    for c in chunks {
        d.feed(c, &mut out).unwrap();
    }
    let stray = d.take_stray();
    (out, d.finish(), stray)
}

/// A tiny deterministic PRNG so random splits are reproducible without a dependency.
struct XorShift(u64);
impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Every way of splitting `bytes` this suite tries.
fn splits(bytes: &[u8]) -> Vec<Vec<&[u8]>> {
    let mut all = vec![vec![bytes], bytes.chunks(1).collect()];
    for i in 1..bytes.len() {
        all.push(vec![&bytes[..i], &bytes[i..]]);
    }
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15 ^ bytes.len() as u64);
    for _ in 0..20 {
        let mut parts = Vec::new();
        let mut rest = bytes;
        while !rest.is_empty() {
            let n = (1 + rng.next() % 7) as usize;
            let n = n.min(rest.len());
            parts.push(&rest[..n]);
            rest = &rest[n..];
        }
        all.push(parts);
    }
    all
}

fn sample_files() -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for dir in ["samples", "recorded"] {
        for entry in std::fs::read_dir(format!("{SAMPLES}/{dir}")).unwrap() {
            let path = entry.unwrap().path();
            let ext = path.extension().and_then(|e| e.to_str());
            if matches!(ext, Some("sse" | "txt")) {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(
        files.len() >= 20,
        "expected the reference streams, found {}",
        files.len()
    );
    files
}

#[test]
fn edge_cases_match_the_expected_events_at_every_split() {
    let bytes = std::fs::read(format!("{SAMPLES}/samples/sse-edge-cases.sse")).unwrap();
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{SAMPLES}/samples/sse-edge-cases.expected.json"))
            .unwrap(),
    )
    .unwrap();
    let expected: Vec<SseEvent> = expected["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| SseEvent {
            event: e["type"].as_str().unwrap().to_owned(),
            data: e["data"].as_str().unwrap().to_owned(),
            id: e["lastEventId"].as_str().unwrap().to_owned(),
        })
        .collect();
    for parts in splits(&bytes) {
        let mut d = Decoder::default();
        let mut out = Vec::new();
        for c in &parts {
            d.feed(c, &mut out).unwrap();
        }
        assert_eq!(out, expected, "split into {} parts", parts.len());
        assert_eq!(d.retry(), Some(3000));
        let tail = d.finish().unwrap();
        assert_eq!(tail.data, "unterminated event at EOF must be discarded");
    }
}

#[test]
fn every_reference_stream_decodes_identically_at_every_split() {
    for file in sample_files() {
        let bytes = std::fs::read(&file).unwrap();
        let whole = decode(&[&bytes]);
        for parts in splits(&bytes) {
            assert_eq!(
                decode(&parts),
                whole,
                "{} in {} parts",
                file.display(),
                parts.len()
            );
        }
        // Every dispatched data payload of a provider stream is JSON or a sentinel.
        if !file.ends_with("sse-edge-cases.sse") {
            for ev in &whole.0 {
                assert!(
                    ev.data == "[DONE]" || serde_json::from_str::<Value>(&ev.data).is_ok(),
                    "{}: undecodable data {:?}",
                    file.display(),
                    ev.data
                );
            }
        }
    }
}

#[test]
fn crlf_variants_decode_like_their_lf_originals() {
    for name in [
        "openai-chat-parallel-tools",
        "gemini-parallel-function-calls",
    ] {
        let lf = std::fs::read(format!("{SAMPLES}/samples/{name}.sse")).unwrap();
        let crlf = std::fs::read(format!("{SAMPLES}/samples/{name}.crlf.sse")).unwrap();
        assert!(crlf.windows(2).any(|w| w == b"\r\n"));
        let (a, _, _) = decode(&[&lf]);
        for parts in splits(&crlf) {
            assert_eq!(decode(&parts).0, a, "{name}");
        }
        assert!(a.len() >= 3, "{name} decoded to {} events", a.len());
    }
}

#[test]
fn anthropic_stream_has_named_events_in_order() {
    let bytes = std::fs::read(format!("{SAMPLES}/samples/anthropic-parallel-tools.sse")).unwrap();
    let (events, tail, _) = decode(&bytes.chunks(1).collect::<Vec<_>>());
    let names: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(names.first(), Some(&"message_start"));
    assert_eq!(names.last(), Some(&"message_stop"));
    assert_eq!(
        names.iter().filter(|n| **n == "content_block_stop").count(),
        3
    );
    assert_eq!(tail, None);
}

#[test]
fn sdk_fixture_without_final_blank_line_offers_the_last_event_at_finish() {
    let bytes = std::fs::read(format!(
        "{SAMPLES}/recorded/anthropic-sdk-python__tool_use_response.sse"
    ))
    .unwrap();
    let (events, tail, _) = decode(&[&bytes]);
    assert_ne!(
        events.last().map(|e| e.event.as_str()),
        Some("message_stop")
    );
    assert_eq!(tail.map(|e| e.event), Some("message_stop".to_owned()));
}

#[test]
fn bare_json_error_lines_are_kept_as_stray_lines() {
    let bytes = std::fs::read(format!("{SAMPLES}/samples/gemini-error-midstream.sse")).unwrap();
    for parts in splits(&bytes) {
        let (events, _, stray) = decode(&parts);
        assert_eq!(events.len(), 1);
        let err: Value = serde_json::from_str(&stray.join("\n")).unwrap_or(Value::Null);
        assert_eq!(err["error"]["code"], 503, "stray lines: {stray:?}");
    }
}

#[test]
fn lone_cr_at_a_chunk_end_is_resolved_by_the_next_chunk() {
    let (events, _, _) = decode(&[b"data: a\r", b"\ndata: b\r", b"\r"]);
    assert_eq!(
        events,
        vec![SseEvent {
            event: "message".into(),
            data: "a\nb".into(),
            id: String::new()
        }]
    );
    let (events, _, _) = decode(&[b"data: a\r", b"\r\n"]);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].data, "a");
}

#[test]
fn utf8_split_inside_a_character_survives() {
    let text = "data: {\"t\":\"Zürich ☔ \u{2028} 🌤\"}\n\n".as_bytes();
    for parts in splits(text) {
        let (events, _, _) = decode(&parts);
        assert_eq!(events[0].data, "{\"t\":\"Zürich ☔ \u{2028} 🌤\"}");
    }
}

#[test]
fn invalid_utf8_is_replaced_not_fatal() {
    let (events, _, _) = decode(&[b"data: \xff\xfe ok\n\n"]);
    assert_eq!(events[0].data, "\u{fffd}\u{fffd} ok");
}

#[test]
fn oversized_lines_and_events_are_errors_not_unbounded_buffers() {
    let mut d = Decoder::new(64);
    let mut out = Vec::new();
    assert_eq!(d.feed(&[b'x'; 65], &mut out), Err(SseError { limit: 64 }));
    let mut d = Decoder::new(64);
    let line = format!("data: {}\n", "y".repeat(40));
    d.feed(line.as_bytes(), &mut out).unwrap();
    assert_eq!(
        d.feed(line.as_bytes(), &mut out),
        Err(SseError { limit: 64 })
    );
}
