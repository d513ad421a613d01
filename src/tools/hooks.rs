//! User hooks around every tool call (`--pre-tool-hook`, `--post-tool-hook`): shell commands
//! that receive the call as JSON on stdin. Exit 0 lets the call go on (a pre hook may print
//! `{"input": …}` to replace the input); exit 2 vetoes it, and the hook's stderr is what the
//! model reads; any other failure is a warning and the call goes on. Hooks run under the same
//! supervisor, environment scrubbing and timeout as tools.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::conversation::{ToolResult, ToolUse};
use crate::process::{self, Exit, Limits, Sandbox};

/// Exit code with which a hook vetoes a call.
pub const VETO: i32 = 2;

#[derive(Debug, Clone, Default)]
pub struct Hooks {
    pub pre: Vec<String>,
    pub post: Vec<String>,
}

/// What the hooks decided about a call.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Go on (with this input, for pre hooks).
    Proceed(Option<Value>),
    /// Stop: the message is the error result the model reads.
    Veto(String),
}

#[derive(Serialize)]
struct Event<'a> {
    event: &'a str,
    tool: &'a str,
    id: &'a str,
    input: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<ResultView<'a>>,
}

#[derive(Serialize)]
struct ResultView<'a> {
    content: &'a str,
    is_error: bool,
    error_kind: Option<crate::conversation::ErrorKind>,
}

/// Everything a hook process needs from the run.
pub struct HookRun<'a> {
    pub workspace: &'a Path,
    pub env: &'a [(OsString, OsString)],
    pub timeout: Duration,
    pub cancel: &'a CancellationToken,
    /// The run's sandbox: hooks follow `--tool-network` like bash.
    pub sandbox: &'a Sandbox,
}

impl Hooks {
    /// Runs the pre hooks in order; each sees the input as the previous one left it.
    pub async fn before(&self, call: &ToolUse, input: &Value, run: &HookRun<'_>) -> Verdict {
        let mut input = input.clone();
        let mut replaced = false;
        for hook in &self.pre {
            let event = Event {
                event: "pre_tool_use",
                tool: &call.name,
                id: &call.id,
                input: &input,
                result: None,
            };
            match invoke(hook, "pre_tool_use", call, &event, run).await {
                Outcome::Ok(stdout) => {
                    let replacement = serde_json::from_str::<Value>(stdout.trim())
                        .ok()
                        .and_then(|v| v.get("input").cloned());
                    if let Some(new) = replacement {
                        input = new;
                        replaced = true;
                    }
                }
                Outcome::Veto(message) => return Verdict::Veto(message),
                Outcome::Warned => {}
            }
        }
        Verdict::Proceed(replaced.then_some(input))
    }

    /// Runs the post hooks in order on a finished result.
    pub async fn after(
        &self,
        call: &ToolUse,
        input: &Value,
        result: &ToolResult,
        run: &HookRun<'_>,
    ) -> Verdict {
        for hook in &self.post {
            let view = ResultView {
                content: &result.content,
                is_error: result.is_error,
                error_kind: result.error_kind,
            };
            let event = Event {
                event: "post_tool_use",
                tool: &call.name,
                id: &call.id,
                input,
                result: Some(view),
            };
            if let Outcome::Veto(message) = invoke(hook, "post_tool_use", call, &event, run).await {
                return Verdict::Veto(message);
            }
        }
        Verdict::Proceed(None)
    }
}

enum Outcome {
    Ok(String),
    Veto(String),
    Warned,
}

async fn invoke(
    hook: &str,
    kind: &str,
    call: &ToolUse,
    event: &Event<'_>,
    run: &HookRun<'_>,
) -> Outcome {
    let stdin = match serde_json::to_vec(event) {
        Ok(bytes) => bytes,
        Err(e) => {
            tracing::warn!("{kind} hook {hook:?}: cannot encode the call: {e}");
            return Outcome::Warned;
        }
    };
    let mut env = run.env.to_vec();
    env.extend([
        ("ROUNDS_HOOK_EVENT".into(), kind.into()),
        ("ROUNDS_TOOL_NAME".into(), OsString::from(&call.name)),
        ("ROUNDS_TOOL_USE_ID".into(), OsString::from(&call.id)),
        (
            "ROUNDS_WORKSPACE".into(),
            run.workspace.as_os_str().to_owned(),
        ),
    ]);
    let limits = || Limits {
        head: 64 * 1024,
        tail: 4 * 1024,
        spill: None,
    };
    let spec = process::Spec {
        argv: vec!["sh".into(), "-c".into(), hook.into()],
        cwd: run.workspace,
        env: &env,
        stdin: Some(stdin),
        timeout: run.timeout,
        cancel: run.cancel.clone(),
        stdout: limits(),
        stderr: limits(),
        sandbox: run.sandbox,
    };
    let done = match process::run(spec).await {
        Ok(done) => done,
        Err(e) => {
            tracing::warn!("{kind} hook {hook:?} could not start: {e}");
            return Outcome::Warned;
        }
    };
    let stderr = done.stderr.render();
    match done.exit {
        Exit::Code(0) => Outcome::Ok(done.stdout.render()),
        Exit::Code(VETO) => {
            let why = stderr.trim();
            Outcome::Veto(if why.is_empty() {
                format!("vetoed by the {kind} hook {hook:?}")
            } else {
                why.to_owned()
            })
        }
        Exit::Code(code) => {
            tracing::warn!(
                "{kind} hook {hook:?} failed (exit {code}): {}",
                stderr.trim()
            );
            Outcome::Warned
        }
        Exit::TimedOut => {
            tracing::warn!(
                "{kind} hook {hook:?} timed out after {:.1}s and was killed",
                run.timeout.as_secs_f64()
            );
            Outcome::Warned
        }
        Exit::Cancelled => Outcome::Warned,
    }
}
