//! How a run ended. The [`Status`] is the one truth: the exit code is computed from it (the
//! README's "Exit status" table), and it appears, identically, in the transcript's `end` line,
//! the store and `--output json`. A run that failed also says what kind of failure it was and
//! whether trying again may help ([`FailureRecord`]), so a CI step retries only what retrying
//! can fix.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize};

use crate::conversation::{ErrorKind, StopReason, Usage};

mod check;
pub use check::CheckRun;

/// The signals that interrupt a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Interrupt,
    Terminate,
    /// The reader of stdout went away (`-o stream-json | head`): what SIGPIPE would have meant.
    Pipe,
}

impl Signal {
    pub fn name(self) -> &'static str {
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
    /// An error retrying will not fix: the provider refused the request (a bad key, a wrong
    /// model, an invalid or too long request), a record could not be written, an internal error.
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
    /// `--check`: the user's check still failed after the last attempt `--max-checks` allows,
    /// or failed the same way twice with no tool call in between (the model is not getting on).
    CheckFailed,
    /// SIGINT (130) or SIGTERM (143).
    Interrupted(Signal),
    /// The provider stayed unavailable (rate limited, overloaded, failing, unreachable) through
    /// every retry: trying again later may succeed.
    Unavailable,
}

impl Status {
    /// The statuses a run's record (its `end` line) can hold: every status but a batch's
    /// `Incomplete`. A new variant belongs here (`schema`'s test says so).
    pub(crate) const OF_A_RUN: [Status; 14] = [
        Status::Completed,
        Status::Error,
        Status::Unavailable,
        Status::Usage,
        Status::MaxRounds,
        Status::Budget,
        Status::Timeout,
        Status::ToolFailure,
        Status::Schema,
        Status::Stuck,
        Status::CheckFailed,
        Status::Interrupted(Signal::Interrupt),
        Status::Interrupted(Signal::Terminate),
        Status::Interrupted(Signal::Pipe),
    ];

    /// The name in the transcript, `--output json` and the summary line.
    pub fn as_str(self) -> &'static str {
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
            Status::CheckFailed => "check_failed",
            Status::Interrupted(_) => "interrupted",
            Status::Unavailable => "unavailable",
        }
    }

    pub fn exit_code(self) -> u8 {
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
            Status::Unavailable => 10,
            Status::CheckFailed => 11,
            Status::Interrupted(Signal::Interrupt) => 130,
            Status::Interrupted(Signal::Terminate) => 143,
            Status::Interrupted(Signal::Pipe) => 141,
        }
    }

    /// The status a record names, with its exit code telling which signal interrupted it. A
    /// batch's `incomplete` is no run's status, so no record names it.
    pub fn from_record(name: &str, exit_code: u8) -> Option<Status> {
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
            "check_failed" => Status::CheckFailed,
            "unavailable" => Status::Unavailable,
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

/// The kinds of failure a run ends with.
// A provider's are decided where its error is made (`provider::failure`: the HTTP status and the
// provider's own error body), never re-read from a message later; retry decisions, the context
// squeeze and the failure record all read them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Failure {
    /// The key is missing, wrong or lacks the right (401, 403).
    Auth,
    /// Too many requests for now (429).
    RateLimited,
    /// A spent quota or billing limit: it does not come back within a retry's wait.
    Quota,
    /// The provider is overloaded (529, 503).
    Overloaded,
    /// The provider failed (5xx, 408, 409, an error inside a stream).
    ServerError,
    /// Connecting, sending or reading failed, or the stream closed early.
    Network,
    /// No content for longer than the idle timeout.
    Stalled,
    /// The request is longer than the model's context window.
    ContextTooLong,
    /// The model or endpoint does not exist (404): a wrong model name, a wrong base URL.
    NotFound,
    /// The provider rejected the request as it is (other 4xx).
    InvalidRequest,
    /// The provider declined the request itself (a blocked prompt).
    Refused,
    /// The stream broke its protocol (or a success was no event stream: a wrong base URL).
    Protocol,
    /// The response carried more content than one response may.
    TooLarge,
    /// The replay has nothing more to play.
    Replay,
    /// The run could not start as configured: flags, settings, a missing key, an empty prompt,
    /// a tool source (exit 2).
    Config,
    /// `--fail-on` stopped the run after a tool failed or a call was denied (exit 6).
    Tool,
    /// A record the run must keep could not be written: the transcript, the store,
    /// `--output-last-message`.
    Write,
    /// rounds itself failed (its runtime, its HTTP client).
    Internal,
}

impl Failure {
    /// Whether the same request may succeed if tried again (after a wait).
    pub fn retryable(self) -> bool {
        matches!(
            self,
            Failure::RateLimited
                | Failure::Overloaded
                | Failure::ServerError
                | Failure::Network
                | Failure::Stalled
        )
    }

    /// The status a run that failed this way ends with: what retrying may fix is `unavailable`,
    /// what it will not is an error (a usage error, or `tool_failure`, for those two kinds).
    pub(crate) fn status(self) -> Status {
        match self {
            Failure::Config => Status::Usage,
            Failure::Tool => Status::ToolFailure,
            kind if kind.retryable() => Status::Unavailable,
            _ => Status::Error,
        }
    }

    /// The kind a failed status has when nothing more precise is known: none for a run that
    /// completed or stopped at a limit it was given (the status says it all).
    fn of_status(status: Status) -> Option<Failure> {
        match status {
            Status::Usage => Some(Failure::Config),
            Status::ToolFailure => Some(Failure::Tool),
            Status::Error => Some(Failure::Internal),
            _ => None,
        }
    }
}

