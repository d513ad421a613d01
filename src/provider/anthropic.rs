//! Anthropic Messages API, streamed (`POST {base}/v1/messages`, `"stream": true`).
//!
//! Blocks are keyed by their stream `index`; tool input arrives as `partial_json` fragments and is
//! parsed only at `content_block_stop`. A tool block still open when the response stops (the
//! `max_tokens` case) is reported as truncated and never executed. Thinking blocks and their
//! signatures are echoed back unchanged, and only to Anthropic. Extended thinking is asked for
//! with `--thinking-budget` (or `--reasoning-effort`, as a budget); setup has checked that
//! `max_tokens` exceeds the budget and that no temperature comes with it.

use std::collections::BTreeMap;

use async_trait::async_trait;
use reqwest::header::HeaderValue;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::endpoint::Endpoint;
use super::sse::SseEvent;
use super::{
    CacheTtl, EventStream, Mapper, Options, Progress, Provider, ProviderError, Request,
    StreamEvent, parse_json,
};
use crate::conversation::{Block, CallDefect, CallIds, Message, StopReason, ToolUse, Usage};

const NAME: &str = "anthropic";
/// Ids rounds gives calls whose own id is missing or unusable (see `CallIds`).
pub(crate) const GENERATED_ID_PREFIX: &str = "toolu_rounds_";
const API_VERSION: &str = "2023-06-01";
/// The beta that lets a breakpoint ask for the hour-long cache.
const EXTENDED_TTL_BETA: &str = "extended-cache-ttl-2025-04-11";
/// Anthropic requires `max_tokens`; this is used when the user did not set one.
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 8192;

pub(crate) struct Anthropic {
    endpoint: Endpoint,
}

impl Anthropic {
    pub(crate) fn new(endpoint: Endpoint) -> Anthropic {
        Anthropic { endpoint }
    }
}

#[async_trait]
impl Provider for Anthropic {
    fn name(&self) -> &str {
        self.endpoint.name
    }

    fn model(&self) -> &str {
        &self.endpoint.model
    }

    async fn stream(&self, request: &Request<'_>) -> Result<EventStream, ProviderError> {
        let e = &self.endpoint;
        let wire = build_request(&e.model, request, &e.options);
        let mut headers = e.key_header("x-api-key")?;
        headers.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        if request.cache.is_some_and(|c| c.ttl == CacheTtl::OneHour) {
            headers.insert(
                "anthropic-beta",
                HeaderValue::from_static(EXTENDED_TTL_BETA),
            );
        }
        e.send(headers, &wire, AnthropicMapper::after(request.messages))
            .await
    }
}

// ---- request ----

#[derive(Debug, Serialize)]
pub(crate) struct WireRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    stream: bool,
    #[serde(skip_serializing_if = "System::is_empty")]
    system: System<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<ToolChoice>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    messages: Vec<WireMessage>,
}

/// The system prompt: a string, or one text block when it carries a cache breakpoint.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum System<'a> {
    Text(&'a str),
    Blocks([Value; 1]),
}

impl System<'_> {
    fn is_empty(&self) -> bool {
        matches!(self, System::Text(""))
    }
}

#[derive(Debug, Serialize)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<Value>,
}

#[derive(Debug, Serialize)]
struct ToolChoice {
    #[serde(rename = "type")]
    kind: &'static str,
    /// `--parallel-tool-calls off` (only with `auto`; `none` has no such field).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    disable_parallel_tool_use: bool,
}

