//! Puts together the tools of a run (or of `rounds tools`): the built-ins, command tools from
//! manifests, and the tools of MCP servers, which must be started to be listed; then the
//! allowlist, which can only be checked once every tool name is known.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::mcp::McpServers;
use super::policy::{Policy, PolicyError};
use super::{BuiltinOptions, Registry, SchemaError, manifest, mcp};

/// Where a run's tools come from, as resolved from the flags.
#[derive(Debug, Clone, Default)]
pub struct ToolSources {
    pub builtin: BuiltinOptions,
    pub allow: Vec<String>,
    pub deny: Vec<String>,
    pub tools_files: Vec<PathBuf>,
    /// `--mcp NAME=COMMAND ARGS…` values, as given.
    pub mcp: Vec<String>,
    pub mcp_config: Option<PathBuf>,
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
}

/// Everything the tool processes of a run share: where they run and their environment.
pub struct ProcessContext<'a> {
    pub cwd: &'a Path,
    pub env: &'a [(OsString, OsString)],
}

pub async fn assemble(
    sources: &ToolSources,
    processes: &ProcessContext<'_>,
) -> Result<Assembled, AssembleError> {
    let mut registry = Registry::builtin(&sources.builtin)?;
    for tool in manifest::load(&sources.tools_files)? {
        registry.register_checked(tool)?;
    }
    let (servers, tools) =
        mcp::start_all(&sources.mcp, sources.mcp_config.as_deref(), processes).await?;
    for tool in tools {
        registry.register_checked(tool)?;
    }
    let known: Vec<&str> = registry.names().collect();
    let policy = Policy::new(&sources.allow, &sources.deny, &known)?;
    Ok(Assembled {
        registry,
        policy,
        servers,
    })
}
