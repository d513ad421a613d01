//! `bash`: runs a shell command in the workspace under the supervisor (see `process`): stdin
//! closed, its own process group, a scrubbed environment, a timeout that ends every process it
//! started, and output kept in bounded memory (head and tail, the whole of it spilled to a file).

use std::ffi::OsString;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::typed::{BuiltinTool, SubjectOf};
use crate::process::{self, Captured, Exit, Limits};
use crate::{Class, ToolContext, ToolError, ToolOutput};

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

pub(crate) struct Bash;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
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

#[async_trait]
impl BuiltinTool for Bash {
    type Input = Args;
    const NAME: &'static str = "bash";
    const CLASS: Class = Class::Mutating;
    const SUBJECT: SubjectOf = SubjectOf::Command;

    fn description(&self) -> String {
        "Run a command with `bash -c` in the workspace root, stdin closed. Returns the exit \
         code, stdout and stderr; long output keeps its start and end and names a file holding \
         all of it."
            .into()
    }

    /// The duration line, where `exited` puts it.
    fn volatile_in(&self, content: &str) -> Vec<String> {
        let mut lines = content.lines();
        match (lines.next(), lines.next()) {
            (Some(code), Some(duration))
                if code.starts_with("exit code: ") && duration.starts_with("duration: ") =>
            {
                vec![duration.to_owned()]
            }
            _ => Vec::new(),
        }
    }

    async fn run(&self, args: Args, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
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
            // The time differs from run to run: said as data, so the loop guard need not read
            // the text to leave it out.
            Exit::Code(code) => Ok(exited(code, secs, &streams(&done.stdout, &done.stderr))),
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

/// What the model reads of a command that exited, with its line that differs between runs of
/// the same command with the same outcome (the time it took).
fn exited(code: i32, secs: f64, streams: &str) -> ToolOutput {
    let duration = format!("duration: {secs:.2}s");
    ToolOutput {
        media: Vec::new(),
        text: format!("exit code: {code}\n{duration}\n{streams}"),
        volatile: vec![duration],
        exit_code: Some(code),
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

#[cfg(test)]
mod tests {
    use super::*;

    // The command itself cannot run here (the supervisor re-executes the test binary); the
    // integration suites run it. This pins the text and the line the guard leaves out.
    #[test]
    fn the_volatile_line_is_the_duration_line_the_model_reads() {
        for (code, secs, streams, want) in [
            (
                0,
                0.004,
                "stdout: (empty)\nstderr: (empty)\n",
                "exit code: 0\nduration: 0.00s\nstdout: (empty)\nstderr: (empty)\n",
            ),
            (
                3,
                12.345,
                "stdout:\nduration: 1.00s\nstderr: (empty)\n",
                "exit code: 3\nduration: 12.35s\nstdout:\nduration: 1.00s\nstderr: (empty)\n",
            ),
            (-1, 0.0, "", "exit code: -1\nduration: 0.00s\n"),
        ] {
            let ToolOutput {
                text,
                volatile,
                exit_code,
                ..
            } = exited(code, secs, streams);
            assert_eq!(exit_code, Some(code));
            assert_eq!(text, want);
            assert_eq!(volatile, [text.lines().nth(1).unwrap()]);
            // Read back from a transcript, the same line is found again.
            assert_eq!(Bash.volatile_in(&text), volatile);
        }
    }

    #[test]
    fn only_an_exited_command_has_a_volatile_line() {
        for content in [
            "timed out after 1.0s; the command and every process it started were killed\n",
            "cancelled after 0.50s; the command and every process it started were killed",
            "exit code: 0\n",
            "the pre-tool hook vetoed the call\nduration: 1s\n",
            "",
        ] {
            assert_eq!(Bash.volatile_in(content), Vec::<String>::new(), "{content}");
        }
    }
}
