//! The round loop: ask the model, run the tools it asks for while it is still streaming, feed
//! the results back, and stop when it stops asking, a limit is hit, something fails, or the run
//! is cancelled (deadline or signal).

use std::sync::Arc;

use crate::attachment::TokenRule;
use crate::conversation::{Block, ErrorKind, Message, StopReason, ToolResult, Usage};
use crate::outcome::{Failure, FailureRecord, Outcome, Status};
use crate::pricing::Price;
use crate::provider::{Cache, Provider, ProviderError, Request, ToolChoice};
use crate::records::Records;
use crate::redact::Redactor;
use crate::tools::pipeline::Toolbox;
use crate::transcript::{AgentRef, AgentRound, Line, Round};

mod answer;
mod cancel;
mod check;
mod context;
pub(crate) mod delegate;
mod guards;
mod limits;
mod observer;
mod round;
pub(crate) mod scheduler;
mod spend;
mod text_edits;

pub(crate) use answer::OutputSchema;
pub(crate) use cancel::Cancel;
use check::Answer;
pub(crate) use limits::{FailOn, LoopLimits, OnMaxRounds};
pub(crate) use observer::Quiet;
pub(crate) use observer::{Fanout, Observer};
pub(crate) use spend::Spend;

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
    /// The run's secrets: the model's text, thinking and tool calls, and every error, are
    /// redacted as they arrive, before any observer, record or later request sees them.
    pub(crate) redactor: Redactor,
    /// What the run has spent, its subagents included: the budgets are checked against it.
    pub(crate) spend: Arc<Spend>,
    /// Which subagent this is (`None`: the run itself): its rounds are recorded as its lines.
    pub(crate) at: Option<AgentRef>,
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
    /// cancellation ends the run with the status its reason names. The loop arms the deadline
    /// from its own start only as a floor: `app` arms it from rounds' start (stdin and setup
    /// count), so there the loop finds the run already cancelled. The outcome's duration and
    /// transcript are the caller's to fill in. The run's outcome counts what its subagents
    /// spent.
    pub(crate) async fn run(
        &self,
        history: &mut Vec<Message>,
        records: &Records,
        cancel: &Cancel,
    ) -> Outcome {
        let mut done = self.run_rounds(history, records, cancel).await;
        if self.at.is_none() {
            self.spend.roll_up(&mut done);
        }
        done
    }

    async fn run_rounds(
        &self,
        history: &mut Vec<Message>,
        records: &Records,
        cancel: &Cancel,
    ) -> Outcome {
        let deadline = self.limits.deadline;
        let _deadline = deadline.map(|after| cancel::deadline(after, cancel.clone()));
        let mut done = Outcome::new(Status::MaxRounds, None);
        let offered = self.toolbox.offered();
        let mut context = self.context(&offered);
        let mut next_input = self.first_request(history);
        let mut number = 0;
        let mut corrected = false;
        let mut repeats = guards::Repeats::new(self.limits.max_repeats);
        // A resumed conversation's calls count: resuming is no way out of being stuck.
        self.toolbox.restore_volatile(history);
        repeats.seed(history);
        let mut checks = check::Checks::new(self.limits.check.clone(), self.limits.max_checks);
        loop {
            let summary = number == self.limits.max_rounds;
            if summary && self.limits.on_max_rounds == OnMaxRounds::Stop {
                return done;
            }
            if let Some(why) = self.over_budget(next_input) {
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
            self.count(&mut done, &round);
            if let Err(e) = records.write(&self.line(&round)).await {
                return done.fail(FailureRecord::new(Failure::Write, None), e);
            }
            self.observer.round_finished(&round);
            let tripped = self.tripped(&round.results);
            next_input = next_request(&round, self.token_rule());
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

    /// About how many tokens the first request over `history` takes, the system prompt included.
    fn first_request(&self, history: &[Message]) -> u64 {
        estimate_tokens(history, self.token_rule()) + (self.system.len() / 4) as u64
    }

    /// How the run's provider bills images and PDFs.
    fn token_rule(&self) -> TokenRule {
        let wire = crate::providers::find(self.provider.name()).map(|e| e.wire);
        TokenRule::of(wire, self.provider.model())
    }

    /// A finished round as its line: the run's `round`, or its subagent's `agent_round`.
    fn line(&self, round: &Round) -> Line {
        match &self.at {
            None => Line::Round(round.clone()),
            Some(at) => Line::AgentRound(AgentRound {
                at: at.clone(),
                round: round.clone(),
            }),
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
        context::Context::new(self.limits.context_window, fixed as u64, self.token_rule())
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
    fn over_budget(&self, next_input: u64) -> Option<String> {
        if let Some(why) = self.over_budget_usd(next_input) {
            return Some(why);
        }
        let budget = self.limits.budget_tokens?;
        let used = self.spend.tokens();
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
                        "{}; retrying with {} more old tool results elided",
                        self.redactor.redacted(e.to_string()),
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
    fn over_budget_usd(&self, next_input: u64) -> Option<String> {
        let (budget, price) = (self.limits.budget_usd?, self.price?);
        let spent = self.spend.cost();
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

impl Agent {
    /// Adds a round to the run's totals (usage, cost, calls and their errors, the answer so
    /// far) and to what the run has spent, its subagents included.
    fn count(&self, done: &mut Outcome, round: &Round) {
        self.spend
            .add(&round.usage, round.cost_usd, self.at.is_some());
        count(done, round);
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
fn next_request(round: &Round, rule: TokenRule) -> u64 {
    let results: u64 = round
        .results
        .iter()
        .map(|r| {
            let media: u64 = r.media.iter().map(|m| m.tokens(rule)).sum();
            r.content.len() as u64 / 4 + media
        })
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

/// A rough token count for what the user gave the model (about four bytes a token of text,
/// and what the providers bill an attachment as).
fn estimate_tokens(history: &[Message], rule: TokenRule) -> u64 {
    history
        .iter()
        .map(|m| match m {
            Message::User(t) => t.len() as u64 / 4,
            Message::Attached { attachments, text } => {
                text.len() as u64 / 4 + attachments.iter().map(|a| a.tokens(rule)).sum::<u64>()
            }
            _ => 0,
        })
        .sum()
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
