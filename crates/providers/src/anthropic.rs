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
use serde::Deserialize;
use serde_json::Value;

use super::endpoint::Endpoint;
use super::sse::SseEvent;
use super::{
    CacheTtl, EventStream, Mapper, Progress, Provider, ProviderError, Request, StreamEvent,
    parse_json,
};
use crate::conversation::{Block, CallDefect, CallIds, Message, StopReason, ToolUse, Usage};

const NAME: &str = "anthropic";
/// Ids rounds gives calls whose own id is missing or unusable (see `CallIds`).
pub(crate) const GENERATED_ID_PREFIX: &str = "toolu_rounds_";
const API_VERSION: &str = "2023-06-01";
/// The beta that lets a breakpoint ask for the hour-long cache.
const EXTENDED_TTL_BETA: &str = "extended-cache-ttl-2025-04-11";

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

mod request;
pub(crate) use request::{DEFAULT_MAX_TOKENS, Host, build_body, build_request};

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
    #[serde(default)]
    model: Option<String>,
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
                if let Some(model) = message.model.filter(|m| !m.is_empty()) {
                    out.push(StreamEvent::Model(model));
                }
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
                    kind: crate::failure::of_stream(&error.kind),
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
mod request_tests;
#[cfg(test)]
mod tests;
