//! The subcommands other than a run: `rounds tools` and `rounds export`. Each gathers its data
//! from the layers below on the one runtime (`crate::runtime`), and prints through `render`.

use std::path::Path;

use crate::cli::{ExportArgs, ListOutput, ToolsArgs};
use crate::outcome::Status;
use crate::{inventory, render, store};

/// `rounds tools`: returns the exit code (2 when the flags or a tool source are wrong).
pub fn tools(args: ToolsArgs) -> u8 {
    let listed = crate::runtime()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
        .and_then(|rt| rt.block_on(inventory::list(&args.tools)));
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

/// An unwritable `--out` is the user's to fix, like an unwritable `--transcript`.
fn write_file(path: &Path, jsonl: &str) -> Result<(), (Status, String)> {
    use std::io::Write;
    let written =
        crate::files::create_private(path).and_then(|mut f| f.write_all(jsonl.as_bytes()));
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
            (None, Some(s)) => (s.values.clone(), s.origin.to_string()),
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
        .collect();
    if !aliases.is_empty() {
        out.push_str("\n[alias]\n");
        out.push_str(&aliases.join("\n"));
        out.push('\n');
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
