//! The jobs of a batch: one JSON object per line, `{"id": …, "prompt": …}` plus per-job
//! overrides of the run flags, or, with `--template`, any fields that fill the template's
//! `{{field}}` placeholders. A field of neither kind is an error (with the field it is most
//! like), not ignored. A bad line is reported with its number and left out; the others run, and
//! the batch counts it as a job that did not complete.

use std::collections::HashSet;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The fields a job line may set besides `id` and `prompt`: those of [`Overrides`], read from
/// its schema, so a field added there is a field here with no list to keep.
pub(crate) fn override_names() -> &'static [String] {
    static NAMES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| {
        let schema = schemars::schema_for!(Overrides);
        schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default()
    })
}

/// One valid job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub id: String,
    /// The line of the jobs file it came from (1-based).
    pub line: usize,
    pub prompt: String,
    #[serde(flatten)]
    pub overrides: Overrides,
}

/// Per-job values of run flags; `None` keeps the batch's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Overrides {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<Rules>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deny: Option<Rules>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rounds: Option<std::num::NonZeroU32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<std::num::NonZeroU32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<Effort>,
    /// The job's own `--check` (a queue row's only under `--trust-queue`: it runs code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_checks: Option<std::num::NonZeroU32>,
    /// Files attached to the job's prompt, as `--attach` (a queue row's only under
    /// `--trust-queue`: they are read on the worker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attach: Option<Vec<PathBuf>>,
}

/// Allowlist rules: one string (comma-separated, as on the command line) or a list of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Rules {
    One(String),
    Many(Vec<String>),
}

impl Rules {
    pub(crate) fn into_vec(self) -> Vec<String> {
        match self {
            Rules::One(s) => vec![s],
            Rules::Many(v) => v,
        }
    }
}

pub(crate) use crate::provider::Effort;

/// A line that is not a job, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct BadLine {
    pub line: usize,
    pub message: String,
}

/// Why a line of the jobs file is no job (its message is the bad line's).
#[derive(Debug, thiserror::Error)]
pub(crate) enum LineError {
    #[error("not JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("not a JSON object")]
    NotObject,
    #[error("no \"id\"")]
    NoId,
    #[error("\"id\" must be a string or an integer")]
    IdType,
    #[error("no \"prompt\" (or give --template)")]
    NoPrompt,
    #[error("\"prompt\" must be a string")]
    PromptType,
    #[error("the prompt is empty")]
    EmptyPrompt,
    /// A field no job has: a typo (`"promt"`) must not leave a job out or change it unseen.
    #[error("unknown field {name:?} {hint}")]
    UnknownField { name: String, hint: String },
    /// An override of the wrong type (`"max_rounds": "five"`).
    #[error("{0}")]
    Override(serde_json::Error),
    #[error("the id is empty")]
    EmptyId,
    #[error(
        "the id is too long to name files: as a file name (each byte other than ASCII \
         letters, digits, '-', '_' and '.' written %XX) it takes {0} bytes, and at most \
         {MAX_STEM_BYTES} leave room for what the batch adds ({NAME_MAX} in all)"
    )]
    IdTooLong(usize),
    #[error("the id holds a control character")]
    IdControl,
    #[error("the id \"results\" is taken by results.jsonl")]
    IdResults,
    #[error("the id {0:?} was already used by an earlier line")]
    Duplicate(String),
    #[error("timeout {0}: expected seconds above 0")]
    Timeout(f64),
    #[error("temperature {0}: expected 0 to 2")]
    Temperature(f64),
    #[error("budget_usd {0}: expected a positive amount")]
    BudgetUsd(f64),
    /// `"check": ""` would run `bash -c ''`, which passes having checked nothing.
    #[error("check is empty: an empty command always passes")]
    EmptyCheck,
    /// The template names a field the line lacks.
    #[error("no field {0:?} for the template's {{{{{0}}}}}")]
    NoField(String),
}

