//! Which endpoint a run talks to, with what credentials, and the one place that turns that
//! choice into a [`Provider`]. Setup (`config`) resolves flags and environment into a
//! [`ProviderChoice`]: an entry of the provider table (`crate::providers`) with its URL, key and
//! wire API. [`ProviderChoice::configure`] picks the OpenAI wire API and checks the run's
//! [`Options`] against the wire; the wiring calls [`build`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::Provider;
use super::anthropic::Anthropic;
use super::endpoint::Endpoint;
use super::gemini::Gemini;
use super::openai::OpenAi;
use super::openai_responses::OpenAiResponses;
use super::options::{
    ANTHROPIC_MIN_BUDGET, Options, is_openai_reasoning_family, is_openai_reasoning_model,
};
use super::replay::Replay;
use crate::providers::{Auth, Entry, Flavor, Wire};
use crate::transcript::Transcript;

/// The default output cap for local servers (see [`ProviderChoice::default_max_tokens`]).
pub(crate) const LOCAL_MAX_TOKENS: u32 = 4096;

/// Which endpoint to talk to, with what credentials.
pub enum ProviderChoice {
    /// A built-in provider, over the wire API `wire` (its entry's, or the other OpenAI one
    /// with `--api`).
    Api {
        entry: &'static Entry,
        wire: Wire,
        base_url: String,
        key: Option<String>,
        options: Options,
        cloud: Cloud,
    },
    Replay {
        path: PathBuf,
        transcript: Box<Transcript>,
    },
}

/// Where in a cloud a run's requests go, as the user named it (`--region`, `--project`,
/// `--api-version`, or their settings keys). What is left unset, the cloud's own module finds
/// the usual ways (its variables, profile, credentials file).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cloud {
    /// AWS region (bedrock) or Vertex AI location (vertex).
    pub region: Option<String>,
    /// Google Cloud project (vertex).
    pub project: Option<String>,
    /// Azure OpenAI's `api-version`: the older deployment URLs instead of the v1 API.
    pub api_version: Option<String>,
}

/// A model option the provider or the model does not take (`--temperature` for o3, …).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct OptionError(String);

impl ProviderChoice {
    /// A built-in provider over its own wire API.
    pub fn new(entry: &'static Entry, base_url: String, key: Option<String>) -> ProviderChoice {
        ProviderChoice::Api {
            entry,
            wire: entry.wire,
            base_url,
            key,
            options: Options::default(),
            cloud: Cloud::default(),
        }
    }

    /// The same choice in the cloud place `cloud`.
    pub fn in_cloud(mut self, place: Cloud) -> ProviderChoice {
        if let ProviderChoice::Api { cloud, .. } = &mut self {
            *cloud = place;
        }
        self
    }

