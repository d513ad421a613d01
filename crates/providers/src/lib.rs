//! Model providers behind one streaming interface.
//!
//! Each provider file has three parts: serde wire types, a request builder from the neutral
//! conversation, and a `Mapper`, a pure state machine from wire events to [`StreamEvent`]s. The
//! shared parts live here: the event enum, the error type (classified once, so retry decisions
//! never parse strings), and the driver that runs a mapper over an HTTP body through a decoder
//! (`framing`: SSE, or Bedrock's binary event stream), bounded by the idle timeout and the cap on
//! a response's content (`progress`).
#![forbid(unsafe_code)]
// What the clouds share with the other providers (Anthropic's body for Claude on Vertex,
// credentials that refresh, a batch's shared exchanges) is unused in a build without them.
#![cfg_attr(
    not(all(feature = "bedrock", feature = "vertex", feature = "azure")),
    allow(dead_code, unused_imports, unused_variables)
)]
#![deny(clippy::print_stdout)]

use rounds_base::{attachment, conversation, env, net, outcome, providers, terminal, transcript};

use std::pin::Pin;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::{Stream, StreamExt};

use crate::conversation::ToolSpec;
use crate::conversation::{Block, Message, StopReason, Usage};
use crate::net::clip;

pub(crate) mod anthropic;
pub(crate) mod auth;
#[cfg(feature = "azure")]
pub(crate) mod azure;
#[cfg(feature = "bedrock")]
pub(crate) mod bedrock;
mod choice;
mod endpoint;
mod failure;
pub(crate) mod framing;
pub(crate) mod gemini;
pub mod http;
pub(crate) mod openai;
pub(crate) mod openai_responses;
pub(crate) mod options;
pub(crate) mod progress;
pub(crate) mod replay;
pub mod retry;
pub(crate) mod sse;
#[cfg(test)]
pub(crate) mod testing;
pub(crate) mod text_calls;
#[cfg(feature = "vertex")]
pub(crate) mod vertex;
#[cfg(test)]
pub(crate) mod wire_cases;

pub use choice::{Api, BuildError, Cloud, OptionError, ProviderChoice, build, build_with};
pub(crate) use failure::Failure;
pub use options::{Effort, Options, Parallel};
pub(crate) use progress::{MAX_RESPONSE_BYTES, Progress};

/// Everything a provider needs for one request.
pub struct Request<'a> {
    pub system: &'a str,
    pub messages: &'a [Message],
    /// The tools offered this round; empty means the model gets no tools.
    pub tools: &'a [&'a ToolSpec],
    /// Cap on the response's output tokens, when the user set one.
    pub max_tokens: Option<u32>,
    /// Whether the model may call the offered tools in this response.
    pub tool_choice: ToolChoice,
    /// Prompt caching for this request; `None` asks for none (`--no-cache`).
    pub cache: Option<&'a Cache>,
    /// `--output-schema`: the JSON Schema the final answer must follow, for providers with
    /// native structured output (the others are told in the system prompt).
    pub output_schema: Option<&'a serde_json::Value>,
}

/// How a run asks providers to cache the prompt it resends every round. Anthropic needs
/// explicit breakpoints (with this lifetime); OpenAI routes requests with the same key to the
/// same cache; Gemini caches implicitly and needs nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cache {
    pub ttl: CacheTtl,
    /// Stable for the run, and across `--resume` of it: the first run's id.
    pub key: String,
}

/// `--cache-ttl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CacheTtl {
    #[value(name = "5m")]
    FiveMinutes,
    #[value(name = "1h")]
    OneHour,
}

/// Whether a response may call tools. `None` still sends the tool definitions: providers
/// reject a history holding tool calls when the request defines no tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolChoice {
    Auto,
    None,
}

/// What a provider stream yields, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// A piece of answer text, for live display; the whole text also arrives as a `Block`.
    TextDelta(String),
    /// A piece of reasoning, for live display.
    ThinkingDelta(String),
    /// A finished block. A `ToolUse` block may be executed as soon as it arrives.
    Block(Block),
    /// Usage so far (each report replaces the previous one for this response).
    Usage(Usage),
    /// The model that answers, as the provider names it (a dated version of the one asked
    /// for, say): at most once per response, when the stream says it.
    Model(String),
    /// The response ended normally. Always the last event of a successful stream.
    Done(StopReason),
}

/// A boxed stream of events; dropping it cancels the request.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ProviderError>> + Send>>;

