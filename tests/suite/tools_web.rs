//! `web_fetch` through the real binary: a model pointed at an address on the inside (here the
//! loopback, standing for 169.254.169.254 or an admin port) gets an error result and the server
//! never sees a request, unless the run was started with `--web-allow-private`; and a URL rule
//! holds on every redirect hop and is matched against the URL's parsed parts, not its text.

use crate::common::mock::{MockServer, Reply, Step};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run};
use pretty_assertions::assert_eq;
use serde_json::Value;

/// One round calling `web_fetch` on `url`, then a final answer; returns the call's result.
fn fetch(url: &str, extra: &[&str]) -> Value {
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
    let out = run(sb
        .anthropic(&server)
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
