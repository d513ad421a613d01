//! The provider-neutral conversation: what the model said (blocks), what the tools answered
//! (results), and how many tokens it cost.
//!
//! These types are shared by three consumers that must agree byte for byte: the provider request
//! builders (which turn history into each wire format), the agent loop, and the transcript (whose
//! `round` lines serialize blocks and results exactly as they are defined here). Keeping one
//! definition is what makes `--resume` and `replay:` lossless.

use std::collections::HashSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One piece of an assistant turn, in the order the model produced it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
#[schemars(deny_unknown_fields)]
pub enum Block {
    /// Visible answer text.
    Text {
        text: String,
        /// Opaque provider state attached to this part (Gemini `thoughtSignature`); echoed as is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Model reasoning.
    Thinking {
        text: String,
        /// Opaque provider state (Anthropic): it must go back unchanged to the provider that
        /// made it.
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
        /// The reasoning, encrypted by the provider.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<String>,
        /// The summary texts of the reasoning (absent when none were produced).
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ToolUse {
    /// The call's id (the provider's, or one rounds generated when it was unusable).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The parsed arguments. `{}` when the arguments were not valid JSON (see `raw_input`).
    #[schemars(with = "serde_json::Map<String, Value>")]
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

/// The longest tool-call id taken from a provider as it is.
pub(crate) const MAX_CALL_ID: usize = 128;

/// The tool-call ids of one model response. An id comes unchanged from the provider (or a
/// proxy, or a local server), and it travels far: into hook environments, file names, the
/// transcript, the next request. So one that is missing, longer than [`MAX_CALL_ID`], holds
/// anything but printable ASCII (a NUL, a newline, an escape sequence), or repeats an earlier
/// id of the same response is replaced, at the mapper, by a generated one; everything after
/// (results, transcript, later requests) sees only the replacement.
///
/// Generated ids are `PREFIX{turn}_{n}`: `turn` counts the assistant turns of the conversation
/// this response continues, so ids stay unique across the rounds of a run and across the runs
/// of a `--resume` chain.
#[derive(Debug, Default)]
pub struct CallIds {
    earlier_turns: usize,
    generated: u32,
    seen: HashSet<String>,
}

impl CallIds {
    /// The ids of the response that follows `history`.
    pub fn after(history: &[Message]) -> CallIds {
        CallIds {
            earlier_turns: history
                .iter()
                .filter(|m| matches!(m, Message::Assistant { .. }))
                .count(),
            ..CallIds::default()
        }
    }

    /// The id to use for a call the provider gave `id` (empty when it gave none).
    pub fn accept(&mut self, id: String, prefix: &str) -> String {
        let usable = !id.is_empty()
            && id.len() <= MAX_CALL_ID
            && id.bytes().all(|b| b.is_ascii_graphic())
            && !self.seen.contains(&id);
        let id = if usable {
            id
        } else {
            let fresh = loop {
                self.generated += 1;
                let fresh = format!("{prefix}{}_{}", self.earlier_turns + 1, self.generated);
                if !self.seen.contains(&fresh) {
                    break fresh;
                }
            };
            if !id.is_empty() {
                let shown: String = id.chars().take(40).flat_map(char::escape_default).collect();
                tracing::warn!(
                    "the provider gave a tool call the id \"{shown}\"{}, which is not usable \
                     (too long, a repeat, or not printable ASCII); it is {fresh} instead",
                    if id.chars().count() > 40 { "…" } else { "" }
                );
            }
            fresh
        };
        self.seen.insert(id.clone());
        id
    }
}

/// A tool call that must not be executed, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
#[schemars(deny_unknown_fields)]
pub enum CallDefect {
    /// The arguments were not a JSON object (`detail` says why).
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
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Not run: the arguments were not a JSON object, or were cut off (the call's `defect`).
    InvalidJson,
    /// Not run: the arguments did not match the tool's input schema.
    Schema,
    /// Not run: no tool of that name is offered.
    UnknownTool,
    /// Not run: the allowlist or a deny rule refused it (or it came in the tool-less summary
    /// call).
    Denied,
    /// A hook refused the call, before it ran or after.
    Vetoed,
    /// The call ran longer than `--tool-timeout`.
    Timeout,
    /// The tool failed (or could not be started).
    Failed,
    /// The run was cancelled before the call ended (or, resumed, the call has no recorded
    /// result).
    Cancelled,
    /// Not run: the response asked for more calls than `--max-calls-per-round`.
    Dropped,
}

impl ErrorKind {
    /// The kind in words, for what a person reads (a summary, a progress line, a page): the
    /// transcript and the JSON keep the snake_case name.
    pub fn words(self) -> &'static str {
        match self {
            ErrorKind::InvalidJson => "bad JSON",
            ErrorKind::Schema => "bad arguments",
            ErrorKind::UnknownTool => "not offered",
            ErrorKind::Denied => "denied",
            ErrorKind::Vetoed => "vetoed",
            ErrorKind::Timeout => "timed out",
            ErrorKind::Failed => "failed",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Dropped => "dropped",
        }
    }
}

/// The outcome of one tool call, sent back to the model and recorded in the transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ToolResult {
    /// The id of the call it answers.
    pub tool_use_id: String,
    /// The tool's name.
    pub name: String,
    /// Whether the call failed (`content` then says why).
    pub is_error: bool,
    /// What the model was sent (capped, and redacted).
    pub content: String,
    /// Why the result is an error (absent when it is not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorKind>,
    /// How long the call ran.
    #[serde(default)]
    pub duration_ms: u64,
    /// Whether `content` was cut to the output cap.
    #[serde(default)]
    pub truncated: bool,
    /// Size of the full output in bytes, before any capping.
    #[serde(default)]
    pub bytes: u64,
    /// Where the full output was saved when it was capped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_output: Option<String>,
    /// The variables whose values were taken out of the content, each replaced by
    /// `[REDACTED:NAME]` (names only; absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1), extend("uniqueItems" = true))]
    pub redacted: Vec<String>,
    /// Lines of `content` that differ between two runs of the same call with the same outcome
    /// (`bash`'s `duration:` line): the tool says so as data, so the loop guard leaves them out
    /// without parsing what the model reads. Not recorded: the transcript keeps what was sent.
    #[serde(skip)]
    pub volatile: Vec<String>,
    /// How the process a call ran exited (`bash`, a command tool), as data for whoever traces
    /// the run; the content says it to the model. Not recorded.
    #[serde(skip)]
    pub exit_code: Option<i32>,
    /// Images the result carries to a model that takes them (`read_file` of an image), recorded
    /// by path, type, size and digest; their bytes are kept beside the transcript.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub media: Vec<crate::attachment::Attachment>,
}

/// How an elided result's stub starts (so eliding it again changes nothing).
const ELIDED: &str = "[result elided";

impl ToolResult {
    /// Replaces the content with a one-line stub (to keep requests inside the context window;
    /// the transcript keeps the whole). Returns whether anything changed: a stub, or a result
    /// no longer than its stub would be, is left as it is.
    pub fn elide(&mut self) -> bool {
        if self.content.starts_with(ELIDED) {
            return false;
        }
        let mut stub = format!(
            "{ELIDED} to keep the conversation within the context window: {} returned {} \
             bytes",
            self.name, self.bytes
        );
        if let Some(path) = &self.full_output {
            stub.push_str(&format!(", saved whole in {path}"));
        }
        stub.push_str(". Call the tool again if you need it.]");
        if stub.len() >= self.content.len() && self.media.is_empty() {
            return false;
        }
        self.content = stub;
        // An image is the largest thing a result can carry: elided, it is not sent again.
        self.media.clear();
        true
    }

    /// A call's successful result, as the model reads it.
    pub fn ok(call: &ToolUse, content: String) -> ToolResult {
        ToolResult {
            is_error: false,
            error_kind: None,
            ..ToolResult::error(call, ErrorKind::Failed, content)
        }
    }

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
            redacted: Vec::new(),
            volatile: Vec::new(),
            exit_code: None,
            media: Vec::new(),
        }
    }
}

/// Why a model response ended, in neutral terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model ended its turn.
    EndTurn,
    /// The model asked for tool calls.
    ToolUse,
    /// The response reached the output token limit.
    MaxTokens,
    /// The model produced a stop sequence.
    StopSequence,
    /// Anthropic paused a long turn; sending the response back as is lets it continue.
    PauseTurn,
    /// The model declined to answer.
    Refusal,
    /// The request did not fit the model's context window.
    ContextWindowExceeded,
    /// Any reason the others do not name.
    #[serde(other)]
    Other,
}

