//! Google Vertex AI: Gemini models (`…/publishers/google/models/{m}:streamGenerateContent`,
//! the Gemini API's body and stream) and Claude models (`…/publishers/anthropic/models/{m}:
//! streamRawPredict`, the Messages body with Vertex's `anthropic_version` and no `model`, and
//! Anthropic's stream). Each half reuses its own provider's builder and mapper, so caching,
//! thinking, tool calls and their ids behave as they do there; what is Vertex's own is the URL
//! (project, location, model) and the identity (`adc`: Application Default Credentials, one
//! bearer token per attempt, refreshed ahead of expiry).
//!
//! The project comes from `--project`, else `GOOGLE_CLOUD_PROJECT`, `GCLOUD_PROJECT`,
//! `ANTHROPIC_VERTEX_PROJECT_ID`, else the service-account key's own `project_id`; without one
//! the run stops before any request. The location comes from `--region`, else
//! `GOOGLE_CLOUD_LOCATION`, `CLOUD_ML_REGION`, else `global`: the one location that serves both
//! families' current models, and what the google-genai SDK defaults to.

use std::sync::Arc;

use async_trait::async_trait;
use reqwest::header::HeaderMap;

use super::anthropic::{self, AnthropicMapper, Host};
use super::choice::{BuildError, Cloud};
use super::endpoint::Endpoint;
use super::gemini::{self, GeminiMapper};
use super::{EventStream, Provider, ProviderError, Request};

pub(crate) mod adc;
mod service_account;

pub(crate) use adc::describe_credentials;

/// The provider's name, as in `-m vertex/MODEL`.
pub(crate) const NAME: &str = "vertex";
/// Where the project is read from when `--project` is not given, in order.
pub(crate) const PROJECT_VARS: [&str; 3] = [
    "GOOGLE_CLOUD_PROJECT",
    "GCLOUD_PROJECT",
    "ANTHROPIC_VERTEX_PROJECT_ID",
];
/// Where the location is read from when `--region` is not given, in order (the google-genai
/// SDK's variable, then the anthropic SDK's and Claude Code's).
pub(crate) const LOCATION_VARS: [&str; 2] = ["GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION"];
/// The location when none is named (see the module comment).
pub(crate) const DEFAULT_LOCATION: &str = "global";

/// Which publisher serves a model, which decides the method, the body and the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// `publishers/google`: Gemini's body and stream.
    Gemini,
    /// `publishers/anthropic`: the Messages body and stream.
    Claude,
}

impl Family {
    /// Claude models are named `claude-…` on Vertex (with an `@DATE` version); every other
    /// model is Google's.
    pub(crate) fn of(model: &str) -> Family {
        if model.starts_with("claude") {
            Family::Claude
        } else {
            Family::Gemini
        }
    }
}

/// Where a run's requests go: the project and location every URL names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Place {
    pub(crate) project: String,
    pub(crate) location: String,
}

/// The project and location: the flags', else the variables', else the key file's project and
/// the default location. `Err` says what was looked at.
pub(crate) fn place(
    project: Option<&str>,
    location: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
    file_project: Option<&str>,
) -> Result<Place, PlaceError> {
    let first = |names: &[&str]| names.iter().find_map(|n| env(n).filter(|v| !v.is_empty()));
    let project = project
        .map(str::to_owned)
        .or_else(|| first(&PROJECT_VARS))
        .or_else(|| file_project.map(str::to_owned))
        .ok_or(PlaceError::NoProject)?;
    let location = location
        .map(str::to_owned)
        .or_else(|| first(&LOCATION_VARS))
        .unwrap_or_else(|| DEFAULT_LOCATION.to_owned());
    for (what, value) in [("project", &project), ("location", &location)] {
        // Both go into the URL's path: anything else would change which resource it names.
        let fine = !value.is_empty()
            && value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
        if !fine {
            return Err(PlaceError::Invalid {
                what,
                value: value.clone(),
            });
        }
    }
    Ok(Place { project, location })
}

/// Why no place could be made of the flags and the environment.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PlaceError {
    #[error(
        "vertex: no Google Cloud project: pass --project (or `project` in the settings), or set \
         GOOGLE_CLOUD_PROJECT, GCLOUD_PROJECT or ANTHROPIC_VERTEX_PROJECT_ID; the credentials \
         file names none"
    )]
    NoProject,
    #[error("vertex: the {what} {value:?} is not a valid name")]
    Invalid { what: &'static str, value: String },
}

