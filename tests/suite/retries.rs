//! Provider faults, provoked for real by the mock: what is retried, how often, how long rounds
//! waits, that nothing of a failed attempt is duplicated, and what the run reports at the end.

use std::time::{Duration, Instant};

use crate::common::mock::{MockServer, Reply, Step};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run, types};
use pretty_assertions::assert_eq;
use serde_json::json;

const ANSWER: &str = "all good";

fn ok() -> Reply {
    Reply::sse(sse::anthropic(&[B::Text(ANSWER)], "end_turn", 10, 5))
}

fn with_header(mut reply: Reply, name: &str, value: &str) -> Reply {
    reply.headers.push((name.into(), value.into()));
    reply
}

fn rounds(sb: &Sandbox, server: &MockServer, extra: &[&str]) -> crate::common::Run {
    run(sb
        .anthropic(server)
        .args(["--retry-delay", "0.05", "--transcript"])
        .arg(sb.transcript_path())
        .args(extra)
        .arg("go"))
}

/// The first `n` events of a good answer, then the given ending.
fn cut(n: usize, ending: Step) -> Reply {
    let events = sse::anthropic(
        &[B::Text("partial answer that must not survive")],
        "end_turn",
        10,
        5,
    );
    let mut reply = Reply::sse(events[..n].to_vec());
    reply.body.push(ending);
    reply
}

#[test]
fn a_429_with_retry_after_is_retried_after_that_wait() {
    let sb = Sandbox::new();
    let limited = with_header(
        Reply::error(
            429,
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
        ),
        "retry-after",
        "0.4",
    );
    let server = MockServer::start(vec![limited, ok()]);
    let started = Instant::now();
    let out = rounds(&sb, &server, &[]);
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "all good\n"),
        "{}",
        out.stderr
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let waited = requests[1].received.duration_since(requests[0].received);
    assert!(
        waited >= Duration::from_millis(400),
        "retried after {waited:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(out.stderr.contains("anthropic: HTTP 429 Too Many Requests: slow down (rate_limit_error); retrying in 0.4s (attempt 2 of 5)"), "{}", out.stderr);
    let round = &sb.transcript()[1];
    assert_eq!(round["retries"][0]["attempt"], 1);
    assert_eq!(round["retries"][0]["delay_ms"], 400);
}

#[test]
fn retry_after_ms_is_preferred_and_overloaded_529_is_retried() {
    let sb = Sandbox::new();
    let overloaded = with_header(
        Reply::error(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ),
        "retry-after-ms",
        "50",
    );
    let server = MockServer::start(vec![overloaded, ok()]);
    let out = rounds(&sb, &server, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(sb.transcript()[1]["retries"][0]["delay_ms"], 50);
}

#[test]
fn repeated_503s_are_retried_with_growing_waits_until_one_succeeds() {
    let sb = Sandbox::new();
    let unavailable = || Reply::error(503, "busy");
    let server = MockServer::start(vec![unavailable(), unavailable(), unavailable(), ok()]);
    let out = rounds(&sb, &server, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let gaps: Vec<Duration> = requests
        .windows(2)
        .map(|w| w[1].received.duration_since(w[0].received))
        .collect();
    // Backoff doubles from 50 ms with jitter in [half, full]: ≥ 25, 50, 100 ms.
    for (gap, floor) in gaps.iter().zip([25, 50, 100]) {
        assert!(*gap >= Duration::from_millis(floor), "{gaps:?}");
    }
    let lines = sb.transcript();
    assert_eq!(types(&lines), ["start", "round", "end"]);
    assert_eq!(lines[1]["retries"].as_array().unwrap().len(), 3);
}

#[test]
fn after_the_last_retry_the_run_fails_with_the_providers_message() {
    let sb = Sandbox::new();
    let server = MockServer::start(
        (0..3)
            .map(|_| Reply::error(500, r#"{"error":{"message":"boom"}}"#))
            .collect(),
    );
    let out = rounds(&sb, &server, &["--max-retries", "2"]);
    // The provider stayed unavailable: exit 10, a retry later may succeed.
    assert_eq!(out.code, 10);
    assert_eq!(server.requests().len(), 3);
    assert!(
        out.stderr
            .contains("rounds: error: anthropic: HTTP 500 Internal Server Error: boom"),
        "{}",
        out.stderr
    );
    let end = sb.transcript().pop().unwrap();
    assert_eq!(
        (end["status"].as_str(), end["exit_code"].as_u64()),
        (Some("unavailable"), Some(10))
    );
    assert_eq!(
        end["failure"],
        json!({"kind": "server_error", "retryable": true})
    );
}

#[test]
fn client_errors_are_not_retried() {
    for status in [400, 401, 403, 404] {
        let sb = Sandbox::new();
        let server = MockServer::start(vec![
            Reply::error(status, r#"{"error":{"message":"no"}}"#),
            ok(),
        ]);
        let out = rounds(&sb, &server, &[]);
        assert_eq!(out.code, 1, "{status}");
        assert_eq!(server.requests().len(), 1, "{status} must not be retried");
    }
}

#[test]
fn a_reset_mid_stream_is_retried_and_the_partial_text_is_not_kept() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![cut(3, Step::Reset), ok()]);
    let out = rounds(&sb, &server, &[]);
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "all good\n"),
        "{}",
        out.stderr
    );
    let lines = sb.transcript();
    assert_eq!(lines[1]["blocks"], json!([{"type":"text","text":ANSWER}]));
    assert_eq!(server.requests().len(), 2);
    assert!(
        !std::fs::read_to_string(sb.transcript_path())
            .unwrap()
            .contains("must not survive")
    );
}

#[test]
fn a_stream_that_closes_before_its_end_is_retried() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![cut(4, Step::Bytes(vec![])), ok()]);
    let out = rounds(&sb, &server, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        sb.transcript()[1]["retries"][0]["error"]
            .as_str()
            .unwrap()
            .contains("stream closed before message_stop")
    );
}

