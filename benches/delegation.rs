//! `cargo bench --bench delegation`: what subagents are for, measured. A review of six source
//! files (6 KiB each) done two ways against the loopback mock: the run reads every file itself,
//! or hands each file to a read-only `reviewer` subagent (all six in one response) that reads it
//! and reports back 300 bytes. Reported: the run's own context (the size of its last request,
//! and the input of all its requests), what every agent sent together (delegation costs more in
//! total: each subagent carries its own system prompt and tools), the wall time, and the peak
//! RSS with six subagents running at once. Sizes are request bytes; tokens ≈ bytes ÷ 4.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

#[path = "../tests/common/measure.rs"]
mod measure;
#[path = "../tests/common/mock.rs"]
mod mock;
#[path = "../tests/common/sse.rs"]
mod sse;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use mock::{MockServer, Recorded, Reply};
use serde_json::json;
use sse::B;

const FILES: usize = 6;
const REPEATS: usize = 5;

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    for i in 0..FILES {
        let line = format!("fn handler_{i}(request: &Request) -> Response {{ todo!() }}\n");
        let body = line.repeat(6 * 1024 / line.len());
        std::fs::write(dir.path().join(format!("ws/src{i}.rs")), body).unwrap();
    }
    std::fs::write(
        dir.path().join("agents.toml"),
        "[agents.reviewer]\ndescription = \"Reviews one file and reports its bugs\"\n\
         tools = [\"read_file\", \"grep\"]\n",
    )
    .unwrap();
    dir
}

fn is_subagent(request: &Recorded) -> bool {
    request.json()["system"]
        .to_string()
        .contains("You are a subagent")
}

fn answered(request: &Recorded) -> usize {
    request.json()["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count())
}

/// The run reads all six files in one response, then answers.
fn reading() -> MockServer {
    MockServer::respond(|request| {
        if answered(request) > 0 {
            return Reply::sse(sse::anthropic(
                &[B::Text("six files reviewed")],
                "end_turn",
                1,
                1,
            ));
        }
        let inputs: Vec<(String, String)> = (0..FILES)
            .map(|i| {
                (
                    format!("r{i}"),
                    json!({"path": format!("src{i}.rs")}).to_string(),
                )
            })
            .collect();
        let calls: Vec<B> = inputs
            .iter()
            .map(|(id, input)| B::Tool(id, "read_file", input))
            .collect();
        Reply::sse(sse::anthropic(&calls, "tool_use", 1, 1))
    })
}

/// The run hands each file to a reviewer; each reads its file and reports.
fn delegating() -> MockServer {
    MockServer::respond(|request| {
        let body = request.json();
        if is_subagent(request) {
            if answered(request) > 0 {
                let report = "src.rs: no bugs; every handler is a todo!() stub. ".repeat(6);
                return Reply::sse(sse::anthropic(&[B::Text(&report)], "end_turn", 1, 1));
            }
            let first = body["messages"][0]["content"].to_string();
            let file = (0..FILES)
                .map(|i| format!("src{i}.rs"))
                .find(|f| first.contains(f.as_str()))
                .unwrap_or_else(|| "src0.rs".into());
            let input = json!({"path": file}).to_string();
            return Reply::sse(sse::anthropic(
                &[B::Tool("s1", "read_file", &input)],
                "tool_use",
                1,
                1,
            ));
        }
        if answered(request) > 0 {
            return Reply::sse(sse::anthropic(
                &[B::Text("six files reviewed")],
                "end_turn",
                1,
                1,
            ));
        }
        let inputs: Vec<(String, String)> = (0..FILES)
            .map(|i| {
                let task = json!({"description": "review a file", "subagent_type": "reviewer",
                    "prompt": format!("Review src{i}.rs and report its bugs with their lines.")});
                (format!("t{i}"), task.to_string())
            })
            .collect();
        let calls: Vec<B> = inputs
            .iter()
            .map(|(id, input)| B::Tool(id, "task", input))
            .collect();
        Reply::sse(sse::anthropic(&calls, "tool_use", 1, 1))
    })
}

fn command(dir: &Path, server: &MockServer, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rounds"));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("ANTHROPIC_API_KEY", "bench")
        .env("ANTHROPIC_BASE_URL", server.url())
        .current_dir(dir.join("ws"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .args(["-q", "--no-transcript"])
        .args(args)
        .arg("Review every .rs file of the workspace for bugs.");
    cmd
}

struct Figures {
    /// The run's last request, bytes.
    last: usize,
    /// Every request of the run itself, bytes.
    run_total: usize,
    /// Every request of every agent, bytes.
    all: usize,
    wall: Duration,
    peak_mib: f64,
}

fn measure(delegate: bool) -> Figures {
    let mut runs = Vec::new();
    for _ in 0..REPEATS {
        let dir = workspace();
        let server = if delegate { delegating() } else { reading() };
        let agents = dir.path().join("agents.toml");
        let agents = agents.to_str().unwrap();
        let args: &[&str] = if delegate {
            &["--agents", agents, "-a", "task"]
        } else {
            &[]
        };
        let measured = measure::measured(command(dir.path(), &server, args));
        assert_eq!(measured.code, 0);
        let requests = server.requests();
        let own: Vec<usize> = requests
            .iter()
            .filter(|r| !is_subagent(r))
            .map(|r| r.body.len())
            .collect();
        runs.push(Figures {
            last: *own.last().unwrap(),
            run_total: own.iter().sum(),
            all: requests.iter().map(|r| r.body.len()).sum(),
            wall: measured.wall,
            peak_mib: measured.peak_kib as f64 / 1024.0,
        });
    }
    runs.sort_by_key(|f| f.wall);
    runs.swap_remove(REPEATS / 2)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let read = measure(false);
    let sub = measure(true);
    let kib = |b: usize| b as f64 / 1024.0;
    println!("| review of {FILES} files × 6 KiB | the run reads them | six reviewer subagents |");
    println!("|---|---|---|");
    println!(
        "| the run's last request (its context) | {:.1} KiB (≈ {} tokens) | {:.1} KiB (≈ {} tokens) |",
        kib(read.last),
        read.last / 4,
        kib(sub.last),
        sub.last / 4
    );
    println!(
        "| every request of the run | {:.1} KiB | {:.1} KiB |",
        kib(read.run_total),
        kib(sub.run_total)
    );
    println!(
        "| every request of every agent | {:.1} KiB | {:.1} KiB |",
        kib(read.all),
        kib(sub.all)
    );
    println!(
        "| wall time, median of {REPEATS} | {} ms | {} ms |",
        read.wall.as_millis(),
        sub.wall.as_millis()
    );
    println!(
        "| peak RSS | {:.1} MiB | {:.1} MiB |",
        read.peak_mib, sub.peak_mib
    );
}
