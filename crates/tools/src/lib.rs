//! Tools the model can call: the `Tool` trait, the registry of every tool this run knows, and the
//! per-call pipeline and allowlist policy that sit in front of execution.
//!
//! A tool is a trait object (not a generic) because tools from manifests and MCP servers only exist
//! at run time. Each tool owns its JSON Schema; the registry compiles every schema once, so a call
//! is validated before the tool ever sees its input.
#![forbid(unsafe_code)]
#![deny(clippy::print_stdout)]

use rounds_base::{attachment, conversation, env, files, net, outcome, redact};
use rounds_process as process;

use std::collections::HashMap;
use std::collections::HashSet;
use std::ffi::OsString;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub mod assemble;
pub mod builtin;
pub(crate) mod check;
pub mod delegate;
pub mod hooks;
pub mod manifest;
pub mod mcp;
pub mod pipeline;
pub mod policy;
pub mod presets;
pub(crate) mod shell;
pub mod text_edits;
pub(crate) mod web;
pub mod workspace;

pub use crate::conversation::{Class, ToolSpec};
pub(crate) use crate::process::Sandbox;
use crate::process::capture::SpillFile;
use crate::redact::{Redactor, Seen};
pub(crate) use policy::Gate;
pub use workspace::{PathError, Workspace};

/// Everything a running tool may use. The workspace root comes from the user, never the model.
#[derive(Clone)]
pub struct ToolContext {
    pub(crate) workspace: Arc<Workspace>,
    /// Cancelled on timeout, deadline or signal; long-running tools must stop promptly.
    pub cancel: CancellationToken,
    /// The call's id, for naming files that belong to it.
    pub(crate) call_id: String,
    /// The most time the call may take (`--tool-timeout`); tools that start processes enforce it
    /// themselves so they can clean up and report partial output.
    pub(crate) timeout: Duration,
    /// The environment of processes the tool starts: scrubbed, never a provider key.
    pub env: Arc<[(OsString, OsString)]>,
    /// Where whole outputs that were cut are saved.
    pub(crate) outputs: Arc<Outputs>,
    /// The OS sandbox of processes the tool starts.
    pub sandbox: Arc<Sandbox>,
    /// The allowlist as it applies to this call, for what the tool meets while running: a
    /// redirect hop `web_fetch` must not follow, files a grep or glob walk must leave out.
    pub(crate) gate: Gate,
    /// What images the model takes (its provider's limits), when it takes any: `read_file`
    /// returns an image to it instead of saying the file is binary.
    pub(crate) images: Option<attachment::Limits>,
}

impl ToolContext {
    /// A context with defaults (30 s, empty environment, no saved outputs, no
    /// sandbox, and an open gate: no allowlist rule applies while the tool runs), for running a
    /// tool outside the pipeline. The pipeline's own contexts carry the run's rules.
    pub fn new(workspace: Arc<Workspace>, cancel: CancellationToken) -> ToolContext {
        ToolContext {
            workspace,
            cancel,
            call_id: "call".into(),
            timeout: Duration::from_secs(30),
            env: Arc::from(Vec::new()),
            outputs: Arc::new(Outputs::none()),
            sandbox: Arc::new(Sandbox::off()),
            gate: Gate::open(),
            images: None,
        }
    }
}

/// The directory where whole outputs are saved when a result had to be cut: beside the
/// transcript (`RUN.outputs/`), or in the temp directory without one (removed when the run
/// ends). Each file holds at most `max_spill` bytes.
#[derive(Debug)]
pub struct Outputs {
    /// Made before any tool ran and written only through this handle (see `files`); `None`
    /// keeps no whole outputs (a tool run outside a run, in tests).
    dir: Option<crate::files::Dir>,
    max_spill: u64,
    /// File stems handed out so far: ids come from the model, may repeat (a local server that
    /// numbers its calls from 0 every response) or differ only in characters a file name cannot
    /// hold, and one call's file must never overwrite another's.
    taken: Mutex<HashSet<String>>,
    /// The run's secrets, taken out of every output saved here (and of what is kept of it).
    redact: Redactor,
    /// By call id: the names redacted from the outputs handed out for it, for its result.
    seen: Mutex<HashMap<String, Seen>>,
}

/// `--max-spill-bytes`' default: enough for any output a person would read, and a bound on
/// what a runaway command (`yes`) costs the disk.
pub const DEFAULT_MAX_SPILL: u64 = 64 * 1024 * 1024;

impl Outputs {
    pub fn new(dir: crate::files::Dir, max_spill: u64) -> Outputs {
        Outputs {
            dir: Some(dir),
            max_spill,
            taken: Mutex::new(HashSet::new()),
            redact: Redactor::default(),
            seen: Mutex::new(HashMap::new()),
        }
    }

