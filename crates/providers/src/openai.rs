//! OpenAI Chat Completions, streamed, and every server that speaks it (Ollama, llama.cpp, vLLM).
//!
//! Tool calls arrive as fragments keyed by `index`, possibly interleaved, possibly whole in one
//! chunk (Ollama). A call is complete when a later index has begun and its arguments parse, or
//! when the choice finishes; complete calls are emitted in index order so execution can start
//! while the model is still streaming. Arguments are echoed back as the exact text streamed.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::endpoint::Endpoint;
use super::sse::SseEvent;
use super::{
    EventStream, Mapper, Progress, Provider, ProviderError, Request, StreamEvent, http, parse_json,
};
use crate::conversation::{Block, CallDefect, CallIds, Message, StopReason, ToolUse, Usage};

/// Ids rounds gives calls whose own id is missing or unusable (see `CallIds`).
pub(crate) const GENERATED_ID_PREFIX: &str = "call_rounds_";

pub(crate) use crate::providers::Flavor;

mod request;
use request::build_request;

pub(crate) struct OpenAi {
    endpoint: Endpoint,
}

impl OpenAi {
    pub(crate) fn new(endpoint: Endpoint) -> OpenAi {
        OpenAi { endpoint }
    }
}

#[async_trait]
impl Provider for OpenAi {
    fn name(&self) -> &str {
        self.endpoint.name
    }

    fn model(&self) -> &str {
        &self.endpoint.model
    }

    fn reads_text_edits(&self) -> bool {
        self.endpoint.local
    }

    /// api.openai.com's `response_format`; compatible servers turn it into a grammar that
    /// would leave no room for tool calls, so they get the instruction instead.
    fn structured_output(&self) -> bool {
        self.endpoint.flavor == Flavor::OpenAi
    }

    async fn stream(&self, request: &Request<'_>) -> Result<EventStream, ProviderError> {
        let e = &self.endpoint;
        let wire = build_request(&e.model, e.flavor, request, &e.options);
        let mut mapper = OpenAiMapper::new(e.name).after(request.messages);
        // A local server may leave a call in the text (see `text_calls`); a hosted one never.
        if e.local && request.tool_choice == super::ToolChoice::Auto {
            mapper.text_calls = request.tools.iter().map(|t| t.name.clone()).collect();
        }
        e.send(e.bearer()?, &wire, mapper).await
    }
}

// ---- stream ----

#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
    /// vLLM reports errors at the top level: `{"object":"error","message":…}`.
    #[serde(default)]
    object: Option<String>,
    #[serde(default)]
    message: Option<String>,
    /// The model that answers, in every chunk.
    #[serde(default)]
    model: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    #[serde(default)]
    index: u32,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<CallDelta>>,
}

#[derive(Debug, Deserialize)]
struct CallDelta {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    /// A string fragment, or (some compatible servers) the whole arguments as an object.
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Debug, Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    args: String,
}

/// Chat Completions chunks → neutral events.
#[derive(Debug)]
pub(crate) struct OpenAiMapper {
    provider: &'static str,
    text: String,
    reasoning: String,
    calls: BTreeMap<u32, PartialCall>,
    /// Calls below this index have been emitted.
    next_emit: u32,
    ids: CallIds,
    finish: Option<StopReason>,
    usage: Option<Usage>,
    done: bool,
    progress: Progress,
    /// The offered tools whose calls written as text are taken as calls (none: text is text).
    text_calls: Vec<String>,
    /// Whether the answering model was said (`StreamEvent::Model`, once).
    model_said: bool,
}

impl OpenAiMapper {
    pub(crate) fn new(provider: &'static str) -> OpenAiMapper {
        OpenAiMapper {
            provider,
            text: String::new(),
            reasoning: String::new(),
            calls: BTreeMap::new(),
            next_emit: 0,
            ids: CallIds::default(),
            finish: None,
            usage: None,
            done: false,
            progress: Progress::default(),
            text_calls: Vec::new(),
            model_said: false,
        }
    }

    /// For the response that follows `history`: generated ids are unique in the conversation.
    pub(crate) fn after(mut self, history: &[Message]) -> OpenAiMapper {
        self.ids = CallIds::after(history);
        self
    }

