//! Test support for mappers: feed a recorded stream through the real decoder at any chunking.

use super::sse::Decoder;
use super::{Mapper, ProviderError, StreamEvent};
use crate::conversation::{Block, StopReason, Usage};

pub(crate) const WIRE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/wire");

pub(crate) fn read(name: &str) -> Vec<u8> {
    std::fs::read(format!("{WIRE}/{name}")).unwrap_or_else(|e| panic!("{name}: {e}"))
}

pub(crate) fn expected(name: &str) -> serde_json::Value {
    serde_json::from_slice(&read(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Runs `mapper` over `bytes` cut into `chunk`-byte reads (0 = one read), like `drive` does.
pub(crate) fn run<M: Mapper>(
    mapper: M,
    bytes: &[u8],
    chunk: usize,
) -> Result<Vec<StreamEvent>, ProviderError> {
    let chunks: Vec<&[u8]> = if chunk == 0 {
        vec![bytes]
    } else {
        bytes.chunks(chunk).collect()
    };
    run_reads(mapper, &chunks)
}

/// Runs `mapper` over exactly these network reads.
pub(crate) fn run_reads<M: Mapper>(
    mut mapper: M,
    reads: &[&[u8]],
) -> Result<Vec<StreamEvent>, ProviderError> {
    let mut decoder = Decoder::default();
    let mut out = Vec::new();
    for c in reads {
        let mut events = Vec::new();
        decoder
            .feed(c, &mut events)
            .map_err(|e| ProviderError::Protocol {
                provider: "test".into(),
                message: e.to_string(),
            })?;
        for ev in events {
            if mapper.is_done() {
                break;
            }
            mapper.map(ev, &mut out)?;
        }
        mapper.stray(decoder.take_stray())?;
    }
    if !mapper.is_done() {
        let tail = decoder.finish();
        mapper.stray(decoder.take_stray())?;
        mapper.finish(tail, &mut out)?;
    }
    Ok(out)
}

/// Feeds each of `events` (raw SSE text, one or more events each) to `mapper` in turn, and says
/// for each whether it made progress (see `Mapper::progress`). The mapper is returned too.
pub(crate) fn progress_steps<M: Mapper>(mut mapper: M, events: &[&str]) -> (Vec<bool>, M) {
    let mut decoder = Decoder::default();
    let mut out = Vec::new();
    let steps = events
        .iter()
        .map(|raw| {
            let before = mapper.progress();
            let mut decoded = Vec::new();
            decoder.feed(raw.as_bytes(), &mut decoded).unwrap();
            for ev in decoded {
                mapper.map(ev, &mut out).unwrap();
            }
            mapper.progress() > before
        })
        .collect();
    (steps, mapper)
}

/// The summary of a mapped response that tests compare.
#[derive(Debug, PartialEq)]
pub(crate) struct Summary {
    pub(crate) blocks: Vec<Block>,
    pub(crate) usage: Option<Usage>,
    pub(crate) stop: Option<StopReason>,
    pub(crate) text: String,
}

pub(crate) fn summarize(events: &[StreamEvent]) -> Summary {
    let mut s = Summary {
        blocks: vec![],
        usage: None,
        stop: None,
        text: String::new(),
    };
    for e in events {
        match e {
            StreamEvent::Block(b) => s.blocks.push(b.clone()),
            StreamEvent::Usage(u) => s.usage = Some(*u),
            StreamEvent::Done(r) => {
                assert!(s.stop.is_none(), "two Done events");
                s.stop = Some(*r);
            }
            StreamEvent::TextDelta(t) => s.text.push_str(t),
            StreamEvent::ThinkingDelta(_) | StreamEvent::Model(_) => {}
        }
    }
    if s.stop.is_some() {
        assert!(
            matches!(events.last(), Some(StreamEvent::Done(_))),
            "Done must be last"
        );
    }
    s
}

/// Every chunking the mapper tests try: whole, 1-byte, and a few odd sizes.
pub(crate) const CHUNKINGS: &[usize] = &[0, 1, 2, 3, 7, 64];

#[cfg(test)]
mod every_split {
    use super::*;
    use crate::anthropic::AnthropicMapper;
    use crate::gemini::GeminiMapper;
    use crate::openai::OpenAiMapper;
    use crate::openai_responses::ResponsesMapper;

    /// Maps `bytes` with the mapper its file name calls for, in the given reads.
    fn mapped(name: &str, chunks: &[&[u8]]) -> String {
        let file = name.rsplit('/').next().unwrap_or(name);
        let result = if file.starts_with("anthropic") {
            run_reads(AnthropicMapper::default(), chunks)
        } else if file.contains("gemini") || file.starts_with("vertexai") {
            run_reads(GeminiMapper::default(), chunks)
        } else if file.starts_with("openai-responses") {
            run_reads(ResponsesMapper::new("openai"), chunks)
        } else {
            run_reads(OpenAiMapper::new("openai"), chunks)
        };
        // Deltas may be split differently by different reads; what must not change is the
        // blocks, the usage, the stop reason and any error.
        match result {
            Ok(events) => format!("{:?}", summarize(&events)),
            Err(e) => format!("error: {e}"),
        }
    }

    /// The events of a stream file, mapped whole by the mapper its name calls for.
    fn events_of(name: &str, bytes: &[u8]) -> Vec<StreamEvent> {
        let file = name.rsplit('/').next().unwrap_or(name);
        let result = if file.starts_with("anthropic") {
            run_reads(AnthropicMapper::default(), &[bytes])
        } else if file.contains("gemini") || file.starts_with("vertexai") {
            run_reads(GeminiMapper::default(), &[bytes])
        } else if file.starts_with("openai-responses") {
            run_reads(ResponsesMapper::new("openai"), &[bytes])
        } else {
            run_reads(OpenAiMapper::new("openai"), &[bytes])
        };
        result.unwrap_or_default()
    }

    #[test]
    fn a_stream_that_names_its_model_says_it_once() {
        let mut named = 0;
        for dir in ["samples", "recorded"] {
            for entry in std::fs::read_dir(format!("{WIRE}/{dir}")).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if !path.extension().is_some_and(|e| e == "sse" || e == "txt") {
                    continue;
                }
                let bytes = read(&format!("{dir}/{name}"));
                let models: Vec<String> = events_of(&name, &bytes)
                    .into_iter()
                    .filter_map(|e| match e {
                        StreamEvent::Model(m) => Some(m),
                        _ => None,
                    })
                    .collect();
                assert!(models.len() <= 1, "{name}: {models:?}");
                if let Some(model) = models.first() {
                    let text = String::from_utf8_lossy(&bytes);
                    assert!(text.contains(&format!("\"{model}\"")), "{name}: {model}");
                    named += 1;
                }
            }
        }
        // Anthropic's, OpenAI's (Chat and Responses) and Gemini's recordings each name it.
        assert!(named >= 4, "{named}");
    }

    #[test]
    fn every_provider_stream_maps_identically_at_every_split_position() {
        let mut files = Vec::new();
        for dir in ["samples", "recorded"] {
            for entry in std::fs::read_dir(format!("{WIRE}/{dir}")).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                let stream = path.extension().is_some_and(|e| e == "sse" || e == "txt");
                if stream && !name.starts_with("sse-edge") {
                    files.push(format!("{dir}/{name}"));
                }
            }
        }
        files.sort();
        assert!(files.len() >= 20, "{files:?}");
        for name in files {
            let bytes = read(&name);
            let whole = mapped(&name, &[&bytes]);
            assert_eq!(
                mapped(&name, &bytes.chunks(1).collect::<Vec<_>>()),
                whole,
                "{name}: 1-byte reads"
            );
            for i in 1..bytes.len() {
                assert_eq!(
                    mapped(&name, &[&bytes[..i], &bytes[i..]]),
                    whole,
                    "{name}: split at {i}"
                );
            }
        }
    }
}
