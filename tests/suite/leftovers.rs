//! Nothing outlives rounds (issue 31): when the binary has exited — after `--timeout` killed a
//! tool, or a signal stopped the run — no process of its tools is left, not even the tool's
//! supervisor on its way out. A CI step that checks for leftover processes right after rounds
//! must find none. Each process is found by a marker only this test puts in its command line.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::Sandbox;
use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};

/// A `sleep` argument no other process has: 61 seconds and a fraction made of this test's own
/// pid and a counter, so tests running at once do not see each other's processes.
fn marker(tag: u32) -> String {
    format!("61.{}{:03}", std::process::id(), tag)
}

/// The model calls bash with `command` once, then would answer.
fn calls_bash(command: &str) -> MockServer {
    let input = serde_json::json!({ "command": command }).to_string();
    MockServer::start(vec![
        Reply::sse(sse::anthropic(
            &[B::Tool("t1", "bash", &input)],
            "tool_use",
            1,
            1,
        )),
        sse::answer("late"),
    ])
}

/// Every live (not zombie) process whose command line holds `marker`, with that command line.
fn holding(marker: &str) -> Vec<(i32, String)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let me = std::process::id() as i32;
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let state = stat
                .rsplit(')')
                .next()?
                .split_whitespace()
                .next()?
                .to_owned();
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            (state != "Z" && cmdline.contains(marker)).then_some((pid, cmdline))
        })
        .collect()
}

/// Waits until a process holding `marker` runs (the tool started), up to a few seconds.
fn started(marker: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if holding(marker).iter().any(|(_, c)| c.starts_with("sleep")) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

fn rounds(sb: &Sandbox, server: &MockServer) -> Command {
    let mut cmd = sb.anthropic(server);
    cmd.args(["--full-auto", "--transcript"])
        .arg(sb.transcript_path())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

#[test]
fn after_the_deadline_kills_a_tool_nothing_of_it_is_left_when_rounds_exits() {
    let sb = Sandbox::new();
    let mark = marker(1);
    let server = calls_bash(&format!("sleep {mark}"));
    let status = rounds(&sb, &server)
        .args(["--timeout", "2", "go"])
        .status()
        .unwrap();
    // Read at once: a supervisor still ending its tree would be here now, gone a moment later.
    let left = holding(&mark);
    assert_eq!(status.code(), Some(5));
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn after_sigint_or_sigterm_nothing_of_a_running_tool_is_left_when_rounds_exits() {
    for (tag, signal) in [(2, libc::SIGINT), (3, libc::SIGTERM)] {
        let sb = Sandbox::new();
        let mark = marker(tag);
        let server = calls_bash(&format!("sleep {mark}"));
        let mut child = rounds(&sb, &server).arg("go").spawn().unwrap();
        assert!(started(&mark), "the tool never started");
        // SAFETY: kill(2) takes integers only.
        #[allow(unsafe_code)]
        let sent = unsafe { libc::kill(child.id() as i32, signal) };
        assert_eq!(sent, 0);
        let status = child.wait().unwrap();
        let left = holding(&mark);
        assert_eq!(status.code(), Some(128 + signal), "signal {signal}");
        assert!(left.is_empty(), "signal {signal} left behind: {left:?}");
    }
}

#[test]
fn after_a_tool_timeout_nothing_of_the_tool_is_left_when_rounds_exits() {
    let sb = Sandbox::new();
    let mark = marker(4);
    let server = calls_bash(&format!("sleep {mark}"));
    let status = rounds(&sb, &server)
        .args(["--tool-timeout", "1", "go"])
        .status()
        .unwrap();
    let left = holding(&mark);
    assert_eq!(status.code(), Some(0));
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn after_the_deadline_no_mcp_server_is_left_either() {
    let sb = Sandbox::new();
    let mark = marker(5);
    let server = calls_bash(&format!("sleep {mark}"));
    // The test server's command line carries this test's own directory (`--tag`).
    let tag = sb.dir.path().display().to_string();
    let status = rounds(&sb, &server)
        .args(["--mcp", &super::mcp::mcp_flag(&sb, ""), "-a", "test__*"])
        .args(["--timeout", "2", "go"])
        .status()
        .unwrap();
    let left: Vec<_> = holding(&mark).into_iter().chain(holding(&tag)).collect();
    assert_eq!(status.code(), Some(5));
    let tools = sb.transcript()[0]["tools"].to_string();
    assert!(tools.contains("test__"), "the server ran: {tools}");
    assert!(left.is_empty(), "left behind: {left:?}");
}
