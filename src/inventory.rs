//! `rounds tools`: every tool the given flags make available (built-in, manifest, MCP), with its
//! class, whether the allowlist offers it, where it comes from and its input schema — the same
//! assembly a run performs, so what is listed is what a run would get.

use serde::Serialize;
use serde_json::Value;

use crate::cli::{ListOutput, ToolsArgs};
use crate::config;
use crate::process::ProcessContext;
use crate::tools::Class;
use crate::tools::assemble::assemble;

/// One listed tool.
#[derive(Debug, Serialize)]
pub struct Listed {
    pub name: String,
    pub class: Class,
    /// Whether the allowlist offers it to the model.
    pub offered: bool,
    pub origin: String,
    pub description: String,
    pub input_schema: Value,
}

/// Lists the tools; returns the exit code (2 when the flags or a tool source are wrong).
pub fn run(args: ToolsArgs) -> u8 {
    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let env_all: Vec<_> = std::env::vars_os().collect();
    let listed = config::workspace(&args.tools, &cwd)
        .and_then(|ws| Ok((ws, config::tool_setup(&args.tools, &cwd, &env_all)?)))
        .map_err(|e| e.to_string())
        .and_then(|(workspace, (sources, env))| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start the async runtime: {e}"))?;
            runtime.block_on(async {
                let processes = ProcessContext {
                    cwd: workspace.root(),
                    env: &env,
                };
                let assembled = assemble(&sources, &processes)
                    .await
                    .map_err(|e| e.to_string())?;
                let listed: Vec<Listed> = assembled
                    .registry
                    .tools()
                    .map(|tool| {
                        let spec = tool.spec();
                        Listed {
                            name: spec.name.clone(),
                            class: spec.class,
                            offered: assembled.policy.offers(&spec.name),
                            origin: tool.origin(),
                            description: spec.description.clone(),
                            input_schema: spec.input_schema.clone(),
                        }
                    })
                    .collect();
                assembled.servers.shutdown().await;
                Ok(listed)
            })
        });
    match listed {
        Ok(listed) => {
            crate::render::print_tool_list(args.output == ListOutput::Json, &listed);
            0
        }
        Err(e) => {
            crate::render::print_error("usage error", &e);
            2
        }
    }
}
