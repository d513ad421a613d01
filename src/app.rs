//! Wiring: from a resolved `Config`, build the provider and the toolbox, open the records, write
//! the start line, run the loop under signal handling, and close the records with the end line.
//! Returns the run's `Outcome`; never prints (the face does) and never exits the process
//! (except on a second interrupt, on purpose).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::agent::{Agent, Cancel, Observer};
use crate::config::{Config, Resume};
use crate::conversation::Message;
use crate::files::Target;
use crate::outcome::{Failure, FailureRecord, Outcome, Signal, Status};
use crate::process::ProcessContext;
use crate::provider::{self, BuildError, Provider, ProviderChoice};
use crate::records::{Records, RecordsError};
use crate::redact::Redactor;
use crate::tools::Workspace;
use crate::tools::assemble::{AssembleError, Assembled, ToolSources, assemble};
use crate::tools::mcp::McpServers;
use crate::tools::pipeline::{Settings, Toolbox};
use crate::transcript::{End, Line, Start, WriteError};

mod subagents;

/// Why a run could not start. Every one of these comes before any model call.
#[derive(Debug, thiserror::Error)]
enum SetupError {
    /// The provider could not be built (its HTTP client; a cloud's place or credentials).
    #[error(transparent)]
    Provider(BuildError),
    /// A tool source is wrong: a manifest, an MCP server that did not start, a rule.
    #[error(transparent)]
    Tools(#[from] AssembleError),
    /// An agent's tool rules do not compile.
    #[error("agent {0:?}: {1}")]
    Agent(String, crate::tools::policy::PolicyError),
    /// The default transcript (under `ROUNDS_HOME`) cannot be written: say how to run anyway.
    #[error("{0}; pass --no-transcript, or set ROUNDS_HOME to a writable directory")]
    DefaultTranscript(WriteError),
    /// A record the user asked for (`--transcript`, `--store`) cannot be opened or written.
    #[error(transparent)]
    Records(RecordsError),
}

impl SetupError {
    /// An HTTP client that cannot be built is rounds' failure; everything else is the user's to
    /// fix.
    fn status(&self) -> Status {
        match self {
            SetupError::Provider(BuildError::Client(_)) => Status::Error,
            SetupError::Provider(BuildError::Config(_))
            | SetupError::Tools(_)
            | SetupError::Agent(..)
            | SetupError::DefaultTranscript(_)
            | SetupError::Records(_) => Status::Usage,
        }
    }
}

/// What a run shares with the other runs of its process (`rounds batch`). A lone run shares
/// nothing: it builds its own provider and watches the signals itself.
#[derive(Clone, Default)]
pub(crate) struct Shared {
    /// Cancels the run from outside; whoever holds it watches SIGINT and SIGTERM instead of the
    /// run.
    pub(crate) cancel: Option<Cancel>,
    /// Builds the run's provider in place of `provider::build`: one HTTP client and one rate
    /// limiter per provider for all the runs.
    pub(crate) providers: Option<Arc<dyn ProviderSource>>,
    /// Opens the run's store in place of connecting to `--store`: a worker's jobs write through
    /// the worker's pool, fenced by their lease.
    pub(crate) store: Option<Arc<dyn crate::records::StoreSource>>,
}

/// Where a run that shares its process gets its provider.
pub(crate) trait ProviderSource: Send + Sync {
    fn build(
        &self,
        choice: &ProviderChoice,
        model: &str,
        idle: Duration,
    ) -> Result<Arc<dyn Provider>, BuildError>;
}

/// Runs one configured run to its end. `observer` hears about it as it happens; `cancel` stops
/// it early (signals are watched here too; the face cancels when stdout closes); `started` is
/// when the run began for the user (stdin waited for included).
pub(crate) async fn run(
    config: Config,
    observer: Arc<dyn Observer>,
    cancel: Cancel,
    started: Instant,
) -> Outcome {
    let redactor = config.tool_settings.redactor.clone();
    finish(
        execute(config, observer, started, cancel, true, Sources::default()).await,
        started,
        &redactor,
    )
}

/// [`run`] for a run that shares its process with others (see [`Shared`]).
pub(crate) async fn run_shared(
    config: Config,
    observer: Arc<dyn Observer>,
    shared: Shared,
) -> Outcome {
    let started = Instant::now();
    let (cancel, watch) = match shared.cancel {
        Some(cancel) => (cancel, false),
        None => (Cancel::default(), true),
    };
    let sources = Sources {
        providers: shared.providers,
        store: shared.store,
    };
    let redactor = config.tool_settings.redactor.clone();
    let ran = execute(config, observer, started, cancel, watch, sources).await;
    finish(ran, started, &redactor)
}

/// What a shared run takes from its process (see [`Shared`]).
#[derive(Default)]
struct Sources {
    providers: Option<Arc<dyn ProviderSource>>,
    store: Option<Arc<dyn crate::records::StoreSource>>,
}

/// The outcome of a run, or of a run that could not start (its error redacted: a server or
/// provider that failed to start may quote a secret).
fn finish(ran: Result<Outcome, SetupError>, started: Instant, redactor: &Redactor) -> Outcome {
    match ran {
        Ok(outcome) => outcome,
        Err(failure) => {
            let error = redactor.redacted(failure.to_string());
            let mut outcome = Outcome::new(failure.status(), Some(error));
            // A record that could not be opened or started is a write failure, whatever its
            // status: a batch reads the kind to stop starting jobs on a full disk.
            if let SetupError::Records(_) | SetupError::DefaultTranscript(_) = failure {
                outcome.failure = Some(FailureRecord::new(Failure::Write, None));
            }
            outcome.duration_ms = started.elapsed().as_millis() as u64;
            outcome
        }
    }
}

/// What a run has once it is set up: everything below is ready and the start line is written.
struct Ready {
    agent: Agent,
    servers: McpServers,
    records: Arc<Records>,
    history: Vec<Message>,
    /// `--output-last-message`: where the final answer also goes.
    output_last_message: Option<Target>,
    /// The transcript's file, for tidying the outputs directory beside it.
    transcript: Option<Target>,
    run_id: String,
}

async fn execute(
    config: Config,
    observer: Arc<dyn Observer>,
    started: Instant,
    cancel: Cancel,
    watch: bool,
    sources: Sources,
) -> Result<Outcome, SetupError> {
    // Set up (MCP servers starting, the store connecting) is part of the run's time too.
    let _deadline = config
        .limits
        .deadline
        .map(|t| deadline(started, t, &cancel));
    let Ready {
        agent,
        servers,
        records,
        mut history,
        output_last_message,
        transcript,
        run_id,
    } = set_up(config, observer.clone(), &sources, &cancel).await?;

    let signals = watch.then(|| watch_signals(&cancel));
    let mut outcome = agent.run(&mut history, &records, &cancel).await;
    // Every ending's text (a provider's error body quoting a key, a token endpoint's quoting a
    // client secret) is redacted here, once, before the end line, stream-json, the step
    // summary or stderr show it.
    outcome.error = outcome.error.map(|e| agent.redactor.redacted(e));
    servers.shutdown().await;
    // Whatever a tool left behind (its supervisor killed, the tree re-parented to rounds).
    crate::process::settle_and_reap().await;
    if let Some(signals) = signals {
        signals.abort();
    }

    outcome.transcript = records.transcript_path();
    outcome.run_id = Some(run_id);
    say_unwaited(&mut outcome);
    match (&transcript, agent.toolbox.outputs().dir()) {
        // An outputs directory nothing was saved in is no use beside the transcript.
        (Some(t), _) => t.dir().remove_empty(&crate::config::outputs_name(t)),
        // Without a transcript nothing refers to the saved outputs (they live in the temp
        // directory): they go with the run. (std does not follow links inside it.)
        (None, Some(dir)) => {
            agent.toolbox.outputs().clear();
            let _ = std::fs::remove_dir_all(dir);
        }
        (None, None) => {}
    }
    outcome.duration_ms = started.elapsed().as_millis() as u64;
    if let Some(target) = &output_last_message
        && let Err(e) = write_answer(target, &outcome.final_text)
    {
        outcome = failed_record(outcome, e);
    }
    Ok(close(outcome, &records, observer.as_ref()).await)
}

/// Builds the provider and the toolbox, opens the records and writes the start line. Every
/// failure here comes before any model call.
async fn set_up(
    config: Config,
    observer: Arc<dyn Observer>,
    sources: &Sources,
    cancel: &Cancel,
) -> Result<Ready, SetupError> {
    let mut turn = config.user_turn();
    let provider = build_provider(
        sources,
        &config.provider,
        &config.model,
        config.idle_timeout,
    )?;
    let (tool_timeout, redactor) = (
        config.tool_settings.timeout,
        config.tool_settings.redactor.clone(),
    );
    let (toolbox, servers) = toolbox(&config.tools, config.workspace, config.tool_settings).await?;
    let run_system = config.system.clone();
    // Without native structured output, the model is told the schema.
    let mut system = match &config.output_schema {
        Some(schema) if !provider.structured_output() => config.system + &schema.instruction(),
        _ => config.system,
    };
    redact_prompt(&redactor, &mut turn, &mut system);
    let store_at = (config.store.as_deref(), sources.store.as_deref());
    let records = Arc::new(
        open_records(
            config.transcript.as_ref(),
            store_at,
            config.transcript_is_default,
        )
        .await?,
    );
    let agent = Agent {
        provider,
        toolbox: Arc::new(toolbox),
        system,
        limits: config.limits,
        cache: config.cache,
        price: config.model_info.price,
        output_schema: config.output_schema,
        observer,
        redactor,
        spend: Arc::default(),
        at: None,
    };
    let given = subagents::Given {
        agents: config.agents,
        sources,
        choice: &config.provider,
        idle: config.idle_timeout,
        system: run_system,
        project_docs: config.project_docs.sent.clone(),
        records: records.clone(),
        cancel: cancel.clone(),
    };
    subagents::attach(&agent, given)?;
    let recorded = Recorded {
        attachments: config.attached.record,
        run_id: config.run_id.clone(),
        turn: turn.clone(),
        project_docs: config.project_docs.record,
        resumed_from: config.resume.as_ref().map(|r| r.path.display().to_string()),
        sandbox: config.sandbox_record,
        tool_timeout,
    };
    let start = recorded.start(&agent);
    (records.write(&Line::Start(start.clone())).await).map_err(SetupError::Records)?;
    agent.observer.started(&start);
    Ok(Ready {
        agent,
        output_last_message: config.output_last_message,
        transcript: config.transcript,
        run_id: config.run_id,
        servers,
        records,
        history: conversation(config.resume, config.attached.media, turn),
    })
}

/// What the `start` line records besides the run's `Agent`.
struct Recorded {
    attachments: Vec<crate::transcript::Attached>,
    run_id: String,
    turn: String,
    project_docs: Vec<crate::transcript::ProjectDoc>,
    resumed_from: Option<String>,
    sandbox: crate::process::sandbox::Summary,
    tool_timeout: Duration,
}

impl Recorded {
    fn start(self, agent: &Agent) -> Start {
        Start {
            run_id: self.run_id,
            time: crate::agent::now_rfc3339(),
            provider: agent.provider.name().to_owned(),
            model: agent.provider.model().to_owned(),
            workspace: agent.toolbox.workspace().root().display().to_string(),
            prompt: self.turn,
            project_docs: self.project_docs,
            system: agent.system.clone(),
            tools: agent.toolbox.policy().allow_rules(),
            limits: recorded_limits(&agent.limits, self.tool_timeout, &agent.redactor),
            resumed_from: self.resumed_from,
            sandbox: Some(self.sandbox),
            redaction: agent.redactor.names(),
            attachments: self.attachments,
        }
    }
}

/// The run's provider: from the batch's source when it shares one, else its own.
fn build_provider(
    sources: &Sources,
    choice: &ProviderChoice,
    model: &str,
    idle: std::time::Duration,
) -> Result<Arc<dyn Provider>, SetupError> {
    let provider = match sources.providers.as_deref() {
        Some(source) => source.build(choice, model, idle),
        None => provider::build(choice, model, idle),
    };
    provider.map_err(SetupError::Provider)
}

/// The run's tools: the built-ins, and those from manifests and MCP servers; the allowlist is
/// checked once every name is known. Servers start before any model call, so a broken one is a
/// usage error, not a surprise in round 3.
async fn toolbox(
    tools: &ToolSources,
    workspace: Workspace,
    settings: Settings,
) -> Result<(Toolbox, McpServers), SetupError> {
    let processes = ProcessContext {
        cwd: workspace.root(),
        env: &settings.env,
        sandbox: &settings.sandbox,
    };
    let Assembled {
        registry,
        policy,
        servers,
    } = assemble(tools, &processes).await?;
    let toolbox = Toolbox::new(registry, policy, workspace, settings);
    Ok((toolbox, servers))
}

/// Opens the transcript and the store. The default transcript is one the user did not ask
/// for: when it cannot be written, the error says how to run without it.
async fn open_records(
    transcript: Option<&Target>,
    (store, source): (Option<&str>, Option<&dyn crate::records::StoreSource>),
    transcript_is_default: bool,
) -> Result<Records, SetupError> {
    Records::open(transcript, store, source)
        .await
        .map_err(|e| match e {
            RecordsError::Transcript(e) if transcript_is_default => {
                SetupError::DefaultTranscript(e)
            }
            e => SetupError::Records(e),
        })
}

/// Takes the run's secrets out of the prompt and the system prompt: what the user typed or
/// piped in (`cat .env | rounds 'why'`) is sent and recorded too. The model never needs a
/// secret's value (tools get theirs through `--tool-env`), so the user is warned, not asked.
fn redact_prompt(redactor: &Redactor, turn: &mut String, system: &mut String) {
    let mut found = redactor.redact(turn);
    found.extend(redactor.redact(system));
    found.sort();
    found.dedup();
    if !found.is_empty() {
        tracing::warn!(
            "the prompt held the value of {}: it is sent and recorded as [REDACTED:NAME]",
            found.join(", ")
        );
    }
}

/// The limits the start line records; a `--check` command written with a secret in it is
/// recorded redacted, as its runs are.
fn recorded_limits(
    limits: &crate::agent::LoopLimits,
    tool_timeout: std::time::Duration,
    redactor: &Redactor,
) -> crate::transcript::Limits {
    let mut recorded = limits.record(tool_timeout);
    if let Some(check) = &mut recorded.check {
        redactor.redact(check);
    }
    recorded
}

/// The conversation so far (a resumed one, or none) with the prompt, and the files attached to
/// it, as the next user turn.
fn conversation(
    resume: Option<Resume>,
    attachments: Vec<crate::attachment::Attachment>,
    prompt: String,
) -> Vec<Message> {
    let mut history = resume.map(|r| r.history).unwrap_or_default();
    crate::conversation::push_attached(&mut history, attachments, prompt);
    history
}

/// Writes the end line and tells the observer. A run whose record could not be closed failed,
/// whatever it did before.
async fn close(mut outcome: Outcome, records: &Records, observer: &dyn Observer) -> Outcome {
    if let Err(e) = records.write(&Line::End(End::from(&outcome))).await {
        outcome = failed_record(outcome, e);
    }
    observer.finished(&End::from(&outcome));
    outcome
}

/// A run whose record or output could not be written failed, whatever it did before; the
/// earlier error, if any, is kept in the message.
fn failed_record(mut outcome: Outcome, e: impl std::fmt::Display) -> Outcome {
    let error = match outcome.error.take() {
        Some(earlier) => format!("{earlier}; then {e}"),
        None => e.to_string(),
    };
    outcome.fail(FailureRecord::new(Failure::Write, None), error)
}

/// A provider that asked for a longer wait than rounds will sleep through (a quota, not a blip)
/// was not asked again: the error says so, with the wait asked for, wherever it is written (the
/// provider's own text said only "HTTP 429").
fn say_unwaited(outcome: &mut Outcome) {
    let Some(asked) = outcome.failure.as_ref().and_then(|f| f.retry_after) else {
        return;
    };
    let most = provider::retry::MAX_HONOURED_WAIT.as_secs_f64();
    if asked <= most {
        return;
    }
    let said = format!(
        "the provider asked to wait {asked}s before trying again, more than rounds waits \
         ({most}s), so it did not retry: run again after that"
    );
    outcome.error = Some(match outcome.error.take() {
        Some(error) => format!("{error}; {said}"),
        None => said,
    });
}

/// `--output-last-message` could not be written.
#[derive(Debug, thiserror::Error)]
#[error("--output-last-message: {0}")]
struct AnswerError(std::io::Error);

/// `--output-last-message`: the final answer, private to its owner. A run that ended without
/// one writes no file, and removes the one an earlier run left there: that the file exists says
/// this run answered (action.yml's `answer-file` is absent then), and a stale answer would be
/// read as this run's.
fn write_answer(target: &Target, answer: &str) -> Result<(), AnswerError> {
    if answer.is_empty() {
        return match target.dir().remove_file(target.name()) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(AnswerError(e)),
            _ => Ok(()),
        };
    }
    target.write(answer.as_bytes()).map_err(AnswerError)
}