    pub fn name(&self) -> &'static str {
        match self {
            ProviderChoice::Api { entry, .. } => entry.name,
            ProviderChoice::Replay { .. } => "replay",
        }
    }

    /// Where requests go (`None` for a replay).
    pub fn base_url(&self) -> Option<&str> {
        match self {
            ProviderChoice::Api { base_url, .. } => Some(base_url),
            ProviderChoice::Replay { .. } => None,
        }
    }

    /// The key the provider sends, with the variable that names it (whether it came from that
    /// variable, `{VAR}_FILE` or `--api-key-file`): what the run must never write or send
    /// elsewhere.
    pub fn key(&self) -> Option<(String, &str)> {
        match self {
            ProviderChoice::Api { entry, key, .. } => {
                Some((entry.key_var.to_owned(), key.as_deref()?))
            }
            ProviderChoice::Replay { .. } => None,
        }
    }

    /// Picks the wire API (`--api`), then checks `options` against the provider and `model` and
    /// keeps them. The error says which flag the provider or model cannot take, and why.
    pub fn configure(
        self,
        api: Api,
        options: Options,
        model: &str,
        max_tokens: Option<u32>,
    ) -> Result<ProviderChoice, OptionError> {
        let mut choice = self.select_api(api, model)?;
        choice.check(&options, model, max_tokens)?;
        if let ProviderChoice::Api { options: o, .. } = &mut choice {
            *o = options;
        }
        Ok(choice)
    }

    /// The output cap of a run whose user set none: local servers (ollama, llamacpp, vllm)
    /// otherwise let a degenerate response run until their own limit. Anthropic has its own
    /// (its API requires one); the hosted APIs keep theirs.
    pub fn default_max_tokens(&self) -> Option<u32> {
        match self {
            ProviderChoice::Api { entry, .. } if entry.local => Some(LOCAL_MAX_TOKENS),
            _ => None,
        }
    }

    /// `auto` sends OpenAI's reasoning families to the Responses API, where their reasoning can
    /// be carried between rounds, and everything else (compatible servers included) to Chat
    /// Completions.
    fn select_api(self, api: Api, model: &str) -> Result<ProviderChoice, OptionError> {
        let ProviderChoice::Api {
            entry,
            wire,
            base_url,
            key,
            options,
            cloud,
        } = self
        else {
            return match api {
                Api::Auto => Ok(self),
                api => Err(not_openai(api, "replay")),
            };
        };
        let wire = match (wire, api) {
            (w, Api::Auto) if w.is_openai() => {
                if entry.flavor == Flavor::OpenAi && is_openai_reasoning_family(model) {
                    Wire::Responses
                } else {
                    w
                }
            }
            (w, Api::Auto) => w,
            (Wire::Chat, Api::Responses) | (Wire::Responses, Api::Responses) => Wire::Responses,
            (Wire::Chat, Api::Chat) => Wire::Chat,
            (Wire::Responses, Api::Chat) => {
                return Err(OptionError(format!(
                    "--api chat: the {} provider is the Responses API; use -m openai/{model} \
                     for Chat Completions",
                    entry.name
                )));
            }
            (_, api) => return Err(not_openai(api, entry.name)),
        };
        Ok(ProviderChoice::Api {
            entry,
            wire,
            base_url,
            key,
            options,
            cloud,
        })
    }

    /// Refuses what the provider or the model would reject, before any request is made.
    fn check(
        &self,
        options: &Options,
        model: &str,
        max_tokens: Option<u32>,
    ) -> Result<(), OptionError> {
        let ProviderChoice::Api { entry, wire, .. } = self else {
            return Ok(());
        };
        let refuse = |message: String| Err(OptionError(message));
        match wire {
            Wire::Anthropic => check_anthropic(options, max_tokens),
            Wire::Chat | Wire::Responses => {
                if options.thinking_budget.is_some() {
                    return refuse(format!(
                        "--thinking-budget is for Anthropic and Gemini; {} models take \
                         --reasoning-effort",
                        entry.name
                    ));
                }
                if entry.flavor == Flavor::OpenAi
                    && options.temperature.is_some()
                    && is_openai_reasoning_model(model)
                {
                    return refuse(format!(
                        "--temperature: {model} is a reasoning model and does not accept a \
                         temperature (--reasoning-effort sets how hard it thinks)"
                    ));
                }
                Ok(())
            }
            // Claude on Vertex takes Anthropic's body, with Anthropic's limits.
            #[cfg(feature = "vertex")]
            Wire::Vertex if super::vertex::Family::of(model) == super::vertex::Family::Claude => {
                check_anthropic(options, max_tokens)
            }
            Wire::Gemini | Wire::Vertex | Wire::Bedrock => Ok(()),
        }
    }
}

fn not_openai(api: Api, name: &str) -> OptionError {
    OptionError(format!(
        "--api {}: only OpenAI and OpenAI-compatible providers have a choice of API, not {name}",
        api.as_str()
    ))
}

/// What Anthropic's Messages API rejects: a thinking budget under its minimum or not under
/// `max_tokens`, a temperature with thinking, a temperature over 1.
fn check_anthropic(options: &Options, max_tokens: Option<u32>) -> Result<(), OptionError> {
    let refuse = |message: String| Err(OptionError(message));
    if let Some(budget) = options.thinking_budget
        && budget < ANTHROPIC_MIN_BUDGET
    {
        return refuse(format!(
            "--thinking-budget {budget}: Anthropic needs at least {ANTHROPIC_MIN_BUDGET} tokens"
        ));
    }
    if let Some(budget) = options.anthropic_thinking() {
        if let Some(max) = max_tokens
            && max <= budget
        {
            return refuse(format!(
                "--max-tokens {max} must be larger than the thinking budget of {budget} \
                 tokens: Anthropic counts thinking within max_tokens"
            ));
        }
        if options.temperature.is_some() {
            return refuse(
                "--temperature cannot be used with Anthropic extended thinking \
                 (--thinking-budget or --reasoning-effort): Anthropic allows only \
                 the default temperature while thinking"
                    .into(),
            );
        }
    }
    match options.temperature {
        Some(t) if t > 1.0 => refuse(format!(
            "--temperature {t}: Anthropic accepts a temperature from 0 to 1"
        )),
        _ => Ok(()),
    }
}

/// `--api`: which OpenAI wire API a run uses. (A `ValueEnum`, so the flag is this very type.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Api {
    // Responses for OpenAI's reasoning families, Chat Completions otherwise.
    #[default]
    Auto,
    Chat,
    Responses,
}

