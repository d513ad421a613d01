//! The lines of a run's subagents: written into the run's own transcript, between its rounds,
//! each naming the `task` call that started it. Lines of their own types rather than `round`
//! lines with a mark, so a reader that knows only the run's lines (`--resume`, the replay
//! provider, `rounds runs`) cannot take a subagent's round for the run's.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use super::Round;
use crate::conversation::Usage;
use crate::outcome::Status;

/// Which subagent a line or event belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentRef {
    /// The id of the `task` call that started it; for a subagent of a subagent, the ids of
    /// every call on the way, outermost first, joined by `/`.
    pub call: String,
    /// The agent's name: `general`, or one the user defined.
    pub agent: String,
    /// 1 for a subagent of the run, 2 for a subagent of a subagent, …
    #[schemars(range(min = 1))]
    pub depth: u32,
}

/// A subagent started: what it was given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct AgentStart {
    #[serde(flatten)]
    pub at: AgentRef,
    /// When it started (RFC 3339, UTC).
    #[schemars(extend("format" = "date-time"))]
    pub time: String,
    /// The task's short description, as the model wrote it.
    pub description: String,
    /// The model that answers it.
    pub model: String,
    /// The tools it was offered: its own rules inside the run's (a call must pass both).
    pub tools: Vec<String>,
    /// Its system prompt, as sent.
    pub system: String,
    /// Its first user turn, as sent: the workspace, the project's instructions, the task.
    pub prompt: String,
}

/// One finished round of a subagent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct AgentRound {
    #[serde(flatten)]
    pub at: AgentRef,
    /// The round, as a run's `round` line holds it.
    pub round: Round,
}

/// How a subagent ended. Its usage and cost are in the run's `end` line too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct AgentEnd {
    #[serde(flatten)]
    pub at: AgentRef,
    /// How it ended, as a run's status; anything but `completed` reached the calling model as
    /// an error result.
    #[serde(deserialize_with = "status_by_name")]
    pub status: Status,
    /// How many rounds finished.
    pub rounds: u32,
    /// Its token counts.
    pub usage: Usage,
    /// What it cost in USD, when the model's price is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0))]
    pub cost_usd: Option<f64>,
    /// How many tool calls it made.
    pub tool_calls: u32,
    /// How long it took.
    pub duration_ms: u64,
    /// What ended it, in words, when it did not complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A status read back by its name (a subagent's end has no exit code of its own: an
/// interruption reads back as SIGINT's).
fn status_by_name<'de, D: Deserializer<'de>>(d: D) -> Result<Status, D::Error> {
    let name = String::deserialize(d)?;
    Status::from_record(&name, 0)
        .ok_or_else(|| serde::de::Error::custom(format!("unknown status {name:?}")))
}
