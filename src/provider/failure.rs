//! What kind of failure a provider error is, decided once where the error is made: from the
//! HTTP status and the provider's own error body (its `type`, `code` or `status` field, and for
//! the context window, the words each provider uses), never re-read from a message later. Retry
//! decisions, the context squeeze and a run's failure record all read this.

use serde::Serialize;
use serde_json::Value;

/// The kinds of provider failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Failure {
    /// The key is missing, wrong or lacks the right (401, 403).
    Auth,
    /// Too many requests for now (429).
    RateLimited,
    /// A spent quota or billing limit: it does not come back within a retry's wait.
    Quota,
    /// The provider is overloaded (529, Anthropic's `overloaded_error`, 503).
    Overloaded,
    /// The provider failed (5xx, 408, 409, an error inside a stream).
    ServerError,
    /// Connecting, sending or reading failed, or the stream closed early.
    Network,
    /// No content for longer than the idle timeout.
    Stalled,
    /// The request is longer than the model's context window.
    ContextTooLong,
    /// The model or endpoint does not exist (404).
    NotFound,
    /// The provider rejected the request as it is (other 4xx).
    InvalidRequest,
    /// The provider declined the request itself (a blocked prompt).
    Refused,
    /// The stream broke its protocol.
    Protocol,
    /// The response carried more content than one response may.
    TooLarge,
    /// The replay has nothing more to play.
    Replay,
}

impl Failure {
    /// Whether the same request may succeed if tried again.
    pub(crate) fn retryable(self) -> bool {
        matches!(
            self,
            Failure::RateLimited
                | Failure::Overloaded
                | Failure::ServerError
                | Failure::Network
                | Failure::Stalled
        )
    }

    /// The kind of an HTTP error: its status, refined by the error body (JSON, as each provider
    /// writes it; anything else is left to the status).
    pub(crate) fn of_http(status: u16, body: &[u8]) -> Failure {
        let json: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let error = &json["error"];
        let field = |name: &str| error[name].as_str().unwrap_or("").to_ascii_lowercase();
        let (kind, code, grpc) = (field("type"), field("code"), field("status"));
        let message = match error["message"].as_str() {
            Some(m) => m.to_ascii_lowercase(),
            None => String::from_utf8_lossy(body).to_ascii_lowercase(),
        };
        if matches!(status, 400 | 413) && overflows(&code, &message) {
            return Failure::ContextTooLong;
        }
        match status {
            401 | 403 => Failure::Auth,
            404 => Failure::NotFound,
            429 if spent(&kind, &code, &message) => Failure::Quota,
            429 => Failure::RateLimited,
            529 => Failure::Overloaded,
            503 if kind == "overloaded_error" || grpc == "unavailable" => Failure::Overloaded,
            408 | 409 | 500..=599 => Failure::ServerError,
            _ => Failure::InvalidRequest,
        }
    }

    /// The kind of an error a provider reported inside a stream, by its `type` (Anthropic's
    /// `overloaded_error`, …): a server error unless it says otherwise.
    pub(crate) fn of_stream(kind: &str) -> Failure {
        match kind {
            "overloaded_error" => Failure::Overloaded,
            "rate_limit_error" => Failure::RateLimited,
            "authentication_error" | "permission_error" => Failure::Auth,
            _ => Failure::ServerError,
        }
    }
}

/// Each provider's words for a request longer than the window.
fn overflows(code: &str, message: &str) -> bool {
    code == "context_length_exceeded"
        || [
            "prompt is too long",
            "context_length_exceeded",
            "maximum context length",
            "exceeds the maximum number of tokens",
            "exceeds the available context size",
            "exceed_context_size",
            "context window",
        ]
        .iter()
        .any(|phrase| message.contains(phrase))
}

/// A 429 that a retry's wait will not cure.
fn spent(kind: &str, code: &str, message: &str) -> bool {
    kind == "insufficient_quota"
        || code == "insufficient_quota"
        || message.contains("insufficient_quota")
        || message.contains("exceeded your current quota")
        || message.contains("perday")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_bodies_classify_once() {
        let cases: &[(u16, &str, Failure)] = &[
            (401, r#"{"error":{"message":"bad key"}}"#, Failure::Auth),
            (403, "", Failure::Auth),
            (
                404,
                r#"{"error":{"type":"not_found_error"}}"#,
                Failure::NotFound,
            ),
            (
                429,
                r#"{"error":{"type":"rate_limit_error"}}"#,
                Failure::RateLimited,
            ),
            (
                429,
                r#"{"error":{"code":"insufficient_quota"}}"#,
                Failure::Quota,
            ),
            (
                429,
                r#"{"error":{"status":"RESOURCE_EXHAUSTED","message":"Quota exceeded for GenerateRequestsPerDay"}}"#,
                Failure::Quota,
            ),
            (
                529,
                r#"{"error":{"type":"overloaded_error"}}"#,
                Failure::Overloaded,
            ),
            (
                503,
                r#"{"error":{"status":"UNAVAILABLE"}}"#,
                Failure::Overloaded,
            ),
            (500, "oops", Failure::ServerError),
            (408, "", Failure::ServerError),
            (
                400,
                r#"{"error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
                Failure::ContextTooLong,
            ),
            (
                400,
                r#"{"error":{"code":"context_length_exceeded"}}"#,
                Failure::ContextTooLong,
            ),
            (
                413,
                "the request exceeds the available context size",
                Failure::ContextTooLong,
            ),
            (
                400,
                r#"{"error":{"message":"unknown field"}}"#,
                Failure::InvalidRequest,
            ),
            (422, "", Failure::InvalidRequest),
        ];
        for (status, body, want) in cases {
            assert_eq!(
                Failure::of_http(*status, body.as_bytes()),
                *want,
                "{status} {body}"
            );
        }
        assert!(Failure::RateLimited.retryable() && !Failure::Quota.retryable());
        assert!(!Failure::ContextTooLong.retryable() && !Failure::Auth.retryable());
        assert_eq!(Failure::of_stream("overloaded_error"), Failure::Overloaded);
        assert_eq!(Failure::of_stream("api_error"), Failure::ServerError);
    }
}
