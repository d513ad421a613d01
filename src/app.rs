//! Wiring: build the provider, the toolbox and the transcript from a resolved `Config`, run the
//! loop under the run's deadline and signal handling, write the closing line, and report an
//! `Outcome`. Never exits the process (except on a second interrupt, on purpose).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::agent::{Agent, Fanout, LoopLimits, Observer};
use crate::cli::OutputMode;
use crate::config::{Config, ProviderChoice};
use crate::conversation::Message;
use crate::outcome::{Outcome, Status};
use crate::process::ProcessContext;
use crate::progress::Progress;
use crate::provider::{
    Provider, anthropic::Anthropic, gemini::Gemini, openai::OpenAi, replay::Replay,
};
use crate::records::Records;
use crate::render::{StreamJson, end_of};
use crate::tools::Outputs;
use crate::tools::assemble::{Assembled, assemble};
use crate::tools::pipeline::{Settings, Toolbox};
use crate::transcript::{Limits, Line, Start, Writer};

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

/// Why the run was cancelled, with the exit code it ends with.
#[derive(Debug, Clone, Copy)]
enum Cancel {
    Deadline,
    Signal(&'static str, u8),
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
    let observer = observer(&config);
    let Config {
        prompt,
        system,
        workspace,
        resume,
        ..
    } = config;
    // Tools from manifests and MCP servers join the built-ins; the allowlist is checked once
    // every name is known. Servers start before any model call, so a broken one is a usage
    // error, not a surprise in round 3.
    let processes = ProcessContext {
        cwd: workspace.root(),
        env: &config.tool_env,
    };
    let Assembled {
        registry,
        policy,
        servers,
    } = assemble(&config.tools, &processes)
        .await
        .map_err(SetupFailure::usage)?;
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

    // The transcript path and the store are checked before any model call: an unwritable file
    // or an unreachable database is a usage error.
    let mut records = Records {
        transcript: match &config.transcript {
            Some(path) => Some(Writer::create(path).map_err(SetupFailure::usage)?),
            None => None,
        },
        store: match &config.store {
            Some(url) => Some(Box::new(
                crate::store::connect(url)
                    .await
                    .map_err(SetupFailure::usage)?,
            )),
            None => None,
        },
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
            budget_tokens: config.budget_tokens,
            timeout_secs: config.timeout.map(|t| t.as_secs_f64()),
            tool_timeout_secs: config.tool_timeout.as_secs_f64(),
            max_parallel: config.max_parallel,
        },
        resumed_from: resume.as_ref().map(|r| r.path.display().to_string()),
    };
    records
        .write(&Line::Start(start.clone()))
        .await
        .map_err(SetupFailure::usage)?;
    observer.started(&start);

    let agent = Agent {
        provider,
        toolbox,
        system,
        limits: LoopLimits {
            max_rounds: config.max_rounds,
            max_tokens: config.max_tokens,
            max_parallel: config.max_parallel,
            budget_tokens: config.budget_tokens,
            on_max_rounds: config.on_max_rounds,
            fail_on: config.fail_on,
            retry: config.retry.clone(),
        },
        observer: observer.clone(),
    };
    let cancel = CancellationToken::new();
    let reason = Arc::new(Mutex::new(None));
    let watchers = watch(&cancel, &reason, config.timeout);
    let mut history = resume.map(|r| r.history).unwrap_or_default();
    history.push(Message::User(prompt));
    let finished = agent.run(&mut history, &mut records, &cancel).await;
    servers.shutdown().await;
    watchers.abort();

    let mut outcome = Outcome {
        status: finished.status,
        exit_code: finished.status.exit_code(),
        final_text: finished.final_text,
        rounds: finished.rounds,
        usage: finished.usage,
        duration_ms: started.elapsed().as_millis() as u64,
        error: finished.error,
        transcript: records.transcript_path(),
        stop_reason: finished.stop_reason,
        tool_calls: finished.tool_calls,
        tool_errors: finished.tool_errors,
    };
    if outcome.status == Status::Interrupted {
        let why = reason.lock().ok().and_then(|r| *r);
        match why {
            Some(Cancel::Deadline) => {
                outcome.status = Status::Timeout;
                outcome.exit_code = Status::Timeout.exit_code();
                let secs = config.timeout.map_or(0.0, |t| t.as_secs_f64());
                outcome.error = Some(format!("the run's deadline of {secs}s passed"));
            }
            Some(Cancel::Signal(name, code)) => {
                outcome.exit_code = code;
                outcome.error = Some(format!("interrupted by {name}"));
            }
            None => {}
        }
    }
    let end = end_of(&outcome);
    {
        if let Err(e) = records.write(&Line::End(end.clone())).await {
            // The run itself may have succeeded, but its record did not: that is a failure.
            outcome.status = Status::Error;
            outcome.exit_code = Status::Error.exit_code();
            outcome.error = Some(match outcome.error.take() {
                Some(earlier) => format!("{earlier}; then {e}"),
                None => e.to_string(),
            });
        }
    }
    observer.finished(&end_of(&outcome));
    Ok(outcome)
}

/// Progress on a terminal's stderr and/or events on stdout.
fn observer(config: &Config) -> Arc<dyn Observer> {
    let mut all: Vec<Arc<dyn Observer>> = Vec::new();
    if config.output == OutputMode::StreamJson {
        all.push(Arc::new(StreamJson::default()));
    }
    if !config.quiet {
        if let Some(progress) = Progress::for_terminal(config.max_rounds) {
            all.push(Arc::new(progress));
        }
    }
    Arc::new(Fanout(all))
}

/// Cancels the run on the deadline, SIGINT or SIGTERM, recording why. A second signal ends the
/// process at once: the user asked twice, and everything finished is already on disk.
fn watch(
    cancel: &CancellationToken,
    reason: &Arc<Mutex<Option<Cancel>>>,
    deadline: Option<std::time::Duration>,
) -> tokio::task::JoinHandle<()> {
    let (cancel, reason) = (cancel.clone(), reason.clone());
    tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut int), Ok(mut term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            tracing::warn!("cannot install signal handlers; Ctrl-C will end rounds abruptly");
            return;
        };
        let sleep = async {
            match deadline {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(sleep);
        let mut deadline_passed = false;
        loop {
            let why = tokio::select! {
                () = &mut sleep, if !deadline_passed => {
                    deadline_passed = true;
                    Cancel::Deadline
                }
                _ = int.recv() => Cancel::Signal("SIGINT", 130),
                _ = term.recv() => Cancel::Signal("SIGTERM", 143),
            };
            let Ok(mut slot) = reason.lock() else { return };
            match (*slot, why) {
                (Some(Cancel::Signal(..)), Cancel::Signal(_, code)) => {
                    #[allow(clippy::exit)]
                    std::process::exit(i32::from(code));
                }
                (Some(_), Cancel::Deadline) => {}
                (_, why) => {
                    *slot = Some(why);
                    cancel.cancel();
                }
            }
        }
    })
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
        ProviderChoice::Gemini { base_url, key } => {
            Arc::new(Gemini::new(client()?, base_url, key.clone(), model, idle))
        }
        ProviderChoice::Replay { transcript, .. } => Arc::new(Replay::new(transcript)),
    })
}
