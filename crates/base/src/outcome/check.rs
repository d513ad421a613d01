//! One run of `--check`, as the outcome, the transcript's rounds and the store record it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One run of `--check`: the user's command that decides whether the run is done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct CheckRun {
    /// The command, as `bash -c` ran it in the workspace root (redacted).
    pub command: String,
    /// Which attempt of the run this was, from 1 (`--max-checks` bounds them).
    #[schemars(range(min = 1))]
    pub attempt: u32,
    /// It exited 0: the run is done (unless `--output-schema` still refuses the answer).
    pub passed: bool,
    /// How it exited (128+N when killed by signal N); absent when it was stopped at the tool
    /// timeout or cancelled, which `output` says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    /// What the model is told, as a tool result is: exit code, stdout and stderr, each long
    /// stream keeping its head and tail; capped and redacted.
    pub output: String,
    /// Whether `output` was cut to the result cap.
    #[serde(default)]
    pub truncated: bool,
    /// Size of the output in bytes, before any capping.
    #[serde(default)]
    pub bytes: u64,
    /// Where the whole output was saved when it was cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_output: Option<String>,
    /// The variables whose values were taken out of the output (names only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1), extend("uniqueItems" = true))]
    pub redacted: Vec<String>,
}

impl CheckRun {
    /// The user turn a failed check gives the model: what ran, that the work is not done, and
    /// the output. Also what a resumed conversation holds after the round.
    pub fn turn(&self) -> String {
        let how = match self.exit_code {
            Some(code) => format!("exit code {code}"),
            None => "it did not finish".to_owned(),
        };
        format!(
            "The check the user set to decide when the work is done failed ({how}), so the \
             work is not done yet. Find and fix the cause with the tools, then answer again: \
             the check runs each time you answer without calling tools.\n\nThe check: {}\n{}",
            crate::markdown::code_span(&self.command),
            self.output
        )
    }
}
