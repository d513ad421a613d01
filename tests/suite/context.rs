//! Context that never overflows: before a request would pass the window, the oldest tool
//! results are elided from the requests (never from the transcript), in chunks so the cached
//! prefix stays put between elisions; a provider that still refuses a request as too long gets
//! one harder retry; `--resume` rebuilds the same view.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run};

const ROUNDS: usize = 30;

/// A model that reads `f{n}.txt` in round n, then answers; it reports the request's size
/// (bytes / 4) as its input tokens, and refuses, as Anthropic does, any request over `refuse`
/// tokens. Returns the server and the sizes of the requests it got.
fn reader(refuse: u64) -> (MockServer, Arc<Mutex<Vec<u64>>>) {
    let sizes = Arc::new(Mutex::new(Vec::new()));
    let seen = sizes.clone();
    let mut n = 0;
    let server = MockServer::respond(move |request| {
        let tokens = request.body.len() as u64 / 4;
        seen.lock().unwrap().push(tokens);
        if tokens > refuse {
            let message = format!("prompt is too long: {tokens} tokens > {refuse} maximum");
            return Reply::error(
                400,
                &json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}})
                    .to_string(),
            );
        }
        n += 1;
        let usage = json!({"input_tokens": tokens, "output_tokens": 1});
        let events = if n <= ROUNDS {
            let (id, input) = (format!("t{n}"), format!(r#"{{"path":"f{}.txt"}}"#, n - 1));
            sse::anthropic_with_usage(&[B::Tool(&id, "read_file", &input)], "tool_use", usage, 20)
        } else {
            sse::anthropic_with_usage(&[B::Text("read them all")], "end_turn", usage, 5)
        };
        Reply::sse(events)
    });
    (server, sizes)
}

fn files(sb: &Sandbox) {
    for i in 0..ROUNDS {
        let line = format!("file {i}: a line of text the model reads, padded out\n");
        sb.write(&format!("f{i}.txt"), &line.repeat(8192 / line.len()));
    }
}

fn results(lines: &[Value]) -> Vec<&Value> {
    lines
        .iter()
        .filter(|l| l["type"] == "round")
        .flat_map(|l| l["results"].as_array().unwrap())
        .collect()
}

/// The run the tests here make: a 20k window, room for every round, a transcript.
fn read_every_file(sb: &Sandbox, server: &MockServer) -> crate::common::Run {
    run(sb
        .anthropic(server)
        .args([
            "--context-window",
            "20000",
            "--max-rounds",
            "40",
            "--transcript",
        ])
        .arg(sb.transcript_path())
        .arg("read every file"))
}

#[test]
fn thirty_rounds_of_8_kb_fit_a_20k_window_and_the_transcript_keeps_everything() {
    let sb = Sandbox::new();
    files(&sb);
    let (server, sizes) = reader(u64::MAX);
    let out = read_every_file(&sb, &server);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sizes = sizes.lock().unwrap().clone();
    assert_eq!(sizes.len(), ROUNDS + 1);
    let largest = sizes.iter().max().unwrap();
    assert!(
        *largest <= 20_000,
        "a request of {largest} tokens: {sizes:?}"
    );
    // Whole in the transcript: every result holds its file's 8 KiB.
    let lines = sb.transcript();
    let all = results(&lines);
    assert_eq!(all.len(), ROUNDS);
    for r in &all {
        let content = r["content"].as_str().unwrap();
        assert!(
            content.len() > 8000 && !content.starts_with("[result elided"),
            "{r}"
        );
    }
    // What was elided is recorded, oldest first, in few chunks (the prefix stays put).
    let elided: Vec<(u64, Vec<&str>)> = lines
        .iter()
        .filter(|l| l["type"] == "round" && l.get("elided").is_some())
        .map(|l| {
            let ids = l["elided"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i.as_str().unwrap());
            (l["round"].as_u64().unwrap(), ids.collect())
        })
        .collect();
    let ids: Vec<&str> = elided.iter().flat_map(|(_, ids)| ids.clone()).collect();
    assert_eq!(ids[..3], ["t1", "t2", "t3"], "{elided:?}");
    assert!(ids.len() >= 2 * elided.len(), "not in chunks: {elided:?}");
    // The requests themselves carried stubs for them.
    let last = server.requests().last().unwrap().json();
    let first_result = &last["messages"][2]["content"][0];
    assert!(
        first_result["content"]
            .as_str()
            .unwrap()
            .starts_with("[result elided"),
        "{first_result}"
    );

    // The control: with the model's real window (200k), nothing is elided and the requests
    // grow past 20k.
    let sb = Sandbox::new();
    files(&sb);
    let (server, sizes) = reader(u64::MAX);
    let out = run(sb
        .anthropic(&server)
        .args(["--max-rounds", "40", "--no-transcript", "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(*sizes.lock().unwrap().iter().max().unwrap() > 40_000);
}

#[test]
fn a_too_long_refusal_is_retried_once_with_more_elided_and_resume_keeps_the_view() {
    let sb = Sandbox::new();
    files(&sb);
    // The provider counts more tokens than the estimate: it refuses past 15k of a 20k window.
    let (server, sizes) = reader(15_000);
    let out = read_every_file(&sb, &server);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("prompt is too long"), "{}", out.stderr);
    let sizes = sizes.lock().unwrap().clone();
    assert!(
        sizes.iter().any(|&s| s > 15_000),
        "the refusal happened: {sizes:?}"
    );

    // Resumed, the first request elides exactly what the last one did.
    let last_before = server.requests().last().unwrap().json();
    let (again, _) = reader(u64::MAX);
    let out = run(sb
        .anthropic(&again)
        .args([
            "--context-window",
            "20000",
            "--max-rounds",
            "40",
            "--no-transcript",
        ])
        .args(["--no-cache", "--resume"])
        .arg(sb.transcript_path())
        .arg("go on"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let resumed = again.requests()[0].json();
    let stubs = |body: &Value| -> Vec<String> {
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .filter(|b| {
                b["content"]
                    .as_str()
                    .is_some_and(|c| c.starts_with("[result elided"))
            })
            .map(|b| b["tool_use_id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(!stubs(&last_before).is_empty());
    assert_eq!(stubs(&resumed), stubs(&last_before));
}
