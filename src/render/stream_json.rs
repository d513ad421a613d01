//! `--output stream-json`: every event of the run, and of its subagents, as one line on stdout.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use serde::Serialize;

use crate::agent::{Cancel, Observer};
use crate::conversation::{ToolResult, ToolUse};
use crate::outcome::{CheckRun, Signal, Status};
use crate::transcript::{
    AgentEnd, AgentRef, AgentRound, AgentStart, End, Event, RetryNote, Round, Start, VERSION,
};

#[derive(Serialize)]
pub(super) struct Versioned<'a> {
    pub(super) v: u32,
    #[serde(flatten)]
    pub(super) event: Event<'a>,
}

/// `--output stream-json`: every event as one line on stdout, flushed at once. When the reader
/// goes away (broken pipe), the events stop and the run is cancelled (exit 141, as SIGPIPE).
/// A subagent's events come through a scoped `StreamJson` that marks each with its `agent`.
pub(crate) struct StreamJson {
    round: AtomicU32,
    closed: Arc<AtomicBool>,
    cancel: Cancel,
    /// The subagent whose events these are (`None`: the run's).
    at: Option<AgentRef>,
}

impl StreamJson {
    pub(crate) fn new(cancel: Cancel) -> StreamJson {
        StreamJson {
            round: AtomicU32::new(0),
            closed: Arc::new(AtomicBool::new(false)),
            cancel,
            at: None,
        }
    }

    fn emit(&self, event: Event<'_>) {
        if self.closed.load(Ordering::Relaxed) {
            return;
        }
        let Ok(mut line) = serde_json::to_vec(&Versioned { v: VERSION, event }) else {
            return;
        };
        line.push(b'\n');
        let mut out = std::io::stdout().lock();
        if out.write_all(&line).and_then(|()| out.flush()).is_err() {
            self.closed.store(true, Ordering::Relaxed);
            self.cancel.cancel(
                Status::Interrupted(Signal::Pipe),
                "stdout was closed: the reader of the events went away",
            );
        }
    }

    fn round(&self) -> u32 {
        self.round.load(Ordering::Relaxed)
    }
}

impl Observer for StreamJson {
    fn started(&self, start: &Start) {
        self.emit(Event::Start(start));
    }
    fn round_started(&self, round: u32) {
        self.round.store(round, Ordering::Relaxed);
    }
    fn text_delta(&self, text: &str) {
        self.emit(Event::TextDelta {
            round: self.round(),
            text,
            agent: self.at.as_ref(),
        });
    }
    fn thinking_delta(&self, text: &str) {
        self.emit(Event::ThinkingDelta {
            round: self.round(),
            text,
            agent: self.at.as_ref(),
        });
    }
    fn tool_use(&self, call: &ToolUse) {
        self.emit(Event::ToolUse {
            round: self.round(),
            call,
            agent: self.at.as_ref(),
        });
    }
    fn tool_finished(&self, result: &ToolResult) {
        self.emit(Event::ToolResult {
            round: self.round(),
            result,
            agent: self.at.as_ref(),
        });
    }
    fn retry(&self, note: &RetryNote) {
        // A subagent's retries are in its `agent_round` line.
        if self.at.is_none() {
            self.emit(Event::Retry(note));
        }
    }
    fn check_finished(&self, round: u32, check: &CheckRun) {
        self.emit(Event::Check { round, check });
    }
    fn round_finished(&self, round: &Round) {
        match &self.at {
            None => self.emit(Event::Round(round)),
            Some(at) => self.emit(Event::AgentRound(&AgentRound {
                at: at.clone(),
                round: round.clone(),
            })),
        }
    }
    fn finished(&self, end: &End) {
        self.emit(Event::End(end));
    }
    fn scoped(&self, at: &AgentRef) -> Option<Arc<dyn Observer>> {
        Some(Arc::new(StreamJson {
            round: AtomicU32::new(0),
            closed: self.closed.clone(),
            cancel: self.cancel.clone(),
            at: Some(at.clone()),
        }))
    }
    fn agent_started(&self, start: &AgentStart) {
        self.emit(Event::AgentStart(start));
    }
    fn agent_finished(&self, end: &AgentEnd) {
        self.emit(Event::AgentEnd(end));
    }
}
