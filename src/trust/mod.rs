//! Who may decide what. Every setting value knows where it came from ([`Source`]); this module
//! alone decides what each source may set and how values from several sources combine. The
//! rest of the code never checks again: it gets values that passed.
//!
//! - The user decides everything: flags, the environment, their own settings file (and the
//!   profile they choose from it), `-c`. So does a batch job line, which is as trusted as the
//!   command line that names the jobs file, and a queue row when the worker says so
//!   (`--trust-queue`).
//! - Untrusted sources — the project's `.rounds.toml` (it comes with the code rounds runs on, in
//!   CI often a pull request's), a queue row (anyone who can write the store), a resumed
//!   transcript (a record, not an instruction) — may set only the keys of [`MAY_SET`]: nothing
//!   that reads or writes a file, names an endpoint or a key, runs code, widens what tools
//!   reach, or changes what a pipeline reads on stdout. A flag not on that list is the user's
//!   alone until someone adds it on purpose.
//! - From an untrusted source a limit only tightens (the smaller value wins over the user's
//!   file, profile or the default; an explicit flag or `-c` stands), and a deny list or
//!   `--fail-on` only grows: deny lists add up from every source, job lines included.
//! - A model from an untrusted source names a built-in provider, never `replay:`; and when the
//!   user pinned an endpoint or a key file (`--base-url`, `--api-key-file`), not another
//!   provider than theirs. A project's `[alias]` applies only to the project's own model
//!   value, never shadows a built-in alias, and is never a `PROVIDER/MODEL` spec.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::providers;
use crate::providers::{DEFAULT_MODEL, provider_of};

/// Where a setting value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A flag's default.
    Default,
    /// The command line.
    Flag,
    /// An environment variable (clap's `env`).
    Env(String),
    /// The user's settings file; `profile` when from the `[profile.NAME]` they chose.
    UserFile {
        path: PathBuf,
        line: usize,
        profile: bool,
    },
    /// `-c key=value`.
    Override,
    /// The project's `.rounds.toml` (or its `[profile.NAME]`).
    ProjectFile {
        path: PathBuf,
        line: usize,
        profile: bool,
    },
    /// A line of a batch's jobs file.
    JobLine { line: usize },
    /// A row of the queue in the store; `trusted` when the worker runs with `--trust-queue`.
    QueueRow { trusted: bool },
    /// The transcript a run resumes.
    Transcript { path: PathBuf },
}

impl Source {
    /// Whether the user stands behind this source (it may set anything).
    pub(crate) fn trusted(&self) -> bool {
        match self {
            Source::ProjectFile { .. } | Source::Transcript { .. } => false,
            Source::QueueRow { trusted } => *trusted,
            _ => true,
        }
    }

    /// Why this source is not trusted, for messages.
    fn distrust(&self) -> &'static str {
        match self {
            Source::ProjectFile { .. } => {
                "a project file comes with the code rounds runs on; set it in your own settings \
                 file, with -c, the environment or a flag"
            }
            Source::QueueRow { .. } => {
                "a queue row can be written by anyone who can write the store; start the worker \
                 with --trust-queue if only you can"
            }
            Source::Transcript { .. } => "a transcript is a record of a run, not an instruction",
            _ => "",
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::Flag => f.write_str("flag"),
            Source::Env(name) => write!(f, "env {name}"),
            Source::UserFile {
                path,
                line,
                profile,
            }
            | Source::ProjectFile {
                path,
                line,
                profile,
            } => {
                write!(f, "{}", path.display())?;
                if *line > 0 {
                    write!(f, ":{line}")?;
                }
                if *profile {
                    f.write_str(" (profile)")?;
                }
                Ok(())
            }
            Source::Override => f.write_str("-c"),
            Source::JobLine { line } => write!(f, "jobs line {line}"),
            Source::QueueRow { .. } => f.write_str("queue row"),
            Source::Transcript { path } => write!(f, "transcript {}", path.display()),
        }
    }
}

/// How an untrusted source may set a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rule {
    /// Set it like the user would (where the user has not).
    Harmless,
    /// Only make it smaller.
    Tighten,
    /// Only add to it.
    Grow,
    /// Not at all.
    UserOnly,
}

