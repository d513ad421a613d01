//! What kind of failure a provider error is, decided once where the error is made: from the
//! HTTP status and the provider's own error body (its `type`, `code` or `status` field, and for
//! the context window, the words each provider uses), never re-read from a message later. Retry
//! decisions, the context squeeze, a run's failure record and its exit status all read this.

use serde_json::Value;

// The kinds are the run's (`outcome`, where the failure record and the exit status read them);
// deciding which one a provider's error is happens here.
pub(crate) use crate::outcome::Failure;

/// The kind of an HTTP error: its status, refined by the error body (JSON, as each provider
/// writes it; anything else is left to the status).
pub(crate) fn of_http(status: u16, body: &[u8]) -> Failure {
    let json: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    // Gemini sometimes wraps its error in a one-element list.
    let json = match json {
        Value::Array(mut items) if items.len() == 1 => items.remove(0),
        other => other,
    };
    let error = &json["error"];
    let field = |name: &str| error[name].as_str().unwrap_or("").to_ascii_lowercase();
    let (kind, code) = (field("type"), field("code"));
    let message = match error["message"].as_str() {
        Some(m) => m.to_ascii_lowercase(),
        None => String::from_utf8_lossy(body).to_ascii_lowercase(),
    };
    if matches!(status, 400 | 413) && overflows(&code, &message) {
        return Failure::ContextTooLong;
    }
    let details = error["details"].as_array().map_or(&[][..], Vec::as_slice);
    // Gemini answers a bad key with 400 INVALID_ARGUMENT, its reason API_KEY_INVALID.
    if details.iter().any(|d| d["reason"] == "API_KEY_INVALID") {
        return Failure::Auth;
    }
    let says_when = details.iter().any(|d| d.get("retryDelay").is_some());
    match status {
        401 | 403 => Failure::Auth,
        404 => Failure::NotFound,
        429 if spent(&kind, &code, &message, says_when) => Failure::Quota,
        429 => Failure::RateLimited,
        // 503 is "Service Unavailable" from every provider and proxy: overloaded, not broken.
        503 | 529 => Failure::Overloaded,
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

/// A 429 that a retry's wait will not cure. `says_when`: the body tells when to come back
/// (Gemini's `RetryInfo`).
fn spent(kind: &str, code: &str, message: &str, says_when: bool) -> bool {
    kind == "insufficient_quota"
        || code == "insufficient_quota"
        || message.contains("insufficient_quota")
        || message.contains("perday")
        // OpenAI's words for a spent balance; Gemini says them of its per-minute limits too,
        // with a RetryInfo saying when the quota is back.
        || (message.contains("exceeded your current quota") && !says_when)
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
            (503, "busy", Failure::Overloaded),
            (500, "oops", Failure::ServerError),
            (
                400,
                r#"[{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}]"#,
                Failure::Auth,
            ),
            (
                429,
                r#"{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}"#,
                Failure::RateLimited,
            ),
            (
                429,
                r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota"}}"#,
                Failure::Quota,
            ),
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
                crate::failure::of_http(*status, body.as_bytes()),
                *want,
                "{status} {body}"
            );
        }
        assert!(Failure::RateLimited.retryable() && !Failure::Quota.retryable());
        assert!(!Failure::ContextTooLong.retryable() && !Failure::Auth.retryable());
        assert_eq!(
            crate::failure::of_stream("overloaded_error"),
            Failure::Overloaded
        );
        assert_eq!(crate::failure::of_stream("api_error"), Failure::ServerError);
    }
}
