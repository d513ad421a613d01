//! `cargo bench`: the numbers docs/benchmarks.md reports, measured against the loopback mock provider
//! with the release binary.
//!
//! (a) parallel safe calls: 8 `read_file` calls in one round, each held 200 ms by a pre-tool
//!     hook (`sleep 0.2`); reports the round's tool wall time ÷ 200 ms (ideal 1.0; sequential,
//!     measured with --max-parallel 1, about 8.0).
//! (b) loop overhead: a 50-round run, one tiny `read_file` per round. Measured from outside the
//!     process: the time between the mock finishing reply N and receiving request N+1, minus
//!     the round's tool time, is what rounds itself spent (stream tail, transcript, scheduling,
//!     building the next request).
//! (c) peak RSS of that run, from `VmHWM` in /proc, sampled every millisecond.
//! (d) prompt caching: a 20-round run against a loopback server that simulates Anthropic's
//!     cache rules (`tests/common/cache_sim.rs`), billed as the API would bill it (writes
//!     ×1.25, reads ×0.1), relative to the same input sent uncached.
//!
//! `ROUNDS_BENCH_BIN=PATH` measures another build of rounds instead of the bench profile's:
//! what a release ships (`scripts/dist.sh build`, then
//! `target/x86_64-unknown-linux-gnu/dist/rounds`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

#[path = "../tests/common/cache_sim.rs"]
mod cache_sim;
#[path = "../tests/common/measure.rs"]
mod measure;
#[path = "../tests/common/mock.rs"]
mod mock;
#[path = "../tests/common/sse.rs"]
mod sse;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use mock::{MockServer, Reply};
use serde_json::Value;
use sse::B;

const REPEATS: usize = 5;

/// The binary measured: the bench profile's, or `ROUNDS_BENCH_BIN`'s.
fn binary() -> std::path::PathBuf {
    std::env::var_os("ROUNDS_BENCH_BIN")
        .filter(|p| !p.is_empty())
        .map_or_else(|| env!("CARGO_BIN_EXE_rounds").into(), Into::into)
}

fn rounds(dir: &Path, server: &MockServer, args: &[&str]) -> Command {
    asking(dir, server, args, "bench")
}

