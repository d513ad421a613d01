//! Running a loop from a Rust program, in-process: the same engine as the `rounds` command,
//! with its defaults, its trust rules and its records.
//!
//! A [`Run`] is what the command line says, said in Rust: a model, a prompt, the allowlist, the
//! limits and the sandbox, and any other flag of `rounds --help` by its name ([`Run::flag`]).
//! It is resolved exactly as the command's flags are (the same defaults, the same checks, the
//! same environment variables for keys), except that no settings file is read: the program that
//! embeds rounds is the user, and what it asks for is what runs. Nothing is read from the
//! process's stdin.
//!
//! [`Run::start`] gives the run's [`Events`] as they happen and a future of its
//! [`Outcome`]. Drive the future (on any tokio runtime) while reading the events:
//!
//! ```no_run
//! # async fn demo() -> Result<(), rounds::Error> {
//! let started = rounds::Run::new("anthropic/claude-sonnet-4-5", "list the files")
//!     .allow("list_dir")
//!     .max_rounds(5)
//!     .start()?;
//! let (mut events, outcome) = (started.events, started.outcome);
//! let print = async {
//!     while let Some(event) = events.next().await {
//!         if let rounds::Event::Text(text) = event {
//!             print!("{text}");
//!         }
//!     }
//! };
//! let (outcome, ()) = tokio::join!(outcome, print);
//! println!("\n{:?}, exit code {}", outcome.status, outcome.status.exit_code());
//! # Ok(())
//! # }
//! ```
//!
//! Tools run under a supervisor process that is the program itself, started again with
//! [`SUPERVISE_ARG`]: a program that runs tools (bash, command tools, hooks, MCP servers) must
//! call [`supervise_if_asked`] first thing in `main`. Unlike the command, an embedded run
//! leaves the process as it is: it does not make it a subreaper or undumpable, nor install a
//! logger.

use std::ffi::OsString;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use tokio::sync::mpsc;

use crate::agent::Observer;
use crate::cli::Cli;
use crate::config::{Config, ConfigError, Inputs, StdinKind};
use crate::conversation::{ToolResult, ToolUse};
use crate::outcome::CheckRun;
use crate::transcript::{AgentEnd, AgentRef, AgentStart, End, RetryNote, Round, Start};

pub use crate::outcome::{Outcome, Status};
pub use rounds_process::SUPERVISE_ARG;

/// A run to start: the command line's flags, built in Rust.
#[derive(Debug, Clone)]
pub struct Run {
    args: Vec<OsString>,
    prompt: String,
}

/// Why a run could not start; a run that started ends with its [`Outcome`] instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A flag or its value is not one `rounds` takes (as the command line would say it).
    #[error("{0}")]
    Flags(String),
    /// The flags and the environment do not make a run (a missing key, an unknown model, a
    /// limit out of range, an unwritable transcript): the command's usage errors (exit 2).
    #[error("{0}")]
    Config(String),
}

impl Error {
    /// The status the command would end with: the exit code of a run that cannot start.
    pub fn status(&self) -> Status {
        Status::Usage
    }
}

impl Run {
    /// A run of `model` (as `-m` takes it: `provider/model`, a bare name, an alias, or
    /// `replay:TRANSCRIPT`) on `prompt`, with every other setting at the command's default.
    pub fn new(model: impl Into<String>, prompt: impl Into<String>) -> Run {
        Run {
            args: vec!["rounds".into(), "--model".into(), model.into().into()],
            prompt: prompt.into(),
        }
    }

    /// Any flag of `rounds --help`, by its long name without dashes, with its value (`None` for
    /// a switch). Repeat it for a flag that takes several values.
    pub fn flag(mut self, name: &str, value: Option<&str>) -> Run {
        self.args.push(format!("--{name}").into());
        if let Some(value) = value {
            self.args.push(value.into());
        }
        self
    }

    /// An allowlist rule (`--allow`): a tool's name, or `tool(pattern)`.
    pub fn allow(self, rule: &str) -> Run {
        self.flag("allow", Some(rule))
    }

