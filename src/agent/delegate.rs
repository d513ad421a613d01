//! Subagents: a `task` call runs a nested loop — the same engine, the run's provider (or the
//! agent's model on it) — over a fresh conversation, and its final answer is the call's result.
//!
//! Never more than the run: the subagent's toolbox is the caller's narrowed by the agent's
//! rules (`Policy::within`: both must allow a call, either's deny wins), with the same sandbox,
//! hooks and workspace; its rounds, tokens and money come out of the run's (one `Spend`, one
//! `Cancel` reason); and it may delegate further only below `--max-depth`. Its lines go into the
//! run's transcript as they happen (`agent_start`, `agent_round`, `agent_end`). A subagent that
//! fails or stops at its own limit is an error result the caller's model reads; a shared limit
//! (the budget, the deadline, a signal) ends the run with that status.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::{Agent, Cancel, LoopLimits, Observer, OnMaxRounds, Quiet, Spend};
use crate::conversation::{Message, ToolUse};
use crate::outcome::{Outcome, Status};
use crate::pricing::Price;
use crate::provider::{Cache, Provider};
use crate::records::Records;
use crate::redact::Redactor;
use crate::tools::delegate::{GENERAL, TASK, TaskInput};
use crate::tools::pipeline::{Delegate, Toolbox};
use crate::tools::{Class, ToolError};
use crate::transcript::{AgentEnd, AgentRef, AgentStart, Line};

/// What a subagent's own system prompt starts with, after the run's: who reads its answer.
const PREAMBLE: &str = "You are a subagent: another agent handed you the task below. Work on \
                        it with your tools, then answer with everything the task asks for, \
                        completely and concisely: your final answer is all the other agent \
                        sees of your work.";

/// A model an agent names, on the run's provider.
#[derive(Clone)]
pub(crate) struct Model {
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) price: Option<Price>,
    pub(crate) context_window: u64,
}

/// One agent, as the user (or, within the trust rules, the project) defined it.
#[derive(Clone)]
pub(crate) struct Definition {
    /// Added to the run's system prompt.
    pub(crate) prompt: String,
    /// Allow rules inside the run's; `None` keeps the run's tools (but not `task`).
    pub(crate) tools: Option<Vec<String>>,
    pub(crate) deny: Vec<String>,
    pub(crate) max_rounds: Option<u32>,
    /// Its own model on the run's provider (`None`: the run's).
    pub(crate) model: Option<Model>,
}

impl Definition {
    /// `general`: the run's tools and model, no prompt of its own.
    pub(crate) fn general() -> Definition {
        Definition {
            prompt: String::new(),
            tools: None,
            deny: Vec::new(),
            max_rounds: None,
            model: None,
        }
    }
}

/// What every subagent of a run shares with it.
pub(crate) struct Shared {
    pub(crate) agents: BTreeMap<String, Definition>,
    /// How each agent's calls are scheduled (see `Delegate::class`).
    pub(crate) classes: BTreeMap<String, Class>,
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) price: Option<Price>,
    /// The run's system prompt, which a subagent's starts with.
    pub(crate) system: String,
    /// The workspace root and the project's instructions, as a subagent's first turn has them.
    pub(crate) workspace: String,
    pub(crate) project_docs: Vec<(String, String)>,
    pub(crate) limits: LoopLimits,
    pub(crate) cache: Option<Cache>,
    pub(crate) redactor: Redactor,
    pub(crate) records: Arc<Records>,
    /// The run's: a subagent's is inside it.
    pub(crate) cancel: Cancel,
    pub(crate) spend: Arc<Spend>,
    /// `--max-depth`: how deep subagents may nest (1: only the run delegates).
    pub(crate) max_depth: u32,
}

/// The delegate of one agent (the run, or a subagent below the depth limit): runs its `task`
/// calls.
pub(crate) struct Delegation {
    shared: Arc<Shared>,
    /// The caller's depth (0: the run) and the `task` calls that lead to it.
    depth: u32,
    path: String,
    /// The caller's observer: each subagent's is scoped from it.
    observer: Arc<dyn Observer>,
}