#[test]
fn a_stream_that_stalls_after_its_headers_is_cut_by_the_idle_timeout_and_retried() {
    let sb = Sandbox::new();
    let stalled = cut(2, Step::Sleep(Duration::from_secs(5)));
    let server = MockServer::start(vec![stalled, ok()]);
    let started = Instant::now();
    let out = rounds(&sb, &server, &["--idle-timeout", "0.3"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(
        sb.transcript()[1]["retries"][0]["error"]
            .as_str()
            .unwrap()
            .contains("stream stalled")
    );
}

#[test]
fn a_server_that_never_sends_headers_is_a_stall_and_retried() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![Reply::silent(Duration::from_secs(30)), ok()]);
    let started = Instant::now();
    let out = rounds(&sb, &server, &["--idle-timeout", "0.5"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let error = sb.transcript()[1]["retries"][0]["error"].clone();
    assert!(
        error.as_str().unwrap().contains("stream stalled"),
        "{error}"
    );
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn a_failure_after_a_tool_started_keeps_the_call_and_continues_without_running_it_twice() {
    let sb = Sandbox::new();
    let events = sse::anthropic(
        &[
            B::Tool("t1", "bash", r#"{"command":"echo ran >> count"}"#),
            B::Text("more"),
        ],
        "tool_use",
        10,
        5,
    );
    // Everything up to the tool block's stop, then the connection drops.
    let mut broken = Reply::sse(events[..6].to_vec());
    broken.body.push(Step::Sleep(Duration::from_millis(300)));
    broken.body.push(Step::Reset);
    let server = MockServer::start(vec![broken, ok()]);
    let out = rounds(&sb, &server, &["-a", "bash"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        std::fs::read_to_string(sb.ws().join("count")).unwrap(),
        "ran\n",
        "the call ran exactly once"
    );
    let lines = sb.transcript();
    assert_eq!(types(&lines), ["start", "round", "round", "end"]);
    assert!(
        lines[1]["error"]
            .as_str()
            .unwrap()
            .contains("the calls that had started were kept"),
        "{}",
        lines[1]
    );
    assert_eq!(lines[1]["results"][0]["is_error"], false);
    // The next request carries the kept call and its result.
    let second = server.requests()[1].json();
    assert_eq!(second["messages"][1]["content"][0]["type"], "tool_use");
    assert_eq!(second["messages"][2]["content"][0]["tool_use_id"], "t1");
}
