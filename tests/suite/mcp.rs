//! MCP servers end to end: the real binary starts `examples/mcp_test_server` (an rmcp server)
//! and a scripted model calls its tools. Each test checks what the model got back, the exit
//! code, and that no server process (nor its supervisor) outlives the run.
//!
//! Every server gets `--tag DIR` (ignored by the server) with the test's own sandbox directory,
//! so a test can find exactly its own processes through /proc while other tests run.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::mock::{MockServer, Reply, Step};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run, types};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// The test server, built by `cargo test` beside the binary under test.
pub(super) fn server_bin() -> PathBuf {
    let rounds = Path::new(env!("CARGO_BIN_EXE_rounds"));
    let bin = rounds
        .parent()
        .unwrap()
        .join("examples")
        .join("mcp_test_server");
    assert!(
        bin.exists(),
        "{} is missing: run `cargo test` (it builds the examples) or `cargo build --examples`",
        bin.display()
    );
    bin
}

/// `--mcp` value for the test server named `test`, with extra arguments.
pub(super) fn mcp_flag(sb: &Sandbox, args: &str) -> String {
    named_flag(sb, "test", args)
}

pub(super) fn named_flag(sb: &Sandbox, name: &str, args: &str) -> String {
    format!(
        "{name}='{}' --tag '{}' {args}",
        server_bin().display(),
        sb.dir.path().display()
    )
}

/// One reply per round: each inner list is the tool calls of that round, then a final answer.
pub(super) fn script(rounds: &[&[(&str, &str, Value)]]) -> MockServer {
    let mut replies: Vec<Reply> = rounds
        .iter()
        .map(|calls| {
            let inputs: Vec<String> = calls.iter().map(|(_, _, i)| i.to_string()).collect();
            let blocks: Vec<B> = calls
                .iter()
                .zip(&inputs)
                .map(|((id, name, _), input)| B::Tool(id, name, input))
                .collect();
            Reply::sse(sse::anthropic(&blocks, "tool_use", 10, 5))
        })
        .collect();
    replies.push(Reply::sse(sse::anthropic(
        &[B::Text("done")],
        "end_turn",
        10,
        5,
    )));
    MockServer::start(replies)
}

pub(super) fn rounds(sb: &Sandbox, server: &MockServer) -> std::process::Command {
    let mut cmd = sb.rounds();
    cmd.env("ANTHROPIC_API_KEY", "sk-ant-SECRET")
        .env("ANTHROPIC_BASE_URL", server.url())
        .args(["--transcript"])
        .arg(sb.transcript_path());
    cmd
}

/// The results of every round, in order.
pub(super) fn results(sb: &Sandbox) -> Vec<Value> {
    let lines = sb.transcript();
    assert_eq!(types(&lines).last(), Some(&"end"), "{lines:?}");
    lines
        .iter()
        .filter(|l| l["type"] == "round")
        .flat_map(|l| l["results"].as_array().unwrap().clone())
        .collect()
}

pub(super) fn content(result: &Value) -> &str {
    result["content"].as_str().unwrap()
}

/// True while the process exists (zombies count as gone).
pub(super) fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !s.rsplit(')').next().unwrap_or("").trim().starts_with('Z'))
}

/// Pids of live processes whose command line mentions `tag`: the servers of one test and their
/// supervisors.
pub(super) fn processes_with(tag: &Path) -> Vec<u32> {
    let tag = tag.display().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            alive(*pid) && String::from_utf8_lossy(&cmdline).contains(&tag)
        })
        .collect()
}

