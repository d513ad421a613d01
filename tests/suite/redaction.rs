//! Secrets a tool reads: a command that prints the launcher's keys must not put them into the
//! transcript, stdout, the saved outputs or the next request. Each test makes a tool print real
//! values and looks for them everywhere rounds writes or sends; the controls show the channel
//! carries a value that is not redacted.

use std::path::Path;

use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Run, Sandbox, parse_lines, run};
use pretty_assertions::assert_eq;
use serde_json::json;

const KEY: &str = "sk-ant-redact-test-4b1d9e7c";
const GITHUB: &str = "ghp_R3dactM3Plz0123456789abcdef";
const PLAIN: &str = "plain-value-5e8a0f2d";

/// A bash call that prints `secret.txt`, then an answer.
fn cat_then_answer() -> MockServer {
    let input = json!({"command": "cat secret.txt"}).to_string();
    MockServer::start(vec![
        Reply::sse(sse::anthropic(
            &[B::Tool("call_0", "bash", &input)],
            "tool_use",
            10,
            5,
        )),
        sse::answer("done"),
    ])
}

/// `secret.txt`: `values` at the start, straddling the head the bash result keeps (6 KiB) and a
/// 16 KiB pipe read, in the cut middle, and at the end; 40 KB in all, so every spill file is
/// written.
fn secret_file(sb: &Sandbox, values: &[&str]) {
    let line = values.join(" ");
    let mut text = format!("{line}\n");
    for at in [6 * 1024 - 5, 16 * 1024 - 7, 20_000, 40_000 - line.len() - 1] {
        let fill = at - text.len();
        text.push_str(&"filler ".repeat(fill / 7 + 1)[..fill]);
        text.push_str(&line);
    }
    text.push('\n');
    sb.write("secret.txt", &text);
}

fn rounds(sb: &Sandbox, server: &MockServer) -> std::process::Command {
    let mut cmd = sb.rounds();
    cmd.env("ANTHROPIC_API_KEY", KEY)
        .env("ANTHROPIC_BASE_URL", server.url())
        .args([
            "-a",
            "bash",
            "--max-result-bytes",
            "1024",
            "-o",
            "stream-json",
        ])
        .arg("--transcript")
        .arg(sb.transcript_path());
    cmd
}

/// Everything the run wrote or sent: transcript, stdout, stderr, every saved output, every
/// request body, each with its name.
fn everything(sb: &Sandbox, server: &MockServer, out: &Run) -> Vec<(String, String)> {
    let mut all = vec![
        (
            "transcript".to_owned(),
            std::fs::read_to_string(sb.transcript_path()).unwrap(),
        ),
        ("stdout".to_owned(), out.stdout.clone()),
        ("stderr".to_owned(), out.stderr.clone()),
    ];
    for file in saved_outputs(&sb.transcript_path().with_extension("outputs")) {
        all.push((
            file.display().to_string(),
            String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned(),
        ));
    }
    for (i, r) in server.requests().iter().enumerate() {
        all.push((
            format!("request {i}"),
            String::from_utf8_lossy(&r.body).into_owned(),
        ));
    }
    all
}