impl Delegation {
    /// The run's delegate.
    pub(crate) fn new(shared: Arc<Shared>, observer: Arc<dyn Observer>) -> Delegation {
        Delegation {
            shared,
            depth: 0,
            path: String::new(),
            observer,
        }
    }

    fn definition(&self, agent: &str) -> Option<Definition> {
        match self.shared.agents.get(agent) {
            Some(defined) => Some(defined.clone()),
            None if agent == GENERAL => Some(Definition::general()),
            None => None,
        }
    }

    /// The names a call may use, for an error.
    fn names(&self) -> String {
        let mut names = vec![GENERAL];
        names.extend(self.shared.agents.keys().map(String::as_str));
        names.join(", ")
    }
}

#[async_trait]
impl Delegate for Delegation {
    fn class(&self, agent: &str) -> Class {
        self.shared
            .classes
            .get(agent)
            .copied()
            .unwrap_or(Class::Mutating)
    }

    async fn delegate(
        &self,
        parent: &Toolbox,
        call: &ToolUse,
        task: TaskInput,
        cancel: CancellationToken,
    ) -> Result<String, ToolError> {
        let name = task.agent().to_owned();
        let Some(definition) = self.definition(&name) else {
            return Err(ToolError::Failed(format!(
                "no agent {name:?}; the agents are: {}",
                self.names()
            )));
        };
        let at = AgentRef {
            call: match self.path.as_str() {
                "" => call.id.clone(),
                path => format!("{path}/{}", call.id),
            },
            agent: name.clone(),
            depth: self.depth + 1,
        };
        let (agent, start) = self.subagent(parent, &definition, at.clone(), &task)?;
        let shared = &self.shared;
        let records = &shared.records;
        records
            .write(&Line::AgentStart(start.clone()))
            .await
            .map_err(|e| ToolError::Failed(format!("the subagent could not start: {e}")))?;
        agent.observer.agent_started(&start);
        let started = Instant::now();
        let mut history = vec![Message::User(start.prompt)];
        let outcome = agent
            .run(&mut history, records, &shared.cancel.within(cancel))
            .await;
        let end = ended(at, &outcome, started);
        let recorded = records.write(&Line::AgentEnd(end.clone())).await;
        agent.observer.agent_finished(&end);
        if outcome.status == Status::Budget {
            // The budget is the run's: it ends the run (and every other subagent) too.
            let why = outcome.error.clone().unwrap_or_default();
            shared
                .cancel
                .cancel(Status::Budget, format!("subagent {name}: {why}"));
        }
        recorded.map_err(|e| ToolError::Failed(format!("the subagent's record failed: {e}")))?;
        answer(&name, outcome, agent.limits.max_rounds)
    }
}

impl Delegation {
    /// The subagent `at` of `definition` for `task`, and its start line: its toolbox narrowed
    /// from the caller's, its model, system prompt, first turn and limits.
    fn subagent(
        &self,
        parent: &Toolbox,
        definition: &Definition,
        at: AgentRef,
        task: &TaskInput,
    ) -> Result<(Agent, AgentStart), ToolError> {
        let shared = &self.shared;
        let observer = self.observer.scoped(&at).unwrap_or_else(|| Arc::new(Quiet));
        // Below the depth limit a subagent may delegate in turn (if its rules name `task`);
        // at it, `task` is denied, whatever the agent's rules say.
        let mut deny = definition.deny.clone();
        let deeper = (at.depth < shared.max_depth).then(|| {
            Arc::new(Delegation {
                shared: shared.clone(),
                depth: at.depth,
                path: at.call.clone(),
                observer: observer.clone(),
            }) as Arc<dyn Delegate>
        });
        if deeper.is_none() {
            deny.push(TASK.to_owned());
        }
        let policy = parent
            .narrow(definition.tools.as_deref(), &deny)
            .map_err(|e| ToolError::Failed(format!("agent {:?}: {e}", at.agent)))?;
        let toolbox = Arc::new(parent.narrowed(policy, deeper, &format!("{}/", at.call)));
        let (chosen, price, context_window) = match &definition.model {
            Some(m) => (m.provider.clone(), m.price, m.context_window),
            None => (
                shared.provider.clone(),
                shared.price,
                shared.limits.context_window,
            ),
        };
        // A recording plays the subagent's own rounds to it.
        let provider = chosen.for_subagent(&at).unwrap_or(chosen);
        let base = shared.system.trim_end();
        let system = match definition.prompt.trim() {
            "" => format!("{base}\n\n{PREAMBLE}"),
            own => format!("{base}\n\n{PREAMBLE}\n\n{own}"),
        };
        let mut turn =
            crate::transcript::turn::compose(&shared.workspace, &shared.project_docs, &task.prompt);
        shared.redactor.redact(&mut turn);
        let limits = LoopLimits {
            max_rounds: definition.max_rounds.unwrap_or(shared.limits.max_rounds),
            // The run's deadline reaches it through the cancellation.
            deadline: None,
            context_window,
            check: None,
            // Its best answer at its round limit, which the caller still gets as an error.
            on_max_rounds: OnMaxRounds::Summarize,
            ..shared.limits.clone()
        };
        let start = AgentStart {
            at: at.clone(),
            time: super::now_rfc3339(),
            description: task.description.clone(),
            model: provider.model().to_owned(),
            tools: toolbox.offered().iter().map(|t| t.name.clone()).collect(),
            system: system.clone(),
            prompt: turn,
        };
        let agent = Agent {
            provider,
            toolbox,
            system,
            limits,
            cache: shared.cache.clone(),
            price,
            output_schema: None,
            observer,
            redactor: shared.redactor.clone(),
            spend: shared.spend.clone(),
            at: Some(at),
        };
        Ok((agent, start))
    }
}

