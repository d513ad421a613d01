//! `--resume`: a recorded conversation continues, with any provider, in that provider's own
//! format; signatures go back only to the provider that made them.

use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run, run_within, types};
use pretty_assertions::assert_eq;
use serde_json::json;
use std::time::Duration;

/// A finished Anthropic run with thinking, a signature and a tool call; returns its transcript.
pub(super) fn anthropic_run(sb: &Sandbox) -> std::path::PathBuf {
    sb.write("a.txt", "alpha\n");
    let server = MockServer::start(vec![
        Reply::sse(sse::anthropic(
            &[
                B::Thinking("I should read it.", "sig-anthropic"),
                B::Text("Reading."),
                B::Tool("toolu_1", "read_file", r#"{"path":"a.txt"}"#),
            ],
            "tool_use",
            10,
            5,
        )),
        Reply::sse(sse::anthropic(
            &[B::Text("It says alpha.")],
            "end_turn",
            10,
            5,
        )),
    ]);
    let path = sb.path("first.jsonl");
    let out = run(sb
        .anthropic(&server)
        .arg("--transcript")
        .arg(&path)
        .arg("what does a.txt say?"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    path
}

#[test]
fn an_anthropic_run_resumes_with_openai_in_openais_format() {
    let sb = Sandbox::new();
    let first = anthropic_run(&sb);
    let server = MockServer::start(vec![Reply::sse(sse::openai(
        &[B::Text("Upper case: ALPHA.")],
        "stop",
        10,
        5,
    ))]);
    let out = run(sb
        .rounds()
        .env("OPENAI_API_KEY", "k")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url()))
        .args(["-m", "openai/gpt-test", "--resume"])
        .arg(&first)
        .arg("--transcript")
        .arg(sb.transcript_path())
        .arg("and in upper case?"));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "Upper case: ALPHA.\n"),
        "{}",
        out.stderr
    );
    let body = server.requests()[0].json();
    let messages = &body["messages"].as_array().unwrap()[1..];
    assert_eq!(
        messages,
        [
            json!({"role":"user","content":sb.turn("what does a.txt say?")}),
            json!({"role":"assistant","content":"Reading.","tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.txt\"}"}}]}),
            json!({"role":"tool","tool_call_id":"toolu_1","content":"     1\talpha\n"}),
            json!({"role":"assistant","content":"It says alpha."}),
            json!({"role":"user","content":sb.turn("and in upper case?")}),
        ]
    );
    let start = &sb.transcript()[0];
    assert_eq!(start["resumed_from"], first.display().to_string());
    assert_eq!(start["provider"], "openai");
}