/// Processes of this test still alive after `within`. A run that ended normally has stopped its
/// servers before it exits, so those tests wait for nothing: the parent-death signal that
/// would end them a moment later anyway must not hide a missing shutdown.
pub(super) fn wait_none_left(sb: &Sandbox, within: Duration) -> Vec<u32> {
    let deadline = Instant::now() + within;
    loop {
        let left = processes_with(sb.dir.path());
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The `tool_result` blocks of a recorded Anthropic request body.
pub(super) fn tool_results(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .cloned()
        .collect()
}

#[test]
fn server_tools_are_offered_and_their_results_reach_the_model() {
    let sb = Sandbox::new();
    let server = script(&[&[
        ("c1", "test__echo", json!({"text": "hello from the model"})),
        ("c1b", "test__echo", json!({"text": "at the same time"})),
        ("c2", "test__pid", json!({})),
        ("c3", "test__mixed", json!({})),
        ("c4", "test__dotted_name", json!({})),
    ]]);
    let log = sb.path("server.log");
    let flag = mcp_flag(&sb, &format!("--log '{}'", log.display()));
    let out = run(rounds(&sb, &server)
        .args(["--mcp", &flag, "-a", "test__*"])
        .arg("go"));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "done\n"),
        "{}",
        out.stderr
    );

    let offered = server.requests()[0].json()["tools"].clone();
    let names: Vec<&str> = offered
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .filter(|n| n.starts_with("test__"))
        .collect();
    assert_eq!(
        names,
        [
            "test__echo",
            "test__slow",
            "test__fail",
            "test__crash",
            "test__pid",
            "test__env",
            "test__mixed",
            "test__dotted_name"
        ],
        "every page of tools/list, names made safe"
    );
    let echo = offered
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "test__echo")
        .unwrap();
    assert_eq!(echo["description"], "Returns the text it is given.");
    assert_eq!(echo["input_schema"]["required"], json!(["text"]));
    let pid_tool = offered
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "test__pid")
        .unwrap();
    assert_eq!(pid_tool["input_schema"], json!({"type": "object"}));

    let r = results(&sb);
    assert_eq!(r.len(), 5);
    assert!(r.iter().all(|r| r["is_error"] == false), "{r:?}");
    assert_eq!(content(&r[0]), "hello from the model");
    assert_eq!(content(&r[1]), "at the same time");
    let pid: u32 = content(&r[2]).parse().unwrap();
    assert_eq!(
        content(&r[3]),
        "some text\n[image: image/png, 8 bytes]\n[resource: file:///notes.md]"
    );
    assert_eq!(content(&r[4]), "dotted");
    let sent = tool_results(&server.requests()[1].json());
    assert_eq!(sent.len(), 5);
    assert_eq!(sent[0]["tool_use_id"], "c1");
    assert!(
        sent[0].to_string().contains("hello from the model"),
        "{}",
        sent[0]
    );

    assert_eq!(wait_none_left(&sb, Duration::ZERO), Vec::<u32>::new());
    assert!(!alive(pid));
    assert_eq!(
        std::fs::read_to_string(&log).unwrap_or_default(),
        "stdin closed\n",
        "a finished run closes the server's stdin and lets it exit"
    );
}

