//! User hooks around every tool call (`--pre-tool-hook`, `--post-tool-hook`): shell commands
//! that receive the call as JSON on stdin. Hooks run under the same supervisor, environment
//! scrubbing and timeout as tools.
//!
//! A hook is a guard, so it fails closed. A pre hook lets the call go on only when it exits 0
//! and prints nothing, or one complete JSON object (whose `input`, if present, replaces the
//! call's input); exit 2 vetoes with the hook's stderr as the error the model reads; and
//! anything else — the hook cannot start, times out, crashes, exits with another code, prints
//! something that is not a JSON object or more than `MAX_REPLY` bytes — vetoes too, with an
//! error that says why. A post hook that exits 0 keeps the result (its stdout is ignored); exit 2
//! or any failure withholds the result and the model reads an error instead.

use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::conversation::{ToolResult, ToolUse, json_kind};
use crate::process::{self, Captured, Exit, Limits, Sandbox};

/// Exit code with which a hook vetoes a call.
pub(crate) const VETO: i32 = 2;

/// The most a hook may print on stdout. A pre hook's reply is read whole up to this; a hook
/// that prints more is not giving a reply rounds could read, so the call is vetoed.
pub(crate) const MAX_REPLY: usize = 16 * 1024 * 1024;

/// Bytes of a hook's stderr kept from its start and from its end (a veto's message).
const STDERR_HEAD: usize = 64 * 1024;
const STDERR_TAIL: usize = 4 * 1024;

#[derive(Clone, Default)]
pub struct Hooks {
    pub pre: Vec<String>,
    pub post: Vec<String>,
    /// Told of every hook that ran (OpenTelemetry's spans), if anyone listens.
    pub sink: Option<Arc<dyn HookSink>>,
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks")
            .field("pre", &self.pre)
            .field("post", &self.post)
            .field("sink", &self.sink.is_some())
            .finish()
    }
}

/// One hook process that ran, as [`HookSink`] hears of it.
pub struct HookRan<'a> {
    /// `pre_tool_use` or `post_tool_use`.
    pub event: &'a str,
    /// The command, as the user gave it.
    pub command: &'a str,
    pub tool: &'a str,
    pub call_id: &'a str,
    pub started: SystemTime,
    pub duration: Duration,
    /// `ok`, `veto`, `failed` or `cancelled`.
    pub outcome: &'a str,
}

/// Who hears of each hook that ran.
pub trait HookSink: Send + Sync {
    fn hook_ran(&self, ran: &HookRan<'_>);
}

/// What the hooks decided about a call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verdict {
    /// Go on (with this input, for pre hooks).
    Proceed(Option<Value>),
    /// Stop: the message is the error result the model reads.
    Veto(String),
    /// The call was cancelled while a hook ran.
    Cancelled,
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
pub(crate) struct HookRun<'a> {
    pub(crate) sink: Option<&'a dyn HookSink>,
    pub(crate) workspace: &'a Path,
    pub(crate) env: &'a [(OsString, OsString)],
    pub(crate) timeout: Duration,
    pub(crate) cancel: &'a CancellationToken,
    /// The run's sandbox: hooks follow `--tool-network` like bash.
    pub(crate) sandbox: &'a Sandbox,
}

impl Hooks {
    /// Runs the pre hooks in order; each sees the input as the previous one left it. The first
    /// that vetoes or fails stops the call.
    pub(crate) async fn before(&self, call: &ToolUse, input: &Value, run: &HookRun<'_>) -> Verdict {
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
            let failed = |why: String| {
                tracing::warn!(
                    "pre-tool hook {hook:?} {}; the call was vetoed",
                    shown(&why)
                );
                Verdict::Veto(format!(
                    "the pre-tool hook {hook:?} {why}; the call was not run (a hook that fails \
                     vetoes the call)"
                ))
            };
            match invoke(hook, "pre_tool_use", call, &event, run).await {
                Outcome::Ok(stdout) => match reply(&stdout) {
                    Ok(Some(new)) => {
                        input = new;
                        replaced = true;
                    }
                    Ok(None) => {}
                    Err(why) => return failed(why.to_string()),
                },
                Outcome::Veto(message) => return Verdict::Veto(message),
                Outcome::Failed(why) => return failed(why),
                Outcome::Cancelled => return Verdict::Cancelled,
            }
        }
        Verdict::Proceed(replaced.then_some(input))
    }

    /// Runs the post hooks in order on a finished result. One that vetoes or fails withholds
    /// the result.
    pub(crate) async fn after(
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
            match invoke(hook, "post_tool_use", call, &event, run).await {
                Outcome::Ok(_) => {}
                Outcome::Veto(message) => return Verdict::Veto(message),
                Outcome::Failed(why) => {
                    tracing::warn!(
                        "post-tool hook {hook:?} {}; the result was withheld",
                        shown(&why)
                    );
                    return Verdict::Veto(format!(
                        "the post-tool hook {hook:?} {why}; the call ran but its result was \
                         withheld (a hook that fails withholds the result)"
                    ));
                }
                Outcome::Cancelled => return Verdict::Cancelled,
            }
        }
        Verdict::Proceed(None)
    }
}

