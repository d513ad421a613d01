//! Which requests go through a proxy. `web_fetch` decides this itself, rather than leaving it to
//! reqwest, because what may be reached depends on it: a proxy named in the environment is the
//! user's choice, so the connection *to the proxy* may go to an inside address, while every
//! other connection gets the public-only check for its own host, also when that host has the
//! proxy's name (`HTTPS_PROXY=http://localhost:3128` must not open `http://localhost:18080/`).
//! Each route has its own client (`web::client_for`): the proxied one sends every request to its
//! proxy and trusts only the proxy's name, the direct one uses no proxy and trusts no name, so the
//! route decided here is the route taken.
//!
//! The variables are read as curl and reqwest read them: `HTTP_PROXY`/`http_proxy` for http
//! URLs, `HTTPS_PROXY`/`https_proxy` for https, `ALL_PROXY`/`all_proxy` for either when its own is
//! not set, the upper-case name first; none at all in a CGI environment (`REQUEST_METHOD` set,
//! where `HTTP_PROXY` may come from a request header). `NO_PROXY`/`no_proxy` lists hosts that
//! bypass the proxy: `*` for all, IP addresses and networks (`10.0.0.0/8`), and domains, which
//! cover their subdomains (`example.com` and `.example.com` both cover `a.example.com`). Only
//! http and https proxies are used; one with another scheme (SOCKS, which this build of reqwest
//! cannot speak) counts as none, so requests go direct and are checked.

use std::net::IpAddr;

use reqwest::Url;

/// The proxies of the environment and who bypasses them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Proxies {
    http: Option<Url>,
    https: Option<Url>,
    bypass: Vec<Bypass>,
}

#[derive(Debug, Clone, PartialEq)]
enum Bypass {
    All,
    /// An address and how many leading bits must agree.
    Net(IpAddr, u8),
    /// A domain, lower-case, without a leading dot.
    Domain(String),
}

impl Proxies {
    pub(crate) fn from_env() -> Proxies {
        Proxies::from_vars(crate::env::var)
    }

    /// Reads the variables through `var` (tests pass their own).
    pub(crate) fn from_vars(var: impl Fn(&str) -> Option<String>) -> Proxies {
        if var("REQUEST_METHOD").is_some() {
            return Proxies::default();
        }
        let first = |names: [&str; 2]| names.iter().find_map(|name| var(name));
        let all = first(["ALL_PROXY", "all_proxy"]).and_then(|v| proxy_url(&v));
        let own = |names| first(names).and_then(|v| proxy_url(&v)).or(all.clone());
        Proxies {
            http: own(["HTTP_PROXY", "http_proxy"]),
            https: own(["HTTPS_PROXY", "https_proxy"]),
            bypass: first(["NO_PROXY", "no_proxy"])
                .map(|list| list.split(',').filter_map(bypass).collect())
                .unwrap_or_default(),
        }
    }

    /// The proxy a request for `url` goes through, or `None` when it goes straight to the host.
    pub(crate) fn route(&self, url: &Url) -> Option<&Url> {
        let host = url.host_str()?;
        if self.bypass.iter().any(|b| b.covers(host)) {
            return None;
        }
        match url.scheme() {
            "http" => self.http.as_ref(),
            "https" => self.https.as_ref(),
            _ => None,
        }
    }

    /// Every proxy requests may go through, each once.
    pub(crate) fn all(&self) -> Vec<&Url> {
        let mut all: Vec<&Url> = self.http.iter().chain(&self.https).collect();
        all.dedup();
        all
    }
}

/// A proxy variable's value as a URL (`host:port` means `http://host:port`), when it names an
/// http or https proxy with a host.
fn proxy_url(value: &str) -> Option<Url> {
    let value = value.trim();
    let url = if value.contains("://") {
        Url::parse(value)
    } else {
        Url::parse(&format!("http://{value}"))
    }
    .ok()?;
    (matches!(url.scheme(), "http" | "https") && url.host_str().is_some()).then_some(url)
}

fn bypass(entry: &str) -> Option<Bypass> {
    let entry = entry.trim();
    if entry.is_empty() {
        return None;
    }
    if entry == "*" {
        return Some(Bypass::All);
    }
    let (addr, bits) = match entry.split_once('/') {
        Some((addr, bits)) => (addr, bits.parse::<u8>().ok()),
        None => (entry, None),
    };
    if let Ok(ip) = addr.trim_matches(['[', ']']).parse::<IpAddr>() {
        let max = if ip.is_ipv4() { 32 } else { 128 };
        return Some(Bypass::Net(ip, bits.unwrap_or(max).min(max)));
    }
    let domain = entry.trim_start_matches('.').to_ascii_lowercase();
    (!domain.is_empty()).then_some(Bypass::Domain(domain))
}

impl Bypass {
    fn covers(&self, host: &str) -> bool {
        let host = host.trim_matches(['[', ']']);
        match self {
            Bypass::All => true,
            Bypass::Net(net, bits) => host
                .parse::<IpAddr>()
                .is_ok_and(|ip| same_prefix(ip, *net, *bits)),
            Bypass::Domain(domain) => {
                let host = host.to_ascii_lowercase();
                host == *domain
                    || host
                        .strip_suffix(domain.as_str())
                        .is_some_and(|rest| rest.ends_with('.'))
            }
        }
    }
}

