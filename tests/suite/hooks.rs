//! Pre- and post-tool hooks through the real binary: what they receive, how they veto, replace
//! input, fail, and time out.

use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn server(calls: &[B]) -> MockServer {
    MockServer::start(vec![
        Reply::sse(sse::anthropic(calls, "tool_use", 10, 5)),
        Reply::sse(sse::anthropic(&[B::Text("done")], "end_turn", 10, 5)),
    ])
}

fn rounds(sb: &Sandbox, server: &MockServer, args: &[&str]) -> crate::common::Run {
    run(sb
        .rounds()
        .env("ANTHROPIC_API_KEY", "sk-hook-secret")
        .env("ANTHROPIC_BASE_URL", server.url())
        .args(args)
        .arg("--transcript")
        .arg(sb.transcript_path())
        .arg("go"))
}

fn results(sb: &Sandbox) -> Vec<Value> {
    sb.transcript()[1]["results"].as_array().unwrap().clone()
}

#[test]
fn a_pre_hook_sees_the_call_and_can_replace_its_input() {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    sb.write("b.txt", "beta\n");
    let server = server(&[B::Tool("t1", "read_file", r#"{"path":"a.txt"}"#)]);
    let hook = r#"cat > seen.json; env > hook-env.txt; echo '{"input":{"path":"b.txt"}}'"#;
    let out = rounds(&sb, &server, &["--pre-tool-hook", hook]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let seen: Value =
        serde_json::from_str(&std::fs::read_to_string(sb.ws().join("seen.json")).unwrap()).unwrap();
    assert_eq!(
        seen,
        json!({"event":"pre_tool_use","tool":"read_file","id":"t1","input":{"path":"a.txt"}})
    );
    assert_eq!(
        results(&sb)[0]["content"],
        "     1\tbeta\n",
        "the hook's input was used"
    );
    let env = std::fs::read_to_string(sb.ws().join("hook-env.txt")).unwrap();
    assert!(
        env.contains("ROUNDS_TOOL_NAME=read_file") && env.contains("ROUNDS_TOOL_USE_ID=t1"),
        "{env}"
    );
    assert!(
        !env.contains("sk-hook-secret"),
        "hooks get the scrubbed environment"
    );
}

#[test]
fn exit_2_vetoes_with_the_hooks_stderr_and_the_run_goes_on() {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let server = server(&[
        B::Tool("t1", "read_file", r#"{"path":"a.txt"}"#),
        B::Tool("t2", "list_dir", r#"{}"#),
    ]);
    let hook = r#"if grep -q read_file; then echo "reading is forbidden today" >&2; exit 2; fi"#;
    let out = rounds(&sb, &server, &["--pre-tool-hook", hook]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = results(&sb);
    assert_eq!(
        (r[0]["error_kind"].as_str(), r[0]["content"].as_str()),
        (Some("vetoed"), Some("reading is forbidden today"))
    );
    assert_eq!(r[1]["is_error"], false);
    let sent = &server.requests()[1].json()["messages"][2]["content"][0];
    assert_eq!(
        (sent["is_error"].as_bool(), sent["content"].as_str()),
        (Some(true), Some("reading is forbidden today"))
    );
    assert_eq!(
        sb.transcript().last().unwrap()["tool_errors"],
        json!({"vetoed": 1})
    );
}

#[test]
fn a_replacement_input_must_still_pass_the_schema_and_the_allowlist() {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    sb.write("secret.txt", "s\n");
    let server = server(&[
        B::Tool("t1", "read_file", r#"{"path":"a.txt"}"#),
        B::Tool("t2", "grep", r#"{"pattern":"x"}"#),
    ]);
    let hook = r#"if grep -q read_file; then echo '{"input":{"path":"secret.txt"}}'; else echo '{"input":{"pattern":7}}'; fi"#;
    let out = rounds(
        &sb,
        &server,
        &["--pre-tool-hook", hook, "--deny", "read_file(secret.txt)"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = results(&sb);
    assert_eq!(r[0]["error_kind"], "denied");
    assert!(
        r[0]["content"]
            .as_str()
            .unwrap()
            .starts_with("the pre-tool hook's replacement input was refused"),
        "{}",
        r[0]
    );
    assert_eq!(r[1]["error_kind"], "schema");
}

#[test]
fn a_failing_or_slow_hook_is_a_warning_and_leaves_nothing_behind() {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let server = server(&[B::Tool("t1", "read_file", r#"{"path":"a.txt"}"#)]);
    let out = rounds(
        &sb,
        &server,
        &[
            "--tool-timeout",
            "1",
            "--pre-tool-hook",
            "echo broken >&2; exit 1",
            "--pre-tool-hook",
            "echo $$ > hook.pid; exec sleep 300",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("pre_tool_use hook \"echo broken >&2; exit 1\" failed (exit 1): broken"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("timed out after 1.0s and was killed"),
        "{}",
        out.stderr
    );
    assert_eq!(
        results(&sb)[0]["content"],
        "     1\talpha\n",
        "the call went on"
    );
    let pid = std::fs::read_to_string(sb.ws().join("hook.pid")).unwrap();
    assert!(
        !std::path::Path::new(&format!("/proc/{}", pid.trim())).exists(),
        "the hook process survived"
    );
}

#[test]
fn a_post_hook_sees_the_result_and_exit_2_replaces_it() {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let server = server(&[B::Tool("t1", "read_file", r#"{"path":"a.txt"}"#)]);
    let hook = r#"cat > post.json; echo "result withheld" >&2; exit 2"#;
    let out = rounds(&sb, &server, &["--post-tool-hook", hook]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let seen: Value =
        serde_json::from_str(&std::fs::read_to_string(sb.ws().join("post.json")).unwrap()).unwrap();
    assert_eq!(seen["event"], "post_tool_use");
    assert_eq!(
        seen["result"],
        json!({"content":"     1\talpha\n","is_error":false,"error_kind":null})
    );
    let r = &results(&sb)[0];
    assert_eq!(
        (r["error_kind"].as_str(), r["content"].as_str()),
        (Some("vetoed"), Some("result withheld"))
    );
}

#[test]
fn long_results_keep_head_and_tail_and_the_whole_goes_to_a_file() {
    let sb = Sandbox::new();
    let body: String = (1..=2000).map(|i| format!("line {i}\n")).collect();
    sb.write("big.txt", &body);
    let server = server(&[B::Tool("t1", "read_file", r#"{"path":"big.txt"}"#)]);
    let out = rounds(&sb, &server, &["--max-result-bytes", "2000"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = &results(&sb)[0];
    let content = r["content"].as_str().unwrap();
    assert_eq!(r["truncated"], true);
    assert!(r["bytes"].as_u64().unwrap() > 20_000, "{r}");
    assert!(content.len() < 2300, "{}", content.len());
    assert!(
        content.starts_with("     1\tline 1\n") && content.ends_with("  2000\tline 2000\n"),
        "{content}"
    );
    let full = r["full_output"].as_str().unwrap();
    assert!(
        content.contains(&format!("the whole output is in {full}")),
        "{content}"
    );
    let saved = std::fs::read_to_string(full).unwrap();
    assert_eq!(saved.len() as u64, r["bytes"].as_u64().unwrap());
    assert!(saved.contains("  1000\tline 1000\n"));
    // The model got the capped text, not the whole.
    assert_eq!(
        server.requests()[1].json()["messages"][2]["content"][0]["content"],
        content
    );
}