#[test]
fn only_allowed_server_tools_are_offered() {
    let sb = Sandbox::new();
    let server = script(&[&[("c1", "test__echo", json!({"text": "x"}))]]);
    let out = run(rounds(&sb, &server)
        .args(["--mcp", &mcp_flag(&sb, ""), "-a", "other__*"])
        .arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let offered = server.requests()[0].json()["tools"].to_string();
    assert!(!offered.contains("test__"), "{offered}");
    let r = results(&sb);
    assert_eq!(r[0]["error_kind"], "unknown_tool", "{}", r[0]);
    // Allowing one tool by name offers just that one.
    let sb = Sandbox::new();
    let server = script(&[]);
    let out = run(rounds(&sb, &server)
        .args(["--mcp", &mcp_flag(&sb, ""), "-a", "test__echo"])
        .arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let offered = server.requests()[0].json()["tools"].to_string();
    assert!(
        offered.contains("test__echo") && !offered.contains("test__pid"),
        "{offered}"
    );
    assert_eq!(wait_none_left(&sb, Duration::ZERO), Vec::<u32>::new());
    // A rule naming no tool is found out once the servers run; dropping them stops them.
    let sb = Sandbox::new();
    let out = run(rounds(&sb, &script(&[]))
        .args(["--mcp", &mcp_flag(&sb, ""), "-a", "test__ecko"])
        .arg("go"));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("unknown tool \"test__ecko\""),
        "{}",
        out.stderr
    );
    assert_eq!(
        wait_none_left(&sb, Duration::from_secs(2)),
        Vec::<u32>::new()
    );
}

#[test]
fn error_results_and_timeouts_come_back_and_the_run_goes_on() {
    let sb = Sandbox::new();
    let log = sb.path("server.log");
    let server = script(&[
        &[
            ("c1", "test__fail", json!({})),
            ("c2", "test__slow", json!({"seconds": 30})),
        ],
        &[("c3", "test__slow", json!({"seconds": 0.1}))],
    ]);
    let started = Instant::now();
    let flag = mcp_flag(&sb, &format!("--log '{}'", log.display()));
    let out = run(rounds(&sb, &server)
        .args(["--mcp", &flag, "-a", "test__*", "--tool-timeout", "1"])
        .arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    let r = results(&sb);
    assert_eq!(
        (&r[0]["is_error"], &r[0]["error_kind"], content(&r[0])),
        (&json!(true), &json!("failed"), "it failed on purpose")
    );
    assert_eq!(r[1]["error_kind"], "timeout", "{}", r[1]);
    assert!(r[1]["duration_ms"].as_u64().unwrap() < 2000, "{}", r[1]);
    assert!(
        content(&r[1]).starts_with("timed out after 1.0s"),
        "{}",
        r[1]
    );
    assert_eq!(
        (&r[2]["is_error"], content(&r[2])),
        (&json!(false), "slept 0.1s"),
        "the server still answers after a cancelled call"
    );
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(
        logged, "cancelled slow\nstdin closed\n",
        "notifications/cancelled reached the server, and it was asked to exit by closing stdin"
    );
    assert_eq!(wait_none_left(&sb, Duration::ZERO), Vec::<u32>::new());
}

#[test]
fn a_crash_mid_call_is_an_error_result_and_later_calls_fail_cleanly() {
    let sb = Sandbox::new();
    let server = script(&[
        &[
            ("c1", "test__pid", json!({})),
            ("c2", "test__crash", json!({})),
        ],
        &[("c3", "test__echo", json!({"text": "anyone there?"}))],
    ]);
    let out = run(rounds(&sb, &server)
        .args(["--mcp", &mcp_flag(&sb, ""), "-a", "test__*"])
        .arg("go"));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "done\n"),
        "{}",
        out.stderr
    );
    let r = results(&sb);
    let pid: u32 = content(&r[0]).parse().unwrap();
    assert_eq!(r[1]["error_kind"], "failed", "{}", r[1]);
    assert_eq!(
        content(&r[1]),
        "MCP server test exited with code 3; the call of crash got no answer; \
         stderr: mcp_test_server: crashing on purpose"
    );
    assert_eq!(r[2]["error_kind"], "failed", "{}", r[2]);
    assert_eq!(
        content(&r[2]),
        "MCP server test exited with code 3; the call of echo got no answer; \
         stderr: mcp_test_server: crashing on purpose",
        "later calls fail at once, saying why"
    );
    assert!(r[2]["duration_ms"].as_u64().unwrap() < 500, "{}", r[2]);
    assert!(!alive(pid));
    assert_eq!(wait_none_left(&sb, Duration::ZERO), Vec::<u32>::new());
}

fn startup_failure(flag: &str, message: &str) {
    let sb = Sandbox::new();
    let server = script(&[]);
    let started = Instant::now();
    // A healthy server beside the broken one is stopped too.
    let out = run(rounds(&sb, &server)
        .env("ROUNDS_MCP_STARTUP_TIMEOUT", "2")
        .args(["--mcp", &named_flag(&sb, "good", "")])
        .args(["--mcp", &mcp_flag(&sb, flag), "-a", "test__*"])
        .arg("go"));
    let took = started.elapsed();
    assert_eq!(out.code, 2, "{flag}: {}", out.stderr);
    assert!(out.stderr.contains(message), "{flag}: {}", out.stderr);
    assert!(took < Duration::from_secs(5), "{flag} took {took:?}");
    assert!(server.requests().is_empty(), "{flag}: no model call");
    assert_eq!(
        wait_none_left(&sb, Duration::ZERO),
        Vec::<u32>::new(),
        "{flag}"
    );
}