fn same_prefix(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    let (a, b, width) = match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(b)) => (u128::from(a.to_bits()), u128::from(b.to_bits()), 32),
        (IpAddr::V6(a), IpAddr::V6(b)) => (a.to_bits(), b.to_bits(), 128),
        _ => return false,
    };
    let bits = u32::from(bits);
    bits == 0 || (a ^ b) >> (width - bits) == 0
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn proxies(vars: &[(&str, &str)]) -> Proxies {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Proxies::from_vars(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    }

    fn route(p: &Proxies, url: &str) -> Option<String> {
        p.route(&Url::parse(url).unwrap()).map(Url::to_string)
    }

    /// Each row: the environment, a URL, and the proxy it goes through (`None`: direct, and so
    /// checked for its own host). The first rows are issue 12 §4's.
    #[test]
    fn routes_follow_the_variables_as_curl_reads_them() {
        let proxy = Some("http://localhost:3128/".to_owned());
        type Row<'a> = (&'a [(&'a str, &'a str)], &'a str, Option<String>);
        let table: &[Row] = &[
            (
                &[("HTTPS_PROXY", "http://localhost:3128")],
                "http://localhost:18080/",
                None,
            ),
            (
                &[("HTTPS_PROXY", "http://localhost:3128")],
                "https://localhost:18080/",
                proxy.clone(),
            ),
            (
                &[("HTTP_PROXY", "localhost:3128"), ("NO_PROXY", "localhost")],
                "http://localhost:1/",
                None,
            ),
            (
                &[("HTTP_PROXY", "localhost:3128"), ("NO_PROXY", "localhost")],
                "http://a.localhost/",
                None,
            ),
            (
                &[("HTTP_PROXY", "localhost:3128"), ("NO_PROXY", "localhost")],
                "http://xlocalhost/",
                proxy.clone(),
            ),
            (
                &[
                    ("HTTP_PROXY", "localhost:3128"),
                    ("NO_PROXY", ".Example.COM"),
                ],
                "http://www.example.com/",
                None,
            ),
            (
                &[
                    ("HTTP_PROXY", "localhost:3128"),
                    ("NO_PROXY", ".example.com"),
                ],
                "http://example.com/",
                None,
            ),
            (
                &[
                    ("HTTP_PROXY", "localhost:3128"),
                    ("NO_PROXY", "example.com"),
                ],
                "http://example.com.evil.org/",
                proxy.clone(),
            ),
            (
                &[("HTTP_PROXY", "localhost:3128"), ("NO_PROXY", " a.org , *")],
                "http://10.0.0.1/",
                None,
            ),
            (
                &[("HTTP_PROXY", "localhost:3128"), ("NO_PROXY", "10.0.0.0/8")],
                "http://10.2.3.4/",
                None,
            ),
            (
                &[("HTTP_PROXY", "localhost:3128"), ("NO_PROXY", "10.0.0.0/8")],
                "http://11.2.3.4/",
                proxy.clone(),
            ),
            (
                &[("HTTP_PROXY", "localhost:3128"), ("NO_PROXY", "::1")],
                "http://[::1]:8/",
                None,
            ),
            (
                &[("HTTP_PROXY", "localhost:3128"), ("NO_PROXY", "fd00::/8")],
                "http://[fd12::1]/",
                None,
            ),
            (
                &[("http_proxy", "http://localhost:3128")],
                "http://x.org/",
                proxy.clone(),
            ),
            (
                &[("HTTP_PROXY", ""), ("http_proxy", "http://localhost:3128")],
                "http://x.org/",
                None,
            ),
            (
                &[("ALL_PROXY", "http://localhost:3128")],
                "https://x.org/",
                proxy.clone(),
            ),
            (
                &[
                    ("ALL_PROXY", "http://other:1"),
                    ("HTTP_PROXY", "http://localhost:3128"),
                ],
                "http://x.org/",
                proxy.clone(),
            ),
            (
                &[("ALL_PROXY", "socks5://localhost:1080")],
                "https://x.org/",
                None,
            ),
            (
                &[
                    ("HTTP_PROXY", "http://localhost:3128"),
                    ("REQUEST_METHOD", "GET"),
                ],
                "http://x.org/",
                None,
            ),
        ];
        for (vars, url, want) in table {
            assert_eq!(route(&proxies(vars), url), *want, "{vars:?} {url}");
        }
    }

    #[test]
    fn every_proxy_is_listed_once() {
        let p = proxies(&[("ALL_PROXY", "http://p:1"), ("HTTPS_PROXY", "http://q:2")]);
        let all: Vec<String> = p.all().into_iter().map(Url::to_string).collect();
        assert_eq!(all, ["http://p:1/", "http://q:2/"]);
        let p = proxies(&[("ALL_PROXY", "http://p:1")]);
        assert_eq!(p.all().len(), 1);
        assert!(proxies(&[]).all().is_empty());
    }
}
