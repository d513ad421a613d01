//! `--check CMD` (issue 24 §1): the user's definition of done. After an answer without tool
//! calls the check runs in the workspace, sandboxed like a tool process; a failure goes back to
//! the model as the next user turn, and the run ends `check_failed` (exit 11) after
//! `--max-checks` failures, or at once when the same failure comes twice with no tool call in
//! between. Each guard has its control.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::sandbox_run::outside;
use super::settings::{project_file, user_file};
use crate::common::mock::{MockServer, Recorded, Reply};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, parse_lines, read_jsonl, run, types};

/// One tool call of `name` with `input`, then nothing else in the response.
fn call(id: &str, name: &str, input: &Value) -> Reply {
    let input = input.to_string();
    Reply::sse(sse::anthropic(
        &[B::Tool(id, name, &input)],
        "tool_use",
        1,
        1,
    ))
}

/// The text of the last user turn of a request (a plain string in Anthropic's format).
fn last_user_text(request: &Recorded) -> String {
    let messages = request.json()["messages"].as_array().unwrap().clone();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user", "{last}");
    match &last["content"] {
        Value::String(s) => s.clone(),
        // With a cache breakpoint on it, the turn is a list of text blocks.
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| b["text"].as_str().expect("a text block"))
            .collect(),
        other => panic!("not a text turn: {other}"),
    }
}

/// The `check` of every round of a transcript that has one, by round number.
fn checks(lines: &[Value]) -> Vec<(u64, Value)> {
    lines
        .iter()
        .filter(|l| l["type"] == "round" && !l["check"].is_null())
        .map(|l| (l["round"].as_u64().unwrap(), l["check"].clone()))
        .collect()
}

/// A check that fails until `done.txt` exists in the workspace.
const NEEDS_DONE: &str =
    "if test -f done.txt; then echo all good; else echo 'done.txt is missing'; exit 1; fi";

#[test]
fn a_check_that_passes_on_the_second_try_completes_the_run_and_its_output_reached_the_model() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![
        sse::answer("finished"),
        call(
            "w1",
            "write_file",
            &json!({"path": "done.txt", "content": "x"}),
        ),
        sse::answer("finished for real"),
    ]);
    let summary = sb.path("summary.md");
    let out = run(sb
        .anthropic(&server)
        .args(["-a", "write_file", "--check", NEEDS_DONE, "--transcript"])
        .arg(sb.transcript_path())
        .arg("--step-summary")
        .arg(&summary)
        .arg("make it done"));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "finished for real\n"),
        "{}",
        out.stderr
    );
    // bash is not an allowed tool: the check runs anyway, it is the user's.
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let told = last_user_text(&requests[1]);
    assert!(told.contains("the work is not done"), "{told}");
    assert!(told.contains("exit code 1"), "{told}");
    assert!(told.contains("done.txt is missing"), "{told}");
    assert!(told.contains(NEEDS_DONE), "{told}");

    let t = sb.transcript();
    assert_eq!(types(&t), ["start", "round", "round", "round", "end"]);
    assert_eq!(t[0]["limits"]["check"], NEEDS_DONE);
    assert_eq!(t[0]["limits"]["max_checks"], 3);
    let recorded = checks(&t);
    assert_eq!(recorded.len(), 2, "{recorded:?}");
    let (first, second) = (&recorded[0].1, &recorded[1].1);
    assert_eq!(recorded[0].0, 1);
    assert_eq!(first["command"], NEEDS_DONE);
    assert_eq!(
        (&first["attempt"], &first["passed"], &first["exit_code"]),
        (&json!(1), &json!(false), &json!(1))
    );
    assert!(
        first["output"]
            .as_str()
            .unwrap()
            .contains("done.txt is missing")
    );
    assert_eq!(recorded[1].0, 3);
    assert_eq!(
        (&second["attempt"], &second["passed"], &second["exit_code"]),
        (&json!(2), &json!(true), &json!(0))
    );
    assert_eq!(t[4]["status"], "completed");

    // `rounds show` (terminal and HTML) and the step summary say so.
    let shown = run(sb
        .rounds()
        .args(["show", "--no-pager"])
        .arg(sb.transcript_path()));
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert!(
        shown.stdout.contains("✗ exit code 1 · attempt 1"),
        "{}",
        shown.stdout
    );
    assert!(
        shown.stdout.contains("✓ passed · attempt 2"),
        "{}",
        shown.stdout
    );
    assert!(
        shown.stdout.contains("done.txt is missing"),
        "{}",
        shown.stdout
    );
    let html = sb.path("t.html");
    let shown = run(sb
        .rounds()
        .args(["show", "--html"])
        .arg(&html)
        .arg(sb.transcript_path()));
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("✗ exit code 1 · attempt 1"), "{page}");
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(md.contains("- **Check:** `"), "{md}");
    assert!(md.contains("passed, attempt 2"), "{md}");
}

