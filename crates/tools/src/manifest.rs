//! Command tools: the user's own tools, declared in a manifest (`--tools-file`, TOML or JSON)
//! and run like `bash` is — under the supervisor, in the workspace, with the scrubbed
//! environment, a timeout that ends the whole process tree, and bounded output — so they get the
//! same pipeline, allowlist and hygiene as the built-ins.
//!
//! ```toml
//! [[tool]]
//! name = "git_log"
//! description = "Recent commits touching a path."
//! command = 'python3 "$ROUNDS_MANIFEST_DIR/git_log.py"'   # a string runs with `sh -c`; or argv
//! class = "safe"                              # default "mutating"
//! timeout = 20                                # seconds, at most --tool-timeout
//! subject = "path"                            # input field allowlist patterns match
//! network = true                              # may use the network (default false)
//! input_schema = { type = "object", properties = { path = { type = "string" } } }
//! ```
//!
//! The command runs in the workspace root and gets the call's input as JSON on stdin, and the
//! manifest's directory as `ROUNDS_MANIFEST_DIR`. Its stdout is the result, unless stdout is
//! a JSON object `{"content": …, "is_error": …}`; a non-zero exit is an error result carrying
//! stderr.
//!
//! The command runs in the run's OS sandbox (`process::sandbox`); it may use the network only
//! if its entry says `network = true`, whatever `--tool-network` says (that flag is for bash
//! and hooks).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::policy::Subject;
use super::{Class, Tool, ToolContext, ToolError, ToolOutput, ToolSpec, Workspace};
use crate::process::{self, Captured, Exit, Limits};

