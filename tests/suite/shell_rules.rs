//! Shell rules end to end (issue 12 §1): the real binary, a scripted model that asks bash to run
//! each command by which a `bash(git *)` or `bash(ls *)` rule used to run something else, and the
//! file each one creates when it runs. Under the rule the file must not appear and the model must
//! get a denied result naming what the matcher did not understand; under `-a bash` (the control)
//! the same commands must create their files, so the test cannot pass because nothing ran.

use std::path::PathBuf;

use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run, types};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// A hostile command, the file it creates when it runs, and the construct the denial names.
struct Bypass {
    command: String,
    marker: PathBuf,
    construct: &'static str,
}

/// The issue's list; `sb` decides where the files land (the outside one beside the workspace).
fn git_bypasses(sb: &Sandbox) -> Vec<Bypass> {
    let ws = sb.ws();
    let outside = sb.path("outside.txt");
    let row = |command: &str, marker: &str, construct| Bypass {
        command: command.to_owned(),
        marker: ws.join(marker),
        construct,
    };
    vec![
        row("git log $'\\'' ; touch X1 #'", "X1", "$'…' quoting"),
        row("git status #'\ntouch X2\n#'", "X2", "a comment"),
        row(
            "git log <<EOF\ngit it's\nEOF\ntouch X3\n#'",
            "X3",
            "a here-document",
        ),
        row(
            "git () { touch X4; }; git status",
            "X4",
            "a function definition",
        ),
        row(
            "git () ( touch X5 ); git status",
            "X5",
            "a function definition",
        ),
        row(
            "git log ${x:='$(touch X6)'} ${x@P}",
            "X6",
            "a parameter expansion",
        ),
        row(
            "git log ${x:='a[$(touch X7)]'} ${y[x]}",
            "X7",
            "a parameter expansion",
        ),
        row("git status & touch X8", "X8", "a background job"),
        Bypass {
            command: format!("git --version > {}", outside.display()),
            marker: outside,
            construct: "it writes outside the workspace",
        },
    ]
}

fn ls_bypass(sb: &Sandbox) -> Bypass {
    Bypass {
        command: "ls -a > victim.txt".to_owned(),
        marker: sb.ws().join("victim.txt"),
        construct: "the redirection `> victim.txt`: it writes \"victim.txt\", and no write_file \
                    rule allows that",
    }
}

/// Runs one round in which the model calls bash once per command, then a final answer, with
/// `allow` as the allowlist; returns the round's results.
fn run_round(sb: &Sandbox, allow: &str, commands: &[&str]) -> Vec<Value> {
    run_with(sb, &["-a", allow], commands)
}

