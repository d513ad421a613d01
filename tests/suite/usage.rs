//! Usage errors as a script and a person meet them: a prompt that starts with a subcommand's
//! name is told to put `--` first, and under `-o json` / `stream-json` every usage error also
//! prints the JSON object (or `end` event) a run that cannot start prints, still exiting 2.

use crate::common::mock::MockServer;
use crate::common::{Sandbox, run, sse};
use serde_json::Value;

#[test]
fn a_prompt_that_starts_with_a_subcommand_name_is_told_to_put_dashdash_first() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![sse::answer("found it")]);
    for words in [
        &["show", "me", "the", "failing", "test"][..],
        &["tools", "are", "what", "here"],
        &["help", "me", "fix", "this"],
    ] {
        let out = run(sb.anthropic(&server).args(words));
        assert_eq!((out.code, out.stdout.as_str()), (2, ""), "{words:?}");
        let retry = format!("rounds -- {}", words.join(" "));
        assert!(out.stderr.contains(&retry), "{words:?}: {}", out.stderr);
    }
    // After flags, clap reads the subcommand's name as the prompt's first word: refused, not
    // sent, with both readings spelled out.
    let out = run(sb.anthropic(&server).args(["-c", "max-rounds=3", "config"]));
    assert_eq!((out.code, out.stdout.as_str()), (2, ""), "{}", out.stderr);
    assert!(
        out.stderr.contains("(rounds config -c 'max-rounds=3')"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("(rounds -c 'max-rounds=3' -- config)"),
        "{}",
        out.stderr
    );
    let out = run(sb
        .anthropic(&server)
        .args(["-m", "haiku", "show", "me", "the", "test"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("rounds -m haiku -- show me the test"),
        "{}",
        out.stderr
    );
    assert_eq!(server.requests().len(), 0, "a prompt was sent");
    let out = run(sb.rounds().args(["config", "-c", "max-rounds=3"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("max-rounds = 3"), "{}", out.stdout);

    // What it suggests works.
    let out = run(sb.anthropic(&server).args([
        "--no-transcript",
        "--",
        "show",
        "me",
        "the",
        "failing",
        "test",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "found it\n");
    let body = server.requests()[0].json();
    let sent = body["messages"][0]["content"].to_string();
    assert!(sent.contains("show me the failing test"), "{sent}");
    // A subcommand's own mistyped flag is no prompt.
    let out = run(sb.rounds().args(["runs", "-n", "many"]));
    assert_eq!(out.code, 2);
    assert!(!out.stderr.contains("rounds --"), "{}", out.stderr);
}

#[test]
fn every_usage_error_under_json_output_prints_the_json_error_object() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![sse::answer("never")]);
    let table: [&[&str]; 6] = [
        &["-o", "json", "--bogus", "x"],
        &["--output=json", "--max-rounds", "zero", "x"],
        &["-ojson", "--temperature", "9", "x"],
        &["-o", "json", "-m", "sonet", "x"],
        &["-o", "json", "--max-rounds"],
        &["runs", "-o", "json", "--bogus"],
    ];
    for args in table {
        let out = run(sb.anthropic(&server).args(args));
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        let lines: Vec<&str> = out.stdout.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: {}", out.stdout);
        let json: Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(json["status"], "usage", "{args:?}");
        assert_eq!(json["exit_code"], 2);
        let error = json["error"].as_str().unwrap();
        assert!(!error.is_empty() && !error.starts_with("error:"), "{error}");
        assert!(!out.stderr.is_empty(), "{args:?}: stderr still says it");
        // The control: the same words without -o json print nothing on stdout.
        let text: Vec<&str> = args
            .iter()
            .copied()
            .filter(|a| !a.contains("json"))
            .collect();
        let text: Vec<&str> = text.into_iter().filter(|a| *a != "-o").collect();
        let out = run(sb.anthropic(&server).args(&text));
        assert_eq!((out.code, out.stdout.as_str()), (2, ""), "{text:?}");
    }
    let out = run(sb.anthropic(&server).args(["-o", "stream-json", "--bogus"]));
    assert_eq!(out.code, 2);
    let end: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(
        (end["type"].as_str(), end["status"].as_str()),
        (Some("end"), Some("usage"))
    );
    // A settings file that is wrong is a usage error like a flag.
    sb.write(".rounds.toml", "max-roundz = 3\n");
    let out = run(sb.anthropic(&server).args(["-o", "json", "x"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    let json: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert!(
        json["error"].as_str().unwrap().contains("max-roundz"),
        "{json}"
    );
    // Help is no error.
    let out = run(sb.rounds().args(["-o", "json", "--help"]));
    assert_eq!(out.code, 0);
    assert!(out.stdout.starts_with("Run an LLM"), "{}", out.stdout);
    assert_eq!(server.requests().len(), 0);
}
