//! The run's delegate: its agents resolved into what the loop needs (their own models built on
//! the run's provider, how each is scheduled), handed to the toolbox for `task` calls.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::{SetupError, Sources, build_provider};
use crate::agent::delegate::{self, Definition, Delegation, Model};
use crate::agent::{Agent, Cancel};
use crate::config::agents::Agents;
use crate::provider::ProviderChoice;
use crate::records::Records;
use crate::tools::delegate::{GENERAL, TASK};
use crate::tools::pipeline::class_under;

/// What the run gives its subagents besides its `Agent`.
pub(super) struct Given<'a> {
    pub(super) agents: Agents,
    pub(super) sources: &'a Sources,
    pub(super) choice: &'a ProviderChoice,
    pub(super) idle: Duration,
    /// The run's system prompt, without `--output-schema`'s instruction (the run's answer's).
    pub(super) system: String,
    pub(super) project_docs: Vec<(String, String)>,
    pub(super) records: Arc<Records>,
    pub(super) cancel: Cancel,
}

/// Hands the run's `task` calls to a delegate that runs its agents.
pub(super) fn attach(run: &Agent, given: Given<'_>) -> Result<(), SetupError> {
    let (toolbox, limits) = (&run.toolbox, &run.limits);
    let max_depth = given.agents.max_depth;
    let mut definitions = BTreeMap::new();
    let mut classes = BTreeMap::new();
    let general = std::iter::once((GENERAL.to_owned(), None));
    let defined = given
        .agents
        .defined
        .into_iter()
        .map(|(name, a)| (name, Some(a)));
    for (name, agent) in general.chain(defined) {
        let definition = match agent {
            None => Definition::general(),
            Some(agent) => {
                let model = match (&agent.admitted.model, agent.model_info) {
                    (Some(model), Some(info)) => Some(Model {
                        provider: build_provider(given.sources, given.choice, model, given.idle)?,
                        price: info.price,
                        context_window: info.context_window.unwrap_or(limits.context_window),
                    }),
                    _ => None,
                };
                let a = agent.admitted;
                Definition {
                    prompt: a.prompt,
                    tools: a.tools,
                    deny: a.deny,
                    max_rounds: a.max_rounds,
                    model,
                }
            }
        };
        // Scheduled as the tools it has at depth 1 (where `task` is denied unless deeper
        // delegation is allowed: then it counts as mutating, like any agent that may).
        let mut deny = definition.deny.clone();
        if max_depth <= 1 {
            deny.push(TASK.to_owned());
        }
        let policy = toolbox
            .narrow(definition.tools.as_deref(), &deny)
            .map_err(|e| SetupError::Agent(name.clone(), e))?;
        classes.insert(name.clone(), class_under(toolbox, &policy));
        if name != GENERAL {
            definitions.insert(name, definition);
        }
    }
    let shared = delegate::Shared {
        agents: definitions,
        classes,
        provider: run.provider.clone(),
        price: run.price,
        system: given.system,
        workspace: toolbox.workspace().root().display().to_string(),
        project_docs: given.project_docs,
        limits: limits.clone(),
        cache: run.cache.clone(),
        redactor: run.redactor.clone(),
        records: given.records,
        cancel: given.cancel,
        spend: run.spend.clone(),
        max_depth,
    };
    let delegation = Delegation::new(Arc::new(shared), run.observer.clone());
    toolbox.delegate_to(Arc::new(delegation));
    Ok(())
}
