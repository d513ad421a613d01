//! The per-call pipeline: defects → known tool → schema → allowlist → pre hooks → execute
//! (timeout, cancellation) → post hooks → redact → cap the result. Every failure along the way
//! becomes an error result the model can read and react to; nothing here can end the run.
//!
//! Redaction is the last step before the cap, so whatever a result holds — a tool's output, an
//! error, a hook's message — reaches the model, the transcript, stdout and the spill file of a
//! cut result without the run's secrets; the post hooks already see it redacted. Output a
//! process streams to its own spill file is redacted as it arrives (`Outputs` hands the run's
//! redactor to every spill file).

use std::ffi::OsString;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::hooks::{HookRun, Hooks, Verdict};
use super::policy::{Decision, Policy, Subject};
use super::{
    Class, Entry, Gate, Outputs, Registry, Sandbox, ToolContext, ToolError, ToolOutput, ToolSpec,
    Workspace,
};
use crate::conversation::{CallDefect, ErrorKind, Message, ToolResult, ToolUse};
use crate::outcome::CheckRun;
use crate::process::capture::cap_text;
use crate::redact::Redactor;

/// How long past its timeout a tool may take to clean up before the pipeline stops waiting.
const CLEANUP_MARGIN: Duration = Duration::from_secs(3);

/// Limits and plumbing shared by every call.
pub struct Settings {
    pub timeout: Duration,
    /// Results longer than this keep their head and tail; the whole goes to `outputs`.
    pub max_result_bytes: usize,
    pub env: Vec<(OsString, OsString)>,
    pub outputs: Outputs,
    pub hooks: Hooks,
    /// The OS sandbox of tool and hook processes (bash and hooks follow its network setting;
    /// a command tool's own entry decides for it).
    pub sandbox: Sandbox,
    /// The run's secrets, taken out of every result and saved output.
    pub redactor: Redactor,
    /// What images the model takes, when it takes any (`read_file` returns them to it).
    pub images: Option<crate::attachment::Limits>,
}

/// The tools of one run with the rules and limits that govern them.
pub struct Toolbox {
    /// Shared with the toolboxes of the run's subagents.
    registry: Arc<Registry>,
    /// Shared with every call's `Gate`.
    policy: Arc<Policy>,
    workspace: Arc<Workspace>,
    timeout: Duration,
    max_result_bytes: usize,
    env: Arc<[(OsString, OsString)]>,
    outputs: Arc<Outputs>,
    hooks: Hooks,
    sandbox: Arc<Sandbox>,
    redactor: Redactor,
    images: Option<crate::attachment::Limits>,
    /// Who runs `task` calls (see `delegated`); none where delegation is not available (a subagent at the
    /// depth limit, `rounds tools`).
    delegate: OnceLock<Arc<dyn Delegate>>,
    /// What a subagent's call ids are prefixed with where they name its saved outputs (the
    /// `task` calls on the way, `t1/`): ids come from the model and repeat across agents.
    scope: String,
}

impl Toolbox {
    pub fn new(
        registry: Registry,
        policy: Policy,
        workspace: Workspace,
        settings: Settings,
    ) -> Toolbox {
        Toolbox {
            registry: Arc::new(registry),
            delegate: OnceLock::new(),
            scope: String::new(),
            policy: Arc::new(policy),
            workspace: Arc::new(workspace),
            timeout: settings.timeout,
            max_result_bytes: settings.max_result_bytes,
            env: Arc::from(settings.env),
            outputs: Arc::new(settings.outputs.redacting(settings.redactor.clone())),
            hooks: settings.hooks,
            sandbox: Arc::new(settings.sandbox),
            redactor: settings.redactor,
            images: settings.images,
        }
    }

