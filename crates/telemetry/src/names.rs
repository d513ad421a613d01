//! The names spans, attributes and metrics use: the GenAI semantic conventions as the
//! `opentelemetry-semantic-conventions` crate (0.33) generates them from the semantic
//! conventions registry 1.42.0 ([`SCHEMA_URL`]), which marks them moved to their own
//! repository (open-telemetry/semantic-conventions-genai) with the names unchanged. Taken from
//! the crate, not typed here, so a rename there is a compile error here.
// The crate marks the GenAI names deprecated (moved, not changed): used here once, by name.
#![allow(deprecated)]

use opentelemetry_semantic_conventions::{attribute, metric};

pub(crate) const SCHEMA_URL: &str = opentelemetry_semantic_conventions::SCHEMA_URL;
pub(crate) const ERROR_TYPE: &str = attribute::ERROR_TYPE;
pub(crate) const GEN_AI_AGENT_NAME: &str = attribute::GEN_AI_AGENT_NAME;
pub(crate) const GEN_AI_AGENT_DESCRIPTION: &str = attribute::GEN_AI_AGENT_DESCRIPTION;
pub(crate) const GEN_AI_CONVERSATION_ID: &str = attribute::GEN_AI_CONVERSATION_ID;
pub(crate) const GEN_AI_INPUT_MESSAGES: &str = attribute::GEN_AI_INPUT_MESSAGES;
pub(crate) const GEN_AI_OPERATION_NAME: &str = attribute::GEN_AI_OPERATION_NAME;
pub(crate) const GEN_AI_OUTPUT_MESSAGES: &str = attribute::GEN_AI_OUTPUT_MESSAGES;
pub(crate) const GEN_AI_PROVIDER_NAME: &str = attribute::GEN_AI_PROVIDER_NAME;
pub(crate) const GEN_AI_REQUEST_MODEL: &str = attribute::GEN_AI_REQUEST_MODEL;
pub(crate) const GEN_AI_RESPONSE_MODEL: &str = attribute::GEN_AI_RESPONSE_MODEL;
pub(crate) const GEN_AI_RESPONSE_FINISH_REASONS: &str = attribute::GEN_AI_RESPONSE_FINISH_REASONS;
pub(crate) const GEN_AI_TOKEN_TYPE: &str = attribute::GEN_AI_TOKEN_TYPE;
pub(crate) const GEN_AI_TOOL_CALL_ARGUMENTS: &str = attribute::GEN_AI_TOOL_CALL_ARGUMENTS;
pub(crate) const GEN_AI_TOOL_CALL_ID: &str = attribute::GEN_AI_TOOL_CALL_ID;
pub(crate) const GEN_AI_TOOL_CALL_RESULT: &str = attribute::GEN_AI_TOOL_CALL_RESULT;
pub(crate) const GEN_AI_TOOL_NAME: &str = attribute::GEN_AI_TOOL_NAME;
pub(crate) const GEN_AI_TOOL_TYPE: &str = attribute::GEN_AI_TOOL_TYPE;
pub(crate) const GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: &str =
    attribute::GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS;
pub(crate) const GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: &str =
    attribute::GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS;
pub(crate) const GEN_AI_USAGE_INPUT_TOKENS: &str = attribute::GEN_AI_USAGE_INPUT_TOKENS;
pub(crate) const GEN_AI_USAGE_OUTPUT_TOKENS: &str = attribute::GEN_AI_USAGE_OUTPUT_TOKENS;
pub(crate) const GEN_AI_CLIENT_OPERATION_DURATION: &str = metric::GEN_AI_CLIENT_OPERATION_DURATION;
pub(crate) const GEN_AI_CLIENT_TOKEN_USAGE: &str = metric::GEN_AI_CLIENT_TOKEN_USAGE;

/// rounds' own attributes, where the conventions have none.
pub(crate) const RUN_ID: &str = "rounds.run.id";
/// How deep a subagent is (1: the run's own).
pub(crate) const AGENT_DEPTH: &str = "rounds.agent.depth";
pub(crate) const WORKSPACE: &str = "rounds.workspace";
pub(crate) const ROUND: &str = "rounds.round";
pub(crate) const STATUS: &str = "rounds.status";
pub(crate) const EXIT_CODE: &str = "rounds.exit_code";
pub(crate) const FAILURE: &str = "rounds.failure";
pub(crate) const COST_USD: &str = "rounds.cost_usd";
pub(crate) const TOOL_OUTCOME: &str = "rounds.tool.outcome";
pub(crate) const TOOL_EXIT_CODE: &str = "rounds.tool.exit_code";
pub(crate) const DURATION_MS: &str = "rounds.duration_ms";
pub(crate) const CHECK_PASSED: &str = "rounds.check.passed";
pub(crate) const CHECK_EXIT_CODE: &str = "rounds.check.exit_code";
pub(crate) const CHECK_COMMAND: &str = "rounds.check.command";
pub(crate) const HOOK_EVENT: &str = "rounds.hook.event";
pub(crate) const HOOK_OUTCOME: &str = "rounds.hook.outcome";
pub(crate) const HOOK_COMMAND: &str = "rounds.hook.command";

/// Metrics of rounds' own.
pub(crate) const TOOL_DURATION: &str = "rounds.tool.duration";
pub(crate) const RUNS: &str = "rounds.runs";
