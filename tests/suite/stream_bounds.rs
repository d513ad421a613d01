//! The two bounds on a response, provoked for real: a server that streams far more content than
//! any model could (cut at the 32 MiB cap: exit 1, bounded memory, a whole transcript), and a
//! server that only sends keep-alives (cut at `--idle-timeout`, which only content restarts).
//! Each has a control that the same server within the bound is served to the end.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::mock::{MockServer, Reply, Step};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run_within, types};
use serde_json::{Value, json};

const MIB: usize = 1024 * 1024;
/// `provider::MAX_RESPONSE_BYTES`.
const CAP_MIB: usize = 32;

fn event(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// An Anthropic text response of `deltas` text deltas of 1 MiB each, each its own HTTP chunk.
fn big_answer(deltas: usize) -> Reply {
    let events = sse::anthropic(&[B::Text("")], "end_turn", 10, 5);
    // message_start and the block's start, then the big deltas, then the block's stop and the end.
    let (head, tail) = (&events[..2], &events[4..]);
    let delta = event(
        "content_block_delta",
        json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x".repeat(MIB)}}),
    );
    let mut reply = Reply::sse(head.to_vec());
    reply
        .body
        .extend((0..deltas).map(|_| Step::Bytes(delta.clone().into_bytes())));
    reply
        .body
        .extend(tail.iter().map(|e| Step::Bytes(e.clone().into_bytes())));
    reply
}

/// What a run came to, with the peak memory of the process.
struct Measured {
    code: i32,
    took: Duration,
    peak_mib: u64,
}

/// Runs `cmd` (output discarded: the transcript says what happened) sampling its peak RSS;
/// fails the test if it runs longer than `limit`.
fn measured(mut cmd: Command, limit: Duration) -> Measured {
    let started = Instant::now();
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start rounds");
    let status = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0;
    loop {
        if let Ok(text) = std::fs::read_to_string(&status) {
            let hwm = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
            peak_kib = peak_kib.max(hwm.unwrap_or(0));
        }
        if let Some(code) = child.try_wait().expect("wait") {
            return Measured {
                code: code.code().unwrap_or(-1),
                took: started.elapsed(),
                peak_mib: peak_kib / 1024,
            };
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("rounds did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn anthropic_run(sb: &Sandbox, server: &MockServer, extra: &[&str]) -> Command {
    let mut cmd = sb.anthropic(server);
    cmd.args(["--retry-delay", "0.05", "--transcript"])
        .arg(sb.transcript_path())
        .args(extra)
        .arg("go");
    cmd
}

#[test]
fn a_response_three_times_the_cap_ends_the_run_at_the_cap_with_bounded_memory() {
    let sb = Sandbox::new();
    // The default retries stay on: a response cut for its size is not asked for again.
    let server = MockServer::start(vec![big_answer(3 * CAP_MIB)]);
    let out = measured(anthropic_run(&sb, &server, &[]), Duration::from_secs(60));
    eprintln!("3x the cap: {:?}, peak {} MiB", out.took, out.peak_mib);
    assert_eq!(out.code, 1);
    let lines = sb.transcript();
    assert_eq!(types(&lines), ["start", "end"]);
    let end = &lines[1];
    assert_eq!(
        (&end["status"], &end["exit_code"]),
        (&json!("error"), &json!(1))
    );
    let error = end["error"].as_str().unwrap();
    assert!(
        error.contains("response too large: more than 32 MiB of text, thinking and tool input"),
        "{error}"
    );
    assert_eq!(server.requests().len(), 1, "not retried");
    // Measured: 64 MiB and 0.4 s; with the cap off, the same server took the run to 415 MiB
    // and 4.8 s (and an answer of 96 MiB).
    assert!(out.peak_mib < 200, "peak {} MiB", out.peak_mib);
    assert!(out.took < Duration::from_secs(10), "{:?}", out.took);
}

#[test]
fn a_response_just_under_the_cap_is_answered_whole() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![big_answer(CAP_MIB - 1)]);
    let out = measured(anthropic_run(&sb, &server, &[]), Duration::from_secs(60));
    eprintln!(
        "just under the cap: {:?}, peak {} MiB",
        out.took, out.peak_mib
    );
    assert_eq!(out.code, 0);
    let lines = sb.transcript();
    assert_eq!(types(&lines), ["start", "round", "end"]);
    let text = lines[2]["final_text"].as_str().unwrap();
    assert_eq!(text.len(), (CAP_MIB - 1) * MIB);
}

#[test]
fn tool_input_past_the_cap_ends_an_openai_run_too() {
    let sb = Sandbox::new();
    let chunk = |delta: Value| {
        let c = json!({"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":delta,"finish_reason":null}]});
        Step::Bytes(format!("data: {c}\n\n").into_bytes())
    };
    let mut reply = Reply::sse(vec![]);
    reply.body.push(chunk(json!({"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\""}}]})));
    let fragment =
        chunk(json!({"tool_calls":[{"index":0,"function":{"arguments":"a".repeat(MIB)}}]}));
    reply
        .body
        .extend(std::iter::repeat_n(fragment, 3 * CAP_MIB));
    let server = MockServer::start(vec![reply]);
    let mut cmd = sb.rounds();
    cmd.env("OPENAI_API_KEY", "k")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url()))
        .args(["-m", "openai/gpt-test", "--transcript"])
        .arg(sb.transcript_path())
        .arg("go");
    let out = measured(cmd, Duration::from_secs(60));
    assert_eq!(out.code, 1);
    let lines = sb.transcript();
    assert_eq!(types(&lines), ["start", "end"]);
    let error = lines[1]["error"].as_str().unwrap();
    assert!(error.contains("openai: response too large"), "{error}");
    assert_eq!(server.requests().len(), 1, "not retried");
}

