//! HTTP plumbing shared by the network providers: one client, a POST that turns every non-success
//! status into a typed error carrying the provider's own error text, and `retry-after` parsing.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue};

use super::ProviderError;
use super::auth::Credentials;
use crate::net::{clip, describe};

/// Builds the providers' HTTP client. Connection setup is bounded; the response body is bounded
/// by the idle timeout in `provider::drive`, not by a total timeout (a long answer is legitimate).
pub fn client() -> Result<reqwest::Client, reqwest::Error> {
    crate::net::builder(Duration::from_secs(30))
        .redirect(same_origin_redirects())
        .build()
}

/// How many redirects within one origin are followed (reqwest's own default).
const MAX_REDIRECTS: usize = 10;

/// Redirects are followed only within the origin (scheme, host, port) the request was sent
/// to; one to another origin is not followed, and its response is the answer. Refused, not
/// stripped: a redirect policy sees URLs only, never headers, so it cannot take `x-api-key`,
/// `api-key`, `x-goog-api-key` or a form's `client_secret` off a request (reqwest itself
/// strips only `Authorization`, `Cookie` and their kin), and a provider's or token service's
/// POST has no business moving to another origin. Every request that carries a credential
/// (the model's, and the token exchanges of Entra ID, Google and AWS, which use this client)
/// goes through here.
pub(crate) fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let from = attempt.previous().first().map(reqwest::Url::origin);
        if from.is_some_and(|from| from != attempt.url().origin()) {
            return attempt.stop();
        }
        if attempt.previous().len() > MAX_REDIRECTS {
            return attempt.error("too many redirects");
        }
        attempt.follow()
    })
}

/// A header value holding a secret: marked sensitive so it never shows in debug output.
/// `what` names the credential in the error (never its value); a value no header can carry is
/// a setup error (setup refuses such keys first; this is the last guard).
pub(crate) fn secret_header(
    provider: &str,
    what: &str,
    value: &str,
) -> Result<HeaderValue, ProviderError> {
    let mut v = HeaderValue::from_str(value).map_err(|_| ProviderError::Unbuildable {
        provider: provider.to_owned(),
        message: format!("{what} holds characters that cannot be sent in an HTTP header"),
    })?;
    v.set_sensitive(true);
    Ok(v)
}

/// POSTs `wire` as JSON and returns the response once its status says a stream follows.
pub(crate) async fn post(
    client: &reqwest::Client,
    provider: &str,
    url: &str,
    headers: HeaderMap,
    wire: &impl serde::Serialize,
    idle: Duration,
    credentials: Option<&dyn Credentials>,
) -> Result<reqwest::Response, ProviderError> {
    let body = serde_json::to_vec(wire).map_err(|e| ProviderError::Protocol {
        provider: provider.to_owned(),
        message: e.to_string(),
    })?;
    let request = client
        .post(url)
        .headers(headers)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body)
        .build()
        .map_err(|e| transport(provider, url, &e))?;
    let response = send(client, provider, request, idle, credentials).await?;
    if response.status().is_success() {
        return expect_event_stream(provider, &shown_url(url), response).await;
    }
    let location = moved_to(&response);
    let (status, retry_after, body) = error_body(response).await;
    let reason = status.canonical_reason().unwrap_or("");
    let text = match location {
        Some(to) => not_followed(&to),
        None => error_text(&body),
    };
    Err(ProviderError::Http {
        provider: provider.to_owned(),
        status: status.as_u16(),
        message: if text.is_empty() {
            reason.to_owned()
        } else {
            format!("{reason}: {text}")
                .trim_start_matches(": ")
                .to_owned()
        },
        retry_after,
        kind: crate::failure::of_http(status.as_u16(), &body),
    })
}

/// What a run says of a redirect to the origin `to` that it did not follow.
pub(crate) fn not_followed(to: &str) -> String {
    format!(
        "a redirect to another origin ({to}), not followed so that the credentials do not go \
         there: point the base URL at where the service is"
    )
}

/// Where a redirect the policy did not follow points, as an origin (never a path or query,
/// which could hold a token).
pub(crate) fn moved_to(response: &reqwest::Response) -> Option<String> {
    if !response.status().is_redirection() {
        return None;
    }
    let location = response.headers().get(reqwest::header::LOCATION)?;
    let to = response.url().join(location.to_str().ok()?).ok()?;
    Some(to.origin().ascii_serialization())
}

/// Sends `request` once `credentials` (if any) authorized it, and returns the response head
/// whatever its status. Fetching a token is part of getting a response, and the wait for both
/// is bounded by `idle` like every wait for the body: a server that accepts the connection and
/// never answers is a stall (retried), not a hang.
pub(crate) async fn send(
    client: &reqwest::Client,
    provider: &str,
    mut request: reqwest::Request,
    idle: Duration,
    credentials: Option<&dyn Credentials>,
) -> Result<reqwest::Response, ProviderError> {
    let url = request.url().to_string();
    let started = std::time::Instant::now();
    let sent = async {
        if let Some(credentials) = credentials {
            credentials.authorize(&mut request).await?;
        }
        client
            .execute(request)
            .await
            .map_err(|e| transport(provider, &url, &e))
    };
    let response = tokio::time::timeout(idle, sent)
        .await
        .map_err(|_| ProviderError::Idle {
            provider: provider.to_owned(),
            after: idle,
        })??;
    let request_id = ["request-id", "x-request-id", "x-amzn-requestid"]
        .iter()
        .find_map(|h| response.headers().get(*h)?.to_str().ok())
        .map(|id| format!(", request id {id}"))
        .unwrap_or_default();
    tracing::info!(
        "POST {}: {} after {} ms{request_id}",
        shown_url(&url),
        response.status(),
        started.elapsed().as_millis()
    );
    Ok(response)
}

