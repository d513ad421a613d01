//! The `--output stream-json` events: the transcript's lines and, between them, what happens as
//! it happens. Defined here, beside the lines, because both make up one published format
//! (`schema/rounds.schema.json`); `render` only prints them.

use schemars::JsonSchema;
use serde::Serialize;

use super::{AgentEnd, AgentRef, AgentRound, AgentStart, End, RetryNote, Round, Start};
use crate::conversation::{ToolResult, ToolUse};
use crate::outcome::CheckRun;

/// One line of `--output stream-json` (serialized after `"v": 1` like a transcript line).
/// `start`, `round` and `end` are the transcript's own lines; the others exist only in the
/// stream.
#[derive(Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
#[schemars(deny_unknown_fields)]
pub enum Event<'a> {
    Start(&'a Start),
    /// A piece of the answer's text, as it streams.
    TextDelta {
        /// The round it belongs to.
        #[schemars(range(min = 1))]
        round: u32,
        text: &'a str,
        /// The subagent it comes from (absent: the run itself); `round` is then the subagent's.
        #[serde(skip_serializing_if = "Option::is_none")]
        agent: Option<&'a AgentRef>,
    },
    /// A piece of the model's reasoning, as it streams.
    ThinkingDelta {
        /// The round it belongs to.
        #[schemars(range(min = 1))]
        round: u32,
        text: &'a str,
        /// The subagent it comes from (absent: the run itself); `round` is then the subagent's.
        #[serde(skip_serializing_if = "Option::is_none")]
        agent: Option<&'a AgentRef>,
    },
    /// A tool call, once it is complete (before it runs).
    ToolUse {
        /// The round it belongs to.
        #[schemars(range(min = 1))]
        round: u32,
        #[serde(flatten)]
        call: &'a ToolUse,
        /// The subagent that called it (absent: the run itself).
        #[serde(skip_serializing_if = "Option::is_none")]
        agent: Option<&'a AgentRef>,
    },
    /// A tool call's result, as soon as the call finished.
    ToolResult {
        /// The round it belongs to.
        #[schemars(range(min = 1))]
        round: u32,
        #[serde(flatten)]
        result: &'a ToolResult,
        /// The subagent that called it (absent: the run itself).
        #[serde(skip_serializing_if = "Option::is_none")]
        agent: Option<&'a AgentRef>,
    },
    /// `--check` ran after the round's answer (the round's record, next, holds it too).
    Check {
        /// The round whose answer it judged.
        #[schemars(range(min = 1))]
        round: u32,
        #[serde(flatten)]
        check: &'a CheckRun,
    },
    Retry(&'a RetryNote),
    Round(&'a Round),
    End(&'a End),
    AgentStart(&'a AgentStart),
    AgentRound(&'a AgentRound),
    AgentEnd(&'a AgentEnd),
}
