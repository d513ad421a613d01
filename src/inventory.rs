//! `rounds tools`: every tool the given flags make available (built-in, manifest, MCP), with its
//! class, whether the allowlist offers it, where it comes from and its input schema — the same
//! assembly a run performs, so what is listed is what a run would get.

use serde::Serialize;
use serde_json::Value;

use crate::cli::ToolFlags;
use crate::config;
use crate::process::ProcessContext;
use crate::process::sandbox::Summary;
use crate::tools::Class;
use crate::tools::assemble::{AssembleError, assemble};
use crate::tools::delegate::AgentBrief;
use crate::tools::policy::Policy;
use crate::tools::presets::Preset;

/// One listed tool.
#[derive(Debug, Serialize)]
pub(crate) struct Listed {
    pub(crate) name: String,
    pub(crate) class: Class,
    /// Whether the allowlist offers it to the model.
    pub(crate) offered: bool,
    /// The preset flag (`--edit`, `--full-auto`) it is offered by, when the rest of the flags
    /// would not offer it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) preset: Option<&'static str>,
    pub(crate) origin: String,
    pub(crate) description: String,
    pub(crate) input_schema: Value,
}

/// The tools a run would have, and the sandbox their processes would run in.
pub(crate) struct Inventory {
    pub(crate) tools: Vec<Listed>,
    pub(crate) sandbox: Summary,
    /// The presets the flags turned on.
    pub(crate) presets: Vec<Preset>,
    /// The agents `task` may name (from `--agents`), besides `general`.
    pub(crate) agents: Vec<AgentBrief>,
}

/// Why the tools could not be listed: a flag or a tool source is wrong.
#[derive(Debug, thiserror::Error)]
pub enum InventoryError {
    #[error(transparent)]
    Flags(#[from] config::ConfigError),
    #[error(transparent)]
    Tools(#[from] AssembleError),
    #[error(transparent)]
    Agents(#[from] crate::settings::SettingsError),
}

/// Assembles the tools the flags name (starting and stopping MCP servers) and lists them; the
/// error says which flag or tool source is wrong.
pub(crate) async fn list(flags: &ToolFlags) -> Result<Inventory, InventoryError> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let env_all: Vec<_> = std::env::vars_os().collect();
    let workspace = config::workspace(flags, &cwd)?;
    let (mut sources, env) = config::tool_setup(flags, &cwd, &env_all)?;
    // The agents of the files `--agents` names, as `task`'s description lists them.
    for file in &flags.agents {
        for written in crate::settings::agents::read_file(&cwd.join(file))? {
            let description = written.keys.get("description").and_then(|d| d.as_str());
            sources.builtin.agents.push(AgentBrief {
                name: written.name,
                description: description.unwrap_or_default().to_owned(),
            });
        }
    }
    // MCP servers start in the sandbox a run would give them.
    let (sandbox, summary) = config::sandbox(flags, workspace.root(), &cwd, false)?;
    let processes = ProcessContext {
        cwd: workspace.root(),
        env: &env,
        sandbox: &sandbox,
    };
    let assembled = assemble(&sources, &processes).await?;
    // The same flags without the presets, to tell which tools a preset is what offers.
    let known: Vec<&str> = assembled.registry.names().collect();
    let bare = Policy::new(&sources.allow, &sources.deny, &known).map_err(AssembleError::from)?;
    let listed = assembled
        .registry
        .tools()
        .map(|tool| {
            let spec = tool.spec();
            let offered = assembled.policy.offers(&spec.name);
            let preset = (offered && !bare.offers(&spec.name))
                .then(|| {
                    sources
                        .presets
                        .iter()
                        .find(|p| p.tools().contains(&spec.name.as_str()))
                })
                .flatten()
                .map(|p| p.flag());
            Listed {
                name: spec.name.clone(),
                class: spec.class,
                offered,
                preset,
                origin: tool.origin(),
                description: spec.description.clone(),
                input_schema: spec.input_schema.clone(),
            }
        })
        .collect();
    assembled.servers.shutdown().await;
    Ok(Inventory {
        tools: listed,
        sandbox: summary,
        presets: sources.presets,
        agents: sources.builtin.agents,
    })
}
