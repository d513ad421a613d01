//! What every built-in tool shares, written once: a built-in declares its input as a type
//! (`BuiltinTool::Input`, serde + schemars), and [`Typed`] turns it into a [`Tool`] — the spec's
//! schema derived from that type, the input decoded once before the tool runs, the subject read
//! from the field the tool names, and file work run on the blocking pool with the path checks
//! every file tool makes.
//!
//! Command tools and MCP tools implement [`Tool`] directly: their schemas are the user's or the
//! server's, so their input stays a JSON value.

use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::policy::{CommandLine, Subject};
use crate::{
    Class, Gate, PathError, Tool, ToolContext, ToolError, ToolOutput, ToolSpec, Workspace,
};

/// One built-in tool, in terms of its typed input.
#[async_trait]
pub(crate) trait BuiltinTool: Send + Sync + 'static {
    /// The arguments: the spec's schema is derived from this type, so the two cannot drift.
    type Input: DeserializeOwned + schemars::JsonSchema + Send + 'static;
    const NAME: &'static str;
    const CLASS: Class;
    /// The input field allowlist patterns match.
    const SUBJECT: SubjectOf;

    /// What the model reads about the tool.
    fn description(&self) -> String;

    /// See `Tool::volatile_in`: the lines of a recorded result that `run` marked as varying.
    fn volatile_in(&self, content: &str) -> Vec<String> {
        let _ = content;
        Vec::new()
    }

    /// Runs the call and returns the text the model sees (with what varies in it, if anything).
    async fn run(&self, input: Self::Input, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;
}

/// Which field of a built-in's input is its subject, and what kind of subject it is.
#[derive(Debug, Clone, Copy)]
pub(crate) enum SubjectOf {
    /// `path`, as the workspace-relative path patterns match; `default` when it is absent.
    Path { default: Option<&'static str> },
    /// `command`, a shell command line.
    Command,
    /// `url`.
    Url,
    /// `query`, plain text.
    Query,
}

impl SubjectOf {
    /// The subject of `input`. Read from the JSON, not the decoded input: the subject is shown
    /// for every call, before the pipeline has checked its input (and a call the schema refuses
    /// still shows the path it named).
    fn of(self, input: &Value, workspace: &Workspace) -> Option<Subject> {
        let text = |field: &str| input.get(field)?.as_str();
        match self {
            SubjectOf::Path { default } => {
                let path = match input.get("path") {
                    Some(path) => path.as_str()?,
                    None => default?,
                };
                workspace.subject(path)
            }
            // bash runs in the workspace root, so that is what redirection paths are relative to.
            SubjectOf::Command => Some(Subject::Command(CommandLine::new(
                text("command")?,
                |path| workspace.shell_target(path),
            ))),
            SubjectOf::Url => Some(Subject::Url(text("url")?.to_owned())),
            SubjectOf::Query => Some(Subject::Text(text("query")?.to_owned())),
        }
    }
}

/// A built-in as a [`Tool`]: its spec, made once from the tool's declarations.
pub(crate) struct Typed<T> {
    spec: ToolSpec,
    tool: T,
}

impl<T: BuiltinTool> Typed<T> {
    pub(crate) fn new(tool: T) -> Typed<T> {
        Typed {
            spec: ToolSpec {
                name: T::NAME.to_owned(),
                description: tool.description(),
                input_schema: crate::schema_for::<T::Input>(),
                class: T::CLASS,
            },
            tool,
        }
    }
}

#[async_trait]
impl<T: BuiltinTool> Tool for Typed<T> {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn subject(&self, input: &Value, workspace: &Workspace) -> Option<Subject> {
        T::SUBJECT.of(input, workspace)
    }

    fn volatile_in(&self, content: &str) -> Vec<String> {
        self.tool.volatile_in(content)
    }

    async fn run(&self, input: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        self.run_output(input, ctx).await.map(|output| output.text)
    }

    async fn run_output(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input = decode::<T::Input>(input)?;
        self.tool.run(input, ctx).await
    }
}

/// Decodes a built-in's typed input from input the schema already accepted. The schema and the
/// type agree on nearly everything; what is left (a whole number written `1.0`, say) is refused
/// here, as a failure the model reads.
fn decode<T: DeserializeOwned>(input: Value) -> Result<T, ToolError> {
    serde_json::from_value(input).map_err(|e| ToolError::failed(format!("invalid arguments: {e}")))
}

/// What a file tool's work may use, owned so it can move to the blocking pool.
pub(crate) struct Files {
    pub(crate) workspace: Arc<Workspace>,
    /// The allowlist as it applies to this call (see `ToolContext::gate`).
    pub(crate) gate: Gate,
    pub(crate) cancel: CancellationToken,
}

impl Files {
    /// Runs `tool`'s file work on the blocking pool: on the single runtime thread it would stall
    /// the provider stream and every other call.
    pub(crate) async fn run<T: Send + 'static>(
        tool: &str,
        ctx: &ToolContext,
        work: impl FnOnce(&Files) -> Result<T, ToolError> + Send + 'static,
    ) -> Result<T, ToolError> {
        let files = Files {
            workspace: Arc::clone(&ctx.workspace),
            gate: ctx.gate.clone(),
            cancel: ctx.cancel.clone(),
        };
        tokio::task::spawn_blocking(move || work(&files))
            .await
            .map_err(|e| ToolError::failed(format!("{tool} failed: {e}")))?
    }

