//! The JSONL transcript: its lines (and, in `event`, the stream-json events around them), its
//! writer and its reader. `crate::schema` publishes their JSON Schema, generated from these types.
//!
//! One `start` line, one `round` line per finished round, one `end` line. Each line is
//! serialized whole, written with a single `write_all` and flushed before the next round starts,
//! so a run killed at any moment leaves every finished round on disk as valid JSONL. The same
//! types are read back by `--resume` and by the replay provider.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::conversation::{Block, ErrorKind, StopReason, ToolResult, Usage};
use crate::outcome::CheckRun;
use sandbox::Summary;

mod agent;
mod end;
mod event;
pub use agent::{AgentEnd, AgentRef, AgentRound, AgentStart};
pub mod sandbox;
pub use end::End;
pub mod turn;
pub use event::Event;
pub use turn::ProjectDoc;

/// The schema version written in every line's `v`.
pub const VERSION: u32 = 1;

/// One transcript line: `{"v":1,"type":…,…}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub v: u32,
    #[serde(flatten)]
    pub line: Line,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Line {
    Start(Start),
    Round(Round),
    End(End),
    /// A subagent's lines (`agent`): between the run's rounds, as they happen.
    AgentStart(AgentStart),
    AgentRound(AgentRound),
    AgentEnd(AgentEnd),
}

/// A subagent's line, as a transcript read back holds it.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentLine {
    Start(Box<AgentStart>),
    Round(Box<AgentRound>),
    End(Box<AgentEnd>),
}

impl AgentLine {
    pub fn at(&self) -> &AgentRef {
        match self {
            AgentLine::Start(s) => &s.at,
            AgentLine::Round(r) => &r.at,
            AgentLine::End(e) => &e.at,
        }
    }
}

/// The first line: what the run was asked and with which limits, tools and sandbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Start {
    /// The run's id: its start time, then random hex.
    pub run_id: String,
    /// When the run started (RFC 3339, UTC).
    #[schemars(extend("format" = "date-time"))]
    pub time: String,
    /// The provider that answered, by name (`anthropic`, `openai`, …).
    pub provider: String,
    /// The model, as the requests named it.
    pub model: String,
    /// The workspace root tools ran in.
    pub workspace: String,
    /// The user turn the run added, as sent: a line naming the workspace root, the project's
    /// instructions (`project_docs`) if any, then the prompt (older transcripts named the
    /// workspace root in `system`, and this is the prompt alone). `--resume` and replay send it
    /// again as it is.
    pub prompt: String,
    /// The files of project instructions (AGENTS.md) the turn holds, root first (absent when
    /// none was read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub project_docs: Vec<ProjectDoc>,
    /// The system prompt, as sent.
    pub system: String,
    /// The allowlist in effect, as rules (`read_file`, `bash(git *)`).
    pub tools: Vec<String>,
    pub limits: Limits,
    /// The transcript this run continued (`--resume`), null for a new conversation.
    pub resumed_from: Option<String>,
    /// The OS sandbox tool processes ran in, and what the kernel enforced of it (absent in
    /// transcripts from before v0.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<Summary>,
    /// The variables whose values the run took out of everything it wrote or sent, as
    /// `[REDACTED:NAME]`: the provider key, variables named like KEY, TOKEN, SECRET or
    /// PASSWORD, and `--redact` (names only, never values; absent when there were none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1), extend("uniqueItems" = true))]
    pub redaction: Vec<String>,
    /// The files attached to the prompt (`--attach`), in order (absent when none). An image's or
    /// PDF's bytes are kept beside the transcript, in `RUN.outputs/attachments/SHA256.EXT`; a text
    /// file is in `prompt`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attached>,
}

pub use crate::attachment::Record as Attached;

impl Start {
    /// The prompt as the user gave it: `prompt` without the workspace line and the project's
    /// instructions the run put in front of it for the model (what `rounds runs`, `show` and
    /// step summaries show).
    pub fn user_prompt(&self) -> &str {
        turn::prompt_of(&self.prompt, &self.workspace)
    }
}

