//! How a run ended. The [`Status`] is the one truth: the exit code is computed from it (the
//! README's "Exit status" table), and it appears, identically, in the transcript's `end` line,
//! the store and `--output json`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;
use serde::ser::SerializeStruct;

use crate::conversation::{ErrorKind, StopReason, Usage};

/// The signals that interrupt a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Interrupt,
    Terminate,
    /// The reader of stdout went away (`-o stream-json | head`): what SIGPIPE would have meant.
    Pipe,
}

impl Signal {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Signal::Interrupt => "SIGINT",
            Signal::Terminate => "SIGTERM",
            Signal::Pipe => "SIGPIPE",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The model finished without asking for more tools; for a command other than a run (help
    /// and version included), it did what was asked; for a batch, every job completed.
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
    /// `--output-schema`: the final answer did not validate, even after a corrective turn.
    Schema,
    /// `rounds batch`: some job did not complete (each job's own status is in `results.jsonl`).
    /// Never a run's: no record holds it.
    Incomplete,
    /// The model kept making the same call for the same result after being told it would not
    /// change (the loop guards).
    Stuck,
    /// SIGINT (130) or SIGTERM (143).
    Interrupted(Signal),
}

impl Status {
    /// The statuses a run's record (its `end` line) can hold: every status but a batch's
    /// `Incomplete`. A new variant belongs here (`schema`'s test says so).
    pub const OF_A_RUN: [Status; 12] = [
        Status::Completed,
        Status::Error,
        Status::Usage,
        Status::MaxRounds,
        Status::Budget,
        Status::Timeout,
        Status::ToolFailure,
        Status::Schema,
        Status::Stuck,
        Status::Interrupted(Signal::Interrupt),
        Status::Interrupted(Signal::Terminate),
        Status::Interrupted(Signal::Pipe),
    ];

    /// The name in the transcript, `--output json` and the summary line.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Status::Completed => "completed",
            Status::Error => "error",
            Status::Usage => "usage",
            Status::MaxRounds => "max_rounds",
            Status::Budget => "budget",
            Status::Timeout => "timeout",
            Status::ToolFailure => "tool_failure",
            Status::Schema => "schema",
            Status::Incomplete => "incomplete",
            Status::Stuck => "stuck",
            Status::Interrupted(_) => "interrupted",
        }
    }

    pub(crate) fn exit_code(self) -> u8 {
        match self {
            Status::Completed => 0,
            Status::Error => 1,
            Status::Usage => 2,
            Status::MaxRounds => 3,
            Status::Budget => 4,
            Status::Timeout => 5,
            Status::ToolFailure => 6,
            Status::Schema => 7,
            Status::Incomplete => 8,
            Status::Stuck => 9,
            Status::Interrupted(Signal::Interrupt) => 130,
            Status::Interrupted(Signal::Terminate) => 143,
            Status::Interrupted(Signal::Pipe) => 141,
        }
    }

    /// The status a record names, with its exit code telling which signal interrupted it. A
    /// batch's `incomplete` is no run's status, so no record names it.
    pub(crate) fn from_record(name: &str, exit_code: u8) -> Option<Status> {
        Some(match name {
            "completed" => Status::Completed,
            "error" => Status::Error,
            "usage" => Status::Usage,
            "max_rounds" => Status::MaxRounds,
            "budget" => Status::Budget,
            "timeout" => Status::Timeout,
            "tool_failure" => Status::ToolFailure,
            "schema" => Status::Schema,
            "stuck" => Status::Stuck,
            "interrupted" if exit_code == 143 => Status::Interrupted(Signal::Terminate),
            "interrupted" if exit_code == 141 => Status::Interrupted(Signal::Pipe),
            "interrupted" => Status::Interrupted(Signal::Interrupt),
            _ => return None,
        })
    }
}