    /// No directory: cut results keep only their head and tail.
    pub(crate) fn none() -> Outputs {
        Outputs {
            dir: None,
            max_spill: 0,
            taken: Mutex::new(HashSet::new()),
            redact: Redactor::default(),
            seen: Mutex::new(HashMap::new()),
        }
    }

    /// The same directory, with `redact` applied to every output that goes through its files.
    pub(crate) fn redacting(self, redact: Redactor) -> Outputs {
        Outputs { redact, ..self }
    }

    /// Removes what was saved, through the handle (see `files::Dir::clear`).
    pub fn clear(&self) {
        if let Some(dir) = &self.dir {
            dir.clear();
        }
    }

    /// The directory's path.
    pub fn dir(&self) -> Option<&std::path::Path> {
        self.dir.as_ref().map(crate::files::Dir::path)
    }

    /// A new file for one call's output of one kind (`stdout`, `txt`, …): the id reduced to
    /// characters safe in a file name, made unique within the run.
    pub(crate) fn file(&self, call_id: &str, kind: &str) -> Option<SpillFile> {
        let dir = self.dir.as_ref()?;
        let safe: String = call_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .take(100)
            .collect();
        let mut taken = self.taken.lock().unwrap_or_else(|e| e.into_inner());
        let mut name = format!("{safe}.{kind}");
        let mut n = 1;
        while !taken.insert(name.clone()) {
            n += 1;
            name = format!("{safe}.{n}.{kind}");
        }
        drop(taken);
        let redact = if self.redact.is_empty() {
            Redactor::default()
        } else {
            let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            self.redact
                .noting(seen.entry(call_id.to_owned()).or_default())
        };
        Some(SpillFile {
            dir: dir.clone(),
            name,
            max: self.max_spill,
            redact,
        })
    }

    /// Keeps an image a result carries as `attachments/SHA256.EXT`, as `--attach` keeps its files
    /// (nothing without a directory).
    pub(crate) fn keep(&self, media: &attachment::Attachment) -> std::io::Result<()> {
        let Some(dir) = &self.dir else { return Ok(()) };
        let dir = dir.subdir("attachments".as_ref())?;
        dir.target(media.kept_name())?.write(&media.decoded())
    }

    /// The names redacted from the outputs of call `call_id` so far, sorted; forgets the call.
    pub(crate) fn redacted(&self, call_id: &str) -> Vec<String> {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.remove(call_id).map(|s| s.take()).unwrap_or_default()
    }
}

/// A failure the model should read: becomes an error tool_result, never ends the run.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The tool ran (or tried to) and failed; the message says why, for the model.
    #[error("{0}")]
    Failed(String),
    /// The tool enforced its own time limit (and cleaned up); the message may carry partial
    /// output.
    #[error("{0}")]
    TimedOut(String),
    /// The process the tool ran exited with `code`, which is a failure of the call (a command
    /// tool's non-zero exit); the message says so, for the model.
    #[error("{message}")]
    Exited { code: i32, message: String },
}

impl ToolError {
    pub(crate) fn failed(msg: impl Into<String>) -> ToolError {
        ToolError::Failed(msg.into())
    }
}

/// One tool. Implementations validate nothing themselves: the pipeline has already checked the
/// input against `spec().input_schema`. Built-in tools implement `builtin::typed::BuiltinTool`
/// (a typed input, decoded once) and reach this trait through `builtin::typed::Typed`; command
/// and MCP tools implement it directly, their input a JSON value like their schema.
#[async_trait]
pub trait Tool: Send + Sync {
    fn spec(&self) -> &ToolSpec;

    /// The text allowlist patterns match against (a workspace-relative path, a command, a URL),
    /// or `None` when the tool has no subject.
    fn subject(&self, input: &Value, workspace: &Workspace) -> Option<policy::Subject> {
        let _ = (input, workspace);
        None
    }

    /// Where the tool comes from, for `rounds tools`: `built-in`, `manifest FILE`, `mcp NAME`.
    fn origin(&self) -> String {
        "built-in".to_owned()
    }

    /// The lines of `content`, a result of this tool read back from a transcript, that the tool
    /// marked as varying when it returned it (`ToolOutput::volatile`): a transcript keeps what
    /// the model read, not the marks.
    fn volatile_in(&self, content: &str) -> Vec<String> {
        let _ = content;
        Vec::new()
    }

    /// Whether calls to the tool are handed to the run's [`delegate::Delegate`] (`task`) instead
    /// of `run`.
    fn delegates(&self) -> bool {
        false
    }

    /// Runs the call and returns the text the model sees.
    async fn run(&self, input: Value, ctx: &ToolContext) -> Result<String, ToolError>;

