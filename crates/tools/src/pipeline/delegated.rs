//! Delegation in the pipeline: the [`Delegate`] a toolbox hands its `task` calls to (the loop's
//! crate implements it), and a subagent's toolbox, narrowed from its caller's.

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::Toolbox;
use crate::conversation::{ErrorKind, ToolResult, ToolUse};
use crate::delegate::TaskInput;
use crate::policy::{Policy, PolicyError};
use crate::{Class, ToolError};

/// Runs a subagent for a `task` call. Implemented by the loop's crate.
#[async_trait]
pub trait Delegate: Send + Sync {
    /// How a call to `agent` is scheduled: safe (side by side) when every tool the agent may
    /// call is safe, mutating (alone, in order) otherwise and for an agent it does not know.
    fn class(&self, agent: &str) -> Class;

    /// Runs the subagent to its end under `cancel` and returns its final answer, or why there
    /// is none (its failure, its limit) as the error the parent's model reads. `parent` is the
    /// toolbox of the run (or subagent) that called: the subagent's tools are narrowed from it.
    async fn delegate(
        &self,
        parent: &Toolbox,
        call: &ToolUse,
        task: TaskInput,
        cancel: CancellationToken,
    ) -> Result<String, ToolError>;
}

/// The agents' classes, for a `Delegate` to answer `class` from: an agent is safe when every
/// tool its policy offers is.
pub fn class_under(toolbox: &Toolbox, policy: &crate::policy::Policy) -> Class {
    let all_safe = toolbox
        .registry()
        .specs()
        .filter(|s| policy.offers(&s.name))
        .all(|s| s.class == Class::Safe);
    if all_safe {
        Class::Safe
    } else {
        Class::Mutating
    }
}

impl Toolbox {
    /// Hands the toolbox's `task` calls to `delegate` (set once, when the run is wired: the
    /// delegate needs what the toolbox is part of).
    pub fn delegate_to(&self, delegate: Arc<dyn Delegate>) {
        let _ = self.delegate.set(delegate);
    }

    /// A subagent's toolbox: the same tools, workspace, sandbox, hooks, limits and saved
    /// outputs, under `policy` (see [`Toolbox::narrow`]), with `delegate` for its own `task`
    /// calls, if it may make any; `scope` names it among the run's saved outputs (`t1/`).
    pub fn narrowed(
        &self,
        policy: Policy,
        delegate: Option<Arc<dyn Delegate>>,
        scope: &str,
    ) -> Toolbox {
        Toolbox {
            registry: self.registry.clone(),
            policy: Arc::new(policy),
            workspace: self.workspace.clone(),
            timeout: self.timeout,
            max_result_bytes: self.max_result_bytes,
            env: self.env.clone(),
            outputs: self.outputs.clone(),
            hooks: self.hooks.clone(),
            sandbox: self.sandbox.clone(),
            redactor: self.redactor.clone(),
            images: self.images,
            delegate: delegate.map(OnceLock::from).unwrap_or_default(),
            scope: scope.to_owned(),
        }
    }

    /// This toolbox's policy narrowed by a subagent's rules (see [`Policy::within`]).
    pub fn narrow(&self, allow: Option<&[String]>, deny: &[String]) -> Result<Policy, PolicyError> {
        let known: Vec<&str> = self.registry.names().collect();
        Policy::within(self.policy.clone(), allow, deny, &known)
    }

    /// A `task` call, handed to the run's delegate. No tool timeout: the subagent is bounded by
    /// the run's deadline and budgets and its own round limit, and stops when `cancel` does.
    pub(super) async fn delegated(
        &self,
        call: &ToolUse,
        input: Value,
        cancel: CancellationToken,
    ) -> ToolResult {
        let Some(delegate) = self.delegate.get() else {
            return ToolResult::error(
                call,
                ErrorKind::Denied,
                "task is not available here: a subagent cannot delegate further unless the user \
                 raises --max-depth",
            );
        };
        let task: TaskInput = match serde_json::from_value(input) {
            Ok(task) => task,
            Err(e) => return ToolResult::error(call, ErrorKind::Schema, e.to_string()),
        };
        // Not raced against `cancel`: the subagent stops on it by itself, and finishes its
        // record (its last round, its end line) before it returns.
        let ran = delegate.delegate(self, call, task, cancel.clone()).await;
        match ran {
            Ok(answer) => ToolResult::ok(call, answer),
            Err(e) if cancel.is_cancelled() => {
                ToolResult::error(call, ErrorKind::Cancelled, e.to_string())
            }
            Err(ToolError::TimedOut(message)) => {
                ToolResult::error(call, ErrorKind::Timeout, message)
            }
            Err(e) => ToolResult::error(call, ErrorKind::Failed, e.to_string()),
        }
    }
}
