//! What a source may define of a subagent (`[agents.NAME]`). An agent can never reach more than
//! the run: its tools are intersected with the run's allowlist (`Policy::within`), its sandbox,
//! hooks, workspace and budgets are the run's. What is left to decide here is who may give it a
//! prompt, a model and a round limit, and what a hostile repository could do with those.
//!
//! - The user (`--agents FILE`, their settings file): every key; a key rounds does not know, or
//!   a value of the wrong type, is an error (a typo must not silently widen or narrow anything).
//! - The project's `.rounds.toml`: `description`, `prompt` (no worse than its AGENTS.md),
//!   `tools` (they only narrow), `deny` (only adds), `max-rounds` only at or below the run's,
//!   and `model` only under the rule for a project's model, and only on the run's provider.
//!   Anything else (an endpoint, a key, hooks, MCP servers, a sandbox setting) is refused with a
//!   warning that names it, and the agent is defined without it. A user's agent of the same
//!   name wins.
//! - Job lines, queue rows and transcripts define no agents at all (they have no such key).

use std::collections::BTreeMap;

use super::{Pin, Refusal, Source, refusal, untrusted_model};

/// One agent's table as written, with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    pub name: String,
    /// Its keys, as TOML values (`description`, `prompt`, `tools`, …).
    pub keys: BTreeMap<String, toml::Value>,
    pub origin: Source,
}

/// An agent as it applies.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Admitted {
    pub(crate) description: String,
    pub(crate) prompt: String,
    pub(crate) tools: Option<Vec<String>>,
    pub(crate) deny: Vec<String>,
    /// The model's name on the run's provider.
    pub(crate) model: Option<String>,
    pub(crate) max_rounds: Option<u32>,
    pub(crate) origin: Source,
}

/// The keys an agent table may hold (`Problem::UnknownKey` names them too).
const KEYS: &[&str] = &[
    "description",
    "prompt",
    "tools",
    "deny",
    "model",
    "max-rounds",
];

/// What is wrong with an agent's table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    #[error(
        "{0:?} cannot name an agent (letters, digits, '-' and '_'; not \"general\", the built-in \
         agent)"
    )]
    Name(String),
    #[error("unknown key {0:?} (an agent has description, prompt, tools, deny, model, max-rounds)")]
    UnknownKey(String),
    #[error("{0} must be a string")]
    NotText(&'static str),
    #[error("{0} must be a list of strings")]
    NotList(&'static str),
    #[error("description is missing: the model chooses an agent by it")]
    NoDescription,
    #[error("max-rounds must be a whole number of at least 1")]
    MaxRounds,
    #[error("{model:?} is a model of {of}: an agent's model runs on the run's provider ({run})")]
    OtherProvider {
        model: String,
        of: String,
        run: String,
    },
}

/// An agent the user defined that cannot apply: where, which, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}: agents.{name}: {problem}")]
pub struct AgentError {
    origin: Source,
    name: String,
    problem: Problem,
}

/// The run an agent belongs to, as far as the rules need it.
pub(crate) struct Run<'a> {
    /// The run's provider: every agent's model runs on it.
    pub(crate) provider: &'a str,
    pub(crate) max_rounds: u32,
    /// The user's model aliases.
    pub(crate) aliases: &'a BTreeMap<String, String>,
}

/// The agents that apply, by name, and what was refused of the untrusted ones.
pub(crate) type Admissions = (BTreeMap<String, Admitted>, Vec<Refusal>);

