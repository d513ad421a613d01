//! The CLI's small truths (issue 31 §2, §3, §5, §6): a blank `--check` is refused from every
//! source instead of "passing"; `--timeout` counts from rounds' start, stdin included; habits
//! from other tools and a flag with its value in one argument get an answer in rounds' words;
//! a 429 rounds would not wait out says so; `--output-last-message` writes no file without an
//! answer; a run with nowhere to keep its transcript says so.

use std::path::Path;

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
    std::fs::write(&jobs, "{\"id\":\"a\",\"prompt\":\"p\",\"check\":\"true\"}\n").unwrap();
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
        (&["--yolo", "fix it"], "--full-auto is the edit + shell preset"),
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