    /// A deny rule (`--deny`), which wins over every allow rule.
    pub fn deny(self, rule: &str) -> Run {
        self.flag("deny", Some(rule))
    }

    /// The most rounds the loop may take (`--max-rounds`).
    pub fn max_rounds(self, rounds: u32) -> Run {
        self.flag("max-rounds", Some(&rounds.to_string()))
    }

    /// What the run may spend in USD (`--budget-usd`).
    pub fn budget_usd(self, usd: f64) -> Run {
        self.flag("budget-usd", Some(&usd.to_string()))
    }

    /// The whole run's deadline, counted from [`Run::start`] (`--timeout`).
    pub fn timeout(self, timeout: Duration) -> Run {
        self.flag("timeout", Some(&timeout.as_secs_f64().to_string()))
    }

    /// The OS sandbox of tool processes (`--sandbox`): `workspace-write` (the default),
    /// `read-only`, `off` or `require`.
    pub fn sandbox(self, mode: &str) -> Run {
        self.flag("sandbox", Some(mode))
    }

    /// The directory the run works in (`--workspace`); default: the process's current
    /// directory, where relative paths of every flag start as for the command.
    pub fn workspace(self, dir: &str) -> Run {
        self.flag("workspace", Some(dir))
    }

    /// Where the JSONL transcript goes (`--transcript`); without it, under `$ROUNDS_HOME/runs`
    /// as the command writes it.
    pub fn transcript(self, path: &str) -> Run {
        self.flag("transcript", Some(path))
    }

    /// No transcript file (`--no-transcript`).
    pub fn no_transcript(self) -> Run {
        self.flag("no-transcript", None)
    }

    /// Resolves the run as the command does and starts it: its events, and the future that
    /// drives it to its [`Outcome`]. The future must be polled for the run to go on.
    pub fn start(self) -> Result<Started, Error> {
        let started = Instant::now();
        let mut args = self.args;
        args.push("--".into());
        args.push(self.prompt.into());
        let cli = Cli::try_parse_from(args).map_err(|e| Error::Flags(flags_error(&e)))?;
        let env = |name: &str| crate::env::var(name);
        let mut no_stdin = || Ok(String::new());
        let inputs = Inputs {
            env: &env,
            env_all: std::env::vars_os().collect(),
            stdin_kind: StdinKind::Nothing,
            read_stdin: &mut no_stdin,
            cwd: std::env::current_dir().unwrap_or_else(|_| ".".into()),
            aliases: Default::default(),
            agents: Vec::new(),
            transcript: None,
        };
        let config =
            Config::resolve(cli, inputs).map_err(|e: ConfigError| Error::Config(e.to_string()))?;
        let (sender, receiver) = mpsc::unbounded_channel();
        let observer: Arc<dyn Observer> = Arc::new(Sender(sender, None));
        let cancel = crate::agent::Cancel::default();
        let outcome = crate::app::run(config, observer, cancel, started);
        Ok(Started {
            events: Events(receiver),
            outcome: Box::pin(outcome),
        })
    }
}

/// clap's text is for a terminal: its first line, without "error: ".
fn flags_error(e: &clap::Error) -> String {
    let text = e.to_string();
    let first = text.lines().next().unwrap_or_default();
    first.strip_prefix("error: ").unwrap_or(first).to_owned()
}

/// A started run: what it does as it happens, and its end.
pub struct Started {
    /// The run's events, in order; the stream ends when the run does.
    pub events: Events,
    /// The run itself: drive it to its end (`.await`). It ends with the run's outcome, whose
    /// `status` is what the command's exit code would say.
    pub outcome: std::pin::Pin<Box<dyn Future<Output = Outcome>>>,
}

/// The stream of a run's [`Event`]s.
pub struct Events(mpsc::UnboundedReceiver<Event>);

impl Events {
    /// The next event, or `None` once the run has ended and every event was read.
    pub async fn next(&mut self) -> Option<Event> {
        self.0.recv().await
    }
}

