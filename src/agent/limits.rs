//! What bounds the loop: rounds, time, tokens, money, calls, repeats, and what ends a run early.

use std::time::Duration;

use crate::provider::retry::RetryPolicy;
use crate::transcript;

/// What to do when the round limit is reached (`--on-max-rounds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnMaxRounds {
    Stop,
    // One more call, with tools forbidden, so the model answers from what it has.
    Summarize,
}

/// Which tool outcomes end the run (`--fail-on`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct FailOn {
    /// Any error result except a denial.
    pub(crate) tool_error: bool,
    /// A call outside its rule, or to a tool the allowlist did not offer.
    pub(crate) denied: bool,
}

/// Limits the loop enforces itself.
#[derive(Debug, Clone)]
pub(crate) struct LoopLimits {
    pub(crate) max_rounds: u32,
    /// The whole run's deadline (`--timeout`): `app` counts it from rounds' start, the loop again
    /// from its own start (a floor for a loop run without `app`).
    pub(crate) deadline: Option<Duration>,
    /// The model's context window in tokens: requests are kept inside it by eliding the
    /// oldest tool results.
    pub(crate) context_window: u64,
    pub(crate) max_tokens: Option<u32>,
    pub(crate) max_parallel: usize,
    /// The most tool calls one response may ask for (`--max-calls-per-round`).
    pub(crate) max_calls_per_round: u32,
    /// How many times the same call may return the same result before the model is told, and
    /// ended as stuck at the next (`--max-repeats`).
    pub(crate) max_repeats: u32,
    /// `--check`: the command whose success completes the run.
    pub(crate) check: Option<String>,
    /// How many times the check may run and fail (`--max-checks`).
    pub(crate) max_checks: u32,
    pub(crate) budget_tokens: Option<u64>,
    /// The most the run may cost (`--budget-usd`); needs the model's price.
    pub(crate) budget_usd: Option<f64>,
    pub(crate) on_max_rounds: OnMaxRounds,
    pub(crate) fail_on: FailOn,
    pub(crate) retry: RetryPolicy,
}

impl LoopLimits {
    /// The limits as the transcript's start line records them, with the tool timeout the
    /// toolbox enforces.
    pub(crate) fn record(&self, tool_timeout: Duration) -> transcript::Limits {
        transcript::Limits {
            max_rounds: self.max_rounds,
            max_tokens: self.max_tokens,
            budget_tokens: self.budget_tokens,
            budget_usd: self.budget_usd,
            context_window: Some(self.context_window),
            timeout_secs: self.deadline.map(|t| t.as_secs_f64()),
            tool_timeout_secs: tool_timeout.as_secs_f64(),
            max_parallel: self.max_parallel,
            max_calls_per_round: Some(self.max_calls_per_round),
            max_repeats: Some(self.max_repeats),
            check: self.check.clone(),
            max_checks: self.check.as_ref().map(|_| self.max_checks),
        }
    }
}
