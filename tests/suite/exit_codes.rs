//! Every way a run can end that issue 2 covers, through the real binary: the exit code, the
//! message on stderr, and the transcript's closing line.

use crate::common::mock::{MockServer, Reply, Step};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run, types};
use pretty_assertions::assert_eq;

/// A run against the mock that fails on the first provider error (retries have their own tests).
fn anthropic(sb: &Sandbox, server: &MockServer) -> std::process::Command {
    let mut cmd = sb.rounds();
    cmd.env("ANTHROPIC_API_KEY", "sk-ant-secret-value")
        .env("ANTHROPIC_BASE_URL", server.url())
        .args([
            "-m",
            "anthropic/claude-test",
            "--max-retries",
            "0",
            "--transcript",
        ])
        .arg(sb.transcript_path());
    cmd
}

#[test]
fn a_model_that_never_stops_calling_tools_ends_at_max_rounds_with_exit_3() {
    let sb = Sandbox::new();
    sb.write("f.txt", "x\n");
    let again = || {
        Reply::sse(sse::anthropic(
            &[B::Tool("t", "read_file", r#"{"path":"f.txt"}"#)],
            "tool_use",
            10,
            5,
        ))
    };
    let server = MockServer::start(vec![again(), again(), again()]);
    let out = run(anthropic(&sb, &server).args(["--max-rounds", "2", "loop forever"]));
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert_eq!(out.stdout, "");
    assert_eq!(server.requests().len(), 2);
    let lines = sb.transcript();
    assert_eq!(types(&lines), ["start", "round", "round", "end"]);
    assert_eq!(lines[3]["status"], "max_rounds");
    assert_eq!(lines[3]["exit_code"], 3);
    assert!(
        out.stderr.contains("max_rounds after 2 rounds"),
        "{}",
        out.stderr
    );
}

#[test]
fn provider_4xx_ends_with_exit_1_naming_provider_status_and_message() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![Reply::error(
        401,
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
    )]);
    let out = run(anthropic(&sb, &server).arg("hi"));
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("rounds: error: anthropic: HTTP 401 Unauthorized: invalid x-api-key (authentication_error)"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("sk-ant-secret-value"));
    let lines = sb.transcript();
    assert_eq!(types(&lines), ["start", "end"]);
    assert_eq!(lines[1]["status"], "error");
    assert_eq!(lines[1]["exit_code"], 1);
    assert!(lines[1]["error"].as_str().unwrap().contains("HTTP 401"));
}

#[test]
fn provider_5xx_ends_with_exit_10_and_the_body_text() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![Reply::error(503, "upstream connect error")]);
    let out = run(anthropic(&sb, &server).arg("hi"));
    // Unavailable: retrying later may succeed.
    assert_eq!(out.code, 10);
    assert!(
        out.stderr
            .contains("anthropic: HTTP 503 Service Unavailable: upstream connect error"),
        "{}",
        out.stderr
    );
}