/// `--timeout` counted from when the run began for the user (`started`: a lone run's is rounds'
/// own start, stdin included), not from the loop's start, which comes after reading stdin and
/// setting up; the loop's own timer, later, finds the run already cancelled. Dropping the
/// guard stops the timer.
fn deadline(
    started: Instant,
    timeout: Duration,
    cancel: &Cancel,
) -> tokio_util::task::AbortOnDropHandle<()> {
    let cancel = cancel.clone();
    tokio_util::task::AbortOnDropHandle::new(tokio::spawn(async move {
        tokio::time::sleep_until((started + timeout).into()).await;
        let secs = timeout.as_secs_f64();
        cancel.cancel(
            Status::Timeout,
            format!("the run's deadline of {secs}s passed"),
        );
    }))
}

/// SIGINT and SIGTERM cancel the run with their status.
fn watch_signals(cancel: &Cancel) -> tokio::task::JoinHandle<()> {
    let cancel = cancel.clone();
    on_signals(move |signal| {
        let earlier = cancel.cancel(
            Status::Interrupted(signal),
            format!("interrupted by {}", signal.name()),
        );
        matches!(earlier, Some(Status::Interrupted(_)))
    })
}

/// Calls `stop` for each SIGINT and SIGTERM; when it says a signal had come before, ends the
/// process at once with that signal's status: the user asked twice, and everything finished is
/// already on disk. A single run and a batch both stop this way.
pub(crate) fn on_signals(
    mut stop: impl FnMut(Signal) -> bool + Send + 'static,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut int), Ok(mut term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            tracing::warn!("cannot install signal handlers; Ctrl-C will end rounds abruptly");
            return;
        };
        loop {
            let signal = tokio::select! {
                _ = int.recv() => Signal::Interrupt,
                _ = term.recv() => Signal::Terminate,
            };
            if stop(signal) {
                #[allow(clippy::exit)]
                std::process::exit(i32::from(Status::Interrupted(signal).exit_code()));
            }
        }
    })
}