fn saved_outputs(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

#[test]
fn secrets_a_tool_prints_appear_nowhere_rounds_writes_or_sends() {
    let sb = Sandbox::new();
    secret_file(&sb, &[KEY, GITHUB]);
    let server = cat_then_answer();
    let out = run(rounds(&sb, &server).env("GITHUB_TOKEN", GITHUB).arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);

    let lines = sb.transcript();
    let mut start = lines[0]["redaction"].clone();
    start.as_array_mut().unwrap().sort_by_key(|v| v.to_string());
    assert_eq!(start, json!(["ANTHROPIC_API_KEY", "GITHUB_TOKEN"]));
    let result = &lines[1]["results"][0];
    assert_eq!(
        result["redacted"],
        json!(["ANTHROPIC_API_KEY", "GITHUB_TOKEN"])
    );
    assert_eq!(result["truncated"], true, "{result}");
    let spilled = saved_outputs(&sb.transcript_path().with_extension("outputs"));
    assert!(
        spilled
            .iter()
            .any(|p| p.extension().is_some_and(|e| e == "stdout"))
            && spilled
                .iter()
                .any(|p| p.extension().is_some_and(|e| e == "txt")),
        "bash's own spill file and the cut result's: {spilled:?}"
    );
    let events = parse_lines(&out.stdout);
    let streamed = events
        .iter()
        .find(|e| e["type"] == "tool_result")
        .expect("a tool_result event");
    assert_eq!(streamed["redacted"], result["redacted"]);

    for (what, text) in everything(&sb, &server, &out) {
        for secret in [KEY, GITHUB] {
            // Not even the part of one that a cut or a pipe read could leave behind.
            for part in [secret, &secret[..12], &secret[secret.len() - 12..]] {
                assert!(!text.contains(part), "{what} holds {part}:\n{text}");
            }
        }
    }
    let spill = std::fs::read_to_string(
        spilled
            .iter()
            .find(|p| p.ends_with("call_0.stdout"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        spill,
        std::fs::read_to_string(sb.ws().join("secret.txt"))
            .unwrap()
            .replace(KEY, "[REDACTED:ANTHROPIC_API_KEY]")
            .replace(GITHUB, "[REDACTED:GITHUB_TOKEN]"),
        "the saved output is the whole output, redacted"
    );
    let next = server.requests()[1].json().to_string();
    assert!(
        next.contains("[REDACTED:ANTHROPIC_API_KEY]") && next.contains("[REDACTED:GITHUB_TOKEN]"),
        "{next}"
    );
}

#[test]
fn a_value_no_rule_names_goes_through_until_redact_names_it() {
    let run_with = |extra: &[&str]| {
        let sb = Sandbox::new();
        secret_file(&sb, &[PLAIN]);
        let server = cat_then_answer();
        let out = run(rounds(&sb, &server)
            .env("PLAIN_SETTING", PLAIN)
            .args(extra)
            .arg("go"));
        assert_eq!(out.code, 0, "{}", out.stderr);
        let everything = everything(&sb, &server, &out);
        (sb, everything)
    };
    // The control: the channel is real, and the value goes everywhere.
    let (_sb, plain) = run_with(&[]);
    for (what, text) in &plain {
        if what == "transcript" || what == "request 1" || what.ends_with(".stdout") {
            assert!(text.contains(PLAIN), "{what} should hold the value");
        }
    }
    let (sb, redacted) = run_with(&["--redact", "PLAIN_SETTING"]);
    for (what, text) in &redacted {
        assert!(!text.contains(PLAIN), "{what} holds the value:\n{text}");
    }
    let lines = sb.transcript();
    assert_eq!(
        lines[0]["redaction"],
        json!(["ANTHROPIC_API_KEY", "PLAIN_SETTING"])
    );
    assert_eq!(lines[1]["results"][0]["redacted"], json!(["PLAIN_SETTING"]));
}

#[test]
fn a_key_from_a_file_and_secrets_piped_into_the_prompt_are_redacted_too() {
    let sb = Sandbox::new();
    std::fs::write(sb.path("key"), format!("{KEY}\n")).unwrap();
    secret_file(&sb, &[KEY]);
    std::fs::write(sb.path("dotenv"), format!("GITHUB_TOKEN={GITHUB}\n")).unwrap();
    let server = cat_then_answer();
    let out = run(sb
        .rounds()
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("GITHUB_TOKEN", GITHUB)
        .args(["--api-key-file", "../key", "-a", "bash", "--transcript"])
        .arg(sb.transcript_path())
        .stdin(std::fs::File::open(sb.path("dotenv")).unwrap())
        .arg("why does this fail?"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = sb.transcript();
    let prompt = lines[0]["prompt"].as_str().unwrap();
    assert!(
        prompt.contains("GITHUB_TOKEN=[REDACTED:GITHUB_TOKEN]"),
        "{prompt}"
    );
    assert_eq!(
        lines[1]["results"][0]["redacted"],
        json!(["ANTHROPIC_API_KEY"])
    );
    assert!(
        out.stderr
            .contains("the prompt held the value of GITHUB_TOKEN"),
        "{}",
        out.stderr
    );
    let first = server.requests()[0].json();
    assert!(
        first.to_string().contains("[REDACTED:GITHUB_TOKEN]"),
        "{first}"
    );
    for (what, text) in everything(&sb, &server, &out) {
        for secret in [KEY, GITHUB] {
            assert!(!text.contains(secret), "{what} holds {secret}:\n{text}");
        }
    }
    // The key itself still authenticates the requests.
    assert_eq!(server.requests()[0].header("x-api-key"), Some(KEY));
}

#[test]
fn results_that_do_not_stream_and_hook_messages_are_redacted_and_hooks_see_them_redacted() {
    let sb = Sandbox::new();
    sb.write("small.txt", &format!("token: {GITHUB}\n"));
    let read = json!({"path": "small.txt"}).to_string();
    let bash = json!({"command": "true"}).to_string();
    let server = MockServer::start(vec![
        Reply::sse(sse::anthropic(
            &[
                B::Tool("call_0", "read_file", &read),
                B::Tool("call_1", "bash", &bash),
            ],
            "tool_use",
            10,
            5,
        )),
        sse::answer("done"),
    ]);
    // The pre hook vetoes bash with the file as its message; the post hook keeps what it got.
    let pre = r#"[ "$ROUNDS_TOOL_NAME" = bash ] || exit 0; cat small.txt >&2; exit 2"#;
    let post = r#"cat > "post-$ROUNDS_TOOL_USE_ID.json""#;
    let out = run(rounds(&sb, &server)
        .env("GITHUB_TOKEN", GITHUB)
        .args([
            "-a",
            "read_file",
            "--pre-tool-hook",
            pre,
            "--post-tool-hook",
            post,
        ])
        .arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = sb.transcript()[1]["results"].clone();
    assert_eq!(
        results[0]["content"],
        "     1\ttoken: [REDACTED:GITHUB_TOKEN]\n"
    );
    assert_eq!(results[1]["error_kind"], "vetoed");
    assert_eq!(results[1]["content"], "token: [REDACTED:GITHUB_TOKEN]");
    for result in results.as_array().unwrap() {
        assert_eq!(result["redacted"], json!(["GITHUB_TOKEN"]), "{result}");
    }
    let seen = std::fs::read_to_string(sb.ws().join("post-call_0.json")).unwrap();
    assert!(seen.contains("[REDACTED:GITHUB_TOKEN]"), "{seen}");
    for (what, text) in everything(&sb, &server, &out) {
        assert!(!text.contains(GITHUB), "{what} holds the token:\n{text}");
    }
}
