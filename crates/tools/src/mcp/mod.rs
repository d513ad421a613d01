//! Tools from MCP servers over stdio, with the official Rust SDK (`rmcp`) as the client.
//!
//! Servers come from `--mcp "NAME=COMMAND ARGS…"` and `--mcp-config FILE` (`spec`). Each runs
//! under rounds' process supervisor, like every other process rounds starts, so its whole tree
//! ends with the run — also when rounds itself is killed (`server`). All of them start in
//! parallel before the first model call, and a server that cannot start, exits, hangs or talks
//! nonsense stops the run right there with an error naming it: a broken setup should fail at
//! once, not in round 3. Every tool a server lists is offered as `NAME__TOOL` (`tool`).
//!
//! The startup limit (initialize and the whole `tools/list`) is `--mcp-startup-timeout` (15 s,
//! or `ROUNDS_MCP_STARTUP_TIMEOUT`). What a server may send — line length, number of tools,
//! description and schema sizes — is bounded (`limits`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::Tool;
use crate::process::ProcessContext;

mod limits;
mod server;
mod spec;
mod tool;

/// Why the MCP servers could not be set up; always before any model call.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("--mcp {value:?}: {reason}")]
    Flag {
        value: String,
        #[source]
        reason: spec::FlagError,
    },
    #[error("--mcp-config {path}: {reason}")]
    Config {
        path: String,
        #[source]
        reason: spec::ConfigError,
    },
    #[error("MCP server {0} is defined more than once")]
    Duplicate(String),
    #[error("MCP server {name}: {what}")]
    Server { name: String, what: String },
}

/// The running servers of a run. `shutdown` ends them; dropping them without it still asks
/// every supervisor to end its tree, so an early return cannot leak processes.
#[derive(Default)]
pub struct McpServers {
    running: Vec<server::Running>,
}

impl McpServers {
    /// Ends every server's process tree (in parallel) and waits until they are gone.
    pub async fn shutdown(mut self) {
        let running = std::mem::take(&mut self.running);
        futures_util::future::join_all(running.into_iter().map(server::Running::shutdown)).await;
    }
}

impl Drop for McpServers {
    fn drop(&mut self) {
        for server in &self.running {
            server.signal_stop();
        }
    }
}

/// Starts every configured server, lists its tools and returns them ready to register.
pub async fn start_all(
    flags: &[String],
    config: Option<&Path>,
    limit: Duration,
    processes: &ProcessContext<'_>,
) -> Result<(McpServers, Vec<Arc<dyn Tool>>), McpError> {
    let specs = spec::collect(flags, config)?;
    if specs.is_empty() {
        return Ok((McpServers::default(), Vec::new()));
    }
    // Spawned one after the other on this thread (see `server::spawn`), connected in parallel.
    let mut spawned = Vec::new();
    for spec in specs {
        match server::spawn(spec, processes) {
            Ok(s) => spawned.push(s),
            Err(e) => {
                futures_util::future::join_all(spawned.into_iter().map(server::Spawned::abort))
                    .await;
                return Err(e);
            }
        }
    }
    let max_line = limits::max_line();
    let connected = futures_util::future::join_all(
        spawned
            .into_iter()
            .map(|s| server::connect(s, limit, max_line)),
    )
    .await;
    let mut servers = McpServers::default();
    let mut listed = Vec::new();
    let mut first_error = None;
    for outcome in connected {
        match outcome {
            Ok((running, tools)) => {
                listed.push((running.link.clone(), tools));
                servers.running.push(running);
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_error {
        servers.shutdown().await;
        return Err(e);
    }
    let mut namer = spec::Namer::default();
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    for (link, server_tools) in listed {
        tracing::info!("MCP server {}: {} tools", link.name, server_tools.len());
        for t in server_tools {
            let name = namer.name(&link.name, &t.name);
            tools.push(Arc::new(tool::McpTool::new(link.clone(), name, t)));
        }
    }
    Ok((servers, tools))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::process::Sandbox;

    #[tokio::test]
    async fn nothing_configured_starts_nothing() {
        let off = Sandbox::off();
        let processes = ProcessContext {
            cwd: Path::new("/"),
            env: &[],
            sandbox: &off,
        };
        let (servers, tools) = start_all(&[], None, Duration::from_secs(1), &processes)
            .await
            .unwrap();
        assert!(tools.is_empty() && servers.running.is_empty());
        let err = start_all(
            &["bad name=x".into()],
            None,
            Duration::from_secs(1),
            &processes,
        )
        .await
        .err()
        .unwrap();
        assert!(
            err.to_string().starts_with("--mcp \"bad name=x\": "),
            "{err}"
        );
    }
}
