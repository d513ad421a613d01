//! The subcommands other than a run: `rounds tools`, `export`, `runs`, `show`, `completions`
//! and `man`. Each gathers its data from the layers below (on the one runtime,
//! `crate::runtime`, when it needs one), and prints through `render`.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use crate::cli::{Cli, CompletionsArgs, ExportArgs, ListOutput, RunsArgs, ShowArgs, ToolsArgs};
use crate::outcome::Status;
use crate::{config, inventory, render, runs, show, store, transcript};

/// `rounds tools`: returns the exit code (2 when the flags or a tool source are wrong).
pub fn tools(args: ToolsArgs) -> u8 {
    let listed = crate::runtime()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
        .and_then(|rt| {
            rt.block_on(inventory::list(&args.tools))
                .map_err(|e| e.to_string())
        });
    match listed {
        Ok(listed) => {
            render::print_tool_list(args.output == ListOutput::Json, &listed);
            0
        }
        Err(e) => {
            render::print_error("usage error", &e);
            Status::Usage.exit_code()
        }
    }
}

/// `rounds export --store URL RUN_ID [--out FILE]`: prints the run's transcript (or writes it
/// to FILE) and returns the exit code.
pub fn export(args: &ExportArgs) -> u8 {
    let exported = match crate::runtime() {
        Ok(rt) => rt
            .block_on(store::export(&args.store, &args.run_id))
            .map_err(|e| (e.status(), e.to_string())),
        Err(e) => Err((
            Status::Error,
            format!("cannot start the async runtime: {e}"),
        )),
    };
    let written = exported.and_then(|jsonl| match &args.out {
        Some(path) => write_file(path, &jsonl),
        None => {
            render::print_export(&jsonl);
            Ok(())
        }
    });
    match written {
        Ok(()) => 0,
        Err((status, message)) => {
            let label = if status == Status::Usage {
                "usage error"
            } else {
                "error"
            };
            render::print_error(label, &message);
            status.exit_code()
        }
    }
}

/// `rounds runs`: the newest runs, or `--prune AGE`. Exit 1 when something could not be
/// removed.
pub fn runs(args: &RunsArgs) -> u8 {
    let dir = match runs_dir() {
        Ok(dir) => dir,
        Err(e) => return usage_error(&e),
    };
    if let Some(age) = args.prune {
        let cutoff = std::time::SystemTime::now()
            .checked_sub(age)
            .unwrap_or(std::time::UNIX_EPOCH);
        let pruned = runs::prune(&dir, cutoff, args.dry_run);
        render::print_pruned(&pruned, args.dry_run);
        return if pruned.errors.is_empty() {
            0
        } else {
            Status::Error.exit_code()
        };
    }
    let list = runs::list(&dir, args.limit);
    render::print_runs(args.output == ListOutput::Json, &list, &dir);
    0
}

