//! Resolution of flags, environment and files into one `Config`. All the I/O of setup happens
//! here, once, before any request: a missing key, an unreadable file or an empty prompt is a
//! usage error (exit 2) that names what is wrong, never a key's value.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::agent::{LoopLimits, OutputSchema};
use crate::cli::{Cli, ToolFlags};
use crate::files::Target;
use crate::pricing::{Catalog, ModelInfo, PricesError};
use crate::process::{self, Sandbox, sandbox};
use crate::provider::{Cache, ProviderChoice};
use crate::redact::Redactor;
use crate::runs;
use crate::tools::assemble::ToolSources;
use crate::tools::hooks::Hooks;
use crate::tools::pipeline::Settings;
use crate::tools::presets::Preset;
use crate::tools::workspace::WorkspaceError;
use crate::tools::{Outputs, Workspace, builtin};
use crate::transcript::ReadError;

pub(crate) mod agents;
pub(crate) mod attach;
mod limits;
mod project_doc;
mod prompt;
mod provider;
mod records;
mod resume;
mod tool_sandbox;

use project_doc::ProjectDocs;
use prompt::{MAX_STDIN_BYTES, resolve_prompt};
pub(crate) use prompt::{StdinKind, read_real_stdin, stdin_kind};

pub(crate) use provider::{Named, did_you_mean, key_origin, model_names, name_model};
use provider::{model_options, resolve_provider};
pub(crate) use records::outputs_name;
pub(crate) use resume::Resume;
use resume::{keep_resumed, resume};
use tool_sandbox::may_spawn;
pub(crate) use tool_sandbox::sandbox;

/// The context window of a model the price table does not know.
const DEFAULT_CONTEXT_WINDOW: u64 = 200_000;
const DEFAULT_SYSTEM: &str = include_str!("../prompts/system.md");
/// The prompt of a resumed run when none is given.
const CONTINUE: &str = "Continue from where you left off.";

