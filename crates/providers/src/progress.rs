//! What counts as progress in a streamed response, and how much content one response may carry.
//!
//! Two decisions rest on it, both taken once in `provider::drive` for every provider: the idle
//! timeout restarts only when a response makes progress, so keep-alives (SSE comments,
//! Anthropic's `ping`, empty chunks, usage-only chunks) cannot hold a stalled run open; and a
//! response whose content passes [`MAX_RESPONSE_BYTES`] is cut. Only a provider's mapper can tell
//! a keep-alive from content in its wire format, so each mapper keeps a [`Progress`] and adds to
//! it whatever it keeps: text, thinking and its signatures, tool names, ids and input, blocks.

use serde_json::Value;

/// The most content one response may carry, summed over the response (text, thinking, tool
/// input and the rest that `Progress` counts). A real response is bounded by its output tokens:
/// 128k tokens, the largest outputs offered today, are about 0.5 MiB at 4 bytes a token, and
/// 32 MiB would still hold 256 bytes for every one of them, so the cap never cuts a real model
/// short. What it stops is a broken or hostile server: a response is held several times over
/// (the mapper's partial block, the finished block, the transcript line), and 480 MiB of text
/// once took 1.5 GB of memory while 1.6 GiB aborted the process with no `end` line.
pub(crate) const MAX_RESPONSE_BYTES: u64 = 32 * 1024 * 1024;

/// What a block counts besides its content: an empty block still costs its bookkeeping and its
/// place in the transcript, so a stream of empty blocks is bounded too (32k of them at the cap,
/// where real responses have tens).
pub(crate) const BLOCK_BYTES: u64 = 1024;

/// Content a response has carried so far, in bytes. It only grows; the driver compares it
/// before and after each event.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Progress(u64);

impl Progress {
    /// Text arrived: answer or thinking text, a signature, a tool's name, id or input fragment.
    /// Empty text is no progress (servers send empty deltas as keep-alives).
    pub(crate) fn text(&mut self, s: &str) {
        self.bytes(s.len());
    }

    /// `n` bytes of content arrived (for content measured rather than seen as one string).
    pub(crate) fn bytes(&mut self, n: usize) {
        self.0 = self.0.saturating_add(u64::try_from(n).unwrap_or(u64::MAX));
    }

    /// A JSON value arrived whole (a tool's input): counted as its compact serialization.
    pub(crate) fn json(&mut self, value: &Value) {
        let mut counter = Counter(0);
        // Writing to a counter cannot fail; a value that could not serialize counts nothing.
        let _ = serde_json::to_writer(&mut counter, value);
        self.bytes(counter.0);
    }

    /// A new block (text, thinking, a tool call, …) started.
    pub(crate) fn block(&mut self) {
        self.0 = self.0.saturating_add(BLOCK_BYTES);
    }

    /// Bytes counted so far.
    pub(crate) fn total(self) -> u64 {
        self.0
    }
}

/// Counts what is written, keeping nothing.
struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 = self.0.saturating_add(buf.len());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A byte count as messages show it: whole MiB when it is one, else bytes.
pub(crate) fn show_bytes(n: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests;
