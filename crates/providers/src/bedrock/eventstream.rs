//! AWS's binary event stream (`application/vnd.amazon.eventstream`) as a [`Framing`]: each
//! message is a prelude (lengths and their CRC32), headers, a JSON payload and a CRC32 of it
//! all. Frames are decoded by AWS's own crate (`aws-smithy-eventstream`), which checks both
//! checksums; this file only buffers reads until a frame is whole (its length is its first four
//! bytes, so an oversized one is refused before it is buffered) and names what it holds.

use aws_smithy_eventstream::frame::read_message_from;
use aws_smithy_types::event_stream::{HeaderValue, Message};
use bytes::{Buf, BytesMut};

use crate::framing::{Framing, FramingError};
use crate::sse::SseEvent;

/// The name an exception message gets, before its `:exception-type`: event types are plain
/// camelCase words, so nothing the service sends as an event can start with it.
pub(crate) const EXCEPTION: &str = "exception:";

/// The largest frame buffered: the SSE decoder's bound on one event.
const MAX_FRAME_BYTES: usize = crate::sse::DEFAULT_MAX_EVENT_BYTES;

#[derive(Debug, Default)]
pub(crate) struct EventStreamDecoder {
    buf: BytesMut,
}

impl Framing for EventStreamDecoder {
    fn feed(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), FramingError> {
        self.buf.extend_from_slice(chunk);
        while self.buf.len() >= 4 {
            let total = (&self.buf[..4]).get_u32() as usize;
            if total > MAX_FRAME_BYTES {
                return Err(FramingError(format!(
                    "event stream frame of {total} bytes (more than {MAX_FRAME_BYTES})"
                )));
            }
            if self.buf.len() < total {
                break;
            }
            let mut frame = self.buf.split_to(total).freeze();
            let message = read_message_from(&mut frame)
                .map_err(|e| FramingError(format!("bad event stream frame: {e}")))?;
            out.push(event_of(&message));
        }
        Ok(())
    }

    fn finish(&mut self) -> Option<SseEvent> {
        None
    }
}

/// A message as a named event: an event by its `:event-type`, an exception as
/// `exception:TYPE` (its payload is `{"message": …}`), an error message (`:message-type: error`,
/// with `:error-code` and `:error-message` headers) as an exception of that code.
pub(crate) fn event_of(message: &Message) -> SseEvent {
    let header = |name: &str| {
        message
            .headers()
            .iter()
            .find(|h| h.name().as_str() == name)
            .and_then(|h| match h.value() {
                HeaderValue::String(s) => Some(s.as_str().to_owned()),
                _ => None,
            })
            .unwrap_or_default()
    };
    let payload = String::from_utf8_lossy(message.payload()).into_owned();
    let (event, data) = match header(":message-type").as_str() {
        "exception" => (format!("{EXCEPTION}{}", header(":exception-type")), payload),
        "error" => (
            format!("{EXCEPTION}{}", header(":error-code")),
            serde_json::json!({"message": header(":error-message")}).to_string(),
        ),
        _ => (header(":event-type"), payload),
    };
    SseEvent {
        event,
        data,
        id: String::new(),
    }
}

#[cfg(test)]
pub(crate) mod encode {
    //! Frames as AWS encodes them, for tests: the crate's own writer.
    use aws_smithy_eventstream::frame::write_message_to;
    use aws_smithy_types::event_stream::{Header, HeaderValue, Message};

    pub(crate) fn message(headers: &[(&str, &str)], payload: &str) -> Vec<u8> {
        let headers = headers
            .iter()
            .map(|(n, v)| Header::new(n.to_string(), HeaderValue::String(v.to_string().into())))
            .collect();
        let message = Message::new_from_parts(headers, payload.as_bytes().to_vec());
        let mut out = Vec::new();
        write_message_to(&message, &mut out).unwrap();
        out
    }

    /// An event frame as Bedrock sends one.
    pub(crate) fn event(kind: &str, payload: &str) -> Vec<u8> {
        message(
            &[
                (":event-type", kind),
                (":content-type", "application/json"),
                (":message-type", "event"),
            ],
            payload,
        )
    }

    /// An exception frame as Bedrock sends one.
    pub(crate) fn exception(kind: &str, message_text: &str) -> Vec<u8> {
        message(
            &[
                (":exception-type", kind),
                (":content-type", "application/json"),
                (":message-type", "exception"),
            ],
            &serde_json::json!({ "message": message_text }).to_string(),
        )
    }
}
