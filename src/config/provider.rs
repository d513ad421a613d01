//! Which provider and model a run talks to, with what key, URL and options; and, for `rounds
//! config`, `models` and `doctor`, how a model value is un-aliased and where a key would come
//! from, without reading the key into anything that prints.

use std::collections::BTreeMap;
use std::path::Path;

use super::{ConfigError, read_file};
use crate::cli::Cli;
use crate::provider::{Api, Options, ProviderChoice};
use crate::providers::{self, Auth};
use crate::transcript;

pub(super) fn resolve_provider(
    named: &Named,
    aliases: &BTreeMap<String, String>,
    base_url: Option<&str>,
    key_file: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
    cwd: &Path,
) -> Result<(ProviderChoice, String), ConfigError> {
    let spec = named.spec.as_str();
    if let Some(path) = spec.strip_prefix("replay:") {
        let path = cwd.join(path);
        let transcript = transcript::read(&path)?;
        let model = transcript.start.model.clone();
        return Ok((
            ProviderChoice::Replay {
                path,
                transcript: Box::new(transcript),
            },
            model,
        ));
    }
    let (entry, model) = match spec.split_once('/') {
        Some((p, m)) => (
            providers::find(p).ok_or_else(|| {
                let hint = did_you_mean(p, providers::names().into_iter().map(str::to_owned));
                ConfigError::UnknownProvider(p.to_owned(), hint)
            })?,
            m.to_owned(),
        ),
        None => match providers::for_bare(spec) {
            Some(entry) => (entry, spec.to_owned()),
            None => {
                let hint = did_you_mean(spec, model_names(aliases));
                return Err(ConfigError::AmbiguousModel(spec.to_owned(), hint));
            }
        },
    };
    if model.is_empty() {
        return Err(ConfigError::EmptyModel(spec.to_owned()));
    }
    let url = base_url
        .map(str::to_owned)
        .or_else(|| entry.url_vars.iter().find_map(|v| env(v)))
        .unwrap_or_else(|| entry.default_url.to_owned());
    // Empty: a cloud's URL, made from its region or project when the provider is built.
    if !url.is_empty() {
        check_url(&url)?;
    }
    let key = match entry.auth {
        // Application Default Credentials are a file or the metadata server, never a key.
        Auth::Google if key_file.is_some() => {
            return Err(ConfigError::NoKeyFor(entry.name));
        }
        Auth::Google => None,
        Auth::Key | Auth::Aws | Auth::Azure => api_key(entry.key_var, key_file, env)?,
    };
    if entry.key_required && key.is_none() {
        return Err(ConfigError::MissingKey {
            var: entry.key_var,
            provider: entry.name,
        });
    }
    Ok((ProviderChoice::new(entry, url, key), model))
}

/// A base URL must parse, as http or https.
fn check_url(url: &str) -> Result<(), ConfigError> {
    match reqwest::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => Ok(()),
        Ok(u) => Err(ConfigError::BaseUrl {
            url: url.to_owned(),
            message: format!("unsupported scheme {}", u.scheme()),
        }),
        Err(e) => Err(ConfigError::BaseUrl {
            url: url.to_owned(),
            message: e.to_string(),
        }),
    }
}

/// The wire API and the model options the flags ask for; `ProviderChoice::configure` checks
/// them against the provider and the model.
pub(super) fn model_options(cli: &Cli) -> (Api, Options) {
    let options = Options {
        reasoning_effort: cli.reasoning_effort,
        thinking_budget: cli.thinking_budget,
        temperature: cli.temperature,
        parallel_tool_calls: cli.parallel_tool_calls,
    };
    (cli.api, options)
}

