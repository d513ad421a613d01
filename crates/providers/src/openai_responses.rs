//! OpenAI Responses API, streamed (`POST {base}/responses`, `"stream": true`).
//!
//! Output arrives as items (`message`, `function_call`, `reasoning`): each is opened by
//! `response.output_item.added`, filled by deltas keyed by `output_index`, and closed by
//! `response.output_item.done`, which carries the whole item. A block is emitted when its item is
//! done, so a call can run while the model goes on. The response ends with `response.completed`,
//! `response.incomplete` (cut short by the token cap or a content filter) or `response.failed`;
//! a stream that stops before one of them is truncated, never a success.
//!
//! Nothing is kept server-side (`store: false`), so every request carries the whole
//! conversation. Reasoning items come back encrypted (`include: ["reasoning.encrypted_content"]`),
//! are kept as [`Block::Reasoning`], and go back unchanged, in place, only to OpenAI.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde::Deserialize;

use super::endpoint::Endpoint;
use super::sse::SseEvent;
use super::{
    EventStream, Mapper, Progress, Provider, ProviderError, Request, StreamEvent, parse_json,
};
use crate::conversation::{Block, CallDefect, StopReason, ToolUse, Usage};

mod request;
pub(crate) use request::build_request;

pub(crate) struct OpenAiResponses {
    endpoint: Endpoint,
}

impl OpenAiResponses {
    pub(crate) fn new(endpoint: Endpoint) -> OpenAiResponses {
        OpenAiResponses { endpoint }
    }
}

#[async_trait]
impl Provider for OpenAiResponses {
    fn name(&self) -> &str {
        self.endpoint.name
    }

    fn model(&self) -> &str {
        &self.endpoint.model
    }

    fn structured_output(&self) -> bool {
        true
    }

    async fn stream(&self, request: &Request<'_>) -> Result<EventStream, ProviderError> {
        let e = &self.endpoint;
        let wire = build_request(&e.model, e.name, e.flavor, request, &e.options);
        e.send(e.bearer()?, &wire, ResponsesMapper::new(e.name))
            .await
    }
}

// ---- stream ----

