//! Run control for CI (issue 6): every exit code produced by a real run, each checked against
//! the end line, the JSON output and the process table; and --output stream-json.

use std::io::{BufRead, BufReader, Read};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::mock::{MockServer, Reply, Step};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, parse_lines, run, schema_errors, types};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn tool_round(id: &str, name: &str, input: &str) -> Reply {
    Reply::sse(sse::anthropic(
        &[B::Tool(id, name, input)],
        "tool_use",
        100,
        20,
    ))
}

fn answer(text: &str) -> Reply {
    Reply::sse(sse::anthropic(&[B::Text(text)], "end_turn", 150, 30))
}

fn rounds(sb: &Sandbox, server: &MockServer) -> std::process::Command {
    rounds_with_output(sb, server, "json")
}

fn rounds_with_output(sb: &Sandbox, server: &MockServer, output: &str) -> std::process::Command {
    let mut cmd = sb.rounds();
    cmd.env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", server.url())
        .args(["-o", output, "--transcript"])
        .arg(sb.transcript_path());
    cmd
}

fn json_out(out: &crate::common::Run) -> Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {:?}", out.stdout))
}

/// The transcript's end line and the JSON output agree on status and exit code.
fn ended(sb: &Sandbox, out: &crate::common::Run, status: &str, code: i32) -> Value {
    assert_eq!(out.code, code, "{}", out.stderr);
    let end = sb.transcript().pop().unwrap();
    assert_eq!(
        (
            end["type"].as_str(),
            end["status"].as_str(),
            end["exit_code"].as_i64()
        ),
        (Some("end"), Some(status), Some(code as i64))
    );
    if !out.stdout.is_empty() {
        let v = json_out(out);
        assert_eq!(
            (v["status"].as_str(), v["exit_code"].as_i64()),
            (Some(status), Some(code as i64))
        );
    }
    end
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

fn pid_in(path: &std::path::Path, within: Duration) -> u32 {
    let deadline = Instant::now() + within;
    loop {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn gone_soon(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(3);
    while alive(pid) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

#[test]
fn summarize_at_max_rounds_answers_without_tools_and_still_exits_3() {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let server = MockServer::start(vec![
        tool_round("t1", "read_file", r#"{"path":"a.txt"}"#),
        answer("Summary: a.txt says alpha."),
    ]);
    let out =
        run(rounds(&sb, &server).args(["--max-rounds", "1", "--on-max-rounds", "summarize", "go"]));
    let end = ended(&sb, &out, "max_rounds", 3);
    assert_eq!(json_out(&out)["final_text"], "Summary: a.txt says alpha.");
    assert_eq!(end["final_text"], "Summary: a.txt says alpha.");
    let last = server.requests()[1].json();
    assert_eq!(
        last["tool_choice"],
        json!({"type": "none"}),
        "tools defined but forbidden"
    );
    let turn = last["messages"][2]["content"].as_array().unwrap();
    assert_eq!(turn[0]["type"], "tool_result");
    assert!(
        turn[1]["text"]
            .as_str()
            .unwrap()
            .starts_with("The round limit has been reached"),
        "{turn:?}"
    );
    let lines = sb.transcript();
    assert_eq!(lines[2]["summary"], true);
}

#[test]
fn the_budget_stops_the_run_before_a_request_that_would_exceed_it() {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let server = MockServer::start(vec![
        tool_round("t1", "read_file", r#"{"path":"a.txt"}"#),
        answer("never asked"),
    ]);
    let out = run(rounds(&sb, &server).args(["--budget-tokens", "200", "go"]));
    let end = ended(&sb, &out, "budget", 4);
    assert_eq!(
        server.requests().len(),
        1,
        "the second request would pass the budget"
    );
    assert_eq!(
        end["usage"],
        json!({"input_tokens": 100, "output_tokens": 20})
    );
    assert!(
        end["error"]
            .as_str()
            .unwrap()
            .starts_with("the token budget of 200 would be exceeded: 120 used"),
        "{end}"
    );
    // A budget too small for even the first request makes none.
    let sb = Sandbox::new();
    let server = MockServer::start(vec![answer("never")]);
    let out = run(rounds(&sb, &server).args([
        "--budget-tokens",
        "5",
        "summarize this long prompt please",
    ]));
    ended(&sb, &out, "budget", 4);
    assert_eq!(server.requests().len(), 0);
}

#[test]
fn absurd_token_counts_saturate_instead_of_wrapping_under_the_budget() {
    // 2^63 in + 2^63 out wraps a u64 total to 0, which would pass any budget.
    let huge = 1u64 << 63;
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let server = MockServer::start(vec![
        Reply::sse(sse::anthropic(
            &[B::Tool("t1", "read_file", r#"{"path":"a.txt"}"#)],
            "tool_use",
            huge,
            huge,
        )),
        answer("never asked"),
    ]);
    let out = run(rounds(&sb, &server).args(["--budget-tokens", "100000", "go"]));
    let end = ended(&sb, &out, "budget", 4);
    assert_eq!(server.requests().len(), 1);
    assert_eq!(
        end["usage"],
        json!({"input_tokens": huge, "output_tokens": huge})
    );
    let error = end["error"].as_str().unwrap();
    assert!(
        error.contains(&format!("{} used", u64::MAX)),
        "the total saturates: {error}"
    );
}

#[test]
fn the_deadline_kills_running_tools_and_closes_the_transcript_with_exit_5() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![
        tool_round(
            "t1",
            "bash",
            r#"{"command":"echo $$ > pid; exec sleep 60"}"#,
        ),
        answer("late"),
    ]);
    let started = Instant::now();
    let out = run(rounds(&sb, &server).args(["-a", "bash", "--timeout", "1", "go"]));
    let took = started.elapsed();
    let end = ended(&sb, &out, "timeout", 5);
    assert!(took < Duration::from_secs(4), "{took:?}");
    assert_eq!(end["error"], "the run's deadline of 1s passed");
    let lines = sb.transcript();
    assert_eq!(types(&lines), ["start", "round", "end"]);
    assert_eq!(lines[1]["results"][0]["error_kind"], "cancelled");
    let pid = pid_in(&sb.ws().join("pid"), Duration::from_secs(1));
    assert!(gone_soon(pid), "the tool outlived the deadline");
}

#[test]
fn fail_on_tool_error_and_denied_end_the_run_after_that_round_with_exit_6() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![
        tool_round("t1", "read_file", r#"{"path":"missing.txt"}"#),
        answer("no"),
    ]);
    let out = run(rounds(&sb, &server).args(["--fail-on", "tool-error", "go"]));
    let end = ended(&sb, &out, "tool_failure", 6);
    assert_eq!(server.requests().len(), 1);
    assert!(
        end["error"]
            .as_str()
            .unwrap()
            .starts_with("--fail-on tool-error: read_file"),
        "{end}"
    );
    assert_eq!(types(&sb.transcript()), ["start", "round", "end"]);

    let sb = Sandbox::new();
    sb.write("secret.txt", "s\n");
    let server = MockServer::start(vec![
        tool_round("t1", "read_file", r#"{"path":"secret.txt"}"#),
        answer("no"),
    ]);
    let out = run(rounds(&sb, &server).args([
        "--fail-on",
        "tool-error,denied",
        "--deny",
        "read_file(secret.txt)",
        "go",
    ]));
    let end = ended(&sb, &out, "tool_failure", 6);
    assert!(
        end["error"]
            .as_str()
            .unwrap()
            .starts_with("--fail-on denied: read_file"),
        "{end}"
    );

    // Without --fail-on, the same denial is just a result the model reads.
    let sb = Sandbox::new();
    let server = MockServer::start(vec![
        tool_round("t1", "read_file", r#"{"path":"secret.txt"}"#),
        answer("ok"),
    ]);
    let out = run(rounds(&sb, &server).args(["--deny", "read_file(secret.txt)", "go"]));
    ended(&sb, &out, "completed", 0);

    // A tool the allowlist did not offer (bash, by default) is denied too, for --fail-on.
    let sb = Sandbox::new();
    let server = MockServer::start(vec![
        tool_round("t1", "bash", r#"{"command":"touch ran"}"#),
        answer("no"),
    ]);
    let out = run(rounds(&sb, &server).args(["--fail-on", "denied", "go"]));
    let end = ended(&sb, &out, "tool_failure", 6);
    assert!(
        end["error"]
            .as_str()
            .unwrap()
            .starts_with("--fail-on denied: bash (not offered): \"bash\" is not allowed"),
        "{end}"
    );
    // Said in words, with what to do; never the Rust name of the kind.
    assert!(
        out.stderr.contains("allow it with -a bash"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("UnknownTool"), "{}", out.stderr);
    assert!(!sb.ws().join("ran").exists());
}

/// Starts a run of the scripted tool call and waits until the tool is running.
fn interruptible(sb: &Sandbox, server: &MockServer) -> (std::process::Child, u32) {
    let child = rounds(sb, server)
        .args(["-a", "bash", "go"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = pid_in(&sb.ws().join("pid"), Duration::from_secs(5));
    (child, pid)
}

fn signal(child: &std::process::Child, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

fn finish(mut child: std::process::Child) -> crate::common::Run {
    let mut stdout = String::new();
    let mut stderr = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let code = child.wait().unwrap().code().unwrap_or(-1);
    crate::common::Run {
        code,
        stdout,
        stderr,
    }
}

#[test]
fn sigint_and_sigterm_stop_the_run_kill_the_tools_and_write_the_end_line() {
    for (sig, code) in [("-INT", 130), ("-TERM", 143)] {
        let sb = Sandbox::new();
        let server = MockServer::start(vec![
            tool_round(
                "t1",
                "bash",
                r#"{"command":"echo $$ > pid; exec sleep 60"}"#,
            ),
            answer("late"),
        ]);
        let (child, tool) = interruptible(&sb, &server);
        let started = Instant::now();
        signal(&child, sig);
        let out = finish(child);
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{sig}: {:?}",
            started.elapsed()
        );
        let end = ended(&sb, &out, "interrupted", code);
        assert_eq!(end["error"], format!("interrupted by SIG{}", &sig[1..]));
        assert!(gone_soon(tool), "{sig}: the tool survived");
        assert_eq!(server.requests().len(), 1);
    }
}

#[test]
fn a_second_sigint_exits_at_once() {
    let sb = Sandbox::new();
    // The tool ignores SIGTERM, so a graceful stop takes the supervisor's grace period; the
    // second Ctrl-C must not wait for it.
    let server = MockServer::start(vec![tool_round(
        "t1",
        "bash",
        r#"{"command":"trap '' TERM; echo $$ > pid; while true; do sleep 0.05; done"}"#,
    )]);
    let (child, tool) = interruptible(&sb, &server);
    signal(&child, "-INT");
    std::thread::sleep(Duration::from_millis(30));
    let started = Instant::now();
    signal(&child, "-INT");
    let out = finish(child);
    assert_eq!(out.code, 130);
    assert!(
        started.elapsed() < Duration::from_millis(400),
        "{:?}",
        started.elapsed()
    );
    assert!(gone_soon(tool), "the tool survived rounds' exit");
    // Everything written is whole JSONL (the end line may be missing: the user insisted).
    let _ = sb.transcript();
}

#[test]
fn stream_json_emits_every_event_as_it_happens_and_each_line_matches_the_schema() {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let marker = sb.ws().join("seen-delta");
    // Round 1 stops after its first text delta until the test has read that event from stdout:
    // it only can if the line was flushed while the stream was still open.
    let first = sse::anthropic(
        &[
            B::Text("looking"),
            B::Tool("t1", "read_file", r#"{"path":"a.txt"}"#),
        ],
        "tool_use",
        10,
        5,
    );
    let mut held = Reply::sse(first[..3].to_vec());
    held.body
        .push(Step::WaitFor(marker.clone(), Duration::from_secs(10)));
    held.body.extend(
        first[3..]
            .iter()
            .map(|e| Step::Bytes(e.clone().into_bytes())),
    );
    let server = MockServer::start(vec![held, answer("done")]);
    let mut child = rounds_with_output(&sb, &server, "stream-json")
        .arg("go")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if line.contains("\"text_delta\"") {
            std::fs::write(&marker, "").unwrap();
        }
        lines.push(line);
    }
    assert_eq!(child.wait().unwrap().code(), Some(0));
    assert_eq!(
        server.waits(),
        [true],
        "the text delta was not on stdout while the stream was open"
    );
    let events = parse_lines(&(lines.join("\n") + "\n"));
    let kinds: Vec<&str> = types(&events);
    assert_eq!(
        kinds,
        [
            "start",
            "text_delta",
            "text_delta",
            "tool_use",
            "tool_result",
            "round",
            "text_delta",
            "text_delta",
            "round",
            "end"
        ]
    );
    assert_eq!(events[4]["tool_use_id"], "t1");
    assert!(events[4]["duration_ms"].is_u64());
    assert_eq!(events[6]["round"], 2);
    // round and end events are the transcript's own lines.
    let transcript = sb.transcript();
    let strip = |v: &Value| {
        let mut v = v.clone();
        v.as_object_mut().unwrap().remove("duration_ms");
        v
    };
    assert_eq!(events[5], transcript[1]);
    assert_eq!(strip(&events[9]), strip(&transcript[3]));
}

#[test]
fn the_schema_rejects_what_it_should() {
    let good = json!({"v":1,"type":"text_delta","round":1,"text":"x"});
    assert!(schema_errors(&good).is_empty());
    for bad in [
        json!({"v":2,"type":"text_delta","round":1,"text":"x"}),
        json!({"v":1,"type":"text_delta","round":0,"text":"x"}),
        json!({"v":1,"type":"text_delta","round":1}),
        json!({"v":1,"type":"mystery"}),
        json!({"v":1,"type":"end","status":"fine","exit_code":0,"rounds":1,"final_text":"","usage":{"input_tokens":1,"output_tokens":1},"duration_ms":1,"error":null,"tool_calls":0,"tool_errors":{}}),
    ] {
        assert!(!schema_errors(&bad).is_empty(), "{bad}");
    }
}

#[test]
fn a_reader_that_closes_stdout_early_stops_the_run_and_spends_nothing_more() {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    // The first reply waits long enough for the reader to take the start line and leave.
    let mut slow = tool_round("t1", "read_file", r#"{"path":"a.txt"}"#);
    slow.body.insert(0, Step::Sleep(Duration::from_millis(500)));
    let server = MockServer::start(vec![slow, answer("never asked")]);
    let mut child = rounds_with_output(&sb, &server, "stream-json")
        .arg("go")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader is gone (like `| head -1`): the run stops, as a SIGPIPE would have stopped it,
    // but cleanly: the transcript is closed and no further request is made.
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(141), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(first.contains("\"start\""));
    assert_eq!(
        server.requests().len(),
        1,
        "no tokens spent after the reader left"
    );
    let lines = sb.transcript();
    let end = lines.last().unwrap();
    assert_eq!(
        (end["status"].as_str(), end["exit_code"].as_i64()),
        (Some("interrupted"), Some(141))
    );
    assert!(
        end["error"].as_str().unwrap().contains("stdout was closed"),
        "{end}"
    );
}

#[test]
fn usage_is_counted_per_round_and_in_total_with_cache_tokens() {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let mut round1 = sse::anthropic(
        &[B::Tool("t1", "read_file", r#"{"path":"a.txt"}"#)],
        "tool_use",
        100,
        20,
    );
    round1[0] = round1[0].replace("\"usage\":{\"input_tokens\":100,", "\"usage\":{\"input_tokens\":100,\"cache_read_input_tokens\":900,\"cache_creation_input_tokens\":50,");
    let server = MockServer::start(vec![Reply::sse(round1), answer("done")]);
    let out = run(rounds(&sb, &server).arg("go"));
    let end = ended(&sb, &out, "completed", 0);
    let lines = sb.transcript();
    assert_eq!(
        lines[1]["usage"],
        json!({"input_tokens":100,"output_tokens":20,"cache_read_tokens":900,"cache_write_tokens":50})
    );
    assert_eq!(
        end["usage"],
        json!({"input_tokens":250,"output_tokens":50,"cache_read_tokens":900,"cache_write_tokens":50})
    );
    assert_eq!(json_out(&out)["usage"], end["usage"]);
    assert!(
        out.stderr.contains(
            "1200 in (900 read from the cache, 50 written to it) / 50 out tokens, $0.0020"
        ),
        "{}",
        out.stderr
    );
    // claude-sonnet-4-5 at $3 in, $15 out, $0.30 cache reads, $3.75 cache writes per MTok.
    let close = |v: &Value, want: f64| (v.as_f64().unwrap() - want).abs() < 1e-12;
    let round1 = (100.0 * 3.0 + 900.0 * 0.3 + 50.0 * 3.75 + 20.0 * 15.0) / 1e6;
    let round2 = (150.0 * 3.0 + 30.0 * 15.0) / 1e6;
    assert!(close(&lines[1]["cost_usd"], round1), "{}", lines[1]);
    assert!(close(&lines[2]["cost_usd"], round2), "{}", lines[2]);
    assert!(close(&end["cost_usd"], round1 + round2), "{end}");
    assert_eq!(json_out(&out)["cost_usd"], end["cost_usd"]);
}

#[test]
fn the_usd_budget_stops_before_a_request_that_would_pass_it_and_needs_a_price() {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    // Round 1 costs 1M input tokens at $3: $3.
    let server = MockServer::start(vec![
        Reply::sse(sse::anthropic(
            &[B::Tool("t1", "read_file", r#"{"path":"a.txt"}"#)],
            "tool_use",
            1_000_000,
            0,
        )),
        answer("never asked"),
    ]);
    let out = run(rounds(&sb, &server).args(["--budget-usd", "3.5", "go"]));
    let end = ended(&sb, &out, "budget", 4);
    assert_eq!(server.requests().len(), 1);
    assert!(
        end["error"]
            .as_str()
            .unwrap()
            .starts_with("the budget of $3.5 would be exceeded: $3.0000 spent"),
        "{end}"
    );
    // The control: a larger budget lets the second request through.
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let server = MockServer::start(vec![
        Reply::sse(sse::anthropic(
            &[B::Tool("t1", "read_file", r#"{"path":"a.txt"}"#)],
            "tool_use",
            1_000_000,
            0,
        )),
        answer("done"),
    ]);
    let out = run(rounds(&sb, &server).args(["--budget-usd", "10", "go"]));
    ended(&sb, &out, "completed", 0);

    // A model without a known price cannot have a USD budget; --prices gives it one.
    let sb = Sandbox::new();
    let server = MockServer::start(vec![answer("ok")]);
    let out = run(rounds(&sb, &server).args([
        "-m",
        "anthropic/claude-unknown",
        "--budget-usd",
        "1",
        "go",
    ]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("--prices"), "{}", out.stderr);
    std::fs::write(
        sb.path("prices.toml"),
        "[[model]]\nmatch = \"claude-unknown\"\ninput = 1.0\noutput = 2.0\n",
    )
    .unwrap();
    let prices = sb.path("prices.toml");
    let out = run(rounds(&sb, &server)
        .args([
            "-m",
            "anthropic/claude-unknown",
            "--budget-usd",
            "1",
            "--prices",
        ])
        .arg(&prices)
        .arg("go"));
    let end = ended(&sb, &out, "completed", 0);
    assert!(end["cost_usd"].as_f64().unwrap() > 0.0, "{end}");
}
