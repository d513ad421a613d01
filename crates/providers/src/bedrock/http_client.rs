//! rounds' own HTTP client (reqwest over rustls with the platform's roots) as the HTTP client
//! of aws-config's credential providers, so fetching credentials from STS, a container endpoint
//! or the instance metadata service brings no second HTTP or TLS stack into the binary, and
//! honours the same proxies and certificates as the model requests.

use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_runtime_api::http::StatusCode;
use aws_smithy_types::body::SdkBody;

use crate::http::TokenBody;

/// How long a credentials answer may go without a byte when its provider set no timeout (the
/// model request's wait, which fetching credentials is inside, is usually shorter).
const CREDENTIALS_IDLE: std::time::Duration = std::time::Duration::from_secs(30);

#[derive(Debug, Clone)]
pub(crate) struct ReqwestHttpClient {
    client: reqwest::Client,
}

impl ReqwestHttpClient {
    pub(crate) fn new(client: reqwest::Client) -> ReqwestHttpClient {
        ReqwestHttpClient { client }
    }
}

impl HttpClient for ReqwestHttpClient {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        _components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        // A provider's read timeout (IMDS: one second, after one to connect) bounds each of its
        // requests as a whole: reqwest has no separate read timeout per request. A connect
        // timeout alone (STS's) is no bound on the whole: the client's own connect timeout and
        // the model request's idle timeout, which fetching credentials is inside, apply.
        let timeout = settings
            .read_timeout()
            .map(|read| read + settings.connect_timeout().unwrap_or_default());
        SharedHttpConnector::new(Connector {
            client: self.client.clone(),
            timeout,
        })
    }
}

#[derive(Debug)]
struct Connector {
    client: reqwest::Client,
    timeout: Option<std::time::Duration>,
}

impl HttpConnector for Connector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let client = self.client.clone();
        let timeout = self.timeout;
        HttpConnectorFuture::new(async move { send(&client, request, timeout).await })
    }
}

async fn send(
    client: &reqwest::Client,
    request: HttpRequest,
    timeout: Option<std::time::Duration>,
) -> Result<HttpResponse, ConnectorError> {
    let user = |e: String| ConnectorError::user(e.into());
    let method = reqwest::Method::from_bytes(request.method().as_bytes())
        .map_err(|e| user(e.to_string()))?;
    let mut builder = client.request(method, request.uri());
    for (name, value) in request.headers().iter() {
        builder = builder.header(name, value);
    }
    // The credential providers send small bodies held in memory (STS's form), never streams.
    if let Some(body) = request.body().bytes() {
        builder = builder.body(body.to_vec());
    }
    if let Some(t) = timeout {
        builder = builder.timeout(t);
    }
    let response = builder.send().await.map_err(connector_error)?;
    let status = StatusCode::try_from(response.status().as_u16())
        .map_err(|e| ConnectorError::other(e.into(), None))?;
    let headers = response.headers().clone();
    // Credentials answers are small: one without end (a wrong or hostile endpoint) is cut at
    // the cap token answers share, and one that stalls ends rather than holding the run.
    let idle = timeout.unwrap_or(CREDENTIALS_IDLE);
    let body = crate::http::token_body(response, idle)
        .await
        .map_err(|e| match e {
            TokenBody::Stalled(_) => ConnectorError::timeout(e.to_string().into()),
            TokenBody::TooLarge => ConnectorError::user(e.to_string().into()),
            TokenBody::Read(_) => ConnectorError::io(e.to_string().into()),
        })?;
    let mut out = HttpResponse::new(status, SdkBody::from(body));
    for (name, value) in &headers {
        if let Ok(value) = value.to_str() {
            out.headers_mut()
                .insert(name.as_str().to_owned(), value.to_owned());
        }
    }
    Ok(out)
}

fn connector_error(e: reqwest::Error) -> ConnectorError {
    let text = crate::net::describe(&e);
    // A request reqwest would not build (a header or URL of the chain's) was never sent.
    if e.is_builder() {
        return ConnectorError::user(text.into());
    }
    if e.is_timeout() {
        ConnectorError::timeout(text.into())
    } else {
        ConnectorError::io(text.into())
    }
}