/// Bytes of each output stream kept from its start and from its end.
const KEEP: usize = 8 * 1024;
/// The largest stdout read whole to see whether it is a structured answer. Output that was cut
/// is parsed from its spill file, so a long structured error is still an error.
const MAX_STRUCTURED: u64 = 16 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("cannot read tools file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("tools file {}: {message}", path.display())]
    Invalid { path: PathBuf, message: String },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    #[serde(default, alias = "tools")]
    tool: Vec<Entry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: String,
    description: String,
    #[serde(default = "object_schema")]
    input_schema: Value,
    command: CommandSpec,
    #[serde(default)]
    class: Option<ClassName>,
    #[serde(default)]
    timeout: Option<f64>,
    #[serde(default)]
    subject: Option<String>,
    #[serde(default)]
    network: bool,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum CommandSpec {
    Shell(String),
    Argv(Vec<String>),
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ClassName {
    Safe,
    Mutating,
}

fn object_schema() -> Value {
    serde_json::json!({"type": "object"})
}

/// Loads every manifest, in order. Names must be unique across them; clashes with built-in
/// tools are caught when the tools are registered.
pub fn load(files: &[PathBuf]) -> Result<Vec<Arc<dyn Tool>>, ManifestError> {
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    let mut seen = std::collections::HashMap::new();
    for path in files {
        for tool in load_one(path)? {
            if let Some(first) = seen.insert(tool.spec.name.clone(), path.clone()) {
                return Err(invalid(
                    path,
                    format!(
                        "tool {:?} is also defined in {}",
                        tool.spec.name,
                        first.display()
                    ),
                ));
            }
            tools.push(Arc::new(tool));
        }
    }
    Ok(tools)
}

fn invalid(path: &Path, message: String) -> ManifestError {
    ManifestError::Invalid {
        path: path.to_owned(),
        message,
    }
}

fn load_one(path: &Path) -> Result<Vec<CommandTool>, ManifestError> {
    let text = std::fs::read_to_string(path).map_err(|source| ManifestError::Read {
        path: path.to_owned(),
        source,
    })?;
    let is_json =
        path.extension().is_some_and(|e| e == "json") || text.trim_start().starts_with('{');
    let manifest: Manifest = if is_json {
        serde_json::from_str(&text).map_err(|e| invalid(path, e.to_string()))?
    } else {
        toml::from_str(&text).map_err(|e| invalid(path, e.to_string()))?
    };
    if manifest.tool.is_empty() {
        return Err(invalid(
            path,
            "no tools defined (expected [[tool]] entries)".into(),
        ));
    }
    manifest
        .tool
        .into_iter()
        .map(|entry| CommandTool::new(entry, path))
        .collect()
}

/// A tool backed by a command.
pub(crate) struct CommandTool {
    spec: ToolSpec,
    argv: Vec<OsString>,
    /// The manifest's directory, given to the command as `ROUNDS_MANIFEST_DIR` so its scripts
    /// can live beside the manifest.
    dir: PathBuf,
    timeout: Option<Duration>,
    subject: Option<String>,
    origin: String,
    /// `network = true`: the sandbox lets it use the network.
    network: bool,
}

impl CommandTool {
    fn new(entry: Entry, path: &Path) -> Result<CommandTool, ManifestError> {
        let fail = |m: String| invalid(path, format!("tool {:?}: {m}", entry.name));
        let valid_name = !entry.name.is_empty()
            && entry.name.len() <= 64
            && entry
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid_name {
            return Err(fail("names are 1-64 characters of A-Z a-z 0-9 _ -".into()));
        }
        if entry.input_schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(fail(
                "input_schema must be a JSON Schema with \"type\": \"object\"".into(),
            ));
        }
        let argv: Vec<OsString> = match &entry.command {
            CommandSpec::Shell(line) => vec!["sh".into(), "-c".into(), line.into()],
            CommandSpec::Argv(argv) => argv.iter().map(OsString::from).collect(),
        };
        if argv.is_empty() || argv[0].is_empty() {
            return Err(fail("command is empty".into()));
        }
        let timeout = match entry.timeout {
            None => None,
            // Up to about 31 years, like the time flags: the end of it must be a valid instant.
            Some(t) if t > 0.0 && t <= 1e9 => Some(Duration::from_secs_f64(t)),
            Some(t) => {
                return Err(fail(format!(
                    "timeout must be a positive number of seconds up to 1000000000, not {t:?}"
                )));
            }
        };
        let class = match entry.class {
            Some(ClassName::Safe) => Class::Safe,
            // A command can do anything: unless its author says otherwise, it runs alone.
            Some(ClassName::Mutating) | None => Class::Mutating,
        };
        Ok(CommandTool {
            spec: ToolSpec {
                name: entry.name,
                description: entry.description,
                input_schema: entry.input_schema,
                class,
            },
            argv,
            dir: path.parent().map(Path::to_owned).unwrap_or_default(),
            timeout,
            subject: entry.subject,
            origin: format!("manifest {}", path.display()),
            network: entry.network,
        })
    }
}

#[async_trait]
impl Tool for CommandTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn origin(&self) -> String {
        self.origin.clone()
    }

    /// A string that is not a URL is taken for a path. The command opens it as written, from
    /// the workspace root, so it is judged also where the kernel would lead it (through
    /// symlinks, `..` after a symlink included); one that leaves the workspace, lexically or
    /// that way, matches no rule with a pattern (never its text: there `*` matches `/` and `..`).
    fn subject(&self, input: &Value, workspace: &Workspace) -> Option<Subject> {
        let value = input.get(self.subject.as_deref()?)?;
        let text = value
            .as_str()
            .map_or_else(|| value.to_string(), str::to_owned);
        if !value.is_string() || text.contains("://") {
            return Some(Subject::Text(text));
        }
        let real = workspace.locate(&text);
        Some(match workspace.subject(&text) {
            Some(Subject::Path(path)) if real.as_deref() == Some(path.as_str()) => {
                Subject::Path(path)
            }
            Some(Subject::Path(path)) => Subject::Located { path, real },
            _ => Subject::Located {
                path: text,
                real: None,
            },
        })
    }

    /// An answer comes only from a command that exited 0: said as data too.
    async fn run_output(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let text = self.run(input, ctx).await?;
        Ok(ToolOutput {
            exit_code: Some(0),
            ..ToolOutput::from(text)
        })
    }

    async fn run(&self, input: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let limit = self.timeout.map_or(ctx.timeout, |t| t.min(ctx.timeout));
        let mut env = ctx.env.to_vec();
        env.push((
            "ROUNDS_MANIFEST_DIR".into(),
            self.dir.clone().into_os_string(),
        ));
        let sandbox = ctx.sandbox.with_network(self.network);
        let spec = process::Spec {
            argv: self.argv.clone(),
            cwd: ctx.workspace.root(),
            env: &env,
            stdin: Some(input.to_string().into_bytes()),
            timeout: limit,
            cancel: ctx.cancel.clone(),
            stdout: Limits {
                head: KEEP,
                tail: KEEP,
                spill: ctx.outputs.file(&ctx.call_id, "stdout"),
            },
            stderr: Limits {
                head: KEEP,
                tail: KEEP,
                spill: ctx.outputs.file(&ctx.call_id, "stderr"),
            },
            sandbox: &sandbox,
        };
        let name = &self.spec.name;
        let done = process::run(spec)
            .await
            .map_err(|e| ToolError::failed(format!("cannot start {name}: {e}")))?;
        match done.exit {
            Exit::Code(0) => answer(name, &done.stdout, MAX_STRUCTURED).await,
            Exit::Code(code) => Err(ToolError::Exited {
                code,
                message: format!(
                    "{name} exited with code {code}\nstderr:\n{}\nstdout:\n{}",
                    done.stderr.render().trim_end(),
                    done.stdout.render().trim_end()
                ),
            }),
            Exit::TimedOut => Err(ToolError::TimedOut(format!(
                "{name} timed out after {:.1}s; it and every process it started were killed",
                limit.as_secs_f64()
            ))),
            Exit::Cancelled => Err(ToolError::failed(format!("{name} was cancelled"))),
        }
    }
}

