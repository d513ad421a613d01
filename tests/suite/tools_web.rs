//! `web_fetch` through the real binary: a model pointed at an address on the inside (here the
//! loopback, standing for 169.254.169.254 or an admin port) gets an error result and the server
//! never sees a request, unless the run was started with `--web-allow-private`.

use crate::common::mock::{MockServer, Reply};
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

#[test]
fn inside_addresses_are_fetched_only_with_web_allow_private() {
    let inside = MockServer::start(vec![Reply::error(200, r#"{"secret":"inside"}"#)]);
    for url in [inside.url(), inside.url().replace("127.0.0.1", "localhost")] {
        let result = fetch(&url, &[]);
        assert_eq!(result["is_error"], true, "{result}");
        assert_eq!(result["error_kind"], "failed");
        let said = result["content"].as_str().unwrap();
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
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains(r#"{"secret":"inside"}"#)
    );
    assert_eq!(inside.requests().len(), 1);
}
