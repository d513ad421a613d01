//! A failure says whether to retry (issue 23): a provider failure that outlasts the retries ends
//! with exit 10 when the provider stayed unavailable (retrying later may succeed) and exit 1 when
//! retrying will not help, and the `end` line, `-o json`, the stream-json `end` event and the step
//! summary carry the same failure record: `kind`, `retryable`, and `retry_after` when the
//! provider said. Each case runs against each wire API whose error body differs.

use std::process::Command;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::mock::{MockServer, Reply};
use crate::common::{Sandbox, parse_lines, run};

/// A wire API: how to point the binary at the mock with it.
#[derive(Clone, Copy, Debug)]
enum Wire {
    Anthropic,
    OpenAi,
    Gemini,
}

const WIRES: [Wire; 3] = [Wire::Anthropic, Wire::OpenAi, Wire::Gemini];

impl Wire {
    fn command(self, sb: &Sandbox, server: &MockServer) -> Command {
        let mut cmd = sb.rounds();
        let (model, key, url_var, url) = match self {
            Wire::Anthropic => (
                "anthropic/claude-test",
                "ANTHROPIC_API_KEY",
                "ANTHROPIC_BASE_URL",
                server.url(),
            ),
            Wire::OpenAi => (
                "openai/gpt-test",
                "OPENAI_API_KEY",
                "OPENAI_BASE_URL",
                format!("{}/v1", server.url()),
            ),
            Wire::Gemini => (
                "gemini/gemini-test",
                "GEMINI_API_KEY",
                "GEMINI_BASE_URL",
                server.url(),
            ),
        };
        cmd.env(key, "test-key")
            .env(url_var, url)
            .args(["-m", model, "--max-retries", "1", "--retry-delay", "0.01"])
            .arg("--transcript")
            .arg(sb.transcript_path())
            .arg("--step-summary")
            .arg(sb.path("summary.md"));
        cmd
    }
}

/// One way a provider fails: its reply on each wire, and the record and exit code it must give.
struct Case {
    name: &'static str,
    reply: fn(Wire) -> Reply,
    kind: &'static str,
    code: i32,
    /// The wait the provider asked for, in seconds.
    retry_after: Option<f64>,
}

fn with_header(mut reply: Reply, name: &str, value: &str) -> Reply {
    reply.headers.push((name.into(), value.into()));
    reply
}

fn rate_limited(wire: Wire) -> Reply {
    match wire {
        Wire::Anthropic => with_header(
            Reply::error(
                429,
                r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#,
            ),
            "retry-after",
            "0.05",
        ),
        Wire::OpenAi => with_header(
            Reply::error(
                429,
                r#"{"error":{"message":"Rate limit reached for gpt-test on requests per min (RPM): Limit 3, Used 3, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#,
            ),
            "retry-after-ms",
            "50",
        ),
        // Gemini says when in the body, and uses the words OpenAI uses for a spent balance.
        Wire::Gemini => Reply::error(
            429,
            r#"{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"0.05s"}]}}"#,
        ),
    }
}

fn overloaded(wire: Wire) -> Reply {
    match wire {
        Wire::Anthropic => Reply::error(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ),
        Wire::OpenAi => Reply::error(
            503,
            r#"{"error":{"message":"The engine is currently overloaded, please try again later","type":"server_error","param":null,"code":null}}"#,
        ),
        Wire::Gemini => Reply::error(
            503,
            r#"{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}"#,
        ),
    }
}

fn server_error(wire: Wire) -> Reply {
    match wire {
        Wire::Anthropic => Reply::error(
            500,
            r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#,
        ),
        Wire::OpenAi => Reply::error(
            500,
            r#"{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}"#,
        ),
        Wire::Gemini => Reply::error(
            500,
            r#"{"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}"#,
        ),
    }
}

fn bad_key(wire: Wire) -> Reply {
    match wire {
        Wire::Anthropic => Reply::error(
            401,
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
        ),
        Wire::OpenAi => Reply::error(
            401,
            r#"{"error":{"message":"Incorrect API key provided: test-key.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#,
        ),
        // Gemini: 400, not 401; the reason says it is the key.
        Wire::Gemini => Reply::error(
            400,
            r#"[{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}]"#,
        ),
    }
}

fn wrong_model(wire: Wire) -> Reply {
    match wire {
        Wire::Anthropic => Reply::error(
            404,
            r#"{"type":"error","error":{"type":"not_found_error","message":"model: claude-test"}}"#,
        ),
        Wire::OpenAi => Reply::error(
            404,
            r#"{"error":{"message":"The model `gpt-test` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}"#,
        ),
        Wire::Gemini => Reply::error(
            404,
            r#"{"error":{"code":404,"message":"models/gemini-test is not found for API version v1beta, or is not supported for generateContent.","status":"NOT_FOUND"}}"#,
        ),
    }
}

fn too_long(wire: Wire) -> Reply {
    match wire {
        Wire::Anthropic => Reply::error(
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
        ),
        Wire::OpenAi => Reply::error(
            400,
            r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
        ),
        Wire::Gemini => Reply::error(
            400,
            r#"{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}"#,
        ),
    }
}

fn invalid(wire: Wire) -> Reply {
    match wire {
        Wire::Anthropic => Reply::error(
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: must be greater than 0"}}"#,
        ),
        Wire::OpenAi => Reply::error(
            400,
            r#"{"error":{"message":"Unrecognized request argument supplied: foo","type":"invalid_request_error","param":null,"code":null}}"#,
        ),
        Wire::Gemini => Reply::error(
            400,
            r#"{"error":{"code":400,"message":"Invalid JSON payload received. Unknown name \"foo\": Cannot find field.","status":"INVALID_ARGUMENT"}}"#,
        ),
    }
}