/// The jobs of a file, in order, and the lines that were left out.
#[derive(Debug, Default)]
pub struct Jobs {
    pub jobs: Vec<Job>,
    pub bad: Vec<BadLine>,
}

/// The longest file name, in bytes, that Linux's file systems take (`NAME_MAX`; macOS's and
/// the BSDs' too).
pub const NAME_MAX: usize = 255;

/// The length of a run id (`runs::new_id`: `20260102T130405.123Z-1a2b3c4d`).
const RUN_ID_BYTES: usize = 29;

/// The most a batch puts after an id's file stem in one file name. An id names:
/// - `DIR/<stem>.jsonl`, its transcript;
/// - `DIR/<stem>.outputs/`, the whole outputs of its cut tool results, beside the transcript;
/// - `DIR/attempts/<stem>.N.jsonl`, an attempt set aside (N at most 10000: `.10000.jsonl`);
/// - `DIR/attempts/<stem>.<run id>.jsonl`, a queued job's earlier run a worker exports: the
///   longest.
pub const LONGEST_SUFFIX: usize = ".".len() + RUN_ID_BYTES + ".jsonl".len();

/// The longest file stem an id may have, so that every name above fits in `NAME_MAX`.
pub const MAX_STEM_BYTES: usize = NAME_MAX - LONGEST_SUFFIX;

/// Parses a jobs file's text. With `template`, each line's fields fill its placeholders and
/// form the prompt; any field may appear, and one the template needs but the line lacks makes
/// the line bad.
pub fn parse(text: &str, template: Option<&Template>) -> Jobs {
    let mut out = Jobs::default();
    let mut seen = HashSet::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        match parse_line(raw, line, template) {
            Ok(job) if !seen.insert(job.id.clone()) => out.bad.push(BadLine {
                line,
                message: LineError::Duplicate(job.id).to_string(),
            }),
            Ok(job) => out.jobs.push(job),
            Err(e) => out.bad.push(BadLine {
                line,
                message: e.to_string(),
            }),
        }
    }
    out
}

fn parse_line(raw: &str, line: usize, template: Option<&Template>) -> Result<Job, LineError> {
    let value: Value = serde_json::from_str(raw).map_err(LineError::NotJson)?;
    let Value::Object(mut fields) = value else {
        return Err(LineError::NotObject);
    };
    // Before what the line lacks: `"promt"` is a typo to name, not a missing prompt.
    if let Some(name) = fields.keys().find(|k| !known(k, template)) {
        return Err(unknown(name, template));
    }
    let id = match fields.get("id") {
        None | Some(Value::Null) => return Err(LineError::NoId),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) if n.is_u64() || n.is_i64() => n.to_string(),
        Some(_) => return Err(LineError::IdType),
    };
    check_id(&id)?;
    let prompt = match template {
        Some(t) => t.fill(&fields)?,
        None => match fields.get("prompt") {
            Some(Value::String(p)) => p.clone(),
            None | Some(Value::Null) => return Err(LineError::NoPrompt),
            Some(_) => return Err(LineError::PromptType),
        },
    };
    if prompt.trim().is_empty() {
        return Err(LineError::EmptyPrompt);
    }
    fields.remove("id");
    fields.remove("prompt");
    // What is left is overrides and, with a template, its placeholders' values.
    let overrides: Map<String, Value> = fields
        .into_iter()
        .filter(|(name, _)| override_names().contains(name))
        .collect();
    let overrides: Overrides =
        serde_json::from_value(Value::Object(overrides)).map_err(LineError::Override)?;
    check_overrides(&overrides)?;
    Ok(Job {
        id,
        line,
        prompt,
        overrides,
    })
}

/// Whether a job line may have the field `name`: `id`, an override, and the prompt, or with
/// `--template` the template's placeholders instead.
fn known(name: &str, template: Option<&Template>) -> bool {
    name == "id"
        || override_names().iter().any(|n| n == name)
        || match template {
            None => name == "prompt",
            Some(t) => t.fields().any(|f| f == name),
        }
}

