//! A run's OpenTelemetry (crate `rounds-telemetry`), wired to the run: configured from the
//! user's `OTEL_*` variables and `--otel-endpoint`, started inside the run's runtime, fed the
//! run's events as an [`Observer`], its context handed to the tools (`TRACEPARENT`), and
//! flushed, bounded in time, when the run ends.

use std::ffi::OsString;
use std::sync::Arc;

use crate::telemetry::{Config as OtelConfig, ConfigError, Hook, Run, Telemetry};
use crate::tools::hooks::{HookRan, HookSink};
use crate::tools::pipeline::Settings;

use crate::agent::Observer;
use crate::cli::Cli;
use crate::conversation::{ToolResult, ToolUse};
use crate::outcome::CheckRun;
use crate::transcript::{AgentEnd, AgentRef, AgentStart, End, RetryNote, Round, Start};

/// What telemetry the flags and the environment ask for (`None`: off).
pub(crate) fn config(
    cli: &Cli,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<OtelConfig>, ConfigError> {
    OtelConfig::read(env, cli.otel_endpoint.as_deref(), cli.otel_content)
}

/// Starts exporting, under `TRACEPARENT` if rounds runs in a trace. Inside the run's runtime.
/// An exporter that cannot be built is said, and rounds goes on without.
pub(crate) fn telemetry(
    config: &OtelConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<Telemetry> {
    let client = match crate::net::builder(std::time::Duration::from_secs(10)).build() {
        Ok(client) => client,
        Err(e) => {
            tracing::warn!("OpenTelemetry is off: {}", crate::net::describe(&e));
            return None;
        }
    };
    let traceparent = env("TRACEPARENT");
    let tracestate = env("TRACESTATE");
    match Telemetry::start(
        config,
        &client,
        traceparent.as_deref(),
        tracestate.as_deref(),
    ) {
        Ok(telemetry) => Some(telemetry),
        Err(e) => {
            tracing::warn!("OpenTelemetry is off: {e}");
            None
        }
    }
}

/// The telemetry a batch's flags and the environment ask for, started (`None`: off).
pub(crate) fn for_batch(cli: &Cli) -> Result<Option<Telemetry>, ConfigError> {
    let env = |name: &str| crate::env::var(name);
    Ok(config(cli, &env)?.and_then(|asked| telemetry(&asked, &env)))
}

/// Ends a batch's span with its status and flushes its telemetry, when it has any.
pub(crate) async fn end_batch(
    trace: Option<&crate::telemetry::Group>,
    telemetry: Option<&Telemetry>,
    status: crate::outcome::Status,
) {
    let (Some(group), Some(telemetry)) = (trace, telemetry) else {
        return;
    };
    let name = status.as_str().to_owned();
    let error = (status != crate::outcome::Status::Completed).then(|| name.clone());
    group.end(&[("rounds.status", name)], error);
    telemetry.flush(crate::telemetry::FLUSH_BOUND).await;
}

/// [`telemetry`] and a run's trace, started now.
pub(crate) fn start(
    config: &OtelConfig,
    env: &dyn Fn(&str) -> Option<String>,
    run_id: &str,
) -> Option<(Telemetry, Arc<Run>)> {
    let telemetry = telemetry(config, env)?;
    let run = Arc::new(telemetry.run(run_id));
    Some((telemetry, run))
}

/// The tools of a traced run: their environment gets the run's trace context (a command traced
/// by its own SDK joins the run's trace), and their hooks are spans of it.
pub(crate) fn hand_to_tools(settings: &mut Settings, run: &Arc<Run>) {
    let env: &mut Vec<(OsString, OsString)> = &mut settings.env;
    env.retain(|(k, _)| k != "TRACEPARENT" && k != "TRACESTATE");
    env.push(("TRACEPARENT".into(), run.traceparent().into()));
    settings.hooks.sink = Some(Arc::new(Traced(run.clone())));
}

impl HookSink for Traced {
    fn hook_ran(&self, ran: &HookRan<'_>) {
        self.0.hook_ran(&Hook {
            event: ran.event,
            command: ran.command,
            tool: ran.tool,
            call_id: ran.call_id,
            started: ran.started,
            duration: ran.duration,
            outcome: ran.outcome,
        });
    }
}

/// The run's trace, told what happens as the transcript is.
pub(crate) struct Traced(pub(crate) Arc<Run>);

impl Observer for Traced {
    fn started(&self, start: &Start) {
        self.0.started(start);
    }
    fn round_started(&self, round: u32) {
        self.0.round_started(round);
    }
    fn response_model(&self, model: &str) {
        self.0.response_model(model);
    }
    fn tool_started(&self, call: &ToolUse, _subject: Option<&str>) {
        self.0.tool_started(call);
    }
    fn tool_finished(&self, result: &ToolResult) {
        self.0.tool_finished(result);
    }
    fn retry(&self, note: &RetryNote) {
        self.0.retry(note);
    }
    fn check_finished(&self, round: u32, check: &CheckRun) {
        self.0.check_finished(round, check);
    }
    fn round_finished(&self, round: &Round) {
        self.0.round_finished(round);
    }
    fn finished(&self, end: &End) {
        self.0.finished(end);
    }
    fn scoped(&self, at: &AgentRef) -> Option<Arc<dyn Observer>> {
        // The innermost call of the way down is the one whose span it nests under.
        let call = at.call.rsplit('/').next().unwrap_or(&at.call);
        Some(Arc::new(Traced(Arc::new(self.0.subagent(call, &at.agent)))))
    }
    fn agent_started(&self, start: &AgentStart) {
        self.0.agent_started(start);
    }
    fn agent_finished(&self, end: &AgentEnd) {
        self.0.agent_finished(end);
    }
}