/// What a command that exited 0 answered: a structured answer when its whole stdout is one,
/// else its stdout as text. Output too long to keep whole is parsed from the spill file (up to
/// `max` bytes), never from the cut text: a cut structured error would not parse and would
/// come back as a success. Output that starts like a JSON object but cannot be read whole is
/// an error, for the same reason.
async fn answer(name: &str, stdout: &Captured, max: u64) -> Result<String, ToolError> {
    let text = stdout.render();
    if !stdout.overflowed {
        return structured(&text).unwrap_or(Ok(text));
    }
    if !stdout.head.trim_ascii_start().starts_with(b"{") {
        return Ok(text);
    }
    let unreadable = |why: String| {
        Err(ToolError::Failed(format!(
            "{name} printed {} bytes that start like a structured answer, but {why}, so it \
             cannot be told whether they report an error",
            stdout.total
        )))
    };
    let Some(path) = &stdout.spilled else {
        let why = stdout
            .spill_error
            .as_deref()
            .unwrap_or("they were not saved");
        return unreadable(format!("saving them failed ({why})"));
    };
    if stdout.total > max {
        let max = if max.is_multiple_of(1 << 20) {
            format!("{} MiB", max >> 20)
        } else {
            format!("{max} bytes")
        };
        return unreadable(format!(
            "that is more than the {max} read whole; they are in {}",
            path.display()
        ));
    }
    match tokio::fs::read(path).await {
        Ok(whole) => structured(&String::from_utf8_lossy(&whole)).unwrap_or(Ok(text)),
        Err(e) => unreadable(format!("{} cannot be read back ({e})", path.display())),
    }
}

/// A `{"content": …, "is_error": …}` answer, when stdout is one.
fn structured(stdout: &str) -> Option<Result<String, ToolError>> {
    let Value::Object(map) = serde_json::from_str::<Value>(stdout.trim()).ok()? else {
        return None;
    };
    let content = map.get("content")?;
    let text = content
        .as_str()
        .map_or_else(|| content.to_string(), str::to_owned);
    let is_error = map
        .get("is_error")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Some(if is_error {
        Err(ToolError::Failed(text))
    } else {
        Ok(text)
    })
}

#[cfg(test)]
mod tests;
