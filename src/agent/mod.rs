//! The round loop: ask the model, run the tools it asks for while it is still streaming, feed
//! the results back, and stop when it stops asking, a limit is hit, or something fails.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::conversation::{Block, ErrorKind, Message, StopReason, ToolResult, ToolUse, Usage};
use crate::outcome::Status;
use crate::provider::{Provider, ProviderError, Request, StreamEvent};
use crate::tools::pipeline::Toolbox;
use crate::transcript::{Line, Round, Writer};

pub mod scheduler;

use scheduler::Scheduler;

/// Hears about a run as it happens (progress display, streaming JSON). Every method has a
/// default that does nothing. Methods may be called from several tasks at once.
pub trait Observer: Send + Sync {
    fn round_started(&self, round: u32) {
        let _ = round;
    }
    fn text_delta(&self, text: &str) {
        let _ = text;
    }
    fn thinking_delta(&self, text: &str) {
        let _ = text;
    }
    fn tool_started(&self, call: &ToolUse, subject: Option<&str>) {
        let _ = (call, subject);
    }
    fn tool_finished(&self, result: &ToolResult) {
        let _ = result;
    }
    fn round_finished(&self, round: &Round) {
        let _ = round;
    }
}

/// An observer that ignores everything.
pub struct Quiet;
impl Observer for Quiet {}

/// Limits the loop enforces itself.
#[derive(Debug, Clone)]
pub struct LoopLimits {
    pub max_rounds: u32,
    pub max_tokens: Option<u32>,
    pub max_parallel: usize,
}

/// The parts of a run the loop drives.
pub struct Agent {
    pub provider: Arc<dyn Provider>,
    pub toolbox: Arc<Toolbox>,
    pub system: String,
    pub limits: LoopLimits,
    pub observer: Arc<dyn Observer>,
}

/// What the loop reports when it stops.
#[derive(Debug, Clone)]
pub struct Finished {
    pub status: Status,
    pub rounds: u32,
    pub final_text: String,
    pub usage: Usage,
    pub error: Option<String>,
    pub stop_reason: Option<StopReason>,
    pub tool_calls: u32,
    pub tool_errors: BTreeMap<ErrorKind, u32>,
}

impl Agent {
    /// Runs rounds until the model stops calling tools or a limit or failure ends the run.
    /// `history` holds the conversation so far and grows with every round.
    pub async fn run(
        &self,
        history: &mut Vec<Message>,
        mut transcript: Option<&mut Writer>,
        cancel: &CancellationToken,
    ) -> Finished {
        let mut done = Finished {
            status: Status::MaxRounds,
            rounds: 0,
            final_text: String::new(),
            usage: Usage::default(),
            error: None,
            stop_reason: None,
            tool_calls: 0,
            tool_errors: BTreeMap::new(),
        };
        let offered = self.toolbox.offered();
        for number in 1..=self.limits.max_rounds {
            self.observer.round_started(number);
            let request = Request {
                system: &self.system,
                messages: history,
                tools: &offered,
                max_tokens: self.limits.max_tokens,
            };
            let attempt = self.round(number, &request, cancel).await;
            let (round, failure) = match attempt {
                Ok(round) => (Some(round), None),
                Err((partial, e)) => (partial, Some(e)),
            };
            if let Some(round) = round {
                done.rounds = number;
                done.usage.add(&round.usage);
                done.stop_reason = round.stop_reason;
                done.final_text = final_text(&round.blocks);
                for r in &round.results {
                    done.tool_calls += 1;
                    if let Some(kind) = r.error_kind {
                        *done.tool_errors.entry(kind).or_default() += 1;
                    }
                }
                if let Some(w) = transcript.as_deref_mut() {
                    if let Err(e) = w.write(&Line::Round(round.clone())) {
                        done.status = Status::Error;
                        done.error = Some(e.to_string());
                        return done;
                    }
                }
                self.observer.round_finished(&round);
                let Round {
                    blocks,
                    results,
                    stop_reason,
                    ..
                } = round;
                let has_calls = !results.is_empty();
                history.push(Message::Assistant {
                    blocks,
                    provider: self.provider.name().to_owned(),
                });
                if has_calls {
                    history.push(Message::ToolResults(results));
                } else if failure.is_none() && stop_reason != Some(StopReason::PauseTurn) {
                    done.status = Status::Completed;
                    return done;
                }
            }
            if let Some(e) = failure {
                done.status = Status::Error;
                done.error = Some(e.to_string());
                return done;
            }
        }
        done
    }

    /// One round: stream the response, starting each tool call as soon as it is complete, then
    /// wait for the calls. On failure, returns the partial round when tools already ran (their
    /// effects happened and must be on record).
    async fn round(
        &self,
        number: u32,
        request: &Request<'_>,
        cancel: &CancellationToken,
    ) -> Result<Round, (Option<Round>, ProviderError)> {
        let time = now_rfc3339();
        let started = Instant::now();
        let mut scheduler = Scheduler::new(
            self.toolbox.clone(),
            self.limits.max_parallel,
            cancel.child_token(),
            self.observer.clone(),
        );
        let mut blocks = Vec::new();
        let mut usage = Usage::default();
        let mut stop = None;
        let streamed: Result<(), ProviderError> = async {
            let mut stream = self.provider.stream(request).await?;
            while let Some(event) = stream.next().await {
                match event? {
                    StreamEvent::TextDelta(t) => self.observer.text_delta(&t),
                    StreamEvent::ThinkingDelta(t) => self.observer.thinking_delta(&t),
                    StreamEvent::Block(block) => {
                        if let Block::ToolUse(call) = &block {
                            scheduler.submit(call.clone());
                        }
                        blocks.push(block);
                    }
                    StreamEvent::Usage(u) => usage = u,
                    StreamEvent::Done(reason) => stop = Some(reason),
                }
            }
            Ok(())
        }
        .await;
        let model_ms = started.elapsed().as_millis() as u64;
        if streamed.is_err() {
            scheduler.cancel();
        }
        let (results, tools) = scheduler.finish().await;
        let round = Round {
            round: number,
            time,
            blocks,
            results,
            stop_reason: stop,
            usage,
            model_ms,
            tools_ms: tools.as_millis() as u64,
        };
        match streamed {
            Ok(()) => Ok(round),
            Err(e) => {
                let keep = !round.results.is_empty();
                Err((keep.then_some(round), e))
            }
        }
    }
}

/// The answer text of a round: its text blocks, in order.
fn final_text(blocks: &[Block]) -> String {
    let texts: Vec<&str> = blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text { text, .. } if !text.is_empty() => Some(text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n")
}

/// The current time as RFC 3339 UTC with millisecond precision.
pub fn now_rfc3339() -> String {
    let now = jiff::Timestamp::now();
    format!("{now:.3}")
}
