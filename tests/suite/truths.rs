//! The CLI's small truths (issue 31 §2, §3, §5, §6): a blank `--check` is refused from every
//! source instead of "passing"; `--timeout` counts from rounds' start, stdin included; habits
//! from other tools and a flag with its value in one argument get an answer in rounds' words;
//! a 429 rounds would not wait out says so; `--output-last-message` writes no file without an
//! answer; a run with nowhere to keep its transcript says so.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use super::settings::user_file;
use super::workflows::Job;
use crate::common::mock::{MockServer, Reply};
use crate::common::sse;
use crate::common::{Run, Sandbox, run};

/// A run against `server` with a step summary, and `args` before the prompt.
fn with_summary(sb: &Sandbox, server: &MockServer, args: &[&str]) -> Run {
    run(sb
        .anthropic(server)
        .env("GITHUB_STEP_SUMMARY", sb.path("summary.md"))
        .args(args)
        .arg("fix it"))
}

#[test]
fn a_blank_check_is_refused_from_every_source_before_any_request() {
    let sb = Sandbox::new();
    let unset = std::env::var("ROUNDS_TEST_SURELY_UNSET").unwrap_or_default();
    // Each source of a blank check; the settings file is written for its own row only.
    let table: [(&str, &[&str], Option<&str>); 6] = [
        ("an empty flag", &["--check", ""], None),
        ("an unset variable", &["--check", unset.as_str()], None),
        ("a blank flag", &["--check", "   "], None),
        ("-c", &["-c", "check="], None),
        ("a blank -c", &["-c", "check= \t"], None),
        ("the settings file", &[], Some("check = \"  \"\n")),
    ];
    for (source, args, file) in table {
        user_file(&sb, file.unwrap_or(""));
        let server = MockServer::start(vec![sse::answer("done")]);
        let out = with_summary(&sb, &server, args);
        assert_eq!(out.code, 2, "{source}: {}", out.stderr);
        assert!(
            out.stderr.contains("always passes"),
            "{source}: {}",
            out.stderr
        );
        assert!(server.requests().is_empty(), "{source}: a request was made");
        let summary = std::fs::read_to_string(sb.path("summary.md")).unwrap_or_default();
        assert!(!summary.contains("passed"), "{source}: {summary}");
    }
    // The control: a real check runs (and passes) from the same sources.
    user_file(&sb, "check = \"exit 0\"\n");
    let server = MockServer::start(vec![sse::answer("done")]);
    let out = with_summary(&sb, &server, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.requests().len(), 1);
    let server = MockServer::start(vec![sse::answer("done")]);
    let out = with_summary(&sb, &server, &["--check", "true"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_blank_check_on_a_job_line_is_a_bad_line() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![sse::answer("done")]);
    let jobs = sb.path("jobs.jsonl");
    std::fs::write(&jobs, "{\"id\":\"a\",\"prompt\":\"p\",\"check\":\" \"}\n").unwrap();
    let out = run(sb
        .anthropic(&server)
        .arg("batch")
        .arg(&jobs)
        .arg("--out")
        .arg(sb.path("out")));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("jobs.jsonl, line 1: check is empty: an empty command always passes"),
        "{}",
        out.stderr
    );
    assert!(server.requests().is_empty());
    // The control: the same line with a command runs it.
    std::fs::write(
        &jobs,
        "{\"id\":\"a\",\"prompt\":\"p\",\"check\":\"true\"}\n",
    )
    .unwrap();
    let out = run(sb
        .anthropic(&server)
        .arg("batch")
        .arg(&jobs)
        .arg("--out")
        .arg(sb.path("out")));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.requests().len(), 1);
}