/// The run's limits, as its flags set them (null: no limit).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Limits {
    /// `--max-rounds`.
    #[schemars(range(min = 1))]
    pub max_rounds: u32,
    /// `--max-tokens`, per response.
    pub max_tokens: Option<u32>,
    /// `--budget-tokens`, for the whole run.
    pub budget_tokens: Option<u64>,
    /// `--budget-usd`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub budget_usd: Option<f64>,
    /// The context window the requests were kept inside, in tokens (`--context-window`, or the
    /// model's; absent in older transcripts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub context_window: Option<u64>,
    /// `--timeout`, for the whole run.
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub timeout_secs: Option<f64>,
    /// `--tool-timeout`, per tool call.
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub tool_timeout_secs: f64,
    /// `--max-parallel`: tool calls run at once.
    #[schemars(range(min = 1))]
    pub max_parallel: usize,
    /// `--max-calls-per-round` (absent in transcripts from before the loop guards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_calls_per_round: Option<u32>,
    /// `--max-repeats` (absent in transcripts from before the loop guards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_repeats: Option<u32>,
    /// `--check`: the command whose success completes the run (absent without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// `--max-checks` (absent without `--check`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_checks: Option<u32>,
}

/// One finished round: the model's response, the results of its tool calls, what it cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Round {
    /// The round's number, from 1.
    #[schemars(range(min = 1))]
    pub round: u32,
    /// When the round finished (RFC 3339, UTC).
    #[schemars(extend("format" = "date-time"))]
    pub time: String,
    /// The model's blocks in the order it produced them.
    pub blocks: Vec<Block>,
    /// One result per tool_use block, in the same order.
    pub results: Vec<ToolResult>,
    /// Why the response ended (null when the stream said nothing).
    pub stop_reason: Option<StopReason>,
    /// The round's token counts.
    pub usage: Usage,
    /// What the round's request cost in USD, when the model's price is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0))]
    pub cost_usd: Option<f64>,
    /// Time spent waiting for the model.
    pub model_ms: u64,
    /// Time spent running the round's tool calls.
    pub tools_ms: u64,
    /// Failed attempts at this round's request that were retried.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retries: Vec<RetryNote>,
    /// Set when the response broke off after some of its tool calls had started: the calls
    /// that completed are kept (their effects happened) and the run continues from them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// This round is the final call, made without tools, at the round limit (`--on-max-rounds
    /// summarize`; absent otherwise).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[schemars(extend("const" = true))]
    pub summary: bool,
    /// Tool results (by call id) elided from this round's request on, to keep it inside the
    /// context window; the rounds that produced them keep them whole.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub elided: Vec<String>,
    /// What the loop guards did in this round.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guards: Vec<GuardNote>,
    /// `--check`, run after this round's answer without tool calls (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<CheckRun>,
}

/// One action of the loop guards, recorded in the round it happened in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct GuardNote {
    pub kind: GuardKind,
    /// The call the action concerns (none for `cut`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// `duplicate`: the earlier call of the same response it repeats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub of: Option<String>,
    /// `cut`: the calls the response had asked for when it was cut; `repeated` and `stuck`: how
    /// many times the same call has returned the same result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub count: Option<u32>,
}

/// What a loop guard did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GuardKind {
    /// The response asked for more calls than `--max-calls-per-round`: it was read no further.
    Cut,
    /// A call past that limit: answered with an error, not run.
    Dropped,
    /// The same tool with the same arguments as an earlier call of the same response: not run
    /// again; its result points to the first.
    Duplicate,
    /// The same call returned the same result `--max-repeats` times: its result says so.
    Repeated,
    /// And once more after that: the run ends with status `stuck`.
    Stuck,
}

/// One failed attempt at a round's request that was retried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RetryNote {
    /// The round whose request failed.
    pub round: u32,
    /// The attempt that failed (1 is the first request).
    #[schemars(range(min = 1))]
    pub attempt: u32,
    /// Why it failed.
    pub error: String,
    /// The wait before the next attempt.
    pub delay_ms: u64,
}

/// Writing the transcript failed: the run cannot keep its promise of a record, so it ends.
#[derive(Debug, thiserror::Error)]
#[error("transcript {}: {source}", path.display())]
pub struct WriteError {
    pub(crate) path: PathBuf,
    #[source]
    pub(crate) source: io::Error,
}

/// The transcript's only writer.
#[derive(Debug)]
pub struct Writer {
    file: File,
    path: PathBuf,
}