/// One model endpoint.
#[async_trait]
pub trait Provider: Send + Sync {
    /// The provider's name as the user wrote it (`anthropic`, `ollama`, …).
    fn name(&self) -> &str;
    /// The model name sent to the provider.
    fn model(&self) -> &str;
    /// Whether the provider constrains answers to `Request::output_schema` itself; if not, the
    /// schema is given to the model as an instruction.
    fn structured_output(&self) -> bool {
        false
    }
    /// Whether answers are read for what a small model writes as text instead of calling a
    /// tool (edits, see `tools::text_edits`): a server on the user's machine, whose calls
    /// written as text are read too (`text_calls`). A hosted model's text is its answer.
    fn reads_text_edits(&self) -> bool {
        false
    }
    /// Starts one streamed response. HTTP-level failures are returned here; failures after the
    /// response started arrive through the stream.
    async fn stream(&self, request: &Request<'_>) -> Result<EventStream, ProviderError>;
    /// The provider the subagent `at` asks instead of this one, if another: a recording plays
    /// the subagent's own recorded rounds to it. `None`: this one.
    fn for_subagent(
        &self,
        at: &crate::transcript::AgentRef,
    ) -> Option<std::sync::Arc<dyn Provider>> {
        let _ = at;
        None
    }
}

/// Why a model request failed. Messages name the provider and carry the provider's own error
/// text; they never contain a key.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProviderError {
    /// A non-success HTTP status before any streaming.
    #[error("{provider}: HTTP {status} {message}")]
    Http {
        provider: String,
        status: u16,
        message: String,
        retry_after: Option<Duration>,
        /// Classified where the error was made (`Failure::of_http`).
        kind: Failure,
    },
    /// An error the provider reported inside a 200 stream.
    #[error("{provider}: error in stream: {message}")]
    Stream {
        provider: String,
        message: String,
        kind: Failure,
    },
    /// Connecting, sending or reading failed.
    #[error("{provider}: {message}")]
    Transport { provider: String, message: String },
    /// A request rounds cannot make as configured: a header, URL or body of its own that the
    /// HTTP client refuses to build (a key no header can carry). Nothing was sent, and the
    /// same request would fail the same way: a setup error, never the network's.
    #[error("{provider}: {message}")]
    Unbuildable { provider: String, message: String },
    /// No response, or no content in it (keep-alives aside), for longer than the idle timeout.
    #[error("{provider}: stream stalled: no content for {}s", .after.as_secs_f64())]
    Idle { provider: String, after: Duration },
    /// The response carried more content than one response may (`MAX_RESPONSE_BYTES`); the
    /// same request would do the same again.
    #[error(
        "{provider}: response too large: more than {} of text, thinking and tool input \
         (the cap on one response); reading stopped",
        progress::show_bytes(*.limit)
    )]
    TooLarge { provider: String, limit: u64 },
    /// The stream closed before its terminal event.
    #[error("{provider}: stream closed before {expected}")]
    Truncated {
        provider: String,
        expected: &'static str,
    },
    /// The provider declined the request itself (Gemini's blocked prompt): asking again with
    /// the same conversation gets the same answer.
    #[error("{provider}: {message}")]
    Refused { provider: String, message: String },
    /// The stream was not what the protocol promises (bad JSON, oversized event).
    #[error("{provider}: protocol error: {message}")]
    Protocol { provider: String, message: String },
    /// The replay provider has nothing (more) to play.
    #[error("replay: {0}")]
    Replay(String),
    /// Credentials could not be found, fetched or applied (a cloud's credential chain, a token
    /// endpoint). The message names what was tried and never holds a secret.
    #[error("{provider}: credentials: {message}")]
    Credentials {
        provider: String,
        message: String,
        kind: Failure,
    },
}

impl ProviderError {
    /// What kind of failure this is, as decided where it was made.
    pub(crate) fn kind(&self) -> Failure {
        match self {
            ProviderError::Http { kind, .. }
            | ProviderError::Stream { kind, .. }
            | ProviderError::Credentials { kind, .. } => *kind,
            ProviderError::Transport { .. } | ProviderError::Truncated { .. } => Failure::Network,
            ProviderError::Idle { .. } => Failure::Stalled,
            ProviderError::TooLarge { .. } => Failure::TooLarge,
            ProviderError::Refused { .. } => Failure::Refused,
            ProviderError::Protocol { .. } => Failure::Protocol,
            ProviderError::Replay(_) => Failure::Replay,
            ProviderError::Unbuildable { .. } => Failure::Config,
        }
    }

    /// Whether the provider refused the request as longer than the model's context window (a
    /// smaller request may succeed).
    pub fn is_context_overflow(&self) -> bool {
        self.kind() == Failure::ContextTooLong
    }

    /// Whether trying the same request again may succeed.
    pub fn is_retryable(&self) -> bool {
        self.kind().retryable()
    }

    /// The failure record of a run this error ended: its kind, and the wait the provider asked
    /// for, if it did.
    pub fn record(&self) -> crate::outcome::FailureRecord {
        let retry_after = match self {
            ProviderError::Http { retry_after, .. } => *retry_after,
            _ => None,
        };
        crate::outcome::FailureRecord::new(self.kind(), retry_after)
    }
}

