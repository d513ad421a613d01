//! Test support for mappers: feed a recorded stream through the real decoder at any chunking.

use super::sse::Decoder;
use super::{Mapper, ProviderError, StreamEvent};
use crate::conversation::{Block, StopReason, Usage};

pub const WIRE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/wire");

pub fn read(name: &str) -> Vec<u8> {
    std::fs::read(format!("{WIRE}/{name}")).unwrap_or_else(|e| panic!("{name}: {e}"))
}

pub fn expected(name: &str) -> serde_json::Value {
    serde_json::from_slice(&read(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Runs `mapper` over `bytes` cut into `chunk`-byte reads (0 = one read), like `drive` does.
pub fn run<M: Mapper>(
    mut mapper: M,
    bytes: &[u8],
    chunk: usize,
) -> Result<Vec<StreamEvent>, ProviderError> {
    let mut decoder = Decoder::default();
    let mut out = Vec::new();
    let chunks: Vec<&[u8]> = if chunk == 0 {
        vec![bytes]
    } else {
        bytes.chunks(chunk).collect()
    };
    for c in chunks {
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

/// The summary of a mapped response that tests compare.
#[derive(Debug, PartialEq)]
pub struct Summary {
    pub blocks: Vec<Block>,
    pub usage: Option<Usage>,
    pub stop: Option<StopReason>,
    pub text: String,
}

pub fn summarize(events: &[StreamEvent]) -> Summary {
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
            StreamEvent::ThinkingDelta(_) => {}
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
pub const CHUNKINGS: &[usize] = &[0, 1, 2, 3, 7, 64];