    /// The path `given` leads to inside the workspace; a path that does not exist is refused
    /// with the closest names beside it.
    pub(crate) fn resolve(&self, given: &str) -> Result<PathBuf, ToolError> {
        self.workspace
            .resolve(given)
            .map_err(|e| path_error(e, given, &self.workspace, &self.gate))
    }

    /// The regular file `given` names, opened, with its real path (see `Workspace::open_file`).
    pub(crate) fn open_file(&self, given: &str) -> Result<(File, PathBuf), ToolError> {
        self.workspace
            .open_file(given)
            .map_err(|e| path_error(e, given, &self.workspace, &self.gate))
    }
}

/// A path error as the model reads it. A path that does not exist comes with where its name is
/// in the workspace, if anywhere, else the closest names beside it (up to three, none that a
/// deny rule hides from this tool), so a misspelt or guessed path is put right in one step.
fn path_error(e: PathError, given: &str, workspace: &Workspace, gate: &Gate) -> ToolError {
    if !matches!(e, PathError::NotFound(_)) {
        return e.into();
    }
    let keep = |rel: &str| gate.hides(rel).is_none();
    let elsewhere = workspace.named_elsewhere(given, 3, &keep);
    if !elsewhere.is_empty() {
        let paths: Vec<String> = elsewhere.iter().map(|p| format!("{p:?}")).collect();
        let what = if elsewhere.len() == 1 {
            "it is at"
        } else {
            "that name is at"
        };
        return ToolError::failed(format!("{e}; {what} {}", paths.join(", ")));
    }
    match workspace.similar(given, 3, &keep) {
        Some((dir, names)) if !names.is_empty() => {
            let dir = if dir == "." {
                "the workspace root".to_owned()
            } else {
                format!("{dir}/")
            };
            let names: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
            ToolError::failed(format!(
                "{e}; the closest names in {dir}: {}",
                names.join(", ")
            ))
        }
        _ => e.into(),
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::json;

    use super::*;
    use crate::workspace::testing::{context, workspace};

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Args {
        /// How many.
        count: usize,
    }

    struct Echo;

    #[async_trait]
    impl BuiltinTool for Echo {
        type Input = Args;
        const NAME: &'static str = "echo";
        const CLASS: Class = Class::Safe;
        const SUBJECT: SubjectOf = SubjectOf::Query;

        fn description(&self) -> String {
            "Echoes.".to_owned()
        }

        async fn run(&self, input: Args, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput {
                text: format!("count {}", input.count),
                volatile: vec![format!("count {}", input.count)],
                exit_code: None,
                media: Vec::new(),
            })
        }
    }

    #[test]
    fn the_spec_comes_from_the_declarations_and_the_input_type() {
        let tool = Typed::new(Echo);
        let spec = tool.spec();
        assert_eq!(spec.name, "echo");
        assert_eq!(spec.description, "Echoes.");
        assert_eq!(spec.class, Class::Safe);
        assert_eq!(spec.input_schema, crate::schema_for::<Args>());
        assert_eq!(spec.input_schema["required"], json!(["count"]));
    }

    #[tokio::test]
    async fn the_input_is_decoded_before_the_tool_runs_and_a_misfit_is_a_failure() {
        let (_dir, _root, ws) = workspace();
        let tool = Typed::new(Echo);
        let ran = tool.run(json!({"count": 3}), &context(&ws)).await;
        assert_eq!(ran.unwrap(), "count 3");
        // What the tool says of its text reaches the pipeline.
        let ran = tool.run_output(json!({"count": 3}), &context(&ws)).await;
        assert_eq!(ran.unwrap().volatile, ["count 3"]);
        // Valid for the schema ("integer"), not for usize.
        let ran = tool.run(json!({"count": 3.0}), &context(&ws)).await;
        let Err(ToolError::Failed(why)) = ran else {
            panic!("{ran:?}")
        };
        assert!(why.starts_with("invalid arguments: invalid type"), "{why}");
    }

    #[test]
    fn the_subject_is_the_named_field_whatever_else_the_input_holds() {
        let (_dir, _root, ws) = workspace();
        let path = SubjectOf::Path { default: Some(".") };
        assert_eq!(path.of(&json!({}), &ws), Some(Subject::Path(".".into())));
        assert_eq!(path.of(&json!({"path": 1}), &ws), None);
        let no_default = SubjectOf::Path { default: None };
        assert_eq!(no_default.of(&json!({}), &ws), None);
        assert_eq!(
            no_default.of(&json!({"path": "./a", "junk": true}), &ws),
            Some(Subject::Path("a".into()))
        );
        let url = SubjectOf::Url.of(&json!({"url": "https://x.test"}), &ws);
        assert_eq!(url, Some(Subject::Url("https://x.test".into())));
        assert_eq!(SubjectOf::Query.of(&json!({"query": 2}), &ws), None);
        let command = SubjectOf::Command.of(&json!({"command": "ls"}), &ws);
        assert_eq!(command.as_ref().map(Subject::as_str), Some("ls"));
    }
}
