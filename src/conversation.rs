//! The provider-neutral conversation: what the model said (blocks), what the tools answered
//! (results), and how many tokens it cost.
//!
//! These types are shared by three consumers that must agree byte for byte: the provider request
//! builders (which turn history into each wire format), the agent loop, and the transcript (whose
//! `round` lines serialize blocks and results exactly as they are defined here). Keeping one
//! definition is what makes `--resume` and `replay:` lossless.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One piece of an assistant turn, in the order the model produced it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    /// Visible answer text.
    Text {
        text: String,
        /// Opaque provider state attached to this part (Gemini `thoughtSignature`); echoed as is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Model reasoning. The signature (Anthropic) must go back unchanged to the provider that made it.
    Thinking {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Encrypted reasoning (Anthropic `redacted_thinking`): opaque, echoed unchanged.
    RedactedThinking { data: String },
    /// A reasoning item of the OpenAI Responses API: the model's reasoning, encrypted (asked for
    /// with `include: ["reasoning.encrypted_content"]`, since nothing is stored server-side), and
    /// the summary texts when any were produced. Echoed unchanged, in place, and only to the
    /// provider that made it; every other provider skips it.
    Reasoning {
        id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        summary: Vec<String>,
    },
    /// A request to run a tool.
    ToolUse(ToolUse),
}

impl Block {
    /// A plain text block.
    pub fn text(text: impl Into<String>) -> Block {
        Block::Text {
            text: text.into(),
            signature: None,
        }
    }
}

/// A tool call as the model emitted it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolUse {
    pub id: String,
    pub name: String,
    /// The parsed arguments. `{}` when the arguments were not valid JSON (see `raw_input`).
    pub input: Value,
    /// The argument text exactly as streamed, kept when it is not the canonical serialization of
    /// `input` (OpenAI echoes it verbatim) or when it did not parse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<String>,
    /// Why the call cannot be run even though it was emitted (e.g. cut off by `max_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defect: Option<CallDefect>,
    /// Opaque provider state attached to this part (Gemini `thoughtSignature`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

impl ToolUse {
    /// Builds a call from streamed argument text, recording why it is unusable if it does not parse
    /// into a JSON object (the text is then kept in `raw_input`).
    pub fn from_raw(id: String, name: String, raw: &str) -> ToolUse {
        let trimmed = raw.trim();
        let parsed = if trimmed.is_empty() {
            Ok(Value::Object(Default::default()))
        } else {
            match serde_json::from_str::<Value>(trimmed) {
                Ok(v @ Value::Object(_)) => Ok(v),
                Ok(other) => Err(format!(
                    "arguments must be a JSON object, got {}",
                    json_kind(&other)
                )),
                Err(e) => Err(e.to_string()),
            }
        };
        let (input, defect, raw_input) = match parsed {
            Ok(v) => (v, None, None),
            Err(e) => (
                Value::Object(Default::default()),
                Some(CallDefect::InvalidJson(e)),
                Some(raw.to_owned()),
            ),
        };
        ToolUse {
            id,
            name,
            input,
            raw_input,
            defect,
            signature: None,
        }
    }

    /// Keeps the exact argument text when it differs from the canonical serialization, for
    /// providers that echo arguments as a string.
    pub fn keep_raw(mut self, raw: &str) -> ToolUse {
        if self.raw_input.is_none()
            && serde_json::to_string(&self.input).ok().as_deref() != Some(raw)
        {
            self.raw_input = Some(raw.to_owned());
        }
        self
    }

    /// The argument text to echo to providers that carry arguments as a string.
    pub fn arguments_text(&self) -> String {
        match &self.raw_input {
            Some(raw) => raw.clone(),
            None => self.input.to_string(),
        }
    }
}

/// A tool call that must not be executed, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum CallDefect {
    /// The arguments were not a JSON object.
    InvalidJson(String),
    /// The response ended (`max_tokens`) before the call's arguments were complete.
    Truncated,
}

/// Names a JSON value's type for error messages.
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Why a tool result is an error. Recorded in the transcript and counted in the `end` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    InvalidJson,
    Schema,
    UnknownTool,
    Denied,
    Vetoed,
    Timeout,
    Failed,
    Cancelled,
}

/// The outcome of one tool call, sent back to the model and recorded in the transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    pub tool_use_id: String,
    pub name: String,
    pub is_error: bool,
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorKind>,
    #[serde(default)]
    pub duration_ms: u64,
    #[serde(default)]
    pub truncated: bool,
    /// Size of the full output in bytes, before any capping.
    #[serde(default)]
    pub bytes: u64,
    /// Where the full output was saved when it was capped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_output: Option<String>,
}

impl ToolResult {
    /// An error result that never reached execution (or failed in it).
    pub fn error(call: &ToolUse, kind: ErrorKind, message: impl Into<String>) -> ToolResult {
        let content = message.into();
        ToolResult {
            tool_use_id: call.id.clone(),
            name: call.name.clone(),
            is_error: true,
            bytes: content.len() as u64,
            content,
            error_kind: Some(kind),
            duration_ms: 0,
            truncated: false,
            full_output: None,
        }
    }
}

/// Why a model response ended, in neutral terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    StopSequence,
    /// Anthropic paused a long turn; sending the response back as is lets it continue.
    PauseTurn,
    Refusal,
    ContextWindowExceeded,
    #[serde(other)]
    Other,
}

/// Token counts. Each provider reports them differently; these are the common denominators.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    /// How many of `output_tokens` the model spent reasoning (already counted in them).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// Adds another response's usage to a running total. Counts come from the provider, so
    /// they saturate rather than wrap: an absurd report must not turn into a small total that
    /// slips under `--budget-tokens`.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_tokens = self
            .cache_read_tokens
            .saturating_add(other.cache_read_tokens);
        self.cache_write_tokens = self
            .cache_write_tokens
            .saturating_add(other.cache_write_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(other.reasoning_tokens);
    }

    /// Every input token, cached or not.
    pub fn input_total(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_read_tokens)
            .saturating_add(self.cache_write_tokens)
    }

    /// Tokens that count against `--budget-tokens`.
    pub fn total(&self) -> u64 {
        self.input_total().saturating_add(self.output_tokens)
    }
}

/// One turn of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// Text from the user (the prompt).
    User(String),
    /// A model response, with the provider that produced it (its signatures are only valid there).
    Assistant {
        blocks: Vec<Block>,
        provider: String,
    },
    /// The results of every tool call of the previous assistant turn, in call order.
    ToolResults(Vec<ToolResult>),
}

/// Whether a tool may run at the same time as others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// Reads only: consecutive safe calls run in parallel.
    Safe,
    /// Changes things: waits for every earlier call and blocks every later one.
    Mutating,
}

/// What the model is told about a tool. Tools produce specs; providers turn them into each
/// wire format's tool definitions.
#[derive(Debug, Clone, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub class: Class,
}
