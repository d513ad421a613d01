//! Which endpoint a run talks to, with what credentials, and the one place that turns that
//! choice into a [`Provider`]. Setup (`config`) resolves flags and environment into a
//! [`ProviderChoice`] (and [`ProviderChoice::configure`] picks the OpenAI wire API and checks the
//! run's [`Options`] against it); the wiring calls [`build`]. To add a provider: a variant here,
//! its arm in [`ProviderChoice::name`] and [`build`], and its file beside this one.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::Provider;
use super::anthropic::Anthropic;
use super::gemini::Gemini;
use super::openai::{Flavor, OpenAi};
use super::openai_responses::OpenAiResponses;
use super::options::{
    ANTHROPIC_MIN_BUDGET, Options, is_openai_reasoning_family, is_openai_reasoning_model,
};
use super::replay::Replay;
use crate::transcript::Transcript;

/// The default output cap for local servers (see [`ProviderChoice::default_max_tokens`]).
pub const LOCAL_MAX_TOKENS: u32 = 4096;

/// Which endpoint to talk to, with what credentials.
pub enum ProviderChoice {
    Anthropic {
        base_url: String,
        key: String,
        options: Options,
    },
    Gemini {
        base_url: String,
        key: String,
        options: Options,
    },
    /// Chat Completions, at OpenAI or at a compatible server.
    OpenAi {
        name: &'static str,
        flavor: Flavor,
        base_url: String,
        key: Option<String>,
        options: Options,
    },
    /// The Responses API, at OpenAI or at a compatible server (`--api responses`).
    OpenAiResponses {
        name: &'static str,
        flavor: Flavor,
        base_url: String,
        key: Option<String>,
        options: Options,
    },
    Replay {
        path: PathBuf,
        transcript: Box<Transcript>,
    },
}

impl ProviderChoice {
    pub fn name(&self) -> &'static str {
        match self {
            ProviderChoice::Anthropic { .. } => "anthropic",
            ProviderChoice::Gemini { .. } => "gemini",
            ProviderChoice::OpenAi { name, .. } | ProviderChoice::OpenAiResponses { name, .. } => {
                name
            }
            ProviderChoice::Replay { .. } => "replay",
        }
    }

    /// The key the provider sends, with the variable that names it (whether it came from that
    /// variable, `{VAR}_FILE` or `--api-key-file`): what the run must never write or send
    /// elsewhere. Every provider's variable is `{NAME}_API_KEY`, OpenAI's for both its APIs.
    pub fn key(&self) -> Option<(String, &str)> {
        let (name, key) = match self {
            ProviderChoice::Anthropic { key, .. } => ("anthropic", key.as_str()),
            ProviderChoice::Gemini { key, .. } => ("gemini", key.as_str()),
            ProviderChoice::OpenAi { name, key, .. }
            | ProviderChoice::OpenAiResponses { name, key, .. } => (*name, key.as_deref()?),
            ProviderChoice::Replay { .. } => return None,
        };
        let name = name.strip_suffix("-responses").unwrap_or(name);
        Some((format!("{}_API_KEY", name.to_ascii_uppercase()), key))
    }

    /// Picks the wire API (`--api`), then checks `options` against the provider and `model` and
    /// keeps them. The error says which flag the provider or model cannot take, and why.
    pub fn configure(
        self,
        api: Api,
        options: Options,
        model: &str,
        max_tokens: Option<u32>,
    ) -> Result<ProviderChoice, String> {
        let mut choice = self.select_api(api, model)?;
        choice.check(&options, model, max_tokens)?;
        match &mut choice {
            ProviderChoice::Anthropic { options: o, .. }
            | ProviderChoice::Gemini { options: o, .. }
            | ProviderChoice::OpenAi { options: o, .. }
            | ProviderChoice::OpenAiResponses { options: o, .. } => *o = options,
            ProviderChoice::Replay { .. } => {}
        }
        Ok(choice)
    }

    /// The output cap of a run whose user set none: local servers (ollama, llamacpp, vllm)
    /// otherwise let a degenerate response run until their own limit. Anthropic has its own
    /// (its API requires one); the hosted APIs keep theirs.
    pub fn default_max_tokens(&self) -> Option<u32> {
        match self {
            ProviderChoice::OpenAi {
                flavor: Flavor::Compatible,
                ..
            }
            | ProviderChoice::OpenAiResponses {
                flavor: Flavor::Compatible,
                ..
            } => Some(LOCAL_MAX_TOKENS),
            _ => None,
        }
    }

    /// `auto` sends OpenAI's reasoning families to the Responses API, where their reasoning can
    /// be carried between rounds, and everything else (compatible servers included) to Chat
    /// Completions.
    fn select_api(self, api: Api, model: &str) -> Result<ProviderChoice, String> {
        use ProviderChoice::{OpenAi, OpenAiResponses};
        Ok(match (self, api) {
            (
                OpenAi {
                    name,
                    flavor,
                    base_url,
                    key,
                    options,
                },
                Api::Responses,
            ) => OpenAiResponses {
                name,
                flavor,
                base_url,
                key,
                options,
            },
            (
                OpenAi {
                    name,
                    flavor: Flavor::OpenAi,
                    base_url,
                    key,
                    options,
                },
                Api::Auto,
            ) if is_openai_reasoning_family(model) => OpenAiResponses {
                name,
                flavor: Flavor::OpenAi,
                base_url,
                key,
                options,
            },
            (choice @ OpenAi { .. }, _)
            | (choice @ OpenAiResponses { .. }, Api::Auto | Api::Responses) => choice,
            (choice, Api::Auto) => choice,
            (OpenAiResponses { name, .. }, Api::Chat) => {
                return Err(format!(
                    "--api chat: the {name} provider is the Responses API; use -m openai/{model} \
                     for Chat Completions"
                ));
            }
            (choice, api) => {
                return Err(format!(
                    "--api {}: only OpenAI and OpenAI-compatible providers have a choice of API, \
                     not {}",
                    api.as_str(),
                    choice.name()
                ));
            }
        })
    }

    /// Refuses what the provider or the model would reject, before any request is made.
    fn check(&self, options: &Options, model: &str, max_tokens: Option<u32>) -> Result<(), String> {
        match self {
            ProviderChoice::Anthropic { .. } => {
                if let Some(budget) = options.thinking_budget
                    && budget < ANTHROPIC_MIN_BUDGET
                {
                    return Err(format!(
                        "--thinking-budget {budget}: Anthropic needs at least {ANTHROPIC_MIN_BUDGET} tokens"
                    ));
                }
                if let Some(budget) = options.anthropic_thinking() {
                    if let Some(max) = max_tokens
                        && max <= budget
                    {
                        return Err(format!(
                            "--max-tokens {max} must be larger than the thinking budget of {budget} \
                             tokens: Anthropic counts thinking within max_tokens"
                        ));
                    }
                    if options.temperature.is_some() {
                        return Err("--temperature cannot be used with Anthropic extended thinking \
                                    (--thinking-budget or --reasoning-effort): Anthropic allows only \
                                    the default temperature while thinking"
                            .into());
                    }
                }
                match options.temperature {
                    Some(t) if t > 1.0 => Err(format!(
                        "--temperature {t}: Anthropic accepts a temperature from 0 to 1"
                    )),
                    _ => Ok(()),
                }
            }
            ProviderChoice::OpenAi { name, flavor, .. }
            | ProviderChoice::OpenAiResponses { name, flavor, .. } => {
                if options.thinking_budget.is_some() {
                    return Err(format!(
                        "--thinking-budget is for Anthropic and Gemini; {name} models take \
                         --reasoning-effort"
                    ));
                }
                if *flavor == Flavor::OpenAi
                    && options.temperature.is_some()
                    && is_openai_reasoning_model(model)
                {
                    return Err(format!(
                        "--temperature: {model} is a reasoning model and does not accept a \
                         temperature (--reasoning-effort sets how hard it thinks)"
                    ));
                }
                Ok(())
            }
            ProviderChoice::Gemini { .. } | ProviderChoice::Replay { .. } => Ok(()),
        }
    }
}

