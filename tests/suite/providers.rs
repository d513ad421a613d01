//! A two-round run per provider: round 1 asks for two parallel read_file calls, round 2
//! answers. Checks the exit code, stdout, every transcript line, and that the second request
//! carries the tool results in that provider's exact wire format.

use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run, types};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const ANSWER: &str = "a.txt says alpha and b.txt says beta — both read ✓";

fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    sb.write("b.txt", "beta\n");
    sb
}

/// The transcript of a 2-round run must have exactly these lines, whatever the provider.
fn check_transcript(sb: &Sandbox, provider: &str, model: &str, round1_blocks: Value) {
    let lines = sb.transcript();
    assert_eq!(types(&lines), ["start", "round", "round", "end"]);
    let start = &lines[0];
    assert_eq!(start["v"], 1);
    assert_eq!(start["provider"], provider);
    assert_eq!(start["model"], model);
    assert_eq!(start["prompt"], sb.turn("read both files"));
    assert_eq!(start["workspace"], sb.ws().display().to_string());
    assert_eq!(
        start["tools"],
        json!(["read_file", "list_dir", "glob", "grep"])
    );

    let r1 = &lines[1];
    assert_eq!(r1["round"], 1);
    assert_eq!(r1["blocks"], round1_blocks);
    let ids = [
        round1_blocks[1]["id"].as_str().unwrap(),
        round1_blocks[2]["id"].as_str().unwrap(),
    ];
    let results = r1["results"].as_array().unwrap();
    let summary: Vec<(&str, &str, bool, &str)> = results
        .iter()
        .map(|r| {
            (
                r["tool_use_id"].as_str().unwrap(),
                r["name"].as_str().unwrap(),
                r["is_error"].as_bool().unwrap(),
                r["content"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (ids[0], "read_file", false, "     1\talpha\n"),
            (ids[1], "read_file", false, "     1\tbeta\n"),
        ]
    );
    assert_eq!(r1["stop_reason"], "tool_use");
    assert_eq!(r1["usage"], json!({"input_tokens":100,"output_tokens":20}));
    assert!(r1["model_ms"].is_u64() && r1["tools_ms"].is_u64());

    let r2 = &lines[2];
    assert_eq!(r2["round"], 2);
    assert_eq!(r2["blocks"], json!([{"type":"text","text":ANSWER}]));
    assert_eq!(r2["results"], json!([]));
    assert_eq!(r2["stop_reason"], "end_turn");

    let end = &lines[3];
    assert_eq!(end["status"], "completed");
    assert_eq!(end["exit_code"], 0);
    assert_eq!(end["rounds"], 2);
    assert_eq!(end["final_text"], ANSWER);
    assert_eq!(end["usage"], json!({"input_tokens":250,"output_tokens":50}));
    assert_eq!(end["error"], Value::Null);
    assert_eq!(end["tool_calls"], 2);
}

/// Runs "read both files" on `model` with the provider's key and base URL from `env`, and checks
/// that it answered ANSWER and exited 0.
fn read_both(sb: &Sandbox, model: &str, env: [(&str, String); 2]) {
    let out = run(sb
        .rounds()
        .envs(env)
        .args(["-m", model, "--transcript"])
        .arg(sb.transcript_path())
        .arg("read both files"));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, format!("{ANSWER}\n").as_str()),
        "{}",
        out.stderr
    );
}