    fn stream_error(&self, message: String) -> ProviderError {
        ProviderError::Stream {
            provider: self.provider.into(),
            message,
            kind: super::Failure::ServerError,
        }
    }

    fn flush_reasoning(&mut self, out: &mut Vec<StreamEvent>) {
        if !self.reasoning.is_empty() {
            let text = std::mem::take(&mut self.reasoning);
            out.push(StreamEvent::Block(Block::Thinking {
                text,
                signature: None,
            }));
        }
    }

    fn flush_text(&mut self, out: &mut Vec<StreamEvent>) {
        self.flush_reasoning(out);
        if !self.text.is_empty() {
            out.push(StreamEvent::Block(Block::text(std::mem::take(
                &mut self.text,
            ))));
        }
    }

    /// Adds a fragment of a tool call to the call it belongs to.
    fn call_delta(&mut self, call: CallDelta) {
        let index = call.index.unwrap_or(self.next_emit);
        let progress = &mut self.progress;
        let entry = self.calls.entry(index).or_insert_with(|| {
            progress.block();
            PartialCall::default()
        });
        // Some servers repeat the id on every fragment: only a new one is content.
        if let Some(id) = call.id.filter(|id| !id.is_empty() && *id != entry.id) {
            progress.text(&id);
            entry.id = id;
        }
        let Some(f) = call.function else { return };
        if let Some(name) = f.name.filter(|n| !n.is_empty()) {
            // Set once; append only a genuinely new fragment (llama.cpp streams names).
            if entry.name.is_empty() || !entry.name.ends_with(&name) {
                progress.text(&name);
                entry.name.push_str(&name);
            }
        }
        let before = entry.args.len();
        match f.arguments {
            Some(Value::String(s)) => entry.args.push_str(&s),
            Some(Value::Null) | None => {}
            Some(object) => entry.args.push_str(&object.to_string()),
        }
        progress.bytes(entry.args.len().saturating_sub(before));
    }

    /// Emits, in index order, every call known to be complete; with `all`, every call.
    fn emit_calls(&mut self, all: bool, out: &mut Vec<StreamEvent>) {
        let truncated = self.finish == Some(StopReason::MaxTokens);
        while let Some(call) = self.calls.get(&self.next_emit) {
            let later_started = self.calls.range(self.next_emit + 1..).next().is_some();
            // Parsed only once a later call started, and only when they could be a whole object:
            // parsing the growing arguments at every fragment costs time quadratic in their length.
            let parses = || {
                let args = call.args.trim();
                args.ends_with('}')
                    && serde_json::from_str::<Value>(args).is_ok_and(|v| v.is_object())
            };
            if !(all || later_started && parses()) {
                break;
            }
            let Some(call) = self.calls.remove(&self.next_emit) else {
                break;
            };
            self.next_emit += 1;
            // Some compatible servers omit ids; results must still refer to something unique.
            let id = self.ids.accept(call.id, GENERATED_ID_PREFIX);
            let mut tool_use = ToolUse::from_raw(id, call.name, &call.args).keep_raw(&call.args);
            if truncated && tool_use.defect.is_some() {
                tool_use.defect = Some(CallDefect::Truncated);
            }
            out.push(StreamEvent::Block(Block::ToolUse(tool_use)));
        }
    }

    /// A response with no calls whose text holds calls to offered tools: those calls, emitted
    /// as calls (ids `call_from_text_…`), and the text without them. Not for a response cut by
    /// the token cap, whose last call may be cut too.
    fn emit_text_calls(&mut self, out: &mut Vec<StreamEvent>) {
        if self.next_emit > 0
            || !self.calls.is_empty()
            || self.finish == Some(StopReason::MaxTokens)
        {
            return;
        }
        let Some(found) = super::text_calls::extract(&self.text, &self.text_calls) else {
            return;
        };
        self.text = found.rest;
        self.flush_text(out);
        for call in found.calls {
            let id = self.ids.accept(String::new(), super::text_calls::ID_PREFIX);
            let args = Value::Object(call.arguments).to_string();
            out.push(StreamEvent::Block(Block::ToolUse(ToolUse::from_raw(
                id, call.name, &args,
            ))));
            self.next_emit += 1;
        }
    }

