//! The per-call pipeline: defects → known tool → schema → allowlist → execute (timeout,
//! cancellation). Every failure along the way becomes an error result the model can read and
//! react to; nothing here can end the run.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::policy::{Decision, Policy, Subject};
use super::{Class, Registry, ToolContext, ToolError, ToolSpec, Workspace};
use crate::conversation::{CallDefect, ErrorKind, ToolResult, ToolUse};

/// The tools of one run with the rules and limits that govern them.
pub struct Toolbox {
    registry: Registry,
    policy: Policy,
    workspace: Arc<Workspace>,
    timeout: Duration,
}

impl Toolbox {
    pub fn new(
        registry: Registry,
        policy: Policy,
        workspace: Workspace,
        timeout: Duration,
    ) -> Toolbox {
        Toolbox {
            registry,
            policy,
            workspace: Arc::new(workspace),
            timeout,
        }
    }

    /// The tools offered to the model, in registration order.
    pub fn offered(&self) -> Vec<&ToolSpec> {
        self.registry
            .specs()
            .filter(|s| self.policy.offers(&s.name))
            .collect()
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// How a call must be scheduled. Calls that will fail before executing anything are safe;
    /// when unsure, mutating.
    pub fn class_of(&self, call: &ToolUse) -> Class {
        match self.registry.get(&call.name) {
            Some(entry) if call.defect.is_none() && self.policy.offers(&call.name) => {
                entry.tool.spec().class
            }
            _ => Class::Safe,
        }
    }

    /// The subject allowlist patterns see for a call, for display and for the policy.
    pub fn subject(&self, call: &ToolUse) -> Option<Subject> {
        self.registry
            .get(&call.name)?
            .tool
            .subject(&call.input, &self.workspace)
    }

    /// Runs one call through the whole pipeline. Always returns a result.
    pub async fn execute(&self, call: &ToolUse, cancel: CancellationToken) -> ToolResult {
        let started = Instant::now();
        let mut result = match self.checked(call) {
            Err(result) => result,
            Ok(entry) => self.run(call, entry, cancel).await,
        };
        result.duration_ms = started.elapsed().as_millis() as u64;
        result
    }

    /// Everything that can be decided without running the tool.
    fn checked(&self, call: &ToolUse) -> Result<&super::Entry, ToolResult> {
        let fail = |kind, msg: String| Err(ToolResult::error(call, kind, msg));
        match &call.defect {
            Some(CallDefect::InvalidJson(e)) => {
                return fail(
                    ErrorKind::InvalidJson,
                    format!(
                        "the arguments of {} are not valid JSON ({e}); nothing was run",
                        call.name
                    ),
                );
            }
            Some(CallDefect::Truncated) => {
                return fail(
                    ErrorKind::InvalidJson,
                    format!(
                        "the call to {} was cut off by the output token limit before its \
                         arguments were complete; nothing was run",
                        call.name
                    ),
                );
            }
            None => {}
        }
        let entry = match self.registry.get(&call.name) {
            Some(entry) if self.policy.offers(&call.name) => entry,
            _ => {
                let names: Vec<&str> = self.offered().iter().map(|s| s.name.as_str()).collect();
                return fail(
                    ErrorKind::UnknownTool,
                    format!(
                        "unknown tool {:?}; the available tools are: {}",
                        call.name,
                        if names.is_empty() {
                            "(none)".to_owned()
                        } else {
                            names.join(", ")
                        }
                    ),
                );
            }
        };
        let errors: Vec<String> = entry
            .validator
            .iter_errors(&call.input)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    format!("- {e}")
                } else {
                    format!("- at {at}: {e}")
                }
            })
            .collect();
        if !errors.is_empty() {
            return fail(
                ErrorKind::Schema,
                format!(
                    "invalid arguments for {}:\n{}\nexpected input schema: {}",
                    call.name,
                    errors.join("\n"),
                    entry.tool.spec().input_schema
                ),
            );
        }
        let subject = entry.tool.subject(&call.input, &self.workspace);
        if let Decision::Denied(why) = self.policy.permits(&call.name, subject.as_ref()) {
            return fail(ErrorKind::Denied, why);
        }
        Ok(entry)
    }

    async fn run(
        &self,
        call: &ToolUse,
        entry: &super::Entry,
        cancel: CancellationToken,
    ) -> ToolResult {
        let ctx = ToolContext {
            workspace: self.workspace.clone(),
            cancel: cancel.child_token(),
        };
        let outcome = tokio::select! {
            // A tool that returns because it saw the cancellation was cancelled, not successful.
            biased;
            () = cancel.cancelled() => {
                ctx.cancel.cancel();
                return ToolResult::error(call, ErrorKind::Cancelled, "the call was cancelled");
            }
            r = tokio::time::timeout(self.timeout, entry.tool.run(call.input.clone(), &ctx)) => r,
        };
        match outcome {
            Ok(Ok(content)) => ToolResult {
                tool_use_id: call.id.clone(),
                name: call.name.clone(),
                is_error: false,
                bytes: content.len() as u64,
                content,
                error_kind: None,
                duration_ms: 0,
                truncated: false,
                full_output: None,
            },
            Ok(Err(ToolError::Failed(message))) => {
                ToolResult::error(call, ErrorKind::Failed, message)
            }
            Err(_) => {
                // Dropping the future stopped async work; the token stops blocking work.
                ctx.cancel.cancel();
                ToolResult::error(
                    call,
                    ErrorKind::Timeout,
                    format!(
                        "{} timed out after {}s",
                        call.name,
                        self.timeout.as_secs_f64()
                    ),
                )
            }
        }
    }
}
