//! A byte-level Server-Sent Events decoder (WHATWG HTML §9.2), shared by every provider.
//!
//! Network reads split lines, `\r\n` pairs and multi-byte UTF-8 characters anywhere, so the decoder
//! buffers bytes, splits lines only on `\r`/`\n` (never on Unicode separators such as U+2028, which
//! can appear inside JSON), and decodes UTF-8 per complete line. A `\r` at the end of a read stays
//! ambiguous until the next byte arrives; `pending_cr` carries that across reads.
//!
//! Lines that are neither fields we know nor comments are kept as "stray" lines: Gemini/Vertex
//! write a bare JSON error object mid-stream without any `data:` prefix, which a strict parser
//! would silently drop.

use std::fmt;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field; `message` when absent.
    pub(crate) event: String,
    /// The `data:` lines joined with `\n`.
    pub(crate) data: String,
    /// The last event ID seen so far (it persists across events).
    pub(crate) id: String,
}

/// The stream broke the decoder's memory bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseError {
    pub(crate) limit: usize,
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SSE event larger than {} bytes", self.limit)
    }
}

impl std::error::Error for SseError {}

/// Default bound on one line and on one event's data: far above any real provider event, low
/// enough that a hostile or broken server cannot make us buffer without limit.
pub(crate) const DEFAULT_MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// Most stray lines kept between drains; beyond that they are counted but dropped.
const MAX_STRAY_LINES: usize = 1024;

/// Incremental decoder: feed it reads, collect events.
#[derive(Debug)]
pub(crate) struct Decoder {
    buf: Vec<u8>,
    pending_cr: bool,
    at_start: bool,
    data: String,
    has_data: bool,
    event: String,
    last_id: String,
    retry: Option<u64>,
    stray: Vec<String>,
    max: usize,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new(DEFAULT_MAX_EVENT_BYTES)
    }
}

impl Decoder {
    pub(crate) fn new(max_event_bytes: usize) -> Decoder {
        Decoder {
            buf: Vec::new(),
            pending_cr: false,
            at_start: true,
            data: String::new(),
            has_data: false,
            event: String::new(),
            last_id: String::new(),
            retry: None,
            stray: Vec::new(),
            max: max_event_bytes,
        }
    }

    /// The reconnection time (`retry:` field) last seen, in milliseconds.
    #[cfg(test)]
    pub(crate) fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// Lines that were neither known fields nor comments, in arrival order, since the last call.
    pub(crate) fn take_stray(&mut self) -> Vec<String> {
        std::mem::take(&mut self.stray)
    }

    /// Feeds one network read; dispatched events are appended to `out`.
    pub(crate) fn feed(
        &mut self,
        mut chunk: &[u8],
        out: &mut Vec<SseEvent>,
    ) -> Result<(), SseError> {
        if self.pending_cr && !chunk.is_empty() {
            self.pending_cr = false;
            if chunk[0] == b'\n' {
                chunk = &chunk[1..];
            }
        }
        // Lines wholly inside this chunk are decoded straight from it; only a trailing partial
        // line is copied into `buf`, so a large read costs one pass.
        while let Some(i) = memchr::memchr2(b'\r', b'\n', chunk) {
            let line_end = i;
            let mut next = i + 1;
            if chunk[i] == b'\r' {
                match chunk.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.pending_cr = true,
                }
            }
            if self.buf.is_empty() {
                self.line(&chunk[..line_end], out)?;
            } else {
                self.buf.extend_from_slice(&chunk[..line_end]);
                let line = std::mem::take(&mut self.buf);
                self.line(&line, out)?;
                self.buf = line;
                self.buf.clear();
            }
            chunk = &chunk[next..];
        }
        if self.buf.len() + chunk.len() > self.max {
            return Err(SseError { limit: self.max });
        }
        self.buf.extend_from_slice(chunk);
        Ok(())
    }

    /// Ends the stream. Per the spec an event without its closing blank line is not dispatched;
    /// it is returned here instead, so a caller can still recognise a terminal sentinel (some
    /// servers omit the last blank line after `[DONE]` or `message_stop`).
    pub(crate) fn finish(&mut self) -> Option<SseEvent> {
        if !self.buf.is_empty() {
            let line = std::mem::take(&mut self.buf);
            let mut ignored = Vec::new();
            // A final line cannot overflow: feed() already bounded it.
            let _ = self.line(&line, &mut ignored);
        }
        if !self.has_data {
            return None;
        }
        let mut data = std::mem::take(&mut self.data);
        data.pop();
        self.has_data = false;
        Some(SseEvent {
            event: event_name(std::mem::take(&mut self.event)),
            data,
            id: self.last_id.clone(),
        })
    }

    fn line(&mut self, raw: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        let mut raw = raw;
        if self.at_start {
            self.at_start = false;
            raw = raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw);
        }
        if raw.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if raw[0] == b':' {
            return Ok(());
        }
        let line = String::from_utf8_lossy(raw);
        let (field, value) = match line.find(':') {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(' ').unwrap_or(value))
            }
            None => (&line[..], ""),
        };
        match field {
            "event" => self.event = value.to_owned(),
            "data" => {
                if self.data.len() + value.len() + 1 > self.max {
                    return Err(SseError { limit: self.max });
                }
                self.data.push_str(value);
                self.data.push('\n');
                self.has_data = true;
            }
            "id" => {
                if !value.contains('\0') {
                    self.last_id = value.to_owned();
                }
            }
            "retry" => {
                if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
                    self.retry = value.parse().ok();
                }
            }
            _ => {
                if self.stray.len() < MAX_STRAY_LINES {
                    self.stray.push(line.into_owned());
                }
            }
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if !self.has_data {
            self.event.clear();
            return;
        }
        let mut data = std::mem::take(&mut self.data);
        data.pop();
        self.has_data = false;
        out.push(SseEvent {
            event: event_name(std::mem::take(&mut self.event)),
            data,
            id: self.last_id.clone(),
        });
    }
}

fn event_name(event: String) -> String {
    if event.is_empty() {
        "message".to_owned()
    } else {
        event
    }
}

#[cfg(test)]
mod tests;
