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