/// How one hook process ended.
enum Outcome {
    /// Exit 0, with what it printed on stdout.
    Ok(Captured),
    /// Exit 2: the message the model reads.
    Veto(String),
    /// Anything else but a cancellation: why, as "failed (exit 1): …", "timed out …".
    Failed(String),
    Cancelled,
}

/// Why what a pre hook printed is not a reply (completing "the pre-tool hook … ").
#[derive(Debug, thiserror::Error)]
enum BadReply {
    #[error(
        "printed {0} bytes on stdout, more than the {max} MiB a reply may have",
        max = MAX_REPLY >> 20
    )]
    TooLong(u64),
    /// The JSON kind it printed instead of an object.
    #[error("printed {0} on stdout where a JSON object (or nothing) was expected")]
    NotAnObject(&'static str),
    #[error("printed something on stdout that is not a complete JSON object ({0})")]
    NotJson(#[source] serde_json::Error),
}

/// What a pre hook that exited 0 printed: nothing (go on as is), or one JSON object whose
/// `input`, if it has one, replaces the call's input. Anything else is not a reply.
fn reply(stdout: &Captured) -> Result<Option<Value>, BadReply> {
    if stdout.overflowed {
        return Err(BadReply::TooLong(stdout.total));
    }
    let text = stdout.head.trim_ascii();
    if text.is_empty() {
        return Ok(None);
    }
    match serde_json::from_slice::<Value>(text) {
        Ok(Value::Object(mut reply)) => Ok(reply.remove("input")),
        Ok(other) => Err(BadReply::NotAnObject(json_kind(&other))),
        Err(e) => Err(BadReply::NotJson(e)),
    }
}

/// Runs one hook, and says so to the sink.
async fn invoke(
    hook: &str,
    kind: &str,
    call: &ToolUse,
    event: &Event<'_>,
    run: &HookRun<'_>,
) -> Outcome {
    let (started, clock) = (SystemTime::now(), Instant::now());
    let outcome = spawn(hook, kind, call, event, run).await;
    if let Some(sink) = run.sink {
        sink.hook_ran(&HookRan {
            event: kind,
            command: hook,
            tool: &call.name,
            call_id: &call.id,
            started,
            duration: clock.elapsed(),
            outcome: match outcome {
                Outcome::Ok(_) => "ok",
                Outcome::Veto(_) => "veto",
                Outcome::Failed(_) => "failed",
                Outcome::Cancelled => "cancelled",
            },
        });
    }
    outcome
}

async fn spawn(
    hook: &str,
    kind: &str,
    call: &ToolUse,
    event: &Event<'_>,
    run: &HookRun<'_>,
) -> Outcome {
    let stdin = match serde_json::to_vec(event) {
        Ok(bytes) => bytes,
        Err(e) => return Outcome::Failed(format!("could not be given the call: {e}")),
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
    let spec = process::Spec {
        argv: vec!["sh".into(), "-c".into(), hook.into()],
        cwd: run.workspace,
        env: &env,
        stdin: Some(stdin),
        timeout: run.timeout,
        cancel: run.cancel.clone(),
        // A pre hook's whole reply, or enough to know it was too long; a post hook's stdout
        // is not read as anything, so none of it is kept.
        stdout: Limits {
            head: if kind == "pre_tool_use" { MAX_REPLY } else { 0 },
            tail: 0,
            spill: None,
        },
        stderr: Limits {
            head: STDERR_HEAD,
            tail: STDERR_TAIL,
            spill: None,
        },
        sandbox: run.sandbox,
    };
    let done = match process::run(spec).await {
        Ok(done) => done,
        Err(e) => return Outcome::Failed(format!("could not start: {e}")),
    };
    let stderr = done.stderr.render();
    let stderr = stderr.trim();
    match done.exit {
        Exit::Code(0) => Outcome::Ok(done.stdout),
        Exit::Code(VETO) => Outcome::Veto(if stderr.is_empty() {
            format!("vetoed by the {kind} hook {hook:?}")
        } else {
            stderr.to_owned()
        }),
        Exit::Code(code) => {
            let how = match code {
                129..=192 => format!("was killed by signal {} (exit {code})", code - 128),
                _ => format!("failed (exit {code})"),
            };
            Outcome::Failed(if stderr.is_empty() {
                how
            } else {
                format!("{how}: {stderr}")
            })
        }
        Exit::TimedOut => Outcome::Failed(format!(
            "timed out after {:.1}s and was killed",
            run.timeout.as_secs_f64()
        )),
        Exit::Cancelled => Outcome::Cancelled,
    }
}

/// Text for the terminal: control characters (a hook's stderr may carry anything) escaped.
fn shown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests;