/// One round running `commands` as parallel bash calls under `rules`; their results.
fn run_with(sb: &Sandbox, rules: &[&str], commands: &[&str]) -> Vec<Value> {
    let inputs: Vec<String> = commands
        .iter()
        .map(|c| json!({"command": c}).to_string())
        .collect();
    let ids: Vec<String> = (0..commands.len()).map(|i| format!("call_{i}")).collect();
    let blocks: Vec<B> = ids
        .iter()
        .zip(&inputs)
        .map(|(id, input)| B::Tool(id, "bash", input))
        .collect();
    let server = MockServer::start(vec![
        Reply::sse(sse::anthropic(&blocks, "tool_use", 10, 5)),
        sse::answer("done"),
    ]);
    let out = run(sb
        .anthropic(&server)
        .args(rules)
        .arg("--transcript")
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = sb.transcript();
    assert_eq!(types(&lines).last(), Some(&"end"));
    let results = lines[1]["results"].as_array().unwrap().clone();
    assert_eq!(results.len(), commands.len());
    results
}

/// Every row that failed, so that one run shows them all.
fn check_denied(rule: &str, bypasses: &[Bypass], results: &[Value]) {
    let mut wrong = Vec::new();
    for (bypass, result) in bypasses.iter().zip(results) {
        let content = result["content"].as_str().unwrap_or_default();
        if result["error_kind"] != "denied"
            || !content.starts_with(&format!("{rule} does not cover "))
            || !content.contains(bypass.construct)
        {
            wrong.push(format!(
                "{:?} was not denied naming {:?}: {content}",
                bypass.command, bypass.construct
            ));
        }
        if bypass.marker.exists() {
            wrong.push(format!(
                "{:?} ran under {rule}: {} exists",
                bypass.command,
                bypass.marker.display()
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

fn check_ran(bypasses: &[Bypass], results: &[Value]) {
    let mut wrong = Vec::new();
    for (bypass, result) in bypasses.iter().zip(results) {
        if result["is_error"] != false || !bypass.marker.exists() {
            wrong.push(format!(
                "control: {:?} did not create {}: {result}",
                bypass.command,
                bypass.marker.display()
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn the_issues_bypasses_are_denied_under_bash_git_and_name_the_construct() {
    let sb = Sandbox::new();
    let git = git_bypasses(&sb);
    let commands: Vec<&str> = git.iter().map(|b| b.command.as_str()).collect();
    let results = run_round(&sb, "bash(git *)", &commands);
    check_denied("bash(git *)", &git, &results);
}

#[test]
fn a_redirection_is_denied_under_bash_ls_without_a_write_file_rule() {
    let sb = Sandbox::new();
    let ls = [ls_bypass(&sb)];
    let results = run_round(&sb, "bash(ls *)", &[ls[0].command.as_str()]);
    check_denied("bash(ls *)", &ls, &results);
}

#[test]
fn control_the_same_commands_run_under_a_bare_bash_rule() {
    let sb = Sandbox::new();
    let mut all = git_bypasses(&sb);
    all.push(ls_bypass(&sb));
    let commands: Vec<&str> = all.iter().map(|b| b.command.as_str()).collect();
    let results = run_round(&sb, "bash", &commands);
    check_ran(&all, &results);
}

#[test]
fn what_the_rules_understand_runs_streams_and_allowed_writes_included() {
    let sb = Sandbox::new();
    sb.write("out/.keep", "");
    let results = run_round(
        &sb,
        "bash(git *),bash(ls *),write_file(out/**)",
        &[
            // `2>&1` used to be denied: the old splitter cut the command at its `&`.
            "git --version 2>&1 | git stripspace >/dev/null",
            "ls -a > out/listing.txt 2>&1",
            "ls -a > listing.txt",
        ],
    );
    assert_eq!(results[0]["is_error"], false, "{}", results[0]);
    assert_eq!(results[1]["is_error"], false, "{}", results[1]);
    assert!(sb.ws().join("out/listing.txt").exists());
    assert_eq!(results[2]["error_kind"], "denied", "{}", results[2]);
    assert!(!sb.ws().join("listing.txt").exists());
}

#[test]
fn a_redirection_through_a_symlink_is_judged_where_it_leads() {
    // `--deny write_file(.env)` must hold against `> link` when link -> .env.
    let sb = Sandbox::new();
    sb.write(".env", "SECRET=1\n");
    std::os::unix::fs::symlink(".env", sb.ws().join("link")).unwrap();
    std::fs::create_dir(sb.ws().join("notes")).unwrap();
    std::os::unix::fs::symlink("../.env", sb.ws().join("notes/env")).unwrap();
    let hostile = ["echo pwned > link", "echo pwned >> notes/env"];
    let allow = "bash(echo *),write_file(**)";
    let results = run_with(&sb, &["-a", allow, "--deny", "write_file(.env)"], &hostile);
    for (command, r) in hostile.iter().zip(&results) {
        assert_eq!(r["error_kind"], "denied", "{command}: {r}");
        assert!(
            r["content"].as_str().unwrap().contains(".env"),
            "{command}: {r}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(sb.ws().join(".env")).unwrap(),
        "SECRET=1\n"
    );
    // The control: without the deny rule the same redirections write .env.
    let results = run_round(&sb, allow, &hostile);
    assert!(
        results.iter().all(|r| r["is_error"] == false),
        "{results:?}"
    );
    assert!(
        std::fs::read_to_string(sb.ws().join(".env"))
            .unwrap()
            .contains("pwned")
    );
}
