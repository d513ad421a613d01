//! Puts together the tools of a run (or of `rounds tools`): the built-ins, command tools from
//! manifests, and the tools of MCP servers, which must be started to be listed; then the
//! allowlist, which can only be checked once every tool name is known.

use std::path::PathBuf;
use std::time::Duration;

use super::mcp::McpServers;
use super::policy::{Policy, PolicyError};
use super::presets::{self, Preset};
use crate::process::ProcessContext;
use std::sync::Arc;

use super::{Registry, SchemaError, Tool, builtin, manifest, mcp};

/// Where a run's tools come from, as resolved from the flags.
#[derive(Debug, Clone, Default)]
pub struct ToolSources {
    pub builtin: builtin::Options,
    pub allow: Vec<String>,
    pub deny: Vec<String>,
    /// `--edit`, `--full-auto`: their rules go after `allow`.
    pub presets: Vec<Preset>,
    pub tools_files: Vec<PathBuf>,
    /// `--mcp NAME=COMMAND ARGS…` values, as given.
    pub mcp: Vec<String>,
    pub mcp_config: Option<PathBuf>,
    /// How long each MCP server may take to initialize and list its tools.
    pub mcp_startup_timeout: Duration,
}

/// The tools of a run, with the servers that provide some of them (stop them when done).
pub struct Assembled {
    pub registry: Registry,
    pub policy: Policy,
    pub servers: McpServers,
}

#[derive(Debug, thiserror::Error)]
pub enum AssembleError {
    #[error(transparent)]
    Schema(#[from] SchemaError),
    #[error(transparent)]
    Manifest(#[from] manifest::ManifestError),
    #[error(transparent)]
    Mcp(#[from] mcp::McpError),
    #[error(transparent)]
    Policy(#[from] PolicyError),
    #[error("tool {name:?} from {origin} has the name of a tool that already exists ({existing})")]
    Clash {
        name: String,
        origin: String,
        existing: String,
    },
}

/// Every tool of the run (built-ins, manifests, MCP servers, whose processes start in the
/// context's sandbox) and the allowlist over them.
pub async fn assemble(
    sources: &ToolSources,
    processes: &ProcessContext<'_>,
) -> Result<Assembled, AssembleError> {
    let mut registry = builtin::registry(&sources.builtin);
    add_new(&mut registry, manifest::load(&sources.tools_files)?)?;
    let (servers, tools) = mcp::start_all(
        &sources.mcp,
        sources.mcp_config.as_deref(),
        sources.mcp_startup_timeout,
        processes,
    )
    .await?;
    add_new(&mut registry, tools)?;
    let known: Vec<&str> = registry.names().collect();
    let allow = presets::allow_with(&sources.allow, &sources.presets);
    let policy = Policy::new(&allow, &sources.deny, &known)?;
    Ok(Assembled {
        registry,
        policy,
        servers,
    })
}

/// Registers tools that must not replace one already there: a manifest tool called `bash`
/// would otherwise silently take the built-in's place.
fn add_new(registry: &mut Registry, tools: Vec<Arc<dyn Tool>>) -> Result<(), AssembleError> {
    for tool in tools {
        if let Some(existing) = registry.get(&tool.spec().name) {
            return Err(AssembleError::Clash {
                name: tool.spec().name.clone(),
                origin: tool.origin(),
                existing: existing.tool.origin(),
            });
        }
        registry.register_checked(tool)?;
    }
    Ok(())
}
