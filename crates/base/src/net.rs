//! HTTP client setup and error wording shared by the model providers and the web tools, so
//! both speak TLS the same way (rustls with ring), send the same user agent, and describe a
//! failed request the same way.

use std::time::Duration;

/// A client builder with rounds' TLS, user agent and connection timeout; callers add what is
/// theirs (redirect policy, a resolver) and build.
pub fn builder(connect_timeout: Duration) -> reqwest::ClientBuilder {
    // reqwest is built without a bundled crypto provider; ring is ours. An `Err` means one is
    // already installed, which is all we need.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .user_agent(concat!("rounds/", env!("CARGO_PKG_VERSION")))
}

/// A transport error with its causes (reqwest's top-level message alone says little).
pub fn describe(e: &reqwest::Error) -> String {
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
pub fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Why a credential cannot go into an HTTP header as it is. The reason names a position and a
/// class of character, never the character or the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unsendable {
    #[error("is blank")]
    Blank,
    #[error("holds {what} at character {at}")]
    Char { what: &'static str, at: usize },
}

/// `value` as rounds sends it: surrounding whitespace dropped (a pasted CI secret's newline, an
/// editor's), the rest checked to be visible ASCII. Keys and tokens are all visible ASCII;
/// anything else is a paste gone wrong. reqwest would refuse a control byte only when the request
/// is built, which reads as a network failure and is retried, and would send non-ASCII bytes as
/// they are, to be refused by the server: both are the user's to fix, so both are caught here,
/// before any request.
pub fn credential(value: &str) -> Result<&str, Unsendable> {
    let value = value.trim();
    if value.is_empty() {
        return Err(Unsendable::Blank);
    }
    for (i, c) in value.chars().enumerate() {
        let what = match c {
            '!'..='~' => continue,
            '\n' | '\r' => "a line break",
            c if c.is_whitespace() => "whitespace",
            c if c.is_control() => "a control character",
            _ => "a non-ASCII character",
        };
        return Err(Unsendable::Char { what, at: i + 1 });
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_trimmed_and_unsendable_ones_named_without_their_value() {
        for (given, sent) in [
            ("sk-1\n", "sk-1"),
            ("sk-1\r\n", "sk-1"),
            ("  sk-1", "sk-1"),
            ("\tsk-1 \n", "sk-1"),
            ("a/b+c=", "a/b+c="),
        ] {
            assert_eq!(credential(given), Ok(sent), "{given:?}");
        }
        for (given, what) in [
            ("sk-\n1", "a line break"),
            ("sk-\r1", "a line break"),
            ("sk-\x001", "a control character"),
            ("sk-\x1b1", "a control character"),
            ("sk- 1", "whitespace"),
            ("sk-é1", "a non-ASCII character"),
        ] {
            let err = credential(given).unwrap_err();
            assert_eq!(err, Unsendable::Char { what, at: 4 }, "{given:?}");
            assert!(!err.to_string().contains("sk-"), "{err}");
        }
        assert_eq!(credential(" \n"), Err(Unsendable::Blank));
    }
}