/// Which credentials a cloud provider would use, for `rounds doctor`: sources and names, never
/// a secret, and no network. `None` for a provider with a plain key (doctor checks the key).
pub fn describe_credentials(
    entry: &crate::providers::Entry,
    key_file: Option<&std::path::Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<Vec<String>> {
    use crate::providers::Auth;
    match entry.auth {
        Auth::Key => None,
        Auth::Azure if key_file.is_some() => {
            Some(vec!["api-key header from --api-key-file".into()])
        }
        #[cfg(feature = "azure")]
        Auth::Azure => Some(azure::describe_credentials(env)),
        Auth::Aws if key_file.is_some() => Some(vec!["Bedrock API key from --api-key-file".into()]),
        #[cfg(feature = "bedrock")]
        Auth::Aws => Some(bedrock::describe_credentials(env)),
        #[cfg(feature = "vertex")]
        Auth::Google => Some(vertex::describe_credentials(env)),
        #[allow(unreachable_patterns)]
        _ => Some(vec![choice::not_built(entry.name).to_string()]),
    }
}

/// What mapping an event (or the end of the body) gives: nothing but the events it pushed, or
/// the error that ends the response.
pub(crate) type Mapped = Result<(), ProviderError>;

/// A provider's wire-to-neutral state machine. Pure: no I/O, so it is tested by feeding events.
pub(crate) trait Mapper: Send + 'static {
    /// The provider name used in error messages.
    fn provider(&self) -> &str;

    /// Maps one event (an SSE event, or a frame as `framing` names it).
    fn map(
        &mut self,
        event: sse::SseEvent,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError>;

    /// Lines outside the SSE grammar (a bare JSON error body, for some servers).
    fn stray(&mut self, lines: Vec<String>) -> Result<(), ProviderError> {
        let _ = lines;
        Ok(())
    }

    /// The body ended. `tail` is an event that lacked its closing blank line (not dispatched by
    /// the SSE rules, but useful to recognise a terminal sentinel). Must emit `Done` or fail.
    fn finish(&mut self, tail: Option<sse::SseEvent>, out: &mut Vec<StreamEvent>) -> Mapped;

    /// True once the terminal event was seen; the driver stops reading.
    fn is_done(&self) -> bool;

    /// The content mapped so far. It must grow with every piece of content (text, thinking,
    /// tool input, a new block) and never with a keep-alive: the driver restarts the idle
    /// timeout when it grows, and ends the response when it passes the cap.
    fn progress(&self) -> Progress;
}

/// The bounds [`drive`] holds a response to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    /// How long the response may go without progress (`--idle-timeout`).
    pub(crate) idle: Duration,
    /// The most content it may carry ([`MAX_RESPONSE_BYTES`]).
    pub(crate) max_bytes: u64,
}

/// Runs `mapper` over a byte stream: decode SSE, map, enforce the idle timeout and the cap on
/// the response's content, and end with `Done` or an error (never a silent end).
pub(crate) fn drive<S, E, M>(body: S, mapper: M, idle: Duration) -> EventStream
where
    S: Stream<Item = Result<Bytes, E>> + Send + Unpin + 'static,
    E: std::fmt::Display,
    M: Mapper,
{
    let bounds = Bounds {
        idle,
        max_bytes: MAX_RESPONSE_BYTES,
    };
    drive_within(body, mapper, bounds)
}

/// [`drive`] with explicit bounds.
pub(crate) fn drive_within<S, E, M>(body: S, mapper: M, bounds: Bounds) -> EventStream
where
    S: Stream<Item = Result<Bytes, E>> + Send + Unpin + 'static,
    E: std::fmt::Display,
    M: Mapper,
{
    drive_framed(body, sse::Decoder::default(), mapper, bounds)
}

/// [`drive_within`] over any framing: the same bounds and ending rules whatever cuts the body
/// into events.
pub(crate) fn drive_framed<S, E, F, M>(
    body: S,
    decoder: F,
    mapper: M,
    bounds: Bounds,
) -> EventStream
where
    S: Stream<Item = Result<Bytes, E>> + Send + Unpin + 'static,
    E: std::fmt::Display,
    F: framing::Framing,
    M: Mapper,
{
    let driver = Driver {
        body: Some(body),
        mapper,
        decoder,
        pending: Default::default(),
        finished: false,
        bounds,
        deadline: deadline_after(bounds.idle),
    };
    Box::pin(futures_util::stream::unfold(driver, |mut d| async move {
        let item = d.next().await?;
        Some((item, d))
    }))
}