#[test]
fn anthropic_two_rounds_with_parallel_tool_calls() {
    let sb = sandbox();
    let calls = [
        B::Text("Reading both."),
        B::Tool("toolu_1", "read_file", r#"{"path":"a.txt"}"#),
        B::Tool("toolu_2", "read_file", r#"{"path":"b.txt"}"#),
    ];
    let server = MockServer::start(vec![
        Reply::sse(sse::anthropic(&calls, "tool_use", 100, 20)),
        Reply::sse(sse::anthropic(&[B::Text(ANSWER)], "end_turn", 150, 30)),
    ]);
    read_both(
        &sb,
        "anthropic/claude-test",
        [
            ("ANTHROPIC_API_KEY", "sk-ant-test-key".into()),
            ("ANTHROPIC_BASE_URL", server.url()),
        ],
    );
    check_transcript(
        &sb,
        "anthropic",
        "claude-test",
        json!([
            {"type":"text","text":"Reading both."},
            {"type":"tool_use","id":"toolu_1","name":"read_file","input":{"path":"a.txt"}},
            {"type":"tool_use","id":"toolu_2","name":"read_file","input":{"path":"b.txt"}},
        ]),
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(
            (r.method.as_str(), r.path.as_str()),
            ("POST", "/v1/messages")
        );
        assert_eq!(r.header("x-api-key"), Some("sk-ant-test-key"));
        assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    }
    let first = requests[0].json();
    assert_eq!(first["model"], "claude-test");
    assert_eq!(first["stream"], true);
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["read_file", "list_dir", "glob", "grep"]);
    assert!(first["tools"][0]["input_schema"]["properties"]["path"].is_object());
    // Cache breakpoints: the last tool, the system prompt, the newest message, and the
    // newest message of the previous request.
    let cc = json!({"type": "ephemeral"});
    assert_eq!(
        first["messages"],
        json!([{"role":"user","content":[
            {"type":"text","text":sb.turn("read both files"),"cache_control":cc}
        ]}])
    );
    assert_eq!(first["tools"][3]["cache_control"], cc);
    assert!(first["tools"][0].get("cache_control").is_none());
    assert_eq!(first["system"][0]["cache_control"], cc);

    let second = requests[1].json();
    assert_eq!(
        second["messages"],
        json!([
            {"role":"user","content":[
                {"type":"text","text":sb.turn("read both files"),"cache_control":cc}
            ]},
            {"role":"assistant","content":[
                {"type":"text","text":"Reading both."},
                {"type":"tool_use","id":"toolu_1","name":"read_file","input":{"path":"a.txt"}},
                {"type":"tool_use","id":"toolu_2","name":"read_file","input":{"path":"b.txt"}},
            ]},
            {"role":"user","content":[
                {"type":"tool_result","tool_use_id":"toolu_1","content":"     1\talpha\n"},
                {"type":"tool_result","tool_use_id":"toolu_2","content":"     1\tbeta\n",
                 "cache_control":cc},
            ]},
        ])
    );
    assert_eq!(second["system"], first["system"]);
    assert_eq!(second["tools"], first["tools"]);
}

#[test]
fn openai_two_rounds_with_parallel_tool_calls() {
    let sb = sandbox();
    let calls = [
        B::Text("Reading both."),
        B::Tool("call_1", "read_file", r#"{"path": "a.txt"}"#),
        B::Tool("call_2", "read_file", r#"{"path": "b.txt"}"#),
    ];
    let server = MockServer::start(vec![
        Reply::sse(sse::openai(&calls, "tool_calls", 100, 20)),
        Reply::sse(sse::openai(&[B::Text(ANSWER)], "stop", 150, 30)),
    ]);
    read_both(
        &sb,
        "openai/gpt-test",
        [
            ("OPENAI_API_KEY", "sk-openai-test-key".into()),
            ("OPENAI_BASE_URL", format!("{}/v1", server.url())),
        ],
    );
    // OpenAI echoes arguments verbatim, so the transcript keeps their exact text.
    check_transcript(
        &sb,
        "openai",
        "gpt-test",
        json!([
            {"type":"text","text":"Reading both."},
            {"type":"tool_use","id":"call_1","name":"read_file","input":{"path":"a.txt"},"raw_input":"{\"path\": \"a.txt\"}"},
            {"type":"tool_use","id":"call_2","name":"read_file","input":{"path":"b.txt"},"raw_input":"{\"path\": \"b.txt\"}"},
        ]),
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(
            (r.method.as_str(), r.path.as_str()),
            ("POST", "/v1/chat/completions")
        );
        assert_eq!(r.header("authorization"), Some("Bearer sk-openai-test-key"));
    }
    let first = requests[0].json();
    assert_eq!(first["stream_options"], json!({"include_usage": true}));
    assert_eq!(first["messages"][0]["role"], "developer");
    assert_eq!(first["tools"][0]["type"], "function");
    assert_eq!(first["tools"][0]["function"]["name"], "read_file");

    let second = requests[1].json();
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages[0], first["messages"][0]);
    assert_eq!(
        messages[1..],
        [
            json!({"role":"user","content":sb.turn("read both files")}),
            json!({"role":"assistant","content":"Reading both.","tool_calls":[
                {"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\": \"a.txt\"}"}},
                {"id":"call_2","type":"function","function":{"name":"read_file","arguments":"{\"path\": \"b.txt\"}"}},
            ]}),
            json!({"role":"tool","tool_call_id":"call_1","content":"     1\talpha\n"}),
            json!({"role":"tool","tool_call_id":"call_2","content":"     1\tbeta\n"}),
        ]
    );
}

#[test]
fn ollama_preset_needs_no_key_and_sends_the_compatible_dialect() {
    let sb = sandbox();
    let server = MockServer::start(vec![Reply::sse(sse::openai(
        &[B::Text("hi")],
        "stop",
        5,
        1,
    ))]);
    let out = run(sb
        .rounds()
        .args(["-m", "ollama/qwen3:8b", "--no-transcript", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .arg("hello"));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "hi\n"),
        "{}",
        out.stderr
    );
    let req = &server.requests()[0];
    assert_eq!(req.header("authorization"), None);
    let body = req.json();
    assert_eq!(body["model"], "qwen3:8b");
    assert_eq!(body["messages"][0]["role"], "system");
}

#[test]
fn gemini_two_rounds_with_parallel_calls_and_the_signature_echoed_on_its_part() {
    let sb = sandbox();
    let calls = [
        B::Thinking("", "c2lnbmF0dXJlLWZvci10ZXN0"),
        B::Tool("", "read_file", r#"{"path":"a.txt"}"#),
        B::Tool("", "read_file", r#"{"path":"b.txt"}"#),
    ];
    let server = MockServer::start(vec![
        Reply::sse(sse::gemini(&calls, 100, 20)),
        Reply::sse(sse::gemini(&[B::Text(ANSWER)], 150, 30)),
    ]);
    read_both(
        &sb,
        "gemini/gemini-test",
        [
            ("GEMINI_API_KEY", "gemini-test-key".into()),
            ("GEMINI_BASE_URL", server.url()),
        ],
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].path,
        "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
    );
    assert_eq!(
        requests[0].header("x-goog-api-key"),
        Some("gemini-test-key")
    );
    let second = requests[1].json();
    assert_eq!(
        second["contents"],
        json!([
            {"role":"user","parts":[{"text":sb.turn("read both files")}]},
            {"role":"model","parts":[
                {"functionCall":{"name":"read_file","args":{"path":"a.txt"}},"thoughtSignature":"c2lnbmF0dXJlLWZvci10ZXN0"},
                {"functionCall":{"name":"read_file","args":{"path":"b.txt"}}},
            ]},
            {"role":"user","parts":[
                {"functionResponse":{"name":"read_file","response":{"output":"     1\talpha\n"}}},
                {"functionResponse":{"name":"read_file","response":{"output":"     1\tbeta\n"}}},
            ]},
        ])
    );
    let lines = sb.transcript();
    assert_eq!(lines[1]["results"].as_array().unwrap().len(), 2);
    assert_eq!(lines[3]["status"], "completed");
}

#[test]
fn every_openai_compatible_preset_runs_two_rounds_with_its_default_url_overridden() {
    for preset in ["llamacpp", "vllm", "ollama"] {
        let sb = sandbox();
        let calls = [
            B::Tool("c1", "read_file", r#"{"path":"a.txt"}"#),
            B::Tool("c2", "read_file", r#"{"path":"b.txt"}"#),
        ];
        let server = MockServer::start(vec![
            Reply::sse(sse::openai(&calls, "tool_calls", 10, 5)),
            Reply::sse(sse::openai(&[B::Text(ANSWER)], "stop", 20, 5)),
        ]);
        let out = run(sb
            .rounds()
            .args([
                "-m",
                &format!("{preset}/local-model"),
                "--no-transcript",
                "--base-url",
            ])
            .arg(format!("{}/v1", server.url()))
            .arg("read both files"));
        assert_eq!(
            (out.code, out.stdout.as_str()),
            (0, format!("{ANSWER}\n").as_str()),
            "{preset}: {}",
            out.stderr
        );
        let second = server.requests()[1].json();
        let tools: Vec<&Value> = second["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .collect();
        assert_eq!(tools.len(), 2, "{preset}");
        assert_eq!(tools[1]["content"], "     1\tbeta\n", "{preset}");
    }
}

#[test]
fn one_connection_serves_every_round() {
    let sb = sandbox();
    // The server ends each body a moment after its last event (real servers do); the tool (its
    // hook) takes longer than that, so the body can be finished before the next request.
    let call = |id: &'static str| {
        let mut r = Reply::sse(sse::anthropic(
            &[B::Tool(id, "read_file", r#"{"path":"a.txt"}"#)],
            "tool_use",
            1,
            1,
        ));
        r.body.push(crate::common::mock::Step::Sleep(
            std::time::Duration::from_millis(100),
        ));
        r
    };
    let server = MockServer::start(vec![call("t1"), call("t2"), sse::answer("done")]);
    let out =
        run(sb
            .anthropic(&server)
            .args(["--no-transcript", "--pre-tool-hook", "sleep 0.4", "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.requests().len(), 3);
    assert_eq!(
        server.connections(),
        1,
        "each round opened a new connection"
    );
}
