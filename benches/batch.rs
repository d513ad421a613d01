//! `cargo bench --bench batch`: `rounds batch` against the loopback mock, with the release
//! binary. 1,000 jobs of 3 rounds each (two rounds that read a file, then the answer):
//!
//! (e) wall time of `rounds batch --jobs 32` ÷ wall time of `xargs -P 32` over single `rounds`
//!     runs of the same jobs (target ≤ 0.5);
//! (f) peak RSS of the batch process (`VmHWM`, sampled every millisecond; target ≤ 64 MiB);
//! (g) per-job overhead of the batch machinery: with `--jobs 1`, the gap between the mock
//!     finishing a job's last reply and receiving the next job's first request (writing the
//!     result, planning, resolving the job's config, setting up its run and writing its start
//!     line; target ≤ 2 ms).

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
use sse::B;

const JOBS: usize = 1000;

fn rounds_before(request: &Recorded) -> usize {
    let body = request.json();
    let messages = body["messages"].as_array().unwrap();
    messages.iter().filter(|m| m["role"] == "assistant").count()
}

fn three_rounds(request: &Recorded) -> Reply {
    let round = rounds_before(request);
    if round < 2 {
        let id = format!("toolu_{round}");
        Reply::sse(sse::anthropic(
            &[B::Tool(&id, "read_file", r#"{"path":"a.txt"}"#)],
            "tool_use",
            10,
            5,
        ))
    } else {
        sse::answer("done")
    }
}

fn rounds(dir: &Path, server: &MockServer) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rounds"));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("ANTHROPIC_API_KEY", "bench")
        .env("ANTHROPIC_BASE_URL", server.url())
        .current_dir(dir.join("ws"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

fn sandbox(jobs: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    std::fs::write(dir.path().join("ws/a.txt"), "alpha\n").unwrap();
    let lines: String = (0..jobs)
        .map(|i| format!("{{\"id\":\"j{i}\",\"prompt\":\"Do j{i}.\"}}\n"))
        .collect();
    std::fs::write(dir.path().join("jobs.jsonl"), lines).unwrap();
    let ids: String = (0..jobs).map(|i| format!("j{i}\n")).collect();
    std::fs::write(dir.path().join("ids.txt"), ids).unwrap();
    dir
}

/// (e) and (f): the batch, and xargs over single runs.
fn batch_vs_xargs() -> (Duration, Duration, u64) {
    let dir = sandbox(JOBS);
    let server = MockServer::respond(three_rounds);
    let mut batch = rounds(dir.path(), &server);
    batch
        .args(["batch", "-q", "--jobs", "32", "--out"])
        .arg(dir.path().join("out"))
        .arg(dir.path().join("jobs.jsonl"));
    let measure::Measured {
        code,
        wall: batch_wall,
        peak_kib: peak,
        ..
    } = measure::measured(batch);
    assert_eq!(code, 0);
    assert_eq!(server.requests().len(), 3 * JOBS);

    let server = MockServer::respond(three_rounds);
    let single = rounds(dir.path(), &server);
    let mut xargs = Command::new("xargs");
    xargs
        .env_clear()
        .envs(single.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .current_dir(dir.path().join("ws"))
        .stdin(std::fs::File::open(dir.path().join("ids.txt")).unwrap())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .args([
            "-P",
            "32",
            "-I",
            "{}",
            env!("CARGO_BIN_EXE_rounds"),
            "-q",
            "--transcript",
        ])
        .arg(dir.path().join("single/{}.jsonl"))
        .arg("Do {}.");
    let measure::Measured {
        code,
        wall: xargs_wall,
        ..
    } = measure::measured(xargs);
    assert_eq!(code, 0);
    assert_eq!(server.requests().len(), 3 * JOBS);
    (batch_wall, xargs_wall, peak)
}

/// (g): per-job gaps with --jobs 1, median and p90 in ms.
fn per_job_overhead() -> (f64, f64) {
    let jobs = 200;
    let dir = sandbox(jobs);
    let server = MockServer::respond(three_rounds);
    let mut batch = rounds(dir.path(), &server);
    batch
        .args(["batch", "-q", "--jobs", "1", "--out"])
        .arg(dir.path().join("out"))
        .arg(dir.path().join("jobs.jsonl"));
    let code = measure::measured(batch).code;
    assert_eq!(code, 0);
    let requests = server.requests();
    assert_eq!(requests.len(), 3 * jobs);
    let mut gaps: Vec<f64> = (1..jobs)
        .map(|j| {
            let last = &requests[3 * j - 1];
            let next = &requests[3 * j];
            assert_eq!((rounds_before(last), rounds_before(next)), (2, 0));
            let replied = last.replied.unwrap();
            next.received.duration_since(replied).as_secs_f64() * 1000.0
        })
        .collect();
    gaps.sort_by(|a, b| a.total_cmp(b));
    (gaps[gaps.len() / 2], gaps[gaps.len() * 9 / 10])
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let (batch, xargs, peak) = batch_vs_xargs();
    let (median, p90) = per_job_overhead();
    let ratio = batch.as_secs_f64() / xargs.as_secs_f64();
    println!("| measure | result | target |");
    println!("|---|---|---|");
    println!(
        "| (e) 1,000 jobs × 3 rounds, `rounds batch --jobs 32` ÷ `xargs -P 32 rounds` | {:.2} s ÷ {:.2} s = {ratio:.2} | ≤ 0.5 |",
        batch.as_secs_f64(),
        xargs.as_secs_f64()
    );
    println!(
        "| (f) peak RSS of that batch process | {:.1} MiB | ≤ 64 MiB |",
        peak as f64 / 1024.0
    );
    println!(
        "| (g) batch overhead per job (--jobs 1), median (p90) | {median:.2} ms ({p90:.2} ms) | ≤ 2 ms |"
    );
}