/// Sending to `url` failed. A request reqwest would not build (a header, URL or body of ours)
/// was never sent: that is rounds' setup failing, not the network, and retrying cannot help.
pub(crate) fn transport(provider: &str, url: &str, e: &reqwest::Error) -> ProviderError {
    let message = format!("POST {}: {}", shown_url(url), describe(e));
    let provider = provider.to_owned();
    if e.is_builder() {
        return ProviderError::Unbuildable { provider, message };
    }
    ProviderError::Transport { provider, message }
}

/// An error response's status, the wait it asked for (its header, or Gemini's body), and its
/// body. An error body is small; a huge one is cut rather than buffered whole.
pub(crate) async fn error_body(
    response: reqwest::Response,
) -> (reqwest::StatusCode, Option<Duration>, Vec<u8>) {
    let status = response.status();
    let retry_after = retry_after(response.headers());
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    use futures_util::StreamExt;
    while let Some(Ok(chunk)) = stream.next().await {
        body.extend_from_slice(&chunk);
        if body.len() > 64 * 1024 {
            break;
        }
    }
    let retry_after = retry_after.or_else(|| body_retry_delay(&body));
    (status, retry_after, body)
}

/// The most a token endpoint's answer may hold. A token answer is a few kilobytes of JSON; a
/// bigger one is a wrong or hostile endpoint, which must not fill memory.
pub(crate) const MAX_TOKEN_BYTES: usize = 1024 * 1024;

/// Why a token endpoint's answer could not be read whole.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TokenBody {
    #[error("the answer is larger than {} KiB; reading stopped", MAX_TOKEN_BYTES / 1024)]
    TooLarge,
    #[error("the answer stalled: nothing for {}s", .0.as_secs_f64())]
    Stalled(Duration),
    #[error("reading the answer failed: {0}")]
    Read(String),
}

impl TokenBody {
    /// One too large will be again (an endpoint that is not a token service, refused like a
    /// wrong one); a stall or a broken read may pass.
    pub(crate) fn kind(&self) -> super::Failure {
        match self {
            TokenBody::TooLarge => super::Failure::Auth,
            TokenBody::Stalled(_) => super::Failure::Stalled,
            TokenBody::Read(_) => super::Failure::Network,
        }
    }
}

/// A token endpoint's whole answer, read piece by piece: at most [`MAX_TOKEN_BYTES`], and each
/// piece within `idle`, so an endless or trickling answer ends rather than filling memory or
/// holding the run (the wait around fetching a token bounds it as a whole too, but not its size).
pub(crate) async fn token_body(
    response: reqwest::Response,
    idle: Duration,
) -> Result<Vec<u8>, TokenBody> {
    use futures_util::StreamExt;
    if response
        .content_length()
        .is_some_and(|n| n > MAX_TOKEN_BYTES as u64)
    {
        return Err(TokenBody::TooLarge);
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    loop {
        let next = tokio::time::timeout(idle, stream.next())
            .await
            .map_err(|_| TokenBody::Stalled(idle))?;
        match next {
            None => return Ok(body),
            Some(Err(e)) => return Err(TokenBody::Read(describe(&e))),
            Some(Ok(chunk)) => {
                if body.len() + chunk.len() > MAX_TOKEN_BYTES {
                    return Err(TokenBody::TooLarge);
                }
                body.extend_from_slice(&chunk);
            }
        }
    }
}

/// A URL as messages show it: scheme, host, port and path, never a query (where a key could
/// be) or user info.
pub(crate) fn shown_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => {
            let port = u.port().map(|p| format!(":{p}")).unwrap_or_default();
            format!(
                "{}://{}{port}{}",
                u.scheme(),
                u.host_str().unwrap_or(""),
                u.path()
            )
        }
        Err(_) => "(an unparsable URL)".to_owned(),
    }
}

/// A success that is not an event stream (an HTML page from a wrong base URL, a JSON error, a
/// proxy's login page) fails at once, saying what came back, instead of being retried as a
/// broken stream.
async fn expect_event_stream(
    provider: &str,
    shown: &str,
    response: reqwest::Response,
) -> Result<reqwest::Response, ProviderError> {
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let essence = content_type.split(';').next().unwrap_or("").trim();
    if essence.is_empty() || essence.eq_ignore_ascii_case("text/event-stream") {
        return Ok(response);
    }
    let status = response.status();
    let mut head = Vec::new();
    let mut stream = response.bytes_stream();
    use futures_util::StreamExt;
    while let Some(Ok(chunk)) = stream.next().await {
        head.extend_from_slice(&chunk);
        if head.len() >= 200 {
            break;
        }
    }
    head.truncate(200);
    Err(ProviderError::Protocol {
        provider: provider.to_owned(),
        message: format!(
            "POST {shown} answered {status} with {content_type} instead of an event stream \
             (is the base URL right?): {}",
            String::from_utf8_lossy(&head).trim()
        ),
    })
}