const CASES: &[Case] = &[
    Case {
        name: "429 with a retry hint",
        reply: rate_limited,
        kind: "rate_limited",
        code: 10,
        retry_after: Some(0.05),
    },
    Case {
        name: "overloaded",
        reply: overloaded,
        kind: "overloaded",
        code: 10,
        retry_after: None,
    },
    Case {
        name: "500",
        reply: server_error,
        kind: "server_error",
        code: 10,
        retry_after: None,
    },
    Case {
        name: "bad key",
        reply: bad_key,
        kind: "auth",
        code: 1,
        retry_after: None,
    },
    Case {
        name: "wrong model",
        reply: wrong_model,
        kind: "not_found",
        code: 1,
        retry_after: None,
    },
    Case {
        name: "context too long",
        reply: too_long,
        kind: "context_too_long",
        code: 1,
        retry_after: None,
    },
    Case {
        name: "invalid request",
        reply: invalid,
        kind: "invalid_request",
        code: 1,
        retry_after: None,
    },
];

/// The record a case must give.
fn record(case: &Case) -> Value {
    let mut record = json!({"kind": case.kind, "retryable": case.code == 10});
    if let Some(secs) = case.retry_after {
        record["retry_after"] = json!(secs);
    }
    record
}

#[test]
fn each_provider_failure_says_its_kind_whether_to_retry_and_its_exit_code_on_every_wire() {
    for wire in WIRES {
        for case in CASES {
            let what = format!("{wire:?}, {}", case.name);
            let sb = Sandbox::new();
            let reply = (case.reply)(wire);
            let server = MockServer::respond(move |_| reply.clone());
            let out = run(wire.command(&sb, &server).args(["-o", "json", "hi"]));
            assert_eq!(out.code, case.code, "{what}: {}", out.stderr);
            // Retried (once, --max-retries 1) only when retrying may help.
            let asked = if case.code == 10 { 2 } else { 1 };
            assert_eq!(server.requests().len(), asked, "{what}");

            let json: Value = serde_json::from_str(&out.stdout).expect("-o json");
            let status = if case.code == 10 {
                "unavailable"
            } else {
                "error"
            };
            assert_eq!(json["status"], status, "{what}");
            assert_eq!(json["exit_code"], case.code, "{what}");
            assert_eq!(json["failure"], record(case), "{what}");

            let end = sb.transcript().pop().expect("an end line");
            assert_eq!(end["type"], "end", "{what}");
            assert_eq!(end["failure"], record(case), "{what}");
            assert_eq!(
                (&end["status"], &end["exit_code"]),
                (&json["status"], &json["exit_code"])
            );

            let summary = std::fs::read_to_string(sb.path("summary.md")).unwrap();
            let heading = format!("rounds: {status} (exit {})", case.code);
            assert!(summary.contains(&heading), "{what}: {summary}");
            let retry = if case.code == 10 {
                "retryable"
            } else {
                "not retryable"
            };
            let item = format!("- **Failure:** `{}`, {retry}", case.kind);
            assert!(summary.contains(&item), "{what}: {summary}");
        }
    }
}

#[test]
fn a_rate_limit_that_asks_for_longer_than_rounds_waits_ends_at_once_saying_how_long() {
    let sb = Sandbox::new();
    let reply = with_header(
        Reply::error(
            429,
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
        ),
        "retry-after",
        "3600",
    );
    let server = MockServer::respond(move |_| reply.clone());
    let started = std::time::Instant::now();
    let out = run(Wire::Anthropic
        .command(&sb, &server)
        .args(["-o", "stream-json", "hi"]));
    assert_eq!(out.code, 10, "{}", out.stderr);
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    // Not slept through: a CI step learns when to come back instead.
    assert_eq!(server.requests().len(), 1);
    let events = parse_lines(&out.stdout);
    let end = events.last().expect("an end event");
    assert_eq!(end["type"], "end");
    assert_eq!(end["status"], "unavailable");
    assert_eq!(
        end["failure"],
        json!({"kind": "rate_limited", "retryable": true, "retry_after": 3600.0})
    );
    let summary = std::fs::read_to_string(sb.path("summary.md")).unwrap();
    assert!(
        summary.contains("`rate_limited`, retryable (the provider asked to wait 3600s)"),
        "{summary}"
    );
}

#[test]
fn connection_refused_is_a_network_failure_worth_retrying() {
    let sb = Sandbox::new();
    // Bind and drop a listener: nothing listens on that port afterwards.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = run(sb.rounds().env("ANTHROPIC_API_KEY", "k").args([
        "--transcript",
        "t.jsonl",
        "--max-retries",
        "1",
        "--retry-delay",
        "0.01",
        "--base-url",
        &format!("http://127.0.0.1:{port}"),
        "-o",
        "json",
        "hi",
    ]));
    assert_eq!(out.code, 10, "{}", out.stderr);
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        json["failure"],
        json!({"kind": "network", "retryable": true})
    );
    let end = crate::common::read_jsonl(&sb.ws().join("t.jsonl"))
        .pop()
        .unwrap();
    assert_eq!(end["failure"], json["failure"]);
}

#[test]
fn a_run_that_completes_or_stops_at_its_limit_has_no_failure_and_a_usage_error_is_config() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![crate::common::sse::answer("fine")]);
    let out = run(Wire::Anthropic
        .command(&sb, &server)
        .args(["-o", "json", "hi"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["failure"], Value::Null);
    assert_eq!(sb.transcript().pop().unwrap()["failure"], Value::Null);

    let out = run(sb
        .rounds()
        .args(["-m", "anthropic/claude-test", "-o", "json", "hi"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        json["failure"],
        json!({"kind": "config", "retryable": false})
    );
}