#[test]
fn a_check_that_never_passes_ends_with_exit_11_after_max_checks_and_the_answer_printed() {
    let sb = Sandbox::new();
    // A different failure each time, so only --max-checks can end it.
    let check =
        "n=$(cat n 2>/dev/null || echo 0); n=$((n+1)); echo $n > n; echo \"failure $n\"; exit 3";
    let server = MockServer::start(vec![
        sse::answer("answer one"),
        sse::answer("answer two"),
        sse::answer("answer three"),
    ]);
    let out = run(sb
        .anthropic(&server)
        .args([
            "--check",
            check,
            "--max-checks",
            "2",
            "-o",
            "json",
            "--transcript",
        ])
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(out.code, 11, "{}", out.stderr);
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["status"], "check_failed");
    assert_eq!(json["exit_code"], 11);
    assert_eq!(json["final_text"], "answer two");
    assert!(
        json["error"].as_str().unwrap().contains("after 2 attempts"),
        "{json}"
    );
    assert_eq!(json["check"]["attempt"], 2);
    assert_eq!(json["check"]["exit_code"], 3);
    assert_eq!(server.requests().len(), 2);
    let told = last_user_text(&server.requests()[1]);
    assert!(
        told.contains("failure 1") && told.contains("exit code 3"),
        "{told}"
    );
    let t = sb.transcript();
    assert_eq!(t.last().unwrap()["status"], "check_failed");
    assert_eq!(t.last().unwrap()["exit_code"], 11);
    assert!(t.last().unwrap()["failure"].is_null());

    // Text output prints the answer too.
    let sb = Sandbox::new();
    let server = MockServer::start(vec![sse::answer("my answer")]);
    let out = run(sb.anthropic(&server).args([
        "--check",
        "exit 1",
        "--max-checks",
        "1",
        "--no-transcript",
        "go",
    ]));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (11, "my answer\n"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("check"), "{}", out.stderr);
}

