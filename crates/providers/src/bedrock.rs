//! Amazon Bedrock's Converse stream API (`POST /model/{modelId}/converse-stream`), which serves
//! every model family on Bedrock with one request shape. The answer is AWS's binary event
//! stream, not SSE (`eventstream`), driven by the same driver as every provider
//! (`provider::drive_framed`). Requests carry a Bedrock API key or a SigV4 signature (`auth`).
//!
//! Where requests go: `--base-url`, else `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`, else
//! `AWS_ENDPOINT_URL`, else the region's endpoint. The region: `--region`, else `AWS_REGION`,
//! `AWS_DEFAULT_REGION`, the profile's `region`.

use std::sync::Arc;

use async_trait::async_trait;

use super::auth::Credentials;
use super::endpoint::Endpoint;
use super::http;
use super::{
    Bounds, BuildError, Cloud, EventStream, MAX_RESPONSE_BYTES, Provider, ProviderError, Request,
};

mod auth;
mod eventstream;
mod http_client;
mod mapper;
mod request;

pub(crate) use auth::describe_credentials;
pub(crate) use mapper::BedrockMapper;
pub(crate) use request::build_request;

/// The content type of an event stream.
const EVENT_STREAM: &str = "application/vnd.amazon.eventstream";

pub(crate) struct Bedrock {
    endpoint: Endpoint,
    /// Where requests go before the region's default: `--base-url` or the AWS variables.
    base: Option<String>,
    auth: Arc<auth::AwsAuth>,
}

/// The Bedrock provider for `endpoint`: its `url` is `--base-url` or an AWS endpoint variable
/// when there is one, else empty; its key, a Bedrock API key. Cheap: credentials and the
/// profile's region are read on the first request. Fails at once only when no region can be
/// had at all and one is needed (no `--region`, no variable, no shared config file).
pub(crate) fn build(
    mut endpoint: Endpoint,
    cloud: &Cloud,
) -> Result<Arc<dyn Provider>, BuildError> {
    let base = Some(endpoint.url.trim_end_matches('/').to_owned()).filter(|u| !u.is_empty());
    let region = cloud.region.clone().filter(|r| !r.is_empty());
    let needs_region = base.is_none() || endpoint.key.is_none();
    if needs_region && region.is_none() && !auth::region_may_be_found(&|v| crate::env::var(v)) {
        return Err(BuildError::Config(format!("bedrock: {}", auth::NO_REGION)));
    }
    // The environment's keys are read at the first request; one no request could carry is
    // the user's to fix, said now rather than failed on (as a network error) then.
    if endpoint.key.is_none() {
        auth::check_env_keys(&|v| crate::env::var(v))
            .map_err(|e| BuildError::Config(format!("bedrock: {e}")))?;
    }
    // One chain (one STS exchange, one refresh) for every job of a batch with this key and
    // region: the rest of what decides it is the process's environment.
    let shared = format!("bedrock\0{:?}\0{region:?}", endpoint.key);
    let auth = super::auth::shared(&shared, || {
        Ok::<_, BuildError>(auth::AwsAuth::new(
            endpoint.name,
            endpoint.client.clone(),
            endpoint.key.clone(),
            region.clone(),
        ))
    })?;
    endpoint.credentials = Some(auth.clone());
    Ok(Arc::new(Bedrock {
        endpoint,
        base,
        auth,
    }))
}

#[async_trait]
impl Provider for Bedrock {
    fn name(&self) -> &str {
        self.endpoint.name
    }

    fn model(&self) -> &str {
        &self.endpoint.model
    }

    async fn stream(&self, request: &Request<'_>) -> Result<EventStream, ProviderError> {
        let e = &self.endpoint;
        let wire = build_request(&e.model, e.name, request, &e.options);
        let body = serde_json::to_vec(&wire).map_err(|err| ProviderError::Protocol {
            provider: e.name.to_owned(),
            message: err.to_string(),
        })?;
        let base = match &self.base {
            Some(base) => base.clone(),
            None => {
                let region = self.auth.region().await?;
                format!("https://bedrock-runtime.{region}.amazonaws.com")
            }
        };
        let url = converse_stream_url(&base, &e.model);
        let http = e
            .client
            .post(&url)
            .headers(e.headers.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, EVENT_STREAM)
            .body(body)
            .build()
            .map_err(|err| http::transport(e.name, &url, &err))?;
        let response = self.send(http, &url).await?;
        let bounds = Bounds {
            idle: e.idle,
            max_bytes: MAX_RESPONSE_BYTES,
        };
        Ok(super::drive_framed(
            Box::pin(response.bytes_stream()),
            eventstream::EventStreamDecoder::default(),
            BedrockMapper::after(e.name, request.messages),
            bounds,
        ))
    }
}

impl Bedrock {
    /// Sends the request; a non-success status becomes an error classified by Bedrock's error
    /// type (`x-amzn-ErrorType`) and message, a success must be an event stream.
    /// Fetching credentials is part of getting a response: bounded by the same wait.
    async fn send(
        &self,
        request: reqwest::Request,
        url: &str,
    ) -> Result<reqwest::Response, ProviderError> {
        let e = &self.endpoint;
        let auth: &dyn Credentials = &*self.auth;
        let response = http::send(&e.client, e.name, request, e.idle, Some(auth)).await?;
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned()
        };
        let error_type = header("x-amzn-errortype");
        let content_type = header("content-type");
        if response.status().is_success() && content_type.starts_with(EVENT_STREAM) {
            return Ok(response);
        }
        let moved = http::moved_to(&response);
        let (status, retry_after, body) = http::error_body(response).await;
        let text = match moved {
            Some(to) => http::not_followed(&to),
            None => http::error_text(&body),
        };
        if status.is_success() {
            return Err(ProviderError::Protocol {
                provider: e.name.to_owned(),
                message: format!(
                    "POST {} answered {status} with {content_type} instead of an event stream \
                     (is the base URL right?): {}",
                    http::shown_url(url),
                    crate::net::clip(&text, 200)
                ),
            });
        }
        let kind = mapper::kind_of(&error_type, &text)
            .unwrap_or_else(|| crate::failure::of_http(status.as_u16(), &body));
        let named = error_type.split(':').next().unwrap_or("");
        Err(ProviderError::Http {
            provider: e.name.to_owned(),
            status: status.as_u16(),
            message: match (named, text.as_str()) {
                ("", t) => t.to_owned(),
                (n, "") => n.to_owned(),
                (n, t) => format!("{t} ({n})"),
            },
            retry_after,
            kind,
        })
    }
}

/// `{base}/model/{modelId}/converse-stream`, the model id percent-encoded as one path segment:
/// inference profile ids and ARNs hold `:` and `/`.
pub(crate) fn converse_stream_url(base: &str, model: &str) -> String {
    let mut id = String::with_capacity(model.len() * 3);
    for b in model.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            id.push(char::from(b));
        } else {
            id.push_str(&format!("%{b:02X}"));
        }
    }
    format!("{base}/model/{id}/converse-stream")
}

#[cfg(test)]
mod request_tests;
#[cfg(test)]
mod tests;