#[test]
fn an_error_event_mid_stream_is_exit_10_not_success() {
    let sb = Sandbox::new();
    let mut events = sse::anthropic(&[B::Text("partial answer")], "end_turn", 1, 1);
    events.truncate(3);
    events.push("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n".into());
    let server = MockServer::start(vec![Reply::sse(events)]);
    let out = run(anthropic(&sb, &server).arg("hi"));
    assert_eq!(out.code, 10);
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr
            .contains("anthropic: error in stream: Overloaded (overloaded_error)"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_stream_cut_before_its_end_is_exit_10() {
    let sb = Sandbox::new();
    let mut events = sse::anthropic(&[B::Text("partial answer")], "end_turn", 1, 1);
    events.truncate(3);
    let mut reply = Reply::sse(events);
    reply.body.push(Step::Reset);
    let server = MockServer::start(vec![reply]);
    let out = run(anthropic(&sb, &server).arg("hi"));
    assert_eq!(out.code, 10, "{}", out.stderr);
    assert!(
        out.stderr.contains("rounds: error: anthropic:"),
        "{}",
        out.stderr
    );
}

#[test]
fn connection_refused_is_exit_10() {
    let sb = Sandbox::new();
    // Bind and drop a listener: nothing listens on that port afterwards.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // Refused connections are retried; after the last retry the run fails with exit 10.
    let out = run(sb.rounds().env("ANTHROPIC_API_KEY", "k").args([
        "--no-transcript",
        "--max-retries",
        "2",
        "--retry-delay",
        "0.01",
        "--base-url",
        &format!("http://127.0.0.1:{port}"),
        "hi",
    ]));
    assert_eq!(out.code, 10);
    let expected =
        format!("anthropic: POST http://127.0.0.1:{port}/v1/messages: connection failed");
    assert!(out.stderr.contains(&expected), "{}", out.stderr);
}

#[test]
fn a_missing_key_is_exit_2_before_any_request_and_names_the_variable() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![]);
    let out = run(sb
        .rounds()
        .env("OPENAI_API_KEY", "sk-unrelated-secret")
        .env("ANTHROPIC_BASE_URL", server.url())
        .args(["-m", "anthropic/claude-test", "hi"]));
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "rounds: usage error: ANTHROPIC_API_KEY is not set: the anthropic provider needs an API \
         key (ANTHROPIC_API_KEY, ANTHROPIC_API_KEY_FILE or --api-key-file)\n"
    );
    assert_eq!(server.requests().len(), 0);
    assert!(
        !sb.path("state").exists(),
        "no transcript for a run that never started"
    );
}

#[test]
fn usage_errors_are_exit_2() {
    let sb = Sandbox::new();
    let cases: &[&[&str]] = &[
        &["-m", "nosuch/model", "hi"],
        &["-f", "missing-prompt.txt"],
        &[],
        &["   "],
        &["--max-rounds", "zero", "hi"],
        &["--no-such-flag"],
        &["-a", "red_file", "hi"],
        &["-w", "no-such-dir", "hi"],
    ];
    for args in cases {
        let out = run(sb.rounds().env("ANTHROPIC_API_KEY", "k").args(*args));
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert_eq!(out.stdout, "", "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?}");
    }
}

#[test]
fn an_unwritable_transcript_path_is_exit_2_before_any_model_call() {
    let sb = Sandbox::new();
    sb.write("file", "");
    let server = MockServer::start(vec![]);
    let out = run(sb
        .anthropic(&server)
        .args(["--transcript", "file/inside-a-file.jsonl", "hi"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("transcript"), "{}", out.stderr);
    assert_eq!(server.requests().len(), 0);
}

#[test]
fn help_and_version_exit_0_on_stdout() {
    let sb = Sandbox::new();
    let out = run(sb.rounds().arg("--help"));
    assert_eq!(out.code, 0);
    assert!(
        out.stdout.contains("--max-rounds") && out.stdout.contains("Exit status"),
        "{}",
        out.stdout
    );
    let out = run(sb.rounds().arg("--version"));
    assert_eq!(
        (out.code, out.stdout.trim()),
        (0, concat!("rounds ", env!("CARGO_PKG_VERSION")))
    );
}

#[test]
fn a_key_file_is_sent_as_the_key_and_never_reaches_a_tool() {
    let sb = Sandbox::new();
    std::fs::write(sb.path("key"), "sk-ant-from-file\n").unwrap();
    let server = MockServer::start(vec![
        Reply::sse(sse::anthropic(
            &[B::Tool("t1", "bash", r#"{"command":"env"}"#)],
            "tool_use",
            1,
            1,
        )),
        sse::answer("done"),
    ]);
    let out = run(sb
        .rounds()
        .env("ANTHROPIC_API_KEY_FILE", sb.path("key"))
        .env("ANTHROPIC_BASE_URL", server.url())
        .args(["-a", "bash", "--transcript"])
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests();
    assert_eq!(requests[0].header("x-api-key"), Some("sk-ant-from-file"));
    let env_output = sb.transcript()[1]["results"][0]["content"].to_string();
    assert!(!env_output.contains("sk-ant-from-file"), "{env_output}");
    assert!(
        !env_output.contains("ANTHROPIC_API_KEY_FILE"),
        "{env_output}"
    );
}
