//! The arguments of `rounds runs`, `show` and `completions` (clap definitions only, as in
//! `cli.rs`).

use std::path::PathBuf;

use clap::Args;

use super::ListOutput;

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

    /// Write the run as one self-contained HTML page to FILE (no scripts, no external assets)
    /// instead of printing it.
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