/// A provider's key: from `--api-key-file`, else the variable `var`, else the file named by
/// `{var}_FILE`. Files let a launcher keep the key out of every process environment (which
/// other processes of the same user can read); they are read once, here. Every source is
/// trimmed alike (an editor's newline in a file, a pasted CI secret's in a variable), and a key
/// still unsendable stops the run here, naming its source: sent, it would fail every attempt
/// as if the network had.
fn api_key(
    var: &str,
    key_file: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<String>, ConfigError> {
    let from_file = |path: &Path, origin: String| -> Result<Option<String>, ConfigError> {
        let text = read_file("API key file", path)?;
        let key = text.trim();
        if key.is_empty() || key.contains(['\n', '\r']) {
            return Err(ConfigError::KeyFile(path.to_owned()));
        }
        sendable(key, origin).map(Some)
    };
    if let Some(path) = key_file {
        return from_file(path, format!("--api-key-file {}", path.display()));
    }
    // A variable holding only whitespace is unset, as an empty one is (`env::var`).
    if let Some(key) = env(var).filter(|k| !k.trim().is_empty()) {
        return sendable(&key, var.to_owned()).map(Some);
    }
    let file_var = format!("{var}_FILE");
    match env(&file_var) {
        Some(path) => {
            let origin = format!("{file_var} ({path})");
            from_file(Path::new(&path), origin)
        }
        None => Ok(None),
    }
}

/// `key` trimmed, or why no header can carry it, naming `origin` and never the key.
fn sendable(key: &str, origin: String) -> Result<String, ConfigError> {
    crate::net::credential(key)
        .map(str::to_owned)
        .map_err(|why| ConfigError::UnsendableKey {
            origin,
            why: why.to_string(),
        })
}

/// How a model value becomes the spec a run resolves: given (or the default), then un-aliased.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Named {
    /// As the flag, the environment or a settings file gave it, or the default.
    pub(crate) given: String,
    pub(crate) is_default: bool,
    /// Whose alias `given` is (`settings` or `built-in`); `None` when it is none.
    pub(crate) alias: Option<&'static str>,
    /// `PROVIDER/MODEL`, a bare model name or `replay:FILE`.
    pub(crate) spec: String,
}

/// `given` (else the default model) un-aliased: the user's aliases (`aliases`, from the settings
/// files), then the built-in ones.
pub(crate) fn name_model(given: Option<&str>, aliases: &BTreeMap<String, String>) -> Named {
    let (given, is_default) = match given {
        Some(g) => (g.to_owned(), false),
        None => (providers::DEFAULT_MODEL.to_owned(), true),
    };
    let (alias, spec) = match aliases.get(&given) {
        Some(spec) => (Some("settings"), spec.clone()),
        None => match crate::pricing::builtin_aliases().remove(&given) {
            Some(spec) => (Some("built-in"), spec),
            None => (None, given.clone()),
        },
    };
    Named {
        given,
        is_default,
        alias,
        spec,
    }
}

/// What a model value may have meant to be: every alias, and the model each names (bare and
/// as `PROVIDER/MODEL`).
pub(crate) fn model_names(aliases: &BTreeMap<String, String>) -> Vec<String> {
    let mut all = crate::pricing::builtin_aliases();
    all.extend(aliases.iter().map(|(k, v)| (k.clone(), v.clone())));
    let mut names = Vec::new();
    for (alias, target) in all {
        names.push(alias);
        if let Some((_, bare)) = target.split_once('/') {
            names.push(bare.to_owned());
        }
        names.push(target);
    }
    names
}

/// ` (did you mean X?)` for the candidate closest to `word` (`suggest::closest`), else nothing.
pub(crate) fn did_you_mean(word: &str, candidates: impl IntoIterator<Item = String>) -> String {
    let candidates: Vec<String> = candidates.into_iter().collect();
    match crate::suggest::closest(word, candidates.iter().map(String::as_str)) {
        Some(c) => format!(" (did you mean {c}?)"),
        None => String::new(),
    }
}

/// Where a provider's key would come from (as `api_key` reads it), never its value: `None`
/// when nowhere. A file named is checked to hold one line, as a run would.
pub(crate) fn key_origin(
    var: &str,
    key_file: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<String>, ConfigError> {
    let found = api_key(var, key_file, env)?.is_some();
    let in_var = env(var).filter(|k| !k.trim().is_empty());
    let origin = match (key_file, in_var, env(&format!("{var}_FILE"))) {
        _ if !found => return Ok(None),
        (Some(path), _, _) => format!("--api-key-file {}", path.display()),
        (None, Some(_), _) => var.to_owned(),
        (None, None, Some(path)) => format!("{var}_FILE ({path})"),
        (None, None, None) => return Ok(None),
    };
    Ok(Some(origin))
}