/// The error for an unknown field: the known one it is most like, else what is known.
fn unknown(name: &str, template: Option<&Template>) -> LineError {
    let mut names: Vec<&str> = vec!["id"];
    match template {
        None => names.push("prompt"),
        Some(t) => names.extend(t.fields()),
    }
    names.extend(override_names().iter().map(String::as_str));
    let hint = match (crate::suggest::closest(name, names), template) {
        (Some(known), _) => format!("(did you mean {known:?}?)"),
        (None, None) => format!(
            "(a job has id, prompt and any of: {})",
            override_names().join(", ")
        ),
        (None, Some(_)) => format!(
            "(with --template, a job has id, the template's placeholders and any of: {})",
            override_names().join(", ")
        ),
    };
    LineError::UnknownField {
        name: name.to_owned(),
        hint,
    }
}

fn check_id(id: &str) -> Result<(), LineError> {
    if id.is_empty() {
        return Err(LineError::EmptyId);
    }
    // Refused here, as a bad line, rather than when a file cannot be created mid-batch.
    let stem = stem_len(id);
    if stem > MAX_STEM_BYTES {
        return Err(LineError::IdTooLong(stem));
    }
    if id.chars().any(char::is_control) {
        return Err(LineError::IdControl);
    }
    if id == "results" {
        return Err(LineError::IdResults);
    }
    Ok(())
}

/// What the flags would refuse, refused per line with the flag's own rule.
fn check_overrides(o: &Overrides) -> Result<(), LineError> {
    if let Some(t) = o.timeout.filter(|t| !(*t > 0.0 && *t <= 1e9)) {
        return Err(LineError::Timeout(t));
    }
    if let Some(t) = o.temperature.filter(|t| !(0.0..=2.0).contains(t)) {
        return Err(LineError::Temperature(t));
    }
    if let Some(usd) = o.budget_usd.filter(|u| !(*u > 0.0 && u.is_finite())) {
        return Err(LineError::BudgetUsd(usd));
    }
    if o.check.as_deref().is_some_and(|c| c.trim().is_empty()) {
        return Err(LineError::EmptyCheck);
    }
    Ok(())
}

/// A prompt template: text with `{{field}}` placeholders.
#[derive(Debug, Clone)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone)]
enum Part {
    Text(String),
    Field(String),
}

impl Template {
    /// `{{name}}` (spaces inside the braces allowed) is a placeholder; a `{{` that is not closed
    /// is text.
    pub(crate) fn parse(text: &str) -> Template {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            let Some(close) = rest[open + 2..].find("}}") else {
                break;
            };
            let name = rest[open + 2..open + 2 + close].trim();
            if name.is_empty() || name.contains(['{', '}']) {
                parts.push(Part::Text(rest[..open + 2].to_owned()));
                rest = &rest[open + 2..];
                continue;
            }
            parts.push(Part::Text(rest[..open].to_owned()));
            parts.push(Part::Field(name.to_owned()));
            rest = &rest[open + 2 + close + 2..];
        }
        parts.push(Part::Text(rest.to_owned()));
        Template { parts }
    }

    /// The names of its placeholders.
    pub(crate) fn fields(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Field(name) => Some(name.as_str()),
            Part::Text(_) => None,
        })
    }

    /// The prompt for one line: strings go in as they are, other values as JSON.
    pub(crate) fn fill(&self, fields: &Map<String, Value>) -> Result<String, LineError> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Field(name) => match fields.get(name) {
                    Some(Value::String(s)) => out.push_str(s),
                    Some(Value::Null) | None => return Err(LineError::NoField(name.clone())),
                    Some(other) => out.push_str(&other.to_string()),
                },
            }
        }
        Ok(out)
    }
}

/// `--shard` that is no shard.
#[derive(Debug, thiserror::Error)]
#[error("expected I/N with 0 <= I < N (as 0/4), got {0:?}")]
pub(crate) struct ShardError(String);

