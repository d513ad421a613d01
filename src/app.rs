//! Wiring: build the provider, the toolbox and the transcript from a resolved `Config`, run the
//! loop, write the closing line, and report an `Outcome`. Never exits the process.

use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::agent::{Agent, LoopLimits, Observer, Quiet};
use crate::config::{Config, ProviderChoice};
use crate::conversation::Message;
use crate::outcome::{Outcome, Status};
use crate::progress::Progress;
use crate::provider::{
    Provider, anthropic::Anthropic, gemini::Gemini, openai::OpenAi, replay::Replay,
};
use crate::tools::Outputs;
use crate::tools::pipeline::{Settings, Toolbox};
use crate::transcript::{End, Limits, Line, Start, Writer};

/// A run that could not start.
struct SetupFailure {
    status: Status,
    message: String,
}

impl SetupFailure {
    fn usage(e: impl std::fmt::Display) -> SetupFailure {
        SetupFailure {
            status: Status::Usage,
            message: e.to_string(),
        }
    }
}

/// Runs one configured run to its end.
pub async fn run(config: Config) -> Outcome {
    let started = Instant::now();
    let mut outcome = match execute(config, started).await {
        Ok(outcome) => outcome,
        Err(failure) => {
            let mut o = Outcome::usage_error(failure.message);
            o.status = failure.status;
            o.exit_code = failure.status.exit_code();
            o
        }
    };
    outcome.duration_ms = started.elapsed().as_millis() as u64;
    outcome
}

async fn execute(config: Config, started: Instant) -> Result<Outcome, SetupFailure> {
    let provider = build_provider(&config)?;
    let Config {
        prompt,
        system,
        workspace,
        registry,
        policy,
        ..
    } = config;
    // Whole outputs of cut results live beside the transcript, or in the temp directory.
    let outputs = match &config.transcript {
        Some(path) => path.with_extension("outputs"),
        None => std::env::temp_dir().join(format!("rounds-{}", config.run_id)),
    };
    let settings = Settings {
        timeout: config.tool_timeout,
        max_result_bytes: config.max_result_bytes,
        env: config.tool_env.clone(),
        outputs: Outputs::new(outputs),
        hooks: config.hooks.clone(),
    };
    let toolbox = Arc::new(Toolbox::new(registry, policy, workspace, settings));

    // The transcript path is checked before any model call: an unwritable one is a usage error.
    let mut writer = match &config.transcript {
        Some(path) => Some(Writer::create(path).map_err(SetupFailure::usage)?),
        None => None,
    };
    let start = Start {
        run_id: config.run_id.clone(),
        time: crate::agent::now_rfc3339(),
        provider: provider.name().to_owned(),
        model: provider.model().to_owned(),
        workspace: toolbox.workspace().root().display().to_string(),
        prompt: prompt.clone(),
        system: system.clone(),
        tools: toolbox.policy().allow_rules(),
        limits: Limits {
            max_rounds: config.max_rounds,
            max_tokens: config.max_tokens,
            budget_tokens: None,
            timeout_secs: None,
            tool_timeout_secs: config.tool_timeout.as_secs_f64(),
            max_parallel: config.max_parallel,
        },
        resumed_from: None,
    };
    if let Some(w) = writer.as_mut() {
        w.write(&Line::Start(start)).map_err(SetupFailure::usage)?;
    }

    let observer: Arc<dyn Observer> = match Progress::for_terminal(config.max_rounds) {
        Some(progress) if !config.quiet => Arc::new(progress),
        _ => Arc::new(Quiet),
    };
    let agent = Agent {
        provider,
        toolbox,
        system,
        limits: LoopLimits {
            max_rounds: config.max_rounds,
            max_tokens: config.max_tokens,
            max_parallel: config.max_parallel,
        },
        observer,
    };
    let cancel = CancellationToken::new();
    let mut history = vec![Message::User(prompt)];
    let finished = agent.run(&mut history, writer.as_mut(), &cancel).await;

    let mut outcome = Outcome {
        status: finished.status,
        exit_code: finished.status.exit_code(),
        final_text: finished.final_text,
        rounds: finished.rounds,
        usage: finished.usage,
        duration_ms: started.elapsed().as_millis() as u64,
        error: finished.error,
        transcript: writer.as_ref().map(|w| w.path().to_owned()),
        stop_reason: finished.stop_reason,
        tool_calls: finished.tool_calls,
        tool_errors: finished.tool_errors,
    };
    if let Some(w) = writer.as_mut() {
        let end = End {
            status: outcome.status.as_str().to_owned(),
            exit_code: outcome.exit_code,
            rounds: outcome.rounds,
            final_text: outcome.final_text.clone(),
            usage: outcome.usage,
            duration_ms: outcome.duration_ms,
            error: outcome.error.clone(),
            tool_calls: outcome.tool_calls,
            tool_errors: outcome.tool_errors.clone(),
        };
        if let Err(e) = w.write(&Line::End(end)) {
            // The run itself may have succeeded, but its record did not: that is a failure.
            outcome.status = Status::Error;
            outcome.exit_code = Status::Error.exit_code();
            outcome.error = Some(match outcome.error.take() {
                Some(earlier) => format!("{earlier}; then {e}"),
                None => e.to_string(),
            });
        }
    }
    Ok(outcome)
}

fn build_provider(config: &Config) -> Result<Arc<dyn Provider>, SetupFailure> {
    let client = || {
        crate::provider::http::client().map_err(|e| SetupFailure {
            status: Status::Error,
            message: format!("cannot set up the HTTP client: {e}"),
        })
    };
    let idle = config.idle_timeout;
    let model = config.model.clone();
    Ok(match &config.provider {
        ProviderChoice::Anthropic { base_url, key } => Arc::new(Anthropic::new(
            client()?,
            base_url,
            key.clone(),
            model,
            idle,
        )),
        ProviderChoice::Gemini { base_url, key } => {
            Arc::new(Gemini::new(client()?, base_url, key.clone(), model, idle))
        }
        ProviderChoice::OpenAi {
            name,
            flavor,
            base_url,
            key,
        } => Arc::new(OpenAi::new(
            name,
            *flavor,
            client()?,
            base_url,
            key.clone(),
            model,
            idle,
        )),
        ProviderChoice::Replay { transcript, .. } => Arc::new(Replay::new(transcript)),
    })
}
