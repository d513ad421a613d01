//! Google Gemini API, streamed (`POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse`).
//!
//! Every `data:` chunk is a whole `GenerateContentResponse` and a function call arrives whole in
//! one part, so calls are emitted the moment they are seen and can run while the model goes on.
//! There is no end sentinel: a response is complete only if a `finishReason` was seen before the
//! connection closed. An error after the 200 comes as bare JSON without `data:`, which the SSE
//! decoder hands over as stray lines. A `thoughtSignature` stays on the block of the part that
//! carried it and goes back on the same part, only to Gemini; ids we invented are never sent.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::endpoint::Endpoint;
use super::sse::SseEvent;
use super::{
    EventStream, Mapper, Progress, Provider, ProviderError, Request, StreamEvent, http, parse_json,
};
use crate::conversation::{Block, CallIds, Message, StopReason, ToolUse, Usage};

const NAME: &str = "gemini";
/// Ids of calls Gemini sent without one. The prefix is how the request builder knows not to send
/// them back as `id`: the API would look for a call it never issued.
pub(crate) const GENERATED_ID_PREFIX: &str = "gemini_call_";
/// A bare error body is about a kilobyte; beyond this the stray lines are not JSON we can use.
const MAX_STRAY_BYTES: usize = 16 * 1024;

pub(crate) struct Gemini {
    endpoint: Endpoint,
}

impl Gemini {
    pub(crate) fn new(endpoint: Endpoint) -> Gemini {
        Gemini { endpoint }
    }
}

#[async_trait]
impl Provider for Gemini {
    fn name(&self) -> &str {
        self.endpoint.name
    }

    fn model(&self) -> &str {
        &self.endpoint.model
    }

    async fn stream(&self, request: &Request<'_>) -> Result<EventStream, ProviderError> {
        let e = &self.endpoint;
        let wire = build_request(&e.model, request, &e.options);
        let headers = e.key_header("x-goog-api-key")?;
        e.send(headers, &wire, GeminiMapper::after(request.messages))
            .await
    }
}

// ---- wire types shared by request and response ----

/// One `Part`. Only the kinds we produce or consume are modelled; others are skipped on read.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    thought: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    function_call: Option<FunctionCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    function_response: Option<FunctionResponse>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    thought_signature: Option<String>,
    /// An attached image or PDF, inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    inline_data: Option<Blob>,
}

/// `{"mimeType": …, "data": BASE64}`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Blob {
    mime_type: String,
    data: crate::attachment::Base64,
}

#[derive(Debug, Serialize, Deserialize)]
struct FunctionCall {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(default)]
    name: String,
    #[serde(default)]
    args: Value,
}

#[derive(Debug, Serialize, Deserialize)]
struct FunctionResponse {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    name: String,
    response: Value,
}

// ---- request: gemini_request.rs ----

mod request;
#[cfg(test)]
use request::{UNSIGNED_CALL, validates_call_signatures};
pub(crate) use request::{build_body, build_request};

