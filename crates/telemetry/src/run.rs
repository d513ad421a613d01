//! One run as a trace: an `invoke_agent` span, a `chat {model}` span per model request and an
//! `execute_tool {name}` span per tool call below it, and the check as a span of its own; and
//! the run's measurements. Fed the same events as the transcript (`agent::Observer` in the
//! `rounds` crate), already redacted.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{SdkTracer, Span};
use rounds_base::conversation::{Block, ToolResult, ToolUse, Usage};
use rounds_base::outcome::CheckRun;
use rounds_base::transcript::{AgentEnd, AgentStart, End, RetryNote, Round, Start};

use crate::Instruments;
use crate::names::*;

/// The spans of one run. Every method may be called from several tasks at once.
pub struct Run {
    tracer: SdkTracer,
    instruments: Instruments,
    content: bool,
    /// The `invoke_agent` span, as the context its children start in.
    root: Context,
    /// The provider and model, as the run's `start` line names them.
    names: Mutex<(String, String)>,
    /// The current model request: its span and when it started.
    chat: Mutex<Option<(Span, SystemTime)>>,
    /// Tool calls running, by call id.
    tools: Mutex<HashMap<String, Span>>,
}

/// One hook process that ran (see [`Run::hook_ran`]).
pub struct Hook<'a> {
    pub event: &'a str,
    pub command: &'a str,
    pub tool: &'a str,
    pub call_id: &'a str,
    pub started: SystemTime,
    pub duration: Duration,
    pub outcome: &'a str,
}

/// The name a serde enum serializes to (`ErrorKind::Timeout` → `timeout`).
fn name_of(value: &impl serde::Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => "other".to_owned(),
    }
}

fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Input tokens as the conventions count them: the cached ones included.
fn input_tokens(usage: &Usage) -> u64 {
    usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
}

impl Run {
    /// The run's span starts now, before the run has set up (its context goes to the tools'
    /// environment); [`Run::started`] completes it.
    pub(crate) fn new(
        tracer: SdkTracer,
        instruments: Instruments,
        content: bool,
        parent: &Context,
        run_id: &str,
    ) -> Run {
        let span = tracer
            .span_builder("invoke_agent rounds")
            .with_kind(SpanKind::Internal)
            .with_attributes(vec![
                KeyValue::new(GEN_AI_OPERATION_NAME, "invoke_agent"),
                KeyValue::new(GEN_AI_AGENT_NAME, "rounds"),
                KeyValue::new(GEN_AI_CONVERSATION_ID, run_id.to_owned()),
                KeyValue::new(RUN_ID, run_id.to_owned()),
            ])
            .start_with_context(&tracer, parent);
        Run {
            root: parent.with_span(span),
            tracer,
            instruments,
            content,
            names: Mutex::new((String::new(), String::new())),
            chat: Mutex::new(None),
            tools: Mutex::new(HashMap::new()),
        }
    }

    /// The run's `start` line: what it runs, where, and (with content) its prompt.
    pub fn started(&self, start: &Start) {
        if let Ok(mut names) = self.names.lock() {
            *names = (start.provider.clone(), start.model.clone());
        }
        let span = self.root.span();
        span.set_attribute(KeyValue::new(GEN_AI_PROVIDER_NAME, start.provider.clone()));
        span.set_attribute(KeyValue::new(GEN_AI_REQUEST_MODEL, start.model.clone()));
        span.set_attribute(KeyValue::new(WORKSPACE, start.workspace.clone()));
        if self.content {
            let messages = serde_json::json!([
                {"role": "user", "parts": [{"type": "text", "content": start.prompt}]}
            ]);
            span.set_attribute(KeyValue::new(GEN_AI_INPUT_MESSAGES, messages.to_string()));
        }
    }

    fn provider_and_model(&self) -> (String, String) {
        self.names.lock().map(|n| n.clone()).unwrap_or_default()
    }

    /// The run's span context as a W3C `traceparent` value: for the tools it starts.
    pub fn traceparent(&self) -> String {
        crate::traceparent_of(&self.root)
    }

    /// A model request starts.
    pub fn round_started(&self, round: u32) {
        let (provider, model) = self.provider_and_model();
        let span = self
            .tracer
            .span_builder(format!("chat {model}"))
            .with_kind(SpanKind::Client)
            .with_attributes(vec![
                KeyValue::new(GEN_AI_OPERATION_NAME, "chat"),
                KeyValue::new(GEN_AI_PROVIDER_NAME, provider),
                KeyValue::new(GEN_AI_REQUEST_MODEL, model),
                KeyValue::new(ROUND, i64::from(round)),
            ])
            .start_with_context(&self.tracer, &self.root);
        if let Ok(mut chat) = self.chat.lock() {
            *chat = Some((span, SystemTime::now()));
        }
    }