#[test]
fn the_same_failure_twice_with_no_tool_call_between_ends_the_run_at_once() {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    // Round 1 fails the check; round 2 reads a file; round 3 fails it the same way, which is
    // no sign of being stuck (a tool ran between); round 4 fails it the same way again.
    let server = MockServer::start(vec![
        sse::answer("one"),
        call("r1", "read_file", &json!({"path": "a.txt"})),
        sse::answer("two"),
        sse::answer("three"),
        sse::answer("four"),
    ]);
    let out = run(sb
        .anthropic(&server)
        .args([
            "--check",
            "echo always the same; exit 1",
            "--max-checks",
            "9",
        ])
        .args(["-o", "stream-json", "--transcript"])
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(out.code, 11, "{}", out.stderr);
    assert_eq!(server.requests().len(), 4, "{}", out.stderr);
    let events = parse_lines(&out.stdout);
    let check_events: Vec<&Value> = events.iter().filter(|e| e["type"] == "check").collect();
    assert_eq!(check_events.len(), 3, "{}", out.stdout);
    assert_eq!(
        check_events
            .iter()
            .map(|e| e["round"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [1, 3, 4]
    );
    let end = events.last().unwrap();
    assert_eq!(end["type"], "end");
    assert_eq!(end["status"], "check_failed");
    let error = end["error"].as_str().unwrap();
    assert!(error.contains("not making progress"), "{error}");
    assert!(error.contains("attempt 3 of 9"), "{error}");
    assert_eq!(end["final_text"], "three");
}

#[test]
fn the_check_runs_in_the_sandbox_and_the_same_command_writes_outside_without_it() {
    let away = outside();
    let target = away.path().join("pwned");
    let check = format!("echo out > {}", target.display());
    let attempt = |flags: &[&str]| {
        let sb = Sandbox::new();
        let tmp = sb.path("tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        let server = MockServer::start(vec![sse::answer("done")]);
        let out = run(sb
            .anthropic(&server)
            .env("TMPDIR", &tmp)
            .args(["--check", &check, "--max-checks", "1", "--transcript"])
            .arg(sb.transcript_path())
            .args(flags)
            .arg("go"));
        (out, sb.transcript())
    };
    let (out, t) = attempt(&[]);
    if t[0]["sandbox"]["enforced"]["filesystem"] != true {
        eprintln!(
            "skipped: this kernel cannot confine writes ({})",
            t[0]["sandbox"]
        );
        return;
    }
    assert_eq!(out.code, 11, "{}", out.stderr);
    assert!(!target.exists(), "the check wrote outside the workspace");
    let check_run = &checks(&t)[0].1;
    assert!(
        check_run["output"]
            .as_str()
            .unwrap()
            .contains("Permission denied"),
        "{check_run}"
    );

    // The control: with the sandbox off the same check writes there, and passes.
    let (out, _) = attempt(&["--sandbox", "off"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(target.exists());
}

#[test]
fn a_project_file_cannot_set_the_check_and_the_users_own_file_can() {
    let sb = Sandbox::new();
    project_file(&sb, "check = \"touch pwned\"\n");
    let server = MockServer::start(vec![sse::answer("ok")]);
    let out = run(sb
        .anthropic(&server)
        .args(["--transcript"])
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!sb.ws().join("pwned").exists(), "the project's check ran");
    assert!(
        out.stderr.contains("check") && out.stderr.contains("runs code"),
        "{}",
        out.stderr
    );
    assert!(sb.transcript()[0]["limits"]["check"].is_null());

    // The control: the same line in the user's own settings file sets it.
    let sb = Sandbox::new();
    user_file(&sb, "check = \"touch pwned\"\n");
    let server = MockServer::start(vec![sse::answer("ok")]);
    let out = run(sb.anthropic(&server).args(["--no-transcript", "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(sb.ws().join("pwned").exists(), "{}", out.stderr);
}

#[test]
fn a_batch_job_line_carries_its_own_check() {
    let sb = Sandbox::new();
    let jobs = sb.path("jobs.jsonl");
    std::fs::write(
        &jobs,
        "{\"id\":\"job-a\",\"prompt\":\"Do job-a.\",\"check\":\"echo job check failed; exit 4\",\"max_checks\":1}\n\
         {\"id\":\"job-b\",\"prompt\":\"Do job-b.\"}\n",
    )
    .unwrap();
    let server = MockServer::respond(|_| sse::answer("done"));
    let out = run(sb
        .anthropic(&server)
        .arg("batch")
        .arg(&jobs)
        .arg("--out")
        .arg(sb.path("out")));
    assert_eq!(out.code, 8, "{}", out.stderr);
    let lines = read_jsonl_loose(&sb.path("out/results.jsonl"));
    let status = |id: &str| {
        lines
            .iter()
            .find(|l| l["id"] == id)
            .map(|l| (l["status"].clone(), l["exit_code"].clone()))
            .unwrap()
    };
    assert_eq!(status("job-a"), (json!("check_failed"), json!(11)));
    // The control: the job without a check completes on the same answer.
    assert_eq!(status("job-b"), (json!("completed"), json!(0)));
    let t = read_jsonl(&sb.path("out/job-a.jsonl"));
    let recorded = checks(&t);
    assert_eq!(
        recorded[0].1["output"],
        "exit code: 4\nstdout:\njob check failed\nstderr: (empty)\n"
    );
}

/// results.jsonl is no transcript: parsed without the transcript schema.
fn read_jsonl_loose(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn resuming_a_run_that_ended_check_failed_goes_on_from_the_checks_output() {
    let sb = Sandbox::new();
    let check = "if test -f ok; then echo fine; else echo 'needs fixing 42'; exit 1; fi";
    let server = MockServer::start(vec![sse::answer("first try")]);
    let out = run(sb
        .anthropic(&server)
        .args(["--check", check, "--max-checks", "1", "--transcript"])
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(out.code, 11, "{}", out.stderr);

    sb.write("ok", "");
    let server = MockServer::start(vec![sse::answer("second try")]);
    let out = run(sb
        .anthropic(&server)
        .args(["--check", check, "--no-transcript", "--resume"])
        .arg(sb.transcript_path())
        .arg("look again"));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "second try\n"),
        "{}",
        out.stderr
    );
    let request = &server.requests()[0];
    let messages = request.json()["messages"].as_array().unwrap().clone();
    // The prompt, the answer, then one user turn: the check's output and the new prompt.
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    let next = last_user_text(request);
    assert!(next.contains("needs fixing 42"), "{next}");
    assert!(next.ends_with("look again"), "{next}");

    // Without a new prompt the resumed run still starts from the check's output.
    let server = MockServer::start(vec![sse::answer("third")]);
    let out = run(sb
        .anthropic(&server)
        .args(["--no-transcript", "--resume"])
        .arg(sb.transcript_path()));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let next = last_user_text(&server.requests()[0]);
    assert!(next.contains("needs fixing 42"), "{next}");
}

#[test]
fn with_an_output_schema_the_check_comes_first_then_the_schema() {
    let sb = Sandbox::new();
    let schema = sb.path("schema.json");
    std::fs::write(
        &schema,
        r#"{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}"#,
    )
    .unwrap();
    // Fails the first time, passes after.
    let check = "if test -f seen; then echo ok; else touch seen; echo first run fails; exit 1; fi";
    let server = MockServer::start(vec![
        sse::answer(r#"{"x": 1}"#),
        sse::answer("not json"),
        sse::answer(r#"{"x": 2}"#),
    ]);
    let out = run(sb
        .anthropic(&server)
        .args(["--check", check, "--transcript"])
        .arg(sb.transcript_path())
        .arg("--output-schema")
        .arg(&schema)
        .arg("go"));
    assert_eq!(
        (out.code, out.stdout.trim()),
        (0, r#"{"x": 2}"#),
        "{}",
        out.stderr
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    // A valid answer about work that is not done is told about the check, not accepted.
    assert!(last_user_text(&requests[1]).contains("first run fails"));
    // Once the check passed, the schema's corrective turn follows; the answer it brings is
    // not checked again (no tool ran since the check passed).
    let corrective = last_user_text(&requests[2]);
    assert!(!corrective.contains("check"), "{corrective}");
    let recorded = checks(&sb.transcript());
    let rounds: Vec<u64> = recorded.iter().map(|(n, _)| *n).collect();
    assert_eq!(rounds, [1, 2]);
}

#[test]
fn a_deadline_during_the_check_stops_it_and_the_run_ends_timeout() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![sse::answer("done")]);
    let started = Instant::now();
    let out = run(sb
        .anthropic(&server)
        .args([
            "--check",
            "sleep 30",
            "--tool-timeout",
            "60",
            "--timeout",
            "2",
        ])
        .arg("--transcript")
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(out.code, 5, "{}", out.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out.stdout, "done\n");
    let t = sb.transcript();
    let check_run = &checks(&t)[0].1;
    assert!(check_run["exit_code"].is_null(), "{check_run}");
    assert_eq!(check_run["passed"], false);
    assert_eq!(t.last().unwrap()["status"], "timeout");
}

#[test]
fn the_check_gets_the_tools_scrubbed_environment_and_its_output_is_redacted() {
    let sb = Sandbox::new();
    let key = "sk-ant-check-secret-0123456789";
    let token = "tok-check-secret-9876543210";
    let server = MockServer::start(vec![sse::answer("done")]);
    let check = "echo \"key=[$ANTHROPIC_API_KEY] token=[$MY_TOKEN]\"; exit 1";
    let out = run(sb
        .anthropic(&server)
        .env("ANTHROPIC_API_KEY", key)
        .env("MY_TOKEN", token)
        .args([
            "--tool-env",
            "MY_TOKEN",
            "--check",
            check,
            "--max-checks",
            "1",
        ])
        .arg("--transcript")
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(out.code, 11, "{}", out.stderr);
    let t = sb.transcript();
    let check_run = &checks(&t)[0].1;
    // The provider key never reaches the check; a variable passed on is seen, and redacted.
    assert_eq!(
        check_run["output"],
        "exit code: 1\nstdout:\nkey=[] token=[[REDACTED:MY_TOKEN]]\nstderr: (empty)\n"
    );
    assert_eq!(check_run["redacted"], json!(["MY_TOKEN"]));
    let all = std::fs::read_to_string(sb.transcript_path()).unwrap();
    assert!(!all.contains(token) && !all.contains(key));
}

#[test]
fn a_failed_checks_turn_is_a_new_round_and_the_round_limit_still_ends_the_run() {
    let sb = Sandbox::new();
    // A different failure each time (no stuck guard), more attempts than rounds.
    let check =
        "n=$(cat n 2>/dev/null || echo 0); n=$((n+1)); echo $n > n; echo \"failure $n\"; exit 1";
    let server = MockServer::respond(|_| sse::answer("not yet"));
    let out = run(sb
        .anthropic(&server)
        .args(["--check", check, "--max-checks", "10", "--max-rounds", "2"])
        .arg("--transcript")
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert_eq!(server.requests().len(), 2);
    let t = sb.transcript();
    assert_eq!(types(&t), ["start", "round", "round", "end"]);
    assert_eq!(checks(&t).len(), 2);
    assert_eq!(t[3]["status"], "max_rounds");

    // The token budget bounds it too, and the check's output counts as the next request's
    // input: 4000 bytes (about 1000 tokens) do not fit a budget of 500 (the mock's answers
    // report 2 tokens each, so without the check's output the run would go on).
    let sb = Sandbox::new();
    let server = MockServer::respond(|_| sse::answer("not yet"));
    let big = "n=$(cat n 2>/dev/null || echo 0); echo $((n+1)) > n; echo $n; \
               head -c 4000 /dev/zero | tr '\\0' x; exit 1";
    let out = run(sb
        .anthropic(&server)
        .args(["--check", big, "--max-checks", "10"])
        .args(["--budget-tokens", "500", "--no-transcript", "go"]));
    assert_eq!(out.code, 4, "{}", out.stderr);
    assert_eq!(server.requests().len(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("token budget of 500"), "{}", out.stderr);
}

#[test]
fn a_long_check_output_keeps_its_head_and_tail_and_the_whole_is_saved_beside_the_transcript() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![sse::answer("done"), sse::answer("still done")]);
    let out = run(sb
        .anthropic(&server)
        .args(["--check", "seq 1 100000; exit 1", "--max-checks", "2"])
        .arg("--transcript")
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(out.code, 11, "{}", out.stderr);
    let t = sb.transcript();
    let output = checks(&t)[0].1["output"].as_str().unwrap().to_owned();
    assert!(
        output.starts_with("exit code: 1\nstdout:\n1\n2\n3\n"),
        "{output}"
    );
    assert!(output.contains("\n100000\n"), "{output}");
    assert!(!output.contains("\n50000\n"), "the middle was kept");
    assert!(output.len() < 20_000, "{} bytes", output.len());
    let marker = "the whole output is in ";
    let at = output
        .find(marker)
        .expect("the marker names the spill file")
        + marker.len();
    let path = output[at..].split(" ...]").next().unwrap();
    assert!(
        path.starts_with(sb.path("t.outputs").to_str().unwrap()),
        "{path}"
    );
    let whole = std::fs::read_to_string(path).unwrap();
    assert!(whole.contains("\n50000\n") && whole.ends_with("100000\n"));
    // What the model read is what the transcript holds.
    assert!(last_user_text(&server.requests()[1]).contains(&output));
}
