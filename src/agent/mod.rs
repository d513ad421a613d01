//! The round loop: ask the model, run the tools it asks for while it is still streaming, feed
//! the results back, and stop when it stops asking, a limit is hit, something fails, or the run
//! is cancelled (deadline or signal).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{FutureExt, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::conversation::{Block, ErrorKind, Message, StopReason, ToolResult, Usage};
use crate::outcome::{Failure, FailureRecord, Outcome, Status};
use crate::pricing::Price;
use crate::provider::{Cache, Provider, ProviderError, Request, StreamEvent, ToolChoice};
use crate::records::Records;
use crate::tools::pipeline::Toolbox;
use crate::transcript::{Line, RetryNote, Round};

mod answer;
mod cancel;
mod check;
mod context;
mod guards;
mod limits;
mod observer;
pub(crate) mod scheduler;

pub(crate) use answer::OutputSchema;
pub(crate) use cancel::Cancel;
use check::Answer;
pub(crate) use limits::{FailOn, LoopLimits, OnMaxRounds};
#[cfg(test)]
pub(crate) use observer::Quiet;
pub(crate) use observer::{Fanout, Observer};
use scheduler::Scheduler;

/// The parts of a run the loop drives.
pub(crate) struct Agent {
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) toolbox: Arc<Toolbox>,
    pub(crate) system: String,
    pub(crate) limits: LoopLimits,
    /// Prompt caching asked of the provider, or none (`--no-cache`).
    pub(crate) cache: Option<Cache>,
    /// The model's price, when known: each round's cost, and `--budget-usd`.
    pub(crate) price: Option<Price>,
    /// `--output-schema`: what the final answer must be.
    pub(crate) output_schema: Option<OutputSchema>,
    pub(crate) observer: Arc<dyn Observer>,
}

/// How one round ended: its record (when the model answered, or tools ran before a failure or
/// the cancellation), and what stopped the run, if anything did.
struct RoundEnd {
    round: Option<Round>,
    stop: Option<Stop>,
}

impl RoundEnd {
    fn complete(round: Round) -> RoundEnd {
        RoundEnd {
            round: Some(round),
            stop: None,
        }
    }
}

/// Appended before the last call of `--on-max-rounds summarize`.
const SUMMARIZE: &str = "The round limit has been reached: do not call any more tools. Answer \
                         now, as completely as you can, from what you have found so far.";

impl Agent {
    /// Runs rounds until the model stops calling tools or a limit, a failure or `cancel` ends
    /// the run. `history` holds the conversation so far and grows with every round. A
    /// cancellation ends the run with the status its reason names; the deadline is the loop's
    /// own. The outcome's duration and transcript are the caller's to fill in.
    pub(crate) async fn run(
        &self,
        history: &mut Vec<Message>,
        records: &mut Records,
        cancel: &Cancel,
    ) -> Outcome {
        let deadline = self.limits.deadline;
        let _deadline = deadline.map(|after| cancel::deadline(after, cancel.clone()));
        let mut done = Outcome::new(Status::MaxRounds, None);
        let offered = self.toolbox.offered();
        let mut context = self.context(&offered);
        let mut next_input = estimate_tokens(history) + (self.system.len() / 4) as u64;
        let mut number = 0;
        let mut corrected = false;
        let mut repeats = guards::Repeats::new(self.limits.max_repeats);
        // A resumed conversation's calls count: resuming is no way out of being stuck.
        repeats.seed(history);
        let mut checks = check::Checks::new(self.limits.check.clone(), self.limits.max_checks);
        loop {
            let summary = number == self.limits.max_rounds;
            if summary && self.limits.on_max_rounds == OnMaxRounds::Stop {
                return done;
            }
            if let Some(why) = self.over_budget(&done, next_input) {
                return done.end(Status::Budget, why);
            }
            if summary {
                history.push(Message::User(SUMMARIZE.to_owned()));
            }
            number += 1;
            self.observer.round_started(number);
            let (RoundEnd { round, stop }, elided) = self
                .fitted_round(number, history, &offered, summary, &mut context, cancel)
                .await;
            let Some(mut round) = round else {
                return stopped(done, stop, cancel);
            };
            round.summary = summary;
            round.elided = elided;
            let stuck = repeats.check(&mut round);
            context.calibrate(history, round.usage.input_total());
            round.cost_usd = self.cost(&round.usage);
            done.rounds = number;
            let may_check = stuck.is_none() && !summary;
            let (verdict, stop) = self
                .judge(&mut round, &mut checks, stop, may_check, cancel)
                .await;
            count(&mut done, &round);
            if let Err(e) = records.write(&Line::Round(round.clone())).await {
                return done.fail(FailureRecord::new(Failure::Write, None), e);
            }
            self.observer.round_finished(&round);
            let tripped = self.tripped(&round.results);
            next_input = next_request(&round);
            let (has_calls, stop_reason) = self.remember(history, round);
            if stop.is_some() {
                return stopped(done, stop, cancel);
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
                match self.answered(&mut done, history, &mut corrected, verdict) {
                    Answer::Accepted => {
                        done.status = Status::Completed;
                        return done;
                    }
                    Answer::Ended(status, why) => return done.end(status, why),
                    Answer::Corrected => {}
                }
            }
        }
    }

