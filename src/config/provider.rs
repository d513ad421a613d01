//! Which provider and model a run talks to, with what key, URL and options.

use std::path::Path;

use super::{ConfigError, read_file};
use crate::cli::{self, Cli};
use crate::provider::openai::Flavor;
use crate::provider::{Api, Effort, Options, Parallel, ProviderChoice};
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
    let (provider, model) = match spec.split_once('/') {
        Some((p, m)) => (p.to_owned(), m.to_owned()),
        None => match bare_provider(spec) {
            Some(p) => (p.to_owned(), spec.to_owned()),
            None => return Err(ConfigError::AmbiguousModel(spec.to_owned())),
        },
    };
    if model.is_empty() {
        return Err(ConfigError::EmptyModel(spec.to_owned()));
    }
    let url = |env_name: Option<&str>, default: &str| -> Result<String, ConfigError> {
        let url = base_url
            .map(str::to_owned)
            .or_else(|| env_name.and_then(env))
            .unwrap_or_else(|| default.to_owned());
        match reqwest::Url::parse(&url) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => Ok(url),
            Ok(u) => Err(ConfigError::BaseUrl {
                url,
                message: format!("unsupported scheme {}", u.scheme()),
            }),
            Err(e) => Err(ConfigError::BaseUrl {
                url,
                message: e.to_string(),
            }),
        }
    };
    let optional_key = |var: &str| api_key(var, key_file, env);
    let key = |var: &'static str, provider: &'static str| {
        optional_key(var)?.ok_or(ConfigError::MissingKey { var, provider })
    };
    let compatible = |name: &'static str,
                      default_url: &str,
                      key_var: &str|
     -> Result<ProviderChoice, ConfigError> {
        Ok(ProviderChoice::OpenAi {
            name,
            flavor: Flavor::Compatible,
            base_url: url(None, default_url)?,
            key: optional_key(key_var)?,
            options: Options::default(),
        })
    };
    let choice = match provider.as_str() {
        "anthropic" => ProviderChoice::Anthropic {
            base_url: url(Some("ANTHROPIC_BASE_URL"), "https://api.anthropic.com")?,
            key: key("ANTHROPIC_API_KEY", "anthropic")?,
            options: Options::default(),
        },
        "openai" => ProviderChoice::OpenAi {
            name: "openai",
            flavor: Flavor::OpenAi,
            base_url: url(Some("OPENAI_BASE_URL"), "https://api.openai.com/v1")?,
            key: Some(key("OPENAI_API_KEY", "openai")?),
            options: Options::default(),
        },
        "openai-responses" => ProviderChoice::OpenAiResponses {
            name: "openai-responses",
            flavor: Flavor::OpenAi,
            base_url: url(Some("OPENAI_BASE_URL"), "https://api.openai.com/v1")?,
            key: Some(key("OPENAI_API_KEY", "openai-responses")?),
            options: Options::default(),
        },
        "ollama" => compatible("ollama", "http://127.0.0.1:11434/v1", "OLLAMA_API_KEY")?,
        "llamacpp" => compatible("llamacpp", "http://127.0.0.1:8080/v1", "LLAMACPP_API_KEY")?,
        "vllm" => compatible("vllm", "http://127.0.0.1:8000/v1", "VLLM_API_KEY")?,
        "gemini" => ProviderChoice::Gemini {
            base_url: url(
                Some("GEMINI_BASE_URL"),
                "https://generativelanguage.googleapis.com",
            )?,
            key: key("GEMINI_API_KEY", "gemini")?,
            options: Options::default(),
        },
        _ => return Err(ConfigError::UnknownProvider(provider)),
    };
    Ok((choice, model))
}

/// The providers built in (`replay:` aside, which reads a file).
pub const BUILTIN_PROVIDERS: &[&str] = &[
    "anthropic",
    "openai",
    "openai-responses",
    "gemini",
    "ollama",
    "llamacpp",
    "vllm",
];

/// The provider a bare model name belongs to (`claude-*`, `gpt-*`, `o3`, `gemini-*`).
fn bare_provider(spec: &str) -> Option<&'static str> {
    if spec.starts_with("claude-") {
        Some("anthropic")
    } else if spec.starts_with("gpt-")
        || spec.starts_with("chatgpt-")
        || ["o1", "o3", "o4"].iter().any(|p| spec.starts_with(p))
    {
        Some("openai")
    } else if spec.starts_with("gemini-") {
        Some("gemini")
    } else {
        None
    }
}

/// The provider a model spec (already un-aliased) names, without reading anything: `"replay"`
/// for `replay:FILE`, `None` when it names none.
pub fn provider_of(spec: &str) -> Option<&str> {
    if spec.starts_with("replay:") {
        return Some("replay");
    }
    match spec.split_once('/') {
        Some((p, m)) if !m.is_empty() => Some(p),
        Some(_) => None,
        None => bare_provider(spec),
    }
}

/// The wire API and the model options the flags ask for; `ProviderChoice::configure` checks
/// them against the provider and the model.
pub(super) fn model_options(cli: &Cli) -> (Api, Options) {
    let api = match cli.api {
        cli::Api::Auto => Api::Auto,
        cli::Api::Chat => Api::Chat,
        cli::Api::Responses => Api::Responses,
    };
    let options = Options {
        reasoning_effort: cli.reasoning_effort.map(|e| match e {
            cli::ReasoningEffort::Low => Effort::Low,
            cli::ReasoningEffort::Medium => Effort::Medium,
            cli::ReasoningEffort::High => Effort::High,
        }),
        thinking_budget: cli.thinking_budget,
        temperature: cli.temperature,
        parallel_tool_calls: match cli.parallel_tool_calls {
            cli::ParallelToolCalls::Auto => Parallel::Auto,
            cli::ParallelToolCalls::On => Parallel::On,
            cli::ParallelToolCalls::Off => Parallel::Off,
        },
    };
    (api, options)
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
