//! The command line, as clap definitions only: no I/O, no defaults that need the environment.
//! Doc comments are the `--help` text.

use std::path::PathBuf;

use clap::{ArgAction, Parser, Subcommand, ValueEnum};

pub(crate) use crate::agent::OnMaxRounds;
pub(crate) use crate::provider::{Api, CacheTtl, Effort, Parallel};

mod subcommands;
mod tool_flags;
mod values;
pub(crate) use subcommands::{
    BatchArgs, CompletionsArgs, DoctorArgs, ExportArgs, ListOutput, ModelsArgs, RunsArgs, ShowArgs,
    ToolsArgs,
};
pub use tool_flags::ToolFlags;
pub(crate) use values::positive_secs;
use values::{command, nonnegative_secs, positive_usd, temperature};

/// Run an LLM tool-calling loop to completion, with no human present.
///
/// rounds sends the prompt and the allowed tools to a model, runs the tool calls it asks for
/// (read-only file tools by default), feeds the results back, and repeats until the model
/// answers without calling tools or a limit is hit. The final answer goes to stdout; a JSONL
/// transcript records every round.
///
/// Exit status: 0 completed, 1 error (retrying will not fix it: a bad key, a wrong model, a
/// request too long), 2 usage, 3 max rounds, 4 budget (tokens or USD), 5 deadline, 6 tool
/// failure (--fail-on), 7 answer not valid against --output-schema, 8 a batch job did not
/// complete (rounds batch), 9 stuck (the same call kept returning the same result, see
/// --max-repeats), 10 the provider stayed unavailable through the retries (rate limit,
/// overload, 5xx, network: retrying later may succeed), 11 --check still failed, 130/143 interrupted (SIGINT/SIGTERM),
/// 141 the reader of stream-json went away.
#[derive(Debug, Parser)]
#[command(group(clap::ArgGroup::new(ONE_RUN).multiple(true)))]
#[command(
    name = "rounds",
    version,
    max_term_width = 100,
    args_conflicts_with_subcommands = true,
    // `-o json -o text`: the last one wins, as in ripgrep and cargo.
    args_override_self = true,
    // `--max-rounds -1` is a bad number, not a mistyped flag that needs `-- -1`.
    allow_negative_numbers = true
)]
#[command(
    after_help = "Keys, settings files, logs and examples: rounds --help.",
    after_long_help = AFTER_HELP
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// The prompt, as words joined by spaces.
    ///
    /// "-" (or no prompt) reads it from stdin; when a prompt is given and stdin is a pipe or file,
    /// stdin is appended to it as context.
    #[arg(help_heading = "Prompt", value_name = "PROMPT", group = ONE_RUN)]
    pub prompt: Vec<String>,

    /// Read the prompt from FILE instead of the arguments.
    #[arg(
        help_heading = "Prompt",
        short = 'f',
        long,
        value_name = "FILE",
        conflicts_with = "prompt",
        group = ONE_RUN
    )]
    pub prompt_file: Option<PathBuf>,

    /// Attach FILE to the prompt (repeatable): an image (PNG, JPEG, GIF, WebP) or a PDF, sent in
    /// the provider's own shape, or a text file, added to the prompt.
    ///
    /// The type comes from the file's content, not its name. A file the provider would refuse
    /// (its type, size, pixels, pages, how many) and a model not known to take images or PDFs
    /// are errors before any request (exit 2). The transcript records each file's path, type,
    /// size and SHA-256, and keeps an image's or PDF's bytes beside it.
    #[arg(
        help_heading = "Prompt",
        short = 'i',
        long = "attach",
        visible_alias = "image",
        value_name = "FILE"
    )]
    pub attach: Vec<PathBuf>,

    /// The model takes images and PDFs, whatever rounds knows of it (a local server's vision
    /// model: rounds assumes a local server's model takes text only).
    #[arg(help_heading = "Prompt", long)]
    pub vision: bool,

    /// Never read stdin, even when it is a pipe (for CI steps whose stdin stays open).
    #[arg(help_heading = "Prompt", long)]
    pub no_stdin: bool,

    /// Continue the conversation recorded in a transcript, a run id (as rounds runs and show
    /// name it) or "last" (the newest run in this workspace under $ROUNDS_HOME/runs), with any
    /// provider. The prompt is added as the next user turn; without one, "Continue from where
    /// you left off." The run keeps the recorded model and workspace unless -m or -w name others.
    #[arg(help_heading = "Prompt", long, value_name = "FILE|RUN_ID|last", group = ONE_RUN)]
    pub resume: Option<String>,

    /// The file name of the project's instructions (repeatable; replaces the default).
    ///
    /// In each directory from the repository's root (the nearest with .git) down to the
    /// workspace, the first of these names found is read; the first user turn holds them, the
    /// nearest last, before the prompt (at most 32 KiB in all). They inform the model; they set
    /// nothing.
    #[arg(
        help_heading = "Prompt",
        long,
        value_name = "NAME",
        default_value = "AGENTS.md"
    )]
    pub project_doc: Vec<String>,

    /// Read no project instructions (AGENTS.md).
    #[arg(help_heading = "Prompt", long)]
    pub no_project_doc: bool,

    /// System prompt text (replaces the built-in one).
    #[arg(
        help_heading = "Prompt",
        long,
        value_name = "TEXT",
        conflicts_with = "system_file"
    )]
    pub system: Option<String>,

    /// Add TEXT (or the contents of FILE, with @FILE) after the system prompt, keeping the
    /// built-in one (repeatable).
    #[arg(help_heading = "Prompt", long, value_name = "TEXT|@FILE")]
    pub append_system_prompt: Vec<String>,

    /// Read the system prompt from FILE.
    #[arg(help_heading = "Prompt", long, value_name = "FILE")]
    pub system_file: Option<PathBuf>,

    /// The model, as PROVIDER/MODEL or an alias (sonnet, gpt, flash, …).
    ///
    /// Providers: anthropic, openai (Chat Completions or Responses, see --api), openai-responses,
    /// gemini, openrouter; the clouds bedrock/MODEL_ID, vertex/MODEL (gemini-… or claude-…) and
    /// azure/DEPLOYMENT; ollama, llamacpp, vllm (OpenAI-compatible servers); and replay:FILE.jsonl
    /// to replay a transcript. A bare claude-*, gpt-*, o1/o3/o4* or gemini-* name picks its provider. Aliases:
    /// sonnet, opus, haiku, gpt, mini, gemini, flash (and [alias] in the settings files). [default:
    /// anthropic/claude-sonnet-4-5]
    #[arg(
        help_heading = "Model",
        short,
        long,
        value_name = "PROVIDER/MODEL",
        env = "ROUNDS_MODEL"
    )]
    pub model: Option<String>,

    /// Read the provider's API key from FILE (one line) instead of the environment.
    ///
    /// Also ANTHROPIC_API_KEY_FILE, OPENAI_API_KEY_FILE, GEMINI_API_KEY_FILE, …: a launcher that keeps
    /// the key in a file leaves it out of every process environment.
    #[arg(help_heading = "Model", long, value_name = "FILE")]
    pub api_key_file: Option<PathBuf>,

    /// Provider endpoint, overriding ANTHROPIC_BASE_URL and GEMINI_BASE_URL (http://host:port),
    /// OPENAI_BASE_URL and OPENROUTER_BASE_URL (http://host:port/v1), the defaults of ollama
    /// (http://127.0.0.1:11434/v1), llamacpp (:8080/v1) and vllm (:8000/v1), and the clouds'
    /// endpoints: AWS_ENDPOINT_URL_BEDROCK_RUNTIME, Vertex AI's regional one,
    /// AZURE_OPENAI_ENDPOINT (https://NAME.openai.azure.com).
    #[arg(help_heading = "Model", long, value_name = "URL")]
    pub base_url: Option<String>,

    /// The cloud region: AWS's for bedrock (else AWS_REGION, AWS_DEFAULT_REGION, the profile's),
    /// the Vertex AI location for vertex (else GOOGLE_CLOUD_LOCATION, CLOUD_ML_REGION).
    #[arg(help_heading = "Model", long, value_name = "REGION")]
    pub region: Option<String>,

    /// The Google Cloud project for vertex (else GOOGLE_CLOUD_PROJECT, the credentials' own).
    #[arg(help_heading = "Model", long, value_name = "PROJECT")]
    pub project: Option<String>,

    /// Azure OpenAI's api-version: the deployment URLs
    /// (/openai/deployments/NAME/chat/completions?api-version=V) instead of the v1 API.
    #[arg(help_heading = "Model", long, value_name = "VERSION")]
    pub api_version: Option<String>,

    /// Cap on each response's output tokens.
    ///
    /// [default for anthropic: 8192, plus the thinking budget when thinking; for ollama, llamacpp and
    /// vllm: 4096]
    #[arg(help_heading = "Model", long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tokens: Option<u32>,

    /// The OpenAI wire API: auto takes the Responses API for OpenAI's reasoning models (o1, o3,
    /// o4, gpt-5…) and Chat Completions for the rest and for compatible servers (ollama, …).
    /// -m openai-responses/MODEL is the Responses API too.
    #[arg(value_name = "auto|chat|responses", help_heading = "Model", long, value_enum, default_value_t = Api::Auto)]
    pub api: Api,

    /// How hard a reasoning model thinks: OpenAI reasoning.effort, Gemini thinkingLevel (Gemini 3) or a thinking budget, an Anthropic
    /// thinking budget (1024, 8192 or 24576 tokens).
    #[arg(help_heading = "Model", long, value_enum, value_name = "LEVEL")]
    pub reasoning_effort: Option<Effort>,

    /// Turn on Anthropic extended thinking with this many tokens (at least 1024; --max-tokens
    /// must be larger), or set Gemini's thinkingBudget. Wins over --reasoning-effort.
    #[arg(help_heading = "Model", long, value_name = "TOKENS")]
    pub thinking_budget: Option<u32>,

    /// Sampling temperature, 0 to 2 (Anthropic: 0 to 1).
    ///
    /// Refused for OpenAI reasoning models and with Anthropic thinking, which only run at their
    /// default.
    #[arg(help_heading = "Model", long, value_name = "T", value_parser = temperature)]
    pub temperature: Option<f64>,

    /// Whether one response may ask for several tool calls. auto: hosted providers as they
    /// default (OpenAI is asked for them), local servers (ollama, llamacpp, vllm) are sent
    /// nothing. off: asked of every API that has the switch and enforced for the others (a
    /// second call in a response is dropped).
    #[arg(help_heading = "Model", long, value_enum, value_name = "auto|on|off", default_value_t = Parallel::Auto)]
    pub parallel_tool_calls: Parallel,

    /// Run CMD (with sh -c) before each tool call, the call as JSON on stdin.
    ///
    /// Exit 0 goes on (printing {"input": …} replaces the input), exit 2 vetoes the call with CMD's
    /// stderr as the error the model sees. Any other ending (another exit code, a crash, a
    /// timeout, a reply that is not JSON) vetoes the call too, and says why on stderr: a hook
    /// that fails never lets a call through. Repeatable.
    #[arg(
        help_heading = "Tools & allowlist",
        long = "pre-tool-hook",
        value_name = "CMD"
    )]
    pub pre_tool_hook: Vec<String>,

    /// Run CMD after each tool call, with the call and its result as JSON on stdin.
    ///
    /// Exit 2 replaces the result with an error carrying CMD's stderr; any other failure of the
    /// hook withholds the result as well, and says why on stderr. Repeatable.
    #[arg(
        help_heading = "Tools & allowlist",
        long = "post-tool-hook",
        value_name = "CMD"
    )]
    pub post_tool_hook: Vec<String>,

    /// Longest tool result sent to the model; longer ones keep their head and tail, and the
    /// whole is saved to a file (beside the transcript) that the result names.
    #[arg(help_heading = "Tools & allowlist", long, value_name = "BYTES", default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(1024..))]
    pub max_result_bytes: u64,

    /// Most bytes of one output saved to its file when a result is cut (the result's marker
    /// says when the file holds only the start).
    #[arg(help_heading = "Tools & allowlist", long, value_name = "BYTES", default_value_t = crate::tools::DEFAULT_MAX_SPILL)]
    pub max_spill_bytes: u64,

    /// Redact this environment variable's value from all the run writes and sends (repeatable).
    ///
    /// Whatever this flag says, the provider key and every variable whose name holds KEY, TOKEN,
    /// SECRET or PASSWORD (any case; not *_FILE, *_PATH, *_DIR) are redacted: their values become
    /// [REDACTED:NAME] in the prompt, tool results, saved outputs, the transcript and stdout.
    /// Values shorter than 8 bytes are never redacted.
    #[arg(help_heading = "Tools & allowlist", long, value_name = "NAME")]
    pub redact: Vec<String>,

    /// The model's context window in tokens: before a request would pass 85% of it, the
    /// oldest tool results are elided from the conversation (never from the transcript).
    /// [default: the model's, from the price table; else 200000]
    #[arg(help_heading = "Model", long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1000..))]
    pub context_window: Option<u64>,

    /// Send no prompt-cache hints (Anthropic cache breakpoints, OpenAI's prompt_cache_key).
    #[arg(help_heading = "Model", long)]
    pub no_cache: bool,

    /// How long Anthropic keeps the cached prompt: 5m, or 1h (writes cost more, for runs whose
    /// rounds are more than five minutes apart).
    #[arg(
        help_heading = "Model",
        long,
        value_enum,
        value_name = "5m|1h",
        default_value = "5m"
    )]
    pub cache_ttl: CacheTtl,

    /// Stop after N rounds (exit 3).
    #[arg(help_heading = "Limits", long, value_name = "N", default_value_t = 25, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_rounds: u32,

    /// Seconds each tool call may run before it is stopped.
    #[arg(help_heading = "Limits", long, value_name = "SECS", default_value_t = 30.0, value_parser = positive_secs)]
    pub tool_timeout: f64,

    /// Most tool calls running at once (consecutive read-only calls run in parallel).
    #[arg(help_heading = "Limits", long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_parallel: u16,

    /// Most tool calls one response may ask for.
    ///
    /// At the first call past N the response is cut (the request is cancelled, so no more output is
    /// generated), the first N run, and every later call gets an error result saying it was dropped.
    #[arg(help_heading = "Limits", long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_calls_per_round: u32,

    /// The K-th time the same call (same tool, same arguments) returns the same result, the
    /// result tells the model so; once more ends the run as stuck (exit 9).
    ///
    /// With K=1 no call is repeated: the first repeat ends the run, with no warning before.
    #[arg(help_heading = "Limits", long, value_name = "K", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_repeats: u32,

    /// Done means CMD exits 0: it runs after each answer without tool calls, and a failure's
    /// output goes back to the model (exit 11 after --max-checks). An empty CMD is refused.
    ///
    /// CMD runs with `bash -c` in the workspace root as a tool process does (the sandbox, the
    /// tool timeout, stdin closed, secrets scrubbed and redacted), whether or not bash is
    /// allowed. The same failing output twice with no tool call in between ends the run at once
    /// (exit 11): the model is not getting on. Never read from a project's .rounds.toml.
    #[arg(help_heading = "Limits", long, value_name = "CMD", value_parser = command)]
    pub check: Option<String>,

    /// How many times --check may run and fail before the run ends as check_failed (exit 11,
    /// the last answer still printed).
    #[arg(help_heading = "Limits", long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_checks: u32,

    /// Stop the whole run after SECS (exit 5), counted from rounds' start (waiting for stdin
    /// included): the stream stops, running tools are killed, and the transcript is closed.
    #[arg(help_heading = "Limits", long, value_name = "SECS", value_parser = positive_secs)]
    pub timeout: Option<f64>,

    /// Stop before a request that would take the run's tokens (input + output, all rounds)
    /// past N (exit 4).
    #[arg(help_heading = "Limits", long, value_name = "N")]
    pub budget_tokens: Option<u64>,

    /// Stop before a request that would take the run's cost past USD (exit 4): a check, not a
    /// hard cap.
    ///
    /// The check comes before each request: the request's input is priced ahead, its
    /// output only once it has come, so the run can end somewhat past USD (0.001 may end at
    /// $0.0011). Needs the model's price (see --prices).
    #[arg(help_heading = "Limits", long, value_name = "USD", value_parser = positive_usd)]
    pub budget_usd: Option<f64>,

    /// Prices and context windows of models (TOML, as data/prices.toml), taking precedence
    /// over the compiled-in table.
    #[arg(help_heading = "Model", long, value_name = "FILE")]
    pub prices: Option<PathBuf>,

    /// At --max-rounds: stop, or make one last call without tools so the model answers from
    /// what it has (the status is max_rounds either way).
    #[arg(value_name = "stop|summarize", help_heading = "Limits", long, value_enum, default_value_t = OnMaxRounds::Stop)]
    pub on_max_rounds: OnMaxRounds,

    /// End the run with exit 6 after a round in which a tool failed (tool-error) or a call was denied
    /// (denied).
    ///
    /// Comma-separated.
    #[arg(
        help_heading = "Limits",
        long,
        value_enum,
        value_delimiter = ',',
        value_name = "WHAT"
    )]
    pub fail_on: Vec<FailOn>,

    /// Retries of a failed model request (429, 5xx, overloaded, dropped or stalled streams).
    #[arg(help_heading = "Limits", long, value_name = "N", default_value_t = 4)]
    pub max_retries: u32,

    /// Seconds before the first retry; each retry doubles it (with jitter, at most 30 s).
    ///
    /// A provider's retry-after is honoured instead, up to 60 s.
    #[arg(help_heading = "Limits", long, value_name = "SECS", default_value_t = 1.0, value_parser = nonnegative_secs)]
    pub retry_delay: f64,

    /// Seconds without new content from the provider (text, thinking, tool input, a new block;
    /// keep-alive pings and comments do not count) before the stream counts as stalled.
    #[arg(help_heading = "Limits", long, value_name = "SECS", default_value_t = 120.0, value_parser = positive_secs)]
    pub idle_timeout: f64,

    #[command(flatten)]
    pub tools: ToolFlags,

    /// Keep each run in PostgreSQL as well (postgres://…): a runs table and its turn blocks,
    /// written as each round completes. The JSONL transcript is still written.
    #[arg(
        help_heading = "Store",
        long,
        value_name = "URL",
        env = "ROUNDS_STORE",
        hide_env_values = true
    )]
    pub store: Option<String>,

    /// The final answer must be JSON valid against this JSON Schema: sent as the provider's
    /// structured output where it has one (OpenAI), as an instruction elsewhere, and checked;
    /// an invalid answer gets one corrective turn, then exit 7. -o json adds it as final_json.
    #[arg(help_heading = "Output", long, value_name = "FILE")]
    pub output_schema: Option<PathBuf>,

    /// Also write the final answer to FILE (as codex exec's flag of that name); a run that ends
    /// without one writes no FILE, and removes one an earlier run left.
    #[arg(help_heading = "Output", long, value_name = "FILE", group = ONE_RUN)]
    pub output_last_message: Option<PathBuf>,

    /// Append a Markdown summary of the run to FILE (GitHub Actions: GITHUB_STEP_SUMMARY).
    ///
    /// The summary holds the status, rounds, tool calls and errors, tokens and cost, and the
    /// answer folded. GitHub Actions sets GITHUB_STEP_SUMMARY in every step and shows the file on
    /// the run's page; several runs in one step each append theirs.
    #[arg(
        help_heading = "Output",
        long,
        value_name = "FILE",
        env = "GITHUB_STEP_SUMMARY",
        hide_env_values = true
    )]
    pub step_summary: Option<PathBuf>,

    /// Write no step summary, even when GITHUB_STEP_SUMMARY is set.
    #[arg(help_heading = "Output", long)]
    pub no_step_summary: bool,

    /// Export the run's OpenTelemetry traces and metrics to this OTLP/HTTP endpoint.
    ///
    /// A base URL, as OTEL_EXPORTER_OTLP_ENDPOINT (which it overrides): /v1/traces and
    /// /v1/metrics are added. Off by default; the standard OTEL_* variables also turn it on and
    /// set headers, protocol, service name and resource (docs/observability.md). Only your
    /// own settings file may set it, never a project's, a job line or a queue row.
    #[arg(help_heading = "Output", long, value_name = "URL")]
    pub otel_endpoint: Option<String>,

    /// Put prompts, model text and tool inputs and outputs in the exported spans, redacted as
    /// the transcript is (without it: names, sizes, outcomes and timings only).
    #[arg(help_heading = "Output", long)]
    pub otel_content: bool,

    /// What to print on stdout.
    #[arg(value_name = "text|json|stream-json", help_heading = "Output", short, long, value_enum, default_value_t = OutputMode::Text, group = ONE_RUN)]
    pub output: OutputMode,

    /// Write the transcript to FILE.
    ///
    /// [default: $ROUNDS_HOME/runs/DATE/RUN_ID.jsonl]
    #[arg(
        help_heading = "Output",
        long,
        value_name = "FILE",
        conflicts_with = "no_transcript",
        group = ONE_RUN
    )]
    pub transcript: Option<PathBuf>,

    /// Do not keep a transcript.
    #[arg(help_heading = "Output", long, group = ONE_RUN)]
    pub no_transcript: bool,

    /// Print nothing on stderr but errors.
    #[arg(help_heading = "Output", short, long)]
    pub quiet: bool,

    /// Colour on stderr (progress, `show`): auto is on a terminal unless NO_COLOR is set.
    #[arg(help_heading = "Output", long, value_enum, value_name = "auto|always|never", default_value_t = Color::Auto, global = true)]
    pub color: Color,

    /// Use the settings of [profile.NAME] in the settings files (./.rounds.toml and
    /// $XDG_CONFIG_HOME/rounds/config.toml, whose keys are the long flags).
    #[arg(
        help_heading = "Settings",
        long,
        value_name = "NAME",
        env = "ROUNDS_PROFILE",
        global = true
    )]
    pub profile: Option<String>,

    /// One setting as a settings file would give it: -c key=value, repeatable.
    ///
    /// Flags and environment variables still win.
    #[arg(
        help_heading = "Settings",
        short = 'c',
        long = "config",
        value_name = "KEY=VALUE",
        global = true
    )]
    pub config: Vec<String>,

    /// Log more on stderr (-v: info, -vv: debug).
    #[arg(help_heading = "Output", short, long, action = ArgAction::Count)]
    pub verbose: u8,
}

