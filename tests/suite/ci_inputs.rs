//! Inputs and the environment as CI gives them (issue 23, item 3): Latin-1 on stdin, empty
//! variables, a step summary turned off, values whose messages name where they came from,
//! did-you-mean for settings and profiles, and prompts too large to send.

use std::time::Duration;

use super::cli::with_stdin;
use super::settings::{project_file, user_file};
use crate::common::mock::MockServer;
use crate::common::{Run, Sandbox, run, sse};

/// A run of `args` against a fresh mock answering "ok", with `vars` set.
fn run_with(sb: &Sandbox, vars: &[(&str, &str)], args: &[&str]) -> (Run, MockServer) {
    let server = MockServer::start(vec![sse::answer("ok")]);
    let mut cmd = sb.anthropic(&server);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = run(cmd.args(["--no-transcript"]).args(args));
    (out, server)
}

/// Whether a run shows that it read the variable's value.
type Read = fn(&Run, &Sandbox) -> bool;
type Vars<'a> = Vec<(&'a str, &'a str)>;

#[test]
fn latin1_is_decoded_with_a_warning_and_only_nul_bytes_are_binary() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![sse::answer("ok")]);
    let out = with_stdin(
        &sb,
        &server,
        &["--no-transcript", "review this"],
        b"caf\xe9 au lait\n",
        Duration::ZERO,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("stdin is not UTF-8"), "{}", out.stderr);
    let sent = server.requests()[0].json()["messages"][0].to_string();
    assert!(sent.contains("caf\u{fffd} au lait"), "{sent}");
    // -f FILE by the same rule.
    std::fs::write(sb.ws().join("p.txt"), b"r\xe9sum\xe9 this").unwrap();
    let (out, server) = run_with(&sb, &[], &["-f", "p.txt"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("p.txt is not UTF-8"), "{}", out.stderr);
    assert!(
        server.requests()[0].json()["messages"][0]
            .to_string()
            .contains("sum\u{fffd} this")
    );
    // The control: a NUL byte is binary, in a file as on stdin (tests/suite/cli.rs).
    std::fs::write(sb.ws().join("p.txt"), b"PK\x03\x04\x00").unwrap();
    let (out, server) = run_with(&sb, &[], &["-f", "p.txt"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("is binary"), "{}", out.stderr);
    assert!(server.requests().is_empty());
}

#[test]
fn an_empty_variable_is_an_unset_one_and_a_set_one_is_read() {
    let sb = Sandbox::new();
    user_file(&sb, "[profile.ci]\nmax-rounds = 3\n");
    let summary = sb.path("summary.md");
    let summary = summary.to_str().unwrap();
    let elsewhere = sb.path("elsewhere");
    let elsewhere = elsewhere.to_str().unwrap();
    // Each variable rounds reads, with a value that shows it is read (the control).
    let table: &[(&str, &str, Read)] = &[
        ("GITHUB_STEP_SUMMARY", summary, |_, sb| {
            sb.path("summary.md").exists()
        }),
        ("ROUNDS_MODEL", "nope/x", |out, _| out.code == 2),
        ("ROUNDS_PROFILE", "nope", |out, _| out.code == 2),
        ("ROUNDS_MCP_STARTUP_TIMEOUT", "abc", |out, _| out.code == 2),
        ("ROUNDS_STORE", "postgres://127.0.0.1:1/none", |out, _| {
            out.code != 0
        }),
        ("ROUNDS_LOG", "rounds=debug", |out, _| {
            out.stderr.contains("rounds: debug:")
        }),
        ("XDG_CONFIG_HOME", "/nonexistent", |out, _| out.code == 2),
        ("ROUNDS_HOME", elsewhere, |_, sb| {
            sb.path("elsewhere/runs").exists()
        }),
    ];
    for (var, value, read) in table {
        // XDG_CONFIG_HOME set elsewhere: the user's file (and its profile) is not found.
        let profile: &[&str] = if *var == "XDG_CONFIG_HOME" {
            &["--profile", "ci"]
        } else {
            &[]
        };
        let transcript: &[&str] = if *var == "ROUNDS_HOME" {
            &[]
        } else {
            &["--no-transcript"]
        };
        let go = |vars: &[(&str, &str)]| {
            let server = MockServer::start(vec![sse::answer("ok")]);
            let mut cmd = sb.anthropic(&server);
            cmd.env_remove("ROUNDS_HOME");
            cmd.env("ROUNDS_HOME", sb.path("state"));
            for (k, v) in vars {
                cmd.env(k, v);
            }
            run(cmd.args(transcript).args(profile).arg("go"))
        };
        let _ = std::fs::remove_file(sb.path("summary.md"));
        let empty = go(&[(var, "")]);
        assert_eq!(empty.code, 0, "{var}= : {}", empty.stderr);
        assert_eq!(empty.stdout, "ok\n", "{var}=");
        assert!(!sb.path("summary.md").exists(), "{var}=");
        let set = go(&[(var, value)]);
        assert!(
            read(&set, &sb),
            "{var}={value} was not read: {} {}",
            set.code,
            set.stderr
        );
    }
    // A batch too: GITHUB_STEP_SUMMARY= is no summary, not a usage error.
    std::fs::write(sb.path("jobs.jsonl"), "{\"id\":\"a\",\"prompt\":\"go\"}\n").unwrap();
    let server = MockServer::start(vec![sse::answer("ok")]);
    let out = run(sb
        .anthropic(&server)
        .env("GITHUB_STEP_SUMMARY", "")
        .arg("batch")
        .arg(sb.path("jobs.jsonl"))
        .arg("--out")
        .arg(sb.path("out")));
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn no_step_summary_wins_over_the_variable_for_a_run_and_a_batch() {
    let sb = Sandbox::new();
    let summary = sb.path("summary.md");
    let summary = summary.to_str().unwrap();
    let vars = [("GITHUB_STEP_SUMMARY", summary)];
    let (out, _) = run_with(&sb, &vars, &["--no-step-summary", "go"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!sb.path("summary.md").exists());
    std::fs::write(sb.path("jobs.jsonl"), "{\"id\":\"a\",\"prompt\":\"go\"}\n").unwrap();
    let batch = |flags: &[&str], out: &str| {
        let server = MockServer::start(vec![sse::answer("ok")]);
        run(sb
            .anthropic(&server)
            .env("GITHUB_STEP_SUMMARY", summary)
            .arg("batch")
            .arg(sb.path("jobs.jsonl"))
            .args(flags)
            .arg("--out")
            .arg(sb.path(out)))
    };
    let out = batch(&["--no-step-summary"], "o1");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!sb.path("summary.md").exists());
    // The controls: without the flag, each writes its summary.
    let out = batch(&[], "o2");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(sb.path("summary.md").exists());
    std::fs::remove_file(sb.path("summary.md")).unwrap();
    let (out, _) = run_with(&sb, &vars, &["go"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(sb.path("summary.md").exists());
}

#[test]
fn a_bad_value_names_the_variable_or_the_file_and_line_it_came_from() {
    let sb = Sandbox::new();
    let user = sb.path("home/.config/rounds/config.toml");
    // The user's settings file, the variables, and what the message must name.
    let cases: Vec<(&str, Vars, String)> = vec![
        (
            "\n\nmax-rounds = \"five\"\n",
            vec![],
            format!("{}:3: max-rounds = \"five\"", user.display()),
        ),
        (
            "[profile.ci]\nmodel = \"nope/x\"\n",
            vec![("ROUNDS_PROFILE", "ci")],
            format!("{}:2 (profile): model = \"nope/x\"", user.display()),
        ),
        (
            "",
            vec![("ROUNDS_MODEL", "nope/x")],
            "ROUNDS_MODEL=\"nope/x\"".to_owned(),
        ),
        (
            "",
            vec![("ROUNDS_MCP_STARTUP_TIMEOUT", "soon")],
            "ROUNDS_MCP_STARTUP_TIMEOUT=\"soon\"".to_owned(),
        ),
        (
            "",
            vec![("ROUNDS_PROFILE", "cii")],
            "ROUNDS_PROFILE=\"cii\"".to_owned(),
        ),
    ];
    for (file, vars, named) in cases {
        user_file(&sb, file);
        let (out, server) = run_with(&sb, &vars, &["go"]);
        assert_eq!(out.code, 2, "{named}: {}", out.stderr);
        assert!(out.stderr.contains(&named), "{named}: {}", out.stderr);
        assert!(server.requests().is_empty());
    }
    // The control: a value typed on the command line is clap's to name, as it names the flag.
    user_file(&sb, "");
    let (out, _) = run_with(&sb, &[], &["--max-rounds", "five", "go"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("'--max-rounds <N>'"), "{}", out.stderr);
    assert!(!out.stderr.contains("config.toml"), "{}", out.stderr);
}

#[test]
fn a_mistyped_key_or_profile_gets_a_did_you_mean() {
    let sb = Sandbox::new();
    for (args, expected) in [
        (&["-c", "maxrounds=3"][..], "did you mean \"max-rounds\""),
        (&["-c", "max_round=3"][..], "did you mean \"max-rounds\""),
        (
            &["-c", "tool-timout=3"][..],
            "did you mean \"tool-timeout\"",
        ),
    ] {
        let (out, _) = run_with(&sb, &[], &[args, &["go"][..]].concat());
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(expected), "{args:?}: {}", out.stderr);
    }
    user_file(&sb, "modle = \"x\"\n");
    let (out, _) = run_with(&sb, &[], &["go"]);
    assert!(
        out.stderr.contains("did you mean \"model\""),
        "{}",
        out.stderr
    );
    // A profile in both files is listed once, and the near one suggested.
    user_file(
        &sb,
        "[profile.ci]\nmax-rounds = 3\n[profile.nightly]\nmax-rounds = 9\n",
    );
    project_file(&sb, "[profile.ci]\nmax-rounds = 2\n");
    let (out, _) = run_with(&sb, &[], &["--profile", "cii", "go"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("(found: ci, nightly)"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("did you mean \"ci\""), "{}", out.stderr);
    // The control: nothing near, nothing suggested.
    let (out, _) = run_with(&sb, &[], &["--profile", "zzzzzz", "go"]);
    assert!(!out.stderr.contains("did you mean"), "{}", out.stderr);
}

#[test]
fn a_prompt_past_the_context_window_is_refused_and_a_large_one_said() {
    let sb = Sandbox::new();
    // 8 MB: about two million tokens, past the default model's 200000.
    std::fs::write(sb.ws().join("big.txt"), "word ".repeat(1_600_000)).unwrap();
    let (out, server) = run_with(&sb, &[], &["-f", "big.txt"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("context window (200000 tokens)"),
        "{}",
        out.stderr
    );
    assert!(server.requests().is_empty());
    // 1.5 MiB in a window it fits: sent, with a word on stderr.
    std::fs::write(sb.ws().join("big.txt"), "word ".repeat(320_000)).unwrap();
    let (out, server) = run_with(&sb, &[], &["-f", "big.txt", "--context-window", "1000000"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("the prompt is 1.5 MiB"),
        "{}",
        out.stderr
    );
    assert_eq!(server.requests().len(), 1);
    // The control: a small prompt, not a word.
    let (out, _) = run_with(&sb, &[], &["go"]);
    assert!(!out.stderr.contains("MiB"), "{}", out.stderr);
}