/// The provider's own error text from an error body, in whichever shape the provider uses:
/// `{"error":{"message","type"}}` (Anthropic, OpenAI, Gemini), `{"message"}` (vLLM),
/// `{"error":"…"}` (Ollama native), or plain text.
pub(crate) fn error_text(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let Ok(json) = serde_json::from_str::<serde_json::Value>(text.trim()) else {
        return clip(text.trim(), 500);
    };
    // Gemini sometimes wraps the status object in a one-element list.
    let json = match json {
        serde_json::Value::Array(mut items) if items.len() == 1 => items.remove(0),
        other => other,
    };
    let err = json.get("error").unwrap_or(&json);
    if let Some(s) = err.as_str() {
        return clip(s, 500);
    }
    let message = err.get("message").and_then(|m| m.as_str()).unwrap_or("");
    let kind = ["type", "status", "code"]
        .iter()
        .find_map(|k| err.get(*k).and_then(|v| v.as_str()));
    match (message, kind) {
        ("", None) => clip(text.trim(), 500),
        ("", Some(kind)) => kind.to_owned(),
        (m, Some(kind)) => format!("{} ({kind})", clip(m, 500)),
        (m, None) => clip(m, 500),
    }
}

/// `retry-after-ms` (milliseconds), else `retry-after` in seconds (fractions allowed). HTTP-date
/// forms are ignored: backoff applies instead.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok())
        && let Ok(wait) = Duration::try_from_secs_f64(ms / 1000.0)
    {
        return Some(wait);
    }
    let secs = get("retry-after")?.trim().parse::<f64>().ok()?;
    // A negative, infinite or absurd value is no hint: backoff applies.
    Duration::try_from_secs_f64(secs).ok()
}

/// Gemini's retry hint lives in the error body: `{"error":{"details":[{"@type":
/// "type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}`.
fn body_retry_delay(body: &[u8]) -> Option<Duration> {
    let json: serde_json::Value = serde_json::from_slice(body).ok()?;
    let json = json.as_array().and_then(|a| a.first()).unwrap_or(&json);
    let details = json.get("error")?.get("details")?.as_array()?;
    details.iter().find_map(|d| {
        let delay = d.get("retryDelay")?.as_str()?.strip_suffix('s')?;
        Duration::try_from_secs_f64(delay.parse::<f64>().ok()?).ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_of_ours_that_cannot_be_built_is_a_setup_error_not_the_network() {
        let client = client().unwrap();
        let err = client
            .post("http://127.0.0.1:9/x")
            .header("x-api-key", "a\nb")
            .build()
            .unwrap_err();
        let e = transport("anthropic", "http://127.0.0.1:9/x", &err);
        assert_eq!(e.kind(), super::super::Failure::Config, "{e}");
        assert!(!e.is_retryable());
        let e = secret_header("openai", "the API key", "Bearer a\rb").unwrap_err();
        assert_eq!(e.kind(), super::super::Failure::Config, "{e}");
        assert!(e.to_string().contains("the API key") && !e.to_string().contains("a\rb"));
    }

    #[test]
    fn error_text_reads_each_provider_shape() {
        let anthropic = br#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
        assert_eq!(
            error_text(anthropic),
            "invalid x-api-key (authentication_error)"
        );
        let gemini = br#"[{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT"}}]"#;
        assert_eq!(error_text(gemini), "API key not valid. (INVALID_ARGUMENT)");
        let vllm =
            br#"{"object":"error","message":"bad model","type":"BadRequestError","code":400}"#;
        assert_eq!(error_text(vllm), "bad model (BadRequestError)");
        assert_eq!(
            error_text(br#"{"error":"model not found"}"#),
            "model not found"
        );
        assert_eq!(error_text(b"  upstream exploded \n"), "upstream exploded");
        assert_eq!(error_text(b""), "");
    }

    #[test]
    fn gemini_retry_delay_is_read_from_the_body() {
        let body = br#"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}"#;
        assert_eq!(body_retry_delay(body), Some(Duration::from_secs(37)));
        assert_eq!(body_retry_delay(b"{}"), None);
    }

    #[test]
    fn retry_after_prefers_milliseconds() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn absurd_retry_hints_are_ignored_not_a_panic() {
        for value in ["1e300", "-5", "inf", "NaN"] {
            let mut h = HeaderMap::new();
            h.insert("retry-after", HeaderValue::from_static(value));
            h.insert("retry-after-ms", HeaderValue::from_static(value));
            assert_eq!(retry_after(&h), None, "{value}");
        }
        let body = br#"{"error":{"details":[{"retryDelay":"1e300s"}]}}"#;
        assert_eq!(body_retry_delay(body), None);
    }
}