/// `--api`: which OpenAI wire API a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Api {
    /// Responses for OpenAI's reasoning families, Chat Completions otherwise.
    #[default]
    Auto,
    Chat,
    Responses,
}

impl Api {
    pub fn as_str(self) -> &'static str {
        match self {
            Api::Auto => "auto",
            Api::Chat => "chat",
            Api::Responses => "responses",
        }
    }
}

/// The HTTP client could not be set up (its TLS configuration failed).
#[derive(Debug, thiserror::Error)]
#[error("cannot set up the HTTP client: {0}")]
pub struct BuildError(String);

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
    let client = || match shared {
        Some(client) => Ok(client.clone()),
        None => super::http::client().map_err(|e| BuildError(e.to_string())),
    };
    let model = model.to_owned();
    Ok(match choice {
        ProviderChoice::Anthropic {
            base_url,
            key,
            options,
        } => Arc::new(Anthropic::new(
            client()?,
            base_url,
            key.clone(),
            model,
            idle,
            *options,
        )),
        ProviderChoice::OpenAi {
            name,
            flavor,
            base_url,
            key,
            options,
        } => Arc::new(OpenAi::new(
            name,
            *flavor,
            client()?,
            base_url,
            key.clone(),
            model,
            idle,
            *options,
        )),
        ProviderChoice::OpenAiResponses {
            name,
            flavor,
            base_url,
            key,
            options,
        } => Arc::new(OpenAiResponses::new(
            name,
            *flavor,
            client()?,
            base_url,
            key.clone(),
            model,
            idle,
            *options,
        )),
        ProviderChoice::Gemini {
            base_url,
            key,
            options,
        } => Arc::new(Gemini::new(
            client()?,
            base_url,
            key.clone(),
            model,
            idle,
            *options,
        )),
        ProviderChoice::Replay { transcript, .. } => Arc::new(Replay::new(transcript)),
    })
}