/// The only keys an untrusted source may set (long flag names), and how. Everything else is
/// [`Rule::UserOnly`]. Add a key here only after asking whether a hostile repository, queue row
/// or transcript could use it to reach something the user did not give it.
pub(crate) const MAY_SET: &[(&str, Rule)] = &[
    ("model", Rule::Harmless),
    ("temperature", Rule::Harmless),
    ("reasoning-effort", Rule::Harmless),
    ("thinking-budget", Rule::Harmless),
    ("api", Rule::Harmless),
    ("parallel-tool-calls", Rule::Harmless),
    ("no-cache", Rule::Harmless),
    ("cache-ttl", Rule::Harmless),
    ("on-max-rounds", Rule::Harmless),
    ("max-rounds", Rule::Tighten),
    ("max-tokens", Rule::Tighten),
    ("context-window", Rule::Tighten),
    ("tool-timeout", Rule::Tighten),
    ("timeout", Rule::Tighten),
    ("idle-timeout", Rule::Tighten),
    ("budget-tokens", Rule::Tighten),
    ("budget-usd", Rule::Tighten),
    ("max-result-bytes", Rule::Tighten),
    ("max-spill-bytes", Rule::Tighten),
    ("max-parallel", Rule::Tighten),
    ("max-calls-per-round", Rule::Tighten),
    ("max-repeats", Rule::Tighten),
    // Fewer attempts at the user's check only end a run sooner; the check itself runs code.
    ("max-checks", Rule::Tighten),
    ("max-retries", Rule::Tighten),
    // Shallower delegation only spends less; an agent's tools are the run's at any depth.
    ("max-depth", Rule::Tighten),
    ("deny", Rule::Grow),
    ("fail-on", Rule::Grow),
];

/// The limit a tightening value is compared with when no trusted source set the key and the
/// flag has no default: unlimited, or for the two the provider or model decides, the smallest
/// value rounds would otherwise use (Anthropic's default output cap, the fallback window).
pub(crate) fn ceiling(key: &str) -> f64 {
    match key {
        "max-tokens" => 8192.0,
        "context-window" => 200_000.0,
        _ => f64::INFINITY,
    }
}

/// How an untrusted source may set `key`.
pub(crate) fn rule(key: &str) -> Rule {
    MAY_SET
        .iter()
        .find(|(k, _)| *k == key)
        .map_or(Rule::UserOnly, |(_, r)| *r)
}

/// What a source may do with `key`: for a trusted source, replace it (deny lists and
/// `--fail-on` still only grow); for an untrusted one, its [`rule`].
pub(crate) fn rule_for(key: &str, source: &Source) -> Rule {
    match rule(key) {
        Rule::Grow => Rule::Grow,
        _ if source.trusted() => Rule::Harmless,
        r => r,
    }
}

/// What a key does that makes it the user's alone.
fn reach(key: &str) -> &'static str {
    match key {
        "base-url" | "search-url" | "store" | "region" | "project" | "api-version" => {
            "it names an endpoint"
        }
        "api-key-file" => "it names a key",
        "prompt-file"
        | "attach"
        | "system-file"
        | "append-system-prompt"
        | "output-schema"
        | "prices"
        | "resume" => "it reads a file",
        "project-doc" | "no-project-doc" => {
            "it decides which of the repository's files the model reads"
        }
        "transcript"
        | "no-transcript"
        | "output-last-message"
        | "step-summary"
        | "no-step-summary" => "it decides what rounds writes where",
        "pre-tool-hook" | "post-tool-hook" | "mcp" | "mcp-config" | "tools-file" | "check" => {
            "it runs code"
        }
        "allow"
        | "sandbox"
        | "sandbox-write"
        | "tool-network"
        | "tool-env"
        | "web-allow-private"
        | "workspace"
        | "mcp-startup-timeout" => "it widens what tools reach",
        "output" | "quiet" | "verbose" | "color" => {
            "it changes what rounds prints, which a pipeline may parse"
        }
        "system" => "it replaces the system prompt",
        "vision" => "it says what the user's model takes",
        "prompt" | "no-stdin" => "it is the user's prompt",
        _ => "it is not one of the settings an untrusted source may set",
    }
}

/// A value a source was not allowed to set, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub key: String,
    pub values: Vec<String>,
    pub source: Source,
    pub why: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} ignored: {}", self.source, self.key, self.why)
    }
}

pub(crate) fn refusal(
    key: &str,
    values: &[String],
    source: &Source,
    why: impl Into<String>,
) -> Refusal {
    Refusal {
        key: key.to_owned(),
        values: values.to_vec(),
        source: source.clone(),
        why: why.into(),
    }
}

/// The refusal of a key an untrusted source may not set at all.
pub(crate) fn user_only(key: &str, values: &[String], source: &Source) -> Refusal {
    refusal(
        key,
        values,
        source,
        format!("{}, and {}", reach(key), source.distrust()),
    )
}

/// What the user pinned a model to: when they named an endpoint or a key file, their
/// provider's, so an untrusted model cannot send that key or the conversation to another one.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pin {
    provider: Option<String>,
}

impl Pin {
    /// `endpoint_set`: the user gave `--base-url` or `--api-key-file`; `model`: the user's model
    /// (already un-aliased), if any.
    pub(crate) fn new(endpoint_set: bool, model: Option<&str>) -> Pin {
        let provider = endpoint_set.then(|| {
            provider_of(model.unwrap_or(DEFAULT_MODEL))
                .unwrap_or_default()
                .to_owned()
        });
        Pin { provider }
    }
}

