//! What rounds accepts from an MCP server, end to end against `examples/mcp_test_server`: a
//! message (one line) longer than the limit drops the server, with memory bounded while it is
//! read; a large result under the limit is capped like any tool's; tool lists, descriptions and
//! schemas are bounded. `ROUNDS_MCP_MAX_LINE` lowers the 16 MiB line limit to 1 MiB so the tests
//! show the bound with a few MiB.

use std::process::Stdio;
use std::time::{Duration, Instant};

use super::mcp::{content, mcp_flag, named_flag, results, rounds, script, wait_none_left};
use crate::common::mock::{MockServer, Reply, Step};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run};
use pretty_assertions::assert_eq;
use serde_json::json;

const MIB: u64 = 1024 * 1024;

fn dropped(tool: &str) -> String {
    format!(
        "MCP server test was dropped; the call of {tool} got no answer; it sent a message longer \
         than {MIB} bytes (one line of JSON-RPC), more than rounds reads"
    )
}

/// A result for a failure message: its content cut to 300 bytes.
fn brief(result: &serde_json::Value) -> String {
    let mut shown = result.clone();
    shown["content"] = json!(content(result).chars().take(300).collect::<String>());
    shown.to_string()
}

#[test]
fn a_result_past_the_line_limit_drops_the_server_and_one_under_it_is_capped() {
    let sb = Sandbox::new();
    let server = script(&[
        &[("c1", "test__big", json!({"bytes": MIB / 2}))],
        &[("c2", "test__big", json!({"bytes": 2 * MIB}))],
        &[("c3", "test__echo", json!({"text": "still there?"}))],
    ]);
    let started = Instant::now();
    let out = run(rounds(&sb, &server)
        .env("ROUNDS_MCP_MAX_LINE", MIB.to_string())
        .args(["--mcp", &mcp_flag(&sb, "--huge"), "-a", "test__*"])
        .args(["--tool-timeout", "60", "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let r = results(&sb);
    // The control: half the limit is a valid answer, capped like any tool's output.
    assert_eq!(r[0]["is_error"], false, "{}", brief(&r[0]));
    assert_eq!(
        (&r[0]["truncated"], &r[0]["bytes"]),
        (&json!(true), &json!(MIB / 2))
    );
    let whole = std::fs::read_to_string(r[0]["full_output"].as_str().unwrap()).unwrap();
    assert_eq!(whole, "b".repeat((MIB / 2) as usize));
    assert!(content(&r[0]).len() < 40_000);
    // Twice the limit: the call fails, the server is dropped, and later calls say why.
    assert_eq!(r[1]["error_kind"], "failed", "{}", brief(&r[1]));
    assert_eq!(content(&r[1]), dropped("big"));
    assert_eq!(r[2]["error_kind"], "failed", "{}", brief(&r[2]));
    assert_eq!(content(&r[2]), dropped("echo"));
    assert!(r[2]["duration_ms"].as_u64().unwrap() < 1000, "{}", r[2]);
    assert_eq!(wait_none_left(&sb, Duration::ZERO), Vec::<u32>::new());
}

/// The peak resident memory of process `pid`, in bytes.
fn peak_memory(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

#[test]
fn a_server_that_never_ends_a_line_is_dropped_and_memory_stays_bounded() {
    let sb = Sandbox::new();
    let release = sb.path("release");
    // The server starts an answer and sends 96 MiB of it without ending the line; the model's
    // next reply is held until the test has measured rounds.
    let call = json!({"bytes": 96 * MIB}).to_string();
    let first = sse::anthropic(&[B::Tool("c1", "test__endless", &call)], "tool_use", 10, 5);
    let mut held = Reply::sse(sse::anthropic(&[B::Text("done")], "end_turn", 10, 5));
    held.body
        .insert(0, Step::WaitFor(release.clone(), Duration::from_secs(60)));
    let server = MockServer::start(vec![Reply::sse(first), held]);
    let mut child = rounds(&sb, &server)
        .env("ROUNDS_MCP_MAX_LINE", MIB.to_string())
        .args(["--mcp", &mcp_flag(&sb, "--huge"), "-a", "test__*"])
        .args(["--tool-timeout", "30", "go"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(25);
    while server.requests().len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let peak = peak_memory(child.id());
    std::fs::write(&release, "").unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(
        server.requests().len(),
        2,
        "the call did not end before its timeout"
    );
    let r = results(&sb);
    // rounds stopped reading: the server's writes fail (it says so on stderr).
    assert!(
        content(&r[0]).starts_with(&dropped("endless")),
        "{}",
        brief(&r[0])
    );
    assert!(
        peak < 64 * MIB,
        "rounds peaked at {} MiB while the server sent a 96 MiB line",
        peak / MIB
    );
    assert_eq!(wait_none_left(&sb, Duration::ZERO), Vec::<u32>::new());
}

#[test]
fn tool_lists_descriptions_and_schemas_are_bounded() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![sse::answer("ok")]);
    // `test` offers 8 + 1 + 600 tools, a 5000-byte description and a 20 KB schema (`wide`);
    // the control `good` has a description exactly at the limit.
    let hostile = mcp_flag(
        &sb,
        "--long-description 5000 --big-schema 20000 --many-tools 600",
    );
    let good = named_flag(&sb, "good", "--long-description 2048");
    let out = run(rounds(&sb, &server).args([
        "--mcp",
        &hostile,
        "--mcp",
        &good,
        "-a",
        "test__*,good__*",
        "go",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let offered = server.requests()[0].json()["tools"].clone();
    let of = |prefix: &str| -> Vec<serde_json::Value> {
        offered
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["name"].as_str().unwrap().starts_with(prefix))
            .cloned()
            .collect()
    };
    let (test, good) = (of("test__"), of("good__"));
    // The first 512 listed, less `wide`.
    assert_eq!(test.len(), 511);
    assert!(!test.iter().any(|t| t["name"] == "test__wide"));
    assert_eq!(test.last().unwrap()["name"], "test__gen_502");
    let echo = &test[0]["description"];
    assert_eq!(
        echo.as_str().unwrap(),
        format!("{} [… 2952 more bytes cut by rounds]", "d".repeat(2048))
    );
    for warning in [
        "MCP server test offers more than 512 tools; only the first 512 are used",
        "MCP server test: tool \"wide\" is left out: its input schema is",
        "MCP server test: 1 tool description(s) longer than 2048 bytes were cut",
    ] {
        assert!(out.stderr.contains(warning), "{warning}: {}", out.stderr);
    }
    assert_eq!(good.len(), 8);
    assert_eq!(good[0]["description"], "d".repeat(2048));
    assert!(!out.stderr.contains("MCP server good"), "{}", out.stderr);
}