impl Writer {
    /// Creates (or truncates) the file, private to its owner, making parent directories as
    /// needed (see `files::create_private`).
    pub fn create(path: &Path) -> Result<Writer, WriteError> {
        let target = crate::files::Target::new(path).map_err(|source| WriteError {
            path: path.to_owned(),
            source,
        })?;
        Writer::create_at(&target)
    }

    /// Creates the file `target` names, in its directory opened before (see `files`).
    pub fn create_at(target: &crate::files::Target) -> Result<Writer, WriteError> {
        let path = target.path();
        match target.create() {
            Ok(file) => Ok(Writer { file, path }),
            Err(source) => Err(WriteError { path, source }),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one line and flushes it.
    pub fn write(&mut self, line: &Line) -> Result<(), WriteError> {
        let mut bytes =
            serde_json::to_vec(&RecordRef { v: VERSION, line }).map_err(|e| WriteError {
                path: self.path.clone(),
                source: e.into(),
            })?;
        bytes.push(b'\n');
        self.file
            .write_all(&bytes)
            .and_then(|()| self.file.flush())
            .map_err(|source| WriteError {
                path: self.path.clone(),
                source,
            })
    }
}

/// Serializes like `Record` without cloning the line.
#[derive(Serialize)]
struct RecordRef<'a> {
    v: u32,
    #[serde(flatten)]
    line: &'a Line,
}

/// A transcript read back from disk.
#[derive(Debug, Clone, PartialEq)]
pub struct Transcript {
    pub start: Start,
    pub rounds: Vec<Round>,
    pub end: Option<End>,
    /// The subagents' lines, in the order written, each with the number of run rounds
    /// before it (so a reader can place it inside the round whose call started it).
    pub agents: Vec<(usize, AgentLine)>,
    /// The last line was cut off (the run was killed mid-write) and was skipped.
    pub torn_tail: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read transcript {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("transcript {}, line {line}: {message}", path.display())]
    Invalid {
        path: PathBuf,
        line: usize,
        message: String,
    },
}

/// The largest transcript `read` accepts. Tool results are capped, so real transcripts stay far
/// below this; anything larger is not one, and reading it whole would only exhaust memory.
pub(crate) const MAX_READ_BYTES: u64 = 256 * 1024 * 1024;

/// Reads a transcript. A torn last line (no newline and not valid JSON) is skipped and reported
/// in `torn_tail`; any other bad line is an error naming it. Only regular files are read, up to
/// [`MAX_READ_BYTES`]: a path can come from a transcript (`resumed_from`), and `/dev/zero` or a
/// FIFO there must be an error, not a hang or an endless read.
pub fn read(path: &Path) -> Result<Transcript, ReadError> {
    let io = |source: io::Error| ReadError::Io {
        path: path.to_owned(),
        source,
    };
    let text = read_regular(path, MAX_READ_BYTES).map_err(io)?;
    parse(path, &text)
}

/// Reads a regular file of at most `max` bytes as UTF-8 text. Opening does not block (a FIFO
/// with no writer would wait forever), and the type is checked on the opened file.
fn read_regular(path: &Path, max: u64) -> io::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {} MiB", max / 1024 / 1024),
        ));
    }
    String::from_utf8(bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

fn parse(path: &Path, text: &str) -> Result<Transcript, ReadError> {
    let invalid = |line: usize, message: String| ReadError::Invalid {
        path: path.to_owned(),
        line,
        message,
    };
    let ends_with_newline = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    let mut start = None;
    let mut rounds = Vec::new();
    let mut end = None;
    let mut agents = Vec::new();
    let mut torn_tail = false;
    for (i, raw) in lines.iter().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let record: Record = match serde_json::from_str(raw) {
            Ok(r) => r,
            Err(_) if i + 1 == lines.len() && !ends_with_newline => {
                torn_tail = true;
                break;
            }
            Err(e) => return Err(invalid(i + 1, e.to_string())),
        };
        if record.v != VERSION {
            return Err(invalid(
                i + 1,
                format!("unsupported transcript version {}", record.v),
            ));
        }
        match record.line {
            Line::Start(s) if start.is_none() => start = Some(s),
            Line::Start(_) => return Err(invalid(i + 1, "a second start line".into())),
            Line::Round(r) => rounds.push(r),
            Line::End(e) => end = Some(e),
            Line::AgentStart(s) => agents.push((rounds.len(), AgentLine::Start(Box::new(s)))),
            Line::AgentRound(r) => agents.push((rounds.len(), AgentLine::Round(Box::new(r)))),
            Line::AgentEnd(e) => agents.push((rounds.len(), AgentLine::End(Box::new(e)))),
        }
    }
    let start = start.ok_or_else(|| invalid(1, "no start line".into()))?;
    Ok(Transcript {
        start,
        rounds,
        end,
        agents,
        torn_tail,
    })
}