// ---- stream ----

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Chunk {
    #[serde(default)]
    candidates: Vec<Candidate>,
    /// The model that answers, in every chunk.
    #[serde(default)]
    model_version: Option<String>,
    #[serde(default)]
    usage_metadata: Option<WireUsage>,
    #[serde(default)]
    prompt_feedback: Option<PromptFeedback>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    content: Option<CandidateContent>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct CandidateContent {
    #[serde(default)]
    parts: Vec<Part>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireUsage {
    #[serde(default)]
    prompt_token_count: u64,
    #[serde(default)]
    candidates_token_count: u64,
    #[serde(default)]
    thoughts_token_count: u64,
    #[serde(default)]
    cached_content_token_count: u64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback {
    #[serde(default)]
    block_reason: Option<String>,
    #[serde(default)]
    block_reason_message: Option<String>,
}

/// Text still growing from consecutive unsigned parts; `true` for a thought summary.
type Pending = (bool, String);

/// Gemini `GenerateContentResponse` chunks → neutral events.
#[derive(Debug, Default)]
pub(crate) struct GeminiMapper {
    pending: Option<Pending>,
    ids: CallIds,
    emitted_calls: bool,
    finish: Option<StopReason>,
    usage: Option<Usage>,
    /// Stray lines of a bare JSON body not yet complete.
    stray: String,
    done: bool,
    progress: Progress,
    /// Whether the answering model was said (`StreamEvent::Model`, once).
    model_said: bool,
}

impl GeminiMapper {
    /// The mapper of the response that follows `history`.
    pub(crate) fn after(history: &[Message]) -> GeminiMapper {
        GeminiMapper {
            ids: CallIds::after(history),
            ..GeminiMapper::default()
        }
    }

    fn stream_error(&self, message: String) -> ProviderError {
        ProviderError::Stream {
            provider: NAME.into(),
            message,
            kind: super::Failure::ServerError,
        }
    }

    fn chunk(
        &mut self,
        chunk: Chunk,
        raw: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        if chunk.error.is_some() {
            return Err(self.stream_error(http::error_text(raw.as_bytes())));
        }
        if let Some(model) = chunk
            .model_version
            .filter(|m| !m.is_empty() && !self.model_said)
        {
            self.model_said = true;
            out.push(StreamEvent::Model(model));
        }
        if let Some(u) = chunk.usage_metadata {
            // Cumulative on every chunk: the last one wins.
            let cached = u.cached_content_token_count;
            self.usage = Some(Usage {
                input_tokens: u.prompt_token_count.saturating_sub(cached),
                output_tokens: u
                    .candidates_token_count
                    .saturating_add(u.thoughts_token_count),
                cache_read_tokens: cached,
                cache_write_tokens: 0,
                reasoning_tokens: u.thoughts_token_count,
            });
        }
        let Some(candidate) = chunk
            .candidates
            .into_iter()
            .find(|c| c.index.unwrap_or(0) == 0)
        else {
            if let Some(feedback) = chunk.prompt_feedback
                && let Some(reason) = feedback.block_reason
            {
                let message = match feedback.block_reason_message {
                    Some(m) => format!("the prompt was blocked ({reason}): {m}"),
                    None => format!("the prompt was blocked ({reason})"),
                };
                return Err(ProviderError::Refused {
                    provider: NAME.into(),
                    message,
                });
            }
            return Ok(());
        };
        for part in candidate.content.unwrap_or_default().parts {
            self.part(part, out);
        }
        if let Some(reason) = candidate.finish_reason {
            self.finish = Some(finish_reason(&reason));
        }
        Ok(())
    }

    fn part(&mut self, part: Part, out: &mut Vec<StreamEvent>) {
        let signature = part.thought_signature;
        if let Some(s) = &signature {
            self.progress.text(s);
        }
        if let Some(call) = part.function_call {
            self.progress.block();
            self.progress.text(call.id.as_deref().unwrap_or_default());
            self.progress.text(&call.name);
            self.progress.json(&call.args);
            self.flush(out);
            let id = self
                .ids
                .accept(call.id.unwrap_or_default(), GENERATED_ID_PREFIX);
            let mut tool_use = match call.args {
                Value::Null => ToolUse::from_raw(id, call.name, ""),
                Value::Object(args) => {
                    let mut tool_use = ToolUse::from_raw(id, call.name, "");
                    tool_use.input = Value::Object(args);
                    tool_use
                }
                // Not an object: from_raw records why the call cannot run.
                other => ToolUse::from_raw(id, call.name, &other.to_string()),
            };
            tool_use.signature = signature;
            self.emitted_calls = true;
            out.push(StreamEvent::Block(Block::ToolUse(tool_use)));
            return;
        }
        let text = part.text.unwrap_or_default();
        self.progress.text(&text);
        let thought = part.thought;
        let Some(signature) = signature else {
            if !text.is_empty() {
                self.append(thought, text, out);
            }
            return;
        };
        // A signed part is a block of its own, so the signature goes back on exactly that part.
        self.progress.block();
        self.flush(out);
        if !text.is_empty() {
            out.push(delta(thought, &text));
        }
        out.push(block(thought, text, Some(signature)));
    }

    fn append(&mut self, thought: bool, text: String, out: &mut Vec<StreamEvent>) {
        if self
            .pending
            .as_ref()
            .is_some_and(|(kind, _)| *kind != thought)
        {
            self.flush(out);
        }
        out.push(delta(thought, &text));
        match &mut self.pending {
            Some((_, buf)) => buf.push_str(&text),
            None => {
                self.progress.block();
                self.pending = Some((thought, text));
            }
        }
    }

    fn flush(&mut self, out: &mut Vec<StreamEvent>) {
        if let Some((thought, text)) = self.pending.take() {
            out.push(block(thought, text, None));
        }
    }

    fn end(&mut self, out: &mut Vec<StreamEvent>) {
        self.flush(out);
        if let Some(usage) = self.usage {
            out.push(StreamEvent::Usage(usage));
        }
        // Gemini says STOP on a tool round too: the calls decide.
        let stop = match self.finish.unwrap_or(StopReason::EndTurn) {
            StopReason::EndTurn if self.emitted_calls => StopReason::ToolUse,
            reason => reason,
        };
        out.push(StreamEvent::Done(stop));
        self.done = true;
    }

    fn truncated(&self) -> ProviderError {
        ProviderError::Truncated {
            provider: NAME.into(),
            expected: "finishReason",
        }
    }
}

fn block(thought: bool, text: String, signature: Option<String>) -> StreamEvent {
    StreamEvent::Block(if thought {
        Block::Thinking { text, signature }
    } else {
        Block::Text { text, signature }
    })
}

fn delta(thought: bool, text: &str) -> StreamEvent {
    if thought {
        StreamEvent::ThinkingDelta(text.to_owned())
    } else {
        StreamEvent::TextDelta(text.to_owned())
    }
}

impl Mapper for GeminiMapper {
    fn provider(&self) -> &str {
        NAME
    }

    fn map(&mut self, event: SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        let chunk: Chunk = parse_json(NAME, &event.data)?;
        self.chunk(chunk, &event.data, out)
    }

    fn stray(&mut self, lines: Vec<String>) -> Result<(), ProviderError> {
        for line in lines {
            // Anything not starting a JSON value is an unknown SSE field, ignored by the rules.
            if self.stray.is_empty() && !line.trim_start().starts_with(['{', '[']) {
                continue;
            }
            self.stray.push_str(&line);
            self.stray.push('\n');
            // Only a closing line can complete the body, so other lines skip the parse attempt.
            let closes = line.trim_end().ends_with(['}', ']']);
            let complete =
                closes && serde_json::from_str::<serde::de::IgnoredAny>(&self.stray).is_ok();
            if complete || self.stray.len() > MAX_STRAY_BYTES {
                return Err(self.stream_error(http::error_text(self.stray.as_bytes())));
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
        // An error body cut short is still the server's error, not a clean end.
        if !self.stray.is_empty() {
            return Err(self.stream_error(http::error_text(self.stray.as_bytes())));
        }
        // A last chunk that lacks only its blank line is whole if it parses; if not, it was cut.
        if let Some(tail) = tail {
            match serde_json::from_str::<Chunk>(&tail.data) {
                Ok(chunk) => self.chunk(chunk, &tail.data, out)?,
                Err(_) => return Err(self.truncated()),
            }
        }
        if self.finish.is_none() {
            return Err(self.truncated());
        }
        self.end(out);
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn progress(&self) -> Progress {
        self.progress
    }
}

/// The enum is open and case-insensitive, so unknown values map too.
fn finish_reason(s: &str) -> StopReason {
    match s.to_ascii_uppercase().as_str() {
        "STOP" => StopReason::EndTurn,
        "MAX_TOKENS" => StopReason::MaxTokens,
        "SAFETY"
        | "RECITATION"
        | "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION" => StopReason::Refusal,
        _ => StopReason::Other,
    }
}

#[cfg(test)]
mod request_tests;
#[cfg(test)]
mod tests;