/// A model from an untrusted `source`, with the aliases that source may use; the model to use,
/// or why not.
pub(crate) fn untrusted_model(
    spec: &str,
    aliases: &BTreeMap<String, String>,
    pin: &Pin,
    source: &Source,
) -> Result<String, Refusal> {
    let refuse = |why: String| refusal("model", &[spec.to_owned()], source, why);
    let target = aliases
        .get(spec)
        .cloned()
        .or_else(|| crate::pricing::builtin_aliases().remove(spec))
        .unwrap_or_else(|| spec.to_owned());
    let provider = match provider_of(&target) {
        Some("replay") => {
            return Err(refuse(format!(
                "{target:?} would replay a file instead of asking a model"
            )));
        }
        Some(p) if providers::find(p).is_some() => p,
        _ => {
            return Err(refuse(format!(
                "{target:?} names no built-in provider (PROVIDER/MODEL, with PROVIDER one of {})",
                providers::names().join(", ")
            )));
        }
    };
    if let Some(pinned) = &pin.provider
        && pinned != provider
    {
        return Err(refuse(format!(
            "your --base-url or --api-key-file are for {pinned}, and {target:?} is {provider}"
        )));
    }
    Ok(target)
}

/// The aliases of an untrusted source that it may use (for its own model value only), and the
/// refusals of the others.
pub(crate) fn untrusted_aliases(
    aliases: &BTreeMap<String, String>,
    source: &Source,
) -> (BTreeMap<String, String>, Vec<Refusal>) {
    let builtin = crate::pricing::builtin_aliases();
    let mut kept = BTreeMap::new();
    let mut refused = Vec::new();
    for (name, target) in aliases {
        let why = if name.contains('/') || name.starts_with("replay:") {
            Some("an alias is a name, not a PROVIDER/MODEL spec".to_owned())
        } else if builtin.contains_key(name) {
            Some(format!("{name:?} is a built-in alias"))
        } else {
            untrusted_model(target, &BTreeMap::new(), &Pin::default(), source)
                .err()
                .map(|r| r.why)
        };
        match why {
            Some(why) => refused.push(refusal(
                &format!("alias {name}"),
                std::slice::from_ref(target),
                source,
                why,
            )),
            None => {
                kept.insert(name.clone(), target.clone());
            }
        }
    }
    (kept, refused)
}

/// Why a resumed run does not adopt its transcript's model.
#[derive(Debug)]
pub(crate) enum TranscriptModel {
    /// Not a model a record may name (not a built-in provider's, `replay:`): the run goes on
    /// with its default, as with any refused untrusted value.
    Unusable(Refusal),
    /// Another provider's than the one the user pinned an endpoint or key file to: the run must
    /// not go on with a model the user did not choose for that key.
    Pinned(Refusal),
}

/// The model a resumed run adopts from its transcript (`provider/model` as recorded), when
/// nothing else names one: only a built-in provider's; never `replay:`; and, as for a project
/// file, only the pinned provider's when the user named an endpoint or a key file.
pub(crate) fn transcript_model(
    provider: &str,
    model: &str,
    pin: &Pin,
    source: &Source,
) -> Result<String, TranscriptModel> {
    let spec = format!("{provider}/{model}");
    if providers::find(provider).is_none() || model.is_empty() {
        return Err(TranscriptModel::Unusable(refusal(
            "model",
            &[spec],
            source,
            format!("{provider:?} is not a built-in provider; give -m to choose the model"),
        )));
    }
    untrusted_model(&spec, &BTreeMap::new(), &Pin::default(), source)
        .map_err(TranscriptModel::Unusable)?;
    untrusted_model(&spec, &BTreeMap::new(), pin, source).map_err(TranscriptModel::Pinned)
}

/// Whether a resumed run may take the workspace its transcript recorded: only from a run rounds
/// kept for this user (`own_run`); the workspace is what confines the tools.
pub(crate) fn transcript_may_set_workspace(own_run: bool) -> bool {
    own_run
}

/// Whether `value` of a tightening key, from an untrusted source, is below the value the key
/// would otherwise have (`current`; `None`: unset, so the key's ceiling). `None` when either is
/// not a number.
pub(crate) fn tightens(key: &str, value: &str, current: Option<&str>) -> Option<bool> {
    let new: f64 = value.trim().parse().ok()?;
    let old = match current {
        Some(c) => c.trim().parse().ok()?,
        None => ceiling(key),
    };
    Some(new < old)
}

pub(crate) mod agents;
mod overlay;

pub(crate) use overlay::Overlay;

#[cfg(test)]
mod tests;