/// Most transcripts a `--resume` chain may follow (each run resumed from the one before).
const MAX_CHAIN: usize = 100;

/// Reads the transcript at `path` and, through `resumed_from`, the runs it continued, oldest
/// first. Every file must exist: a conversation with a missing middle would mislead the model.
pub fn read_chain(path: &Path) -> Result<Vec<Transcript>, ReadError> {
    let mut chain = vec![read(path)?];
    while let Some(earlier) = chain.last().and_then(|t| t.start.resumed_from.clone()) {
        if chain.len() >= MAX_CHAIN {
            return Err(ReadError::Invalid {
                path: path.to_owned(),
                line: 1,
                message: format!("more than {MAX_CHAIN} resumed runs in a chain"),
            });
        }
        chain.push(read(Path::new(&earlier))?);
    }
    chain.reverse();
    Ok(chain)
}

/// The conversation a chain of transcripts recorded, in the neutral form every provider can
/// continue: each run's prompt, then per round the assistant turn (tagged with the provider
/// that produced it, so its signatures only go back there) and its tool results.
pub fn conversation(
    chain: &[Transcript],
    media: &[Vec<crate::attachment::Attachment>],
) -> Vec<crate::conversation::Message> {
    use crate::conversation::Message;
    let mut history = Vec::new();
    // The view the requests had: results elided then are elided again.
    let elided: std::collections::HashSet<&str> = chain
        .iter()
        .flat_map(|t| &t.rounds)
        .flat_map(|r| r.elided.iter().map(String::as_str))
        .collect();
    for (i, t) in chain.iter().enumerate() {
        let files = media.get(i).cloned().unwrap_or_default();
        crate::conversation::push_attached(&mut history, files, t.start.prompt.clone());
        for round in &t.rounds {
            history.push(Message::Assistant {
                blocks: round.blocks.clone(),
                provider: crate::providers::signer(&t.start.provider, &t.start.model),
            });
            let mut results = answers(round);
            for r in &mut results {
                if elided.contains(r.tool_use_id.as_str()) {
                    r.elide();
                }
            }
            if !results.is_empty() {
                history.push(Message::ToolResults(results));
            }
            // The model was told its check failed: also what a resumed run goes on from.
            if let Some(check) = round.check.as_ref().filter(|c| !c.passed) {
                history.push(Message::User(check.turn()));
            }
        }
    }
    history
}

/// One result per tool call of `round`, in call order, as every provider requires: the
/// recorded one, or, for a call without one (a killed run, an edited file), an error result
/// saying so. Results that answer no call are left out.
fn answers(round: &Round) -> Vec<ToolResult> {
    let mut recorded: Vec<Option<&ToolResult>> = round.results.iter().map(Some).collect();
    let calls = round.blocks.iter().filter_map(|b| match b {
        Block::ToolUse(call) => Some(call),
        _ => None,
    });
    let results: Vec<ToolResult> = calls
        .map(|call| {
            let mine = recorded
                .iter_mut()
                .find(|r| r.is_some_and(|r| r.tool_use_id == call.id));
            match mine.and_then(Option::take) {
                Some(result) => result.clone(),
                None => ToolResult::error(call, ErrorKind::Cancelled, NO_RESULT),
            }
        })
        .collect();
    if results.len() != round.results.len() || recorded.iter().any(Option::is_some) {
        tracing::warn!(
            "round {} of the resumed transcript has {} tool calls and {} results; calls \
             without a result are closed with an error result, results without a call left out",
            round.round,
            results.len(),
            round.results.len()
        );
    }
    results
}

/// The error result a resumed call without a recorded result gets.
pub(crate) const NO_RESULT: &str = "no result was recorded for this call (the run stopped before it \
                             finished, or the transcript was edited); it may or may not have run";

#[cfg(test)]
mod tests;