    /// Runs the call for the pipeline: the text, and what the tool knows about it as data
    /// (see [`ToolOutput`]). A tool that knows nothing more returns what `run` does.
    async fn run_output(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.run(input, ctx).await.map(ToolOutput::from)
    }
}

/// What a call returned: the text the model reads, and the lines of it that differ between two
/// runs of the same call with the same outcome (`bash`'s `duration:` line), so the loop guard
/// can leave them out without reading the text (they become `ToolResult::volatile`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub(crate) text: String,
    pub(crate) volatile: Vec<String>,
    /// The exit code of the process the call ran, if it ran one (`ToolResult::exit_code`).
    pub(crate) exit_code: Option<i32>,
    /// Images for a model that takes them (`ToolResult::media`).
    pub(crate) media: Vec<crate::attachment::Attachment>,
}

impl From<String> for ToolOutput {
    fn from(text: String) -> ToolOutput {
        ToolOutput {
            text,
            volatile: Vec::new(),
            exit_code: None,
            media: Vec::new(),
        }
    }
}

/// The input schema of a tool, derived from its arguments struct so the two cannot drift: doc
/// comments are the descriptions, serde's attributes decide what is required and whether
/// unknown fields are refused, `#[schemars(range/length)]` bound values. It is trimmed to what a
/// model reads: no `$schema`, `title` or `format`, and an optional field is its own type rather
/// than "that type or null" (every request carries these schemas, so each word costs tokens).
pub(crate) fn schema_for<T: schemars::JsonSchema>() -> Value {
    let mut schema = Value::from(schemars::SchemaGenerator::default().into_root_schema_for::<T>());
    if let Value::Object(root) = &mut schema {
        root.remove("$schema");
        root.remove("title");
    }
    trim_schema(&mut schema);
    schema
}

fn trim_schema(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    map.remove("format");
    map.remove("default");
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            map.insert("type".into(), only);
        }
    }
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        properties.values_mut().for_each(trim_schema);
    }
}

/// A registered tool with its compiled schema.
pub(crate) struct Entry {
    pub(crate) tool: Arc<dyn Tool>,
    /// Compiled on first use: compiling every schema at startup costs more memory and time
    /// than most runs' calls ever need (see docs/benchmarks.md).
    validator: OnceLock<Result<jsonschema::Validator, SchemaError>>,
}

impl Entry {
    fn new(tool: Arc<dyn Tool>) -> Entry {
        Entry {
            tool,
            validator: OnceLock::new(),
        }
    }

    /// The tool's compiled input schema, or why it does not compile.
    pub(crate) fn validator(&self) -> Result<&jsonschema::Validator, SchemaError> {
        let compiled = self.validator.get_or_init(|| {
            jsonschema::validator_for(&self.tool.spec().input_schema).map_err(|e| SchemaError {
                name: self.tool.spec().name.clone(),
                source: Arc::new(e),
            })
        });
        compiled.as_ref().map_err(SchemaError::clone)
    }
}

/// Every tool this run knows, in registration order.
#[derive(Default)]
pub struct Registry {
    entries: Vec<Entry>,
    by_name: HashMap<String, usize>,
}

/// A tool whose schema does not compile is a bug in the tool, reported at startup.
#[derive(Debug, Clone, thiserror::Error)]
#[error("tool {name}: invalid input schema: {source}")]
pub struct SchemaError {
    name: String,
    /// Shared: the entry keeps it for every later call.
    #[source]
    source: Arc<jsonschema::ValidationError<'static>>,
}

impl Registry {
    /// Adds a tool; a later tool with the same name replaces the earlier one. The schema is
    /// compiled when the tool is first called (`Entry::validator`); use `register_checked` for
    /// tools whose schema comes from outside rounds.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        let name = tool.spec().name.clone();
        let entry = Entry::new(tool);
        match self.by_name.get(&name) {
            Some(&i) => {
                tracing::warn!("tool {name} registered twice; the later one wins");
                self.entries[i] = entry;
            }
            None => {
                self.by_name.insert(name, self.entries.len());
                self.entries.push(entry);
            }
        }
    }

    /// Adds a tool after checking that its schema compiles: for schemas from manifests and
    /// servers, where a mistake should be reported at startup, not at the first call.
    pub(crate) fn register_checked(&mut self, tool: Arc<dyn Tool>) -> Result<(), SchemaError> {
        Entry::new(tool.clone()).validator()?;
        self.register(tool);
        Ok(())
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Entry> {
        self.by_name.get(name).map(|&i| &self.entries[i])
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.tool.spec().name.as_str())
    }

    pub fn tools(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.entries.iter().map(|e| &e.tool)
    }

    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.entries.iter().map(|e| e.tool.spec())
    }
}
