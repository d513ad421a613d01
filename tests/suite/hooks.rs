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

/// A `write_file` call that leaves `ran-ID.txt` behind if it runs.
fn write_call(id: &str) -> (String, String) {
    (
        id.to_owned(),
        json!({"path": format!("ran-{id}.txt"), "content": "x"}).to_string(),
    )
}

#[test]
fn a_pre_hook_that_fails_in_any_way_vetoes_the_call() {
    let sb = Sandbox::new();
    // (call id, what the hook does for that call, what the model must be told). The hook is
    // a guard: whatever way it fails, the call must not run.
    let hostile = [
        (
            "exit1",
            "echo broken >&2; exit 1",
            "failed (exit 1): broken",
        ),
        ("signal", "kill -9 $$", "was killed by signal 9"),
        (
            "timeout",
            "echo $$ > hook.pid; exec sleep 300",
            "timed out after 1.0s",
        ),
        (
            "prose",
            "echo 'looks fine to me'",
            "not a complete JSON object",
        ),
        (
            "cut",
            r#"printf '{"input": {"path": "other.txt", "content": "'"#,
            "not a complete JSON object",
        ),
        ("array", "echo '[1]'", "printed an array on stdout"),
        (
            "badutf8",
            r#"printf '{"input": {"path": "\377.txt", "content": "x"}}'"#,
            "not a complete JSON object",
        ),
        (
            "flood",
            r#"head -c 17000000 /dev/zero | tr '\0' ' '; echo '{}'"#,
            "printed 17000003 bytes on stdout, more than the 16 MiB",
        ),
    ];
    // The controls: a hook that says nothing lets the call run; one whose rewrite is far
    // larger than the 68 KiB rounds used to read has its rewrite run, not the original.
    let quiet = ("quiet", ":");
    let rewrite = (
        "rewrite",
        r#"printf '{"input": {"path": "rewritten.txt", "content": "'; head -c 200000 /dev/zero | tr '\0' y; printf '"}}'"#,
    );
    let mut script = String::from("case \"$ROUNDS_TOOL_USE_ID\" in\n");
    for (id, does) in hostile
        .iter()
        .map(|(id, does, _)| (*id, *does))
        .chain([quiet, rewrite])
    {
        script.push_str(&format!("{id}) {does} ;;\n"));
    }
    script.push_str("esac");
    let calls: Vec<(String, String)> = hostile
        .iter()
        .map(|(id, ..)| *id)
        .chain([quiet.0, rewrite.0])
        .map(write_call)
        .collect();
    let blocks: Vec<B> = calls
        .iter()
        .map(|(id, input)| B::Tool(id, "write_file", input))
        .collect();
    let server = server(&blocks);
    let out = rounds(
        &sb,
        &server,
        &[
            "-a",
            "write_file",
            "--tool-timeout",
            "1",
            "--pre-tool-hook",
            &script,
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = results(&sb);
    for (i, (id, _, why)) in hostile.iter().enumerate() {
        let content = r[i]["content"].as_str().unwrap();
        assert_eq!(r[i]["error_kind"], "vetoed", "{id}: {}", r[i]);
        assert!(
            content.contains(why) && content.contains("the call was not run"),
            "{id}: {content}"
        );
        assert!(!sb.ws().join(format!("ran-{id}.txt")).exists(), "{id} ran");
        assert!(out.stderr.contains(why), "{id}: warned: {}", out.stderr);
    }
    assert!(!sb.ws().join("other.txt").exists());
    let n = hostile.len();
    assert_eq!(r[n]["is_error"], false, "{}", r[n]);
    assert!(sb.ws().join("ran-quiet.txt").exists());
    assert_eq!(r[n + 1]["is_error"], false, "{}", r[n + 1]);
    assert!(
        !sb.ws().join("ran-rewrite.txt").exists(),
        "the original ran"
    );
    assert_eq!(
        std::fs::read_to_string(sb.ws().join("rewritten.txt")).unwrap(),
        "y".repeat(200_000),
        "the rewritten input ran, whole"
    );
    let pid = std::fs::read_to_string(sb.ws().join("hook.pid")).unwrap();
    assert!(
        !std::path::Path::new(&format!("/proc/{}", pid.trim())).exists(),
        "the timed-out hook survived"
    );
}

#[test]
fn a_post_hook_that_fails_withholds_the_result() {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let server = server(&[
        B::Tool("crash", "read_file", r#"{"path":"a.txt"}"#),
        B::Tool("slow", "read_file", r#"{"path":"./a.txt"}"#),
        B::Tool("fine", "read_file", r#"{"path":"a.txt","start_line":1}"#),
    ]);
    let hook = r#"case "$ROUNDS_TOOL_USE_ID" in crash) exit 1 ;; slow) exec sleep 300 ;; esac"#;
    let out = rounds(
        &sb,
        &server,
        &["--tool-timeout", "1", "--post-tool-hook", hook],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = results(&sb);
    for (result, why) in r.iter().zip(["failed (exit 1)", "timed out after 1.0s"]) {
        let content = result["content"].as_str().unwrap();
        assert_eq!(result["error_kind"], "vetoed", "{result}");
        assert!(
            content.contains(why) && content.contains("its result was withheld"),
            "{content}"
        );
        assert!(!content.contains("alpha"), "{content}");
    }
    // The control: the same hook exiting 0 keeps the result.
    assert_eq!(r[2]["content"], "     1\talpha\n");
}

#[test]
fn a_call_id_no_hook_can_be_given_vetoes_the_call() {
    // A replayed file chooses its ids: one with a NUL cannot be put in ROUNDS_TOOL_USE_ID, so
    // the hook cannot start, and that must not let the call run unguarded.
    let sb = Sandbox::new();
    let server = server(&[B::Tool("t1", "write_file", &write_call("t1").1)]);
    let out = rounds(&sb, &server, &["-a", "write_file"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let recorded = std::fs::read_to_string(sb.transcript_path()).unwrap();
    let hostile = recorded.replace(r#""t1""#, r#""t\u0000x""#);
    assert_ne!(hostile, recorded);
    for (name, text) in [("control.jsonl", &recorded), ("hostile.jsonl", &hostile)] {
        std::fs::write(sb.path(name), text).unwrap();
        std::fs::remove_file(sb.ws().join("ran-t1.txt")).unwrap();
        let out = run(sb
            .rounds()
            .arg("-m")
            .arg(format!("replay:{}", sb.path(name).display()))
            .args([
                "-a",
                "write_file",
                "--pre-tool-hook",
                "exit 0",
                "--transcript",
            ])
            .arg(sb.transcript_path())
            .arg("go"));
        assert_eq!(out.code, 0, "{name}: {}", out.stderr);
        let r = &results(&sb)[0];
        if name == "control.jsonl" {
            assert_eq!(r["is_error"], false, "{r}");
            // Put back for the next case, which must not run it.
            assert!(sb.ws().join("ran-t1.txt").exists());
        } else {
            assert_eq!(r["error_kind"], "vetoed", "{r}");
            assert!(
                r["content"].as_str().unwrap().contains("could not start"),
                "{r}"
            );
            assert!(
                !sb.ws().join("ran-t1.txt").exists(),
                "the call ran unguarded"
            );
        }
    }
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
