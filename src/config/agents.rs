//! The run's subagents: the `[agents.NAME]` tables of the settings files and of the files
//! `--agents` names, through `trust::agents`, with each agent's own model priced.

use std::collections::BTreeMap;

use super::{ConfigError, Inputs};
use crate::cli::Cli;
use crate::pricing::{Catalog, ModelInfo};
use crate::provider::ProviderChoice;
use crate::settings::agents::{self, Written};
use crate::tools::assemble::ToolSources;
use crate::tools::delegate::AgentBrief;
use crate::trust::agents::{Admitted, Run, admit};

/// One agent as the run has it.
#[derive(Debug, Clone)]
pub(crate) struct AgentConfig {
    pub(crate) admitted: Admitted,
    /// Its own model's price and context window, when it names a model.
    pub(crate) model_info: Option<ModelInfo>,
}

/// The run's agents and how deep they may nest.
#[derive(Debug, Clone, Default)]
pub(crate) struct Agents {
    pub(crate) defined: BTreeMap<String, AgentConfig>,
    pub(crate) max_depth: u32,
}

impl Agents {
    /// What `task`'s description tells the model of them.
    pub(crate) fn briefs(&self) -> Vec<AgentBrief> {
        self.defined
            .iter()
            .map(|(name, a)| AgentBrief {
                name: name.clone(),
                description: a.admitted.description.clone(),
            })
            .collect()
    }
}

/// The agents of the settings files' tables (`inputs.agents`, the user's first) and of
/// `--agents`, on `provider`, told to `task` (`tools`' built-in options). A project's refused
/// keys are warned of; the user's mistakes are errors.
pub(crate) fn resolve(
    cli: &Cli,
    inputs: &Inputs<'_>,
    provider: &ProviderChoice,
    tools: &mut ToolSources,
) -> Result<Agents, ConfigError> {
    let (settings, aliases, cwd) = (&inputs.agents, &inputs.aliases, inputs.cwd.as_path());
    // Ascending precedence: the project's tables, the user's, then the files named on the
    // command line.
    let (mut written, user): (Vec<Written>, Vec<Written>) =
        settings.iter().cloned().partition(|w| !w.origin.trusted());
    written.extend(user);
    for file in &cli.tools.agents {
        written.extend(agents::read_file(&cwd.join(file)).map_err(ConfigError::AgentsFile)?);
    }
    let run = Run {
        provider: provider.name(),
        max_rounds: cli.max_rounds,
        aliases,
    };
    let (admitted, refused) = admit(&written, &run).map_err(ConfigError::Agent)?;
    for refusal in refused {
        tracing::warn!("{}", crate::terminal::line(&refusal.to_string()));
    }
    let prices = cli.prices.as_ref().map(|p| cwd.join(p));
    let mut defined = BTreeMap::new();
    for (name, admitted) in admitted {
        let model_info = match &admitted.model {
            None => None,
            Some(model) => {
                let info = Catalog::load(prices.as_deref())?.lookup(provider.name(), model);
                if cli.budget_usd.is_some() && info.price.is_none() {
                    return Err(ConfigError::UnknownPrice {
                        provider: provider.name(),
                        model: model.clone(),
                    });
                }
                Some(info)
            }
        };
        defined.insert(
            name,
            AgentConfig {
                admitted,
                model_info,
            },
        );
    }
    let agents = Agents {
        defined,
        max_depth: cli.tools.max_depth,
    };
    tools.builtin.agents = agents.briefs();
    Ok(agents)
}