/// A reply that starts a response, then sends `tick` every 0.3 s, `n` times, then ends it.
fn ticking(head: &[String], tick: &str, n: usize, tail: &[String]) -> Reply {
    let mut reply = Reply::sse(head.to_vec());
    for _ in 0..n {
        reply.body.push(Step::Sleep(Duration::from_millis(300)));
        reply.body.push(Step::Bytes(tick.as_bytes().to_vec()));
    }
    reply
        .body
        .extend(tail.iter().map(|e| Step::Bytes(e.clone().into_bytes())));
    reply
}

const IDLE: &[&str] = &["--idle-timeout", "1.5", "--max-retries", "0"];

#[test]
fn a_stream_of_keep_alives_alone_stalls_at_the_idle_timeout() {
    let start = sse::anthropic(&[B::Text("")], "end_turn", 10, 5);
    let ping = event("ping", json!({"type":"ping"}));
    let openai = sse::openai(&[B::Text("")], "stop", 10, 5);
    let usage_only = "data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}\n\n";
    // 200 keep-alives would hold the stream for a minute.
    let cases = [
        ("anthropic pings", ticking(&start[..1], &ping, 200, &[])),
        (
            "SSE comments",
            ticking(&start[..2], ": keep-alive\n\n", 200, &[]),
        ),
        (
            "usage-only chunks",
            ticking(&openai[..1], usage_only, 200, &[]),
        ),
    ];
    for (name, reply) in cases {
        let sb = Sandbox::new();
        let openai = name.contains("usage");
        let server = MockServer::start(vec![reply]);
        let mut cmd = if openai {
            let mut cmd = sb.rounds();
            cmd.env("OPENAI_API_KEY", "k")
                .env("OPENAI_BASE_URL", format!("{}/v1", server.url()))
                .args(["-m", "openai/gpt-test", "--transcript"])
                .arg(sb.transcript_path())
                .args(IDLE)
                .arg("go");
            cmd
        } else {
            anthropic_run(&sb, &server, IDLE)
        };
        let started = Instant::now();
        let out = run_within(&mut cmd, Duration::from_secs(20));
        let took = started.elapsed();
        // A stall is the provider's, and retrying later may succeed.
        assert_eq!(out.code, 10, "{name}: {}", out.stderr);
        assert!(took < Duration::from_secs(5), "{name}: {took:?}");
        let lines = sb.transcript();
        assert_eq!(types(&lines), ["start", "end"], "{name}");
        let error = lines[1]["error"].as_str().unwrap();
        assert!(
            error.contains("stream stalled: no content for 1.5s"),
            "{name}: {error}"
        );
    }
}

#[test]
fn text_every_few_tenths_keeps_a_stream_alive_past_the_idle_timeout() {
    // The control: the same pace as the keep-alives above, but content, for twice the timeout.
    let events = sse::anthropic(&[B::Text("")], "end_turn", 10, 5);
    let delta = event(
        "content_block_delta",
        json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"tick "}}),
    );
    let ping = event("ping", json!({"type":"ping"}));
    let mut reply = ticking(&events[..2], &delta, 10, &events[4..]);
    // A ping between ticks changes nothing.
    reply.body.insert(3, Step::Bytes(ping.into_bytes()));
    let sb = Sandbox::new();
    let server = MockServer::start(vec![reply]);
    let started = Instant::now();
    let out = run_within(
        &mut anthropic_run(&sb, &server, IDLE),
        Duration::from_secs(20),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(started.elapsed() > Duration::from_secs(3));
    let lines = sb.transcript();
    assert_eq!(types(&lines), ["start", "round", "end"]);
    assert_eq!(lines[2]["final_text"], "tick ".repeat(10));
}
