//! How a run ended. The status decides the exit code (DESIGN §7) and appears, identically, in the
//! transcript's `end` line and in `--output json`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use crate::conversation::{ErrorKind, StopReason, Usage};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The model finished without asking for more tools.
    Completed,
    /// Provider error after retries, transcript write failure, internal error.
    Error,
    /// Bad flags, missing key, unreadable prompt file, empty prompt.
    Usage,
    /// The round limit was reached.
    MaxRounds,
    /// The token budget was exhausted.
    Budget,
    /// The whole-run deadline passed.
    Timeout,
    /// `--fail-on` triggered.
    ToolFailure,
    /// SIGINT (130) or SIGTERM (143).
    Interrupted,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Completed => "completed",
            Status::Error => "error",
            Status::Usage => "usage",
            Status::MaxRounds => "max_rounds",
            Status::Budget => "budget",
            Status::Timeout => "timeout",
            Status::ToolFailure => "tool_failure",
            Status::Interrupted => "interrupted",
        }
    }

    /// The exit code; interruptions carry the signal's own code instead.
    pub fn exit_code(self) -> u8 {
        match self {
            Status::Completed => 0,
            Status::Error => 1,
            Status::Usage => 2,
            Status::MaxRounds => 3,
            Status::Budget => 4,
            Status::Timeout => 5,
            Status::ToolFailure => 6,
            Status::Interrupted => 130,
        }
    }
}

/// Everything the outputs report about a finished run.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub status: Status,
    pub exit_code: u8,
    pub final_text: String,
    pub rounds: u32,
    pub usage: Usage,
    pub duration_ms: u64,
    pub error: Option<String>,
    pub transcript: Option<PathBuf>,
    pub stop_reason: Option<StopReason>,
    pub tool_calls: u32,
    pub tool_errors: BTreeMap<ErrorKind, u32>,
}

impl Outcome {
    /// A run that never started: bad flags, a missing key, an empty prompt.
    pub fn usage_error(message: String) -> Outcome {
        Outcome {
            status: Status::Usage,
            exit_code: Status::Usage.exit_code(),
            final_text: String::new(),
            rounds: 0,
            usage: Usage::default(),
            duration_ms: 0,
            error: Some(message),
            transcript: None,
            stop_reason: None,
            tool_calls: 0,
            tool_errors: BTreeMap::new(),
        }
    }
}
