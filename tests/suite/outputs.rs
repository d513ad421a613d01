//! What rounds prints: stdout is the product (the answer, or one JSON object), and the shipped
//! demo replays with real tool execution.

use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, read_jsonl, run, types};
use pretty_assertions::assert_eq;
use serde_json::Value;

#[test]
fn json_output_is_one_object_with_the_whole_outcome() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![Reply::sse(sse::anthropic(
        &[B::Text("42")],
        "end_turn",
        7,
        3,
    ))]);
    let out = run(sb
        .anthropic(&server)
        .args(["-o", "json", "--transcript"])
        .arg(sb.transcript_path())
        .arg("answer"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.lines().count(), 1, "{}", out.stdout);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["status"], "completed");
    let start = crate::common::read_jsonl(&sb.transcript_path())[0].clone();
    assert_eq!(v["run_id"], start["run_id"], "-o json names the run");
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["final_text"], "42");
    assert_eq!(v["rounds"], 1);
    assert_eq!(
        v["usage"],
        serde_json::json!({"input_tokens":7,"output_tokens":3})
    );
    assert_eq!(v["error"], Value::Null);
    assert_eq!(v["transcript"], sb.transcript_path().display().to_string());
    assert!(v["duration_ms"].is_u64());
}

#[test]
fn json_output_reports_failures_too() {
    let sb = Sandbox::new();
    let out = run(sb.rounds().args(["-o", "json", "-m", "anthropic/x", "hi"]));
    assert_eq!(out.code, 2);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        (v["status"].as_str(), v["exit_code"].as_u64()),
        (Some("usage"), Some(2))
    );
    assert!(v["error"].as_str().unwrap().contains("ANTHROPIC_API_KEY"));
}

#[test]
fn a_default_transcript_is_kept_under_rounds_home() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![sse::answer("ok")]);
    let out = run(sb.anthropic(&server).args(["-o", "json", "hi"]));
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let path = std::path::PathBuf::from(v["transcript"].as_str().unwrap());
    assert!(
        path.starts_with(sb.path("state").join("runs")),
        "{}",
        path.display()
    );
    assert_eq!(types(&read_jsonl(&path)), ["start", "round", "end"]);
    assert!(
        out.stderr
            .contains(&format!("transcript {}", path.display())),
        "{}",
        out.stderr
    );
}

#[test]
fn the_demo_replays_with_real_tools_and_reproduces_the_recording() {
    let sb = Sandbox::new();
    let root = env!("CARGO_MANIFEST_DIR");
    let demo = format!("{root}/fixtures/demo/demo.jsonl");
    let out = run(sb
        .rounds()
        .args([
            "-m",
            &format!("replay:{demo}"),
            "-w",
            &format!("{root}/fixtures/demo/workspace"),
            "--transcript",
        ])
        .arg(sb.transcript_path()));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let recorded = read_jsonl(std::path::Path::new(&demo));
    let replayed = sb.transcript();
    assert_eq!(
        types(&replayed),
        ["start", "round", "round", "round", "end"]
    );
    assert_eq!(
        out.stdout,
        format!("{}\n", recorded[4]["final_text"].as_str().unwrap())
    );
    assert_eq!(replayed[0]["prompt"], recorded[0]["prompt"]);
    // Tools really ran against the workspace and produced what was recorded.
    for round in 1..=3 {
        let strip = |v: &Value| {
            v["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    (
                        r["tool_use_id"].clone(),
                        r["is_error"].clone(),
                        r["content"].clone(),
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            strip(&replayed[round]),
            strip(&recorded[round]),
            "round {round}"
        );
        assert_eq!(replayed[round]["blocks"], recorded[round]["blocks"]);
    }
    assert_eq!(replayed[4]["tool_calls"], 4);
}

#[test]
fn replay_past_the_recording_is_an_error_not_a_hang() {
    let sb = Sandbox::new();
    let root = env!("CARGO_MANIFEST_DIR");
    // The recorded run finished in round 3; a prompt-only replay of it has nothing for round 4,
    // which happens if a result differs and the loop continues. Cap rounds to show the message.
    let out = run(sb.rounds().args([
        "-m",
        &format!("replay:{root}/fixtures/demo/demo.jsonl"),
        "-w",
        &format!("{root}/fixtures/demo/workspace"),
        "--max-rounds",
        "2",
        "--no-transcript",
    ]));
    assert_eq!(out.code, 3, "{}", out.stderr);
}

#[test]
fn stream_json_ends_with_a_schema_valid_end_line_even_when_the_run_never_starts() {
    let sb = Sandbox::new();
    let out = run(sb
        .rounds()
        .args(["-o", "stream-json", "-m", "anthropic/x", "hi"]));
    assert_eq!(out.code, 2);
    let lines = crate::common::parse_lines(&out.stdout);
    assert_eq!(types(&lines), ["end"]);
    assert_eq!(lines[0]["status"], "usage");
}

#[test]
fn transcripts_are_private_and_a_planted_symlink_is_not_followed() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let server = MockServer::start(vec![sse::answer("one")]);
    // The default location: every directory rounds makes is 0700, the file 0600.
    let out = run(sb.anthropic(&server).args(["-o", "json", "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let path = std::path::PathBuf::from(v["transcript"].as_str().unwrap());
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    for dir in path
        .ancestors()
        .skip(1)
        .take_while(|d| d.starts_with(sb.path("state")))
    {
        assert_eq!(mode(dir), 0o700, "{}", dir.display());
    }

    let victim = sb.path("victim.txt");
    std::fs::write(&victim, "precious").unwrap();
    let planted = sb.path("planted.jsonl");
    std::os::unix::fs::symlink(&victim, &planted).unwrap();
    let server = MockServer::start(vec![sse::answer("two")]);
    let out = run(sb
        .anthropic(&server)
        .arg("--transcript")
        .arg(&planted)
        .arg("go"));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("symbolic link"), "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(server.requests().is_empty());
}
