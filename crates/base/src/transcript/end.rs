//! The `end` line: how a run ended, built from its `Outcome` in one place.

use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use crate::conversation::{ErrorKind, Usage};
use crate::outcome::{FailureRecord, Outcome, Status};

/// The last line: how the run ended.
// Built from the run's `Outcome` in one place (`From<&Outcome>`), so the transcript, the store
// and the stream-json `end` event always agree with the exit status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "EndRecord")]
#[schemars(deny_unknown_fields)]
pub struct End {
    pub status: Status,
    /// The process's exit status, the status's own: written out so a reader needs no table.
    #[schemars(schema_with = "exit_code_schema")]
    pub exit_code: u8,
    /// How many rounds finished.
    pub rounds: u32,
    /// The model's final answer (empty when it gave none).
    pub final_text: String,
    /// The whole run's token counts.
    pub usage: Usage,
    /// What the run cost in USD, when the model's price is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0))]
    pub cost_usd: Option<f64>,
    /// How long the run took.
    pub duration_ms: u64,
    /// What ended the run, in words, when something went wrong (null otherwise).
    pub error: Option<String>,
    /// What kind of failure ended the run, and whether trying again may help (absent when it
    /// completed or stopped at a limit it was given, and in transcripts from before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<FailureRecord>,
    /// How many tool calls were made.
    #[serde(default)]
    pub tool_calls: u32,
    /// How many tool calls failed, by kind (kinds that never failed are left out).
    #[serde(default)]
    #[schemars(schema_with = "tool_errors_schema")]
    pub tool_errors: BTreeMap<ErrorKind, u32>,
}

impl From<&Outcome> for End {
    fn from(outcome: &Outcome) -> End {
        End {
            status: outcome.status,
            exit_code: outcome.exit_code(),
            rounds: outcome.rounds,
            final_text: outcome.final_text.clone(),
            usage: outcome.usage,
            cost_usd: outcome.cost_usd,
            duration_ms: outcome.duration_ms,
            error: outcome.error.clone(),
            failure: outcome.failure,
            tool_calls: outcome.tool_calls,
            tool_errors: outcome.tool_errors.clone(),
        }
    }
}

/// `End` as written: the status by name, which with the exit code tells SIGINT from SIGTERM.
// (`JsonSchema` because `End` reads through it; the published schema is of what is written.)
#[derive(Deserialize, JsonSchema)]
struct EndRecord {
    status: String,
    exit_code: u8,
    rounds: u32,
    final_text: String,
    usage: Usage,
    #[serde(default)]
    cost_usd: Option<f64>,
    duration_ms: u64,
    error: Option<String>,
    // Absent from transcripts written before it.
    #[serde(default)]
    failure: Option<FailureRecord>,
    #[serde(default)]
    tool_calls: u32,
    #[serde(default)]
    tool_errors: BTreeMap<ErrorKind, u32>,
}

/// An end line whose status is none rounds writes (with that exit code).
#[derive(Debug, thiserror::Error)]
#[error("unknown status {0:?}")]
pub(crate) struct UnknownStatus(pub String);

impl TryFrom<EndRecord> for End {
    type Error = UnknownStatus;

    fn try_from(r: EndRecord) -> Result<End, UnknownStatus> {
        let status = Status::from_record(&r.status, r.exit_code).ok_or(UnknownStatus(r.status))?;
        Ok(End {
            status,
            exit_code: r.exit_code,
            rounds: r.rounds,
            final_text: r.final_text,
            usage: r.usage,
            cost_usd: r.cost_usd,
            duration_ms: r.duration_ms,
            error: r.error,
            failure: r.failure,
            tool_calls: r.tool_calls,
            tool_errors: r.tool_errors,
        })
    }
}

/// The `end` line's `exit_code`: one of the run statuses' codes.
fn exit_code_schema(_: &mut SchemaGenerator) -> Schema {
    let mut codes: Vec<u8> = Status::OF_A_RUN.iter().map(|s| s.exit_code()).collect();
    codes.sort_unstable();
    codes.dedup();
    json_schema!({
        "type": "integer",
        "enum": codes,
    })
}

/// The `end` line's `tool_errors`: a count of at least 1 per error kind that occurred (the map
/// type's own schema cannot see the kinds' names: they are documented variants).
fn tool_errors_schema(generator: &mut SchemaGenerator) -> Schema {
    let kinds = generator.subschema_for::<ErrorKind>();
    json_schema!({
        "type": "object",
        "propertyNames": kinds,
        "additionalProperties": {"type": "integer", "minimum": 1},
    })
}
