//! Who hears about a run as it happens: the terminal progress display and `--output
//! stream-json`. Methods may be called from several tasks at once; every method has a default
//! that does nothing, so an observer implements only what it shows.

use std::sync::Arc;

use crate::conversation::{ToolResult, ToolUse};
use crate::outcome::CheckRun;
use crate::transcript::{AgentEnd, AgentRef, AgentStart, End, RetryNote, Round, Start};

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
    /// The observer of the subagent `at`'s events (its rounds, deltas and calls, and its
    /// `agent_started`/`agent_finished`), or `None` to hear nothing of them.
    fn scoped(&self, at: &AgentRef) -> Option<Arc<dyn Observer>> {
        let _ = at;
        None
    }
    /// A subagent started (told to its scoped observer).
    fn agent_started(&self, start: &AgentStart) {
        let _ = start;
    }
    /// A subagent ended (told to its scoped observer).
    fn agent_finished(&self, end: &AgentEnd) {
        let _ = end;
    }
}

/// An observer that ignores everything.
pub(crate) struct Quiet;
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
    fn scoped(&self, at: &AgentRef) -> Option<Arc<dyn Observer>> {
        let scoped: Vec<Arc<dyn Observer>> = self.0.iter().filter_map(|o| o.scoped(at)).collect();
        (!scoped.is_empty()).then(|| Arc::new(Fanout(scoped)) as Arc<dyn Observer>)
    }
    fn agent_started(&self, start: &AgentStart) {
        self.0.iter().for_each(|o| o.agent_started(start));
    }
    fn agent_finished(&self, end: &AgentEnd) {
        self.0.iter().for_each(|o| o.agent_finished(end));
    }
}