/// The `agent_end` line of a subagent's outcome.
fn ended(at: AgentRef, outcome: &Outcome, started: Instant) -> AgentEnd {
    AgentEnd {
        at,
        status: outcome.status,
        rounds: outcome.rounds,
        usage: outcome.usage,
        cost_usd: outcome.cost_usd,
        tool_calls: outcome.tool_calls,
        duration_ms: started.elapsed().as_millis() as u64,
        error: outcome.error.clone(),
    }
}

/// The call's result: the subagent's answer, or why there is none, with what it said so far.
fn answer(name: &str, outcome: Outcome, max_rounds: u32) -> Result<String, ToolError> {
    let text = outcome.final_text.trim();
    let so_far = if text.is_empty() {
        String::new()
    } else {
        format!("\nIts answer so far:\n{text}")
    };
    match outcome.status {
        Status::Completed if !text.is_empty() => Ok(outcome.final_text),
        Status::Completed => Err(ToolError::Failed(format!(
            "the subagent {name} finished without an answer"
        ))),
        Status::MaxRounds => Err(ToolError::Failed(format!(
            "the subagent {name} reached its round limit ({max_rounds}) before it finished.{so_far}"
        ))),
        Status::Timeout => Err(ToolError::TimedOut(format!(
            "the subagent {name} was stopped: {}.{so_far}",
            outcome
                .error
                .as_deref()
                .unwrap_or("the run's deadline passed")
        ))),
        status => Err(ToolError::Failed(format!(
            "the subagent {name} ended with {}: {}.{so_far}",
            status.as_str(),
            outcome.error.as_deref().unwrap_or("no reason given")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_the_result_and_every_other_ending_an_error_with_what_was_said() {
        let mut done = Outcome::new(Status::Completed, None);
        done.final_text = "two bugs".into();
        assert_eq!(answer("general", done.clone(), 9).unwrap(), "two bugs");
        done.status = Status::MaxRounds;
        done.rounds = 6;
        let e = answer("reviewer", done.clone(), 5).unwrap_err().to_string();
        assert!(
            e.contains("round limit (5)") && e.contains("two bugs"),
            "{e}"
        );
        let mut silent = Outcome::new(Status::Completed, None);
        silent.final_text = " ".into();
        assert!(answer("general", silent, 9).is_err());
        let failed = Outcome::new(Status::Unavailable, Some("HTTP 503".into()));
        let e = answer("general", failed, 9).unwrap_err().to_string();
        assert!(e.contains("unavailable: HTTP 503"), "{e}");
        let late = Outcome::new(Status::Timeout, None);
        assert!(matches!(
            answer("general", late, 9),
            Err(ToolError::TimedOut(_))
        ));
    }
}
