//! The bash tool against the promises of RELIABILITY.md "Tool processes": each test provokes the
//! fault for real and checks the exit code, the transcript, that no process is left behind, and
//! that no key leaked.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::mock::{MockServer, Reply, Step};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run, types};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const KEY: &str = "sk-ant-SECRET-4f9a2c";

/// A round-1 reply that calls bash with `command` (and optional timeout), then a final answer.
fn script(calls: &[(&str, Option<f64>)]) -> MockServer {
    let inputs: Vec<String> = calls
        .iter()
        .map(|(c, t)| match t {
            Some(t) => json!({"command": c, "timeout": t}).to_string(),
            None => json!({"command": c}).to_string(),
        })
        .collect();
    let ids: Vec<String> = (0..calls.len()).map(|i| format!("call_{i}")).collect();
    let blocks: Vec<B> = ids
        .iter()
        .zip(&inputs)
        .map(|(id, i)| B::Tool(id, "bash", i))
        .collect();
    MockServer::start(vec![
        Reply::sse(sse::anthropic(&blocks, "tool_use", 10, 5)),
        Reply::sse(sse::anthropic(&[B::Text("done")], "end_turn", 10, 5)),
    ])
}

fn rounds(sb: &Sandbox, server: &MockServer) -> std::process::Command {
    let mut cmd = sb.rounds();
    cmd.env("ANTHROPIC_API_KEY", KEY)
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("OTHER_SECRET_TOKEN", "tok-123")
        .args(["-a", "bash", "--transcript"])
        .arg(sb.transcript_path());
    cmd
}

fn results(sb: &Sandbox) -> Vec<Value> {
    let lines = sb.transcript();
    assert_eq!(
        types(&lines).last(),
        Some(&"end"),
        "the transcript must end with its end line"
    );
    lines[1]["results"].as_array().unwrap().clone()
}

/// True while the process exists (zombies count as gone).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

fn pids(path: &Path) -> Vec<u32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

