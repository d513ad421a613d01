//! Delegation: the `task` tool, with which the model hands a self-contained piece of work to a
//! subagent (a fresh conversation, the same engine, tools that are a subset of the run's) and
//! gets its final answer back as the call's result.
//!
//! The tool's name and its `{description, prompt, subagent_type}` input are the ones Claude
//! Code, opencode and Qwen Code share, so models already know them. This crate knows only the
//! tool; the pipeline hands its calls to the run's `pipeline::Delegate`: the nested loop itself is the `rounds` crate's
//! (`agent::delegate`), which the arrows keep out of reach from here. The pipeline treats a
//! delegating call like any other (schema, allowlist — `task(reviewer)` allows one agent —
//! hooks, redaction, the cap), except that no tool timeout bounds it: the subagent is bounded by
//! the run's own deadline, budgets and its round limit, and by cancellation.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::policy::Subject;
use crate::{Class, Tool, ToolContext, ToolError, ToolSpec, Workspace};

/// The delegation tool's name.
pub const TASK: &str = "task";

/// The agent a call names when it names none: the run's own tools (without `task`).
pub const GENERAL: &str = "general";

/// What the model passes to `task`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskInput {
    /// A short (3-5 word) description of the task.
    pub description: String,
    /// The task for the subagent: everything it needs to know, since it sees none of this
    /// conversation, and what it should return.
    pub prompt: String,
    /// Which agent does the task (`general` when absent).
    #[serde(default)]
    pub subagent_type: Option<String>,
}

impl TaskInput {
    /// The agent the call names.
    pub fn agent(&self) -> &str {
        self.subagent_type.as_deref().unwrap_or(GENERAL)
    }
}

/// An agent as the model is told of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentBrief {
    pub name: String,
    pub description: String,
}

/// The `task` tool: its spec lists the agents a call may name.
pub(crate) struct Task {
    spec: ToolSpec,
}

impl Task {
    pub(crate) fn new(agents: &[AgentBrief]) -> Task {
        let mut schema = crate::schema_for::<TaskInput>();
        let mut names = vec![Value::from(GENERAL)];
        names.extend(agents.iter().map(|a| Value::from(a.name.as_str())));
        if let Some(field) = schema.pointer_mut("/properties/subagent_type")
            && let Some(field) = field.as_object_mut()
        {
            field.insert("enum".into(), Value::Array(names));
        }
        Task {
            spec: ToolSpec {
                name: TASK.to_owned(),
                description: description(agents),
                input_schema: schema,
                // Decided per call by the agent it names (`Toolbox::class_of`).
                class: Class::Mutating,
            },
        }
    }
}

/// What the model reads about `task`: when to use it, and the agents.
fn description(agents: &[AgentBrief]) -> String {
    let mut text = String::from(
        "Hand a self-contained piece of work to a subagent. It starts with a fresh context (it \
         sees none of this conversation), works with its own tools, and returns only its final \
         answer. Use it for work that would fill this context with reading the answer does not \
         need, such as reviewing several files or searching widely; for independent parts, call \
         it several times in one response (read-only agents run side by side). The prompt must \
         hold everything the subagent needs and say what to return.\nAgents (subagent_type):\n- \
         general: the same tools as you, without task",
    );
    for agent in agents {
        text.push_str(&format!("\n- {}: {}", agent.name, agent.description));
    }
    text
}

#[async_trait]
impl Tool for Task {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn subject(&self, input: &Value, _: &Workspace) -> Option<Subject> {
        let agent = match input.get("subagent_type") {
            Some(agent) => agent.as_str()?,
            None => GENERAL,
        };
        Some(Subject::Text(agent.to_owned()))
    }

    fn delegates(&self) -> bool {
        true
    }

    async fn run(&self, _: Value, _: &ToolContext) -> Result<String, ToolError> {
        // The pipeline hands `task` calls to the run's `Delegate`; a toolbox without one (or a
        // caller outside the pipeline) cannot run it.
        Err(ToolError::failed(
            "task cannot run here: delegation is not available in this run",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_rule_naming_task_offers_it() {
        assert!(crate::policy::NAMED_ONLY.contains(&TASK));
    }

    #[test]
    fn the_schema_names_every_agent_and_the_subject_is_the_agent() {
        let task = Task::new(&[AgentBrief {
            name: "reviewer".into(),
            description: "Reviews one file".into(),
        }]);
        let schema = &task.spec().input_schema;
        assert_eq!(
            schema["properties"]["subagent_type"]["enum"],
            serde_json::json!(["general", "reviewer"])
        );
        assert_eq!(
            schema["required"],
            serde_json::json!(["description", "prompt"])
        );
        assert!(
            task.spec()
                .description
                .contains("- reviewer: Reviews one file")
        );
        let (_dir, _root, ws) = crate::workspace::testing::workspace();
        let named =
            serde_json::json!({"description": "d", "prompt": "p", "subagent_type": "reviewer"});
        assert_eq!(
            task.subject(&named, &ws),
            Some(Subject::Text("reviewer".into()))
        );
        let general = serde_json::json!({"description": "d", "prompt": "p"});
        assert_eq!(
            task.subject(&general, &ws),
            Some(Subject::Text("general".into()))
        );
    }
}
