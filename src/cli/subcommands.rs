//! The arguments of the subcommands (clap definitions only, as in `cli.rs`).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::ToolFlags;

#[derive(Debug, Args)]
pub struct RunsArgs {
    /// How many runs to list, newest first (0: all).
    #[arg(short = 'n', long, value_name = "N", default_value_t = 20)]
    pub limit: usize,

    /// Delete the runs last written more than AGE ago (30d, 12h, 2w), with their outputs,
    /// instead of listing. Runs a newer run was resumed from are kept.
    #[arg(long, value_name = "AGE", value_parser = crate::runs::parse_age)]
    pub prune: Option<std::time::Duration>,

    /// With --prune: say what would be deleted, and delete nothing.
    #[arg(long, requires = "prune")]
    pub dry_run: bool,

    /// Text (a table) or JSON (one array).
    #[arg(short, long, value_enum, default_value_t = ListOutput::Text)]
    pub output: ListOutput,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// A transcript file, a run id, or "last" (the newest run under $ROUNDS_HOME/runs).
    #[arg(value_name = "FILE|RUN_ID|last", default_value = "last")]
    pub run: String,

    /// Write the run as one self-contained HTML page to FILE, or to stdout with - (no scripts,
    /// no external assets), instead of showing it.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// Do not page the output on a terminal ($PAGER, else less).
    #[arg(long)]
    pub no_pager: bool,

    /// Lines of each tool result (and thinking) shown before the rest is folded.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub result_lines: usize,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell the script is for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `rounds batch`: its flags are parsed by `batch::args`, which adds every run flag to them.
#[derive(Debug, Args)]
pub struct BatchArgs {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<std::ffi::OsString>,
}

#[derive(Debug, Args)]
pub struct ToolsArgs {
    #[command(flatten)]
    pub tools: ToolFlags,

    /// Text (a table) or JSON (one array).
    #[arg(short, long, value_enum, default_value_t = ListOutput::Text)]
    pub output: ListOutput,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListOutput {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The PostgreSQL database the run was kept in.
    #[arg(long, value_name = "URL", env = "ROUNDS_STORE", hide_env_values = true)]
    pub store: String,

    /// The run id: the `run_id` of the transcript's start line, of `-o json` and of the store's
    /// runs table; the transcript's file name is RUN_ID.jsonl.
    pub run_id: String,

    /// Write to FILE instead of stdout.
    #[arg(long = "out", value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ModelsArgs {
    /// Prices and context windows of models from FILE too, over the compiled-in table (as a
    /// run's --prices).
    #[arg(long, value_name = "FILE")]
    pub prices: Option<PathBuf>,

    /// Text (tables) or JSON (one object: providers, aliases, models).
    #[arg(short, long, value_enum, default_value_t = ListOutput::Text)]
    pub output: ListOutput,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// The model to check for, as a run's -m.
    ///
    /// [default: ROUNDS_MODEL, else the settings files' model, else the default model]
    #[arg(short, long, value_name = "PROVIDER/MODEL")]
    pub model: Option<String>,

    /// The key file to check, as a run's --api-key-file.
    #[arg(long, value_name = "FILE")]
    pub api_key_file: Option<PathBuf>,

    /// The endpoint to check, as a run's --base-url.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,

    /// The store to check, as a run's --store (connecting changes nothing in it).
    #[arg(long, value_name = "URL", env = "ROUNDS_STORE", hide_env_values = true)]
    pub store: Option<String>,

    /// Seconds each network check may take.
    #[arg(long, value_name = "SECS", default_value_t = 5.0, value_parser = super::positive_secs)]
    pub timeout: f64,

    /// A checklist (text) or one JSON object.
    #[arg(short, long, value_enum, default_value_t = ListOutput::Text)]
    pub output: ListOutput,
}