/// Words people bring from `claude -p` and `codex exec`, and what rounds says to each.
#[test]
fn habits_from_other_tools_are_answered_before_any_request() {
    let sb = Sandbox::new();
    let table: [(&[&str], &str); 6] = [
        (&["-p", "fix it"], "rounds needs no -p"),
        (&["--print", "fix it"], "rounds needs no --print"),
        (
            &["--yolo", "fix it"],
            "--full-auto is the edit + shell preset",
        ),
        (
            &["--dangerously-skip-permissions", "fix it"],
            "--full-auto is the edit + shell preset",
        ),
        (
            &["exec", "fix it"],
            "\"exec\" is not a subcommand of rounds: a run is what rounds does with its \
             arguments (codex exec's job), so drop the word: rounds 'fix it'",
        ),
        (
            &["--max-rounds 20", "fix it"],
            "one argument per line), or as --max-rounds=20",
        ),
    ];
    for (words, says) in table {
        let server = MockServer::start(vec![sse::answer("done")]);
        let out = run(sb.anthropic(&server).args(words));
        assert_eq!(out.code, 2, "{words:?}: {}", out.stderr);
        assert!(out.stderr.contains(says), "{words:?}: {}", out.stderr);
        assert!(!out.stderr.contains("similar argument"), "{}", out.stderr);
        assert!(server.requests().is_empty(), "{words:?}");
    }
    // The controls: after --, exec is the prompt's first word, as the user wrote it.
    let server = MockServer::start(vec![sse::answer("done")]);
    let out = run(sb.anthropic(&server).args(["--", "exec", "the plan"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sent = server.requests()[0].json()["messages"][0].to_string();
    assert!(sent.contains("exec the plan"), "{sent}");
}

/// The action passes each line of `args` as one argument: a line holding a flag and its value
/// is told how to write it, in the run step's log.
#[test]
fn an_action_args_line_with_a_flag_and_its_value_gets_the_hint() {
    let sb = Sandbox::new();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_rounds")).parent().unwrap();
    let mut job = Job::new(
        &sb,
        vec![bin_dir.to_owned(), "/usr/bin".into(), "/bin".into()],
    );
    let server = MockServer::start(vec![sse::answer("done"), sse::answer("done")]);
    job.env.push(("ANTHROPIC_API_KEY".into(), "k".into()));
    job.env.push(("ANTHROPIC_BASE_URL".into(), server.url()));
    assert_eq!(job.action("install", &[("install", "path")]).code, 0);
    let out = job.action("run", &[("prompt", "go"), ("args", "--max-rounds 20")]);
    assert_eq!(job.output("run", "exit-code"), "2", "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "\"--max-rounds 20\" is one argument holding a flag and its value: give them as \
             two arguments (in an action's args: one argument per line), or as --max-rounds=20"
        ),
        "{}",
        out.stderr
    );
    assert!(server.requests().is_empty());
    // The control: the hint's own spelling runs.
    job.action("run", &[("prompt", "go"), ("args", "--max-rounds=20")]);
    assert_eq!(job.output("run", "exit-code"), "0");
    assert_eq!(server.requests().len(), 1);
}

/// Starts `cmd` with stdin a pipe the test holds open, as `sleep 7 | rounds …` does.
fn with_open_stdin(cmd: &mut std::process::Command) -> Child {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start rounds")
}

/// Waits for `child` (at most `limit`), and what it printed.
fn finish(child: Child, limit: Duration) -> Run {
    let started = Instant::now();
    let mut child = child;
    while child.try_wait().expect("wait").is_none() {
        assert!(
            started.elapsed() < limit,
            "rounds did not end within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).expect("stdout"),
        stderr: String::from_utf8(out.stderr).expect("stderr"),
    }
}

#[test]
fn the_deadline_counts_from_the_start_and_waiting_for_stdin_is_part_of_the_run() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![sse::answer("done")]);
    let started = Instant::now();
    let child = with_open_stdin(
        sb.anthropic(&server)
            .args(["--timeout", "2", "-o", "json", "--transcript"])
            .arg(sb.transcript_path())
            .env("GITHUB_STEP_SUMMARY", sb.path("summary.md"))
            .arg("x"),
    );
    // The pipe stays open (its writer is held here) well past the deadline.
    let out = finish(child, Duration::from_secs(6));
    let took = started.elapsed();
    assert_eq!(out.code, 5, "{}", out.stderr);
    assert!(took < Duration::from_millis(3500), "{took:?}");
    assert!(
        out.stderr
            .contains("the run's deadline of 2s passed while reading stdin"),
        "{}",
        out.stderr
    );
    let json: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["status"], "timeout");
    assert!(json["duration_ms"].as_u64().unwrap() >= 2000, "{json}");
    assert!(server.requests().is_empty());
    // The run never started: no transcript (nothing to resume), as for any run that could not.
    assert!(!sb.transcript_path().exists());
    let summary = std::fs::read_to_string(sb.path("summary.md")).unwrap();
    assert!(summary.contains("timeout"), "{summary}");
}

