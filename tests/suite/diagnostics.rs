//! Errors that say what happened, and logs that show it: transport errors name the URL (never
//! the key), a success that is not an event stream fails at once saying what came back, and
//! -v / -vv show requests, tools and event names.

use std::time::{Duration, Instant};

use crate::common::mock::{MockServer, Reply, Step};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run};

#[test]
fn a_success_that_is_not_an_event_stream_fails_at_once_saying_what_came_back() {
    let sb = Sandbox::new();
    let page = Reply {
        status: 200,
        headers: vec![("content-type".into(), "text/html; charset=utf-8".into())],
        body: vec![Step::Bytes(
            b"<html><title>Welcome to nginx!</title></html>".to_vec(),
        )],
    };
    let server = MockServer::start(vec![page.clone(), page.clone(), page]);
    let started = Instant::now();
    let out = run(sb.anthropic(&server).args(["--no-transcript", "go"]));
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(server.requests().len(), 1, "not retried");
    for part in [
        "/v1/messages",
        "200 OK",
        "text/html",
        "Welcome to nginx!",
        "base URL",
    ] {
        assert!(out.stderr.contains(part), "{part}: {}", out.stderr);
    }
}

#[test]
fn transport_errors_name_the_url_and_never_the_key() {
    let sb = Sandbox::new();
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let out = run(sb
        .rounds()
        .env("GEMINI_API_KEY", "AIza-secret-key")
        .env("GEMINI_BASE_URL", format!("http://127.0.0.1:{port}"))
        .args(["-m", "gemini/gemini-2.5-flash", "--max-retries", "0"])
        .args(["--no-transcript", "go"]));
    // Unreachable: worth retrying later (exit 10).
    assert_eq!(out.code, 10, "{}", out.stderr);
    let url = format!(
        "POST http://127.0.0.1:{port}/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    );
    assert!(out.stderr.contains(&url), "{}", out.stderr);
    assert!(out.stderr.contains("connection failed"), "{}", out.stderr);
    assert!(!out.stderr.contains("AIza-secret-key"));
}

#[test]
fn verbose_logs_show_requests_and_tools_and_very_verbose_the_events() {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let script = || {
        MockServer::start(vec![
            Reply::sse(sse::anthropic(
                &[B::Tool("t1", "read_file", r#"{"path":"a.txt"}"#)],
                "tool_use",
                1,
                1,
            )),
            sse::answer("done"),
        ])
    };
    let server = script();
    let out = run(sb.anthropic(&server).args(["-v", "--no-transcript", "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let request = format!(
        "rounds: info: POST {}/v1/messages: 200 OK after",
        server.url()
    );
    assert!(out.stderr.contains(&request), "{}", out.stderr);
    assert!(
        out.stderr.contains("rounds: info: read_file started (t1)"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("rounds: info: read_file done in"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("event message_start"),
        "{}",
        out.stderr
    );

    let server = script();
    let out = run(sb.anthropic(&server).args(["-vv", "--no-transcript", "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("rounds: debug: anthropic: event message_start"),
        "{}",
        out.stderr
    );
}
