//! The run's delegate: its agents resolved into what the loop needs (their own models built on
//! the run's provider, how each is scheduled), handed to the toolbox for `task` calls.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::{SetupError, Sources, build_provider};
use crate::agent::delegate::{self, Definition, Delegation, Model};
use crate::agent::{Cancel, LoopLimits, Observer, Spend};
use crate::config::agents::Agents;
use crate::pricing::Price;
use crate::provider::{Cache, Provider, ProviderChoice};
use crate::records::Records;
use crate::redact::Redactor;
use crate::tools::delegate::{GENERAL, TASK};
use crate::tools::pipeline::{Toolbox, class_under};

/// What the run gives its subagents.
pub(super) struct Shared<'a> {
    pub(super) agents: Agents,
    pub(super) sources: &'a Sources,
    pub(super) choice: &'a ProviderChoice,
    pub(super) idle: Duration,
    pub(super) provider: Arc<dyn Provider>,
    pub(super) price: Option<Price>,
    /// The run's system prompt, without `--output-schema`'s instruction (the run's answer's).
    pub(super) system: String,
    pub(super) project_docs: Vec<(String, String)>,
    pub(super) limits: &'a LoopLimits,
    pub(super) cache: Option<Cache>,
    pub(super) redactor: Redactor,
    pub(super) records: Arc<Records>,
    pub(super) cancel: Cancel,
    pub(super) spend: Arc<Spend>,
}

/// `toolbox` handing its `task` calls to the run's delegate.
pub(super) fn delegating(
    toolbox: Toolbox,
    shared: Shared<'_>,
    observer: Arc<dyn Observer>,
) -> Result<Toolbox, SetupError> {
    let max_depth = shared.agents.max_depth;
    let mut definitions = BTreeMap::new();
    let mut classes = BTreeMap::new();
    let general = std::iter::once((GENERAL.to_owned(), None));
    let defined = shared
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
                        provider: build_provider(
                            shared.sources,
                            shared.choice,
                            model,
                            shared.idle,
                        )?,
                        price: info.price,
                        context_window: info.context_window.unwrap_or(shared.limits.context_window),
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
        classes.insert(name.clone(), class_under(&toolbox, &policy));
        if name != GENERAL {
            definitions.insert(name, definition);
        }
    }
    let shared = delegate::Shared {
        agents: definitions,
        classes,
        provider: shared.provider,
        price: shared.price,
        system: shared.system,
        workspace: toolbox.workspace().root().display().to_string(),
        project_docs: shared.project_docs,
        limits: shared.limits.clone(),
        cache: shared.cache,
        redactor: shared.redactor,
        records: shared.records,
        cancel: shared.cancel,
        spend: shared.spend,
        max_depth,
    };
    let delegation = Delegation::new(Arc::new(shared), observer);
    Ok(toolbox.delegating(Arc::new(delegation)))
}