#[test]
fn stdin_that_came_late_leaves_the_run_only_what_remains_of_its_deadline() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![Reply::silent(Duration::from_secs(20))]);
    let started = Instant::now();
    let mut child = with_open_stdin(
        sb.anthropic(&server)
            .args(["--timeout", "3", "-o", "json", "--transcript"])
            .arg(sb.transcript_path())
            .arg("review this"),
    );
    std::thread::sleep(Duration::from_millis(2000));
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"the diff\n").unwrap();
    drop(stdin);
    let out = finish(child, Duration::from_secs(10));
    let took = started.elapsed();
    assert_eq!(out.code, 5, "{}", out.stderr);
    // From rounds' start: 3 s, not 2 s of stdin and 3 more of the model.
    assert!(took < Duration::from_millis(4500), "{took:?}");
    assert!(took >= Duration::from_secs(3), "{took:?}");
    let json: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["status"], "timeout");
    let error = json["error"].as_str().unwrap();
    assert!(error.contains("deadline of 3s passed"), "{error}");
    assert_eq!(server.requests().len(), 1);
    let lines = crate::common::read_jsonl(&sb.transcript_path());
    assert_eq!(lines.last().unwrap()["status"], "timeout");
}

/// A 429 asking for ten minutes (a quota): rounds does not sleep through it, and says so.
#[test]
fn a_wait_longer_than_rounds_takes_is_named_in_the_error() {
    let sb = Sandbox::new();
    let limited = |secs: &str| {
        let mut reply = Reply::error(
            429,
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"Rate limited"}}"#,
        );
        reply.headers.push(("retry-after".into(), secs.into()));
        reply
    };
    let server = MockServer::start(vec![limited("600")]);
    let out = run(sb
        .anthropic(&server)
        .args(["-o", "json", "--transcript"])
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(out.code, 10, "{}", out.stderr);
    assert_eq!(server.requests().len(), 1, "it waited and asked again");
    let said = "the provider asked to wait 600s before trying again, more than rounds waits \
                (60s), so it did not retry";
    assert!(out.stderr.contains(said), "{}", out.stderr);
    let json: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(json["error"].as_str().unwrap().contains(said), "{json}");
    assert_eq!(json["failure"]["retry_after"], 600.0);
    let lines = crate::common::read_jsonl(&sb.transcript_path());
    let end = lines.last().unwrap();
    assert!(end["error"].as_str().unwrap().contains(said), "{end}");
    // The control: a short wait is waited out, and nothing is said of it.
    let server = MockServer::start(vec![limited("0.05"), sse::answer("done")]);
    let out = run(sb.anthropic(&server).arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.requests().len(), 2);
    assert!(!out.stderr.contains("asked to wait"), "{}", out.stderr);
}

#[test]
fn a_run_without_an_answer_leaves_no_answer_file_not_even_an_old_one() {
    let sb = Sandbox::new();
    let file = sb.path("answer.md");
    std::fs::write(&file, "an earlier run's answer").unwrap();
    let refused = Reply::error(
        401,
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
    );
    let server = MockServer::start(vec![refused]);
    let out = run(sb
        .anthropic(&server)
        .args(["--no-transcript", "--output-last-message"])
        .arg(&file)
        .arg("go"));
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(!file.exists(), "{:?}", std::fs::read_to_string(&file));
    // With no file there to begin with, none is made.
    let server = MockServer::start(vec![Reply::error(401, "{}")]);
    let out = run(sb
        .anthropic(&server)
        .args(["--no-transcript", "--output-last-message"])
        .arg(&file)
        .arg("go"));
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(!file.exists());
    // The control: an answer is written.
    let server = MockServer::start(vec![sse::answer("the answer")]);
    let out = run(sb
        .anthropic(&server)
        .args(["--no-transcript", "--output-last-message"])
        .arg(&file)
        .arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "the answer");
}