#[derive(Debug, Serialize)]
struct WireMessage {
    role: &'static str,
    content: WireContent,
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
enum WireContent {
    Text(String),
    Blocks(Vec<Value>),
}

/// The request body for `request`, as Anthropic expects it. With thinking on, `tool_choice` is
/// still only ever `auto` or `none`, the two that Anthropic allows with thinking.
///
/// With caching, four breakpoints at most (the API's limit): the last tool definition and the
/// system prompt (the prefix every round shares), the newest message's last block (this
/// request's whole prompt, read back by the next round), and the last block of the previous
/// request's newest message (what the previous round wrote, in case this round added more than
/// the 20 blocks the API looks back from a breakpoint).
pub(crate) fn build_request<'a>(
    model: &'a str,
    request: &Request<'a>,
    options: &Options,
) -> WireRequest<'a> {
    let breakpoint = request.cache.map(|c| cache_control(c.ttl));
    let mut tools: Vec<WireTool> = request
        .tools
        .iter()
        .map(|t| WireTool {
            name: &t.name,
            description: &t.description,
            input_schema: &t.input_schema,
            cache_control: None,
        })
        .collect();
    if let Some(last) = tools.last_mut() {
        last.cache_control = breakpoint.clone();
    }
    let system = match &breakpoint {
        Some(cc) if !request.system.is_empty() => System::Blocks([serde_json::json!({
            "type": "text", "text": request.system, "cache_control": cc,
        })]),
        _ => System::Text(request.system),
    };
    let mut messages = wire_messages(request.messages);
    if let Some(cc) = &breakpoint {
        let n = messages.len();
        for i in [n.checked_sub(1), n.checked_sub(3)].into_iter().flatten() {
            mark(&mut messages[i], cc);
        }
    }
    let kind = match request.tool_choice {
        super::ToolChoice::Auto => "auto",
        super::ToolChoice::None => "none",
    };
    let tool_choice = (!tools.is_empty()).then_some(ToolChoice {
        kind,
        disable_parallel_tool_use: kind == "auto"
            && options.parallel_tool_calls == super::Parallel::Off,
    });
    WireRequest {
        model,
        max_tokens: options.anthropic_max_tokens(request.max_tokens),
        stream: true,
        system,
        tools,
        tool_choice,
        thinking: options
            .anthropic_thinking()
            .map(|budget| serde_json::json!({"type": "enabled", "budget_tokens": budget})),
        temperature: options.temperature,
        messages,
    }
}

/// `{"type":"ephemeral"}`, with the documented `ttl` field for the hour-long cache.
fn cache_control(ttl: CacheTtl) -> Value {
    match ttl {
        CacheTtl::FiveMinutes => serde_json::json!({"type": "ephemeral"}),
        CacheTtl::OneHour => serde_json::json!({"type": "ephemeral", "ttl": "1h"}),
    }
}

/// Puts a cache breakpoint on a message's last block. Thinking blocks cannot carry one; a
/// message ending in one (never a user message) is left as it is.
fn mark(message: &mut WireMessage, cc: &Value) {
    let content = std::mem::replace(&mut message.content, WireContent::Blocks(vec![]));
    let mut blocks = into_blocks(content);
    if let Some(Value::Object(last)) = blocks.last_mut() {
        let kind = last.get("type").and_then(Value::as_str).unwrap_or("");
        if !matches!(kind, "thinking" | "redacted_thinking") {
            last.insert("cache_control".into(), cc.clone());
        }
    }
    message.content = WireContent::Blocks(blocks);
}

fn wire_messages(messages: &[Message]) -> Vec<WireMessage> {
    let mut out: Vec<WireMessage> = Vec::new();
    for message in messages {
        let (role, content) = match message {
            Message::User(text) => ("user", WireContent::Text(text.clone())),
            Message::Assistant { blocks, provider } => {
                let blocks = assistant_blocks(blocks, provider == NAME);
                if blocks.is_empty() {
                    continue;
                }
                ("assistant", WireContent::Blocks(blocks))
            }
            Message::ToolResults(results) => {
                let blocks = results
                    .iter()
                    .map(|r| {
                        let mut b = serde_json::json!({
                            "type": "tool_result",
                            "tool_use_id": r.tool_use_id,
                            "content": r.content,
                        });
                        if r.is_error {
                            b["is_error"] = Value::Bool(true);
                        }
                        b
                    })
                    .collect();
                ("user", WireContent::Blocks(blocks))
            }
        };
        // The API wants alternating roles: merge a turn into the previous one of the same role
        // (tool results first, then the new prompt text, as Anthropic requires).
        match out.last_mut() {
            Some(prev) if prev.role == role => {
                let mut merged = into_blocks(std::mem::replace(
                    &mut prev.content,
                    WireContent::Blocks(vec![]),
                ));
                merged.extend(into_blocks(content));
                prev.content = WireContent::Blocks(merged);
            }
            _ => out.push(WireMessage { role, content }),
        }
    }
    out
}

fn into_blocks(content: WireContent) -> Vec<Value> {
    match content {
        WireContent::Text(text) => vec![serde_json::json!({"type": "text", "text": text})],
        WireContent::Blocks(blocks) => blocks,
    }
}

/// An assistant turn's blocks in their original order. Thinking is only valid where it was
/// signed, so it is dropped when the turn came from another provider; empty text is rejected by
/// the API and dropped.
fn assistant_blocks(blocks: &[Block], ours: bool) -> Vec<Value> {
    blocks
        .iter()
        .filter_map(|block| match block {
            Block::Text { text, .. } if text.is_empty() => None,
            Block::Text { text, .. } => Some(serde_json::json!({"type": "text", "text": text})),
            Block::Thinking {
                text,
                signature: Some(signature),
            } if ours => Some(
                serde_json::json!({"type": "thinking", "thinking": text, "signature": signature}),
            ),
            Block::Thinking { .. } => None,
            Block::RedactedThinking { data } if ours => {
                Some(serde_json::json!({"type": "redacted_thinking", "data": data}))
            }
            Block::RedactedThinking { .. } | Block::Reasoning { .. } => None,
            Block::ToolUse(call) => Some(serde_json::json!({
                "type": "tool_use",
                "id": call.id,
                "name": call.name,
                "input": call.input,
            })),
        })
        .collect()
}