/// `rounds show FILE|RUN_ID|last`: the run as text (coloured and paged on a terminal), or as
/// an HTML page with `--html`.
pub fn show(args: &ShowArgs) -> u8 {
    let read = find_run(&args.run).and_then(|path| {
        transcript::read(&path)
            .map_err(|e| e.to_string())
            .map(|t| (path, t))
    });
    let (path, transcript) = match read {
        Ok(found) => found,
        Err(e) => return usage_error(&e),
    };
    let shown = path.display().to_string();
    if let Some(out) = &args.html {
        let page = show::html::render(&transcript, &shown);
        return match write_file(out, &page) {
            Ok(()) => 0,
            Err((status, message)) => {
                render::print_error("usage error", &message);
                status.exit_code()
            }
        };
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
    0
}

/// `rounds completions SHELL`.
pub fn completions(args: &CompletionsArgs) -> u8 {
    use clap::CommandFactory;
    let mut script = Vec::new();
    // batch parses its own flags: complete them from its own parser, not the stub.
    let mut cmd = Cli::command().mut_subcommand("batch", |stub| {
        let about = stub.get_about().cloned().unwrap_or_default();
        crate::batch::args::command().name("batch").about(about)
    });
    clap_complete::generate(args.shell, &mut cmd, "rounds", &mut script);
    render::print_document(&script);
    0
}

/// `rounds man`: one page, rounds(1), with a section per subcommand (clap_mangen alone would
/// point to pages rounds-runs(1)… that no one installs).
pub fn man() -> u8 {
    match man_page() {
        Ok(page) => {
            render::print_document(page.as_bytes());
            0
        }
        Err(e) => {
            render::print_error("error", &format!("cannot render the man page: {e}"));
            Status::Error.exit_code()
        }
    }
}

fn man_page() -> std::io::Result<String> {
    use clap::CommandFactory;
    use clap_mangen::Man;
    type Part = fn(&Man, &mut dyn std::io::Write) -> std::io::Result<()>;
    // Each part comes with roff's preamble (two lines defining Aq); the page needs it once.
    let part = |man: &Man, render: Part| -> std::io::Result<String> {
        let mut buf = Vec::new();
        render(man, &mut buf)?;
        let text = String::from_utf8_lossy(&buf).into_owned();
        Ok(text
            .lines()
            .filter(|l| !l.starts_with(".ie \\n(.g .ds Aq") && !l.starts_with(".el .ds Aq"))
            .map(|l| format!("{l}\n"))
            .collect())
    };
    let mut cmd = Cli::command();
    cmd.build();
    let main = Man::new(cmd.clone());
    let mut page = String::from(".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n");
    for render in [
        Man::render_title,
        Man::render_name_section,
        Man::render_synopsis_section,
        Man::render_description_section,
        Man::render_options_section,
    ] as [Part; 5]
    {
        page.push_str(&part(&main, render)?);
    }
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        // batch parses its own flags; the top-level parser knows only its stub.
        let sub = match sub.get_name() {
            "batch" => crate::batch::args::own_command(),
            _ => sub.clone(),
        };
        let man = Man::new(sub.clone());
        let name = sub.get_bin_name().unwrap_or(sub.get_name()).to_uppercase();
        page.push_str(&format!(".SH \"{name}\"\n"));
        for render in [
            Man::render_description_section,
            Man::render_synopsis_section,
            Man::render_options_section,
        ] as [Part; 3]
        {
            // Within the subcommand's section, its parts are subsections.
            let text = part(&man, render)?;
            let text = text.replacen(".SH DESCRIPTION\n", "", 1);
            let text = text.replace(".SH SYNOPSIS", ".SS Usage");
            page.push_str(
                &text
                    .replace(".SH OPTIONS", ".SS Options")
                    .replace(".SH ", ".SS "),
            );
        }
    }
    page.push_str(&part(&main, Man::render_extra_section)?);
    page.push_str(&part(&main, Man::render_version_section)?);
    Ok(page)
}

/// `$ROUNDS_HOME/runs`.
fn runs_dir() -> Result<PathBuf, String> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    config::rounds_home(&env)
        .map(|home| home.join(runs::DIR))
        .ok_or_else(|| "cannot tell where runs are kept: set ROUNDS_HOME or HOME".into())
}

/// What `rounds show` was given: `last`, a file, or a run id under the runs directory.
fn find_run(which: &str) -> Result<PathBuf, String> {
    if which == "last" {
        let dir = runs_dir()?;
        return runs::newest(&dir, None).ok_or_else(|| format!("no runs under {}", dir.display()));
    }
    let path = Path::new(which);
    if path.exists() || !runs::is_run_id(which) || which.ends_with(".jsonl") {
        return Ok(path.to_owned());
    }
    let dir = runs_dir()?;
    runs::find(&dir, which).ok_or_else(|| {
        format!(
            "no run {which} under {} (nor a file of that name)",
            dir.display()
        )
    })
}

fn usage_error(message: &str) -> u8 {
    render::print_error("usage error", message);
    Status::Usage.exit_code()
}

