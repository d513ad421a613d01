//! `web_fetch` through the real binary: a model pointed at an address on the inside (here the
//! loopback, standing for 169.254.169.254 or an admin port) gets an error result and the server
//! never sees a request, unless the run was started with `--web-allow-private`; a proxy's name is
//! trusted only on the connection that goes to the proxy; and a URL rule holds on every redirect
//! hop and is matched against the URL's parsed parts, not its text.

use crate::common::mock::{MockServer, Reply, Step};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run};
use pretty_assertions::assert_eq;
use serde_json::Value;

/// One round calling `web_fetch` on `url`, then a final answer; returns the call's result.
fn fetch(url: &str, extra: &[&str]) -> Value {
    fetch_with(url, extra, &[])
}

/// [`fetch`] with environment variables set for rounds (the proxy variables, here).
fn fetch_with(url: &str, extra: &[&str], env: &[(&str, &str)]) -> Value {
    let sb = Sandbox::new();
    let input = serde_json::json!({ "url": url }).to_string();
    let server = MockServer::start(vec![
        Reply::sse(sse::anthropic(
            &[B::Tool("w1", "web_fetch", &input)],
            "tool_use",
            10,
            5,
        )),
        Reply::sse(sse::anthropic(&[B::Text("done")], "end_turn", 10, 5)),
    ]);
    let mut cmd = sb.anthropic(&server);
    cmd.envs(env.iter().copied());
    let out = run(cmd
        .args(["-a", "web_fetch", "--transcript"])
        .arg(sb.transcript_path())
        .args(extra)
        .arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    sb.transcript()[1]["results"][0].clone()
}

fn content(result: &Value) -> &str {
    result["content"].as_str().unwrap_or_default()
}

/// A server on the inside that gives its secret to whoever asks.
fn inside() -> MockServer {
    MockServer::start(vec![Reply::error(200, r#"{"secret":"inside"}"#)])
}

fn redirect(location: &str) -> Reply {
    Reply {
        status: 302,
        headers: vec![("location".into(), location.into())],
        body: vec![Step::Bytes(Vec::new())],
    }
}

#[test]
fn inside_addresses_are_fetched_only_with_web_allow_private() {
    let inside = inside();
    for url in [inside.url(), inside.url().replace("127.0.0.1", "localhost")] {
        let result = fetch(&url, &[]);
        assert_eq!(result["is_error"], true, "{result}");
        assert_eq!(result["error_kind"], "failed");
        let said = content(&result);
        assert!(
            said.contains("not a public address") && said.contains("--web-allow-private"),
            "{said}"
        );
    }
    assert_eq!(
        inside.requests().len(),
        0,
        "a refused fetch reached the server"
    );

    let result = fetch(&inside.url(), &["--web-allow-private"]);
    assert_eq!(result["is_error"], false, "{result}");
    assert!(content(&result).contains(r#"{"secret":"inside"}"#));
    assert_eq!(inside.requests().len(), 1);
}

/// Issue 12 §4: the proxy's host name was trusted on every connection, so a URL that does not
/// go through the proxy (another scheme, NO_PROXY, a CGI environment where reqwest ignores
/// HTTP_PROXY) reached a loopback service by that name. Nothing listens on port 3128: only the
/// direct connection can reach the secret. (NO_PROXY names 127.0.0.1 wherever HTTP_PROXY
/// applies, for rounds' own requests to the mock provider.)
#[test]
fn a_proxy_name_is_trusted_only_on_the_connection_to_the_proxy() {
    let table: &[&[(&str, &str)]] = &[
        &[("HTTPS_PROXY", "http://localhost:3128")],
        &[("https_proxy", "localhost:3128")],
        &[("HTTPS_PROXY", "http://LOCALHOST:3128")],
        &[("HTTPS_PROXY", "http://user:pw@localhost:3128")],
        &[
            ("HTTP_PROXY", "http://localhost:3128"),
            ("NO_PROXY", "localhost,127.0.0.1"),
        ],
        // reqwest's `*` covers names only: the provider's 127.0.0.1 is listed as well.
        &[
            ("http_proxy", "http://localhost:3128"),
            ("no_proxy", "127.0.0.1,*"),
        ],
        &[
            ("ALL_PROXY", "http://localhost:3128"),
            ("NO_PROXY", ".localhost,localhost,127.0.0.1"),
        ],
        &[
            ("HTTP_PROXY", "http://localhost:3128"),
            ("REQUEST_METHOD", "GET"),
        ],
    ];
    for env in table {
        let inside = inside();
        let url = inside.url().replace("127.0.0.1", "localhost") + "/admin";
        let result = fetch_with(&url, &[], env);
        assert_eq!(result["is_error"], true, "{env:?}: {result}");
        let said = content(&result);
        assert!(
            said.contains("localhost resolves to") && said.contains("not a public address"),
            "{env:?}: {said}"
        );
        assert_eq!(inside.requests().len(), 0, "{env:?} reached the inside");

        // CONTROL: with the boundary off, the same fetch in the same environment does reach it.
        let control = fetch_with(&url, &["--web-allow-private"], env);
        assert_eq!(control["is_error"], false, "{env:?}: {control}");
        assert!(content(&control).contains("inside"), "{env:?}: {control}");
        assert_eq!(inside.requests().len(), 1, "{env:?}");
    }
}

/// The exemption still does its job: a request that goes through the proxy connects to the
/// proxy by its (loopback) name, the proxy resolves the destination; IP literals that are not
/// public are refused before anything is sent, behind the proxy too.
#[test]
fn requests_through_the_proxy_reach_it_and_literal_inside_addresses_do_not() {
    let proxy = MockServer::start(vec![Reply::error(200, "from the proxy")]);
    let port = proxy.addr.port();
    let via = format!("http://localhost:{port}");
    // The mock provider is at 127.0.0.1: rounds' own requests to it must not use the proxy.
    let env = [("HTTP_PROXY", via.as_str()), ("NO_PROXY", "127.0.0.1")];
    let result = fetch_with("http://rounds-test.invalid/page", &[], &env);
    assert_eq!(result["is_error"], false, "{result}");
    assert!(content(&result).contains("from the proxy"), "{result}");
    let seen: Vec<String> = proxy.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(seen, ["http://rounds-test.invalid/page"]);

    for literal in [
        "http://169.254.169.254/latest/meta-data/",
        "http://127.0.0.2:9/",
        "http://[::ffff:10.0.0.1]/",
    ] {
        let result = fetch_with(literal, &[], &env);
        assert_eq!(result["is_error"], true, "{literal}: {result}");
        assert!(
            content(&result).contains("is not a public address"),
            "{literal}: {result}"
        );
    }
    assert_eq!(proxy.requests().len(), 1, "a literal reached the proxy");
}

/// Issue 12 §4: a URL rule was checked on the first URL only, and a redirect left it. Each row
/// is where `/docs/start` on the allowed server redirects to (`{E}`: another server's port).
#[test]
fn a_url_rule_holds_on_every_redirect_hop() {
    let table = [
        "http://127.0.0.1:{E}/docs/secret",
        "http://localhost:{E}/docs/secret",
        "/private",
        "/docs/../private",
        "/docs/%2e%2e/private",
    ];
    for row in table {
        let elsewhere = MockServer::start(vec![Reply::error(200, "elsewhere")]);
        let location = row.replace("{E}", &elsewhere.addr.port().to_string());
        let start = || {
            MockServer::start(vec![
                redirect(&location),
                Reply::error(200, r#"{"secret":"behind the redirect"}"#),
            ])
        };
        let server = start();
        let rule = format!("web_fetch({}/docs/*)", server.url());
        let first = format!("{}/docs/start", server.url());
        let allow = format!("none,{rule}");
        let result = fetch(&first, &["--web-allow-private", "-a", &allow]);
        assert_eq!(result["is_error"], true, "{location}: {result}");
        let said = content(&result);
        assert!(
            said.contains("redirect") && said.contains(&rule) && !said.contains("behind the"),
            "{location}: {said}"
        );
        let paths: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
        assert_eq!(paths, ["/docs/start"], "{location}: the hop was followed");
        assert_eq!(elsewhere.requests().len(), 0, "{location}");

        // CONTROL: allowed without a pattern, the same redirect is followed.
        let server = start();
        let first = format!("{}/docs/start", server.url());
        let control = fetch(&first, &["--web-allow-private"]);
        assert_eq!(control["is_error"], false, "{location}: {control}");
        let reached = content(&control);
        assert!(
            reached.contains("behind the redirect") || reached.contains("elsewhere"),
            "{location}: {control}"
        );
        assert_eq!(
            server.requests().len() + elsewhere.requests().len(),
            2,
            "{location}"
        );
    }

    // A hop the rule covers is followed.
    let server = MockServer::start(vec![
        redirect("/docs/next"),
        Reply::error(200, "the next page"),
    ]);
    let rule = format!("none,web_fetch({}/docs/*)", server.url());
    let first = format!("{}/docs/start", server.url());
    let result = fetch(&first, &["--web-allow-private", "-a", &rule]);
    assert_eq!(result["is_error"], false, "{result}");
    assert!(content(&result).contains("the next page"), "{result}");
}

/// Issue 12 §4: a URL pattern was matched as text, where `*` crosses `/`, `?`, `#` and `@`, and
/// `..` is just two dots; so `http://*.example.com/*` allowed any host with `.example.com/`
/// somewhere in its path. Each row is a rule and a URL on the loopback server it must not allow.
#[test]
fn url_patterns_match_the_parsed_url_not_its_text() {
    let table = [
        ("http://*.example.com/*", "{S}/x.example.com/"),
        ("http://*.example.com/*", "{S}/?q=.example.com/"),
        ("http://*.example.com/*", "{S}/#.example.com/"),
        ("http://*.example.com*", "http://a.example.com@{H}/"),
        ("http://docs.example.com*", "http://docs.example.com@{H}/"),
        ("{S}/docs/*", "{S}/docs/../admin"),
        ("{S}/docs/*", "{S}/docs/%2E%2E/admin"),
    ];
    for (pattern, url) in table {
        let inside = inside();
        let host = inside.addr.to_string();
        let fill = |s: &str| s.replace("{S}", &inside.url()).replace("{H}", &host);
        let (rule, url) = (format!("none,web_fetch({})", fill(pattern)), fill(url));
        let result = fetch(&url, &["--web-allow-private", "-a", &rule]);
        assert_eq!(result["error_kind"], "denied", "{rule} {url}: {result}");
        assert_eq!(inside.requests().len(), 0, "{rule} let {url} through");

        // CONTROL: allowed without a pattern, the same URL reaches the server.
        let control = fetch(&url, &["--web-allow-private"]);
        assert_eq!(inside.requests().len(), 1, "{url}: {control}");
    }
}