/// Token counts. Each provider reports them differently; these are the common denominators.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Usage {
    /// Input tokens billed at the full rate (neither read from nor written to the prompt cache).
    pub input_tokens: u64,
    /// Output tokens, reasoning included.
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache (absent when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache (absent when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    /// How many of `output_tokens` the model spent reasoning (already counted in them; absent
    /// when 0).
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
    /// The user's turn with files attached (`--attach`): the images and PDFs, each wire in its
    /// own shape, before the text (an attached text file is part of the text).
    Attached {
        attachments: Vec<crate::attachment::Attachment>,
        text: String,
    },
    /// A model response, with the provider that produced it (its signatures are only valid there).
    Assistant {
        blocks: Vec<Block>,
        provider: String,
    },
    /// The results of every tool call of the previous assistant turn, in call order.
    ToolResults(Vec<ToolResult>),
}

/// Adds a user turn, joined (a blank line apart) to a user turn it follows: a resumed run whose
/// check had failed goes on with the check's output and the new prompt as one turn, as every
/// provider takes it.
pub fn push_user(history: &mut Vec<Message>, text: String) {
    match history.last_mut() {
        Some(Message::User(last) | Message::Attached { text: last, .. }) => {
            last.push_str("\n\n");
            last.push_str(&text);
        }
        _ => history.push(Message::User(text)),
    }
}

/// Adds a user turn with files attached: like [`push_user`], the text joined to a user turn it
/// follows, the files with it.
pub fn push_attached(
    history: &mut Vec<Message>,
    attachments: Vec<crate::attachment::Attachment>,
    text: String,
) {
    if attachments.is_empty() {
        return push_user(history, text);
    }
    let text = match history.last() {
        Some(Message::User(last)) => {
            let joined = format!("{last}\n\n{text}");
            history.pop();
            joined
        }
        _ => text,
    };
    history.push(Message::Attached { attachments, text });
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

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn unusable_call_ids_are_replaced_and_good_ones_kept() {
        let mut ids = CallIds::default();
        // The controls: ids real providers send pass unchanged.
        for good in [
            "toolu_01A09q90qw90lq917835lq9",
            "call_abc123",
            "functions.get_weather:0",
            &"x".repeat(MAX_CALL_ID),
        ] {
            assert_eq!(ids.accept(good.to_owned(), "p_"), good);
        }
        let hostile = [
            String::new(),
            "t\0x".to_owned(),
            "a\nb".to_owned(),
            "\u{1b}[2J".to_owned(),
            "tab\there".to_owned(),
            "with space".to_owned(),
            "ünï".to_owned(),
            "\u{202e}rtl".to_owned(),
            "x".repeat(MAX_CALL_ID + 1),
            "call_abc123".to_owned(),
        ];
        let got: Vec<String> = hostile.into_iter().map(|id| ids.accept(id, "p_")).collect();
        let want: Vec<String> = (1..=10).map(|n| format!("p_1_{n}")).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn generated_ids_differ_from_turn_to_turn_and_from_given_ids() {
        let turn = |earlier: usize| {
            let mut history = vec![Message::User("go".into())];
            for _ in 0..earlier {
                history.push(Message::Assistant {
                    blocks: vec![],
                    provider: "p".into(),
                });
                history.push(Message::ToolResults(vec![]));
            }
            CallIds::after(&history)
        };
        assert_eq!(turn(0).accept(String::new(), "p_"), "p_1_1");
        assert_eq!(turn(2).accept(String::new(), "p_"), "p_3_1");
        // A provider that sends what rounds would generate next does not get a duplicate.
        let mut ids = turn(0);
        assert_eq!(ids.accept("p_1_1".into(), "p_"), "p_1_1");
        assert_eq!(ids.accept(String::new(), "p_"), "p_1_2");
    }
}
