//! Which provider and model a run talks to, with what key, URL and options.

use std::path::Path;

use super::{ConfigError, read_file};
use crate::cli::Cli;
use crate::provider::{Api, Options, ProviderChoice};
use crate::providers;
use crate::transcript;

pub(super) fn resolve_provider(
    spec: &str,
    base_url: Option<&str>,
    key_file: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
    cwd: &Path,
) -> Result<(ProviderChoice, String), ConfigError> {
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
            providers::find(p).ok_or_else(|| ConfigError::UnknownProvider(p.to_owned()))?,
            m.to_owned(),
        ),
        None => match providers::for_bare(spec) {
            Some(entry) => (entry, spec.to_owned()),
            None => return Err(ConfigError::AmbiguousModel(spec.to_owned())),
        },
    };
    if model.is_empty() {
        return Err(ConfigError::EmptyModel(spec.to_owned()));
    }
    let url = base_url
        .map(str::to_owned)
        .or_else(|| entry.url_var.and_then(env))
        .unwrap_or_else(|| entry.default_url.to_owned());
    check_url(&url)?;
    let key = api_key(entry.key_var, key_file, env)?;
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

/// The provider a model spec (already un-aliased) names, without reading anything: `"replay"`
/// for `replay:FILE`, `None` when it names none.
pub(crate) fn provider_of(spec: &str) -> Option<&str> {
    if spec.starts_with("replay:") {
        return Some("replay");
    }
    match spec.split_once('/') {
        Some((p, m)) if !m.is_empty() => Some(p),
        Some(_) => None,
        None => providers::for_bare(spec).map(|e| e.name),
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
/// other processes of the same user can read); they are read once, here, and the trailing
/// newline an editor adds is dropped.
fn api_key(
    var: &str,
    key_file: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<String>, ConfigError> {
    let from_file = |path: &Path| -> Result<Option<String>, ConfigError> {
        let text = read_file("API key file", path)?;
        let key = text.trim_end_matches(['\n', '\r']);
        if key.is_empty() || key.contains(['\n', '\r']) {
            return Err(ConfigError::KeyFile(path.to_owned()));
        }
        Ok(Some(key.to_owned()))
    };
    if let Some(path) = key_file {
        return from_file(path);
    }
    if let Some(key) = env(var) {
        return Ok(Some(key));
    }
    match env(&format!("{var}_FILE")) {
        Some(path) => from_file(Path::new(&path)),
        None => Ok(None),
    }
}