#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
enum Event {
    #[serde(rename = "response.output_item.added")]
    ItemAdded { output_index: u64, item: Item },
    #[serde(rename = "response.output_item.done")]
    ItemDone { output_index: u64, item: Item },
    #[serde(rename = "response.output_text.delta")]
    TextDelta { output_index: u64, delta: String },
    #[serde(rename = "response.refusal.delta")]
    RefusalDelta { output_index: u64, delta: String },
    #[serde(rename = "response.function_call_arguments.delta")]
    ArgumentsDelta { output_index: u64, delta: String },
    #[serde(rename = "response.reasoning_summary_text.delta")]
    SummaryDelta {
        output_index: u64,
        #[serde(default)]
        summary_index: u64,
        delta: String,
    },
    /// Raw reasoning text: compatible servers stream their models' thinking this way.
    #[serde(rename = "response.reasoning_text.delta")]
    ReasoningTextDelta { delta: String },
    /// The response starts: it names the model that answers.
    #[serde(rename = "response.created")]
    Created { response: WireResponse },
    #[serde(rename = "response.completed")]
    Completed { response: WireResponse },
    #[serde(rename = "response.incomplete")]
    Incomplete { response: WireResponse },
    #[serde(rename = "response.failed")]
    Failed { response: WireResponse },
    #[serde(rename = "error")]
    Error {
        #[serde(default)]
        code: Option<String>,
        #[serde(default)]
        message: String,
    },
    /// `response.in_progress`, the `.done` and `part` events, and whatever is added later:
    /// nothing we need.
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Item {
    Message {
        #[serde(default)]
        content: Vec<Content>,
    },
    FunctionCall {
        #[serde(default)]
        call_id: String,
        #[serde(default)]
        name: String,
        #[serde(default)]
        arguments: String,
    },
    Reasoning {
        #[serde(default)]
        id: String,
        #[serde(default)]
        summary: Vec<SummaryText>,
        #[serde(default)]
        encrypted_content: Option<String>,
    },
    /// Built-in tool calls and other item types we do not offer.
    #[serde(other)]
    Other,
}

impl Item {
    /// Bytes of content the item carries.
    fn size(&self) -> usize {
        match self {
            Item::Message { content } => content.iter().map(Content::size).sum(),
            Item::FunctionCall {
                call_id,
                name,
                arguments,
            } => call_id.len() + name.len() + arguments.len(),
            Item::Reasoning {
                id,
                summary,
                encrypted_content,
            } => {
                let summary: usize = summary.iter().map(|s| s.text.len()).sum();
                id.len() + summary + encrypted_content.as_ref().map_or(0, String::len)
            }
            Item::Other => 0,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Content {
    OutputText {
        #[serde(default)]
        text: String,
    },
    Refusal {
        #[serde(default)]
        refusal: String,
    },
    #[serde(other)]
    Other,
}

impl Content {
    fn size(&self) -> usize {
        match self {
            Content::OutputText { text } => text.len(),
            Content::Refusal { refusal } => refusal.len(),
            Content::Other => 0,
        }
    }
}

#[derive(Debug, Deserialize)]
struct SummaryText {
    #[serde(default)]
    text: String,
}

#[derive(Debug, Default, Deserialize)]
struct WireResponse {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    incomplete_details: Option<IncompleteDetails>,
    #[serde(default)]
    error: Option<WireError>,
}

#[derive(Debug, Deserialize)]
struct IncompleteDetails {
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireError {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    message: String,
}

#[derive(Debug, Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Debug, Deserialize)]
struct InputDetails {
    #[serde(default)]
    cached_tokens: u64,
}

#[derive(Debug, Deserialize)]
struct OutputDetails {
    #[serde(default)]
    reasoning_tokens: u64,
}

impl From<WireUsage> for Usage {
    /// `input_tokens` counts cached ones too and `output_tokens` counts reasoning: split the
    /// first, keep the second whole (reasoning is billed as output) with its share noted.
    fn from(u: WireUsage) -> Usage {
        let cached = u.input_tokens_details.map_or(0, |d| d.cached_tokens);
        Usage {
            input_tokens: u.input_tokens.saturating_sub(cached),
            output_tokens: u.output_tokens,
            cache_read_tokens: cached,
            cache_write_tokens: 0,
            reasoning_tokens: u.output_tokens_details.map_or(0, |d| d.reasoning_tokens),
        }
    }
}

/// An item between its `added` and its `done`.
#[derive(Debug)]
enum Partial {
    Text(String),
    Call {
        call_id: String,
        name: String,
        args: String,
    },
    Reasoning(Vec<String>),
    Other,
}

impl Partial {
    /// Bytes of content streamed into the item so far.
    fn size(&self) -> usize {
        match self {
            Partial::Text(text) => text.len(),
            Partial::Call {
                call_id,
                name,
                args,
            } => call_id.len() + name.len() + args.len(),
            Partial::Reasoning(parts) => parts.iter().map(String::len).sum(),
            Partial::Other => 0,
        }
    }
}

/// Responses stream events → neutral events.
#[derive(Debug)]
pub(crate) struct ResponsesMapper {
    provider: &'static str,
    open: BTreeMap<u64, Partial>,
    /// A function call was emitted: the response asks for tools.
    called: bool,
    generated_ids: u32,
    done: bool,
    progress: Progress,
}

impl ResponsesMapper {
    pub(crate) fn new(provider: &'static str) -> ResponsesMapper {
        ResponsesMapper {
            provider,
            open: BTreeMap::new(),
            called: false,
            generated_ids: 0,
            done: false,
            progress: Progress::default(),
        }
    }

    fn stream_error(&self, message: String) -> ProviderError {
        ProviderError::Stream {
            provider: self.provider.into(),
            message,
            kind: super::Failure::ServerError,
        }
    }

    fn call(&mut self, call_id: String, name: String, args: &str) -> ToolUse {
        self.called = true;
        let id = if call_id.is_empty() {
            // A compatible server may leave it out; results must still name something unique.
            self.generated_ids += 1;
            format!("call_rounds_{}", self.generated_ids)
        } else {
            call_id
        };
        ToolUse::from_raw(id, name, args).keep_raw(args)
    }

    fn added(&mut self, index: u64, item: Item) {
        let partial = match item {
            Item::Message { .. } => Partial::Text(String::new()),
            Item::FunctionCall {
                call_id,
                name,
                arguments,
            } => Partial::Call {
                call_id,
                name,
                args: arguments,
            },
            Item::Reasoning { .. } => Partial::Reasoning(Vec::new()),
            Item::Other => Partial::Other,
        };
        self.progress.block();
        self.progress.bytes(partial.size());
        self.open.insert(index, partial);
    }

    /// Counts what an item's `done` adds to what its deltas brought: only the difference is new
    /// content, and an item never added is a new block.
    fn count_done(&mut self, partial: Option<&Partial>, item: &Item) {
        if partial.is_none() {
            self.progress.block();
        }
        let streamed = partial.map_or(0, Partial::size);
        self.progress.bytes(item.size().saturating_sub(streamed));
    }

    fn summary_delta(
        &mut self,
        index: u64,
        summary_index: u64,
        delta: String,
        out: &mut Vec<StreamEvent>,
    ) {
        self.progress.text(&delta);
        if let Some(Partial::Reasoning(parts)) = self.open.get_mut(&index) {
            // A later index starts a new part; an absurd one still only adds one.
            let i = usize::try_from(summary_index).map_or(parts.len(), |i| i.min(parts.len()));
            if i == parts.len() {
                if i > 0 {
                    out.push(StreamEvent::ThinkingDelta("\n\n".into()));
                }
                parts.push(String::new());
            }
            parts[i].push_str(&delta);
        }
        if !delta.is_empty() {
            out.push(StreamEvent::ThinkingDelta(delta));
        }
    }

    /// An item is complete: its `done` event carries it whole, which wins over the deltas.
    fn item_done(&mut self, index: u64, item: Item, out: &mut Vec<StreamEvent>) {
        let partial = self.open.remove(&index);
        self.count_done(partial.as_ref(), &item);
        match item {
            Item::Message { content } => {
                let whole: String = content
                    .iter()
                    .map(|c| match c {
                        Content::OutputText { text } => text.as_str(),
                        Content::Refusal { refusal } => refusal.as_str(),
                        Content::Other => "",
                    })
                    .collect();
                let streamed = match partial {
                    Some(Partial::Text(text)) => text,
                    _ => String::new(),
                };
                if streamed.is_empty() && !whole.is_empty() {
                    out.push(StreamEvent::TextDelta(whole.clone()));
                }
                let text = if whole.is_empty() { streamed } else { whole };
                if !text.is_empty() {
                    out.push(StreamEvent::Block(Block::text(text)));
                }
            }
            Item::FunctionCall {
                call_id,
                name,
                arguments,
            } => {
                let (streamed_id, streamed_name, streamed_args) = match partial {
                    Some(Partial::Call {
                        call_id,
                        name,
                        args,
                    }) => (call_id, name, args),
                    _ => Default::default(),
                };
                let pick = |whole: String, streamed: String| {
                    if whole.is_empty() { streamed } else { whole }
                };
                let args = pick(arguments, streamed_args);
                let call = self.call(pick(call_id, streamed_id), pick(name, streamed_name), &args);
                out.push(StreamEvent::Block(Block::ToolUse(call)));
            }
            Item::Reasoning {
                id,
                summary,
                encrypted_content,
            } => {
                let streamed = match partial {
                    Some(Partial::Reasoning(parts)) => parts,
                    _ => Vec::new(),
                };
                let summary: Vec<String> = summary.into_iter().map(|s| s.text).collect();
                if streamed.iter().all(String::is_empty) && !summary.is_empty() {
                    out.push(StreamEvent::ThinkingDelta(summary.join("\n\n")));
                }
                let summary = if summary.is_empty() {
                    streamed
                } else {
                    summary
                };
                // Without encrypted content or a summary the item says nothing and cannot be
                // sent back (an id alone refers to storage we turned off).
                if encrypted_content.is_some() || summary.iter().any(|s| !s.is_empty()) {
                    out.push(StreamEvent::Block(Block::Reasoning {
                        id,
                        encrypted_content,
                        summary,
                    }));
                }
            }
            Item::Other => {}
        }
    }

    /// The response ended; items still open never got their `done`. Text is kept; a call is kept
    /// as it stands when the response completed, and marked truncated when it was cut short;
    /// reasoning is dropped (its encrypted content only ever comes whole).
    fn close_open(&mut self, cut: bool, out: &mut Vec<StreamEvent>) {
        for (_, partial) in std::mem::take(&mut self.open) {
            match partial {
                Partial::Text(text) if !text.is_empty() => {
                    out.push(StreamEvent::Block(Block::text(text)));
                }
                Partial::Call {
                    call_id,
                    name,
                    args,
                } => {
                    let call = if cut {
                        let mut call = self.call(call_id, name, "");
                        call.raw_input = Some(args);
                        call.defect = Some(CallDefect::Truncated);
                        call
                    } else {
                        self.call(call_id, name, &args)
                    };
                    out.push(StreamEvent::Block(Block::ToolUse(call)));
                }
                _ => {}
            }
        }
    }

    /// `stop` is `None` for a completed response, whose stop reason follows from its calls.
    fn end(
        &mut self,
        response: WireResponse,
        stop: Option<StopReason>,
        out: &mut Vec<StreamEvent>,
    ) {
        self.close_open(stop.is_some(), out);
        if let Some(u) = response.usage {
            out.push(StreamEvent::Usage(u.into()));
        }
        let stop = match stop {
            Some(reason) => reason,
            None if self.called => StopReason::ToolUse,
            None => StopReason::EndTurn,
        };
        out.push(StreamEvent::Done(stop));
        self.done = true;
    }
}

impl Mapper for ResponsesMapper {
    fn provider(&self) -> &str {
        self.provider
    }

    fn map(&mut self, event: SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        match parse_json::<Event>(self.provider, &event.data)? {
            Event::ItemAdded { output_index, item } => self.added(output_index, item),
            Event::ItemDone { output_index, item } => self.item_done(output_index, item, out),
            Event::TextDelta {
                output_index,
                delta,
            }
            | Event::RefusalDelta {
                output_index,
                delta,
            } => {
                self.progress.text(&delta);
                if let Some(Partial::Text(text)) = self.open.get_mut(&output_index) {
                    text.push_str(&delta);
                }
                if !delta.is_empty() {
                    out.push(StreamEvent::TextDelta(delta));
                }
            }
            Event::ArgumentsDelta {
                output_index,
                delta,
            } => {
                self.progress.text(&delta);
                if let Some(Partial::Call { args, .. }) = self.open.get_mut(&output_index) {
                    args.push_str(&delta);
                }
            }
            Event::SummaryDelta {
                output_index,
                summary_index,
                delta,
            } => self.summary_delta(output_index, summary_index, delta, out),
            Event::ReasoningTextDelta { delta } => {
                self.progress.text(&delta);
                if !delta.is_empty() {
                    out.push(StreamEvent::ThinkingDelta(delta));
                }
            }
            Event::Created { response } => {
                if let Some(model) = response.model.filter(|m| !m.is_empty()) {
                    out.push(StreamEvent::Model(model));
                }
            }
            Event::Completed { response } => self.end(response, None, out),
            Event::Incomplete { response } => {
                let reason = response
                    .incomplete_details
                    .as_ref()
                    .and_then(|d| d.reason.as_deref());
                let stop = match reason {
                    Some("max_output_tokens") => StopReason::MaxTokens,
                    Some("content_filter") => StopReason::Refusal,
                    _ => StopReason::Other,
                };
                self.end(response, Some(stop), out);
            }
            Event::Failed { response } => {
                let message = match response.error {
                    Some(WireError {
                        code: Some(code),
                        message,
                    }) => format!("{message} ({code})"),
                    Some(WireError { message, .. }) if !message.is_empty() => message,
                    _ => "the response failed".to_owned(),
                };
                return Err(self.stream_error(message));
            }
            Event::Error { code, message } => {
                let message = match code {
                    Some(code) => format!("{message} ({code})"),
                    None => message,
                };
                return Err(self.stream_error(message));
            }
            Event::Other => {}
        }
        Ok(())
    }

    fn finish(
        &mut self,
        tail: Option<SseEvent>,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        // A terminal event that lacked only its closing blank line still ends the response.
        if !self.done
            && let Some(tail) = tail
            && TERMINAL.contains(&tail.event.as_str())
        {
            self.map(tail, out)?;
        }
        if self.done {
            return Ok(());
        }
        Err(ProviderError::Truncated {
            provider: self.provider.into(),
            expected: "response.completed",
        })
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn progress(&self) -> Progress {
        self.progress
    }
}

const TERMINAL: &[&str] = &[
    "response.completed",
    "response.incomplete",
    "response.failed",
    "error",
];

#[cfg(test)]
mod request_tests;
#[cfg(test)]
mod tests;
