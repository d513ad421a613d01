//! Prompt caching as each provider wants it, checked on the wire: Anthropic breakpoints (never
//! more than the API's four, rolling with the conversation), the hour-long TTL, OpenAI's one
//! `prompt_cache_key` per run kept across `--resume`, and `--no-cache` sending none of it.

use serde_json::{Value, json};

use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run};

/// Three rounds: two rounds of parallel reads, then an answer.
fn three_rounds(sb: &Sandbox) -> MockServer {
    sb.write("a.txt", "alpha\n");
    sb.write("b.txt", "beta\n");
    let reads = |x: &str| {
        Reply::sse(sse::anthropic(
            &[
                B::Tool(&format!("{x}1"), "read_file", r#"{"path":"a.txt"}"#),
                B::Tool(&format!("{x}2"), "read_file", r#"{"path":"b.txt"}"#),
            ],
            "tool_use",
            10,
            5,
        ))
    };
    MockServer::start(vec![
        reads("r1_"),
        reads("r2_"),
        Reply::sse(sse::anthropic(&[B::Text("done")], "end_turn", 10, 5)),
    ])
}

/// Every `cache_control` in a request body, with where it sits.
fn breakpoints(body: &Value) -> Vec<(String, Value)> {
    fn walk(v: &Value, path: String, out: &mut Vec<(String, Value)>) {
        match v {
            Value::Object(map) => {
                for (k, child) in map {
                    if k == "cache_control" {
                        out.push((path.clone(), child.clone()));
                    } else {
                        walk(child, format!("{path}/{k}"), out);
                    }
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    walk(child, format!("{path}/{i}"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(body, String::new(), &mut out);
    out
}

#[test]
fn anthropic_breakpoints_roll_with_the_conversation_and_never_pass_four() {
    let sb = Sandbox::new();
    let server = three_rounds(&sb);
    let out = run(sb.anthropic(&server).args(["--no-transcript", "read both"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let cc = json!({"type": "ephemeral"});
    let expected = [
        // Round 1: tools, system, the prompt.
        vec!["/tools/3", "/system/0", "/messages/0/content/0"],
        // Round 2: and the newest tool results; the prompt was the previous newest message.
        vec![
            "/tools/3",
            "/system/0",
            "/messages/0/content/0",
            "/messages/2/content/1",
        ],
        // Round 3: the breakpoints moved on by one round.
        vec![
            "/tools/3",
            "/system/0",
            "/messages/2/content/1",
            "/messages/4/content/1",
        ],
    ];
    for (request, want) in requests.iter().zip(expected) {
        let body = request.json();
        let mut got: Vec<(String, Value)> = breakpoints(&body);
        got.sort_by(|a, b| a.0.cmp(&b.0));
        let mut want: Vec<&str> = want;
        want.sort();
        let places: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(places, want, "{body}");
        assert!(got.len() <= 4);
        assert!(got.iter().all(|(_, c)| *c == cc), "{got:?}");
        assert_eq!(request.header("anthropic-beta"), None);
    }
}

#[test]
fn the_hour_long_cache_uses_the_ttl_field_and_its_beta_and_no_cache_sends_nothing() {
    let sb = Sandbox::new();
    let server = three_rounds(&sb);
    let out =
        run(sb
            .anthropic(&server)
            .args(["--no-transcript", "--cache-ttl", "1h", "read both"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    for request in server.requests() {
        let marks = breakpoints(&request.json());
        assert!(!marks.is_empty());
        assert!(
            marks
                .iter()
                .all(|(_, c)| *c == json!({"type": "ephemeral", "ttl": "1h"})),
            "{marks:?}"
        );
        assert_eq!(
            request.header("anthropic-beta"),
            Some("extended-cache-ttl-2025-04-11")
        );
    }

    let sb = Sandbox::new();
    let server = three_rounds(&sb);
    let out = run(sb
        .anthropic(&server)
        .args(["--no-transcript", "--no-cache", "read both"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    for request in server.requests() {
        let body = request.json();
        assert_eq!(breakpoints(&body), vec![], "{body}");
        assert!(body["system"].is_string(), "{body}");
    }
}

fn openai_run(sb: &Sandbox, server: &MockServer, args: &[&str]) -> crate::common::Run {
    run(sb
        .rounds()
        .env("OPENAI_API_KEY", "k")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url()))
        .args(["-m", "openai/gpt-test"])
        .args(args))
}

#[test]
fn openai_gets_one_prompt_cache_key_per_run_kept_across_resume() {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let server = MockServer::start(vec![
        Reply::sse(sse::openai(
            &[B::Tool("c1", "read_file", r#"{"path":"a.txt"}"#)],
            "tool_calls",
            10,
            5,
        )),
        Reply::sse(sse::openai(&[B::Text("done")], "stop", 10, 5)),
    ]);
    let first = sb.path("first.jsonl");
    let out = openai_run(
        &sb,
        &server,
        &["--transcript", first.to_str().unwrap(), "go"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let run_id = crate::common::read_jsonl(&first)[0]["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    for request in server.requests() {
        assert_eq!(request.json()["prompt_cache_key"], run_id.as_str());
    }

    // A resumed run keeps the key of the run it continues, so it hits the same cache.
    let server = MockServer::start(vec![Reply::sse(sse::openai(
        &[B::Text("again")],
        "stop",
        10,
        5,
    ))]);
    let out = openai_run(
        &sb,
        &server,
        &[
            "--no-transcript",
            "--resume",
            first.to_str().unwrap(),
            "more",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        server.requests()[0].json()["prompt_cache_key"],
        run_id.as_str()
    );

    // The Responses API (a reasoning model) gets the same key.
    let server = MockServer::start(vec![Reply::sse(sse::responses(&[B::Text("x")], 1, 1, 0))]);
    let out = run(sb
        .rounds()
        .env("OPENAI_API_KEY", "k")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url()))
        .args(["-m", "openai/o4-mini", "--no-transcript", "--resume"])
        .arg(&first)
        .arg("more"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.requests()[0].path, "/v1/responses");
    assert_eq!(
        server.requests()[0].json()["prompt_cache_key"],
        run_id.as_str()
    );

    // --no-cache: no key; a compatible server never gets the field.
    let server = MockServer::start(vec![Reply::sse(sse::openai(&[B::Text("x")], "stop", 1, 1))]);
    let out = openai_run(&sb, &server, &["--no-transcript", "--no-cache", "go"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        server.requests()[0]
            .json()
            .get("prompt_cache_key")
            .is_none()
    );
    let server = MockServer::start(vec![Reply::sse(sse::openai(&[B::Text("x")], "stop", 1, 1))]);
    let out = run(sb
        .rounds()
        .args(["-m", "llamacpp/qwen", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .args(["--no-transcript", "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        server.requests()[0]
            .json()
            .get("prompt_cache_key")
            .is_none()
    );
}

/// The simulated 20-round run (see `cache_sim::twenty_rounds`) with `extra` flags; returns
/// the billed share of the uncached input and the run's end line.
fn twenty_round_cache_bill(sb: &Sandbox, file_bytes: usize, extra: &[&str]) -> (f64, Value) {
    let ratio = crate::common::cache_sim::twenty_rounds(&sb.ws(), file_bytes, |server| {
        let out = run(sb
            .anthropic(server)
            .args(["--max-rounds", "30", "--transcript"])
            .arg(sb.transcript_path())
            .args(extra)
            .arg(crate::common::cache_sim::PROMPT));
        assert_eq!(out.code, 0, "{}", out.stderr);
    });
    (ratio, sb.transcript().pop().unwrap())
}

/// The least a run of `n` requests can be billed, relative to uncached, when every request
/// adds `c` new tokens to a shared prefix: each token is written once (1.25) and then read by
/// every later request (0.1 each), against being sent in full every time.
fn floor(n: f64) -> f64 {
    (1.25 * n + 0.1 * n * (n - 1.0) / 2.0) / (n * (n + 1.0) / 2.0)
}

#[test]
fn a_twenty_round_run_bills_at_most_a_fifth_of_its_uncached_input() {
    // A CI job's instructions (16 KiB, as an AGENTS.md or a review checklist) as the system
    // prompt, 1 KiB read per round.
    let sb = Sandbox::new();
    let rules = "- Check every changed function for a test that would fail without the change.\n";
    std::fs::write(sb.path("system.md"), rules.repeat(16384 / rules.len())).unwrap();
    let system = sb.path("system.md");
    let system = system.to_str().unwrap();
    let (ratio, end) = twenty_round_cache_bill(&sb, 1024, &["--system-file", system]);
    eprintln!("16 KiB system prompt, 1 KiB per round: billed {ratio:.3} of the uncached input");
    assert!(ratio <= 0.2, "billed {ratio:.3} of the uncached input");
    // The usage the rounds report is what the simulated API reported.
    assert!(
        end["usage"]["cache_read_tokens"].as_u64().unwrap() > 0,
        "{end}"
    );

    // The built-in prompt is lean (about 800 tokens with the default tools), so a run that
    // adds 1 KiB a round is dominated by what it adds: it stays within 3% of the best any
    // caching scheme can do for that growth.
    let sb = Sandbox::new();
    let (lean, _) = twenty_round_cache_bill(&sb, 1024, &[]);
    eprintln!(
        "built-in prompt, 1 KiB per round: billed {lean:.3} (floor {:.3})",
        floor(21.0)
    );
    assert!(lean <= floor(21.0) * 1.03, "billed {lean:.3}");

    // The control: without cache hints every token is billed in full.
    let sb = Sandbox::new();
    let (ratio, _) = twenty_round_cache_bill(&sb, 1024, &["--no-cache"]);
    assert!((ratio - 1.0).abs() < 1e-9, "{ratio}");
}