/// The state of one driven response.
struct Driver<S, F, M> {
    body: Option<S>,
    mapper: M,
    decoder: F,
    pending: std::collections::VecDeque<Result<StreamEvent, ProviderError>>,
    finished: bool,
    bounds: Bounds,
    /// When the response counts as stalled: the idle timeout after the last progress (or the
    /// start). Reads that bring no progress (keep-alives) leave it where it is.
    deadline: tokio::time::Instant,
}

impl<S, E, F, M> Driver<S, F, M>
where
    S: Stream<Item = Result<Bytes, E>> + Send + Unpin + 'static,
    E: std::fmt::Display,
    F: framing::Framing,
    M: Mapper,
{
    async fn next(&mut self) -> Option<Result<StreamEvent, ProviderError>> {
        loop {
            if let Some(item) = self.pending.pop_front() {
                return Some(item);
            }
            if self.finished {
                return None;
            }
            self.read().await;
        }
    }

    /// Reads the body once and queues what that brought: events, then an error or the end.
    async fn read(&mut self) {
        let provider = self.mapper.provider().to_owned();
        let Some(body) = self.body.as_mut() else {
            self.finished = true;
            return;
        };
        let Ok(next) = tokio::time::timeout_at(self.deadline, body.next()).await else {
            let after = self.bounds.idle;
            self.fail(ProviderError::Idle { provider, after });
            return;
        };
        let mut out = Vec::new();
        let step = match next {
            Some(Ok(bytes)) => self.feed(&bytes, &mut out),
            Some(Err(e)) => Err(ProviderError::Transport {
                provider,
                message: format!("reading the response failed: {e}"),
            }),
            None => {
                self.finished = true;
                let stray = self.decoder.take_stray();
                let tail = self.decoder.finish();
                self.mapper
                    .stray(stray)
                    .and_then(|()| self.mapper.finish(tail, &mut out))
            }
        };
        // Events mapped before a failure are still delivered, then the error ends the stream.
        self.pending.extend(out.into_iter().map(Ok));
        if let Err(e) = step {
            self.fail(e);
            return;
        }
        if self.mapper.is_done() && !self.finished {
            self.finished = true;
            // Read the rest of the body (the chunked terminator, usually at once) so the
            // connection goes back to the pool: otherwise every round pays for a new
            // connection, and with TLS a new handshake.
            if let Some(mut rest) = self.body.take() {
                tokio::spawn(async move {
                    let drain = async { while let Some(Ok(_)) = rest.next().await {} };
                    let _ = tokio::time::timeout(Duration::from_secs(2), drain).await;
                });
            }
        }
    }

    /// Ends the stream with `e`. The body is dropped at once, which cancels the request: a
    /// response cut for its size stops being generated (and paid for) now.
    fn fail(&mut self, e: ProviderError) {
        self.pending.push_back(Err(e));
        self.finished = true;
        self.body = None;
    }

    /// Decodes one read and maps its events, checking the cap after each event (one event is at
    /// most `sse::DEFAULT_MAX_EVENT_BYTES`, which bounds the overshoot) and restarting the idle
    /// timeout if the read brought content.
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        let before = self.mapper.progress();
        let mut events = Vec::new();
        let fed = self.decoder.feed(bytes, &mut events);
        for ev in events {
            if self.mapper.is_done() {
                break;
            }
            // Names only: data can be long, and is in the transcript anyway.
            tracing::debug!(
                "{}: event {}",
                self.mapper.provider(),
                crate::terminal::line(&ev.event)
            );
            self.mapper.map(ev, out)?;
            if self.mapper.progress().total() > self.bounds.max_bytes {
                return Err(ProviderError::TooLarge {
                    provider: self.mapper.provider().to_owned(),
                    limit: self.bounds.max_bytes,
                });
            }
        }
        self.mapper.stray(self.decoder.take_stray())?;
        if self.mapper.progress() > before {
            self.deadline = deadline_after(self.bounds.idle);
        }
        fed.map_err(|e| ProviderError::Protocol {
            provider: self.mapper.provider().to_owned(),
            message: e.to_string(),
        })
    }
}

/// The idle timeout from now; an absurd timeout is a deadline decades away, not an overflow.
fn deadline_after(idle: Duration) -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    now.checked_add(idle)
        .unwrap_or_else(|| now + Duration::from_secs(30 * 365 * 86_400))
}

#[cfg(test)]
mod drive_tests;
#[cfg(test)]
mod interop_tests;

/// Parses an event's JSON data, naming the provider and event on failure.
pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(
    provider: &str,
    data: &str,
) -> Result<T, ProviderError> {
    serde_json::from_str(data).map_err(|e| ProviderError::Protocol {
        provider: provider.to_owned(),
        message: format!("undecodable event ({e}): {}", clip(data, 200)),
    })
}
