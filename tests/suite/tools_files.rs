//! The file tools through the real binary, against the promises of RELIABILITY.md "Files":
//! nothing outside the workspace is read or written whatever path trick the model tries,
//! special files never block, edits keep line endings, and a refused write leaves no trace.

use std::os::unix::fs::symlink;
use std::time::{Duration, Instant};

use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run};
use pretty_assertions::assert_eq;
use serde_json::Value;

fn round(sb: &Sandbox, calls: &[B], extra: &[&str]) -> Vec<Value> {
    let server = MockServer::start(vec![
        Reply::sse(sse::anthropic(calls, "tool_use", 10, 5)),
        Reply::sse(sse::anthropic(&[B::Text("done")], "end_turn", 10, 5)),
    ]);
    let out = run(sb
        .rounds()
        .env("ANTHROPIC_API_KEY", "sk-files-secret")
        .env("ANTHROPIC_BASE_URL", server.url())
        .args(extra)
        .arg("--transcript")
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        !std::fs::read_to_string(sb.transcript_path())
            .unwrap()
            .contains("sk-files-secret")
    );
    sb.transcript()[1]["results"].as_array().unwrap().clone()
}

#[test]
fn writes_cannot_escape_the_workspace_by_any_path_trick() {
    let sb = Sandbox::new();
    let outside = sb.path("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(sb.path("ws-evil")).unwrap();
    symlink(&outside, sb.ws().join("link")).unwrap();
    symlink(outside.join("dangling"), sb.ws().join("dangling")).unwrap();
    let evil = format!("{}/x.txt", sb.path("ws-evil").display());
    let absolute = format!("{}/x.txt", outside.display());
    let calls = [
        B::Tool(
            "t1",
            "write_file",
            r#"{"path":"../outside/x.txt","content":"pwned"}"#,
        ),
        B::Tool(
            "t2",
            "write_file",
            &format!(r#"{{"path":"{absolute}","content":"pwned"}}"#),
        ),
        B::Tool(
            "t3",
            "write_file",
            &format!(r#"{{"path":"{evil}","content":"pwned"}}"#),
        ),
        B::Tool(
            "t4",
            "write_file",
            r#"{"path":"link/x.txt","content":"pwned"}"#,
        ),
        B::Tool(
            "t5",
            "write_file",
            r#"{"path":"dangling","content":"pwned"}"#,
        ),
        B::Tool(
            "t6",
            "write_file",
            r#"{"path":"sub/dir/ok.txt","content":"fine"}"#,
        ),
    ];
    let results = round(&sb, &calls, &["-a", "write_file"]);
    let errors: Vec<bool> = results
        .iter()
        .map(|r| r["is_error"].as_bool().unwrap())
        .collect();
    assert_eq!(
        errors,
        [true, true, true, true, true, false],
        "{results:#?}"
    );
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        0,
        "something was written outside"
    );
    assert_eq!(std::fs::read_dir(sb.path("ws-evil")).unwrap().count(), 0);
    assert_eq!(
        std::fs::read_to_string(sb.ws().join("sub/dir/ok.txt")).unwrap(),
        "fine"
    );
    // No temporary files are left behind by the refused or the accepted writes.
    let names: Vec<String> = std::fs::read_dir(sb.ws().join("sub/dir"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["ok.txt"]);
}

#[test]
fn edits_keep_crlf_and_a_missing_final_newline_and_a_failed_edit_changes_nothing() {
    let sb = Sandbox::new();
    std::fs::write(sb.ws().join("win.txt"), b"one\r\ntwo\r\nthree").unwrap();
    let calls = [
        B::Tool(
            "t1",
            "edit_file",
            r#"{"path":"win.txt","old_string":"two\nthree","new_string":"2\n3"}"#,
        ),
        B::Tool(
            "t2",
            "edit_file",
            r#"{"path":"win.txt","old_string":"absent","new_string":"x"}"#,
        ),
    ];
    let results = round(&sb, &calls, &["-a", "edit_file"]);
    assert_eq!(results[0]["is_error"], false, "{}", results[0]);
    assert!(
        results[0]["content"].as_str().unwrap().contains("-two"),
        "a diff: {}",
        results[0]
    );
    assert_eq!(
        std::fs::read(sb.ws().join("win.txt")).unwrap(),
        b"one\r\n2\r\n3"
    );
    assert_eq!(results[1]["error_kind"], "failed");
}

#[test]
fn reads_of_special_files_and_escapes_are_refused_without_blocking() {
    let sb = Sandbox::new();
    let fifo = sb.ws().join("pipe");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    std::fs::write(sb.path("secret.txt"), "outside secret\n").unwrap();
    symlink(sb.path("secret.txt"), sb.ws().join("innocent.txt")).unwrap();
    let calls = [
        B::Tool("t1", "read_file", r#"{"path":"pipe"}"#),
        B::Tool("t2", "read_file", r#"{"path":"innocent.txt"}"#),
        B::Tool("t3", "read_file", r#"{"path":"/proc/self/environ"}"#),
        B::Tool("t4", "grep", r#"{"pattern":"secret","path":".."}"#),
    ];
    let started = Instant::now();
    let results = round(&sb, &calls, &[]);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "a FIFO blocked the run"
    );
    for r in &results {
        assert_eq!(r["is_error"], true, "{r}");
        assert!(
            !r["content"].as_str().unwrap().contains("outside secret"),
            "{r}"
        );
    }
    assert!(
        results[0]["content"].as_str().unwrap().contains("FIFO"),
        "{}",
        results[0]
    );
    assert!(
        results[1]["content"]
            .as_str()
            .unwrap()
            .contains("outside the workspace"),
        "{}",
        results[1]
    );
}

#[test]
fn progress_shows_on_a_terminal_and_never_otherwise() {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let script = |quiet: bool| {
        let server = MockServer::start(vec![
            Reply::sse(sse::anthropic(
                &[B::Tool("t1", "read_file", r#"{"path":"a.txt"}"#)],
                "tool_use",
                1,
                1,
            )),
            sse::answer("done"),
        ]);
        let cmd = format!(
            "ANTHROPIC_API_KEY=k ANTHROPIC_BASE_URL={} {} --no-transcript {} go",
            server.url(),
            env!("CARGO_BIN_EXE_rounds"),
            if quiet { "-q" } else { "" }
        );
        // `script` gives the binary a pseudo-terminal as stdout and stderr.
        let out = std::process::Command::new("script")
            .args(["-qec", &cmd, "/dev/null"])
            .current_dir(sb.ws())
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", sb.path("home"))
            .env("TERM", "xterm")
            .output();
        out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    };
    let Ok(tty) = script(false) else {
        eprintln!("skipping: the `script` command (util-linux) is not installed");
        return;
    };
    assert!(
        tty.contains("round 1/25") && tty.contains("read_file a.txt"),
        "{tty:?}"
    );
    let quiet = script(true).unwrap();
    assert!(!quiet.contains("round 1/25"), "{quiet:?}");
    // Without a terminal (every other test), stderr holds no control sequences at all.
    let server = MockServer::start(vec![sse::answer("done")]);
    let out = run(sb.anthropic(&server).args(["--no-transcript", "go"]));
    assert!(!out.stderr.contains('\u{1b}'), "{:?}", out.stderr);
}

/// The workspace of the symlink tests: `secrets/key` and `.env` hold secrets; `src/docs` leads
/// to `secrets`, `settings` and `src/env` to `.env`.
fn linked_secrets() -> Sandbox {
    let sb = Sandbox::new();
    sb.write("secrets/key", "KEY-SECRET\n");
    sb.write(".env", "ENV-SECRET=1\n");
    sb.write("src/main.rs", "fn main() {}\n");
    symlink("../secrets", sb.ws().join("src/docs")).unwrap();
    symlink(".env", sb.ws().join("settings")).unwrap();
    symlink("../.env", sb.ws().join("src/env")).unwrap();
    sb
}

/// One call per row under `flags`, whose result must not hold the row's secret; then the same
/// call under `control` (a rule that covers the target), whose result must.
struct Row<'a> {
    flags: &'a [&'a str],
    tool: &'a str,
    input: String,
    secret: &'a str,
    control: &'a [&'a str],
}

fn check(sb: &Sandbox, table: &[Row]) {
    for row in table {
        let call = [B::Tool("t1", row.tool, &row.input)];
        let results = round(sb, &call, row.flags);
        let said = results[0]["content"].as_str().unwrap();
        assert!(
            !said.contains(row.secret),
            "{:?} {} {}: {said}",
            row.flags,
            row.tool,
            row.input
        );
        let results = round(sb, &call, row.control);
        let said = results[0]["content"].as_str().unwrap();
        assert!(
            said.contains(row.secret),
            "CONTROL {:?} {} {}: {said}",
            row.control,
            row.tool,
            row.input
        );
    }
}

fn read(path: &str) -> String {
    format!(r#"{{"path":"{path}"}}"#)
}

/// Issue 12 §5: path rules judged the path as written, so a symlink inside the workspace led a
/// call past them: `src/docs -> ../secrets` under `read_file(src/**)`, a link to `.env` past
/// `--deny 'read_file(.env)'`. The CONTROL shows each read does reach the secret under a rule
/// that covers where the link leads.
#[test]
fn path_rules_judge_where_a_symlink_leads() {
    let sb = linked_secrets();
    let row = |flags, path, secret, control| Row {
        flags,
        tool: "read_file",
        input: read(path),
        secret,
        control,
    };
    check(
        &sb,
        &[
            row(
                &["-a", "none,read_file(src/**)"],
                "src/docs/key",
                "KEY-SECRET",
                &["-a", "none,read_file(src/**),read_file(secrets/**)"],
            ),
            row(
                &["--deny", "read_file(.env)"],
                "settings",
                "ENV-SECRET",
                &[],
            ),
            row(&["--deny", "read_file(.env)"], "src/env", "ENV-SECRET", &[]),
            row(
                &["--deny", "read_file(secrets/**)"],
                "src/docs/key",
                "KEY-SECRET",
                &[],
            ),
        ],
    );

    // A symlink that stays inside what the rule allows is still read.
    symlink("main.rs", sb.ws().join("src/alias.rs")).unwrap();
    let results = round(
        &sb,
        &[B::Tool("t1", "read_file", &read("src/alias.rs"))],
        &["-a", "none,read_file(src/**)"],
    );
    let said = results[0]["content"].as_str().unwrap();
    assert!(said.contains("fn main"), "{}", results[0]);
}

/// Issue 12 §5: grep and glob walked into what a `read_file` deny rule covers (and list_dir
/// named it), and grep read a denied file named outright or through a symlink. The CONTROL
/// runs the same call without the deny rule.
#[test]
fn grep_glob_and_list_dir_leave_out_what_a_read_file_deny_rule_covers() {
    let sb = linked_secrets();
    let grep = |path: &str| format!(r#"{{"pattern":"SECRET","path":"{path}"}}"#);
    let row = |flags, tool, input, secret| Row {
        flags,
        tool,
        input,
        secret,
        control: &[],
    };
    let env = &["--deny", "read_file(.env)"][..];
    let secrets = &["--deny", "read_file(secrets/**)"][..];
    check(
        &sb,
        &[
            row(env, "grep", grep("."), "ENV-SECRET"),
            row(env, "grep", grep(".env"), "ENV-SECRET"),
            row(env, "grep", grep("settings"), "ENV-SECRET"),
            row(secrets, "grep", grep("."), "KEY-SECRET"),
            row(secrets, "grep", grep("src/docs"), "KEY-SECRET"),
            row(env, "glob", r#"{"pattern":"*env*"}"#.into(), ".env"),
            row(
                secrets,
                "glob",
                r#"{"pattern":"**/key"}"#.into(),
                "secrets/key",
            ),
            // A listing gives names away too (the link `settings -> .env` stays: its text is
            // the workspace's, not the file's).
            row(env, "list_dir", "{}".into(), ".env ("),
            row(env, "list_dir", r#"{"depth":3}"#.into(), ".env ("),
            row(secrets, "list_dir", r#"{"path":"secrets"}"#.into(), "key"),
        ],
    );

    // The walk goes around what is denied and still finds the rest.
    let results = round(
        &sb,
        &[B::Tool("t1", "grep", r#"{"pattern":"SECRET|main"}"#)],
        &["--deny", "read_file(.env)"],
    );
    let said = results[0]["content"].as_str().unwrap();
    assert_eq!(
        said, "secrets/key:1:KEY-SECRET\nsrc/main.rs:1:fn main() {}",
        "{}",
        results[0]
    );
}