/// Every setting of one run, resolved. Grouped by who consumes them: the provider (`provider`,
/// `model`, `idle_timeout`), the loop (`limits`), the toolbox (`tools`, `tool_settings`,
/// `workspace`) and the records (`transcript`, `store`). What only the face needs (the output
/// mode, quiet) stays with the face.
pub(crate) struct Config {
    pub(crate) run_id: String,
    pub(crate) provider: ProviderChoice,
    pub(crate) model: String,
    /// Seconds without data before a provider stream counts as stalled.
    pub(crate) idle_timeout: Duration,
    pub(crate) prompt: String,
    /// The project's instructions (AGENTS.md) the first user turn holds before the prompt.
    pub(crate) project_docs: ProjectDocs,
    pub(crate) system: String,
    pub(crate) resume: Option<Resume>,
    pub(crate) workspace: Workspace,
    /// Which tools exist (built in, from manifests, from MCP servers) and the allowlist rules;
    /// assembled into a registry and a policy by `tools::assemble` once servers are running.
    pub(crate) tools: ToolSources,
    /// Timeouts, result caps, environment, output directory, hooks and sandbox of every tool
    /// call.
    pub(crate) tool_settings: Settings,
    /// What the start line records of the sandbox: mode, writable directories, and what this
    /// kernel enforces.
    pub(crate) sandbox_record: sandbox::Summary,
    pub(crate) limits: LoopLimits,
    /// Prompt caching (`--no-cache`, `--cache-ttl`), keyed by the run (or the first run it
    /// resumes).
    pub(crate) cache: Option<Cache>,
    /// The model's price and context window, from the compiled-in table and `--prices`.
    pub(crate) model_info: ModelInfo,
    /// The subagents `task` may start, and how deep they may nest.
    pub(crate) agents: agents::Agents,
    /// `--attach`: the images and PDFs the first turn carries, and what the start line records.
    pub(crate) attached: attach::Attachments,
    /// `--output-schema`, compiled.
    pub(crate) output_schema: Option<OutputSchema>,
    /// `--output-last-message`: its directory opened before any tool runs.
    pub(crate) output_last_message: Option<Target>,
    /// The transcript's file, its directory opened (and made) before any tool runs.
    pub(crate) transcript: Option<Target>,
    /// The transcript goes where rounds put it by default, not where `--transcript` said.
    pub(crate) transcript_is_default: bool,
    /// `--store`: the PostgreSQL URL every line is also written to.
    pub(crate) store: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The provider's name, and ` (did you mean …?)` or nothing.
    #[error(
        "unknown provider {name:?}{hint} (known: {}, replay:FILE)",
        crate::providers::names().join(", "),
        name = .0, hint = .1
    )]
    UnknownProvider(String, String),
    /// The model, and ` (did you mean …?)` or nothing.
    #[error(
        "cannot tell the provider of model {0:?}{1}: write it as PROVIDER/MODEL (rounds models \
         lists the aliases)"
    )]
    AmbiguousModel(String, String),
    #[error("-m {0:?}: the model name after the provider is empty (e.g. openai/gpt-4.1)")]
    EmptyModel(String),
    /// A model option the provider or the model does not take (`--temperature` for o3, …).
    #[error(transparent)]
    ModelOption(#[from] crate::provider::OptionError),
    #[error(
        "{var} is not set: the {provider} provider needs an API key ({var}, {var}_FILE or \
         --api-key-file)"
    )]
    MissingKey {
        var: &'static str,
        provider: &'static str,
    },
    #[error("API key file {}: expected one line holding the key", .0.display())]
    KeyFile(PathBuf),
    /// A key that no header can carry even trimmed. `origin` names where it came from (the
    /// variable, the file), never the key.
    #[error(
        "{origin}: the API key {why}, which cannot be sent in an HTTP header (surrounding \
         whitespace is dropped; what is left must be visible ASCII)"
    )]
    UnsendableKey { origin: String, why: String },
    #[error(
        "--api-key-file: {0} takes no key (Application Default Credentials: \
         GOOGLE_APPLICATION_CREDENTIALS, gcloud's file, or the metadata server)"
    )]
    NoKeyFor(&'static str),
    #[error("invalid base URL {url:?}: {message}")]
    BaseUrl { url: String, message: String },
    #[error("cannot read {what} {}: {source}", path.display())]
    File {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read stdin: {0}")]
    Stdin(std::io::Error),
    #[error("stdin is larger than {} MiB", MAX_STDIN_BYTES / 1024 / 1024)]
    StdinTooLarge,
    /// `--timeout` passed while stdin was still open: the run's time counts from rounds' start.
    #[error(
        "the run's deadline of {secs}s passed while reading stdin (a pipe still open); pass \
         --no-stdin to skip it"
    )]
    StdinDeadline { secs: f64 },
    #[error(
        "stdin is binary ({0} bytes holding NUL bytes): a model cannot read it; save it in the \
         workspace and name the file in the prompt (with read_file allowed)"
    )]
    BinaryStdin(usize),
    #[error("prompt file {} is binary ({bytes} bytes holding NUL bytes): a model cannot read it", path.display())]
    BinaryFile { path: PathBuf, bytes: usize },
    #[error("the prompt is empty: give it as arguments, with -f FILE, or on stdin")]
    EmptyPrompt,
    #[error(
        "--check is empty: an empty command always passes (is the variable it came from \
         unset?); give the command, or leave --check out"
    )]
    EmptyCheck,
    #[error(
        "the prompt is about {tokens} tokens ({bytes} bytes), more than the model's context \
         window ({window} tokens): shorten it, or save it in the workspace and let the model \
         read what it needs (with read_file allowed)"
    )]
    PromptTooLarge {
        bytes: usize,
        tokens: u64,
        window: u64,
    },
    #[error("--project-doc {0:?}: a file name (such as AGENTS.md), not a path")]
    ProjectDocName(String),
    #[error("\"-\" reads the prompt from stdin, but stdin is a terminal")]
    StdinIsTerminal,
    /// A preset that runs commands under the sandbox, with the sandbox turned off.
    #[error(
        "{0} runs commands under the sandbox, and --sandbox off removes it: drop one of them \
         (without a sandbox, say so with -a bash --edit)"
    )]
    PresetUnsandboxed(&'static str),
    #[error("workspace: {0}")]
    Workspace(#[from] WorkspaceError),
    #[error("replay: {0}")]
    Replay(#[from] ReadError),
    #[error("--resume: {0}")]
    Resume(ReadError),
    /// A resumed transcript's model is another provider's than the endpoint or key the user
    /// pinned (`--base-url`, `--api-key-file`): the transcript, not the user, would choose
    /// where that key goes.
    #[error("--resume: {0}; give -m to choose the model")]
    ResumePinned(String),
    #[error(
        "--resume last: no run in workspace {} among the newest {} under {}",
        workspace.display(), runs::MAX_SCAN, runs.display()
    )]
    NothingToResume { runs: PathBuf, workspace: PathBuf },
    #[error(
        "--resume {id}: no run of that id under {} (nor a file of that name)",
        runs.display()
    )]
    NoRun { id: String, runs: PathBuf },
    #[error(
        "--transcript {}: that file is read by this run (--resume or replay); writing the new \
         transcript there would destroy it",
        .0.display()
    )]
    TranscriptIsInput(PathBuf),
    #[error("--search-url {0:?} must contain {{query}}")]
    SearchUrl(String),
    #[error("{0}")]
    Sandbox(String),
    #[error("OpenTelemetry: {0}")]
    Telemetry(#[from] crate::telemetry::ConfigError),
    #[error(transparent)]
    Prices(#[from] PricesError),
    #[error("--output-schema {}: not a JSON Schema: {message}", path.display())]
    OutputSchema { path: PathBuf, message: String },
    #[error(
        "--budget-usd: the price of {provider}/{model} is not known; give it with --prices FILE"
    )]
    UnknownPrice {
        provider: &'static str,
        model: String,
    },
    #[error("--tool-env {0}: provider keys and credentials are never passed to tools")]
    SecretToolEnv(String),
    /// An attached file that cannot be read or sent (its type, a provider's limit, the model).
    #[error(transparent)]
    Attach(crate::attachment::AttachError),
    #[error("--attach {path}: cannot keep its bytes beside the transcript: {why}")]
    SaveAttachment { path: String, why: String },
    /// A resumed run's attachment is not beside its transcript as recorded.
    #[error(
        "cannot resume {}: its attachment {path} is not kept beside it as recorded ({why})",
        transcript.display()
    )]
    ResumeAttachment {
        transcript: PathBuf,
        path: String,
        why: String,
    },
    /// A file `--agents` names cannot be read as agents.
    #[error(transparent)]
    AgentsFile(crate::settings::SettingsError),
    /// An agent definition of the user's that cannot apply (`--agents`, their settings file).
    #[error(transparent)]
    Agent(Box<crate::trust::agents::AgentError>),
    /// A value that did not come from the command line, with where it came from.
    #[error("{origin}: {error}")]
    At {
        origin: String,
        error: Box<ConfigError>,
    },
    /// A file rounds writes cannot be made (its directory, a symlink in its path…).
    #[error("cannot write {what} {}: {source}{hint}", path.display())]
    Output {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
        hint: &'static str,
    },
}

