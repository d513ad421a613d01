//! The round loop: ask the model, run the tools it asks for while it is still streaming, feed
//! the results back, and stop when it stops asking, a limit is hit, something fails, or the run
//! is cancelled (deadline or signal).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{FutureExt, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::conversation::{Block, ErrorKind, Message, StopReason, ToolResult, Usage};
use crate::outcome::{Outcome, Status};
use crate::pricing::Price;
use crate::provider::retry::RetryPolicy;
use crate::provider::{Cache, Provider, ProviderError, Request, StreamEvent, ToolChoice};
use crate::records::Records;
use crate::tools::pipeline::Toolbox;
use crate::transcript::{self, Line, RetryNote, Round};

mod answer;
mod cancel;
mod context;
mod guards;
mod observer;
pub mod scheduler;

pub use answer::OutputSchema;
pub use cancel::Cancel;
pub use observer::{Fanout, Observer, Quiet};
use scheduler::Scheduler;

/// What to do when the round limit is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnMaxRounds {
    Stop,
    /// One more call, with tools forbidden, so the model answers from what it has.
    Summarize,
}

/// Which tool outcomes end the run (`--fail-on`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FailOn {
    /// Any error result except a denial.
    pub tool_error: bool,
    /// A call outside its rule, or to a tool the allowlist did not offer.
    pub denied: bool,
}

/// Limits the loop enforces itself.
#[derive(Debug, Clone)]
pub struct LoopLimits {
    pub max_rounds: u32,
    /// The whole run's deadline (`--timeout`), counted from the loop's start.
    pub deadline: Option<Duration>,
    /// The model's context window in tokens: requests are kept inside it by eliding the
    /// oldest tool results.
    pub context_window: u64,
    pub max_tokens: Option<u32>,
    pub max_parallel: usize,
    /// The most tool calls one response may ask for (`--max-calls-per-round`).
    pub max_calls_per_round: u32,
    /// How many times the same call may return the same result before the model is told, and
    /// ended as stuck at the next (`--max-repeats`).
    pub max_repeats: u32,
    pub budget_tokens: Option<u64>,
    /// The most the run may cost (`--budget-usd`); needs the model's price.
    pub budget_usd: Option<f64>,
    pub on_max_rounds: OnMaxRounds,
    pub fail_on: FailOn,
    pub retry: RetryPolicy,
}

impl LoopLimits {
    /// The limits as the transcript's start line records them, with the tool timeout the
    /// toolbox enforces.
    pub fn record(&self, tool_timeout: Duration) -> transcript::Limits {
        transcript::Limits {
            max_rounds: self.max_rounds,
            max_tokens: self.max_tokens,
            budget_tokens: self.budget_tokens,
            budget_usd: self.budget_usd,
            context_window: Some(self.context_window),
            timeout_secs: self.deadline.map(|t| t.as_secs_f64()),
            tool_timeout_secs: tool_timeout.as_secs_f64(),
            max_parallel: self.max_parallel,
            max_calls_per_round: Some(self.max_calls_per_round),
            max_repeats: Some(self.max_repeats),
        }
    }
}

/// The parts of a run the loop drives.
pub struct Agent {
    pub provider: Arc<dyn Provider>,
    pub toolbox: Arc<Toolbox>,
    pub system: String,
    pub limits: LoopLimits,
    /// Prompt caching asked of the provider, or none (`--no-cache`).
    pub cache: Option<Cache>,
    /// The model's price, when known: each round's cost, and `--budget-usd`.
    pub price: Option<Price>,
    /// `--output-schema`: what the final answer must be.
    pub output_schema: Option<OutputSchema>,
    pub observer: Arc<dyn Observer>,
}

/// How one round ended.
enum RoundEnd {
    Complete(Round),
    /// The provider failed for good; the partial round is kept when tools ran.
    Failed(Option<Round>, ProviderError),
    /// The run was cancelled; the partial round is kept when tools ran.
    Cancelled(Option<Round>),
}

/// Appended before the last call of `--on-max-rounds summarize`.
const SUMMARIZE: &str = "The round limit has been reached: do not call any more tools. Answer \
                         now, as completely as you can, from what you have found so far.";

