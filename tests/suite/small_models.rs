//! What helps a small local model get further (issue 24): a tool call it wrote as text runs as a
//! call on a local server (and only there, and only for offered tools), an edit whose old_string
//! is off by indentation lands, a path that starts with the workspace's own name finds the file,
//! and a search that finds nothing says what to try next. Each against the real binary.

use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run};
use pretty_assertions::assert_eq;
use serde_json::Value;

/// Runs `model` against two scripted OpenAI-compatible responses: `first`, a text-only
/// answer, then "done". Returns the exit code, stdout, the requests made, and the transcript.
fn text_then_done(model: &str, first: &str) -> (i32, String, usize, Vec<Value>) {
    let sb = Sandbox::new();
    sb.write("greeting.txt", "hello from the file\n");
    let server = MockServer::start(vec![
        Reply::sse(sse::openai(&[B::Text(first)], "stop", 10, 5)),
        Reply::sse(sse::openai(&[B::Text("done")], "stop", 10, 1)),
    ]);
    let out = run(sb
        .rounds()
        .env("OPENAI_API_KEY", "k")
        .args(["-m", model, "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .arg("--transcript")
        .arg(sb.transcript_path())
        .arg("What does greeting.txt say?"));
    assert_eq!(out.code, 0, "{model}: {}", out.stderr);
    (
        out.code,
        out.stdout,
        server.requests().len(),
        sb.transcript(),
    )
}

const TAGGED: &str = "I will read it.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"greeting.txt\"}}\n</tool_call>";

#[test]
fn a_call_written_as_text_runs_on_a_local_server() {
    let fenced = "I will read it.\n```json\n{\"name\": \"read_file\", \"parameters\": {\"path\": \"greeting.txt\"}}\n```";
    for (model, text) in [
        ("llamacpp/qwen", TAGGED),
        ("ollama/qwen2.5-coder:1.5b", fenced),
        ("vllm/m", TAGGED),
    ] {
        let (_, stdout, requests, lines) = text_then_done(model, text);
        assert_eq!(
            stdout.trim(),
            "done",
            "{model}: the call's text is not the answer"
        );
        assert_eq!(requests, 2, "{model}");
        let round = &lines[1];
        let call = &round["blocks"][1];
        assert_eq!(
            round["blocks"][0]["text"], "I will read it.",
            "{model}: {round}"
        );
        assert_eq!(call["type"], "tool_use", "{model}");
        assert_eq!(call["name"], "read_file");
        assert!(
            call["id"].as_str().unwrap().starts_with("call_from_text_"),
            "{model}: the call is marked as read from text: {call}"
        );
        let result = &round["results"][0];
        assert_eq!(result["is_error"], false, "{result}");
        assert!(
            result["content"]
                .as_str()
                .unwrap()
                .contains("hello from the file")
        );
        assert_eq!(round["stop_reason"], "tool_use");
    }
}

#[test]
fn text_from_a_hosted_provider_or_naming_a_tool_not_offered_stays_text() {
    let unoffered = "<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"x.txt\", \"content\": \"pwned\"}}\n</tool_call>";
    let example = "For example:\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"greeting.txt\"}}\n```";
    for (model, text) in [
        // The control: the very text that runs as a call on llama.cpp is an answer from OpenAI,
        // also when its URL is the same local mock.
        ("openai/gpt-4.1", TAGGED),
        ("llamacpp/qwen", unoffered),
        ("llamacpp/qwen", example),
        (
            "llamacpp/qwen",
            "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": }</tool_call>",
        ),
    ] {
        let (_, stdout, requests, lines) = text_then_done(model, text);
        assert_eq!(requests, 1, "{model}: {text}");
        assert_eq!(stdout.trim(), text.trim(), "{model}");
        let blocks = lines[1]["blocks"].as_array().unwrap();
        assert!(
            blocks.iter().all(|b| b["type"] == "text"),
            "{model}: {blocks:?}"
        );
    }
}

/// An Anthropic run whose model makes one call, `name` with `args`, then answers "done";
/// returns the call's result as recorded.
fn one_call(sb: &Sandbox, name: &str, args: &str, allow: &str) -> Value {
    let server = MockServer::start(vec![
        Reply::sse(sse::anthropic(
            &[B::Tool("t1", name, args)],
            "tool_use",
            10,
            5,
        )),
        sse::answer("done"),
    ]);
    let out = run(sb
        .anthropic(&server)
        .args([
            "-m",
            "anthropic/claude-sonnet-4-5",
            "-a",
            allow,
            "--transcript",
        ])
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    sb.transcript()[1]["results"][0].clone()
}

#[test]
fn a_path_starting_with_the_workspace_name_finds_the_file_inside() {
    let sb = Sandbox::new();
    assert!(
        sb.ws().ends_with("ws"),
        "the sandbox's workspace is named ws"
    );
    sb.write("greeting.txt", "hello\n");
    let r = one_call(
        &sb,
        "read_file",
        r#"{"path":"ws/greeting.txt"}"#,
        "read_file",
    );
    let content = r["content"].as_str().unwrap();
    assert_eq!(r["is_error"], false, "{r}");
    assert!(content.starts_with(r#"(no "ws/greeting.txt" in the workspace; paths are relative to its root, so this is "greeting.txt")"#), "{content}");
    assert!(content.contains("hello"));
    // A write goes where the model meant, not into a new ws/ directory.
    let r = one_call(
        &sb,
        "write_file",
        r#"{"path":"ws/new.txt","content":"x"}"#,
        "write_file",
    );
    assert_eq!(r["is_error"], false, "{r}");
    assert!(sb.ws().join("new.txt").exists() && !sb.ws().join("ws").exists());
    // Escapes stay refused, and a ws/ that really exists wins.
    let r = one_call(
        &sb,
        "read_file",
        r#"{"path":"ws/../../home/x"}"#,
        "read_file",
    );
    assert_eq!(r["is_error"], true, "{r}");
    assert!(
        r["content"]
            .as_str()
            .unwrap()
            .contains("outside the workspace"),
        "{r}"
    );
    sb.write("ws/greeting.txt", "the inner one\n");
    let r = one_call(
        &sb,
        "read_file",
        r#"{"path":"ws/greeting.txt"}"#,
        "read_file",
    );
    assert!(
        r["content"].as_str().unwrap().contains("the inner one"),
        "{r}"
    );
    // A deny rule is judged on the corrected path, so it cannot be walked around.
    let sb = Sandbox::new();
    sb.write("secret.txt", "s3cret\n");
    let server = MockServer::start(vec![
        Reply::sse(sse::anthropic(
            &[B::Tool("t1", "read_file", r#"{"path":"ws/secret.txt"}"#)],
            "tool_use",
            10,
            5,
        )),
        sse::answer("done"),
    ]);
    let out = run(sb
        .anthropic(&server)
        .args([
            "-m",
            "anthropic/claude-sonnet-4-5",
            "--deny",
            "read_file(secret.txt)",
            "--transcript",
        ])
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = &sb.transcript()[1]["results"][0];
    assert_eq!(r["is_error"], true, "{r}");
    assert!(!r["content"].as_str().unwrap().contains("s3cret"), "{r}");
}

#[test]
fn an_edit_off_by_indentation_lands_and_a_glob_that_finds_nothing_points_to_grep() {
    let sb = Sandbox::new();
    sb.write("app.py", "class A:\n    def f(self):\n        return 1\n");
    let args = r#"{"path":"app.py","old_string":"def f(self):\n    return 1","new_string":"def f(self):\n    return 2"}"#;
    let r = one_call(&sb, "edit_file", args, "edit_file");
    assert_eq!(r["is_error"], false, "{r}");
    assert!(
        r["content"]
            .as_str()
            .unwrap()
            .contains("only with indentation and trailing whitespace ignored")
    );
    assert_eq!(
        std::fs::read_to_string(sb.ws().join("app.py")).unwrap(),
        "class A:\n    def f(self):\n        return 2\n"
    );
    let r = one_call(&sb, "glob", r#"{"pattern":"**/parse_config.py"}"#, "glob");
    assert_eq!(
        r["content"],
        r#"no files match "**/parse_config.py"; try grep "parse_config" (the name inside files)"#
    );
}