/// `--shard I/N`: this process runs the jobs whose id hashes to I modulo N.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shard {
    pub(crate) index: u64,
    pub(crate) count: u64,
}

impl Shard {
    pub(crate) fn parse(s: &str) -> Result<Shard, ShardError> {
        let bad = || ShardError(s.to_owned());
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u64 = i.trim().parse().map_err(|_| bad())?;
        let count: u64 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    pub(crate) fn contains(&self, id: &str) -> bool {
        fnv1a(id.as_bytes()) % self.count == self.index
    }
}

/// FNV-1a, 64 bits: the same on every machine and in every release, unlike std's hasher, so
/// shards agree without talking to each other.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// The file name an id gets in the output directory (without extension): bytes other than
/// ASCII letters, digits, `-`, `_` and `.` are written `%XX`, and so is a leading dot, so
/// every id has a name of its own and none is hidden or leaves the directory.
pub fn file_stem(id: &str) -> String {
    let mut out = String::with_capacity(stem_len(id));
    for (i, b) in id.bytes().enumerate() {
        if plain(i, b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `file_stem(id).len()`, without making it.
pub fn stem_len(id: &str) -> usize {
    id.bytes()
        .enumerate()
        .map(|(i, b)| if plain(i, b) { 1 } else { 3 })
        .sum()
}

/// Whether byte `b` at `i` of an id goes into its file stem as it is.
fn plain(i: usize, b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || (b == b'.' && i > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fields_a_job_may_set_are_those_of_overrides() {
        let mut names = override_names().to_vec();
        names.sort();
        assert_eq!(
            names,
            [
                "allow",
                "attach",
                "budget_tokens",
                "budget_usd",
                "check",
                "deny",
                "max_checks",
                "max_rounds",
                "max_tokens",
                "model",
                "output_schema",
                "reasoning_effort",
                "system",
                "temperature",
                "timeout",
                "workspace"
            ]
        );
    }

    #[test]
    fn good_and_bad_lines_are_told_apart_with_their_numbers() {
        let text = concat!(
            "{\"id\": \"a\", \"prompt\": \"one\", \"max_rounds\": 3, \"allow\": [\"bash\"]}\n",
            "not json\n",
            "\n",
            "{\"prompt\": \"no id\"}\n",
            "{\"id\": \"a\", \"prompt\": \"again\"}\n",
            "{\"id\": 7, \"prompt\": \"seven\", \"colour\": \"red\"}\n",
            "{\"id\": 8, \"prompt\": \"eight\", \"max_rounds\": 0}\n",
            "{\"id\": 9, \"prompt\": \"nine\", \"model\": \"openai/gpt-4.1\"}\n",
        );
        let jobs = parse(text, None);
        let ids: Vec<&str> = jobs.jobs.iter().map(|j| j.id.as_str()).collect();
        assert_eq!(ids, ["a", "9"]);
        assert_eq!(jobs.jobs[0].overrides.max_rounds.map(|n| n.get()), Some(3));
        assert_eq!(
            jobs.jobs[0].overrides.allow.clone().map(Rules::into_vec),
            Some(vec!["bash".to_owned()])
        );
        let bad: Vec<usize> = jobs.bad.iter().map(|b| b.line).collect();
        assert_eq!(bad, [2, 4, 5, 6, 7]);
        assert!(jobs.bad[0].message.starts_with("not JSON"));
        assert!(jobs.bad[2].message.contains("already used"));
        assert!(jobs.bad[3].message.contains("unknown field \"colour\""));
    }

    #[test]
    fn a_mistyped_field_is_an_error_that_names_the_field_meant() {
        let text = concat!(
            "{\"id\": \"a\", \"promt\": \"one\"}\n",
            "{\"id\": \"b\", \"prompt\": \"two\", \"max_round\": 3}\n",
            "{\"id\": \"c\", \"prompt\": \"three\", \"modle\": \"m/x\"}\n",
            "{\"id\": \"d\", \"prompt\": \"four\", \"colour\": \"red\"}\n",
        );
        let jobs = parse(text, None);
        assert!(jobs.jobs.is_empty(), "{:?}", jobs.jobs);
        let messages: Vec<&str> = jobs.bad.iter().map(|b| b.message.as_str()).collect();
        assert_eq!(
            messages[..3],
            [
                "unknown field \"promt\" (did you mean \"prompt\"?)",
                "unknown field \"max_round\" (did you mean \"max_rounds\"?)",
                "unknown field \"modle\" (did you mean \"model\"?)",
            ]
        );
        assert!(
            messages[3].starts_with("unknown field \"colour\" (a job has id, prompt and any of: "),
            "{}",
            messages[3]
        );
        // With a template, its placeholders are the known fields, and a typo of one is named.
        let t = Template::parse("Review {{file}}.");
        let jobs = parse(
            "{\"id\": 1, \"file\": \"a\"}\n{\"id\": 2, \"flie\": \"b\", \"file\": \"c\"}\n{\"id\": 3, \"file\": \"d\", \"prompt\": \"x\"}\n",
            Some(&t),
        );
        assert_eq!(jobs.jobs.len(), 1);
        assert_eq!(
            jobs.bad[0].message,
            "unknown field \"flie\" (did you mean \"file\"?)"
        );
        assert!(
            jobs.bad[1]
                .message
                .starts_with("unknown field \"prompt\" (with --template")
        );
    }

    #[test]
    fn a_blank_check_is_a_bad_line_and_a_real_one_is_kept() {
        let text = concat!(
            "{\"id\": \"a\", \"prompt\": \"p\", \"check\": \"\"}\n",
            "{\"id\": \"b\", \"prompt\": \"p\", \"check\": \" \\t\"}\n",
            "{\"id\": \"c\", \"prompt\": \"p\", \"check\": \"make test\"}\n",
        );
        let jobs = parse(text, None);
        assert_eq!(jobs.jobs.len(), 1);
        assert_eq!(jobs.jobs[0].overrides.check.as_deref(), Some("make test"));
        let bad: Vec<(usize, &str)> = (jobs.bad.iter())
            .map(|b| (b.line, b.message.as_str()))
            .collect();
        let said = "check is empty: an empty command always passes";
        assert_eq!(bad, [(1, said), (2, said)]);
    }

    #[test]
    fn a_template_is_filled_from_each_line() {
        let t = Template::parse("Review {{ file }} ({{n}} lines). {{ not closed");
        let jobs = parse(
            "{\"id\": \"x\", \"file\": \"src/a.rs\", \"n\": 12, \"model\": \"m/x\"}\n{\"id\": \"y\"}\n",
            Some(&t),
        );
        assert_eq!(jobs.jobs.len(), 1);
        assert_eq!(
            jobs.jobs[0].prompt,
            "Review src/a.rs (12 lines). {{ not closed"
        );
        assert_eq!(jobs.jobs[0].overrides.model.as_deref(), Some("m/x"));
        assert_eq!(jobs.bad[0].line, 2);
        assert!(jobs.bad[0].message.contains("\"file\""), "{:?}", jobs.bad);
    }

    #[test]
    fn shards_split_by_a_stable_hash_and_cover_everything_once() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        let shards = [
            Shard::parse("0/3").unwrap(),
            Shard::parse("1/3").unwrap(),
            Shard::parse("2 / 3").unwrap(),
        ];
        for i in 0..300 {
            let id = format!("job-{i}");
            assert_eq!(shards.iter().filter(|s| s.contains(&id)).count(), 1);
        }
        for bad in ["3/3", "1", "a/2", "0/0", "-1/2"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_id_gets_a_plain_file_name_of_its_own() {
        assert_eq!(file_stem("src/main.rs"), "src%2Fmain.rs");
        assert_eq!(file_stem(".."), "%2E.");
        assert_eq!(file_stem("a b%"), "a%20b%25");
        assert_eq!(file_stem("é"), "%C3%A9");
    }
}