impl Agent {
    /// Runs rounds until the model stops calling tools or a limit, a failure or `cancel` ends
    /// the run. `history` holds the conversation so far and grows with every round. A
    /// cancellation ends the run with the status its reason names; the deadline is the loop's
    /// own. The outcome's duration and transcript are the caller's to fill in.
    pub async fn run(
        &self,
        history: &mut Vec<Message>,
        records: &mut Records,
        cancel: &Cancel,
    ) -> Outcome {
        let _deadline = self
            .limits
            .deadline
            .map(|after| cancel::deadline(after, cancel.clone()));
        let mut done = Outcome::new(Status::MaxRounds, None);
        let offered = self.toolbox.offered();
        let fixed = self.system.len()
            + offered
                .iter()
                .map(|t| t.name.len() + t.description.len() + t.input_schema.to_string().len())
                .sum::<usize>();
        let mut context = context::Context::new(self.limits.context_window, fixed as u64);
        let mut next_input = estimate_tokens(history) + (self.system.len() / 4) as u64;
        let mut number = 0;
        let mut corrected = false;
        let mut repeats = guards::Repeats::new(self.limits.max_repeats);
        // A resumed conversation's calls count: resuming is no way out of being stuck.
        repeats.seed(history);
        loop {
            let summary = number == self.limits.max_rounds;
            if summary && self.limits.on_max_rounds == OnMaxRounds::Stop {
                return done;
            }
            if let Some(why) = self.over_budget_usd(&done, next_input) {
                return done.end(Status::Budget, why);
            }
            if let Some(budget) = self.limits.budget_tokens {
                let used = done.usage.total();
                if used.saturating_add(next_input) > budget {
                    return done.end(
                        Status::Budget,
                        format!(
                            "the token budget of {budget} would be exceeded: {used} used, the \
                             next request needs about {next_input} more"
                        ),
                    );
                }
            }
            if summary {
                history.push(Message::User(SUMMARIZE.to_owned()));
            }
            number += 1;
            self.observer.round_started(number);
            let (end, elided) = self
                .fitted_round(number, history, &offered, summary, &mut context, cancel)
                .await;
            let (round, failure) = match end {
                RoundEnd::Complete(round) => (Some(round), None),
                RoundEnd::Failed(partial, e) => (partial, Some(Err(e))),
                RoundEnd::Cancelled(partial) => (partial, Some(Ok(()))),
            };
            let Some(mut round) = round else {
                return finish_with(done, failure, cancel);
            };
            round.summary = summary;
            round.elided = elided;
            let stuck = repeats.check(&mut round);
            context.calibrate(history, round.usage.input_total());
            round.cost_usd = self.cost(&round.usage);
            done.rounds = number;
            done.usage.add(&round.usage);
            if let Some(cost) = round.cost_usd {
                done.cost_usd = Some(done.cost_usd.unwrap_or(0.0) + cost);
            }
            done.stop_reason = round.stop_reason;
            done.final_text = final_text(&round.blocks);
            for r in &round.results {
                done.tool_calls += 1;
                if let Some(kind) = r.error_kind {
                    *done.tool_errors.entry(kind).or_default() += 1;
                }
            }
            if let Err(e) = records.write(&Line::Round(round.clone())).await {
                return done.end(Status::Error, e);
            }
            self.observer.round_finished(&round);
            let tripped = self.tripped(&round.results);
            // The next request resends all of this one, its answer and the tool results.
            let results: u64 = round
                .results
                .iter()
                .map(|r| r.content.len() as u64 / 4)
                .sum();
            next_input = round.usage.total().saturating_add(results);
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
            }
            if failure.is_some() {
                return finish_with(done, failure, cancel);
            }
            if let Some(why) = tripped {
                return done.end(Status::ToolFailure, why);
            }
            if let Some(why) = stuck {
                return done.end(Status::Stuck, why);
            }
            if summary {
                return done;
            }
            if !has_calls && stop_reason != Some(StopReason::PauseTurn) {
                let Some(schema) = &self.output_schema else {
                    done.status = Status::Completed;
                    return done;
                };
                match schema.check(&done.final_text) {
                    Ok(value) => {
                        done.final_json = Some(value);
                        done.status = Status::Completed;
                        return done;
                    }
                    Err(errors) if corrected => {
                        return done.end(Status::Schema, errors.to_string());
                    }
                    Err(errors) => {
                        // One corrective turn, quoting what was wrong.
                        corrected = true;
                        history.push(Message::User(schema.corrective(&errors)));
                    }
                }
            }
        }
    }

    /// One round over `history` kept inside the context window: the oldest results are elided
    /// first when the request would not fit, and once more, harder, when the provider still
    /// refuses it as too long. Returns how the round ended and the ids elided for it.
    async fn fitted_round(
        &self,
        number: u32,
        history: &mut [Message],
        offered: &[&crate::conversation::ToolSpec],
        summary: bool,
        context: &mut context::Context,
        cancel: &Cancel,
    ) -> (RoundEnd, Vec<String>) {
        let mut elided = context.fit(history);
        let mut squeezed = false;
        loop {
            let request = Request {
                system: &self.system,
                messages: history,
                tools: offered,
                max_tokens: self.limits.max_tokens,
                tool_choice: if summary {
                    ToolChoice::None
                } else {
                    ToolChoice::Auto
                },
                cache: self.cache.as_ref(),
                output_schema: self.output_schema.as_ref().map(|s| &s.schema),
            };
            let end = self.round(number, &request, summary, cancel.token()).await;
            match end {
                RoundEnd::Failed(None, e) if e.is_context_overflow() && !squeezed => {
                    squeezed = true;
                    let more = context.fit_harder(history);
                    if more.is_empty() {
                        return (RoundEnd::Failed(None, e), elided);
                    }
                    tracing::warn!(
                        "{e}; retrying with {} more old tool results elided",
                        more.len()
                    );
                    elided.extend(more);
                }
                end => return (end, elided),
            }
        }
    }

    /// What `usage` cost, when the price is known.
    fn cost(&self, usage: &Usage) -> Option<f64> {
        let hour_long = self
            .cache
            .as_ref()
            .is_some_and(|c| c.ttl == crate::provider::CacheTtl::OneHour);
        self.price.map(|p| p.cost(usage, hour_long))
    }

    /// Why the next request, of about `next_input` tokens, would take the run past
    /// `--budget-usd`: priced as uncached input, the most it can cost before its answer.
    fn over_budget_usd(&self, done: &Outcome, next_input: u64) -> Option<String> {
        let (budget, price) = (self.limits.budget_usd?, self.price?);
        let spent = done.cost_usd.unwrap_or(0.0);
        let next = next_input as f64 * price.input / 1e6;
        (spent + next > budget).then(|| {
            format!(
                "the budget of ${budget} would be exceeded: ${spent:.4} spent, the next request \
                 costs about ${next:.4} more"
            )
        })
    }

    /// The `--fail-on` rule a round's results trip, if any.
    fn tripped(&self, results: &[ToolResult]) -> Option<String> {
        let fail = self.limits.fail_on;
        results.iter().find_map(|r| {
            let kind = r.error_kind?;
            // A tool the allowlist did not offer is as denied as a call outside its rule.
            let denied = matches!(kind, ErrorKind::Denied | ErrorKind::UnknownTool);
            let (hit, rule) = if denied {
                (fail.denied, "denied")
            } else {
                (fail.tool_error, "tool-error")
            };
            hit.then(|| {
                format!(
                    "--fail-on {rule}: {} ({kind:?}): {}",
                    r.name,
                    first_line(&r.content)
                )
            })
        })
    }

    /// One round: stream the response, starting each tool call as soon as it is complete, then
    /// wait for the calls. Retries transient provider failures; when a failure comes after
    /// tool calls already started, those calls are finished and kept, and the round ends there
    /// (marked with the error) so the conversation continues from what really happened.
    async fn round(
        &self,
        number: u32,
        request: &Request<'_>,
        summary: bool,
        cancel: &CancellationToken,
    ) -> RoundEnd {
        let time = now_rfc3339();
        let started = Instant::now();
        let mut retries = Vec::new();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut scheduler = Scheduler::new(
                self.toolbox.clone(),
                self.limits.max_parallel,
                cancel.child_token(),
                self.observer.clone(),
            );
            let mut streamed = Streamed::new(self.limits.max_calls_per_round);
            let outcome = self
                .stream(request, summary, &mut scheduler, &mut streamed, cancel)
                .await;
            let calls_started = scheduler.has_calls();
            let round = |mut streamed: Streamed,
                         results: Vec<ToolResult>,
                         tools: std::time::Duration,
                         retries| {
                streamed.guard.close();
                Round {
                    round: number,
                    time: time.clone(),
                    blocks: streamed.blocks,
                    results,
                    stop_reason: streamed.stop,
                    usage: streamed.usage,
                    model_ms: started.elapsed().as_millis() as u64,
                    tools_ms: tools.as_millis() as u64,
                    retries,
                    error: None,
                    summary: false,
                    elided: vec![],
                    guards: streamed.guard.notes,
                    cost_usd: None,
                }
            };
            match outcome {
                Ok(()) => {
                    let (results, tools) = scheduler.finish().await;
                    return RoundEnd::Complete(round(streamed, results, tools, retries));
                }
                Err(Stop::Cancelled) => {
                    scheduler.cancel();
                    let (results, tools) = scheduler.finish().await;
                    let keep = !results.is_empty();
                    return RoundEnd::Cancelled(
                        keep.then(|| round(streamed, results, tools, retries)),
                    );
                }
                Err(Stop::Failed(e)) => {
                    let delay = self.limits.retry.delay(&e, attempt);
                    if calls_started {
                        // Their effects happened: keep them rather than run them twice.
                        let (results, tools) = scheduler.finish().await;
                        let mut partial = round(streamed, results, tools, retries);
                        if delay.is_none() {
                            return RoundEnd::Failed(Some(partial), e);
                        }
                        partial.error = Some(format!(
                            "the response broke off ({e}); the calls that had started were kept"
                        ));
                        return RoundEnd::Complete(partial);
                    }
                    scheduler.cancel();
                    let Some(delay) = delay else {
                        return RoundEnd::Failed(None, e);
                    };
                    let note = RetryNote {
                        round: number,
                        attempt,
                        error: e.to_string(),
                        delay_ms: delay.as_millis() as u64,
                    };
                    tracing::warn!(
                        "{e}; retrying in {:.1}s (attempt {} of {})",
                        delay.as_secs_f64(),
                        attempt + 1,
                        self.limits.retry.max_retries + 1
                    );
                    self.observer.retry(&note);
                    retries.push(note);
                    tokio::select! {
                        () = tokio::time::sleep(delay) => {}
                        () = cancel.cancelled() => return RoundEnd::Cancelled(None),
                    }
                }
            }
        }
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
                StreamEvent::TextDelta(t) => self.observer.text_delta(&t),
                StreamEvent::ThinkingDelta(t) => self.observer.thinking_delta(&t),
                StreamEvent::Block(block) => {
                    if let Block::ToolUse(call) = &block {
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
                    out.blocks.push(block);
                }
                StreamEvent::Usage(u) => out.usage = u,
                StreamEvent::Done(reason) => out.stop = Some(reason),
            }
        }
    }
}

