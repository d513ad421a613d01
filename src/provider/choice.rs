//! Which endpoint a run talks to, with what credentials, and the one place that turns that
//! choice into a [`Provider`]. Setup (`config`) resolves flags and environment into a
//! [`ProviderChoice`] (and [`ProviderChoice::configure`] checks the run's [`Options`] against
//! it); the wiring calls [`build`]. To add a provider: a variant here,
//! its arm in [`ProviderChoice::name`] and [`build`], and its file beside this one.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::Provider;
use super::anthropic::Anthropic;
use super::gemini::Gemini;
use super::openai::{Flavor, OpenAi};
use super::options::{ANTHROPIC_MIN_BUDGET, Options, is_openai_reasoning_model};
use super::replay::Replay;
use crate::transcript::Transcript;

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
            ProviderChoice::OpenAi { name, .. } => name,
            ProviderChoice::Replay { .. } => "replay",
        }
    }

    /// Checks `options` against the provider and `model` and keeps them. The error says which
    /// flag the provider or model cannot take, and why.
    pub fn configure(
        mut self,
        options: Options,
        model: &str,
        max_tokens: Option<u32>,
    ) -> Result<ProviderChoice, String> {
        self.check(&options, model, max_tokens)?;
        match &mut self {
            ProviderChoice::Anthropic { options: o, .. }
            | ProviderChoice::Gemini { options: o, .. }
            | ProviderChoice::OpenAi { options: o, .. } => *o = options,
            ProviderChoice::Replay { .. } => {}
        }
        Ok(self)
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
            ProviderChoice::OpenAi { name, flavor, .. } => {
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
    let client = || super::http::client().map_err(|e| BuildError(e.to_string()));
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
