//! MCP servers over stdio (placeholder while the client is written; see the MCP issue).

use std::path::Path;
use std::sync::Arc;

use super::Tool;
use super::assemble::ProcessContext;

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct McpError(pub String);

#[derive(Default)]
pub struct McpServers;

impl McpServers {
    pub async fn shutdown(self) {}
}

pub async fn start_all(
    flags: &[String],
    config: Option<&Path>,
    _processes: &ProcessContext<'_>,
) -> Result<(McpServers, Vec<Arc<dyn Tool>>), McpError> {
    if flags.is_empty() && config.is_none() {
        return Ok((McpServers, Vec::new()));
    }
    Err(McpError("MCP servers are not supported yet".into()))
}
