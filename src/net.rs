//! HTTP client setup and error wording shared by the model providers and the web tools, so
//! both speak TLS the same way (rustls with ring), send the same user agent, and describe a
//! failed request the same way.

use std::time::Duration;

/// A client builder with rounds' TLS, user agent and connection timeout; callers add what is
/// theirs (redirect policy, a resolver) and build.
pub(crate) fn builder(connect_timeout: Duration) -> reqwest::ClientBuilder {
    // reqwest is built without a bundled crypto provider; ring is ours. An `Err` means one is
    // already installed, which is all we need.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .user_agent(concat!("rounds/", env!("CARGO_PKG_VERSION")))
}

/// A transport error with its causes (reqwest's top-level message alone says little).
pub(crate) fn describe(e: &reqwest::Error) -> String {
    let mut msg = if e.is_connect() {
        "connection failed".to_owned()
    } else if e.is_timeout() {
        "timed out".to_owned()
    } else {
        "request failed".to_owned()
    };
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        source = s.source();
    }
    msg
}

/// Cuts text for error messages at a character boundary.
pub(crate) fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}
