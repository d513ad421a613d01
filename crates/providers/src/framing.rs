//! How a response body is cut into events before a mapper reads them: Server-Sent Events for
//! most providers, AWS's binary event stream for Bedrock. The driver (`provider::drive_framed`)
//! runs the same idle timeout, content cap and Done-or-error rule over either.
//!
//! Both yield [`SseEvent`]s: a name and a text payload is all a mapper needs from a frame.

use super::sse::{self, SseEvent};

/// A decoder from network reads to whole events, fed at any chunk boundary.
/// How a body broke its framing, as the protocol error that ends the response says it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct FramingError(pub(crate) String);

pub(crate) trait Framing: Send + 'static {
    /// Decodes one network read; whole events are appended to `out`. An error means the body
    /// broke the framing (an oversized event, a bad checksum): the response ends there, after
    /// the events decoded before it.
    fn feed(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), FramingError>;

    /// Lines outside the framing's grammar since the last call (SSE only).
    fn take_stray(&mut self) -> Vec<String> {
        Vec::new()
    }

    /// The body ended: an event that lacked its terminator, if the framing can tell one.
    fn finish(&mut self) -> Option<SseEvent>;
}

impl Framing for sse::Decoder {
    fn feed(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), FramingError> {
        sse::Decoder::feed(self, chunk, out).map_err(|e| FramingError(e.to_string()))
    }

    fn take_stray(&mut self) -> Vec<String> {
        sse::Decoder::take_stray(self)
    }

    fn finish(&mut self) -> Option<SseEvent> {
        sse::Decoder::finish(self)
    }
}
