//! Which endpoint a run talks to, with what credentials, and the one place that turns that
//! choice into a [`Provider`]. Setup (`config`) resolves flags and environment into a
//! [`ProviderChoice`]; the wiring calls [`build`]. To add a provider: a variant here, its arm in
//! [`ProviderChoice::name`] and [`build`], and its file beside this one.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::Provider;
use super::anthropic::Anthropic;
use super::gemini::Gemini;
use super::openai::{Flavor, OpenAi};
use super::replay::Replay;
use crate::transcript::Transcript;

/// Which endpoint to talk to, with what credentials.
pub enum ProviderChoice {
    Anthropic {
        base_url: String,
        key: String,
    },
    Gemini {
        base_url: String,
        key: String,
    },
    OpenAi {
        name: &'static str,
        flavor: Flavor,
        base_url: String,
        key: Option<String>,
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
        ProviderChoice::Anthropic { base_url, key } => Arc::new(Anthropic::new(
            client()?,
            base_url,
            key.clone(),
            model,
            idle,
        )),
        ProviderChoice::OpenAi {
            name,
            flavor,
            base_url,
            key,
        } => Arc::new(OpenAi::new(
            name,
            *flavor,
            client()?,
            base_url,
            key.clone(),
            model,
            idle,
        )),
        ProviderChoice::Gemini { base_url, key } => {
            Arc::new(Gemini::new(client()?, base_url, key.clone(), model, idle))
        }
        ProviderChoice::Replay { transcript, .. } => Arc::new(Replay::new(transcript)),
    })
}