impl ConfigError {
    /// This error, said with where the model it is about came from (`model_origin`: a
    /// variable, a settings file and line), when that was not the command line.
    pub(crate) fn with_model_origin(self, model_origin: Option<String>) -> ConfigError {
        match (self, model_origin) {
            (
                error @ (ConfigError::UnknownProvider(..)
                | ConfigError::AmbiguousModel(..)
                | ConfigError::EmptyModel(_)),
                Some(origin),
            ) => ConfigError::At {
                origin,
                error: Box::new(error),
            },
            (error, _) => error,
        }
    }
}

/// The outside world config reads from; tests substitute it.
pub(crate) struct Inputs<'a> {
    pub(crate) env: &'a dyn Fn(&str) -> Option<String>,
    /// Every variable of the process environment, for building tool environments.
    pub(crate) env_all: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    pub(crate) stdin_kind: StdinKind,
    pub(crate) read_stdin: &'a mut dyn FnMut() -> Result<String, ConfigError>,
    pub(crate) cwd: PathBuf,
    /// Model aliases from the settings files (`[alias]`), over the built-in ones.
    pub(crate) aliases: std::collections::BTreeMap<String, String>,
    /// The settings files' `[agents.NAME]` tables, with their sources.
    pub(crate) agents: Vec<crate::settings::agents::Written>,
    /// Where the transcript goes when the caller has opened its directory already (a batch's
    /// `--out`, opened once before any job ran); `None`: from the flags.
    pub(crate) transcript: Option<Target>,
}