/// What happens in a run, as `--output stream-json` says it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Event {
    /// The run started: its model, settings and sandbox (the transcript's `start` line).
    Started(Box<Start>),
    /// A round began.
    RoundStarted(u32),
    /// Some of the model's answer.
    Text(String),
    /// Some of the model's thinking.
    Thinking(String),
    /// The model asked for a tool call.
    ToolUse(ToolUse),
    /// A tool call began, with what the allowlist judged (a path, command or URL).
    ToolStarted(ToolUse, Option<String>),
    /// A tool call ended.
    ToolFinished(ToolResult),
    /// A request failed and is made again.
    Retry(RetryNote),
    /// `--check` ran after the answer of a round.
    Check(u32, Box<CheckRun>),
    /// A round ended (the transcript's `round` line).
    RoundFinished(Box<Round>),
    /// The run ended (the transcript's `end` line).
    Finished(Box<End>),
    /// An event of a subagent (the `task` call that started it, its agent and depth): its
    /// rounds, text, calls, and its own start and end.
    Subagent(AgentRef, Box<Event>),
    /// A subagent started (inside `Subagent`: the transcript's `agent_start` line).
    AgentStarted(Box<AgentStart>),
    /// A subagent ended (inside `Subagent`: the transcript's `agent_end` line).
    AgentFinished(Box<AgentEnd>),
}

/// The observer of an embedded run: every event into the channel. A reader that went away
/// does not stop the run (its future does, when dropped).
struct Sender(mpsc::UnboundedSender<Event>, Option<AgentRef>);

impl Sender {
    fn send(&self, event: Event) {
        let event = match &self.1 {
            None => event,
            Some(at) => Event::Subagent(at.clone(), Box::new(event)),
        };
        let _ = self.0.send(event);
    }
}

impl Observer for Sender {
    fn started(&self, start: &Start) {
        self.send(Event::Started(Box::new(start.clone())));
    }
    fn round_started(&self, round: u32) {
        self.send(Event::RoundStarted(round));
    }
    fn text_delta(&self, text: &str) {
        self.send(Event::Text(text.to_owned()));
    }
    fn thinking_delta(&self, text: &str) {
        self.send(Event::Thinking(text.to_owned()));
    }
    fn tool_use(&self, call: &ToolUse) {
        self.send(Event::ToolUse(call.clone()));
    }
    fn tool_started(&self, call: &ToolUse, subject: Option<&str>) {
        self.send(Event::ToolStarted(call.clone(), subject.map(str::to_owned)));
    }
    fn tool_finished(&self, result: &ToolResult) {
        self.send(Event::ToolFinished(result.clone()));
    }
    fn retry(&self, note: &RetryNote) {
        self.send(Event::Retry(note.clone()));
    }
    fn check_finished(&self, round: u32, check: &CheckRun) {
        self.send(Event::Check(round, Box::new(check.clone())));
    }
    fn round_finished(&self, round: &Round) {
        self.send(Event::RoundFinished(Box::new(round.clone())));
    }
    fn finished(&self, end: &End) {
        self.send(Event::Finished(Box::new(end.clone())));
    }
    fn scoped(&self, at: &AgentRef) -> Option<Arc<dyn Observer>> {
        Some(Arc::new(Sender(self.0.clone(), Some(at.clone()))))
    }
    fn agent_started(&self, start: &AgentStart) {
        self.send(Event::AgentStarted(Box::new(start.clone())));
    }
    fn agent_finished(&self, end: &AgentEnd) {
        self.send(Event::AgentFinished(Box::new(end.clone())));
    }
}

/// For a program that embeds rounds and runs tools: when this process was started as a tool's
/// supervisor ([`SUPERVISE_ARG`]), supervises it and returns the exit code to end with;
/// otherwise `None`, and the program goes on. Call it first thing in `main`.
pub fn supervise_if_asked() -> Option<i32> {
    let args: Vec<OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == SUPERVISE_ARG) {
        return Some(rounds_process::supervisor::main(&args[2..]));
    }
    None
}
