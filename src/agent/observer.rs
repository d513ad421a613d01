//! Who hears about a run as it happens: the terminal progress display and `--output
//! stream-json`. Methods may be called from several tasks at once; every method has a default
//! that does nothing, so an observer implements only what it shows.

use std::sync::Arc;

use crate::conversation::{ToolResult, ToolUse};
use crate::outcome::CheckRun;
use crate::transcript::{End, RetryNote, Round, Start};

pub(crate) trait Observer: Send + Sync {
    fn started(&self, start: &Start) {
        let _ = start;
    }
    fn round_started(&self, round: u32) {
        let _ = round;
    }
    /// The provider named the model that answers this round's request.
    fn response_model(&self, model: &str) {
        let _ = model;
    }
    fn text_delta(&self, text: &str) {
        let _ = text;
    }
    fn thinking_delta(&self, text: &str) {
        let _ = text;
    }
    /// A tool call is complete in the stream (it may start at once).
    fn tool_use(&self, call: &ToolUse) {
        let _ = call;
    }
    fn tool_started(&self, call: &ToolUse, subject: Option<&str>) {
        let _ = (call, subject);
    }
    fn tool_finished(&self, result: &ToolResult) {
        let _ = result;
    }
    /// A request failed and will be made again; what streamed of it is discarded.
    fn retry(&self, note: &RetryNote) {
        let _ = note;
    }
    /// `--check` ran after the answer of round `round` (before the round's record).
    fn check_finished(&self, round: u32, check: &CheckRun) {
        let _ = (round, check);
    }
    fn round_finished(&self, round: &Round) {
        let _ = round;
    }
    fn finished(&self, end: &End) {
        let _ = end;
    }
}

/// An observer that ignores everything.
#[cfg(test)]
pub(crate) struct Quiet;
#[cfg(test)]
impl Observer for Quiet {}

/// Several observers as one.
pub(crate) struct Fanout(pub Vec<Arc<dyn Observer>>);

impl Observer for Fanout {
    fn started(&self, start: &Start) {
        self.0.iter().for_each(|o| o.started(start));
    }
    fn round_started(&self, round: u32) {
        self.0.iter().for_each(|o| o.round_started(round));
    }
    fn response_model(&self, model: &str) {
        self.0.iter().for_each(|o| o.response_model(model));
    }
    fn text_delta(&self, text: &str) {
        self.0.iter().for_each(|o| o.text_delta(text));
    }
    fn thinking_delta(&self, text: &str) {
        self.0.iter().for_each(|o| o.thinking_delta(text));
    }
    fn tool_use(&self, call: &ToolUse) {
        self.0.iter().for_each(|o| o.tool_use(call));
    }
    fn tool_started(&self, call: &ToolUse, subject: Option<&str>) {
        self.0.iter().for_each(|o| o.tool_started(call, subject));
    }
    fn tool_finished(&self, result: &ToolResult) {
        self.0.iter().for_each(|o| o.tool_finished(result));
    }
    fn retry(&self, note: &RetryNote) {
        self.0.iter().for_each(|o| o.retry(note));
    }
    fn check_finished(&self, round: u32, check: &CheckRun) {
        self.0.iter().for_each(|o| o.check_finished(round, check));
    }
    fn round_finished(&self, round: &Round) {
        self.0.iter().for_each(|o| o.round_finished(round));
    }
    fn finished(&self, end: &End) {
        self.0.iter().for_each(|o| o.finished(end));
    }
}
