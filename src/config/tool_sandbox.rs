//! The OS sandbox of a run from its flags (`--sandbox`, `--sandbox-write`, `--tool-network`),
//! pinned and checked against what this kernel can enforce before any request.

use std::path::{Path, PathBuf};

use super::ConfigError;
use crate::cli::{Cli, ToolFlags};
use crate::process::{Sandbox, sandbox};
use crate::tools::presets::Preset;

/// The OS sandbox of tool processes from the flags, checked against what this kernel can
/// enforce: with `require`, anything missing is an error; otherwise it is a warning, said once.
pub(crate) fn sandbox(
    flags: &ToolFlags,
    workspace: &Path,
    cwd: &Path,
    spawns: bool,
) -> Result<(Sandbox, sandbox::Summary), ConfigError> {
    let mode =
        sandbox::parse_flag(&flags.sandbox).map_err(|e| ConfigError::Sandbox(e.to_string()))?;
    if let Some(p) = Preset::chosen(flags.edit, flags.full_auto)
        .into_iter()
        .find(|p| p.needs_sandbox() && mode.0 == sandbox::Mode::Off)
    {
        return Err(ConfigError::PresetUnsandboxed(p.flag()));
    }
    let extra: Vec<PathBuf> = flags.sandbox_write.iter().map(|d| cwd.join(d)).collect();
    Sandbox::check_dirs(&extra).map_err(|e| ConfigError::Sandbox(e.to_string()))?;
    let extra: Vec<PathBuf> = extra
        .into_iter()
        .map(|d| std::fs::canonicalize(&d).unwrap_or(d))
        .collect();
    let mut sandbox = Sandbox::for_run(mode, workspace, &extra, flags.tool_network);
    // Now, before any tool runs: a tool that renames a writable directory away and puts a link
    // to elsewhere in its place cannot make the next tool's sandbox grant the link's target.
    sandbox.pin_all();
    let support = sandbox::probe();
    if let Some(warning) = sandbox
        .check(support)
        .map_err(|e| ConfigError::Sandbox(e.to_string()))?
    {
        // A run that starts no process has no use for the sandbox: what it lacks is only
        // noise there (every run of a non-root user on Ubuntu 24.04 would say it).
        if spawns {
            tracing::warn!("{}", warning.trim_start_matches("warning: "));
        }
    }
    if spawns {
        (sandbox.check_git(support)).map_err(|e| ConfigError::Sandbox(e.to_string()))?;
        // Once, now: each command then walks the run's own directories only.
        sandbox.survey_temp();
    }
    let record = sandbox.summary(support);
    Ok((sandbox, record))
}

/// Whether the run may start processes under the sandbox (bash, command tools, MCP servers,
/// hooks, the check): only such a run can write a `.git` through it. An allow rule that names
/// `bash` anywhere counts, erring on the side of asking.
pub(super) fn may_spawn(cli: &Cli) -> bool {
    let t = &cli.tools;
    t.full_auto
        || t.allow.iter().any(|rule| rule.contains("bash"))
        || !t.tools_file.is_empty()
        || !t.mcp.is_empty()
        || t.mcp_config.is_some()
        || !cli.pre_tool_hook.is_empty()
        || !cli.post_tool_hook.is_empty()
        || cli.check.is_some()
}
