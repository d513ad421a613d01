//! The loop guards (issue 16): a response with too many calls is cut and its extra calls
//! dropped, identical calls in one response run once, and a model that keeps making the same
//! call for the same result ends `stuck` (exit 9) long before the round limit. Each guard has a
//! control that shows it does not fire when it should not.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::common::mock::{MockServer, Reply, Step};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// One Anthropic response asking for `n` distinct `read_file` calls, every event in one HTTP
/// chunk; with `hold`, the stream then stays open that long before it ends.
fn many_calls(n: usize, hold: Option<Duration>, never: &std::path::Path) -> Reply {
    let args: Vec<String> = (1..=n)
        .map(|i| format!(r#"{{"path":"f{i}.txt"}}"#))
        .collect();
    let ids: Vec<String> = (1..=n).map(|i| format!("t{i}")).collect();
    let blocks: Vec<B> = (0..n)
        .map(|i| B::Tool(&ids[i], "read_file", &args[i]))
        .collect();
    let events = sse::anthropic(&blocks, "tool_use", 100, 20);
    let (calls, end) = events.split_at(events.len() - 2);
    let mut body = vec![Step::Bytes(calls.concat().into_bytes())];
    if let Some(hold) = hold {
        body.push(Step::WaitFor(never.to_owned(), hold));
    }
    body.push(Step::Bytes(end.concat().into_bytes()));
    let mut reply = Reply::sse(vec![]);
    reply.body = body;
    reply
}

fn results(round: &Value) -> Vec<(String, Option<String>)> {
    round["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["tool_use_id"].as_str().unwrap().to_owned(),
                r["error_kind"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

#[test]
fn calls_past_the_limit_are_dropped_and_the_response_is_not_waited_for() {
    let sb = Sandbox::new();
    for i in 1..=20 {
        sb.write(&format!("f{i}.txt"), &format!("file {i}\n"));
    }
    // After its 20 calls the response stays open for 30 s: a run that waits for it fails.
    let never = sb.path("never");
    let server = MockServer::start(vec![
        many_calls(20, Some(Duration::from_secs(30)), &never),
        sse::answer("done"),
    ]);
    let started = Instant::now();
    let out = run(sb
        .anthropic(&server)
        .args(["--max-calls-per-round", "16", "--transcript"])
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "done\n"),
        "{}",
        out.stderr
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the run waited for the rest of the response: {:?}",
        started.elapsed()
    );
    assert!(
        server.waits().is_empty(),
        "the response was still held open"
    );
    let lines = sb.transcript();
    let round = &lines[1];
    let got = results(round);
    assert_eq!(got.len(), 20, "every call has a result");
    for (i, (id, kind)) in got.iter().enumerate() {
        assert_eq!(id, &format!("t{}", i + 1));
        let want = (i >= 16).then(|| "dropped".to_owned());
        assert_eq!(kind, &want, "{id}");
    }
    assert!(
        round["results"][16]["content"]
            .as_str()
            .unwrap()
            .contains("at most 16 tool calls"),
        "{}",
        round["results"][16]
    );
    let mut guards = vec![json!({"kind": "cut", "count": 20})];
    guards.extend((17..=20).map(|i| json!({"kind": "dropped", "tool_use_id": format!("t{i}")})));
    assert_eq!(round["guards"], Value::Array(guards));
    // The model hears about all twenty.
    let second = server.requests()[1].json();
    let turn = second["messages"][2]["content"].as_array().unwrap();
    assert_eq!(turn.len(), 20);
    assert_eq!(turn[19]["is_error"], true);
    let end = lines.last().unwrap();
    assert_eq!(end["tool_errors"], json!({"dropped": 4}));

    // The control: with room for 32 calls, all twenty run and nothing is cut.
    let sb = Sandbox::new();
    for i in 1..=20 {
        sb.write(&format!("f{i}.txt"), &format!("file {i}\n"));
    }
    let server = MockServer::start(vec![
        many_calls(20, Some(Duration::from_millis(300)), &never),
        sse::answer("done"),
    ]);
    let out = run(sb
        .anthropic(&server)
        .args(["--max-calls-per-round", "32", "--transcript"])
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = sb.transcript();
    assert!(results(&lines[1]).iter().all(|(_, kind)| kind.is_none()));
    assert_eq!(lines[1].get("guards"), None);
    assert_eq!(lines[1]["stop_reason"], "tool_use", "read to its end");
    assert_eq!(server.waits(), [false], "the whole response was read");
}

#[test]
fn identical_calls_in_one_response_run_once_and_point_to_the_first() {
    let sb = Sandbox::new();
    let count = r#"{"command":"echo ran >> count.txt"}"#;
    let server = MockServer::start(vec![
        Reply::sse(sse::anthropic(
            &[
                B::Tool("t1", "bash", count),
                B::Tool("t2", "bash", count),
                B::Tool("t3", "bash", r#"{"command":"echo other >> other.txt"}"#),
                B::Tool("t4", "bash", r#"{"command": "echo ran >> count.txt"}"#),
            ],
            "tool_use",
            10,
            5,
        )),
        // The control: the same call in the next response runs again.
        Reply::sse(sse::anthropic(
            &[B::Tool("t5", "bash", count)],
            "tool_use",
            10,
            5,
        )),
        sse::answer("done"),
    ]);
    let out = run(sb
        .anthropic(&server)
        .args(["-a", "bash", "--transcript"])
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let ran = std::fs::read_to_string(sb.ws().join("count.txt")).unwrap();
    assert_eq!(ran, "ran\nran\n", "once in round 1, once in round 2");
    assert!(sb.ws().join("other.txt").exists());
    let lines = sb.transcript();
    let round = &lines[1];
    assert_eq!(
        round["guards"],
        json!([
            {"kind": "duplicate", "tool_use_id": "t2", "of": "t1"},
            {"kind": "duplicate", "tool_use_id": "t4", "of": "t1"},
        ])
    );
    for i in [1, 3] {
        let r = &round["results"][i];
        assert_eq!(r["is_error"], false);
        assert!(r["content"].as_str().unwrap().contains("as t1"), "{r}");
    }
    assert!(
        round["results"][0]["content"]
            .as_str()
            .unwrap()
            .starts_with("exit code: 0")
    );
    assert_eq!(lines[2].get("guards"), None);
}

/// A model that asks for `args` of `tool` in every response, forever.
fn insistent(tool: &'static str, args: &'static str) -> MockServer {
    let n = AtomicUsize::new(0);
    MockServer::respond(move |_| {
        let i = n.fetch_add(1, Ordering::SeqCst) + 1;
        let id = format!("t{i}");
        Reply::sse(sse::anthropic(
            &[B::Tool(&id, tool, args)],
            "tool_use",
            10,
            5,
        ))
    })
}

#[test]
fn a_model_that_repeats_a_call_for_the_same_result_ends_stuck() {
    let sb = Sandbox::new();
    let server = insistent("list_dir", r#"{"path":"src"}"#);
    let out = run(sb
        .anthropic(&server)
        .args(["-o", "json", "--max-rounds", "25", "--transcript"])
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(out.code, 9, "{}", out.stderr);
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        (json["status"].as_str(), json["rounds"].as_u64()),
        (Some("stuck"), Some(4))
    );
    let lines = sb.transcript();
    let end = lines.last().unwrap();
    assert_eq!(
        (end["status"].as_str(), end["exit_code"].as_i64()),
        (Some("stuck"), Some(9))
    );
    assert!(
        end["error"]
            .as_str()
            .unwrap()
            .contains("same list_dir call 4 times"),
        "{end}"
    );
    assert_eq!(lines[1].get("guards"), None);
    assert_eq!(lines[2].get("guards"), None);
    assert_eq!(
        lines[3]["guards"],
        json!([{"kind": "repeated", "tool_use_id": "t3", "count": 3}])
    );
    assert_eq!(
        lines[4]["guards"],
        json!([{"kind": "stuck", "tool_use_id": "t4", "count": 4}])
    );
    // The model was told plainly, in the result it read before its fourth try.
    let told = server.requests()[3].json();
    let text = told["messages"].as_array().unwrap().last().unwrap()["content"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.contains("this exact call 3 times"), "{text}");
    assert!(text.contains("It will not change"), "{text}");
    assert_eq!(server.requests().len(), 4);
    assert!(out.stderr.contains("stuck"), "{}", out.stderr);

    // Resuming is no way out: the transcript's calls count, so the same call for the same
    // result once more is stuck at once (a fresh count would have allowed three more).
    let again = insistent("list_dir", r#"{"path":"src"}"#);
    let out = run(sb
        .anthropic(&again)
        .args(["--no-transcript", "--resume"])
        .arg(sb.transcript_path()));
    assert_eq!(out.code, 9, "{}", out.stderr);
    assert_eq!(again.requests().len(), 1);
}

#[test]
fn a_call_whose_result_changes_is_not_a_loop() {
    let sb = Sandbox::new();
    let server = insistent("bash", r#"{"command":"date +%s%N"}"#);
    let out = run(sb
        .anthropic(&server)
        .args(["-a", "bash", "--max-rounds", "6", "--transcript"])
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(out.code, 3, "the round limit, not stuck: {}", out.stderr);
    let lines = sb.transcript();
    assert!(lines.iter().all(|l| l.get("guards").is_none()));
    // And a lower --max-repeats catches a same-result loop sooner.
    let sb = Sandbox::new();
    let server = insistent("read_file", r#"{"path":"missing.txt"}"#);
    let out = run(sb
        .anthropic(&server)
        .args(["--max-repeats", "1", "--transcript"])
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(out.code, 9, "{}", out.stderr);
    assert_eq!(server.requests().len(), 2);
    // After its first call the model is told nothing about repeating (it has not), and the
    // run's error does not claim it was warned.
    let second = server.requests()[1].json();
    let result = second["messages"].as_array().unwrap().last().unwrap()["content"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(!result.contains("this exact call"), "{result}");
    assert!(
        out.stderr.contains("2 times") && out.stderr.contains("--max-repeats 1 allows no repeat"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("1 times"), "{}", out.stderr);
}

/// The first request body of a one-round run with `model` and `flags`.
fn first_body(model: &str, flags: &[&str]) -> Value {
    let sb = Sandbox::new();
    let reply = if model.starts_with("anthropic/") {
        sse::answer("hi")
    } else if model == "openai/o3" || flags.contains(&"responses") {
        Reply::sse(sse::responses(&[B::Text("hi")], 5, 1, 0))
    } else {
        Reply::sse(sse::openai(&[B::Text("hi")], "stop", 5, 1))
    };
    let server = MockServer::start(vec![reply]);
    let out = run(sb
        .rounds()
        .env("OPENAI_API_KEY", "k")
        .env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", server.url())
        .args(["-m", model, "--no-transcript", "--base-url"])
        .arg(if model.starts_with("anthropic/") {
            server.url()
        } else {
            format!("{}/v1", server.url())
        })
        .args(flags)
        .arg("hello"));
    assert_eq!(out.code, 0, "{model} {flags:?}: {}", out.stderr);
    server.requests()[0].json()
}

#[test]
fn local_presets_cap_the_output_and_ask_for_no_parallel_calls_unless_told() {
    for preset in ["llamacpp/qwen", "ollama/qwen3:8b", "vllm/m"] {
        let body = first_body(preset, &[]);
        assert_eq!(body["max_tokens"], 4096, "{preset}");
        assert_eq!(body.get("parallel_tool_calls"), None, "{preset}");
        assert!(body["tools"].is_array());
    }
    let body = first_body(
        "llamacpp/qwen",
        &["--parallel-tool-calls", "on", "--max-tokens", "100"],
    );
    assert_eq!(
        (&body["max_tokens"], &body["parallel_tool_calls"]),
        (&json!(100), &json!(true))
    );
    let body = first_body("llamacpp/qwen", &["--api", "responses"]);
    assert_eq!(body["max_output_tokens"], 4096);
    assert_eq!(body.get("parallel_tool_calls"), None);
    // Hosted providers keep what they had: OpenAI is asked for parallel calls, with no cap.
    let body = first_body("openai/gpt-4.1", &[]);
    assert_eq!(body["parallel_tool_calls"], true);
    assert_eq!(body.get("max_completion_tokens"), None);
    let body = first_body("anthropic/claude-sonnet-4-5", &[]);
    assert_eq!(body["tool_choice"], json!({"type": "auto"}));
    // And the flag works for each of them.
    let body = first_body("openai/gpt-4.1", &["--parallel-tool-calls", "off"]);
    assert_eq!(body["parallel_tool_calls"], false);
    let body = first_body("openai/o3", &["--parallel-tool-calls", "off"]);
    assert_eq!(body["parallel_tool_calls"], false, "the Responses API too");
    let body = first_body(
        "anthropic/claude-sonnet-4-5",
        &["--parallel-tool-calls", "off"],
    );
    assert_eq!(
        body["tool_choice"],
        json!({"type": "auto", "disable_parallel_tool_use": true})
    );
}

#[test]
fn parallel_calls_off_is_kept_by_the_loop_where_the_api_has_no_switch() {
    for (flags, dropped) in [
        (&["--parallel-tool-calls", "off"][..], true),
        (&[][..], false),
    ] {
        let sb = Sandbox::new();
        sb.write("a.txt", "alpha\n");
        sb.write("b.txt", "beta\n");
        let calls = [
            B::Tool("", "read_file", r#"{"path":"a.txt"}"#),
            B::Tool("", "read_file", r#"{"path":"b.txt"}"#),
        ];
        let server = MockServer::start(vec![
            Reply::sse(sse::gemini(&calls, 10, 5)),
            Reply::sse(sse::gemini(&[B::Text("done")], 10, 5)),
        ]);
        let out = run(sb
            .rounds()
            .env("GEMINI_API_KEY", "k")
            .env("GEMINI_BASE_URL", server.url())
            .args(["-m", "gemini/gemini-2.5-flash", "--transcript"])
            .arg(sb.transcript_path())
            .args(flags)
            .arg("go"));
        assert_eq!(out.code, 0, "{}", out.stderr);
        let kinds: Vec<Option<String>> = results(&sb.transcript()[1])
            .into_iter()
            .map(|(_, kind)| kind)
            .collect();
        let want = [None, dropped.then(|| "dropped".to_owned())];
        assert_eq!(kinds, want, "{flags:?}");
    }
}

#[test]
fn a_bash_call_that_only_takes_longer_each_time_is_still_a_loop() {
    let sb = Sandbox::new();
    // Same output every time, a clearly different duration each time: the guard must not
    // count the time as a change in the result.
    let server = insistent(
        "bash",
        r#"{"command":"n=$(cat n 2>/dev/null || echo 0); echo $((n+1)) > n; sleep 0.$((n*15))"}"#,
    );
    let out = run(sb
        .anthropic(&server)
        .args([
            "-a",
            "bash",
            "-o",
            "json",
            "--max-rounds",
            "25",
            "--transcript",
        ])
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(out.code, 9, "{}", out.stderr);
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["status"].as_str(), Some("stuck"));
    // The model still read each call's duration.
    let lines = sb.transcript();
    let results: Vec<&str> = lines
        .iter()
        .filter_map(|l| l["results"].as_array())
        .flatten()
        .filter_map(|r| r["content"].as_str())
        .collect();
    assert!(!results.is_empty(), "{lines:?}");
    assert!(
        results.iter().all(|c| c
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("duration: "))),
        "{results:?}"
    );

    // Resumed, the transcript's results compare alike too (it keeps their text, not which line
    // varies): the same call once more is stuck at once.
    let again = insistent(
        "bash",
        r#"{"command":"n=$(cat n 2>/dev/null || echo 0); echo $((n+1)) > n; sleep 0.$((n*15))"}"#,
    );
    let out = run(sb
        .anthropic(&again)
        .args(["-a", "bash", "--no-transcript", "--resume"])
        .arg(sb.transcript_path()));
    assert_eq!(out.code, 9, "{}", out.stderr);
    assert_eq!(again.requests().len(), 1);
}
