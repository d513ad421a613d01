//! The subcommands other than a run: `rounds tools`, `export`, `config`, `runs`, `show`,
//! `models`, `doctor`, `completions` and `man`. Each gathers its data from the layers below (on the one runtime,
//! `crate::runtime`, when it needs one), prints through `render`, and returns a [`Failure`]
//! rather than printing one: [`report`] says how every command ends.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use crate::cli::{Cli, CompletionsArgs, ExportArgs, ListOutput, RunsArgs, ShowArgs, ToolsArgs};
use crate::{inventory, render, runs, show, store, transcript};

mod config;
mod doctor;
mod man;
mod models;
mod report;
mod usage;

pub(crate) use config::config;
pub(crate) use doctor::doctor;
pub(crate) use man::man;
pub(crate) use models::models;
pub(crate) use report::{Ended, Failure, RunEnd, report};
pub(crate) use usage::read;

/// `rounds batch` with its words (after "batch"): help and bad flags as clap says them, then
/// the batch (`batch::main`), whose `BatchError` this reports like any command's failure.
pub(crate) fn batch(words: Vec<std::ffi::OsString>) -> Result<crate::outcome::Status, Failure> {
    let parsed = crate::batch::args::parse(words.clone()).map_err(Failure::Flags)?;
    crate::batch::prepare(&parsed)?;
    let rt = crate::runtime().map_err(Failure::Runtime)?;
    Ok(crate::batch::main(&rt, words, parsed)?)
}

/// `rounds tools`: the tools a run with these flags would have.
pub(crate) fn tools(args: ToolsArgs) -> Result<(), Failure> {
    let rt = crate::runtime().map_err(Failure::Runtime)?;
    let listed = rt.block_on(inventory::list(&args.tools));
    let listed = listed.map_err(Failure::Tools)?;
    render::print_tool_list(args.output == ListOutput::Json, &listed);
    Ok(())
}

/// `rounds export --store URL RUN_ID [--out FILE]`: prints the run's transcript (or writes it
/// to FILE).
pub(crate) fn export(args: &ExportArgs) -> Result<(), Failure> {
    let rt = crate::runtime().map_err(Failure::Runtime)?;
    let jsonl = rt.block_on(store::export(&args.store, &args.run_id))?;
    match &args.out {
        Some(path) => write_file(path, &jsonl),
        None => {
            render::print_export(&jsonl);
            Ok(())
        }
    }
}

/// `rounds runs`: the newest runs, or `--prune AGE`, which fails when something could not be
/// removed.
pub(crate) fn runs(args: &RunsArgs) -> Result<(), Failure> {
    let dir = runs_dir()?;
    if let Some(age) = args.prune {
        let cutoff = std::time::SystemTime::now()
            .checked_sub(age)
            .unwrap_or(std::time::UNIX_EPOCH);
        let pruned = runs::prune(&dir, cutoff, args.dry_run);
        render::print_pruned(&pruned, args.dry_run);
        return match pruned.errors.is_empty() {
            true => Ok(()),
            false => Err(Failure::NotRemoved(pruned.errors)),
        };
    }
    let list = runs::list(&dir, args.limit);
    render::print_runs(args.output == ListOutput::Json, &list, &dir);
    Ok(())
}

/// `rounds show FILE|RUN_ID|last`: the run as text (coloured and paged on a terminal), or as
/// an HTML page with `--html`.
pub(crate) fn show(args: &ShowArgs) -> Result<(), Failure> {
    let path = find_run(&args.run)?;
    let transcript = transcript::read(&path)?;
    let shown = path.display().to_string();
    if let Some(out) = &args.html {
        let kept = show::html::Kept::beside(&path, &transcript);
        let page = show::html::render(&transcript, &shown, &kept);
        // `-` is stdout, as for the jobs of `rounds batch`: a file named `-` is `./-`.
        if out.as_os_str() == "-" {
            render::print_document(page.as_bytes());
            return Ok(());
        }
        return write_file(out, &page);
    }
    let terminal = std::io::stdout().is_terminal();
    // The global --color, NO_COLOR and whether stdout is a terminal, as `render::set_color`
    // weighed them.
    let options = show::Options {
        result_lines: args.result_lines,
        color: console::colors_enabled(),
    };
    let text = show::terminal::render(&transcript, &shown, options);
    render::print_paged(&text, terminal && !args.no_pager);
    Ok(())
}

/// `rounds completions SHELL`.
pub(crate) fn completions(args: &CompletionsArgs) -> Result<(), Failure> {
    use clap::CommandFactory;
    let mut script = Vec::new();
    // -m offers the aliases and provider prefixes: the script's command says they are its
    // values, which the parser of a run never does (any model name goes).
    let models = || clap::builder::PossibleValuesParser::new(models::completion_values());
    let offer = |arg: clap::Arg| arg.value_parser(models());
    // batch parses its own flags: complete them from its own parser, not the stub.
    let mut cmd = Cli::command()
        .mut_arg("model", offer)
        .mut_subcommand("batch", |stub| {
            let about = stub.get_about().cloned().unwrap_or_default();
            crate::batch::args::command()
                .name("batch")
                .about(about)
                .mut_arg("model", offer)
        })
        .mut_subcommand("doctor", |doctor| doctor.mut_arg("model", offer));
    clap_complete::generate(args.shell, &mut cmd, "rounds", &mut script);
    render::print_document(&script);
    Ok(())
}

/// `$ROUNDS_HOME/runs`.
fn runs_dir() -> Result<PathBuf, Failure> {
    let env = |k: &str| crate::env::var(k);
    crate::config::rounds_home(&env)
        .map(|home| home.join(runs::DIR))
        .ok_or(Failure::NoHome)
}

/// What `rounds show` was given: `last`, a file, or a run id under the runs directory.
fn find_run(which: &str) -> Result<PathBuf, Failure> {
    if which == "last" {
        let dir = runs_dir()?;
        return runs::newest(&dir, None).ok_or(Failure::NoRuns(dir));
    }
    let path = Path::new(which);
    if !runs::names_a_run_id(which, path) {
        return Ok(path.to_owned());
    }
    let dir = runs_dir()?;
    match runs::find(&dir, which) {
        Some(found) => Ok(found),
        None => Err(Failure::NoRun {
            id: which.to_owned(),
            dir,
        }),
    }
}

/// An unwritable `--out` (or `--html`) is the user's to fix, like an unwritable `--transcript`.
fn write_file(path: &Path, text: &str) -> Result<(), Failure> {
    crate::files::write_private(path, text.as_bytes()).map_err(|source| Failure::Write {
        path: path.to_owned(),
        source,
    })
}