impl Config {
    pub(crate) fn resolve(cli: Cli, inputs: Inputs<'_>) -> Result<Config, ConfigError> {
        let env = |name: &str| (inputs.env)(name).filter(|v| !v.is_empty());
        limits::check_command(&cli)?;
        let resume = match &cli.resume {
            None => None,
            Some(which) => Some(resume(which, &env, &inputs.cwd, &cli.tools)?),
        };
        let cli = keep_resumed(cli, resume.as_ref(), &inputs.cwd)?;
        let (provider, model, options) = choose_provider(&cli, &inputs, &env)?;
        let recorded = recorded_start(&provider);
        // A resumed run goes on; a replay asks its recorded question again.
        let fallback = (resume.as_ref().map(|_| CONTINUE)).or(recorded.map(|s| s.prompt.as_str()));
        let stdin = &mut *inputs.read_stdin;
        let prompt = resolve_prompt(&cli, inputs.stdin_kind, stdin, fallback, &inputs.cwd)?;
        let workspace = workspace(&cli.tools, &inputs.cwd)?;
        let project_docs = project_docs(&cli, resume.is_some(), recorded, &workspace)?;
        let system = system_prompt(&cli, recorded, &inputs.cwd)?;
        let (mut tools, tool_env) = tool_setup(&cli.tools, &inputs.cwd, &inputs.env_all)?;
        let agents = agents::resolve(&cli, &inputs, &provider, &mut tools)?;
        let run_id = new_run_id();
        let transcript = records::transcript(
            &cli,
            inputs.transcript,
            &env,
            &inputs.cwd,
            &run_id,
            (resume.as_ref(), &provider),
        )?;
        // Whole outputs of cut results live beside the transcript, or in a new directory of
        // the temp dir; made now, before any tool runs, and written only through this handle.
        let outputs_dir = records::outputs_dir(transcript.as_ref())?;
        let attached = attach::resolve(
            &cli,
            &inputs.cwd,
            (&provider, &model),
            resume.as_ref(),
            &outputs_dir,
        )?;
        let prompt = attached.text.clone() + &prompt;
        let (sandbox, sandbox_record) =
            sandbox(&cli.tools, workspace.root(), &inputs.cwd, may_spawn(&cli))?;
        let redactor = Redactor::for_run(provider.key(), &inputs.env_all, &cli.redact);
        let outputs = Outputs::new(outputs_dir, cli.max_spill_bytes);
        let images = attach::images(&cli, &provider, &model);
        tools.builtin.images = images.is_some();
        let tool_settings = tool_settings(&cli, tool_env, (outputs, sandbox, redactor), images);
        let model_info = model_info(&cli, &inputs.cwd, &provider, &model)?;
        let limits = limits::loop_limits(&cli, &model_info, &provider, &options);
        let turn = prompt.len() + project_docs.len() + attached.bytes();
        limits::prompt_size(turn, limits.context_window, recorded.is_some())?;
        let cache = limits::cache(&cli, resume.as_ref(), &run_id);
        let (output_last_message, output_schema) = answer_files(&cli, &inputs.cwd)?;
        Ok(Config {
            attached,
            agents,
            cache,
            model_info,
            output_schema,
            output_last_message,
            run_id,
            provider,
            model,
            idle_timeout: Duration::from_secs_f64(cli.idle_timeout),
            prompt,
            project_docs,
            system,
            resume,
            workspace,
            tools,
            tool_settings,
            sandbox_record,
            limits,
            transcript_is_default: transcript.is_some() && cli.transcript.is_none(),
            transcript,
            // An empty ROUNDS_STORE means no store, as empty variables mean unset elsewhere.
            store: cli.store.clone().filter(|url| !url.is_empty()),
        })
    }
}

impl Config {
    /// The user turn the run adds: the prompt, opened by what differs between runs (the
    /// workspace root, the project's instructions). Kept out of the system prompt, it leaves the
    /// system prompt and the tool definitions, the prefix a server caches, byte for byte the
    /// same for every run with the same flags, in any repository. A replay sends its recorded
    /// turn again.
    pub(crate) fn user_turn(&self) -> String {
        if let ProviderChoice::Replay { transcript, .. } = &self.provider
            && transcript.start.prompt == self.prompt
        {
            return self.prompt.clone();
        }
        crate::transcript::turn::compose(
            &self.workspace.root().display().to_string(),
            &self.project_docs.sent,
            &self.prompt,
        )
    }
}