fn asking(dir: &Path, server: &MockServer, args: &[&str], prompt: &str) -> Command {
    let mut cmd = Command::new(binary());
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("ANTHROPIC_API_KEY", "bench")
        .env("ANTHROPIC_BASE_URL", server.url())
        .current_dir(dir.join("ws"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .arg("-q")
        .arg("--transcript")
        .arg(dir.join("t.jsonl"))
        .args(args)
        .arg(prompt);
    cmd
}

fn sandbox() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    for i in 0..8 {
        std::fs::write(
            dir.path().join(format!("ws/f{i}.txt")),
            format!("file {i}\n"),
        )
        .unwrap();
    }
    dir
}

fn transcript(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("t.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Runs to completion, sampling the child's peak RSS; returns (exit code, peak RSS in KiB).
/// A measured run's exit code, peak RSS and the private part of it, in MiB.
fn run_measured(cmd: Command) -> (i32, f64, f64) {
    let run = measure::measured(cmd);
    let mib = |kib: u64| kib as f64 / 1024.0;
    (run.code, mib(run.peak_kib), mib(run.anon_kib))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// (a): wall ÷ 200 ms for 8 safe calls of 200 ms each.
fn parallel(max_parallel: &str) -> f64 {
    let ratios = (0..REPEATS)
        .map(|_| {
            let dir = sandbox();
            let args: Vec<String> = (0..8)
                .map(|i| format!(r#"{{"path":"f{i}.txt"}}"#))
                .collect();
            let ids: Vec<String> = (0..8).map(|i| format!("t{i}")).collect();
            let calls: Vec<B> = ids
                .iter()
                .zip(&args)
                .map(|(id, a)| B::Tool(id, "read_file", a))
                .collect();
            let server = MockServer::start(vec![
                Reply::sse(sse::anthropic(&calls, "tool_use", 10, 5)),
                Reply::sse(sse::anthropic(&[B::Text("done")], "end_turn", 10, 5)),
            ]);
            let hooked = [
                "--pre-tool-hook",
                "sleep 0.2",
                "--max-parallel",
                max_parallel,
            ];
            let (code, ..) = run_measured(rounds(dir.path(), &server, &hooked));
            assert_eq!(code, 0);
            let lines = transcript(dir.path());
            lines[1]["tools_ms"].as_f64().unwrap() / 200.0
        })
        .collect();
    median(ratios)
}

/// (b) and (c) of a 50-round run.
struct Fifty {
    /// Per-round loop overhead, ms: the median and p90 of each run, their medians.
    overhead: f64,
    p90: f64,
    /// Peak RSS, MiB: median and max, and the median of its private part.
    rss: f64,
    rss_max: f64,
    anon: f64,
    /// The whole run, ms.
    wall: f64,
}

fn fifty_rounds() -> Fifty {
    let mut medians = Vec::new();
    let mut p90s = Vec::new();
    let mut rss = Vec::new();
    let mut anon = Vec::new();
    let mut walls = Vec::new();
    for _ in 0..REPEATS {
        let dir = sandbox();
        let mut replies: Vec<Reply> = (0..50)
            .map(|i| {
                let id = format!("t{i}");
                let text = format!("Round {i}: reading the next file.");
                Reply::sse(sse::anthropic(
                    &[
                        B::Text(&text),
                        B::Tool(&id, "read_file", r#"{"path":"f1.txt"}"#),
                    ],
                    "tool_use",
                    1000 + i,
                    40,
                ))
            })
            .collect();
        replies.push(Reply::sse(sse::anthropic(
            &[B::Text("All read.")],
            "end_turn",
            1,
            1,
        )));
        let server = MockServer::start(replies);
        let started = Instant::now();
        // The same read every round, as when these figures were first taken: the loop guard
        // would end that as stuck (exit 9) after three repeats, so it is raised past 50.
        let (code, peak, private) = run_measured(rounds(
            dir.path(),
            &server,
            &["--max-rounds", "60", "--max-repeats", "100"],
        ));
        walls.push(started.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(code, 0);
        let requests = server.requests();
        let lines = transcript(dir.path());
        assert_eq!(requests.len(), 51);
        let mut gaps: Vec<f64> = (0..50)
            .map(|n| {
                let replied = requests[n].replied.unwrap();
                let next = requests[n + 1].received;
                let gap = next.duration_since(replied).as_secs_f64() * 1000.0;
                gap - lines[n + 1]["tools_ms"].as_f64().unwrap()
            })
            .collect();
        gaps.sort_by(|a, b| a.total_cmp(b));
        medians.push(gaps[25]);
        p90s.push(gaps[45]);
        rss.push(peak);
        anon.push(private);
    }
    Fifty {
        overhead: median(medians),
        p90: median(p90s),
        rss_max: rss.iter().copied().fold(0.0, f64::max),
        rss: median(rss),
        anon: median(anon),
        wall: median(walls),
    }
}

/// (d): the share of its uncached input a 20-round run is billed, with the given extra flags;
/// and the run's peak RSS in MiB.
fn cache_bill(system_bytes: usize) -> (f64, f64) {
    let dir = sandbox();
    let mut args = vec!["--max-rounds".to_owned(), "30".to_owned()];
    if system_bytes > 0 {
        let rules = "- Check every changed function for a test that would fail without it.\n";
        let path = dir.path().join("system.md");
        std::fs::write(&path, rules.repeat(system_bytes / rules.len())).unwrap();
        args.extend(["--system-file".to_owned(), path.display().to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut peak = 0.0;
    let share = cache_sim::twenty_rounds(&dir.path().join("ws"), 1024, |server| {
        let (code, rss, _) = run_measured(asking(dir.path(), server, &args, cache_sim::PROMPT));
        assert_eq!(code, 0);
        peak = rss;
    });
    (share, peak)
}

/// (c): peak RSS in MiB of the README's quick start, the demo replayed, and its private part:
/// medians of `REPEATS`; with `env` added to its environment.
fn quick_start(env: &[(&str, &str)]) -> (f64, f64) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let peaks = (0..REPEATS)
        .map(|_| {
            let dir = sandbox();
            let mut cmd = Command::new(binary());
            cmd.env_clear()
                .env("PATH", std::env::var("PATH").unwrap_or_default())
                .env("HOME", dir.path())
                .env("ROUNDS_HOME", dir.path().join("state"))
                .envs(env.iter().copied())
                .current_dir(root)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .args([
                    "-m",
                    "replay:fixtures/demo/demo.jsonl",
                    "-w",
                    "fixtures/demo/workspace",
                ]);
            let (code, peak, private) = run_measured(cmd);
            assert_eq!(code, 0);
            (peak, private)
        })
        .collect::<Vec<_>>();
    let (peak, private) = peaks.into_iter().unzip();
    (median(peak), median(private))
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` passes nothing useful either.
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    eprintln!("measuring {}", binary().display());
    let par = parallel("8");
    let seq = parallel("1");
    let Fifty {
        overhead,
        p90,
        rss,
        rss_max,
        anon,
        wall,
    } = fifty_rounds();
    let ((cached_lean, twenty_rss), (cached_rules, _)) = (cache_bill(0), cache_bill(16 * 1024));
    let (replay_rss, replay_anon) = quick_start(&[]);
    // The same with OpenTelemetry on, exporting to a loopback collector that takes everything.
    let collector = MockServer::respond(|_| Reply {
        status: 200,
        headers: vec![("content-type".into(), "application/x-protobuf".into())],
        body: vec![],
    });
    let url = collector.url();
    let (otel_rss, _) = quick_start(&[("OTEL_EXPORTER_OTLP_ENDPOINT", &url)]);
    assert!(!collector.requests().is_empty(), "nothing was exported");
    println!("| measure | result | target |");
    println!("|---|---|---|");
    println!("| (a) 8 safe calls × 200 ms, wall ÷ 200 ms (--max-parallel 8) | {par:.2} | ≈ 1.0 |");
    println!("| (a) the same with --max-parallel 1 | {seq:.2} | ≈ 8.0 |");
    println!(
        "| (b) loop overhead per round, 50-round run, median (p90) | {overhead:.2} ms ({p90:.2} ms) | ≤ 1 ms |"
    );
    println!("| (b) whole 50-round run, wall | {wall:.0} ms | — |");
    println!(
        "| (c) peak RSS of the 50-round run, median (max) of {REPEATS} | {rss:.1} MiB ({rss_max:.1} MiB) | ≤ 16 MiB |"
    );
    println!("| (c) its private part (`RssAnon`), median | {anon:.1} MiB | — |");
    println!("| (c) peak RSS of 20 mock rounds (d's run) | {twenty_rss:.1} MiB | ≤ 16 MiB |");
    println!(
        "| (c) peak RSS of the quick start (the demo replayed), median of {REPEATS} | {replay_rss:.1} MiB | ≤ 16 MiB |"
    );
    println!("| (c) its private part (`RssAnon`), median | {replay_anon:.1} MiB | — |");
    println!(
        "| (c) the quick start with OpenTelemetry exporting, median of {REPEATS} | {otel_rss:.1} MiB | — |"
    );
    println!(
        "| (d) input billed ÷ uncached input, 20 rounds × 1 KiB read, 16 KiB system prompt | {cached_rules:.3} | ≤ 0.2 |"
    );
    println!(
        "| (d) the same with the built-in system prompt (floor for its growth: 0.205) | {cached_lean:.3} | — |"
    );
}
