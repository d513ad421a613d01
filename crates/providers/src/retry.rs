//! When and how long to wait before asking a provider again.
//!
//! Transient failures (429, 5xx, 529 overloaded, transport errors, stalls, streams cut before
//! their terminal event, errors reported inside a stream) are retried with capped exponential
//! backoff and jitter; a `retry-after` the provider sent is honoured when it is reasonable. A
//! provider that asks for more than `MAX_HONOURED_WAIT` is telling us about a quota, not a blip:
//! that is reported, not slept through.

use std::time::Duration;

use super::ProviderError;

/// The longest `retry-after` that is waited out rather than reported.
pub const MAX_HONOURED_WAIT: Duration = Duration::from_secs(60);
/// The longest backoff between two attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Retries after the first attempt (`--max-retries`).
    pub max_retries: u32,
    /// The first backoff; it doubles with each retry (`--retry-delay`).
    pub base: Duration,
}

impl RetryPolicy {
    /// The wait before retry number `retry` (1 for the first retry) after `error`, or `None`
    /// when the error must not be retried.
    pub fn delay(&self, error: &ProviderError, retry: u32) -> Option<Duration> {
        if retry > self.max_retries || !error.is_retryable() {
            return None;
        }
        if let ProviderError::Http {
            retry_after: Some(wait),
            ..
        } = error
        {
            return (*wait <= MAX_HONOURED_WAIT).then_some(*wait);
        }
        let exp = self.base.saturating_mul(1u32 << (retry - 1).min(16));
        let cap = exp.min(MAX_BACKOFF);
        // Jitter in [cap/2, cap]: clients that failed together do not retry together.
        Some(cap / 2 + cap.mul_f64(jitter() / 2.0))
    }
}

/// A number in [0, 1) that differs between calls and processes.
fn jitter() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16, retry_after: Option<Duration>) -> ProviderError {
        ProviderError::Http {
            provider: "p".into(),
            status,
            message: "m".into(),
            retry_after,
            kind: crate::failure::of_http(status, b""),
        }
    }

    const POLICY: RetryPolicy = RetryPolicy {
        max_retries: 3,
        base: Duration::from_millis(100),
    };

    #[test]
    fn transient_errors_back_off_exponentially_with_jitter_and_stop_after_max() {
        for retry in 1..=3 {
            let cap = Duration::from_millis(100 * (1 << (retry - 1)));
            for _ in 0..50 {
                let d = POLICY.delay(&http(503, None), retry).unwrap();
                assert!(d >= cap / 2 && d <= cap, "retry {retry}: {d:?}");
            }
        }
        assert_eq!(POLICY.delay(&http(503, None), 4), None);
        let long = RetryPolicy {
            max_retries: 40,
            base: Duration::from_secs(1),
        };
        assert!(long.delay(&http(529, None), 30).unwrap() <= MAX_BACKOFF);
    }

    #[test]
    fn retry_after_is_honoured_unless_it_is_a_quota_wait() {
        let d = POLICY.delay(&http(429, Some(Duration::from_millis(1500))), 1);
        assert_eq!(d, Some(Duration::from_millis(1500)));
        assert_eq!(
            POLICY.delay(&http(429, Some(Duration::from_secs(3600))), 1),
            None
        );
    }

    #[test]
    fn client_errors_are_never_retried() {
        for status in [400, 401, 403, 404, 422] {
            assert_eq!(POLICY.delay(&http(status, None), 1), None, "{status}");
        }
        let quota = ProviderError::Http {
            provider: "openai".into(),
            status: 429,
            message: "You exceeded your current quota (insufficient_quota)".into(),
            retry_after: None,
            kind: crate::failure::of_http(
                429,
                br#"{"error":{"message":"You exceeded your current quota","code":"insufficient_quota"}}"#,
            ),
        };
        assert_eq!(POLICY.delay(&quota, 1), None);
        let protocol = ProviderError::Protocol {
            provider: "p".into(),
            message: "m".into(),
        };
        assert_eq!(POLICY.delay(&protocol, 1), None);
        let idle = ProviderError::Idle {
            provider: "p".into(),
            after: Duration::from_secs(1),
        };
        assert!(POLICY.delay(&idle, 1).is_some());
    }
}