    /// The key a call's saved outputs go by.
    fn key(&self, id: &str) -> String {
        format!("{}{id}", self.scope)
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    pub fn outputs(&self) -> &Outputs {
        &self.outputs
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
                if !entry.tool.delegates() {
                    return entry.tool.spec().class;
                }
                let agent = call.input.get("subagent_type").and_then(Value::as_str);
                match self.delegate.get() {
                    Some(delegate) => delegate.class(agent.unwrap_or(crate::delegate::GENERAL)),
                    None => Class::Safe,
                }
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

    /// Gives the results of a conversation read back from a transcript the lines their tools
    /// mark as varying (`ToolResult::volatile`, which a transcript does not keep), so the loop
    /// guard compares them with new results alike.
    pub fn restore_volatile(&self, history: &mut [Message]) {
        for message in history {
            let Message::ToolResults(results) = message else {
                continue;
            };
            for result in results.iter_mut().filter(|r| !r.is_error) {
                if let Some(entry) = self.registry.get(&result.name) {
                    result.volatile = entry.tool.volatile_in(&result.content);
                }
            }
        }
    }

    /// Runs one call through the whole pipeline. Always returns a result.
    pub async fn execute(&self, call: &ToolUse, cancel: CancellationToken) -> ToolResult {
        let started = Instant::now();
        tracing::info!("{} started ({})", call.name, call.id);
        let unprefixed = self.unprefixed(call);
        let call = unprefixed.as_ref().map_or(call, |(c, _)| c);
        let mut result = match self.checked(call, &call.input) {
            Err(result) => *result,
            Ok(entry) => self.hooked(call, entry, cancel).await,
        };
        if let Some((_, note)) = &unprefixed {
            result.content = format!("{note}\n{}", result.content);
        }
        result.duration_ms = started.elapsed().as_millis() as u64;
        self.redact(&mut result);
        match result.error_kind {
            None => tracing::info!("{} done in {} ms", call.name, result.duration_ms),
            Some(kind) => tracing::info!(
                "{} did not succeed ({}) in {} ms",
                call.name,
                kind.words(),
                result.duration_ms
            ),
        }
        self.cap(result)
    }

    /// A call whose path starts with the workspace's own name where that cannot be meant (see
    /// `Workspace::unprefixed`): the call without it, and what its result says about that. Only
    /// when the call so corrected passes the schema and the allowlist, so a denied path is never
    /// revealed to exist.
    fn unprefixed(&self, call: &ToolUse) -> Option<(ToolUse, String)> {
        let Some(Subject::Path(_)) = self.subject(call) else {
            return None;
        };
        let path = call.input.get("path")?.as_str()?;
        let creating = self.class_of(call) == Class::Mutating;
        let fixed = self.workspace.unprefixed(path, creating)?;
        let mut corrected = call.clone();
        corrected
            .input
            .as_object_mut()?
            .insert("path".to_owned(), Value::String(fixed.clone()));
        self.checked(&corrected, &corrected.input).ok()?;
        let note = format!(
            "(no {path:?} in the workspace; paths are relative to its root, so this is {fixed:?})"
        );
        Some((corrected, note))
    }

    async fn hooked(&self, call: &ToolUse, entry: &Entry, cancel: CancellationToken) -> ToolResult {
        let run = HookRun {
            sink: self.hooks.sink.as_deref(),
            workspace: self.workspace.root(),
            env: &self.env,
            timeout: self.timeout,
            cancel: &cancel,
            sandbox: &self.sandbox,
        };
        let mut input = call.input.clone();
        match self.hooks.before(call, &input, &run).await {
            Verdict::Veto(why) => return ToolResult::error(call, ErrorKind::Vetoed, why),
            Verdict::Cancelled => return cancelled(call),
            Verdict::Proceed(Some(replaced)) => {
                // A hook may rewrite the input, not get around the schema or the allowlist.
                if let Err(mut result) = self.checked(call, &replaced) {
                    result.content = format!(
                        "the pre-tool hook's replacement input was refused: {}",
                        result.content
                    );
                    return *result;
                }
                input = replaced;
            }
            Verdict::Proceed(None) => {}
        }
        let mut result = self.run(call, entry, input.clone(), cancel.clone()).await;
        self.redact(&mut result);
        match self.hooks.after(call, &input, &result, &run).await {
            Verdict::Veto(why) => ToolResult {
                duration_ms: result.duration_ms,
                ..ToolResult::error(call, ErrorKind::Vetoed, why)
            },
            Verdict::Cancelled => ToolResult {
                duration_ms: result.duration_ms,
                ..cancelled(call)
            },
            Verdict::Proceed(_) => result,
        }
    }

    /// Everything that can be decided without running anything.
    pub(crate) fn checked(&self, call: &ToolUse, input: &Value) -> Result<&Entry, Box<ToolResult>> {
        let fail = |kind, msg: String| Box::new(ToolResult::error(call, kind, msg));
        if let Some(why) = defect(call) {
            return Err(fail(ErrorKind::InvalidJson, why));
        }
        let entry = match self.registry.get(&call.name) {
            Some(entry) if self.policy.offers(&call.name) => entry,
            Some(_) => {
                // The model reached for a tool that exists but this run leaves out: the person
                // reading stderr is the one who can allow it.
                tracing::warn!(
                    "the model called {}, which this run does not allow (allow it with -a {})",
                    call.name,
                    call.name
                );
                let why = format!(
                    "{:?} is not allowed in this run (the user can allow it with -a {}); {}",
                    call.name,
                    call.name,
                    self.available()
                );
                return Err(fail(ErrorKind::UnknownTool, why));
            }
            None => return Err(fail(ErrorKind::UnknownTool, self.unknown(&call.name))),
        };
        let validator = entry
            .validator()
            .map_err(|e| fail(ErrorKind::Failed, e.to_string()))?;
        let errors: Vec<String> = validator
            .iter_errors(input)
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
            return Err(fail(
                ErrorKind::Schema,
                format!(
                    "invalid arguments for {}:\n{}\nexpected input schema: {}",
                    call.name,
                    errors.join("\n"),
                    entry.tool.spec().input_schema
                ),
            ));
        }
        // A path is judged where it leads as well as where it is written: the policy has no
        // workspace to follow symlinks in, so the path is located here.
        let subject = match entry.tool.subject(input, &self.workspace) {
            Some(Subject::Path(path)) => Some(Subject::Located {
                real: self.workspace.locate(&path),
                path,
            }),
            other => other,
        };
        if let Decision::Denied(why) = self.policy.permits(&call.name, subject.as_ref()) {
            return Err(fail(ErrorKind::Denied, why));
        }
        Ok(entry)
    }

    /// What the model reads when it calls a tool that does not exist: the ones it may call.
    fn unknown(&self, name: &str) -> String {
        format!("unknown tool {name:?}; {}", self.available())
    }

    /// The tools the model was offered, in words.
    fn available(&self) -> String {
        let names: Vec<&str> = self.offered().iter().map(|s| s.name.as_str()).collect();
        if names.is_empty() {
            "no tools are available".to_owned()
        } else {
            format!("the available tools are: {}", names.join(", "))
        }
    }

    async fn run(
        &self,
        call: &ToolUse,
        entry: &Entry,
        input: Value,
        cancel: CancellationToken,
    ) -> ToolResult {
        if entry.tool.delegates() {
            return self.delegated(call, input, cancel).await;
        }
        let ctx = ToolContext {
            workspace: self.workspace.clone(),
            cancel: cancel.child_token(),
            call_id: self.key(&call.id),
            timeout: self.timeout,
            env: self.env.clone(),
            outputs: self.outputs.clone(),
            sandbox: self.sandbox.clone(),
            gate: Gate::new(self.policy.clone(), &call.name),
            images: self.images,
        };
        // Tools that start processes enforce the timeout themselves (and clean up); this outer
        // limit is the safety net for every tool.
        let hard_stop = self.timeout + CLEANUP_MARGIN;
        let outcome = tokio::select! {
            // A tool that returns because it saw the cancellation was cancelled, not successful.
            biased;
            () = cancel.cancelled() => {
                ctx.cancel.cancel();
                return cancelled(call);
            }
            r = tokio::time::timeout(hard_stop, entry.tool.run_output(input, &ctx)) => r,
        };
        match outcome {
            Ok(Ok(ToolOutput {
                text: content,
                volatile,
                exit_code,
                media,
            })) => {
                // An image's bytes are kept beside the transcript, which records its digest.
                if let Err(e) = media.iter().try_for_each(|m| self.outputs.keep(m)) {
                    return ToolResult::error(
                        call,
                        ErrorKind::Failed,
                        format!("the image could not be kept beside the transcript: {e}"),
                    );
                }
                ToolResult {
                    volatile,
                    exit_code,
                    media,
                    ..ToolResult::ok(call, content)
                }
            }
            Ok(Err(ToolError::Failed(message))) => {
                ToolResult::error(call, ErrorKind::Failed, message)
            }
            Ok(Err(ToolError::Exited { code, message })) => ToolResult {
                exit_code: Some(code),
                ..ToolResult::error(call, ErrorKind::Failed, message)
            },
            Ok(Err(ToolError::TimedOut(message))) => {
                ToolResult::error(call, ErrorKind::Timeout, message)
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

    /// Runs the user's `--check` command (see `tools::check`) as call `id`: the output is
    /// redacted and capped as a result is, the whole saved beside the transcript when cut.
    pub async fn check(
        &self,
        command: &str,
        attempt: u32,
        id: String,
        cancel: CancellationToken,
    ) -> CheckRun {
        let started = Instant::now();
        let ctx = ToolContext {
            workspace: self.workspace.clone(),
            cancel: cancel.child_token(),
            call_id: id.clone(),
            timeout: self.timeout,
            env: self.env.clone(),
            outputs: self.outputs.clone(),
            sandbox: self.sandbox.clone(),
            gate: Gate::open(),
            images: None,
        };
        let checked = super::check::run(command, &ctx).await;
        let mut result = ToolResult {
            tool_use_id: id,
            name: "check".into(),
            is_error: checked.exit_code != Some(0),
            bytes: 0,
            content: checked.output,
            error_kind: None,
            duration_ms: started.elapsed().as_millis() as u64,
            truncated: false,
            full_output: None,
            redacted: Vec::new(),
            exit_code: checked.exit_code,
            volatile: Vec::new(),
            media: Vec::new(),
        };
        self.redact(&mut result);
        let result = self.cap(result);
        let mut command = command.to_owned();
        self.redactor.redact(&mut command);
        CheckRun {
            command,
            attempt,
            passed: checked.exit_code == Some(0),
            exit_code: checked.exit_code,
            duration_ms: result.duration_ms,
            output: result.content,
            truncated: result.truncated,
            bytes: result.bytes,
            full_output: result.full_output,
            redacted: result.redacted,
        }
    }

    /// Takes the run's secrets out of a result's content, adding the names found, there and in
    /// what the call's processes printed, to those it records (a result redacted before the
    /// post hooks keeps what was found then).
    fn redact(&self, result: &mut ToolResult) {
        // What the tool's processes printed was redacted as it streamed (see `Outputs`).
        let streamed = self.outputs.redacted(&self.key(&result.tool_use_id));
        for name in streamed
            .into_iter()
            .chain(self.redactor.redact(&mut result.content))
        {
            if !result.redacted.contains(&name) {
                result.redacted.push(name);
            }
        }
        result.redacted.sort();
    }

    /// Keeps a result within `max_result_bytes`: head and tail stay, the whole goes to a file
    /// that the marker in the middle names.
    fn cap(&self, mut result: ToolResult) -> ToolResult {
        result.bytes = result.content.len() as u64;
        if result.content.len() <= self.max_result_bytes {
            return result;
        }
        let file = self.outputs.file(&self.key(&result.tool_use_id), "txt");
        let captured = cap_text(&result.content, self.max_result_bytes, file);
        // The content was redacted already; nothing more is found, and the call is forgotten.
        self.outputs.redacted(&self.key(&result.tool_use_id));
        result.full_output = captured.spilled.as_ref().map(|p| p.display().to_string());
        result.content = captured.render();
        result.truncated = true;
        result
    }
}

/// Why a call whose arguments did not arrive whole cannot run.
fn defect(call: &ToolUse) -> Option<String> {
    match &call.defect {
        Some(CallDefect::InvalidJson(e)) => Some(format!(
            "the arguments of {} are not valid JSON ({e}); nothing was run",
            call.name
        )),
        Some(CallDefect::Truncated) => Some(format!(
            "the call to {} was cut off by the output token limit before its arguments were \
             complete; nothing was run",
            call.name
        )),
        None => None,
    }
}

fn cancelled(call: &ToolUse) -> ToolResult {
    ToolResult::error(call, ErrorKind::Cancelled, "the call was cancelled")
}

mod delegated;
pub use delegated::{Delegate, class_under};

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::workspace::testing::workspace;

    fn result(name: &str, content: &str, is_error: bool) -> ToolResult {
        ToolResult {
            tool_use_id: "call_1".into(),
            name: name.into(),
            is_error,
            bytes: content.len() as u64,
            content: content.into(),
            error_kind: None,
            duration_ms: 0,
            truncated: false,
            full_output: None,
            redacted: Vec::new(),
            volatile: Vec::new(),
            exit_code: None,
            media: Vec::new(),
        }
    }

    #[test]
    fn results_read_back_from_a_transcript_get_the_lines_their_tools_mark_again() {
        let (_dir, _root, ws) = workspace();
        let names = ["bash", "read_file"];
        let policy = Policy::new(&["none,bash,read_file".into()], &[], &names).unwrap();
        let settings = Settings {
            timeout: Duration::from_secs(5),
            max_result_bytes: 1000,
            env: Vec::new(),
            outputs: Outputs::none(),
            hooks: Hooks::default(),
            sandbox: Sandbox::default(),
            redactor: Redactor::default(),
            images: None,
        };
        let registry = crate::builtin::registry(&Default::default());
        let toolbox = Toolbox::new(registry, policy, ws, settings);
        let ran = "exit code: 0\nduration: 0.25s\nstdout: (empty)\nstderr: (empty)\n";
        let mut history = vec![
            Message::User("go".into()),
            Message::ToolResults(vec![
                result("bash", ran, false),
                result("read_file", ran, false),
                // An error's text is not the tool's output (a hook's veto, a timeout).
                result("bash", ran, true),
                result("gone", ran, false),
            ]),
        ];
        toolbox.restore_volatile(&mut history);
        let Message::ToolResults(results) = &history[1] else {
            panic!()
        };
        let volatile: Vec<&[String]> = results.iter().map(|r| &r.volatile[..]).collect();
        let none: &[String] = &[];
        assert_eq!(
            volatile,
            [&["duration: 0.25s".to_owned()][..], none, none, none]
        );
    }
}