/// The group of the flags that are about one run's own prompt and records, which `rounds batch`
/// refuses (its jobs have their own): a flag joins by naming it (`group = ONE_RUN`).
pub(crate) const ONE_RUN: &str = "one_run";

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List every tool available under the given flags (built-in, manifest, MCP) with its
    /// class, whether the allowlist offers it, and its input schema.
    Tools(ToolsArgs),
    /// Write a run kept with --store back out as a transcript that --resume accepts.
    Export(ExportArgs),
    /// Show the settings a run would use (with --profile and -c applied) and where each comes
    /// from: a flag's default, an environment variable, a settings file and line, or -c.
    Config,
    /// Run many jobs (a JSONL file, one job per line) in one process, or through a queue in the
    /// store; every run flag applies to every job. See rounds batch --help.
    #[command(disable_help_flag = true)]
    Batch(BatchArgs),
    /// List recent runs kept under $ROUNDS_HOME/runs (time, status, rounds, tokens, prompt,
    /// transcript), or delete old ones (--prune).
    Runs(RunsArgs),
    /// Show a run for a person: each round's text, tool calls with their input and folded
    /// result, errors, usage and cost; or write it as one HTML page (--html).
    Show(ShowArgs),
    /// List the providers (with their key and URL variables), the model aliases, and the
    /// models whose context window and prices rounds knows.
    Models(ModelsArgs),
    /// Check what a run needs: the settings files, the model, the provider's key (never shown)
    /// and endpoint, the sandbox this kernel gives, and the store. Exit 1 when a needed check
    /// fails.
    Doctor(DoctorArgs),
    /// Print a completion script for SHELL on stdout (-m completes the aliases and providers).
    Completions(CompletionsArgs),
    /// Print the man page (roff) on stdout.
    Man,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Color {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// A tool call failed (any error result except a denial).
    ToolError,
    /// A call was denied by the allowlist.
    Denied,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputMode {
    /// The final answer text only.
    Text,
    /// One JSON object at the end: status, exit_code, final_text, rounds, usage, ….
    Json,
    /// One JSON event per line as things happen (start, text_delta, thinking_delta, tool_use,
    /// tool_result, retry, round, end), flushed per line. See schema/rounds.schema.json.
    StreamJson,
}

const AFTER_HELP: &str = "\
Keys come from the environment: ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY,
OPENROUTER_API_KEY (ollama, llamacpp and vllm need none). Base URLs: ANTHROPIC_BASE_URL and
GEMINI_BASE_URL (http://host:port), OPENAI_BASE_URL (http://host:port/v1). The clouds use their own
credentials: bedrock the AWS chain (or AWS_BEARER_TOKEN_BEDROCK), vertex Application Default
Credentials, azure AZURE_OPENAI_API_KEY or an Entra ID token; rounds doctor says which a run would
use. Tools never see the keys (see also --api-key-file).

Settings: any long flag can also live in ./.rounds.toml or ~/.config/rounds/config.toml under its
own name; rounds config shows what a run would use and where each value comes from.
Logs: -v (requests, tools), -vv (stream events), or ROUNDS_LOG with tracing targets
(ROUNDS_LOG=rounds=debug). NO_COLOR turns colour off.

Examples:
  rounds -m anthropic/claude-sonnet-4-5 'Which files define the CLI?'
  git diff | rounds 'Review this change'
  rounds --edit 'Fix the typo in README.md'
  rounds --edit -a 'bash(cargo *)' --timeout 600 'Make cargo test pass'
  rounds --full-auto 'Make the tests pass, then run them'
  rounds -o stream-json 'Summarize src/' | jq -c 'select(.type == \"tool_use\")'
  rounds -m replay:fixtures/demo/demo.jsonl -w fixtures/demo/workspace
  rounds tools -a all
  rounds runs; rounds show last

A prompt that starts with a subcommand's name (tools, export, config, batch, runs, show, models,
doctor, completions, man, help) needs -- in front: rounds -- show me the tests";

#[cfg(test)]
mod tests;
