//! `--resume` and the key pin: a transcript is a record, not an instruction, so when the user
//! named a key file (or an endpoint) the transcript's recorded model may not be another
//! provider's. Otherwise a transcript saying `openai` sends the user's Anthropic key to wherever
//! OpenAI's URL points.

use crate::common::mock::MockServer;
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run};
use pretty_assertions::assert_eq;

const ANTHROPIC_KEY: &str = "sk-ant-pinned-key-0f3a9c1e";

/// A finished OpenAI run; returns its transcript.
fn openai_run(sb: &Sandbox) -> std::path::PathBuf {
    let server = MockServer::start(vec![crate::common::mock::Reply::sse(sse::openai(
        &[B::Text("first answer")],
        "stop",
        10,
        5,
    ))]);
    let path = sb.path("openai.jsonl");
    let out = run(sb
        .rounds()
        .env("OPENAI_API_KEY", "openai-key-1234")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url()))
        .args(["-m", "openai/gpt-test", "--transcript"])
        .arg(&path)
        .arg("hello"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    path
}

/// A second OpenAI-speaking server, the one the resumed run would send its key to.
fn other_endpoint() -> MockServer {
    MockServer::start(vec![crate::common::mock::Reply::sse(sse::openai(
        &[B::Text("second answer")],
        "stop",
        10,
        5,
    ))])
}

fn resume_with_key_file(
    sb: &Sandbox,
    transcript: &std::path::Path,
    server: &MockServer,
) -> std::process::Command {
    sb.write("anthropic.key", &format!("{ANTHROPIC_KEY}\n"));
    let mut cmd = sb.rounds();
    cmd.env("OPENAI_BASE_URL", format!("{}/v1", server.url()))
        .arg("--api-key-file")
        .arg(sb.ws().join("anthropic.key"))
        .arg("--resume")
        .arg(transcript)
        .arg("--no-transcript");
    cmd
}

#[test]
fn a_transcript_of_another_provider_is_refused_when_the_user_pinned_a_key_file() {
    let sb = Sandbox::new();
    let first = openai_run(&sb);
    let server = other_endpoint();
    let out = run(resume_with_key_file(&sb, &first, &server).arg("go on"));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("--api-key-file") && out.stderr.contains("-m"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains(ANTHROPIC_KEY), "{}", out.stderr);
    assert_eq!(
        server.requests().len(),
        0,
        "the key went to the transcript's provider"
    );

    // An endpoint pins as a key file does: the conversation is not sent to the transcript's
    // provider through the user's --base-url either.
    let out = run(sb
        .rounds()
        .env("OPENAI_API_KEY", "openai-key-1234")
        .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        .arg("--base-url")
        .arg(format!("{}/v1", server.url()))
        .arg("--resume")
        .arg(&first)
        .args(["--no-transcript", "go on"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(server.requests().len(), 0);
}

#[test]
fn the_same_provider_named_by_the_user_with_m_is_theirs_to_choose() {
    // The control: the same request, with the model named by the user, goes out with the key.
    let sb = Sandbox::new();
    let first = openai_run(&sb);
    let server = other_endpoint();
    let out =
        run(resume_with_key_file(&sb, &first, &server).args(["-m", "openai/gpt-test", "go on"]));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "second answer\n"),
        "{}",
        out.stderr
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {ANTHROPIC_KEY}").as_str())
    );
}
