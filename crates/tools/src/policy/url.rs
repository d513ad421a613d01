//! URL patterns. A rule pattern written as a URL, `[user@]scheme://host[:port]/path`, is matched
//! against the parts of the parsed URL, never against its text. As text,
//! `http://*.example.com/*` allowed `http://localhost:18080/x.example.com/` (the `*` reached
//! across the host into the path), `https://docs.rs/serde/*` allowed `https://docs.rs/serde/../x`,
//! and `https://docs.rs*` allowed `https://docs.rs@evil.example/`, whose host is evil.example.
//! Parsing resolves `.` and `..` segments (also `%2e%2e`), lower-cases the host, drops a default
//! port and sets user info apart, as the request will be sent.
//!
//! - the scheme is a glob on the scheme (`http*` matches `http` and `https`);
//! - a user, when written (`ssh://git@github.com/*`), is a glob on the URL's user name; without
//!   one, user info does not matter;
//! - the host is a glob on the host alone (`*.example.com` matches `a.b.example.com`, not
//!   `example.com` and not `example.com.evil.org`);
//! - a port, when written, is a glob on the port (`*` any); without one the URL must use its
//!   scheme's default port;
//! - the path is a glob on the path plus `?query` when there is one, where `*` matches anything,
//!   `/` included; without a path the pattern means `/`.

use globset::{GlobBuilder, GlobMatcher};
use reqwest::Url;

/// Why a pattern written as a URL cannot be matched reliably.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum UrlPatternError {
    #[error("a URL pattern needs a host (`*` for any host)")]
    NoHost,
    #[error("cannot read the host and port {0:?}")]
    HostPort(String),
    #[error("unclosed '[' in the host {0:?}")]
    UnclosedBracket(String),
    #[error("an empty port in {0:?}")]
    EmptyPort(String),
    #[error("{}", .0.kind())]
    Glob(#[from] globset::Error),
}

#[derive(Debug, Clone)]
pub(super) struct UrlPattern {
    scheme: GlobMatcher,
    /// `None`: any user info, or none.
    user: Option<GlobMatcher>,
    host: GlobMatcher,
    /// `None`: the URL must use its scheme's default port.
    port: Option<GlobMatcher>,
    path: GlobMatcher,
}

impl UrlPattern {
    /// The pattern as a URL pattern; `Ok(None)` when it is not written as one (nothing that
    /// looks like a scheme before `://`), an error when it is but cannot be matched reliably.
    pub(super) fn parse(pattern: &str) -> Result<Option<UrlPattern>, UrlPatternError> {
        let Some((scheme, rest)) = pattern.split_once("://") else {
            return Ok(None);
        };
        let scheme_like = |c: char| c.is_ascii_alphanumeric() || "+-.*?[]".contains(c);
        if scheme.is_empty() || !scheme.chars().all(scheme_like) {
            return Ok(None);
        }
        let (authority, path) = match rest.find('/') {
            Some(at) => rest.split_at(at),
            None => (rest, "/"),
        };
        let (user, authority) = match authority.rsplit_once('@') {
            Some((user, rest)) => (Some(user), rest),
            None => (None, authority),
        };
        let (host, port) = split_port(authority)?;
        if host.is_empty() {
            return Err(UrlPatternError::NoHost);
        }
        let host = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            // An IPv6 literal: its brackets are part of the host, not a glob class.
            Some(v6) => format!("\\[{}\\]", v6.to_ascii_lowercase()),
            None => host.to_ascii_lowercase(),
        };
        Ok(Some(UrlPattern {
            scheme: glob(&scheme.to_ascii_lowercase(), true)?,
            user: user.map(|u| glob(u, true)).transpose()?,
            host: glob(&host, true)?,
            port: port.map(|p| glob(p, true)).transpose()?,
            path: glob(path, false)?,
        }))
    }

    /// Whether the parsed `url` lies within the pattern.
    pub(super) fn matches(&self, url: &Url) -> bool {
        let Some(host) = url.host_str() else {
            return false;
        };
        let port = match &self.port {
            None => url.port().is_none(),
            Some(glob) => url
                .port_or_known_default()
                .is_some_and(|p| glob.is_match(p.to_string())),
        };
        let target = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        };
        self.scheme.is_match(url.scheme())
            && self
                .user
                .as_ref()
                .is_none_or(|u| u.is_match(url.username()))
            && self.host.is_match(host)
            && port
            && self.path.is_match(target)
    }
}

/// `host:port`, `[v6]:port`, or a host alone.
fn split_port(authority: &str) -> Result<(&str, Option<&str>), UrlPatternError> {
    let (host, port) = if authority.starts_with('[') {
        match authority.find(']') {
            Some(end) => {
                let (host, rest) = authority.split_at(end + 1);
                match rest.strip_prefix(':') {
                    Some(port) => (host, Some(port)),
                    None if rest.is_empty() => (host, None),
                    None => return Err(UrlPatternError::HostPort(authority.to_owned())),
                }
            }
            None => return Err(UrlPatternError::UnclosedBracket(authority.to_owned())),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if port.is_some_and(str::is_empty) {
        return Err(UrlPatternError::EmptyPort(authority.to_owned()));
    }
    Ok((host, port))
}

/// `literal_separator`: whether `*` stops at `/` (it never meets one in a scheme, host or port).
fn glob(text: &str, literal_separator: bool) -> Result<GlobMatcher, UrlPatternError> {
    Ok(GlobBuilder::new(text)
        .literal_separator(literal_separator)
        .backslash_escape(true)
        .build()?
        .compile_matcher())
}
