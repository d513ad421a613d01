//! The library a Rust program embeds (`rounds::Run`): in-process from this test binary for
//! what runs no process, and through `examples/embed` (a program that embeds rounds, and so
//! supervises its own tools) for what does. Each run is compared with the command's.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run};
use pretty_assertions::assert_eq;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `examples/embed`, which `cargo test` builds beside the test binaries.
fn example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join("embed");
    assert!(
        path.exists(),
        "{} is missing: run `cargo test` (it builds the examples)",
        path.display()
    );
    path
}

fn embed(sb: &Sandbox) -> Command {
    let mut cmd = Command::new(example());
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", sb.path("home"))
        .env("ROUNDS_HOME", sb.path("state"))
        .stdin(Stdio::null());
    cmd
}

#[test]
fn the_example_replays_the_demo_as_the_command_does() {
    let sb = Sandbox::new();
    let out = run(embed(&sb).current_dir(root()));
    assert_eq!(out.code, 0, "{}", out.stderr);
    for line in [
        "round 1",
        "  tool list_dir",
        "  tool grep",
        "round 3",
        "end: completed",
    ] {
        assert!(
            out.stdout.lines().any(|l| l == line),
            "{line:?} in {}",
            out.stdout
        );
    }
    // The command, on the same replay: the same answer, word for word.
    let cli = run(sb
        .rounds()
        .current_dir(root())
        .args([
            "-m",
            "replay:fixtures/demo/demo.jsonl",
            "-w",
            "fixtures/demo/workspace",
        ])
        .args(["-o", "json", "--no-transcript", "How are requests retried?"]));
    assert_eq!(cli.code, 0, "{}", cli.stderr);
    let json: serde_json::Value = serde_json::from_str(&cli.stdout).unwrap();
    let answer = json["final_text"].as_str().unwrap();
    assert!(!answer.is_empty());
    assert!(
        out.stdout.ends_with(&format!("{answer}\n")),
        "{}",
        out.stdout
    );
}

/// A settings file is the command's business: the program that embeds rounds is the user. The
/// control: the command, with the same environment, stops where the file says.
#[test]
fn an_embedded_run_reads_no_settings_file() {
    let sb = Sandbox::new();
    let settings = sb.path("home/.config/rounds/config.toml");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, "max-rounds = 1\n").unwrap();
    let demo = [
        "replay:fixtures/demo/demo.jsonl",
        "How are requests retried?",
    ];
    let flags = [
        "workspace=fixtures/demo/workspace",
        "allow=read_file",
        "allow=list_dir",
    ];
    let flags = [&flags[..], &["allow=glob", "allow=grep", "no-transcript"]].concat();
    let out = run(embed(&sb).current_dir(root()).args(demo).args(&flags));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("end: completed"), "{}", out.stdout);
    let cli = run(sb.rounds().current_dir(root()).args([
        "-m",
        demo[0],
        "-w",
        "fixtures/demo/workspace",
        "--no-transcript",
        demo[1],
    ]));
    assert_eq!(cli.code, 3, "the command reads the file: {}", cli.stderr);
}

/// A tool process runs under the embedding program as its supervisor, sandboxed and with the
/// key kept from it, as under the command.
#[test]
fn an_embedded_run_runs_bash_under_the_program_itself() {
    let sb = Sandbox::new();
    let call = r#"{"command":"echo made > made.txt; echo key=${ANTHROPIC_API_KEY:-none}"}"#;
    let server = MockServer::start(vec![
        Reply::sse(sse::anthropic(
            &[B::Tool("t1", "bash", call)],
            "tool_use",
            10,
            5,
        )),
        Reply::sse(sse::anthropic(&[B::Text("done")], "end_turn", 10, 5)),
    ]);
    let ws = sb.ws();
    let out = run(embed(&sb)
        .current_dir(&ws)
        .env("ANTHROPIC_API_KEY", "sk-ant-embedded-secret")
        .env("ANTHROPIC_BASE_URL", server.url())
        .args([
            "anthropic/claude-test",
            "make the file",
            "allow=bash",
            "no-transcript",
        ]));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("  tool bash"), "{}", out.stdout);
    assert_eq!(
        std::fs::read_to_string(ws.join("made.txt")).unwrap(),
        "made\n"
    );
    let requests = server.requests();
    let result = String::from_utf8_lossy(&requests[1].body).into_owned();
    assert!(result.contains("key=none"), "{result}");
    assert!(!result.contains("sk-ant-embedded-secret"), "{result}");
}

#[test]
fn a_run_that_cannot_start_says_why_before_any_request() {
    let bad_flag = rounds::Run::new("replay:x.jsonl", "hi")
        .flag("no-such-flag", None)
        .start();
    match bad_flag {
        Err(e @ rounds::Error::Flags(_)) => {
            assert!(e.to_string().contains("--no-such-flag"), "{e}");
            assert_eq!(e.status().exit_code(), 2);
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a flag rounds does not take started a run"),
    }
    let missing = rounds::Run::new("replay:/nonexistent/run.jsonl", "hi")
        .no_transcript()
        .start();
    match missing {
        Err(e @ rounds::Error::Config(_)) => assert!(e.to_string().contains("nonexistent"), "{e}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a replay of no file started"),
    }
}

/// In-process, with no tool process: every event in order, the outcome at the end, the same
/// rounds and calls the transcript records.
#[test]
fn events_arrive_in_order_and_the_outcome_ends_them() {
    let demo = root().join("fixtures/demo/demo.jsonl");
    let workspace = root().join("fixtures/demo/workspace");
    let started = rounds::Run::new(format!("replay:{}", demo.display()), "How?")
        .workspace(workspace.to_str().unwrap())
        .allow("read_file")
        .allow("list_dir")
        .allow("glob")
        .allow("grep")
        .no_transcript()
        .start()
        .unwrap();
    let rounds::Started {
        mut events,
        outcome,
    } = started;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut seen = Vec::new();
    let (outcome, ()) = runtime.block_on(async {
        tokio::join!(outcome, async {
            while let Some(event) = events.next().await {
                seen.push(event);
            }
        })
    });
    assert_eq!(outcome.status, rounds::Status::Completed);
    assert!(
        matches!(seen.first(), Some(rounds::Event::Started(_))),
        "{seen:?}"
    );
    assert!(
        matches!(seen.last(), Some(rounds::Event::Finished(_))),
        "{seen:?}"
    );
    let rounds: Vec<u32> = seen
        .iter()
        .filter_map(|e| match e {
            rounds::Event::RoundStarted(n) => Some(*n),
            _ => None,
        })
        .collect();
    assert_eq!(rounds, [1, 2, 3]);
    let finished = seen
        .iter()
        .filter(|e| matches!(e, rounds::Event::ToolFinished(_)))
        .count();
    assert_eq!(finished as u32, outcome.tool_calls);
    assert_eq!(finished, 4);
}