#[test]
fn a_run_with_nowhere_to_keep_its_transcript_says_so_once() {
    let sb = Sandbox::new();
    let homeless = |args: &[&str]| {
        let server = MockServer::start(vec![sse::answer("done")]);
        let out = run(sb
            .anthropic(&server)
            .env_remove("HOME")
            .env_remove("ROUNDS_HOME")
            .args(["-o", "json"])
            .args(args)
            .arg("go"));
        assert_eq!(out.code, 0, "{}", out.stderr);
        let json: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        (out.stderr, json["transcript"].clone())
    };
    let (stderr, transcript) = homeless(&[]);
    assert_eq!(transcript, serde_json::Value::Null);
    let warning = "no transcript is kept: ROUNDS_HOME, XDG_STATE_HOME and HOME are all unset";
    assert_eq!(stderr.matches(warning).count(), 1, "{stderr}");
    // Asked for: no word.
    let (stderr, _) = homeless(&["--no-transcript"]);
    assert!(!stderr.contains(warning), "{stderr}");
    // The control: with HOME, the transcript is kept under it and nothing is said.
    let server = MockServer::start(vec![sse::answer("done")]);
    let out = run(sb
        .anthropic(&server)
        .env_remove("ROUNDS_HOME")
        .args(["-o", "json", "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains(warning), "{}", out.stderr);
    let json: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let kept = json["transcript"].as_str().unwrap();
    assert!(
        kept.starts_with(&sb.path("home").display().to_string()),
        "{kept}"
    );
}

/// The comments that say which test runs a file's steps name a test that does: it exists and
/// reads that file.
#[test]
fn the_files_that_name_their_tests_name_the_right_ones() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for file in ["action.yml", "examples/github-actions.yml"] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let named: Vec<&str> = text
            .split(|c: char| c.is_whitespace() || "(),".contains(c))
            .filter(|w| w.starts_with("tests/suite/") && w.ends_with(".rs"))
            .collect();
        assert!(!named.is_empty(), "{file} names no test");
        let base = Path::new(file).file_name().unwrap().to_str().unwrap();
        for test in named {
            let source = std::fs::read_to_string(root.join(test))
                .unwrap_or_else(|e| panic!("{file} names {test}: {e}"));
            assert!(
                source.contains(&format!("\"{file}\"")) || source.contains(base),
                "{file} names {test}, which never reads it"
            );
        }
    }
}

/// `--budget-usd` is checked before each request, with the output still unknown: the help
/// says it is no hard cap, in the short help too.
#[test]
fn the_help_says_the_usd_budget_is_no_hard_cap() {
    let sb = Sandbox::new();
    for flag in ["-h", "--help"] {
        let out = run(sb.rounds().arg(flag));
        assert_eq!(out.code, 0, "{}", out.stderr);
        let help = out.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            help.contains("past USD (exit 4): a check, not a hard cap"),
            "{flag}: {help}"
        );
    }
}

/// A queue row written by whoever can write the store (not through `--enqueue`, which reads
/// the jobs file's rule): a worker that trusts the queue's checks still refuses a blank one.
#[test]
fn a_blank_check_in_a_queue_row_is_refused_by_the_worker() {
    use crate::common::pg::{Schema, server, sql};
    let Some(pg) = server() else { return };
    let schema = Schema::new(pg);
    let sb = Sandbox::new();
    let jobs = sb.path("jobs.jsonl");
    std::fs::write(
        &jobs,
        "{\"id\":\"j1\",\"prompt\":\"p\",\"check\":\"true\"}\n",
    )
    .unwrap();
    let server = MockServer::start(vec![sse::answer("done")]);
    let queue = |batch: &str, check: &str| {
        let out = run(sb
            .rounds()
            .args([
                "batch",
                "--store",
                &schema.url,
                "--enqueue",
                "--batch",
                batch,
            ])
            .arg(&jobs));
        assert_eq!(out.code, 0, "{}", out.stderr);
        let check = serde_json::Value::from(check).to_string();
        sql(
            &schema.url,
            &format!(
                "UPDATE batch_jobs SET spec = jsonb_set(spec, '{{overrides,check}}', '{check}') \
                 WHERE batch_id = '{batch}'"
            ),
        );
        let out_dir = sb.path(&format!("out-{batch}"));
        let out = run(sb
            .anthropic(&server)
            .args([
                "batch",
                "--store",
                &schema.url,
                "--batch",
                batch,
                "--worker",
            ])
            .args(["--trust-queue", "--out"])
            .arg(&out_dir));
        let rows = sql(
            &schema.url,
            &format!("SELECT result::text FROM batch_jobs WHERE batch_id = '{batch}'"),
        );
        let results: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
        (out, results.join("\n"))
    };
    let (out, results) = queue("b1", "  ");
    assert!(
        results.contains("always passes"),
        "{results}\n{}",
        out.stderr
    );
    assert!(server.requests().is_empty());
    // The control: the same row with a command runs it.
    let (out, results) = queue("b2", "exit 0");
    assert_eq!(out.code, 0, "{results}\n{}", out.stderr);
    assert_eq!(server.requests().len(), 1);
}