    /// The context window's account, with what every request carries: the system prompt and
    /// the tool definitions.
    fn context(&self, offered: &[&crate::conversation::ToolSpec]) -> context::Context {
        let fixed = self.system.len()
            + offered
                .iter()
                .map(|t| t.name.len() + t.description.len() + t.input_schema.to_string().len())
                .sum::<usize>();
        context::Context::new(self.limits.context_window, fixed as u64)
    }

    /// The round's blocks and results, into the conversation; whether it called tools, and
    /// why the response stopped.
    fn remember(&self, history: &mut Vec<Message>, round: Round) -> (bool, Option<StopReason>) {
        let Round {
            blocks,
            results,
            stop_reason,
            ..
        } = round;
        let has_calls = !results.is_empty();
        history.push(Message::Assistant {
            blocks,
            provider: crate::providers::signer(self.provider.name(), self.provider.model()),
        });
        if has_calls {
            history.push(Message::ToolResults(results));
        }
        (has_calls, stop_reason)
    }

    /// Why the next request, of about `next_input` tokens, would take the run past a budget.
    fn over_budget(&self, done: &Outcome, next_input: u64) -> Option<String> {
        if let Some(why) = self.over_budget_usd(done, next_input) {
            return Some(why);
        }
        let budget = self.limits.budget_tokens?;
        let used = done.usage.total();
        (used.saturating_add(next_input) > budget).then(|| {
            format!(
                "the token budget of {budget} would be exceeded: {used} used, the next request \
                 needs about {next_input} more"
            )
        })
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
                RoundEnd {
                    round: None,
                    stop: Some(Stop::Failed(e)),
                } if e.is_context_overflow() && !squeezed => {
                    squeezed = true;
                    let more = context.fit_harder(history);
                    let e = Stop::Failed(e);
                    if more.is_empty() {
                        let end = RoundEnd {
                            round: None,
                            stop: Some(e),
                        };
                        return (end, elided);
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
                    "--fail-on {rule}: {} ({}): {}",
                    r.name,
                    kind.words(),
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
            let mut streamed = Streamed::new(self.limits.max_calls_per_round);
            let outcome = self
                .stream(request, summary, &mut scheduler, &mut streamed, cancel)
                .await;
            let e = match outcome {
                Ok(()) => {
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
                partial.error = Some(format!(
                    "the response broke off ({e}); the calls that had started were kept"
                ));
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
        let note = RetryNote {
            round: record.number,
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
                    self.observer.text_delta(&t);
                    out.partial.push_str(&t);
                }
                StreamEvent::ThinkingDelta(t) => self.observer.thinking_delta(&t),
                StreamEvent::Block(block) => {
                    if matches!(block, Block::Text { .. }) {
                        out.partial.clear();
                    }
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
struct Streamed {
    blocks: Vec<Block>,
    /// Text deltas of a text block not complete yet.
    partial: String,
    usage: Usage,
    stop: Option<StopReason>,
    guard: guards::Response,
}

impl Streamed {
    fn new(max_calls: u32) -> Streamed {
        Streamed {
            blocks: Vec::new(),
            partial: String::new(),
            usage: Usage::default(),
            stop: None,
            guard: guards::Response::new(max_calls),
        }
    }

    /// Makes the text of a block cut off mid-stream a block of its own; whether there was any.
    fn keep_partial(&mut self) -> bool {
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

/// What stopped a response early.
enum Stop {
    /// The provider failed for good.
    Failed(ProviderError),
    /// The run was cancelled (a signal, the deadline, stdout gone).
    Cancelled,
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Failed(e) => e.fmt(f),
            Stop::Cancelled => f.write_str("cancelled"),
        }
    }
}

/// Ends the run after a round that failed (with its failure's status: unavailable when retrying
/// later may succeed) or was cancelled (with the status the cancellation's reason names).
fn stopped(done: Outcome, stop: Option<Stop>, cancel: &Cancel) -> Outcome {
    match stop {
        Some(Stop::Failed(e)) => done.fail(e.record(), e),
        Some(Stop::Cancelled) => match cancel.reason() {
            Some((status, why)) => done.end(status, why),
            None => done.end(Status::Error, "the run was cancelled"),
        },
        None => done,
    }
}

/// Adds a round to the run's totals: usage, cost, calls and their errors, the answer so far.
fn count(done: &mut Outcome, round: &Round) {
    done.usage.add(&round.usage);
    if let Some(cost) = round.cost_usd {
        done.cost_usd = Some(done.cost_usd.unwrap_or(0.0) + cost);
    }
    done.stop_reason = round.stop_reason;
    done.final_text = final_text(&round.blocks);
    if round.check.is_some() {
        done.check = round.check.clone();
    }
    for r in &round.results {
        done.tool_calls += 1;
        if let Some(kind) = r.error_kind {
            *done.tool_errors.entry(kind).or_default() += 1;
        }
    }
}

/// About how many tokens the next request takes: it resends all of this one, its answer and
/// the tool results, or the output of the check that failed.
fn next_request(round: &Round) -> u64 {
    let results: u64 = round
        .results
        .iter()
        .map(|r| r.content.len() as u64 / 4)
        .sum();
    let check = round
        .check
        .as_ref()
        .filter(|c| !c.passed)
        .map_or(0, |c| c.output.len() as u64 / 4);
    round
        .usage
        .total()
        .saturating_add(results)
        .saturating_add(check)
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
pub(crate) fn final_text(blocks: &[Block]) -> String {
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
pub(crate) fn now_rfc3339() -> String {
    let now = jiff::Timestamp::now();
    format!("{now:.3}")
}
