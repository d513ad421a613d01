//! `--check`: the user's command that decides when a run is done. It runs as the bash tool runs
//! a command — under the supervisor, in the run's sandbox, with the tools' scrubbed environment,
//! stdin closed, the tool timeout, each stream's head and tail kept and the whole spilled — but
//! never through the allowlist or the hooks: those judge the model's calls, and the check is the
//! user's own (it runs whether or not bash is allowed).

use super::ToolContext;
use super::builtin::bash::{command_spec, streams};
use crate::process::{self, Exit};

/// How a check ended: its exit code (none when it was stopped) and the text the model reads.
pub(crate) struct Checked {
    pub(crate) exit_code: Option<i32>,
    pub(crate) output: String,
}

/// Runs `command` with `bash -c` in the workspace root. The output holds no duration, so two
/// runs that failed the same way read the same (the loop guard compares them).
pub(crate) async fn run(command: &str, ctx: &ToolContext) -> Checked {
    let spec = command_spec(command, ctx, ctx.timeout);
    let done = match process::run(spec).await {
        Ok(done) => done,
        Err(e) => {
            return Checked {
                exit_code: None,
                output: format!("the check could not start: bash: {e}"),
            };
        }
    };
    let output = streams(&done.stdout, &done.stderr);
    match done.exit {
        Exit::Code(code) => Checked {
            exit_code: Some(code),
            output: format!("exit code: {code}\n{output}"),
        },
        Exit::TimedOut => Checked {
            exit_code: None,
            output: format!(
                "timed out after {:.1}s (the tool timeout); the check and every process it \
                 started were killed\n{output}",
                ctx.timeout.as_secs_f64()
            ),
        },
        Exit::Cancelled => Checked {
            exit_code: None,
            output: "cancelled; the check and every process it started were killed".to_owned(),
        },
    }
}
