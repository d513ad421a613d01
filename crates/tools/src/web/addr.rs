//! Which hosts `web_fetch` may reach. The URL comes from the model, and a model can be talked
//! into anything by a page it read, so by default only public addresses are fetched: a CI runner
//! sits next to cloud metadata endpoints (169.254.169.254), databases and admin ports that answer
//! anyone on the inside. `--web-allow-private` lifts this.
//!
//! Names are checked where they are resolved (a [`Resolve`] that drops non-public addresses), so
//! the address that is checked is the address connected to, on every redirect hop; a name that
//! resolves differently the second time (DNS rebinding) gains nothing. IP literals never reach a
//! resolver and are checked per hop by [`refusal`], also on the way through a proxy (which
//! resolves names itself, so behind one only literals can be checked).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// What the model is told when a destination is off limits.
const WHY: &str = "only public addresses can be fetched; loopback, private, link-local and \
                   similar networks are off limits unless rounds runs with --web-allow-private";

/// Whether `ip` is an ordinary public unicast address.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(a == 0                                  // "this network"
        || a == 10                            // private
        || a == 127                           // loopback
        || (a == 100 && (64..128).contains(&b)) // carrier-grade NAT
        || (a == 169 && b == 254)             // link-local, cloud metadata
        || (a == 172 && (16..32).contains(&b)) // private
        || (a == 192 && b == 0 && c == 0)     // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2)     // documentation
        || (a == 192 && b == 168)             // private
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || (a == 198 && b == 51 && c == 100)  // documentation
        || (a == 203 && b == 0 && c == 113)   // documentation
        || a >= 224) // multicast, reserved, broadcast
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    // Addresses that carry an IPv4 address are judged by it: mapped (::ffff:a.b.c.d),
    // compatible (::a.b.c.d), NAT64 (64:ff9b::/96) and 6to4 (2002::/16).
    let embedded = match s {
        [0, 0, 0, 0, 0, 0xffff, hi, lo] | [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some((hi, lo)),
        [0, 0, 0, 0, 0, 0, hi, lo] if hi != 0 => Some((hi, lo)),
        [0x2002, hi, lo, ..] => Some((hi, lo)),
        _ => None,
    };
    if let Some((hi, lo)) = embedded {
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        return is_public_v4(Ipv4Addr::new(a, b, c, d));
    }
    !(ip.is_unspecified()
        || ip.is_loopback()
        || (s[0] & 0xfe00) == 0xfc00 // unique local
        || (s[0] & 0xffc0) == 0xfe80 // link-local
        || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated, still routed inside)
        || (s[0] & 0xff00) == 0xff00 // multicast
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        || (s[0] == 0x0100 && s[1..4] == [0, 0, 0])) // discard-only
}

/// Why `url` may not be fetched, when its host is an IP literal that is not public.
pub(crate) fn refusal(url: &Url) -> Option<String> {
    let host = url.host_str()?;
    let ip: IpAddr = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()?;
    (!is_public(ip)).then(|| format!("refused {url}: {ip} is not a public address; {WHY}"))
}

/// A resolver that hands the connector only the public addresses of a name, except for the
/// `trusted` names: the proxy of the client that uses it, and only for a client that sends every
/// request to that proxy (`web::client_for`), since a proxy on the inside is the user's choice,
/// not the model's; a client that connects straight to destinations trusts no name.
pub(crate) struct PublicOnly {
    pub(crate) trusted: Vec<String>,
}

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        let trusted = self.trusted.iter().any(|t| t.eq_ignore_ascii_case(&host));
        Box::pin(async move {
            let all: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let (public, private): (Vec<SocketAddr>, Vec<SocketAddr>) =
                all.into_iter().partition(|a| trusted || is_public(a.ip()));
            if public.is_empty() && !private.is_empty() {
                let shown: Vec<String> = private.iter().map(|a| a.ip().to_string()).collect();
                return Err(format!(
                    "{host} resolves to {}, not a public address; {WHY}",
                    shown.join(", ")
                )
                .into());
            }
            Ok(Box::new(public.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(text: &str) -> bool {
        is_public(text.parse().unwrap())
    }

    #[test]
    fn inside_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "127.8.9.10",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "240.0.0.1",
            "198.18.0.1",
            "::",
            "::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::10.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:c0a8:0101::1",
        ] {
            assert!(!public(ip), "{ip} counted as public");
        }
    }

    #[test]
    fn ordinary_addresses_are_public() {
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.215.14",
            "172.15.255.255",
            "172.32.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "169.253.1.1",
            "192.169.0.1",
            "223.255.255.254",
            "2606:4700:4700::1111",
            "2a00:1450:4001::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:0808:0808::1",
        ] {
            assert!(public(ip), "{ip} counted as not public");
        }
    }

    #[test]
    fn literal_hosts_are_refused_with_the_reason() {
        let refused = |u: &str| refusal(&Url::parse(u).unwrap());
        let said = refused("http://169.254.169.254/latest/meta-data/").unwrap();
        assert!(
            said.contains("169.254.169.254 is not a public address"),
            "{said}"
        );
        assert!(said.contains("--web-allow-private"), "{said}");
        assert!(refused("http://[::1]:8080/").is_some());
        assert!(
            refused("http://0x7f000001/").is_some(),
            "hex forms are normalized by the URL parser"
        );
        assert!(refused("http://2130706433/").is_some());
        assert_eq!(refused("https://1.1.1.1/"), None);
        assert_eq!(
            refused("https://example.com/"),
            None,
            "names are the resolver's job"
        );
    }

    #[tokio::test]
    async fn the_resolver_keeps_public_addresses_and_names_what_it_refused() {
        let resolver = PublicOnly {
            trusted: Vec::new(),
        };
        let err = resolver
            .resolve("localhost".parse().unwrap())
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(err.starts_with("localhost resolves to "), "{err}");
        assert!(err.contains("127.0.0.1") || err.contains("::1"), "{err}");
        let trusted = PublicOnly {
            trusted: vec!["LOCALHOST".into()],
        };
        let addrs: Vec<SocketAddr> = trusted
            .resolve("localhost".parse().unwrap())
            .await
            .unwrap()
            .collect();
        assert!(addrs.iter().all(|a| a.ip().is_loopback()) && !addrs.is_empty());
    }
}