#[test]
fn resuming_with_gemini_drops_foreign_signatures_and_anthropic_keeps_its_own() {
    let sb = Sandbox::new();
    let first = anthropic_run(&sb);
    let server = MockServer::start(vec![Reply::sse(sse::gemini(&[B::Text("ok")], 10, 5))]);
    let out = run(sb
        .rounds()
        .env("GEMINI_API_KEY", "k")
        .env("GEMINI_BASE_URL", server.url())
        .args(["-m", "gemini/gemini-test", "--no-transcript", "--resume"])
        .arg(&first)
        .arg("again"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let body = server.requests()[0].json().to_string();
    assert!(
        !body.contains("sig-anthropic") && !body.contains("I should read it."),
        "{body}"
    );
    assert!(body.contains("functionResponse"), "{body}");

    // Back to Anthropic: its own thinking block goes back with its signature, unchanged.
    let server = MockServer::start(vec![sse::answer("ok")]);
    let out = run(sb
        .anthropic(&server)
        .args(["--no-transcript", "--resume"])
        .arg(&first)
        .arg("again"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let body = server.requests()[0].json();
    assert_eq!(
        body["messages"][1]["content"][0],
        json!({"type":"thinking","thinking":"I should read it.","signature":"sig-anthropic"})
    );
}

#[test]
fn a_transcript_with_a_torn_last_line_resumes_with_a_warning() {
    let sb = Sandbox::new();
    let first = anthropic_run(&sb);
    // A run killed while writing its second round: no end line, the round line cut short.
    let text = std::fs::read_to_string(&first).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let torn = format!("{}\n{}\n{}", lines[0], lines[1], &lines[2][..40]);
    std::fs::write(&first, torn).unwrap();
    let server = MockServer::start(vec![sse::answer("ok")]);
    let out = run(sb
        .anthropic(&server)
        .args(["--no-transcript", "--no-cache", "--resume"])
        .arg(&first));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("the last line was cut off"),
        "{}",
        out.stderr
    );
    let body = server.requests()[0].json();
    // Round 1 survived; without a prompt the run continues with a neutral instruction, which
    // joins round 1's tool results in one user turn.
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert_eq!(
        messages[2]["content"],
        json!([
            {"type":"tool_result","tool_use_id":"toolu_1","content":"     1\talpha\n"},
            {"type":"text","text":sb.turn("Continue from where you left off.")}
        ])
    );
}

#[test]
fn resume_last_picks_the_newest_run_and_a_missing_file_is_a_usage_error() {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    for answer in ["first", "second"] {
        let server = MockServer::start(vec![Reply::sse(sse::anthropic(
            &[B::Text(answer)],
            "end_turn",
            1,
            1,
        ))]);
        let out = run(sb.anthropic(&server).arg(answer));
        assert_eq!(out.code, 0, "{}", out.stderr);
        // Run ids sort to the millisecond: runs a second apart or less are told apart.
    }
    let server = MockServer::start(vec![sse::answer("third")]);
    let out =
        run(sb
            .anthropic(&server)
            .args(["--resume", "last", "--no-cache", "-o", "json", "next"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let body = server.requests()[0].json();
    assert_eq!(body["messages"][0]["content"], sb.turn("second"));
    let transcript: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let lines = crate::common::read_jsonl(std::path::Path::new(
        transcript["transcript"].as_str().unwrap(),
    ));
    assert_eq!(types(&lines), ["start", "round", "end"]);

    let out = run(sb
        .rounds()
        .env("ANTHROPIC_API_KEY", "k")
        .args(["--resume", "nope.jsonl", "x"]));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("--resume: cannot read transcript"),
        "{}",
        out.stderr
    );
}

#[test]
fn resume_last_is_the_newest_run_in_this_workspace() {
    let sb = Sandbox::new();
    let other = sb.path("other");
    std::fs::create_dir_all(&other).unwrap();
    // A run here, then a newer one elsewhere (by -w, and by its working directory).
    for (dir, flags, prompt) in [
        (sb.ws(), vec![], "here"),
        (sb.ws(), vec!["-w", "../other"], "there by -w"),
        (other.clone(), vec![], "there by cwd"),
    ] {
        let server = MockServer::start(vec![sse::answer("ok")]);
        let out = run(sb
            .anthropic(&server)
            .current_dir(dir)
            .args(flags)
            .arg(prompt));
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    // (working directory, flags, the prompt of the run that must be resumed)
    let cases = [
        (sb.ws(), vec![], "here"),
        (other.clone(), vec![], "there by cwd"),
        (sb.ws(), vec!["-w", "../other"], "there by cwd"),
    ];
    for (dir, flags, resumed) in cases {
        let server = MockServer::start(vec![sse::answer("ok")]);
        let out = run(sb.anthropic(&server).current_dir(&dir).args(&flags).args([
            "--no-transcript",
            "--no-cache",
            "--resume",
            "last",
            "next",
        ]));
        assert_eq!(out.code, 0, "{}", out.stderr);
        let body = server.requests()[0].json();
        // The resumed run's turn as it was sent: its workspace line, then its prompt.
        let first = body["messages"][0]["content"].as_str().unwrap();
        assert!(
            first.starts_with("Workspace root: ") && first.ends_with(&format!("\n\n{resumed}")),
            "{flags:?}: {first}"
        );
    }
    let empty = sb.path("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = run(sb
        .rounds()
        .env("ANTHROPIC_API_KEY", "k")
        .current_dir(&empty)
        .args(["--resume", "last", "next"]));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains(&format!(
            "--resume last: no run in workspace {}",
            empty.canonicalize().unwrap().display()
        )),
        "{}",
        out.stderr
    );
}

#[test]
fn a_resumed_run_keeps_its_workspace_and_model_unless_flags_change_them() {
    let sb = Sandbox::new();
    let recorded = sb.path("project");
    std::fs::create_dir_all(&recorded).unwrap();
    std::fs::write(recorded.join("a.txt"), "alpha\n").unwrap();
    let server = MockServer::start(vec![sse::answer("ok")]);
    let out = run(sb
        .anthropic(&server)
        .args(["-m", "anthropic/claude-recorded", "-w", "../project"])
        .arg("hi"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    // The run as rounds kept it, under $ROUNDS_HOME/runs: its recorded workspace is trusted.
    let first = newest_kept(&sb);
    let read = || {
        Reply::sse(sse::anthropic(
            &[B::Tool("t1", "read_file", r#"{"path":"a.txt"}"#)],
            "tool_use",
            1,
            1,
        ))
    };
    // (flags, the model asked for, whether a.txt is found: only in the recorded workspace)
    let cases: [(&[&str], &str, bool); 3] = [
        (&[], "claude-recorded", true),
        (&["-m", "anthropic/claude-flag"], "claude-flag", true),
        (&["-w", "."], "claude-recorded", false),
    ];
    for (flags, model, found) in cases {
        let server = MockServer::start(vec![read(), sse::answer("done")]);
        let out = run(sb
            .anthropic(&server)
            .args(flags)
            .args(["--no-transcript", "--resume"])
            .arg(&first)
            .arg("read a.txt"));
        assert_eq!(out.code, 0, "{flags:?}: {}", out.stderr);
        let requests = server.requests();
        assert_eq!(requests[0].json()["model"], model, "{flags:?}");
        let result = requests[1].json()["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()["content"][0]
            .clone();
        assert_eq!(
            result["is_error"].as_bool().unwrap_or(false),
            !found,
            "{result}"
        );
        assert_eq!(
            out.stderr.contains("resuming in the run's workspace"),
            flags.is_empty() || flags[0] == "-m",
            "{flags:?}: {}",
            out.stderr
        );
    }
    // The same transcript anywhere else (an artifact, a file someone sent) is not trusted to
    // say where the tools may reach: the run stays in the current directory, and says so.
    let copy = sb.path("brought.jsonl");
    std::fs::copy(&first, &copy).unwrap();
    let server = MockServer::start(vec![read(), sse::answer("done")]);
    let out = run(sb
        .anthropic(&server)
        .args(["--no-transcript", "--resume"])
        .arg(&copy)
        .arg("read a.txt"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let last = server.requests()[1].json()["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["content"][0]
        .clone();
    assert_eq!(last["is_error"], true, "{last}");
    assert!(out.stderr.contains("is not trusted"), "{}", out.stderr);
    // A recorded workspace that is gone is not used: the current directory is, with a warning.
    std::fs::rename(&recorded, sb.path("moved")).unwrap();
    let server = MockServer::start(vec![read(), sse::answer("done")]);
    let out = run(sb
        .anthropic(&server)
        .args(["--no-transcript", "--resume"])
        .arg(&first)
        .arg("read a.txt"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("is not a directory any more"),
        "{}",
        out.stderr
    );
}

/// The newest transcript rounds kept under the sandbox's `$ROUNDS_HOME/runs`.
fn newest_kept(sb: &Sandbox) -> std::path::PathBuf {
    let mut all: Vec<_> = std::fs::read_dir(sb.path("state/runs"))
        .unwrap()
        .flat_map(|day| std::fs::read_dir(day.unwrap().path()).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    all.sort();
    all.pop().expect("a kept run")
}

/// A transcript whose start line says it resumed from `earlier`.
fn resumed_from(sb: &Sandbox, name: &str, earlier: &str) -> std::path::PathBuf {
    let start = json!({"v": 1, "type": "start", "run_id": "r", "time": "2026-01-01T00:00:00Z",
        "provider": "anthropic", "model": "m", "workspace": "/ws", "prompt": "p", "system": "s",
        "tools": [], "limits": {"max_rounds": 1, "max_tokens": null, "budget_tokens": null,
        "timeout_secs": null, "tool_timeout_secs": 30.0, "max_parallel": 8},
        "resumed_from": earlier});
    let path = sb.path(name);
    std::fs::write(&path, format!("{start}\n")).unwrap();
    path
}

#[test]
fn resume_reads_only_regular_files_wherever_the_path_comes_from() {
    let sb = Sandbox::new();
    let fifo = sb.path("fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let fifo = fifo.display().to_string();
    // (what --resume names, what the error must name)
    let hostile = [
        (resumed_from(&sb, "zero.jsonl", "/dev/zero"), "/dev/zero"),
        (resumed_from(&sb, "fifo.jsonl", &fifo), fifo.as_str()),
        (sb.path("fifo"), fifo.as_str()),
        (sb.path("state"), "state"),
    ];
    std::fs::create_dir_all(sb.path("state")).unwrap();
    for (file, named) in &hostile {
        let out = run_within(
            sb.rounds()
                .env("ANTHROPIC_API_KEY", "k")
                .arg("--resume")
                .arg(file)
                .arg("next"),
            Duration::from_secs(20),
        );
        assert_eq!(out.code, 2, "{}: {}", file.display(), out.stderr);
        assert!(
            out.stderr.contains(named) && out.stderr.contains("not a regular file"),
            "{}: {}",
            file.display(),
            out.stderr
        );
    }
    // The control: the same chain through a regular file resumes.
    let first = anthropic_run(&sb);
    let second = resumed_from(&sb, "second.jsonl", &first.display().to_string());
    let server = MockServer::start(vec![sse::answer("ok")]);
    let out = run(sb
        .anthropic(&server)
        .args(["--no-transcript", "--resume"])
        .arg(&second)
        .arg("next"));
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn the_new_transcript_may_not_overwrite_a_file_the_run_reads() {
    let sb = Sandbox::new();
    let first = anthropic_run(&sb);
    let second = resumed_from(&sb, "second.jsonl", &first.display().to_string());
    let before = |p: &std::path::Path| std::fs::read(p).unwrap();
    let (first_bytes, second_bytes) = (before(&first), before(&second));
    // --transcript F --resume F, a file earlier in the chain, and the replayed file itself.
    let cases: [(&[&str], &std::path::Path); 3] = [
        (&["--resume", "second.jsonl"], &second),
        (&["--resume", "second.jsonl"], &first),
        (&["-m", "replay:first.jsonl"], &first),
    ];
    for (args, target) in cases {
        let out = run(sb
            .rounds()
            .current_dir(sb.path(""))
            .env("ANTHROPIC_API_KEY", "k")
            .args(args)
            .arg("--transcript")
            .arg(target)
            .arg("next"));
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains("is read by this run"),
            "{args:?}: {}",
            out.stderr
        );
    }
    assert_eq!(before(&first), first_bytes);
    assert_eq!(before(&second), second_bytes);
    // The control: a new file is fine.
    let server = MockServer::start(vec![sse::answer("ok")]);
    let out = run(sb.anthropic(&server).current_dir(sb.path("")).args([
        "--resume",
        "second.jsonl",
        "--transcript",
        "third.jsonl",
        "next",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn calls_left_without_results_are_closed_on_resume() {
    let sb = Sandbox::new();
    let first = anthropic_run(&sb);
    let text = std::fs::read_to_string(&first).unwrap();
    let mut lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // A crafted (or killed) run: round 1 has its call but no result for it, and a result for
    // a call that does not exist. Providers reject a call without a result.
    let stray = json!({"tool_use_id": "ghost", "name": "read_file", "is_error": false,
        "content": "from nowhere"});
    lines[1]["results"] = json!([stray]);
    let crafted = sb.path("crafted.jsonl");
    let joined: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    std::fs::write(&crafted, joined.join("\n") + "\n").unwrap();
    // (transcript, what the model must get for toolu_1: is_error, content)
    let cases = [
        (
            crafted,
            true,
            "no result was recorded for this call (the run stopped before it finished, or the \
             transcript was edited); it may or may not have run",
        ),
        (first, false, "     1\talpha\n"),
    ];
    for (file, is_error, content) in cases {
        let server = MockServer::start(vec![sse::answer("ok")]);
        let out = run(sb
            .anthropic(&server)
            .args(["--no-transcript", "--resume"])
            .arg(&file)
            .arg("next"));
        assert_eq!(out.code, 0, "{}", out.stderr);
        let body = server.requests()[0].json();
        let results: Vec<&serde_json::Value> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["content"].as_array())
            .flatten()
            .filter(|b| b["type"] == "tool_result")
            .collect();
        assert_eq!(results.len(), 1, "{}: {results:?}", file.display());
        assert_eq!(results[0]["tool_use_id"], "toolu_1");
        assert_eq!(results[0]["content"], content);
        assert_eq!(
            results[0]["is_error"].as_bool().unwrap_or(false),
            is_error,
            "{}",
            results[0]
        );
    }
}

#[test]
fn resume_takes_a_run_id_as_rounds_show_does() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![sse::answer("first answer")]);
    let out = run(sb.anthropic(&server).args(["-o", "json", "first question"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let first: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let id = first["run_id"].as_str().unwrap().to_owned();

    let server = MockServer::start(vec![sse::answer("second answer")]);
    let out = run(sb.anthropic(&server).args([
        "--resume",
        &id,
        "--no-cache",
        "--no-transcript",
        "and then?",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let body = server.requests()[0].json();
    assert_eq!(body["messages"][0]["content"], sb.turn("first question"));
    assert_eq!(body["messages"][1]["content"][0]["text"], "first answer");

    // An id no run has is named as one; a file of that name would have been taken first.
    let missing = "20990101T000000.000Z-00000000";
    let out = run(sb.anthropic(&server).args(["--resume", missing, "x"]));
    assert_eq!(out.code, 2);
    let said = format!("--resume {missing}: no run of that id under");
    assert!(out.stderr.contains(&said), "{}", out.stderr);
    std::fs::copy(
        std::path::Path::new(first["transcript"].as_str().unwrap()),
        sb.ws().join(missing),
    )
    .unwrap();
    let server = MockServer::start(vec![sse::answer("from the file")]);
    let out = run(sb
        .anthropic(&server)
        .args(["--resume", missing, "--no-transcript", "x"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
}