    fn end(&mut self, out: &mut Vec<StreamEvent>) {
        self.emit_text_calls(out);
        self.flush_text(out);
        self.emit_calls(true, out);
        if let Some(usage) = self.usage {
            out.push(StreamEvent::Usage(usage));
        }
        let emitted_calls = self.next_emit > 0;
        let stop = match self.finish {
            // gpt-4o sometimes says `stop` on a tool round: the calls decide.
            Some(StopReason::EndTurn) | None if emitted_calls => StopReason::ToolUse,
            Some(reason) => reason,
            None => StopReason::EndTurn,
        };
        out.push(StreamEvent::Done(stop));
        self.done = true;
    }
}

impl Mapper for OpenAiMapper {
    fn provider(&self) -> &str {
        self.provider
    }

    fn map(&mut self, event: SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        if event.data.trim() == "[DONE]" {
            self.end(out);
            return Ok(());
        }
        let chunk: Chunk = parse_json(self.provider, &event.data)?;
        if let Some(err) = chunk.error {
            return Err(self.stream_error(http::error_text(err.to_string().as_bytes())));
        }
        if chunk.object.as_deref() == Some("error") {
            return Err(self.stream_error(chunk.message.unwrap_or_else(|| event.data.clone())));
        }
        if let Some(model) = chunk.model.filter(|m| !m.is_empty() && !self.model_said) {
            self.model_said = true;
            out.push(StreamEvent::Model(model));
        }
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            let delta = choice.delta.unwrap_or_default();
            for r in [delta.reasoning_content, delta.reasoning]
                .into_iter()
                .flatten()
            {
                if !r.is_empty() {
                    self.progress.text(&r);
                    out.push(StreamEvent::ThinkingDelta(r.clone()));
                    self.reasoning.push_str(&r);
                }
            }
            if let Some(content) = delta.content.filter(|c| !c.is_empty()) {
                self.flush_reasoning(out);
                self.progress.text(&content);
                out.push(StreamEvent::TextDelta(content.clone()));
                self.text.push_str(&content);
            }
            for call in delta.tool_calls.into_iter().flatten() {
                self.flush_text(out);
                self.call_delta(call);
            }
            self.emit_calls(false, out);
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(finish_reason(&reason));
                // Tools can start now; usage and `[DONE]` may take a moment longer.
                self.emit_text_calls(out);
                self.flush_text(out);
                self.emit_calls(true, out);
            }
        }
        if let Some(u) = chunk.usage {
            let cached = u
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0);
            self.usage = Some(Usage {
                input_tokens: u.prompt_tokens.saturating_sub(cached),
                output_tokens: u.completion_tokens,
                cache_read_tokens: cached,
                cache_write_tokens: 0,
                reasoning_tokens: u
                    .completion_tokens_details
                    .and_then(|d| d.reasoning_tokens)
                    .unwrap_or(0),
            });
        }
        Ok(())
    }

    fn stray(&mut self, lines: Vec<String>) -> Result<(), ProviderError> {
        // Older llama.cpp builds report errors on a non-standard `error:` line.
        match lines.iter().find_map(|l| l.strip_prefix("error:")) {
            Some(body) => Err(self.stream_error(http::error_text(body.trim().as_bytes()))),
            None => Ok(()),
        }
    }

    fn finish(
        &mut self,
        tail: Option<SseEvent>,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        // Some servers omit the blank line after `[DONE]`; a finished choice is also complete.
        let tail_done = tail.is_some_and(|t| t.data.trim() == "[DONE]");
        if tail_done || self.finish.is_some() {
            self.end(out);
            return Ok(());
        }
        Err(ProviderError::Truncated {
            provider: self.provider.into(),
            expected: "[DONE]",
        })
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn progress(&self) -> Progress {
        self.progress
    }
}

fn finish_reason(s: &str) -> StopReason {
    match s {
        "stop" => StopReason::EndTurn,
        "tool_calls" | "function_call" | "tool" => StopReason::ToolUse,
        "length" => StopReason::MaxTokens,
        "content_filter" => StopReason::Refusal,
        _ => StopReason::Other,
    }
}

#[cfg(test)]
mod request_tests;
#[cfg(test)]
mod tests;