// ---- stream ----

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: ContentBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: ContentDelta,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        delta: MessageDeltaBody,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: ApiError,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Deserialize)]
struct StartMessage {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
    ToolUse {
        /// Missing or unusable ids are replaced (`CallIds`).
        #[serde(default)]
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    #[serde(other)]
    Other,
}

impl ContentDelta {
    /// What the delta adds to its block.
    fn content(&self) -> &str {
        match self {
            ContentDelta::TextDelta { text } => text,
            ContentDelta::InputJsonDelta { partial_json } => partial_json,
            ContentDelta::ThinkingDelta { thinking } => thinking,
            ContentDelta::SignatureDelta { signature } => signature,
            ContentDelta::Other => "",
        }
    }
}

#[derive(Debug, Deserialize)]
struct MessageDeltaBody {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct ApiError {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
}

/// A block being assembled from deltas.
#[derive(Debug)]
enum Partial {
    Text(String),
    Thinking {
        text: String,
        signature: String,
    },
    Redacted(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
        start: Value,
    },
    /// A block type we do not model (server tool results and the like): skipped.
    Ignored,
}

impl Partial {
    /// Bytes of content the block holds so far (a tool's starting input aside).
    fn size(&self) -> usize {
        match self {
            Partial::Text(text) | Partial::Redacted(text) => text.len(),
            Partial::Thinking { text, signature } => text.len() + signature.len(),
            Partial::ToolUse { id, name, json, .. } => id.len() + name.len() + json.len(),
            Partial::Ignored => 0,
        }
    }
}

/// Anthropic stream events → neutral events.
#[derive(Debug, Default)]
pub(crate) struct AnthropicMapper {
    open: BTreeMap<usize, Partial>,
    usage: Usage,
    stop: Option<StopReason>,
    done: bool,
    ids: CallIds,
    progress: Progress,
}

impl Mapper for AnthropicMapper {
    fn provider(&self) -> &str {
        NAME
    }

    fn map(&mut self, event: SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        let event: Event = parse_json(NAME, &event.data)?;
        match event {
            Event::MessageStart { message } => {
                if let Some(u) = message.usage {
                    self.merge_usage(&u);
                    out.push(StreamEvent::Usage(self.usage));
                }
            }
            Event::ContentBlockStart {
                index,
                content_block,
            } => self.start(index, content_block, out),
            Event::ContentBlockDelta { index, delta } => {
                let Some(partial) = self.open.get_mut(&index) else {
                    return Err(self.protocol(format!("delta for unknown block {index}")));
                };
                self.progress.text(delta.content());
                match (partial, delta) {
                    (Partial::Text(text), ContentDelta::TextDelta { text: d }) => {
                        text.push_str(&d);
                        out.push(StreamEvent::TextDelta(d));
                    }
                    (Partial::Thinking { text, .. }, ContentDelta::ThinkingDelta { thinking }) => {
                        text.push_str(&thinking);
                        if !thinking.is_empty() {
                            out.push(StreamEvent::ThinkingDelta(thinking));
                        }
                    }
                    // The signature arrives whole, just before the block stops: replace.
                    (
                        Partial::Thinking { signature, .. },
                        ContentDelta::SignatureDelta { signature: s },
                    ) => {
                        *signature = s;
                    }
                    (
                        Partial::ToolUse { json, .. },
                        ContentDelta::InputJsonDelta { partial_json },
                    ) => {
                        json.push_str(&partial_json);
                    }
                    _ => {}
                }
            }
            Event::ContentBlockStop { index } => {
                if let Some(block) = self.open.remove(&index).and_then(finish_block) {
                    out.push(StreamEvent::Block(block));
                }
            }
            Event::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.stop_reason {
                    self.stop = Some(stop_reason(&reason));
                }
                if let Some(u) = usage {
                    self.merge_usage(&u);
                    out.push(StreamEvent::Usage(self.usage));
                }
            }
            Event::MessageStop => self.end(out)?,
            Event::Ping | Event::Unknown => {}
            Event::Error { error } => {
                return Err(ProviderError::Stream {
                    provider: NAME.into(),
                    message: format!("{} ({})", error.message, error.kind),
                    kind: super::Failure::of_stream(&error.kind),
                });
            }
        }
        Ok(())
    }