/// The start line of the run a replay plays back, if the provider is one.
fn recorded_start(provider: &ProviderChoice) -> Option<&crate::transcript::Start> {
    match provider {
        ProviderChoice::Replay { transcript, .. } => Some(&transcript.start),
        _ => None,
    }
}

/// The provider and model the flags (and aliases) name, with the model options checked against
/// them.
fn choose_provider(
    cli: &Cli,
    inputs: &Inputs<'_>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(ProviderChoice, String, crate::provider::Options), ConfigError> {
    // `-m sonnet`: the user's aliases, then the built-in ones.
    let named = name_model(cli.model.as_deref(), &inputs.aliases);
    let key_file = cli.api_key_file.as_ref().map(|f| inputs.cwd.join(f));
    let (provider, model) = resolve_provider(
        &named,
        &inputs.aliases,
        cli.base_url.as_deref(),
        key_file.as_deref(),
        env,
        &inputs.cwd,
    )?;
    let (api, options) = model_options(cli);
    let cloud = crate::provider::Cloud {
        region: cli.region.clone(),
        project: cli.project.clone(),
        api_version: cli.api_version.clone(),
    };
    let provider = provider
        .in_cloud(cloud)
        .configure(api, options, &model, cli.max_tokens)?;
    Ok((provider, model, options))
}

/// The project's instructions for the first user turn: none with `--no-project-doc`, nor for
/// a resumed run (the turn that opened its conversation holds them); a replay's as recorded
/// (it sends its recorded turn).
fn project_docs(
    cli: &Cli,
    resumed: bool,
    recorded: Option<&crate::transcript::Start>,
    workspace: &Workspace,
) -> Result<ProjectDocs, ConfigError> {
    project_doc::check_names(&cli.project_doc)?;
    Ok(match recorded {
        _ if cli.no_project_doc || resumed => ProjectDocs::default(),
        Some(start) => ProjectDocs {
            sent: Vec::new(),
            record: start.project_docs.clone(),
        },
        None => project_doc::read(workspace.root(), &cli.project_doc),
    })
}

/// `--system`, `--system-file`, a replay's recorded one, or the built-in one; then
/// `--append-system-prompt`.
fn system_prompt(
    cli: &Cli,
    recorded: Option<&crate::transcript::Start>,
    cwd: &Path,
) -> Result<String, ConfigError> {
    let system = match (&cli.system, &cli.system_file, recorded) {
        (Some(text), _, _) => text.clone(),
        (None, Some(path), _) => read_file("system prompt file", &cwd.join(path))?,
        (None, None, Some(start)) => start.system.clone(),
        // Nothing that differs between runs: see `user_turn`.
        (None, None, None) => DEFAULT_SYSTEM.to_owned(),
    };
    append_system(system, &cli.append_system_prompt, cwd)
}

/// The model's price and context window (`--prices` over the built-in table); `--budget-usd`
/// needs the price.
fn model_info(
    cli: &Cli,
    cwd: &Path,
    provider: &ProviderChoice,
    model: &str,
) -> Result<ModelInfo, ConfigError> {
    let prices = cli.prices.as_ref().map(|p| cwd.join(p));
    let info = Catalog::load(prices.as_deref())?.lookup(provider.name(), model);
    if cli.budget_usd.is_some() && info.price.is_none() {
        return Err(ConfigError::UnknownPrice {
            provider: provider.name(),
            model: model.to_owned(),
        });
    }
    Ok(info)
}

/// What every tool call of the run gets: its timeout, result cap, environment, outputs
/// directory, hooks, sandbox and redaction.
fn tool_settings(
    cli: &Cli,
    env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    (outputs, sandbox, redactor): (Outputs, Sandbox, Redactor),
    images: Option<crate::attachment::Limits>,
) -> Settings {
    Settings {
        timeout: Duration::from_secs_f64(cli.tool_timeout),
        max_result_bytes: usize::try_from(cli.max_result_bytes).unwrap_or(usize::MAX),
        env,
        outputs,
        hooks: Hooks {
            pre: cli.pre_tool_hook.clone(),
            post: cli.post_tool_hook.clone(),
            sink: None,
        },
        sandbox,
        redactor,
        images,
    }
}

