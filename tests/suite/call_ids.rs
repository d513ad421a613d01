//! Tool-call ids come unchanged from the provider (or a proxy, or a local server), and a hostile
//! one can choose them: a NUL, a newline, an escape sequence, a huge or repeated id. Each
//! provider's mapper replaces those with generated ids, and everything after — the hooks, the
//! transcript, the results and the next request — refers to the replacement, consistently.

use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// The ids a hostile provider sends, one `list_dir` call each. The first is the control: a
/// normal id that must pass unchanged; the last repeats it.
fn hostile_ids() -> Vec<String> {
    vec![
        "ok-1".into(),
        "t\0x".into(),
        "a\nb".into(),
        "\u{1b}[31mred".into(),
        "x".repeat(200),
        "ok-1".into(),
    ]
}

/// Each call's arguments, different for each, so that no call is a copy of another (the
/// loop guards would run a copy once).
fn arguments(i: usize) -> Value {
    json!({"depth": i % 5 + 1, "path": if i < 5 { "." } else { "./" }})
}

/// What every provider's ids must become: the control kept, the others generated.
fn expected(prefix: &str) -> Vec<String> {
    let mut want = vec!["ok-1".to_owned()];
    want.extend((1..=5).map(|n| format!("{prefix}1_{n}")));
    want
}

const HOOK: &str = r#"printf '%s\n' "$ROUNDS_TOOL_USE_ID" >> ids.log"#;

/// Runs rounds against `server` with `provider_args`, the id-logging hook and a transcript;
/// returns (ids the hook saw, sorted; tool_use ids and result ids of the transcript).
fn run_with(sb: &Sandbox, provider_args: &[(&str, String)], model: &str) -> Vec<Vec<String>> {
    let mut cmd = sb.rounds();
    for (k, v) in provider_args {
        cmd.env(k, v);
    }
    let out = run(cmd
        .args(["-m", model, "--pre-tool-hook", HOOK, "--transcript"])
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let mut seen: Vec<String> = std::fs::read_to_string(sb.ws().join("ids.log"))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    seen.sort();
    let round = &sb.transcript()[1];
    let strings = |v: &Value, key: &str| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .filter_map(|b| b[key].as_str().map(str::to_owned))
            .collect()
    };
    let results = &round["results"];
    assert!(
        results
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["is_error"] == false),
        "{results}"
    );
    vec![
        seen,
        strings(&round["blocks"], "id"),
        strings(results, "tool_use_id"),
    ]
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[test]
fn anthropic_ids_that_are_not_plain_are_replaced_everywhere() {
    let sb = Sandbox::new();
    let ids = hostile_ids();
    let args: Vec<String> = (0..ids.len()).map(|i| arguments(i).to_string()).collect();
    let blocks: Vec<B> = ids
        .iter()
        .zip(&args)
        .map(|(id, args)| B::Tool(id, "list_dir", args))
        .collect();
    let server = MockServer::start(vec![
        Reply::sse(sse::anthropic(&blocks, "tool_use", 10, 5)),
        sse::answer("done"),
    ]);
    let want = expected("toolu_rounds_");
    let got = run_with(
        &sb,
        &[
            ("ANTHROPIC_API_KEY", "k".into()),
            ("ANTHROPIC_BASE_URL", server.url()),
        ],
        "anthropic/claude-test",
    );
    assert_eq!(got, [sorted(want.clone()), want.clone(), want.clone()]);
    let body = server.requests()[1].json();
    let messages = body["messages"].as_array().unwrap();
    let of = |m: &Value, key: &str| -> Vec<String> {
        m["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|b| b[key].as_str().map(str::to_owned))
            .collect()
    };
    assert_eq!(of(&messages[1], "id"), want, "the calls sent back");
    assert_eq!(of(&messages[2], "tool_use_id"), want, "their results");
}

#[test]
fn openai_ids_that_are_not_plain_are_replaced_everywhere() {
    let sb = Sandbox::new();
    let ids = hostile_ids();
    let args: Vec<String> = (0..ids.len()).map(|i| arguments(i).to_string()).collect();
    let blocks: Vec<B> = ids
        .iter()
        .zip(&args)
        .map(|(id, args)| B::Tool(id, "list_dir", args))
        .collect();
    let server = MockServer::start(vec![
        Reply::sse(sse::openai(&blocks, "tool_calls", 10, 5)),
        Reply::sse(sse::openai(&[B::Text("done")], "stop", 10, 5)),
    ]);
    let want = expected("call_rounds_");
    let got = run_with(
        &sb,
        &[
            ("OPENAI_API_KEY", "k".into()),
            ("OPENAI_BASE_URL", format!("{}/v1", server.url())),
        ],
        "openai/gpt-test",
    );
    assert_eq!(got, [sorted(want.clone()), want.clone(), want.clone()]);
    let body = server.requests()[1].json();
    let messages = body["messages"].as_array().unwrap();
    let calls: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    let results: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["tool_call_id"].as_str())
        .collect();
    assert_eq!(calls, want, "the calls sent back");
    assert_eq!(results, want, "their results");
}

#[test]
fn gemini_ids_that_are_not_plain_are_replaced_and_never_sent_back() {
    let sb = Sandbox::new();
    let ids = hostile_ids();
    let parts: Vec<Value> = ids
        .iter()
        .enumerate()
        .map(
            |(i, id)| json!({"functionCall": {"name": "list_dir", "args": arguments(i), "id": id}}),
        )
        .collect();
    let chunk = json!({"candidates": [{"content": {"parts": parts, "role": "model"},
        "index": 0, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5}});
    let server = MockServer::start(vec![
        Reply::sse(vec![format!("data: {chunk}\r\n\r\n")]),
        Reply::sse(sse::gemini(&[B::Text("done")], 10, 5)),
    ]);
    let want = expected("gemini_call_");
    let got = run_with(
        &sb,
        &[
            ("GEMINI_API_KEY", "k".into()),
            ("GEMINI_BASE_URL", server.url()),
        ],
        "gemini/gemini-test",
    );
    assert_eq!(got, [sorted(want.clone()), want.clone(), want.clone()]);
    // Only the id Gemini really issued goes back, on the call and on its response.
    let body = server.requests()[1].json();
    let sent = |key: &str| -> Vec<Value> {
        body["contents"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["parts"].as_array().unwrap().clone())
            .filter_map(|p| p.get(key).map(|f| f["id"].clone()))
            .collect()
    };
    let mut want_sent = vec![json!("ok-1")];
    want_sent.extend(std::iter::repeat_n(Value::Null, 5));
    assert_eq!(sent("functionCall"), want_sent);
    assert_eq!(sent("functionResponse"), want_sent);
}