/// The service's address for `location`: regional, multi-regional (`us`, `eu`) or global, as
/// the Google and Anthropic SDKs build it.
pub(crate) fn default_base(location: &str) -> String {
    match location {
        "global" => "https://aiplatform.googleapis.com".to_owned(),
        "us" | "eu" => format!("https://aiplatform.{location}.rep.googleapis.com"),
        _ => format!("https://{location}-aiplatform.googleapis.com"),
    }
}

/// The whole URL a request for `model` goes to. `base` is `--base-url` (with or without its
/// `/v1`), or empty for the service's own address.
pub(crate) fn url(base: &str, place: &Place, model: &str) -> String {
    let base = if base.is_empty() {
        default_base(&place.location)
    } else {
        base.trim_end_matches('/').to_owned()
    };
    let base = base.strip_suffix("/v1").unwrap_or(&base);
    let Place { project, location } = place;
    let method = match Family::of(model) {
        Family::Gemini => format!("google/models/{model}:streamGenerateContent?alt=sse"),
        Family::Claude => format!("anthropic/models/{model}:streamRawPredict"),
    };
    format!("{base}/v1/projects/{project}/locations/{location}/publishers/{method}")
}

/// The provider for `-m vertex/MODEL`, placed by `cloud` (the flags and settings), else by the
/// environment.
pub(crate) fn build(endpoint: Endpoint, cloud: &Cloud) -> Result<Arc<dyn Provider>, BuildError> {
    let flags = Flags {
        project: cloud.project.as_deref(),
        location: cloud.region.as_deref(),
    };
    let env = |name: &str| crate::env::var(name);
    let vertex = build_from(endpoint, &flags, &env).map_err(|e| BuildError::Config(e.message))?;
    Ok(Arc::new(vertex))
}

/// The flags of a run that place it on Vertex (`--project`, `--region`), before the
/// environment is asked.
#[derive(Debug, Clone, Default)]
pub(crate) struct Flags<'a> {
    pub(crate) project: Option<&'a str>,
    pub(crate) location: Option<&'a str>,
}

/// The provider for `endpoint.model`, with the credentials the environment names. Fails when
/// no project can be found or a credentials file is missing or malformed (nothing could work);
/// the token itself is fetched at the first request.
pub(crate) fn build_from(
    mut endpoint: Endpoint,
    flags: &Flags<'_>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vertex, adc::AuthError> {
    // One token for every job of a batch that finds the same credentials.
    let shared = format!("vertex\0{}", adc::origin(env));
    let auth = super::auth::shared(&shared, || {
        adc::GoogleAuth::locate(env, endpoint.client.clone())
    })?;
    let place = place(flags.project, flags.location, env, auth.file_project())
        .map_err(|e| adc::AuthError::config(e.to_string()))?;
    endpoint.url = url(&endpoint.url, &place, &endpoint.model);
    // The entry's key variable names the credentials file, read above: it is no header.
    endpoint.key = None;
    endpoint.credentials = Some(auth);
    Ok(Vertex {
        family: Family::of(&endpoint.model),
        endpoint,
    })
}

pub(crate) struct Vertex {
    endpoint: Endpoint,
    family: Family,
}

#[async_trait]
impl Provider for Vertex {
    fn name(&self) -> &str {
        self.endpoint.name
    }

    fn model(&self) -> &str {
        &self.endpoint.model
    }

    async fn stream(&self, request: &Request<'_>) -> Result<EventStream, ProviderError> {
        let e = &self.endpoint;
        // The identity is added per attempt by the endpoint's credentials.
        let headers = HeaderMap::new();
        let own = crate::providers::signer(e.name, &e.model);
        match self.family {
            Family::Gemini => {
                let wire = gemini::build_body(&e.model, &own, request, &e.options);
                e.send(headers, &wire, GeminiMapper::after(request.messages))
                    .await
            }
            Family::Claude => {
                let wire = anthropic::build_body(Host::Vertex, &own, request, &e.options);
                e.send(headers, &wire, AnthropicMapper::after(request.messages))
                    .await
            }
        }
    }
}

#[cfg(test)]
mod tests;
