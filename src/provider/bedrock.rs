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
use aws_config::meta::region::RegionProviderChain;
use futures_util::StreamExt;

use super::endpoint::Endpoint;
use super::{Bounds, EventStream, Failure, MAX_RESPONSE_BYTES, Provider, ProviderError, Request};
use crate::net::describe;

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
/// The variable holding a Bedrock API key.
pub(crate) const BEARER_VAR: &str = "AWS_BEARER_TOKEN_BEDROCK";

/// Who requests come from.
enum Auth {
    /// A Bedrock API key: `Authorization: Bearer`, nothing signed.
    Bearer(String),
    /// The standard credential chain, signing with SigV4.
    Chain(auth::Chain),
}

pub(crate) struct Bedrock {
    endpoint: Endpoint,
    /// `--region`, when given.
    region_flag: Option<String>,
    region: tokio::sync::OnceCell<Option<String>>,
    /// The URL requests go to before the region's default: `--base-url` or the AWS variables.
    base: Option<String>,
    auth: Auth,
}

/// The Bedrock provider for `endpoint` (its `url` is `--base-url` when the user gave one, else
/// empty). Cheap: credentials and the profile's region are read on the first request.
pub(crate) fn build(endpoint: Endpoint, region: Option<String>) -> Arc<dyn Provider> {
    let base = [
        Some(endpoint.url.clone()),
        crate::env::var("AWS_ENDPOINT_URL_BEDROCK_RUNTIME"),
        crate::env::var("AWS_ENDPOINT_URL"),
    ]
    .into_iter()
    .flatten()
    .find(|u| !u.is_empty())
    .map(|u| u.trim_end_matches('/').to_owned());
    let auth = match crate::env::var(BEARER_VAR) {
        Some(token) => Auth::Bearer(token),
        None => Auth::Chain(auth::Chain::new(endpoint.name, endpoint.client.clone())),
    };
    Arc::new(Bedrock {
        endpoint,
        region_flag: region.filter(|r| !r.is_empty()),
        region: tokio::sync::OnceCell::new(),
        base,
        auth,
    })
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
        let region = self.region().await;
        let base = match (&self.base, &region) {
            (Some(base), _) => base.clone(),
            (None, Some(region)) => format!("https://bedrock-runtime.{region}.amazonaws.com"),
            (None, None) => return Err(self.no_region()),
        };
        let url = converse_stream_url(&base, &e.model);
        let mut http = e
            .client
            .post(&url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, EVENT_STREAM)
            .body(body)
            .build()
            .map_err(|err| self.transport(&url, &err))?;
        self.authorize(&mut http, region.as_deref()).await?;
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
    /// The region: `--region`, else the environment's, else the profile's (read once).
    async fn region(&self) -> Option<String> {
        if let Some(r) = &self.region_flag {
            return Some(r.clone());
        }
        self.region
            .get_or_init(|| async {
                let chain = RegionProviderChain::first_try(
                    aws_config::environment::EnvironmentVariableRegionProvider::new(),
                )
                .or_else(aws_config::profile::ProfileFileRegionProvider::new());
                chain.region().await.map(|r| r.to_string())
            })
            .await
            .clone()
    }

    fn no_region(&self) -> ProviderError {
        ProviderError::Credentials {
            provider: self.endpoint.name.to_owned(),
            message: "no AWS region: pass --region, or set AWS_REGION (or AWS_DEFAULT_REGION), \
                      or `region` in the profile of ~/.aws/config"
                .to_owned(),
            kind: Failure::Config,
        }
    }

    /// Makes `request` carry the caller's identity: the API key, or a signature over all of it
    /// with credentials fresh for at least another minute.
    async fn authorize(
        &self,
        request: &mut reqwest::Request,
        region: Option<&str>,
    ) -> Result<(), ProviderError> {
        match &self.auth {
            Auth::Bearer(token) => {
                let value = super::http::secret_header(&format!("Bearer {token}"))?;
                request
                    .headers_mut()
                    .insert(reqwest::header::AUTHORIZATION, value);
                Ok(())
            }
            Auth::Chain(chain) => {
                let region = region.ok_or_else(|| self.no_region())?;
                let credentials = chain.credentials(region).await?;
                auth::sign_request(request, &credentials, region, std::time::SystemTime::now())
            }
        }
    }

    /// Sends the request; a non-success status becomes an error classified by Bedrock's error
    /// type (`x-amzn-ErrorType`) and message, a success must be an event stream.
    async fn send(
        &self,
        request: reqwest::Request,
        url: &str,
    ) -> Result<reqwest::Response, ProviderError> {
        let e = &self.endpoint;
        let sent = tokio::time::timeout(e.idle, e.client.execute(request)).await;
        let response = sent
            .map_err(|_| ProviderError::Idle {
                provider: e.name.to_owned(),
                after: e.idle,
            })?
            .map_err(|err| self.transport(url, &err))?;
        let status = response.status();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned()
        };
        tracing::info!(
            "POST {}: {status}, request id {}",
            shown(url),
            header("x-amzn-requestid")
        );
        let error_type = header("x-amzn-errortype");
        let content_type = header("content-type");
        if status.is_success() && content_type.starts_with(EVENT_STREAM) {
            return Ok(response);
        }
        let retry_after = super::http::retry_after(response.headers());
        let mut body = Vec::new();
        let mut stream = response.bytes_stream();
        while let Some(Ok(chunk)) = stream.next().await {
            body.extend_from_slice(&chunk);
            if body.len() > 64 * 1024 {
                break;
            }
        }
        let text = super::http::error_text(&body);
        if status.is_success() {
            return Err(ProviderError::Protocol {
                provider: e.name.to_owned(),
                message: format!(
                    "POST {} answered {status} with {content_type} instead of an event stream \
                     (is the base URL right?): {}",
                    shown(url),
                    crate::net::clip(&text, 200)
                ),
            });
        }
        let kind = mapper::kind_of(&error_type, &text)
            .unwrap_or_else(|| Failure::of_http(status.as_u16(), &body));
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

    fn transport(&self, url: &str, err: &reqwest::Error) -> ProviderError {
        ProviderError::Transport {
            provider: self.endpoint.name.to_owned(),
            message: format!("POST {}: {}", shown(url), describe(err)),
        }
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

/// A URL as messages show it: no query, no user info.
fn shown(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => format!(
            "{}://{}{}{}",
            u.scheme(),
            u.host_str().unwrap_or(""),
            u.port().map(|p| format!(":{p}")).unwrap_or_default(),
            u.path()
        ),
        Err(_) => "(an unparsable URL)".to_owned(),
    }
}

#[cfg(test)]
mod tests;
