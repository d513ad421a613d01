//! `bash`: runs a shell command in the workspace under the supervisor (see `process`): stdin
//! closed, its own process group, a scrubbed environment, a timeout that ends every process it
//! started, and output kept in bounded memory (head and tail, the whole of it spilled to a file).

use std::ffi::OsString;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::policy::{CommandLine, Subject};
use crate::process::{self, Captured, Exit, Limits};
use crate::{Class, Tool, ToolContext, ToolError, ToolSpec, Workspace, parse_args};

/// Bytes of each stream kept from the start and from the end; the rest is only in the spill
/// file. Both streams together stay under the default result cap.
const KEEP: usize = 6 * 1024;

/// How a command runs, for bash and for `--check`: `bash -c` in the workspace root, stdin
/// closed, each stream's head and tail kept and the whole spilled under the call's id. The
/// sandbox is the run's, which already follows --tool-network.
pub(crate) fn command_spec<'a>(
    command: &str,
    ctx: &'a ToolContext,
    timeout: Duration,
) -> process::Spec<'a> {
    let limits = |stream: &str| Limits {
        head: KEEP,
        tail: KEEP,
        spill: ctx.outputs.file(&ctx.call_id, stream),
    };
    process::Spec {
        argv: vec!["bash".into(), "-c".into(), OsString::from(command)],
        cwd: ctx.workspace.root(),
        env: &ctx.env,
        stdin: None,
        timeout,
        cancel: ctx.cancel.clone(),
        stdout: limits("stdout"),
        stderr: limits("stderr"),
        sandbox: &ctx.sandbox,
    }
}

pub(crate) struct Bash {
    spec: ToolSpec,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    command: String,
    /// Seconds before the command is killed (the run's limit caps it).
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    timeout: Option<f64>,
    /// What the command does, in a few words.
    #[serde(default)]
    #[allow(dead_code)]
    description: Option<String>,
}

impl Default for Bash {
    fn default() -> Self {
        Bash::new()
    }
}

impl Bash {
    pub(crate) fn new() -> Bash {
        Bash {
            spec: ToolSpec {
                name: "bash".into(),
                description: "Run a command with `bash -c` in the workspace root, stdin closed. \
                    Returns the exit code, stdout and stderr; long output keeps its start and end \
                    and names a file holding all of it."
                    .into(),
                input_schema: crate::schema_for::<Args>(),
                class: Class::Mutating,
            },
        }
    }
}

#[async_trait]
impl Tool for Bash {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn subject(&self, input: &Value, workspace: &Workspace) -> Option<Subject> {
        let command = input.get("command")?.as_str()?;
        // bash runs in the workspace root, so that is what redirection paths are relative to.
        Some(Subject::Command(CommandLine::new(command, |path| {
            workspace.shell_target(path)
        })))
    }

    async fn run(&self, input: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = parse_args(input)?;
        let limit = args
            .timeout
            .filter(|t| *t > 0.0)
            .and_then(|t| Duration::try_from_secs_f64(t).ok())
            .map_or(ctx.timeout, |t| t.min(ctx.timeout));
        let spec = command_spec(&args.command, ctx, limit);
        let done = process::run(spec)
            .await
            .map_err(|e| ToolError::failed(format!("cannot start bash: {e}")))?;
        let secs = done.duration.as_secs_f64();
        match done.exit {
            Exit::Code(code) => Ok(format!(
                "exit code: {code}\nduration: {secs:.2}s\n{}",
                streams(&done.stdout, &done.stderr)
            )),
            Exit::TimedOut => Err(ToolError::TimedOut(format!(
                "timed out after {:.1}s; the command and every process it started were killed\n{}",
                limit.as_secs_f64(),
                streams(&done.stdout, &done.stderr)
            ))),
            Exit::Cancelled => Err(ToolError::failed(format!(
                "cancelled after {secs:.2}s; the command and every process it started were killed"
            ))),
        }
    }
}

/// Both streams as the model reads them: each, or that it was empty.
pub(crate) fn streams(stdout: &Captured, stderr: &Captured) -> String {
    let show = |name: &str, c: &Captured| {
        if c.total == 0 {
            format!("{name}: (empty)\n")
        } else {
            let text = c.render();
            let nl = if text.ends_with('\n') { "" } else { "\n" };
            format!("{name}:\n{text}{nl}")
        }
    };
    format!("{}{}", show("stdout", stdout), show("stderr", stderr))
}