/// What a failed run reports about its failure, for a machine to decide whether to try again:
/// the `end` line's, `-o json`'s and the step summary's `failure`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct FailureRecord {
    pub kind: Failure,
    /// Whether the same run may succeed if started again later (the kind's own: a rate limit,
    /// an overload, a server error, the network).
    pub retryable: bool,
    /// How long the provider asked to wait before trying again, in seconds, when it said
    /// (`retry-after`, `retry-after-ms`, Gemini's `RetryInfo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0))]
    pub retry_after: Option<f64>,
}

impl FailureRecord {
    pub fn new(kind: Failure, retry_after: Option<Duration>) -> FailureRecord {
        FailureRecord {
            kind,
            retryable: kind.retryable(),
            retry_after: retry_after.map(|d| d.as_secs_f64()),
        }
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
    /// What kind of failure ended the run, when one did.
    pub failure: Option<FailureRecord>,
    pub transcript: Option<PathBuf>,
    pub stop_reason: Option<StopReason>,
    /// With `--output-schema`: the final answer, parsed and valid.
    pub final_json: Option<serde_json::Value>,
    pub tool_calls: u32,
    pub tool_errors: BTreeMap<ErrorKind, u32>,
    /// `--check`: its latest run (its `attempt` says how many there were).
    pub check: Option<CheckRun>,
}

impl Outcome {
    /// A run that ended before its first round, or never started (bad flags, a missing key).
    pub fn new(status: Status, error: Option<String>) -> Outcome {
        Outcome {
            run_id: None,
            status,
            final_text: String::new(),
            rounds: 0,
            usage: Usage::default(),
            cost_usd: None,
            duration_ms: 0,
            error,
            failure: Failure::of_status(status).map(|kind| FailureRecord::new(kind, None)),
            transcript: None,
            stop_reason: None,
            final_json: None,
            tool_calls: 0,
            tool_errors: BTreeMap::new(),
            check: None,
        }
    }

    /// A run that never started: bad flags, a missing key, an empty prompt.
    pub fn usage_error(message: String) -> Outcome {
        Outcome::new(Status::Usage, Some(message))
    }

    pub fn exit_code(&self) -> u8 {
        self.status.exit_code()
    }

    /// Ends the run with `status` and `error`, keeping what happened before.
    pub fn end(mut self, status: Status, error: impl std::fmt::Display) -> Outcome {
        self.status = status;
        self.error = Some(error.to_string());
        self.failure = Failure::of_status(status).map(|kind| FailureRecord::new(kind, None));
        self
    }

    /// Ends the run with a failure of a known kind: its status is the kind's.
    pub fn fail(mut self, failure: FailureRecord, error: impl std::fmt::Display) -> Outcome {
        self.status = failure.kind.status();
        self.error = Some(error.to_string());
        self.failure = Some(failure);
        self
    }
}

/// `--output json`: the outcome with its exit code, which is derived, never stored.
impl Serialize for Outcome {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Outcome", 16)?;
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
        s.serialize_field("failure", &self.failure)?;
        s.serialize_field("transcript", &self.transcript)?;
        s.serialize_field("stop_reason", &self.stop_reason)?;
        s.serialize_field("tool_calls", &self.tool_calls)?;
        s.serialize_field("tool_errors", &self.tool_errors)?;
        if self.check.is_some() {
            s.serialize_field("check", &self.check)?;
        }
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
    fn a_failure_decides_the_status_and_only_what_retrying_fixes_is_unavailable() {
        let cases = [
            (Failure::RateLimited, Status::Unavailable),
            (Failure::Overloaded, Status::Unavailable),
            (Failure::ServerError, Status::Unavailable),
            (Failure::Network, Status::Unavailable),
            (Failure::Stalled, Status::Unavailable),
            (Failure::Auth, Status::Error),
            (Failure::Quota, Status::Error),
            (Failure::NotFound, Status::Error),
            (Failure::ContextTooLong, Status::Error),
            (Failure::InvalidRequest, Status::Error),
            (Failure::Write, Status::Error),
            (Failure::Config, Status::Usage),
            (Failure::Tool, Status::ToolFailure),
        ];
        for (kind, status) in cases {
            let wait = Some(Duration::from_millis(1500));
            let ended =
                Outcome::new(Status::MaxRounds, None).fail(FailureRecord::new(kind, wait), "x");
            assert_eq!(ended.status, status, "{kind:?}");
            let record = ended.failure.unwrap();
            assert_eq!(record.retryable, status == Status::Unavailable, "{kind:?}");
            assert_eq!(record.retry_after, Some(1.5));
        }
        assert_eq!(Status::Unavailable.exit_code(), 10);
        // A limit the run was given is no failure; an error of unknown kind is rounds' own.
        assert_eq!(Outcome::new(Status::Budget, None).failure, None);
        let json = serde_json::to_value(Outcome::new(Status::Error, None)).unwrap();
        assert_eq!(
            json["failure"],
            serde_json::json!({"kind": "internal", "retryable": false})
        );
        let json = serde_json::to_value(Outcome::usage_error("no key".into())).unwrap();
        assert_eq!(json["failure"]["kind"], "config");
    }

    #[test]
    fn json_carries_the_derived_exit_code() {
        let outcome = Outcome::new(Status::Interrupted(Signal::Terminate), None);
        let json = serde_json::to_value(&outcome).unwrap();
        assert_eq!(json["status"], "interrupted");
        assert_eq!(json["exit_code"], 143);
    }
}
