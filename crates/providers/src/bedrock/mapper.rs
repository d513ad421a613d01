//! Converse stream events to neutral events. A response is `messageStart`, blocks (a
//! `contentBlockStart` only for tool use: text and reasoning blocks open with their first
//! delta), `contentBlockStop`s, `messageStop` with the stop reason, then `metadata` with the
//! usage: the stream is complete at `metadata`, or at its end once `messageStop` was seen.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::eventstream::EXCEPTION;
use crate::conversation::{Block, CallDefect, CallIds, Message, StopReason, ToolUse, Usage};
use crate::sse::SseEvent;
use crate::{Failure, Mapper, Progress, ProviderError, StreamEvent, parse_json};

/// Ids rounds gives calls whose own id is missing or unusable (see `CallIds`).
pub(crate) const GENERATED_ID_PREFIX: &str = "tooluse_rounds_";

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockStart {
    content_block_index: usize,
    #[serde(default)]
    start: Start,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Start {
    #[serde(default)]
    tool_use: Option<ToolUseStart>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolUseStart {
    #[serde(default)]
    tool_use_id: String,
    name: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockDelta {
    content_block_index: usize,
    delta: Delta,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Delta {
    Text(String),
    ToolUse {
        input: String,
    },
    ReasoningContent(ReasoningDelta),
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
enum ReasoningDelta {
    Text(String),
    Signature(String),
    /// Base64, kept as it came.
    RedactedContent(String),
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockStop {
    content_block_index: usize,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageStop {
    stop_reason: String,
}

#[derive(Debug, Deserialize)]
struct Metadata {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: u64,
    #[serde(default)]
    cache_write_input_tokens: u64,
}

#[derive(Debug, Default, Deserialize)]
struct ExceptionBody {
    #[serde(default)]
    message: String,
}

/// A block being assembled from deltas.
#[derive(Debug)]
enum Partial {
    Text(String),
    Reasoning {
        text: String,
        signature: String,
    },
    Redacted(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
}

/// Converse stream events → neutral events.
#[derive(Debug)]
pub(crate) struct BedrockMapper {
    provider: String,
    open: BTreeMap<usize, Partial>,
    stop: Option<StopReason>,
    done: bool,
    ids: CallIds,
    progress: Progress,
}

impl BedrockMapper {
    /// The mapper of the response that follows `history`.
    pub(crate) fn after(provider: &str, history: &[Message]) -> BedrockMapper {
        BedrockMapper {
            provider: provider.to_owned(),
            open: BTreeMap::new(),
            stop: None,
            done: false,
            ids: CallIds::after(history),
            progress: Progress::default(),
        }
    }

    fn parse<T: serde::de::DeserializeOwned>(&self, data: &str) -> Result<T, ProviderError> {
        parse_json(&self.provider, data)
    }

    fn delta(&mut self, d: BlockDelta, out: &mut Vec<StreamEvent>) {
        let index = d.content_block_index;
        match d.delta {
            Delta::Text(text) => {
                self.progress.text(&text);
                if let Partial::Text(t) = self.open_or(index, || Partial::Text(String::new())) {
                    t.push_str(&text);
                }
                out.push(StreamEvent::TextDelta(text));
            }
            Delta::ToolUse { input } => {
                self.progress.text(&input);
                if let Some(Partial::ToolUse { json, .. }) = self.open.get_mut(&index) {
                    json.push_str(&input);
                }
            }
            Delta::ReasoningContent(r) => self.reasoning(index, r, out),
            Delta::Other => {}
        }
    }

    fn reasoning(&mut self, index: usize, delta: ReasoningDelta, out: &mut Vec<StreamEvent>) {
        let empty = || Partial::Reasoning {
            text: String::new(),
            signature: String::new(),
        };
        match delta {
            ReasoningDelta::Text(piece) => {
                self.progress.text(&piece);
                if let Partial::Reasoning { text, .. } = self.open_or(index, empty) {
                    text.push_str(&piece);
                }
                if !piece.is_empty() {
                    out.push(StreamEvent::ThinkingDelta(piece));
                }
            }
            ReasoningDelta::Signature(s) => {
                self.progress.text(&s);
                if let Partial::Reasoning { signature, .. } = self.open_or(index, empty) {
                    signature.push_str(&s);
                }
            }
            ReasoningDelta::RedactedContent(data) => {
                self.progress.text(&data);
                if let Partial::Redacted(d) =
                    self.open_or(index, || Partial::Redacted(String::new()))
                {
                    d.push_str(&data);
                }
            }
            ReasoningDelta::Other => {}
        }
    }

    /// The open block at `index`, opened as `new()` if it is not: text and reasoning blocks
    /// start with their first delta.
    fn open_or(&mut self, index: usize, new: impl FnOnce() -> Partial) -> &mut Partial {
        let progress = &mut self.progress;
        self.open.entry(index).or_insert_with(|| {
            progress.block();
            new()
        })
    }

    fn exception(&self, kind: &str, data: &str) -> ProviderError {
        let body: ExceptionBody = serde_json::from_str(data).unwrap_or_default();
        ProviderError::Stream {
            provider: self.provider.clone(),
            message: format!("{} ({kind})", body.message),
            kind: failure_of(kind, &body.message),
        }
    }

    fn end(&mut self, out: &mut Vec<StreamEvent>) {
        let stop = self.stop.unwrap_or(StopReason::EndTurn);
        // Blocks never stopped: text is kept; a tool call's input is incomplete and must not run.
        for (_, partial) in std::mem::take(&mut self.open) {
            match partial {
                Partial::ToolUse { id, name, json } => {
                    let mut call = ToolUse::from_raw(id, name, "");
                    call.raw_input = Some(json);
                    call.defect = Some(CallDefect::Truncated);
                    out.push(StreamEvent::Block(Block::ToolUse(call)));
                }
                other => out.push(StreamEvent::Block(finish_block(other))),
            }
        }
        out.push(StreamEvent::Done(stop));
        self.done = true;
    }
}

impl Mapper for BedrockMapper {
    fn provider(&self) -> &str {
        &self.provider
    }

    fn map(&mut self, event: SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        if let Some(kind) = event.event.strip_prefix(EXCEPTION) {
            return Err(self.exception(kind, &event.data));
        }
        match event.event.as_str() {
            "contentBlockStart" => {
                let start: BlockStart = self.parse(&event.data)?;
                if let Some(tool) = start.start.tool_use {
                    self.progress.block();
                    self.progress
                        .bytes(tool.tool_use_id.len() + tool.name.len());
                    let id = self.ids.accept(tool.tool_use_id, GENERATED_ID_PREFIX);
                    self.open.insert(
                        start.content_block_index,
                        Partial::ToolUse {
                            id,
                            name: tool.name,
                            json: String::new(),
                        },
                    );
                }
            }
            "contentBlockDelta" => {
                let delta: BlockDelta = self.parse(&event.data)?;
                self.delta(delta, out);
            }
            "contentBlockStop" => {
                let stop: BlockStop = self.parse(&event.data)?;
                if let Some(partial) = self.open.remove(&stop.content_block_index) {
                    out.push(StreamEvent::Block(finish_block(partial)));
                }
            }
            "messageStop" => {
                let stop: MessageStop = self.parse(&event.data)?;
                self.stop = Some(stop_reason(&stop.stop_reason));
            }
            "metadata" => {
                let meta: Metadata = self.parse(&event.data)?;
                if let Some(u) = meta.usage {
                    out.push(StreamEvent::Usage(Usage {
                        input_tokens: u.input_tokens,
                        output_tokens: u.output_tokens,
                        cache_read_tokens: u.cache_read_input_tokens,
                        cache_write_tokens: u.cache_write_input_tokens,
                        ..Usage::default()
                    }));
                }
                if self.stop.is_some() {
                    self.end(out);
                }
            }
            // messageStart (the role) and anything newer than this code.
            _ => {}
        }
        Ok(())
    }

    fn finish(
        &mut self,
        _tail: Option<SseEvent>,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        // The usage is the last event, but a stream that stopped is a whole answer without it.
        if self.stop.is_some() {
            self.end(out);
            return Ok(());
        }
        Err(ProviderError::Truncated {
            provider: self.provider.clone(),
            expected: "messageStop",
        })
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn progress(&self) -> Progress {
        self.progress
    }
}

fn finish_block(partial: Partial) -> Block {
    match partial {
        Partial::Text(text) => Block::text(text),
        Partial::Reasoning { text, signature } => Block::Thinking {
            text,
            signature: (!signature.is_empty()).then_some(signature),
        },
        Partial::Redacted(data) => Block::RedactedThinking { data },
        Partial::ToolUse { id, name, json } => {
            // A call without arguments streams no input at all.
            let json = if json.trim().is_empty() { "{}" } else { &json };
            Block::ToolUse(ToolUse::from_raw(id, name, json))
        }
    }
}

fn stop_reason(s: &str) -> StopReason {
    match s {
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        "guardrail_intervened" | "content_filtered" => StopReason::Refusal,
        "model_context_window_exceeded" => StopReason::ContextWindowExceeded,
        _ => StopReason::Other,
    }
}

/// The kind of a Bedrock error, by its type: an exception event's `:exception-type`
/// (`throttlingException`) or an HTTP error's `x-amzn-ErrorType` (`ThrottlingException:…`).
/// `None` for a type this does not know (the HTTP status decides then).
pub(crate) fn kind_of(kind: &str, message: &str) -> Option<Failure> {
    let kind = kind.split(':').next().unwrap_or("").to_ascii_lowercase();
    Some(match kind.as_str() {
        "throttlingexception" => Failure::RateLimited,
        "servicequotaexceededexception" => Failure::Quota,
        "serviceunavailableexception" | "modelnotreadyexception" => Failure::Overloaded,
        "internalserverexception"
        | "modelstreamerrorexception"
        | "modeltimeoutexception"
        | "modelerrorexception" => Failure::ServerError,
        "validationexception" if too_long(message) => Failure::ContextTooLong,
        "validationexception" => Failure::InvalidRequest,
        "accessdeniedexception"
        | "unrecognizedclientexception"
        | "invalidsignatureexception"
        | "expiredtokenexception"
        | "incompletesignatureexception"
        | "missingauthenticationtokenexception" => Failure::Auth,
        "resourcenotfoundexception" => Failure::NotFound,
        _ => return None,
    })
}

/// An exception in a stream: a server error unless its type says otherwise.
fn failure_of(kind: &str, message: &str) -> Failure {
    kind_of(kind, message).unwrap_or(Failure::ServerError)
}

/// Bedrock's words (and its models') for an input longer than the context window.
fn too_long(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    [
        "too long",
        "too many input tokens",
        "context limit",
        "context window",
        "context length",
        "maximum number of tokens",
    ]
    .iter()
    .any(|p| m.contains(p))
}
