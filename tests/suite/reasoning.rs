//! Reasoning models: the OpenAI Responses API end to end (reasoning items carried from round to
//! round, through the transcript and `--resume`), and the flags that ask for reasoning or set the
//! temperature, as each provider receives them, or refused before any request.

use crate::common::mock::{MockServer, Recorded, Reply};
use crate::common::sse::{self, B};
use crate::common::{Run, Sandbox, run, types};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const ANSWER: &str = "a.txt says alpha, b.txt says beta ✓";

fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    sb.write("b.txt", "beta\n");
    sb
}

/// `rounds` against `server` as OpenAI (base URL with `/v1`), with a dummy key.
fn openai(sb: &Sandbox, server: &MockServer, args: &[&str]) -> Run {
    run(sb
        .rounds()
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url()))
        .args(args))
}

/// Fails the test unless `body` validates against the vendored SDK request schema.
fn check_request_schema(body: &Value) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/wire/openai-responses-request.schema.json"
    );
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(body)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{body:#}");
}

fn input(request: &Recorded) -> Vec<Value> {
    request.json()["input"].as_array().unwrap().clone()
}

/// Three rounds of o4-mini: a reasoning item before each call and before the answer.
fn three_rounds() -> Vec<Reply> {
    vec![
        Reply::sse(sse::responses(
            &[
                B::Thinking("Start with a.txt.", "enc-round-1"),
                B::Tool("call_a", "read_file", r#"{"path":"a.txt"}"#),
            ],
            100,
            40,
            30,
        )),
        Reply::sse(sse::responses(
            &[
                B::Thinking("", "enc-round-2"),
                B::Text("Now b.txt."),
                B::Tool("call_b", "read_file", r#"{"path": "b.txt"}"#),
            ],
            150,
            30,
            20,
        )),
        Reply::sse(sse::responses(
            &[B::Thinking("Both read.", "enc-round-3"), B::Text(ANSWER)],
            200,
            10,
            5,
        )),
    ]
}

fn reasoning(id: &str, encrypted: &str, summary: &[&str]) -> Value {
    let summary: Vec<Value> = summary
        .iter()
        .map(|t| json!({"type":"summary_text","text":t}))
        .collect();
    json!({"type":"reasoning","id":id,"summary":summary,"encrypted_content":encrypted})
}

#[test]
fn a_responses_run_of_three_rounds_sends_every_reasoning_item_back_unchanged() {
    let sb = sandbox();
    let server = MockServer::start(three_rounds());
    let t = sb.transcript_path();
    let out = openai(
        &sb,
        &server,
        &[
            "-m",
            "openai/o4-mini",
            "--transcript",
            t.to_str().unwrap(),
            "read a then b",
        ],
    );
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, format!("{ANSWER}\n").as_str()),
        "{}",
        out.stderr
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for r in &requests {
        assert_eq!(
            (r.method.as_str(), r.path.as_str()),
            ("POST", "/v1/responses")
        );
        assert_eq!(r.header("authorization"), Some("Bearer sk-test"));
        let body = r.json();
        check_request_schema(&body);
        assert_eq!(
            (
                &body["model"],
                &body["stream"],
                &body["store"],
                &body["include"]
            ),
            (
                &json!("o4-mini"),
                &json!(true),
                &json!(false),
                &json!(["reasoning.encrypted_content"])
            )
        );
        assert!(body["instructions"].as_str().unwrap().contains("workspace"));
        assert_eq!(body["tools"][0]["type"], "function");
        assert!(body.get("reasoning").is_none(), "no effort asked for");
    }
    let user = json!({"type":"message","role":"user","content":sb.turn("read a then b")});
    let call_a = json!({"type":"function_call","call_id":"call_a","name":"read_file","arguments":"{\"path\":\"a.txt\"}"});
    let out_a =
        json!({"type":"function_call_output","call_id":"call_a","output":"     1\talpha\n"});
    assert_eq!(input(&requests[0]), std::slice::from_ref(&user));
    assert_eq!(
        input(&requests[1]),
        [
            user,
            reasoning("rs_0", "enc-round-1", &["Start with a.txt."]),
            call_a,
            out_a
        ]
    );
    // Round 3 repeats round 2's input exactly, then round 2's own items.
    let third = input(&requests[2]);
    let (earlier, added) = third.split_at(4);
    assert_eq!(earlier, input(&requests[1]).as_slice());
    assert_eq!(
        added,
        [
            reasoning("rs_0", "enc-round-2", &[]),
            json!({"type":"message","role":"assistant","content":"Now b.txt."}),
            json!({"type":"function_call","call_id":"call_b","name":"read_file","arguments":"{\"path\": \"b.txt\"}"}),
            json!({"type":"function_call_output","call_id":"call_b","output":"     1\tbeta\n"}),
        ]
    );

    let lines = sb.transcript();
    assert_eq!(types(&lines), ["start", "round", "round", "round", "end"]);
    assert_eq!(lines[0]["provider"], "openai");
    assert_eq!(
        lines[1]["blocks"][0],
        json!({"type":"reasoning","id":"rs_0","encrypted_content":"enc-round-1","summary":["Start with a.txt."]})
    );
    assert_eq!(
        lines[2]["blocks"][0],
        json!({"type":"reasoning","id":"rs_0","encrypted_content":"enc-round-2"})
    );
    assert_eq!(
        lines[1]["usage"],
        json!({"input_tokens":100,"output_tokens":40,"reasoning_tokens":30})
    );
    assert_eq!(
        lines[4]["usage"],
        json!({"input_tokens":450,"output_tokens":80,"reasoning_tokens":55})
    );
}

#[test]
fn a_resumed_responses_run_sends_its_reasoning_to_openai_only() {
    let sb = sandbox();
    let server = MockServer::start(three_rounds());
    let first = sb.path("first.jsonl");
    let out = openai(
        &sb,
        &server,
        &[
            "-m",
            "o4-mini",
            "--transcript",
            first.to_str().unwrap(),
            "read a then b",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let recorded = input(&server.requests()[2]);

    // The same endpoint under its explicit name gets the reasoning items back from the file.
    let again = MockServer::start(vec![Reply::sse(sse::responses(&[B::Text("ok")], 1, 1, 0))]);
    let resume = [
        "-m",
        "openai-responses/o4-mini",
        "--no-transcript",
        "--resume",
        first.to_str().unwrap(),
        "and then?",
    ];
    let out = openai(&sb, &again, &resume);
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "ok\n"),
        "{}",
        out.stderr
    );
    let resumed = input(&again.requests()[0]);
    assert_eq!(resumed[..recorded.len()], recorded[..]);
    assert_eq!(
        resumed[recorded.len()..],
        [
            reasoning("rs_0", "enc-round-3", &["Both read."]),
            json!({"type":"message","role":"assistant","content":ANSWER}),
            json!({"type":"message","role":"user","content":sb.turn("and then?")}),
        ]
    );

    // Anthropic gets the conversation without any of them.
    let claude = MockServer::start(vec![sse::answer("ok")]);
    let out = run(sb.anthropic(&claude).args([
        "-m",
        "anthropic/claude-test",
        "--no-transcript",
        "--resume",
        first.to_str().unwrap(),
        "and then?",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let body = claude.requests()[0].json();
    let kinds: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert!(
        !kinds.is_empty()
            && kinds
                .iter()
                .all(|k| ["text", "tool_use", "tool_result"].contains(k)),
        "{kinds:?}"
    );
}

#[test]
fn auto_picks_the_api_by_model_and_api_overrides_it() {
    let text = || Reply::sse(sse::openai(&[B::Text("hi")], "stop", 1, 1));
    let responses = || Reply::sse(sse::responses(&[B::Text("hi")], 1, 1, 0));
    for (args, reply, path) in [
        (vec!["-m", "openai/gpt-4.1"], text(), "/v1/chat/completions"),
        (vec!["-m", "gpt-5-mini"], responses(), "/v1/responses"),
        (
            vec!["-m", "openai/o3", "--api", "chat"],
            text(),
            "/v1/chat/completions",
        ),
        (
            vec!["-m", "openai/gpt-4.1", "--api", "responses"],
            responses(),
            "/v1/responses",
        ),
        (
            vec!["-m", "openai-responses/gpt-4.1"],
            responses(),
            "/v1/responses",
        ),
    ] {
        let sb = Sandbox::new();
        let server = MockServer::start(vec![reply]);
        let out = openai(
            &sb,
            &server,
            &[args.as_slice(), &["--no-transcript", "hello"][..]].concat(),
        );
        assert_eq!(
            (out.code, out.stdout.as_str()),
            (0, "hi\n"),
            "{args:?}: {}",
            out.stderr
        );
        assert_eq!(server.requests()[0].path, path, "{args:?}");
    }
    // A compatible server stays on chat unless told otherwise.
    let sb = Sandbox::new();
    let server = MockServer::start(vec![responses()]);
    let url = format!("{}/v1", server.url());
    let out = run(sb.rounds().args([
        "-m",
        "ollama/o3-lookalike",
        "--api",
        "responses",
        "--base-url",
        &url,
        "--no-transcript",
        "hi",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.requests()[0].path, "/v1/responses");
    assert!(server.requests()[0].json().get("include").is_none());
}

/// The first request body of a one-answer run with `args`, against `reply`.
fn body_of(sb: &Sandbox, env: &[(&str, String)], args: &[&str], reply: Reply) -> Value {
    let server = MockServer::start(vec![reply]);
    let url = server.url();
    let env: Vec<(&str, String)> = env
        .iter()
        .map(|(k, v)| (*k, v.replace("{url}", &url)))
        .collect();
    let out = run(sb
        .rounds()
        .envs(env)
        .args(args)
        .args(["--no-transcript", "hello"]));
    assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
    server.requests()[0].json()
}

#[test]
fn reasoning_effort_temperature_and_thinking_reach_each_wire_format() {
    let sb = Sandbox::new();
    let openai = [
        ("OPENAI_API_KEY", "k".into()),
        ("OPENAI_BASE_URL", "{url}/v1".into()),
    ];
    let gemini = [
        ("GEMINI_API_KEY", "k".into()),
        ("GEMINI_BASE_URL", "{url}".into()),
    ];
    let anthropic = [
        ("ANTHROPIC_API_KEY", "k".into()),
        ("ANTHROPIC_BASE_URL", "{url}".into()),
    ];
    let responses = || Reply::sse(sse::responses(&[B::Text("hi")], 1, 1, 0));
    let chat = || Reply::sse(sse::openai(&[B::Text("hi")], "stop", 1, 1));
    let gem = || Reply::sse(sse::gemini(&[B::Text("hi")], 1, 1));

    let body = body_of(
        &sb,
        &openai,
        &["-m", "openai/o3", "--reasoning-effort", "low"],
        responses(),
    );
    check_request_schema(&body);
    assert_eq!(body["reasoning"], json!({"effort":"low"}));
    let body = body_of(
        &sb,
        &openai,
        &[
            "-m",
            "openai/gpt-4.1",
            "--reasoning-effort",
            "medium",
            "--temperature",
            "0.2",
        ],
        chat(),
    );
    assert_eq!(
        (&body["reasoning_effort"], &body["temperature"]),
        (&json!("medium"), &json!(0.2))
    );
    let body = body_of(
        &sb,
        &openai,
        &["-m", "openai-responses/gpt-4.1", "--temperature", "1.5"],
        responses(),
    );
    check_request_schema(&body);
    assert_eq!(body["temperature"], json!(1.5));

    let body = body_of(
        &sb,
        &gemini,
        &[
            "-m",
            "gemini/gemini-2.5-flash",
            "--reasoning-effort",
            "high",
            "--temperature",
            "0.7",
        ],
        gem(),
    );
    assert_eq!(
        body["generationConfig"],
        json!({"temperature":0.7,"thinkingConfig":{"thinkingBudget":24576}})
    );
    let body = body_of(
        &sb,
        &gemini,
        &[
            "-m",
            "gemini/gemini-3-pro-preview",
            "--reasoning-effort",
            "low",
        ],
        gem(),
    );
    assert_eq!(
        body["generationConfig"],
        json!({"thinkingConfig":{"thinkingLevel":"LOW"}})
    );

    let body = body_of(
        &sb,
        &anthropic,
        &["-m", "anthropic/claude-test", "--thinking-budget", "2048"],
        sse::answer("hi"),
    );
    assert_eq!(
        body["thinking"],
        json!({"type":"enabled","budget_tokens":2048})
    );
    assert_eq!(body["max_tokens"], 2048 + 8192);
    assert!(body.get("temperature").is_none());
    let body = body_of(
        &sb,
        &anthropic,
        &[
            "-m",
            "anthropic/claude-test",
            "--reasoning-effort",
            "medium",
            "--max-tokens",
            "9000",
        ],
        sse::answer("hi"),
    );
    assert_eq!(
        (&body["thinking"]["budget_tokens"], &body["max_tokens"]),
        (&json!(8192), &json!(9000))
    );
    let body = body_of(
        &sb,
        &anthropic,
        &["-m", "anthropic/claude-test", "--temperature", "0"],
        sse::answer("hi"),
    );
    assert_eq!(
        (&body["temperature"], body.get("thinking")),
        (&json!(0.0), None)
    );
}

#[test]
fn options_a_model_cannot_take_are_usage_errors_before_any_request() {
    let sb = Sandbox::new();
    for (model, flags, says) in [
        (
            "openai/o3",
            vec!["--temperature", "0.2"],
            "o3 is a reasoning model",
        ),
        (
            "gpt-5",
            vec!["--temperature", "1", "--api", "chat"],
            "gpt-5 is a reasoning model",
        ),
        (
            "anthropic/claude-test",
            vec!["--thinking-budget", "4096", "--temperature", "0.5"],
            "extended thinking",
        ),
        (
            "anthropic/claude-test",
            vec!["--thinking-budget", "4096", "--max-tokens", "4096"],
            "larger than the thinking budget",
        ),
        (
            "anthropic/claude-test",
            vec!["--thinking-budget", "500"],
            "at least 1024",
        ),
        (
            "anthropic/claude-test",
            vec!["--temperature", "1.5"],
            "from 0 to 1",
        ),
        (
            "openai/gpt-4.1",
            vec!["--thinking-budget", "2048"],
            "--reasoning-effort",
        ),
        (
            "anthropic/claude-test",
            vec!["--api", "responses"],
            "--api responses",
        ),
        ("openai-responses/o3", vec!["--api", "chat"], "--api chat"),
    ] {
        let server = MockServer::start(vec![]);
        let out = run(sb
            .rounds()
            .env("OPENAI_API_KEY", "k")
            .env("OPENAI_BASE_URL", format!("{}/v1", server.url()))
            .env("ANTHROPIC_API_KEY", "k")
            .env("ANTHROPIC_BASE_URL", server.url())
            .args(["-m", model])
            .args(&flags)
            .args(["--no-transcript", "hello"]));
        assert_eq!(out.code, 2, "{model} {flags:?}: {}", out.stderr);
        assert!(
            out.stderr.contains(says),
            "{model} {flags:?}: {}",
            out.stderr
        );
        assert!(
            server.requests().is_empty(),
            "{model} {flags:?} made a request"
        );
    }
}