impl Serialize for Status {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Everything the outputs report about a finished run.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The run's id (its transcript's and the store's), once the run started.
    pub run_id: Option<String>,
    pub status: Status,
    pub final_text: String,
    pub rounds: u32,
    pub usage: Usage,
    /// What the run cost, when the model's price is known.
    pub cost_usd: Option<f64>,
    pub duration_ms: u64,
    pub error: Option<String>,
    pub transcript: Option<PathBuf>,
    pub stop_reason: Option<StopReason>,
    /// With `--output-schema`: the final answer, parsed and valid.
    pub final_json: Option<serde_json::Value>,
    pub tool_calls: u32,
    pub tool_errors: BTreeMap<ErrorKind, u32>,
}

impl Outcome {
    /// A run that ended before its first round, or never started (bad flags, a missing key).
    pub(crate) fn new(status: Status, error: Option<String>) -> Outcome {
        Outcome {
            run_id: None,
            status,
            final_text: String::new(),
            rounds: 0,
            usage: Usage::default(),
            cost_usd: None,
            duration_ms: 0,
            error,
            transcript: None,
            stop_reason: None,
            final_json: None,
            tool_calls: 0,
            tool_errors: BTreeMap::new(),
        }
    }

    /// A run that never started: bad flags, a missing key, an empty prompt.
    pub(crate) fn usage_error(message: String) -> Outcome {
        Outcome::new(Status::Usage, Some(message))
    }

    pub(crate) fn exit_code(&self) -> u8 {
        self.status.exit_code()
    }

    /// Ends the run with `status` and `error`, keeping what happened before.
    pub(crate) fn end(mut self, status: Status, error: impl std::fmt::Display) -> Outcome {
        self.status = status;
        self.error = Some(error.to_string());
        self
    }
}

/// `--output json`: the outcome with its exit code, which is derived, never stored.
impl Serialize for Outcome {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Outcome", 14)?;
        if self.run_id.is_some() {
            s.serialize_field("run_id", &self.run_id)?;
        }
        s.serialize_field("status", &self.status)?;
        s.serialize_field("exit_code", &self.exit_code())?;
        s.serialize_field("final_text", &self.final_text)?;
        if self.final_json.is_some() {
            s.serialize_field("final_json", &self.final_json)?;
        }
        s.serialize_field("rounds", &self.rounds)?;
        s.serialize_field("usage", &self.usage)?;
        if self.cost_usd.is_some() {
            s.serialize_field("cost_usd", &self.cost_usd)?;
        }
        s.serialize_field("duration_ms", &self.duration_ms)?;
        s.serialize_field("error", &self.error)?;
        s.serialize_field("transcript", &self.transcript)?;
        s.serialize_field("stop_reason", &self.stop_reason)?;
        s.serialize_field("tool_calls", &self.tool_calls)?;
        s.serialize_field("tool_errors", &self.tool_errors)?;
        s.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_reads_back_from_its_record() {
        for status in Status::OF_A_RUN {
            let back = Status::from_record(status.as_str(), status.exit_code());
            assert_eq!(back, Some(status));
        }
        assert_eq!(Status::from_record("bogus", 0), None);
        let incomplete = Status::Incomplete;
        let read = Status::from_record(incomplete.as_str(), incomplete.exit_code());
        assert_eq!(read, None, "a batch's status is no run's");
    }

    #[test]
    fn every_exit_code_belongs_to_one_status() {
        let mut all = Status::OF_A_RUN.to_vec();
        all.push(Status::Incomplete);
        let codes: std::collections::BTreeSet<u8> = all.iter().map(|s| s.exit_code()).collect();
        assert_eq!(codes.len(), all.len(), "two statuses share an exit code");
        assert_eq!(Status::Incomplete.exit_code(), 8);
    }

    #[test]
    fn json_carries_the_derived_exit_code() {
        let outcome = Outcome::new(Status::Interrupted(Signal::Terminate), None);
        let json = serde_json::to_value(&outcome).unwrap();
        assert_eq!(json["status"], "interrupted");
        assert_eq!(json["exit_code"], 143);
    }
}