impl Api {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Api::Auto => "auto",
            Api::Chat => "chat",
            Api::Responses => "responses",
        }
    }
}

/// Why a provider could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The HTTP client could not be set up (its TLS configuration failed): rounds' failure.
    #[error("cannot set up the HTTP client: {0}")]
    Client(String),
    /// A cloud's place or credentials are missing or malformed (no region, no endpoint, an
    /// unreadable credentials file): the user's to fix.
    #[error("{0}")]
    Config(String),
}

/// The provider for `choice`, asking for `model`, with streams cut after `idle` without data.
pub fn build(
    choice: &ProviderChoice,
    model: &str,
    idle: Duration,
) -> Result<Arc<dyn Provider>, BuildError> {
    build_with(choice, model, idle, None)
}

/// [`build`] over `shared`, a client (and so a connection pool) that other providers use too,
/// or a new one.
pub fn build_with(
    choice: &ProviderChoice,
    model: &str,
    idle: Duration,
    shared: Option<&reqwest::Client>,
) -> Result<Arc<dyn Provider>, BuildError> {
    let (entry, wire, base_url, key, options, cloud) = match choice {
        ProviderChoice::Replay { transcript, .. } => return Ok(Arc::new(Replay::new(transcript))),
        ProviderChoice::Api {
            entry,
            wire,
            base_url,
            key,
            options,
            cloud,
        } => (entry, wire, base_url, key, options, cloud),
    };
    let client = match shared {
        Some(client) => client.clone(),
        None => super::http::client().map_err(|e| BuildError::Client(e.to_string()))?,
    };
    let mut endpoint = Endpoint {
        name: entry.name,
        flavor: entry.flavor,
        local: entry.local,
        client,
        url: wire.url(base_url, model),
        key: key.clone(),
        credentials: None,
        headers: reqwest::header::HeaderMap::new(),
        model: model.to_owned(),
        idle,
        options: *options,
    };
    for (name, value) in entry.headers {
        endpoint
            .headers
            .insert(*name, reqwest::header::HeaderValue::from_static(value));
    }
    if entry.auth == Auth::Azure {
        #[cfg(feature = "azure")]
        super::azure::prepare(&mut endpoint, *wire, base_url, cloud)?;
        #[cfg(not(feature = "azure"))]
        return Err(not_built(entry.name));
    }
    Ok(match wire {
        Wire::Anthropic => Arc::new(Anthropic::new(endpoint)),
        Wire::Chat => Arc::new(OpenAi::new(endpoint)),
        Wire::Responses => Arc::new(OpenAiResponses::new(endpoint)),
        Wire::Gemini => Arc::new(Gemini::new(endpoint)),
        #[cfg(feature = "bedrock")]
        Wire::Bedrock => super::bedrock::build(endpoint, cloud)?,
        #[cfg(feature = "vertex")]
        Wire::Vertex => return super::vertex::build(endpoint, cloud),
        #[allow(unreachable_patterns)]
        _ => return Err(not_built(entry.name)),
    })
}

/// A cloud this build left out (its cargo feature was off): the user's to fix with another
/// build, said before any request.
pub(crate) fn not_built(provider: &str) -> BuildError {
    let feature = match provider {
        "bedrock" => "bedrock",
        "vertex" => "vertex",
        _ => "azure",
    };
    BuildError::Config(format!(
        "{provider}: this rounds was built without it (cargo feature `{feature}`, on by default); \
         install a build with default features"
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_provider_key_is_named_by_the_variable_it_is_read_from() {
        use crate::ProviderChoice;
        use crate::providers::{PROVIDERS, find};
        let names: Vec<&str> = PROVIDERS
            .iter()
            .map(|entry| {
                let choice = ProviderChoice::new(entry, String::new(), Some("the-key".into()));
                let (var, key) = choice.key().unwrap();
                assert_eq!(key, "the-key");
                assert!(crate::providers::is_key_var(&var), "{var}");
                entry.key_var
            })
            .collect();
        assert_eq!(
            names,
            [
                "ANTHROPIC_API_KEY",
                "OPENAI_API_KEY",
                "OPENAI_API_KEY",
                "GEMINI_API_KEY",
                "AWS_BEARER_TOKEN_BEDROCK",
                "GOOGLE_APPLICATION_CREDENTIALS",
                "AZURE_OPENAI_API_KEY",
                "OPENROUTER_API_KEY",
                "OLLAMA_API_KEY",
                "LLAMACPP_API_KEY",
                "VLLM_API_KEY",
            ]
        );
        let ollama = find("ollama").unwrap();
        assert_eq!(ProviderChoice::new(ollama, String::new(), None).key(), None);
    }
}