/// What one attempt streamed, and what its guards did.
struct Streamed {
    blocks: Vec<Block>,
    usage: Usage,
    stop: Option<StopReason>,
    guard: guards::Response,
}

impl Streamed {
    fn new(max_calls: u32) -> Streamed {
        Streamed {
            blocks: Vec::new(),
            usage: Usage::default(),
            stop: None,
            guard: guards::Response::new(max_calls),
        }
    }
}

enum Stop {
    Failed(ProviderError),
    Cancelled,
}

/// Ends the run after a round that failed (`Err`) or was cancelled (`Ok`), with the status the
/// cancellation's reason names.
fn finish_with(
    done: Outcome,
    failure: Option<Result<(), ProviderError>>,
    cancel: &Cancel,
) -> Outcome {
    match failure {
        Some(Err(e)) => done.end(Status::Error, e.to_string()),
        Some(Ok(())) => match cancel.reason() {
            Some((status, why)) => done.end(status, why),
            None => done.end(Status::Error, "the run was cancelled"),
        },
        None => done,
    }
}

/// A rough token count for text the model will read (about four bytes a token).
fn estimate_tokens(history: &[Message]) -> u64 {
    history
        .iter()
        .map(|m| match m {
            Message::User(t) => t.len(),
            _ => 0,
        })
        .sum::<usize>() as u64
        / 4
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
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