/// The workspace the flags name (default: the current directory).
pub(crate) fn workspace(flags: &ToolFlags, cwd: &Path) -> Result<Workspace, ConfigError> {
    let dir = match &flags.workspace {
        Some(dir) => cwd.join(dir),
        None => cwd.to_owned(),
    };
    Ok(Workspace::new(&dir)?)
}

/// Where the tools come from, and the environment tool processes get, from the tool flags
/// (shared by a run and `rounds tools`).
pub(crate) fn tool_setup(
    flags: &ToolFlags,
    cwd: &Path,
    env_all: &[(std::ffi::OsString, std::ffi::OsString)],
) -> Result<(ToolSources, Vec<(std::ffi::OsString, std::ffi::OsString)>), ConfigError> {
    if let Some(url) = flags.search_url.as_ref().filter(|u| !u.contains("{query}")) {
        return Err(ConfigError::SearchUrl(url.clone()));
    }
    if let Some(secret) = flags
        .tool_env
        .iter()
        .find(|n| crate::providers::is_key_var(n))
    {
        return Err(ConfigError::SecretToolEnv(secret.clone()));
    }
    let tools = ToolSources {
        builtin: builtin::Options {
            search_url: flags.search_url.clone(),
            web_allow_private: flags.web_allow_private,
            agents: Vec::new(),
            images: false,
        },
        allow: flags.allow.clone(),
        deny: flags.deny.clone(),
        presets: Preset::chosen(flags.edit, flags.full_auto),
        tools_files: flags.tools_file.iter().map(|f| cwd.join(f)).collect(),
        mcp: flags.mcp.clone(),
        mcp_config: flags.mcp_config.as_ref().map(|f| cwd.join(f)),
        mcp_startup_timeout: Duration::from_secs_f64(flags.mcp_startup_timeout),
    };
    let names: Vec<String> = env_all
        .iter()
        .filter_map(|(k, _)| k.to_str().map(str::to_owned))
        .collect();
    let lookup = |name: &str| {
        env_all
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    Ok((tools, process::tool_env(&lookup, &names, &flags.tool_env)))
}

/// `--append-system-prompt TEXT|@FILE` (repeatable): each added after the system prompt, which
/// stays as it was (the built-in one, or `--system`).
fn append_system(mut system: String, extra: &[String], cwd: &Path) -> Result<String, ConfigError> {
    for item in extra {
        let text = match item.strip_prefix('@') {
            Some(file) => read_file("--append-system-prompt file", &cwd.join(file))?,
            None => item.clone(),
        };
        system = format!("{}\n\n{}\n", system.trim_end(), text.trim_end());
    }
    Ok(system)
}

/// `--output-schema FILE`: a JSON Schema that compiles.
/// `--output-last-message` (its file made ready now) and `--output-schema` (read and checked).
fn answer_files(
    cli: &Cli,
    cwd: &Path,
) -> Result<(Option<Target>, Option<OutputSchema>), ConfigError> {
    let last_message = (cli.output_last_message.as_ref())
        .map(|path| records::last_message(&cwd.join(path)))
        .transpose()?;
    let schema = (cli.output_schema.as_ref())
        .map(|path| output_schema(&cwd.join(path)))
        .transpose()?;
    Ok((last_message, schema))
}

fn output_schema(path: &Path) -> Result<OutputSchema, ConfigError> {
    let text = read_file("output schema", path)?;
    let bad = |message: String| ConfigError::OutputSchema {
        path: path.to_owned(),
        message,
    };
    let schema = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    OutputSchema::new(schema).map_err(|e| bad(e.to_string()))
}

fn read_file(what: &'static str, path: &Path) -> Result<String, ConfigError> {
    std::fs::read_to_string(path).map_err(|source| ConfigError::File {
        what,
        path: path.to_owned(),
        source,
    })
}

/// `$ROUNDS_HOME`, else `$XDG_STATE_HOME/rounds`, else `~/.local/state/rounds`.
pub(crate) fn rounds_home(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    env("ROUNDS_HOME").map(PathBuf::from).or_else(|| {
        env("XDG_STATE_HOME")
            .map(|s| PathBuf::from(s).join("rounds"))
            .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".local/state/rounds")))
    })
}

/// A run id that sorts by time (see `runs::new_id`) and is unique enough across concurrent runs
/// on one machine.
fn new_run_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    runs::new_id(jiff::Timestamp::now(), h.finish() as u32)
}

#[cfg(test)]
mod tests;