fn wait_gone(pids: &[u32], within: Duration) -> Vec<u32> {
    let deadline = Instant::now() + within;
    loop {
        let living: Vec<u32> = pids.iter().copied().filter(|&p| alive(p)).collect();
        if living.is_empty() || Instant::now() > deadline {
            return living;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn exit_code_stdout_stderr_and_a_closed_stdin_are_reported() {
    let sb = Sandbox::new();
    let server = script(&[("cat; echo out; echo err >&2; exit 3", None)]);
    let out = run(rounds(&sb, &server).arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = &results(&sb)[0];
    assert_eq!(
        r["is_error"], false,
        "a non-zero exit is reported, not a tool failure"
    );
    let content = r["content"].as_str().unwrap();
    assert!(content.starts_with("exit code: 3\nduration: "), "{content}");
    assert!(
        content.ends_with("stdout:\nout\nstderr:\nerr\n"),
        "{content}"
    );
}

#[test]
fn an_absurd_timeout_from_the_model_is_capped_not_a_crash() {
    let sb = Sandbox::new();
    let server = script(&[("echo fine", Some(1e300))]);
    let out = run(rounds(&sb, &server).arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = &results(&sb)[0];
    assert_eq!(r["is_error"], false, "{r}");
    assert!(
        r["content"].as_str().unwrap().contains("stdout:\nfine\n"),
        "{r}"
    );
}

#[test]
fn a_timeout_kills_the_whole_tree_even_escapees_and_term_ignorers() {
    let sb = Sandbox::new();
    // A descendant in its own session ignoring SIGTERM, one holding the output pipe, and the
    // shell itself waiting: all must be gone when the call returns.
    let cmd = "setsid bash -c 'trap \"\" TERM; echo $$ >> pids; exec sleep 300' & \
               (trap '' TERM; sleep 300) & echo $! >> pids; echo $$ >> pids; sleep 300";
    let server = script(&[(cmd, Some(1.0))]);
    let started = Instant::now();
    let out = run(rounds(&sb, &server).arg("go"));
    let took = started.elapsed();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(took < Duration::from_secs(6), "the run took {took:?}");
    let r = &results(&sb)[0];
    assert_eq!(r["error_kind"], "timeout");
    assert!(r["duration_ms"].as_u64().unwrap() < 3000, "{r}");
    assert!(
        r["content"]
            .as_str()
            .unwrap()
            .starts_with("timed out after 1.0s"),
        "{r}"
    );
    let started = pids(&sb.ws().join("pids"));
    assert_eq!(started.len(), 3, "{started:?}");
    assert_eq!(
        wait_gone(&started, Duration::from_millis(200)),
        Vec::<u32>::new(),
        "processes left behind"
    );
}

#[test]
fn background_processes_do_not_outlive_their_command() {
    let sb = Sandbox::new();
    let server = script(&[("sleep 300 & echo $! > pids; echo started", None)]);
    let out = run(rounds(&sb, &server).arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = &results(&sb)[0];
    assert!(
        r["content"]
            .as_str()
            .unwrap()
            .contains("stdout:\nstarted\n"),
        "{r}"
    );
    assert!(
        r["duration_ms"].as_u64().unwrap() < 3000,
        "a pipe held by a background job must not hang the call: {r}"
    );
    assert_eq!(
        wait_gone(&pids(&sb.ws().join("pids")), Duration::from_millis(200)),
        Vec::<u32>::new()
    );
}

#[test]
fn killing_rounds_with_sigkill_still_ends_the_tool_tree() {
    let sb = Sandbox::new();
    let marker = sb.ws().join("pids");
    let server = script(&[(
        "(trap '' TERM; sleep 300) & echo $! >> pids; echo $$ >> pids; sleep 300",
        None,
    )]);
    let mut child = rounds(&sb, &server)
        .arg("go")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while pids(&marker).len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let started = pids(&marker);
    assert_eq!(started.len(), 2);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        wait_gone(&started, Duration::from_secs(3)),
        Vec::<u32>::new(),
        "orphans survived rounds"
    );
    // The transcript holds what was finished before the kill: valid JSONL, start line only.
    assert_eq!(types(&sb.transcript()), ["start"]);
}

#[test]
fn huge_output_is_bounded_and_spilled_whole_to_a_file() {
    let sb = Sandbox::new();
    let server = script(&[(
        "head -c 20000000 /dev/zero | tr '\\0' 'x'; printf '\\nEND\\n'",
        None,
    )]);
    let out = run(rounds(&sb, &server).arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = &results(&sb)[0];
    let content = r["content"].as_str().unwrap();
    assert!(content.len() < 30_000, "{}", content.len());
    assert!(
        content.contains("bytes (0 lines) cut from the middle of 20000005 bytes"),
        "{}",
        &content[..300.min(content.len())]
    );
    assert!(
        content.trim_end().ends_with("END\nstderr: (empty)"),
        "{}",
        &content[content.len() - 200..]
    );
    let spill = sb
        .transcript_path()
        .with_extension("outputs")
        .join("call_0.stdout");
    assert!(
        content.contains(&spill.display().to_string()),
        "the marker names the file"
    );
    assert_eq!(std::fs::metadata(&spill).unwrap().len(), 20_000_005);
}

#[test]
fn spill_files_are_capped_private_and_never_overwrite_each_other() {
    use std::os::unix::fs::PermissionsExt;
    // `yes` for the whole tool timeout wrote gigabytes: the cap keeps the start only.
    let sb = Sandbox::new();
    let server = script(&[("yes | head -c 5000000", None)]);
    let out = run(rounds(&sb, &server).args(["--max-spill-bytes", "100000", "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let content = results(&sb)[0]["content"].as_str().unwrap().to_owned();
    assert!(
        content.contains("only its first bytes were saved"),
        "{content}"
    );
    let outputs = sb.transcript_path().with_extension("outputs");
    let spill = outputs.join("call_0.stdout");
    assert_eq!(std::fs::metadata(&spill).unwrap().len(), 100_000);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&spill), 0o600);
    assert_eq!(mode(&outputs), 0o700);
    // The control: without the cap the file holds everything.
    let sb = Sandbox::new();
    let server = script(&[("yes | head -c 5000000", None)]);
    let out = run(rounds(&sb, &server).arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let spill = sb
        .transcript_path()
        .with_extension("outputs")
        .join("call_0.stdout");
    assert_eq!(std::fs::metadata(&spill).unwrap().len(), 5_000_000);

    // Ids that reduce to the same file name, and an id a local server reuses every response:
    // each call keeps its own whole output.
    let sb = Sandbox::new();
    let big = |tag: &str| json!({"command": format!("yes {tag} | head -c 100000")}).to_string();
    let (a, b, c) = (big("first"), big("second"), big("third"));
    let server = MockServer::start(vec![
        Reply::sse(sse::anthropic(
            &[B::Tool("call.1", "bash", &a), B::Tool("call/1", "bash", &b)],
            "tool_use",
            1,
            1,
        )),
        Reply::sse(sse::anthropic(
            &[B::Tool("call.1", "bash", &c)],
            "tool_use",
            1,
            1,
        )),
        Reply::sse(sse::anthropic(&[B::Text("done")], "end_turn", 1, 1)),
    ]);
    let out = run(rounds(&sb, &server).arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = sb.transcript();
    let mut files = Vec::new();
    for (round, i, tag) in [(1, 0, "first"), (1, 1, "second"), (2, 0, "third")] {
        let content = lines[round]["results"][i]["content"].as_str().unwrap();
        let path = content
            .split("the whole output is in ")
            .nth(1)
            .and_then(|rest| rest.split(" ...]").next())
            .unwrap_or_else(|| panic!("no file named: {content}"))
            .to_owned();
        let saved = std::fs::read_to_string(&path).unwrap();
        assert!(
            saved.starts_with(&format!("{tag}\n")),
            "{path} holds another call's output"
        );
        files.push(path);
    }
    files.sort();
    files.dedup();
    assert_eq!(files.len(), 3, "{files:?}");
}

#[test]
fn without_a_transcript_the_saved_outputs_go_with_the_run() {
    let sb = Sandbox::new();
    let tmp = sb.path("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let server = script(&[("yes | head -c 100000; ls -d $TMPDIR/rounds-*", None)]);
    let out = run(sb.anthropic(&server).env("TMPDIR", &tmp).args([
        "-a",
        "bash",
        "--no-transcript",
        "-o",
        "stream-json",
        "go",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    // The call saw its outputs directory under the temp dir...
    let events = crate::common::parse_lines(&out.stdout);
    let result = events.iter().find(|e| e["type"] == "tool_result").unwrap();
    let content = result["content"].as_str().unwrap();
    assert!(
        content.contains(&format!("the whole output is in {}", tmp.display())),
        "{content}"
    );
    // ...and nothing is left of it.
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn binary_and_invalid_utf8_output_keeps_the_transcript_valid() {
    let sb = Sandbox::new();
    let server = script(&[("printf 'a\\x00b\\xff\\xfec'", None)]);
    let out = run(rounds(&sb, &server).arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let content = results(&sb)[0]["content"].as_str().unwrap().to_owned();
    assert!(content.contains("a\u{0}b\u{fffd}\u{fffd}c"), "{content:?}");
}

#[test]
fn keys_never_reach_the_tool_not_even_through_proc() {
    let sb = Sandbox::new();
    let probe = "env; echo ---; cat /proc/$PPID/environ /proc/$PPID/cmdline; \
                 R=$(awk '{print $4}' /proc/$PPID/stat); echo rounds=$R; \
                 cat /proc/$R/environ /proc/$R/cmdline; tr '\\0' ' ' < /proc/$R/cmdline; \
                 head -c 100000 /proc/$R/mem; true";
    let server = script(&[(probe, None)]);
    let out = run(rounds(&sb, &server)
        .args(["--tool-env", "KEEP_ME"])
        .env("KEEP_ME", "kept")
        .arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let content = results(&sb)[0]["content"].as_str().unwrap().to_owned();
    assert!(content.contains("rounds="), "the probe ran: {content}");
    assert!(
        content.contains("KEEP_ME=kept"),
        "--tool-env passes a variable: {content}"
    );
    assert!(content.contains("PATH="), "{content}");
    for secret in [KEY, "tok-123", "ANTHROPIC_API_KEY", "OTHER_SECRET_TOKEN"] {
        assert!(
            !content.contains(secret),
            "{secret} leaked to the tool: {content}"
        );
    }
    let transcript = std::fs::read_to_string(sb.transcript_path()).unwrap();
    assert!(!transcript.contains(KEY) && !out.stderr.contains(KEY) && !out.stdout.contains(KEY));
}

#[test]
fn the_default_allowlist_does_not_offer_bash_and_patterns_bind_compound_commands() {
    let sb = Sandbox::new();
    let server = script(&[
        ("git --version; touch pwned", None),
        ("git --version", None),
    ]);
    let out = run(sb
        .rounds()
        .env("ANTHROPIC_API_KEY", KEY)
        .env("ANTHROPIC_BASE_URL", server.url())
        .args(["-a", "bash(git *)", "--transcript"])
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = results(&sb);
    assert_eq!(r[0]["error_kind"], "denied", "{}", r[0]);
    assert!(
        r[0]["content"]
            .as_str()
            .unwrap()
            .contains("\"touch pwned\" is not allowed"),
        "{}",
        r[0]
    );
    assert!(!sb.ws().join("pwned").exists());
    assert_eq!(r[1]["is_error"], false, "{}", r[1]);
    let offered = server.requests()[0].json()["tools"].clone();
    assert!(
        offered
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "bash")
    );
    // Without -a bash, bash is not offered at all.
    let server = script(&[("true", None)]);
    let sb2 = Sandbox::new();
    let _ = run(sb2
        .rounds()
        .env("ANTHROPIC_API_KEY", KEY)
        .env("ANTHROPIC_BASE_URL", server.url())
        .args(["--no-transcript", "go"]));
    let names: Vec<Value> = server.requests()[0].json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].clone())
        .collect();
    assert!(!names.contains(&json!("bash")), "{names:?}");
}

#[test]
fn a_tool_call_starts_while_the_model_is_still_streaming() {
    let sb = Sandbox::new();
    let marker = sb.ws().join("ran");
    // The stream stops after the first tool block and resumes only once the tool has run.
    let mut events = vec![];
    let first = sse::anthropic(
        &[B::Tool("t1", "bash", r#"{"command":"touch ran"}"#)],
        "tool_use",
        5,
        5,
    );
    let (blocks_end, tail) = first.split_at(first.len() - 2);
    events.extend(
        blocks_end
            .iter()
            .cloned()
            .map(|e| Step::Bytes(e.into_bytes())),
    );
    events.push(Step::WaitFor(marker.clone(), Duration::from_secs(10)));
    events.extend(
        sse::anthropic_blocks(&[B::Text("and more text after the call")], 1)
            .into_iter()
            .map(|e| Step::Bytes(e.into_bytes())),
    );
    events.extend(tail.iter().cloned().map(|e| Step::Bytes(e.into_bytes())));
    let mut held = Reply::sse(vec![]);
    held.body = events;
    let server = MockServer::start(vec![held, sse::answer("done")]);
    let out = run(rounds(&sb, &server).arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        server.waits(),
        [true],
        "the tool had not run while the stream was held open"
    );
    let lines = sb.transcript();
    assert_eq!(
        lines[1]["blocks"][1]["text"],
        "and more text after the call"
    );
}
