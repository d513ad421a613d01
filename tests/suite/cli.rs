//! The command line as a person used to ripgrep, cargo and codex exec would try it: repeated
//! flags, negative numbers, `-f -`, binary stdin, an empty model name, an unwritable default
//! transcript location, and a summary that counts the wait for stdin.

use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use crate::common::mock::MockServer;
use crate::common::sse;
use crate::common::{Sandbox, run};

#[test]
fn flags_say_plainly_what_is_wrong() {
    let sb = Sandbox::new();
    let out = run(sb.rounds().args(["-m", "openai/", "x"]));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("the model name after the provider is empty"),
        "{}",
        out.stderr
    );

    let out = run(sb.rounds().args(["--max-rounds", "-1", "x"]));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("-1") && !out.stderr.contains("-- -1"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_repeated_flag_takes_its_last_value() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![sse::answer("plain")]);
    let out =
        run(sb
            .anthropic(&server)
            .args(["--no-transcript", "-o", "json", "-o", "text", "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "plain\n");
}

pub(super) fn with_stdin(
    sb: &Sandbox,
    server: &MockServer,
    args: &[&str],
    input: &[u8],
    delay: Duration,
) -> crate::common::Run {
    let mut child = sb
        .anthropic(server)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::thread::sleep(delay);
    stdin.write_all(input).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    crate::common::Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn dash_f_dash_reads_the_prompt_from_stdin_and_the_summary_counts_the_wait() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![sse::answer("ok")]);
    let out = with_stdin(
        &sb,
        &server,
        &["--no-transcript", "-f", "-"],
        b"the prompt from stdin\n",
        Duration::from_millis(1300),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let body = server.requests()[0].json();
    let sent = body["messages"][0].to_string();
    assert!(sent.contains("the prompt from stdin"), "{sent}");
    // "…, 1.3s": the wait for stdin is part of the run.
    let secs: f64 = out
        .stderr
        .rsplit(", ")
        .find_map(|part| part.trim().strip_suffix('s')?.parse().ok())
        .unwrap_or_else(|| panic!("no duration in {}", out.stderr));
    assert!(secs >= 1.2, "{}", out.stderr);
}

#[test]
fn binary_stdin_is_refused_not_sent_as_mojibake() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![sse::answer("never")]);
    // Latin-1 text is not binary: tests/suite/ci_inputs.rs sends it.
    for input in [&b"PK\x03\x04\x00\x00binary"[..], &b"caf\xe9\x00"[..]] {
        let out = with_stdin(
            &sb,
            &server,
            &["--no-transcript", "review this"],
            input,
            Duration::ZERO,
        );
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert!(out.stderr.contains("stdin is binary"), "{}", out.stderr);
    }
    assert!(server.requests().is_empty());
    // The control: text on stdin goes to the model as context.
    let server = MockServer::start(vec![sse::answer("ok")]);
    let out = with_stdin(
        &sb,
        &server,
        &["--no-transcript", "review this"],
        b"caf\xc3\xa9",
        Duration::ZERO,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        server.requests()[0].json()["messages"][0]
            .to_string()
            .contains("café")
    );
}

#[test]
fn an_unwritable_default_transcript_location_says_how_to_fix_it() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![sse::answer("never")]);
    let out = run(sb
        .anthropic(&server)
        .env("ROUNDS_HOME", "/proc/rounds-nope")
        .arg("go"));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("--no-transcript") && out.stderr.contains("ROUNDS_HOME"),
        "{}",
        out.stderr
    );
    assert!(server.requests().is_empty());
}
