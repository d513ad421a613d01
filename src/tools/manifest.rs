//! Command tools from manifests (placeholder while the loader is written).

use std::path::PathBuf;
use std::sync::Arc;

use super::Tool;

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ManifestError(pub String);

pub fn load(files: &[PathBuf]) -> Result<Vec<Arc<dyn Tool>>, ManifestError> {
    if files.is_empty() {
        return Ok(Vec::new());
    }
    Err(ManifestError("--tools-file is not supported yet".into()))
}
