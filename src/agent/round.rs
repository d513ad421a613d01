//! One round of the loop: stream the response, start each tool call as soon as it is complete,
//! retry what a retry may cure, and keep what really happened when a response breaks off.

use std::time::{Duration, Instant};

use futures_util::{FutureExt, StreamExt};
use tokio_util::sync::CancellationToken;

use super::scheduler::Scheduler;
use super::{Agent, RoundEnd, Stop, guards, now_rfc3339};
use crate::conversation::{Block, StopReason, ToolResult, ToolUse, Usage};
use crate::provider::{ProviderError, Request, StreamEvent};
use crate::redact::{Redactor, TextStream};
use crate::transcript::{RetryNote, Round};

impl Agent {
    /// One round: stream the response, starting each tool call as soon as it is complete, then
    /// wait for the calls. Retries transient provider failures; when a failure comes after
    /// tool calls already started, those calls are finished and kept, and the round ends there
    /// (marked with the error) so the conversation continues from what really happened.
    pub(super) async fn round(
        &self,
        number: u32,
        request: &Request<'_>,
        summary: bool,
        cancel: &CancellationToken,
    ) -> RoundEnd {
        let mut record = Record {
            number,
            time: now_rfc3339(),
            started: Instant::now(),
            retries: Vec::new(),
        };
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut scheduler = Scheduler::new(
                self.toolbox.clone(),
                self.limits.max_parallel,
                cancel.child_token(),
                self.observer.clone(),
            );
            let mut streamed = Streamed::new(self.limits.max_calls_per_round, &self.redactor);
            let outcome = self
                .stream(request, summary, &mut scheduler, &mut streamed, cancel)
                .await;
            let e = match outcome {
                Ok(()) => {
                    if !summary {
                        self.edits_from_text(
                            number,
                            request.messages,
                            &mut scheduler,
                            &mut streamed,
                        );
                    }
                    let (results, tools) = scheduler.finish().await;
                    return RoundEnd::complete(record.round(streamed, results, tools));
                }
                Err(Stop::Cancelled) => return record.cancelled(scheduler, streamed).await,
                Err(Stop::Failed(e)) => e,
            };
            let delay = self.limits.retry.delay(&e, attempt);
            if scheduler.has_calls() {
                // Their effects happened: keep them rather than run them twice.
                let (results, tools) = scheduler.finish().await;
                let mut partial = record.round(streamed, results, tools);
                if delay.is_none() {
                    return RoundEnd {
                        round: Some(partial),
                        stop: Some(Stop::Failed(e)),
                    };
                }
                partial.error = Some(self.redactor.redacted(format!(
                    "the response broke off ({e}); the calls that had started were kept"
                )));
                return RoundEnd::complete(partial);
            }
            scheduler.cancel();
            let Some(delay) = delay else {
                return RoundEnd {
                    round: None,
                    stop: Some(Stop::Failed(e)),
                };
            };
            self.note_retry(&mut record, attempt, &e, delay);
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = cancel.cancelled() => return RoundEnd { round: None, stop: Some(Stop::Cancelled) },
            }
        }
    }

    /// Says that the request is tried again after `delay`, and records it in the round.
    fn note_retry(&self, record: &mut Record, attempt: u32, e: &ProviderError, delay: Duration) {
        // A provider's error body may quote what it was sent (a key, a client secret).
        let error = self.redactor.redacted(e.to_string());
        let note = RetryNote {
            round: record.number,
            attempt,
            error: error.clone(),
            delay_ms: delay.as_millis() as u64,
        };
        tracing::warn!(
            "{error}; retrying in {:.1}s (attempt {} of {})",
            delay.as_secs_f64(),
            attempt + 1,
            self.limits.retry.max_retries + 1
        );
        self.observer.retry(&note);
        record.retries.push(note);
    }

    /// Reads one response, handing complete tool calls to the scheduler as they arrive. A
    /// response that asks for more calls than it may is read no further than what has already
    /// arrived, and dropping the stream cancels the request (see `guards`).
    async fn stream(
        &self,
        request: &Request<'_>,
        summary: bool,
        scheduler: &mut Scheduler,
        out: &mut Streamed,
        cancel: &CancellationToken,
    ) -> Result<(), Stop> {
        let mut stream = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(Stop::Cancelled),
            s = self.provider.stream(request) => s.map_err(Stop::Failed)?,
        };
        loop {
            let event = if out.guard.is_cut() {
                match stream.next().now_or_never() {
                    Some(Some(Ok(event))) => Some(Ok(event)),
                    _ => return Ok(()),
                }
            } else {
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => return Err(Stop::Cancelled),
                    e = stream.next() => e,
                }
            };
            let Some(event) = event else { return Ok(()) };
            match event.map_err(Stop::Failed)? {
                StreamEvent::TextDelta(t) => {
                    let t = out.text.push(&t);
                    if !t.is_empty() {
                        self.observer.text_delta(&t);
                        out.partial.push_str(&t);
                    }
                }
                StreamEvent::ThinkingDelta(t) => {
                    let t = out.thinking.push(&t);
                    if !t.is_empty() {
                        self.observer.thinking_delta(&t);
                    }
                }
                StreamEvent::Block(mut block) => {
                    self.settle(&mut block, out);
                    if matches!(block, Block::Text { .. }) {
                        out.partial.clear();
                    }
                    if let Block::ToolUse(call) = &block {
                        self.start(call, summary, scheduler, out);
                    }
                    out.blocks.push(block);
                }
                StreamEvent::Usage(u) => out.usage = u,
                StreamEvent::Model(model) => self.observer.response_model(&model),
                StreamEvent::Done(reason) => out.stop = Some(reason),
            }
        }
    }
}