    fn finish(
        &mut self,
        tail: Option<SseEvent>,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        // SDK fixtures end without the blank line after `message_stop`; a stop reason from
        // `message_delta` is what makes the response complete.
        let tail_is_stop = tail.is_some_and(|t| t.event == "message_stop");
        if self.stop.is_some() || tail_is_stop {
            return self.end(out);
        }
        Err(ProviderError::Truncated {
            provider: NAME.into(),
            expected: "message_stop",
        })
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn progress(&self) -> Progress {
        self.progress
    }
}

impl AnthropicMapper {
    /// The mapper of the response that follows `history`.
    pub(crate) fn after(history: &[Message]) -> AnthropicMapper {
        AnthropicMapper {
            ids: CallIds::after(history),
            ..AnthropicMapper::default()
        }
    }

    fn merge_usage(&mut self, u: &WireUsage) {
        // `message_delta` counts are cumulative: each present field replaces the earlier value.
        if let Some(n) = u.input_tokens {
            self.usage.input_tokens = n;
        }
        if let Some(n) = u.output_tokens {
            self.usage.output_tokens = n;
        }
        if let Some(n) = u.cache_creation_input_tokens {
            self.usage.cache_write_tokens = n;
        }
        if let Some(n) = u.cache_read_input_tokens {
            self.usage.cache_read_tokens = n;
        }
    }

    fn end(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        let stop = self.stop.unwrap_or(StopReason::EndTurn);
        // Blocks never stopped: text is kept; a tool call's input is incomplete and must not run.
        for (_, partial) in std::mem::take(&mut self.open) {
            match partial {
                Partial::ToolUse { id, name, json, .. } => {
                    let mut call = ToolUse::from_raw(id, name, "");
                    call.raw_input = Some(json);
                    call.defect = Some(CallDefect::Truncated);
                    out.push(StreamEvent::Block(Block::ToolUse(call)));
                }
                other => out.extend(finish_block(other).map(StreamEvent::Block)),
            }
        }
        out.push(StreamEvent::Done(stop));
        self.done = true;
        Ok(())
    }

    /// A block starts; whatever it already holds is content.
    fn start(&mut self, index: usize, block: ContentBlock, out: &mut Vec<StreamEvent>) {
        let partial = match block {
            ContentBlock::Text { text } => {
                if !text.is_empty() {
                    out.push(StreamEvent::TextDelta(text.clone()));
                }
                Partial::Text(text)
            }
            ContentBlock::Thinking {
                thinking,
                signature,
            } => Partial::Thinking {
                text: thinking,
                signature,
            },
            ContentBlock::RedactedThinking { data } => Partial::Redacted(data),
            ContentBlock::ToolUse { id, name, input } => {
                self.progress.json(&input);
                Partial::ToolUse {
                    id: self.ids.accept(id, GENERATED_ID_PREFIX),
                    name,
                    json: String::new(),
                    start: input,
                }
            }
            ContentBlock::Other => Partial::Ignored,
        };
        self.progress.block();
        self.progress.bytes(partial.size());
        self.open.insert(index, partial);
    }

    fn protocol(&self, message: String) -> ProviderError {
        ProviderError::Protocol {
            provider: NAME.into(),
            message,
        }
    }
}

fn finish_block(partial: Partial) -> Option<Block> {
    Some(match partial {
        Partial::Text(text) => Block::text(text),
        Partial::Thinking { text, signature } => Block::Thinking {
            text,
            signature: (!signature.is_empty()).then_some(signature),
        },
        Partial::Redacted(data) => Block::RedactedThinking { data },
        Partial::ToolUse {
            id,
            name,
            json,
            start,
        } => {
            // Input normally streams as fragments; a block that arrived complete carries it in
            // `content_block_start` instead.
            if json.trim().is_empty() && start.as_object().is_some_and(|o| !o.is_empty()) {
                let mut call = ToolUse::from_raw(id, name, "");
                call.input = start;
                Block::ToolUse(call)
            } else {
                Block::ToolUse(ToolUse::from_raw(id, name, &json))
            }
        }
        Partial::Ignored => return None,
    })
}

fn stop_reason(s: &str) -> StopReason {
    match s {
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        "pause_turn" => StopReason::PauseTurn,
        "refusal" => StopReason::Refusal,
        "model_context_window_exceeded" => StopReason::ContextWindowExceeded,
        _ => StopReason::Other,
    }
}

#[cfg(test)]
mod tests;