    /// The provider named the model that answers the current request.
    pub fn response_model(&self, model: &str) {
        if let Ok(mut chat) = self.chat.lock()
            && let Some((span, _)) = chat.as_mut()
        {
            span.set_attribute(KeyValue::new(GEN_AI_RESPONSE_MODEL, model.to_owned()));
        }
    }

    /// A request failed and is made again: an event on the request's span.
    pub fn retry(&self, note: &RetryNote) {
        if let Ok(mut chat) = self.chat.lock()
            && let Some((span, _)) = chat.as_mut()
        {
            span.add_event(
                "retry",
                vec![
                    KeyValue::new("rounds.retry.attempt", i64::from(note.attempt)),
                    KeyValue::new("rounds.retry.delay_ms", int(note.delay_ms)),
                    KeyValue::new("rounds.retry.error", note.error.clone()),
                ],
            );
        }
    }

    pub fn tool_started(&self, call: &ToolUse) {
        let arguments = self.content.then(|| call.input.to_string());
        let span = self.tool_span(&call.id, &call.name, arguments);
        if let Ok(mut tools) = self.tools.lock() {
            tools.insert(call.id.clone(), span);
        }
    }

    /// An `execute_tool` span, started now.
    fn tool_span(&self, id: &str, name: &str, arguments: Option<String>) -> Span {
        let mut attributes = vec![
            KeyValue::new(GEN_AI_OPERATION_NAME, "execute_tool"),
            KeyValue::new(GEN_AI_TOOL_NAME, name.to_owned()),
            KeyValue::new(GEN_AI_TOOL_CALL_ID, id.to_owned()),
            KeyValue::new(GEN_AI_TOOL_TYPE, "function"),
        ];
        if let Some(arguments) = arguments {
            attributes.push(KeyValue::new(GEN_AI_TOOL_CALL_ARGUMENTS, arguments));
        }
        self.tracer
            .span_builder(format!("execute_tool {name}"))
            .with_kind(SpanKind::Internal)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, &self.root)
    }

    pub fn tool_finished(&self, result: &ToolResult) {
        let outcome = match result.error_kind {
            Some(kind) => name_of(&kind),
            None if result.is_error => "error".to_owned(),
            None => "ok".to_owned(),
        };
        self.instruments.tool_duration.record(
            result.duration_ms as f64 / 1000.0,
            &[
                KeyValue::new(GEN_AI_TOOL_NAME, result.name.clone()),
                KeyValue::new(TOOL_OUTCOME, outcome.clone()),
            ],
        );
        let span = self
            .tools
            .lock()
            .ok()
            .and_then(|mut t| t.remove(&result.tool_use_id));
        // A call that was refused before it started (denied, invalid) has no span yet.
        let mut span =
            span.unwrap_or_else(|| self.tool_span(&result.tool_use_id, &result.name, None));
        span.set_attribute(KeyValue::new(TOOL_OUTCOME, outcome.clone()));
        span.set_attribute(KeyValue::new(DURATION_MS, int(result.duration_ms)));
        if let Some(code) = result.exit_code {
            span.set_attribute(KeyValue::new(TOOL_EXIT_CODE, i64::from(code)));
        }
        if self.content {
            span.set_attribute(KeyValue::new(
                GEN_AI_TOOL_CALL_RESULT,
                result.content.clone(),
            ));
        }
        if result.is_error {
            span.set_attribute(KeyValue::new(ERROR_TYPE, outcome.clone()));
            span.set_status(Status::error(outcome));
        } else {
            span.set_status(Status::Ok);
        }
        span.end();
    }

    /// A hook ran around the tool call `call_id`: a span under the call's (`event` is
    /// `pre_tool_use` or `post_tool_use`, `outcome` how it ended: `ok`, `veto`, …).
    pub fn hook_ran(&self, hook: &Hook<'_>) {
        let parent = match self.tools.lock().ok().and_then(|t| {
            t.get(hook.call_id)
                .map(|s| opentelemetry::trace::Span::span_context(s).clone())
        }) {
            Some(call) => self.root.with_remote_span_context(call),
            None => self.root.clone(),
        };
        let mut attributes = vec![
            KeyValue::new(HOOK_EVENT, hook.event.to_owned()),
            KeyValue::new(HOOK_OUTCOME, hook.outcome.to_owned()),
            KeyValue::new(GEN_AI_TOOL_NAME, hook.tool.to_owned()),
            KeyValue::new(GEN_AI_TOOL_CALL_ID, hook.call_id.to_owned()),
            KeyValue::new(DURATION_MS, int(hook.duration.as_millis() as u64)),
        ];
        if self.content {
            attributes.push(KeyValue::new(HOOK_COMMAND, hook.command.to_owned()));
        }
        let mut span = self
            .tracer
            .span_builder(format!("hook {}", hook.event))
            .with_kind(SpanKind::Internal)
            .with_start_time(hook.started)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, &parent);
        span.set_status(match hook.outcome {
            "ok" => Status::Ok,
            other => Status::error(other.to_owned()),
        });
        span.end_with_timestamp(hook.started + hook.duration);
    }

    /// `--check` ran: a span that ended now and lasted as long as the check.
    pub fn check_finished(&self, round: u32, check: &CheckRun) {
        let end = SystemTime::now();
        let start = end - Duration::from_millis(check.duration_ms);
        let mut attributes = vec![
            KeyValue::new(ROUND, i64::from(round)),
            KeyValue::new(CHECK_PASSED, check.passed),
            KeyValue::new(DURATION_MS, int(check.duration_ms)),
        ];
        if let Some(code) = check.exit_code {
            attributes.push(KeyValue::new(CHECK_EXIT_CODE, i64::from(code)));
        }
        if self.content {
            attributes.push(KeyValue::new(CHECK_COMMAND, check.command.clone()));
        }
        let mut span = self
            .tracer
            .span_builder("check")
            .with_kind(SpanKind::Internal)
            .with_start_time(start)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, &self.root);
        span.set_status(if check.passed {
            Status::Ok
        } else {
            Status::error("the check failed")
        });
        span.end_with_timestamp(end);
    }

    /// A round's record: its model request's span ends, as long as the request took.
    pub fn round_finished(&self, round: &Round) {
        let Some((mut span, started)) = self.chat.lock().ok().and_then(|mut c| c.take()) else {
            return;
        };
        let usage = &round.usage;
        let mut attributes = vec![
            KeyValue::new(GEN_AI_USAGE_INPUT_TOKENS, int(input_tokens(usage))),
            KeyValue::new(GEN_AI_USAGE_OUTPUT_TOKENS, int(usage.output_tokens)),
            KeyValue::new(
                GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
                int(usage.cache_read_tokens),
            ),
            KeyValue::new(
                GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
                int(usage.cache_write_tokens),
            ),
        ];
        if let Some(reason) = round.stop_reason {
            let reasons = opentelemetry::Array::String(vec![name_of(&reason).into()]);
            let reasons = opentelemetry::Value::Array(reasons);
            attributes.push(KeyValue::new(GEN_AI_RESPONSE_FINISH_REASONS, reasons));
        }
        if let Some(cost) = round.cost_usd {
            attributes.push(KeyValue::new(COST_USD, cost));
        }
        if self.content {
            let text: String = (round.blocks.iter())
                .filter_map(|b| match b {
                    Block::Text { text, .. } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            let messages = serde_json::json!([
                {"role": "assistant", "parts": [{"type": "text", "content": text}]}
            ]);
            attributes.push(KeyValue::new(GEN_AI_OUTPUT_MESSAGES, messages.to_string()));
        }
        span.set_attributes(attributes);
        let (provider, model) = self.provider_and_model();
        let mut metric = vec![
            KeyValue::new(GEN_AI_OPERATION_NAME, "chat"),
            KeyValue::new(GEN_AI_PROVIDER_NAME, provider),
            KeyValue::new(GEN_AI_REQUEST_MODEL, model),
        ];
        match &round.error {
            Some(error) => {
                span.set_attribute(KeyValue::new(ERROR_TYPE, "request"));
                span.set_status(Status::error(error.clone()));
                metric.push(KeyValue::new(ERROR_TYPE, "request"));
            }
            None => span.set_status(Status::Ok),
        }
        let took = Duration::from_millis(round.model_ms);
        self.instruments
            .operation_duration
            .record(took.as_secs_f64(), &metric);
        for (kind, tokens) in [
            ("input", input_tokens(usage)),
            ("output", usage.output_tokens),
        ] {
            let mut with_type = metric.clone();
            with_type.push(KeyValue::new(GEN_AI_TOKEN_TYPE, kind));
            self.instruments.token_usage.record(tokens, &with_type);
        }
        span.end_with_timestamp(started + took);
    }

    /// A subagent the `task` call `call_id` started: its own `invoke_agent {agent}` span, a
    /// child of the call's `execute_tool task` span, with its requests and calls below it.
    pub fn subagent(&self, call_id: &str, agent: &str) -> Run {
        let parent = match self.tools.lock().ok().and_then(|t| {
            t.get(call_id)
                .map(|s| opentelemetry::trace::Span::span_context(s).clone())
        }) {
            Some(call) => self.root.with_remote_span_context(call),
            None => self.root.clone(),
        };
        let span = self
            .tracer
            .span_builder(format!("invoke_agent {agent}"))
            .with_kind(SpanKind::Internal)
            .with_attributes(vec![
                KeyValue::new(GEN_AI_OPERATION_NAME, "invoke_agent"),
                KeyValue::new(GEN_AI_AGENT_NAME, agent.to_owned()),
                KeyValue::new(GEN_AI_TOOL_CALL_ID, call_id.to_owned()),
            ])
            .start_with_context(&self.tracer, &parent);
        Run {
            root: parent.with_span(span),
            tracer: self.tracer.clone(),
            instruments: self.instruments.clone(),
            content: self.content,
            names: Mutex::new(self.provider_and_model()),
            chat: Mutex::new(None),
            tools: Mutex::new(HashMap::new()),
        }
    }

    /// A subagent's `agent_start`: the model it asks.
    pub fn agent_started(&self, start: &AgentStart) {
        if let Ok(mut names) = self.names.lock() {
            names.1 = start.model.clone();
        }
        let span = self.root.span();
        span.set_attribute(KeyValue::new(GEN_AI_REQUEST_MODEL, start.model.clone()));
        span.set_attribute(KeyValue::new(AGENT_DEPTH, i64::from(start.at.depth)));
        if self.content {
            span.set_attribute(KeyValue::new(
                GEN_AI_AGENT_DESCRIPTION,
                start.description.clone(),
            ));
        }
    }

    /// A subagent ended: its span says how.
    pub fn agent_finished(&self, end: &AgentEnd) {
        let ok = end.status == rounds_base::outcome::Status::Completed;
        self.end_root(
            &name_of(&end.status),
            &end.usage,
            end.cost_usd,
            ok,
            &end.error,
        );
    }

    /// Ends the root span with how its agent ended: status, usage, cost, and the error when it
    /// did not succeed.
    fn end_root(
        &self,
        status: &str,
        usage: &Usage,
        cost: Option<f64>,
        ok: bool,
        error: &Option<String>,
    ) {
        let span = self.root.span();
        span.set_attribute(KeyValue::new(STATUS, status.to_owned()));
        span.set_attribute(KeyValue::new(
            GEN_AI_USAGE_INPUT_TOKENS,
            int(input_tokens(usage)),
        ));
        span.set_attribute(KeyValue::new(
            GEN_AI_USAGE_OUTPUT_TOKENS,
            int(usage.output_tokens),
        ));
        if let Some(cost) = cost {
            span.set_attribute(KeyValue::new(COST_USD, cost));
        }
        if ok {
            span.set_status(Status::Ok);
        } else {
            span.set_attribute(KeyValue::new(ERROR_TYPE, status.to_owned()));
            span.set_status(Status::error(error.clone().unwrap_or(status.to_owned())));
        }
        span.end();
    }

    /// The run ended: the root span says how.
    pub fn finished(&self, end: &End) {
        let status = name_of(&end.status);
        let (provider, model) = self.provider_and_model();
        self.instruments.runs.add(
            1,
            &[
                KeyValue::new(STATUS, status.clone()),
                KeyValue::new(EXIT_CODE, i64::from(end.exit_code)),
                KeyValue::new(GEN_AI_PROVIDER_NAME, provider),
                KeyValue::new(GEN_AI_REQUEST_MODEL, model),
            ],
        );
        let span = self.root.span();
        span.set_attribute(KeyValue::new(EXIT_CODE, i64::from(end.exit_code)));
        if let Some(failure) = &end.failure {
            span.set_attribute(KeyValue::new(FAILURE, name_of(&failure.kind)));
        }
        let ok = end.exit_code == 0;
        self.end_root(&status, &end.usage, end.cost_usd, ok, &end.error);
    }
}