impl Agent {
    /// Hands a complete call to the scheduler, or answers it, as the response's guards say.
    pub(super) fn start(
        &self,
        call: &ToolUse,
        summary: bool,
        scheduler: &mut Scheduler,
        out: &mut Streamed,
    ) {
        self.observer.tool_use(call);
        match out.guard.admit(call) {
            guards::Admit::Answer(result) => {
                self.observer.tool_finished(&result);
                scheduler.answer(call.clone(), result);
            }
            guards::Admit::Run if summary => scheduler.refuse(
                call.clone(),
                "tools are disabled for the final answer at the round limit",
            ),
            guards::Admit::Run => scheduler.submit(call.clone()),
        }
    }

    /// Redacts a complete block, and says the rest of the deltas it ends: the model may write
    /// back decoded what a tool printed encoded, and its tool calls may carry it on. A thinking
    /// block that held a secret loses its signature: it no longer is what the provider signed,
    /// and the secret must not go back to it (the provider may then refuse the next request;
    /// that is the price of never recording the secret).
    pub(super) fn settle(&self, block: &mut Block, out: &mut Streamed) {
        match block {
            Block::Text { text, .. } => {
                let rest = out.text.finish();
                if !rest.is_empty() {
                    self.observer.text_delta(&rest);
                }
                self.redactor.redact(text);
            }
            Block::Thinking { text, signature } => {
                let rest = out.thinking.finish();
                if !rest.is_empty() {
                    self.observer.thinking_delta(&rest);
                }
                if !self.redactor.redact(text).is_empty() {
                    *signature = None;
                }
            }
            Block::Reasoning { summary, .. } => {
                for text in summary {
                    self.redactor.redact(text);
                }
            }
            Block::ToolUse(call) => {
                self.redactor.redact_json(&mut call.input);
            }
            Block::RedactedThinking { .. } => {}
        }
    }
}

/// What a round's record knows before its response: its number, when it started, its retries.
struct Record {
    number: u32,
    time: String,
    started: Instant,
    retries: Vec<RetryNote>,
}

impl Record {
    /// The round as far as it got when the run was cancelled: the calls that started, and the
    /// text streamed so far, which is the run's answer as far as it got (a deadline mid-answer
    /// keeps what the model had said).
    async fn cancelled(&self, scheduler: Scheduler, mut streamed: Streamed) -> RoundEnd {
        scheduler.cancel();
        let (results, tools) = scheduler.finish().await;
        let cut = streamed.keep_partial();
        let round = (!results.is_empty() || streamed.has_text()).then(|| {
            let mut round = self.round(streamed, results, tools);
            if cut {
                round.error = Some(
                    "the response was cut off when the run was stopped; its text so far is kept"
                        .to_owned(),
                );
            }
            round
        });
        RoundEnd {
            round,
            stop: Some(Stop::Cancelled),
        }
    }

    /// The round's record from what the attempt streamed and the results of its calls.
    fn round(&self, mut streamed: Streamed, results: Vec<ToolResult>, tools: Duration) -> Round {
        streamed.guard.close();
        Round {
            round: self.number,
            time: self.time.clone(),
            blocks: streamed.blocks,
            results,
            stop_reason: streamed.stop,
            usage: streamed.usage,
            model_ms: self.started.elapsed().as_millis() as u64,
            tools_ms: tools.as_millis() as u64,
            retries: self.retries.clone(),
            error: None,
            summary: false,
            elided: vec![],
            guards: streamed.guard.notes,
            cost_usd: None,
            check: None,
        }
    }
}

/// What one attempt streamed, and what its guards did.
pub(super) struct Streamed {
    pub(super) blocks: Vec<Block>,
    /// Text deltas of a text block not complete yet.
    partial: String,
    usage: Usage,
    pub(super) stop: Option<StopReason>,
    guard: guards::Response,
    /// The redaction of the text and thinking deltas, which may split a secret.
    text: TextStream,
    thinking: TextStream,
}

impl Streamed {
    fn new(max_calls: u32, redactor: &Redactor) -> Streamed {
        Streamed {
            blocks: Vec::new(),
            partial: String::new(),
            usage: Usage::default(),
            stop: None,
            guard: guards::Response::new(max_calls),
            text: TextStream::new(redactor),
            thinking: TextStream::new(redactor),
        }
    }

    /// Makes the text of a block cut off mid-stream a block of its own; whether there was any.
    fn keep_partial(&mut self) -> bool {
        let rest = self.text.finish();
        self.partial.push_str(&rest);
        if self.partial.is_empty() {
            return false;
        }
        self.blocks.push(Block::Text {
            text: std::mem::take(&mut self.partial),
            signature: None,
        });
        true
    }

    fn has_text(&self) -> bool {
        self.blocks
            .iter()
            .any(|b| matches!(b, Block::Text { text, .. } if !text.is_empty()))
    }
}