/// An unwritable `--out` (or `--html`) is the user's to fix, like an unwritable `--transcript`.
fn write_file(path: &Path, text: &str) -> Result<(), (Status, String)> {
    let written = crate::files::write_private(path, text.as_bytes());
    written.map_err(|e| {
        (
            Status::Usage,
            format!("cannot write {}: {e}", path.display()),
        )
    })
}

/// `rounds config`: every setting a run would use that is not left unset, with where it comes
/// from, in the settings files' own format (so a line can be pasted into one).
pub fn config(layers: &crate::settings::Layers) -> u8 {
    use clap::CommandFactory;
    let command = crate::cli::Cli::command();
    let mut rows: Vec<(String, String)> = Vec::new();
    for arg in command.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        if matches!(long, "help" | "version" | "profile" | "config") {
            continue;
        }
        let env = arg
            .get_env()
            .and_then(|name| Some((name.to_str()?, std::env::var(name).ok()?)))
            .filter(|(_, v)| !v.is_empty());
        let (values, source): (Vec<String>, String) = match (env, layers.settings.get(long)) {
            (Some((name, value)), _) => {
                // Shown as a name only: an environment value may be a secret (a store URL).
                let shown = if arg.is_hide_env_values_set() {
                    "(hidden)".to_owned()
                } else {
                    value
                };
                (vec![shown], format!("env {name}"))
            }
            (None, Some(s)) => {
                let sources: Vec<String> = s.sources.iter().map(ToString::to_string).collect();
                let mut source = sources.join(", ");
                if let Some(note) = &s.note {
                    source.push_str(&format!(" ({note})"));
                }
                (s.values.clone(), source)
            }
            (None, None) => {
                let defaults: Vec<String> = arg
                    .get_default_values()
                    .iter()
                    .map(|v| v.to_string_lossy().into_owned())
                    .collect();
                if defaults.is_empty() {
                    continue;
                }
                (defaults, "default".to_owned())
            }
        };
        let quoted: Vec<String> = values.iter().map(|v| toml_value(v)).collect();
        let value = match (arg.get_action().takes_values(), quoted.as_slice()) {
            (false, _) => "true".to_owned(),
            (true, [one]) if !is_list(arg) => one.clone(),
            (true, many) => format!("[{}]", many.join(", ")),
        };
        rows.push((format!("{long} = {value}"), source));
    }
    let width = rows.iter().map(|(l, _)| l.len()).max().unwrap_or(0).min(60);
    let mut out = String::new();
    for (line, source) in rows {
        out.push_str(&format!("{line:width$}  # {source}\n"));
    }
    let aliases: Vec<String> = layers
        .aliases
        .iter()
        .map(|(k, v)| format!("{k} = {}", toml_value(v)))
        .chain(layers.project_aliases.iter().map(|(k, v)| {
            format!(
                "{k} = {}  # the project's: for its own model value only",
                toml_value(v)
            )
        }))
        .collect();
    if !aliases.is_empty() {
        out.push_str("\n[alias]\n");
        out.push_str(&aliases.join("\n"));
        out.push('\n');
    }
    if !layers.refused.is_empty() {
        // Commented out, so the output stays a settings file one can paste.
        out.push_str("\n# Refused (see \"Who decides what\" in the README):\n");
        for r in &layers.refused {
            let quoted: Vec<String> = r.values.iter().map(|v| toml_value(v)).collect();
            out.push_str(&format!(
                "# {} = {}  # {}: {}\n",
                r.key,
                quoted.join(", "),
                r.source,
                r.why
            ));
        }
    }
    render::print_export(&out);
    0
}

/// Whether an argument is repeatable (its value is a list in a settings file).
fn is_list(arg: &clap::Arg) -> bool {
    matches!(arg.get_action(), clap::ArgAction::Append)
}

/// A value as TOML writes it: numbers and booleans bare, everything else a quoted string.
fn toml_value(v: &str) -> String {
    if v.parse::<f64>().is_ok() || v == "true" || v == "false" {
        v.to_owned()
    } else {
        serde_json::to_string(v).unwrap_or_default()
    }
}