#[test]
fn servers_that_fail_at_startup_stop_the_run_before_any_request() {
    let cases = [
        (
            "--exit",
            "MCP server test: exited with code 1 during startup; stderr: mcp_test_server: exiting on purpose",
        ),
        (
            "--hang",
            "MCP server test: did not answer initialize within 2s; stderr: mcp_test_server: hanging on purpose",
        ),
        (
            "--hang-list",
            "MCP server test: did not finish tools/list within 2s",
        ),
        (
            "--garbage",
            "MCP server test: did not answer initialize within 2s; it wrote non-JSON to stdout: [\"this is not JSON\"]; stderr: mcp_test_server: talking nonsense on purpose",
        ),
    ];
    // Each case waits out the startup limit: they run side by side.
    std::thread::scope(|scope| {
        for (flag, message) in cases {
            scope.spawn(move || startup_failure(flag, message));
        }
    });
    // A command that cannot run at all says so.
    let sb = Sandbox::new();
    let out = run(rounds(&sb, &script(&[])).args(["--mcp", "test=/nonexistent/mcp-server", "go"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("MCP server test: exited with code 127 during startup; stderr: cannot run /nonexistent/mcp-server"),
        "{}",
        out.stderr
    );
}

#[test]
fn killing_rounds_with_sigkill_still_ends_the_server_tree() {
    let sb = Sandbox::new();
    let release = sb.path("release");
    let first = sse::anthropic(&[B::Tool("c1", "test__pid", "{}")], "tool_use", 10, 5);
    let mut held = Reply::sse(vec![]);
    held.body = vec![Step::WaitFor(release.clone(), Duration::from_secs(30))];
    let server = MockServer::start(vec![Reply::sse(first), held]);
    let mut child = rounds(&sb, &server)
        .args(["--mcp", &mcp_flag(&sb, ""), "-a", "test__*", "go"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.requests().len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let sent = tool_results(&server.requests()[1].json());
    let pid: u32 = sent[0]["content"]
        .as_str()
        .or_else(|| sent[0]["content"][0]["text"].as_str())
        .unwrap()
        .parse()
        .unwrap();
    // rounds' own command line names the sandbox too (the transcript path).
    let running: Vec<u32> = processes_with(sb.dir.path())
        .into_iter()
        .filter(|&p| p != child.id())
        .collect();
    assert!(running.contains(&pid), "{running:?} {pid}");
    assert_eq!(
        running.len(),
        2,
        "the server and its supervisor: {running:?}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let left = wait_none_left(&sb, Duration::from_secs(3));
    std::fs::write(&release, "").unwrap();
    assert_eq!(left, Vec::<u32>::new(), "the server outlived rounds");
}

#[test]
fn a_config_file_starts_servers_with_their_own_environment() {
    let sb = Sandbox::new();
    let config = sb.path("mcp.json");
    let tag = sb.dir.path().display().to_string();
    let text = json!({"mcpServers": {
        "cfg": {"type": "stdio", "command": server_bin(), "args": ["--tag", tag],
                "env": {"MCP_TEST_VALUE": "from the config"}},
        "off": {"command": "/nonexistent", "disabled": true}
    }});
    std::fs::write(&config, text.to_string()).unwrap();
    let server = script(&[&[
        ("c1", "cfg__env", json!({"name": "MCP_TEST_VALUE"})),
        ("c2", "cfg__env", json!({"name": "ANTHROPIC_API_KEY"})),
        ("c3", "cfg__env", json!({"name": "HOME"})),
    ]]);
    let out = run(rounds(&sb, &server)
        .args(["--mcp-config"])
        .arg(&config)
        .args(["-a", "cfg__*", "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = results(&sb);
    let got: Vec<&str> = r.iter().map(content).collect();
    let home = sb.path("home").display().to_string();
    assert_eq!(got, ["from the config", "(unset)", home.as_str()]);
    assert_eq!(wait_none_left(&sb, Duration::ZERO), Vec::<u32>::new());
}