/// The agents of `written` that apply, and what was refused of the untrusted ones. `written` is in
/// ascending precedence (project tables, the user's file, `--agents` files), so a later
/// definition of a name replaces an earlier one, but an untrusted one never replaces a trusted
/// one. An error is the user's own mistake.
pub(crate) fn admit(written: &[Written], run: &Run<'_>) -> Result<Admissions, Box<AgentError>> {
    let mut agents: BTreeMap<String, Admitted> = BTreeMap::new();
    let mut refused = Vec::new();
    for table in written {
        let trusted = table.origin.trusted();
        let name = &table.name;
        if !trusted && agents.get(name).is_some_and(|a| a.origin.trusted()) {
            continue;
        }
        let admitted = if name == crate::tools::delegate::GENERAL || !valid_name(name) {
            Err(Problem::Name(name.clone()))
        } else {
            one(table, run, &mut refused)
        };
        match admitted {
            Ok(agent) => {
                agents.insert(name.clone(), agent);
            }
            Err(problem) if trusted => {
                return Err(Box::new(AgentError {
                    origin: table.origin.clone(),
                    name: name.clone(),
                    problem,
                }));
            }
            Err(problem) => refused.push(refusal(
                &format!("agents.{name}"),
                &[],
                &table.origin,
                problem.to_string(),
            )),
        }
    }
    Ok((agents, refused))
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// One table as it applies; an untrusted table's refused keys go into `refused`.
fn one(table: &Written, run: &Run<'_>, refused: &mut Vec<Refusal>) -> Result<Admitted, Problem> {
    let source = &table.origin;
    let trusted = source.trusted();
    let key = |k: &str| format!("agents.{}.{k}", table.name);
    for k in table.keys.keys().filter(|k| !KEYS.contains(&k.as_str())) {
        if trusted {
            return Err(Problem::UnknownKey(k.clone()));
        }
        refused.push(refusal(
            &key(k),
            &[],
            source,
            format!(
                "an agent defined by {} may set only {}: its endpoint, key, hooks and sandbox \
                 are the run's",
                "a project file",
                KEYS.join(", ")
            ),
        ));
    }
    let text = |k: &'static str| -> Result<Option<String>, Problem> {
        match table.keys.get(k) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(Problem::NotText(k)),
        }
    };
    let list = |k: &'static str| -> Result<Option<Vec<String>>, Problem> {
        match table.keys.get(k) {
            None => Ok(None),
            Some(toml::Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .map(Some)
                .ok_or(Problem::NotList(k)),
            Some(_) => Err(Problem::NotList(k)),
        }
    };
    let description = text("description")?
        .filter(|d| !d.trim().is_empty())
        .ok_or(Problem::NoDescription)?;
    let mut max_rounds = match table.keys.get("max-rounds") {
        None => None,
        Some(toml::Value::Integer(n)) if *n >= 1 => Some(u32::try_from(*n).unwrap_or(u32::MAX)),
        Some(_) => return Err(Problem::MaxRounds),
    };
    if !trusted && max_rounds.is_some_and(|n| n > run.max_rounds) {
        refused.push(refusal(
            &key("max-rounds"),
            &[max_rounds.unwrap_or_default().to_string()],
            source,
            format!(
                "from a project a limit only tightens (the run's is {})",
                run.max_rounds
            ),
        ));
        max_rounds = None;
    }
    let model = match text("model")? {
        None => None,
        Some(spec) if trusted => Some(own_model(&spec, run)?),
        Some(spec) => match project_model(&spec, run, source) {
            Ok(model) => Some(model),
            Err(r) => {
                refused.push(r);
                None
            }
        },
    };
    Ok(Admitted {
        description,
        prompt: text("prompt")?.unwrap_or_default(),
        tools: list("tools")?,
        deny: list("deny")?.unwrap_or_default(),
        model,
        max_rounds,
        origin: source.clone(),
    })
}

/// A model the user named for an agent: un-aliased, on the run's provider.
fn own_model(spec: &str, run: &Run<'_>) -> Result<String, Problem> {
    let target = run
        .aliases
        .get(spec)
        .cloned()
        .or_else(|| crate::pricing::builtin_aliases().remove(spec))
        .unwrap_or_else(|| spec.to_owned());
    on_provider(&target, run.provider)
}

/// A model a project named for an agent: as a project's own model value may be, and only on
/// the run's provider (the run's key must not go to another).
fn project_model(spec: &str, run: &Run<'_>, source: &Source) -> Result<String, Refusal> {
    let target = untrusted_model(spec, &BTreeMap::new(), &Pin::default(), source)?;
    on_provider(&target, run.provider)
        .map_err(|why| refusal("model", &[spec.to_owned()], source, why.to_string()))
}

/// The model's name on `provider`, or why it is another provider's.
fn on_provider(target: &str, provider: &str) -> Result<String, Problem> {
    let other = |of: &str| Problem::OtherProvider {
        model: target.to_owned(),
        of: of.to_owned(),
        run: provider.to_owned(),
    };
    match target.split_once('/') {
        Some((p, model)) if p == provider && !model.is_empty() => Ok(model.to_owned()),
        Some((p, _)) => Err(other(p)),
        None => match crate::providers::provider_of(target) {
            Some(p) if p != provider => Err(other(p)),
            _ => Ok(target.to_owned()),
        },
    }
}
