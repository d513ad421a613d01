//! Command tools from manifests, through the real binary: the shipped example manifest, the
//! input on stdin, structured and plain answers, failures, timeouts, the allowlist, the
//! environment; and `rounds tools`.

use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/tools/tools.toml");

fn server(calls: &[B]) -> MockServer {
    MockServer::start(vec![
        Reply::sse(sse::anthropic(calls, "tool_use", 10, 5)),
        Reply::sse(sse::anthropic(&[B::Text("done")], "end_turn", 10, 5)),
    ])
}

fn rounds(sb: &Sandbox, server: &MockServer, args: &[&str]) -> Vec<Value> {
    let out = run(sb
        .rounds()
        .env("ANTHROPIC_API_KEY", "sk-manifest-secret")
        .env("ANTHROPIC_BASE_URL", server.url())
        .args(args)
        .arg("--transcript")
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    sb.transcript()[1]["results"].as_array().unwrap().clone()
}

const TEST_TOOLS: &str = r#"
[[tool]]
name = "echo_input"
description = "Prints its input and environment."
command = 'cat; echo; env | grep -E "^(ROUNDS_MANIFEST_DIR|PATH|ANTHROPIC)" | sort'
class = "safe"

[[tool]]
name = "broken"
description = "Always fails."
command = "echo partial; echo went wrong >&2; exit 3"

[[tool]]
name = "refuses"
description = "Answers with a structured error."
command = ["sh", "-c", "echo '{\"content\": \"not today\", \"is_error\": true}'"]

[[tool]]
name = "slow"
description = "Sleeps."
command = "echo $$ > slow.pid; exec sleep 60"
timeout = 0.5
"#;

#[test]
fn the_example_manifest_tools_answer_about_the_workspace() {
    let sb = Sandbox::new();
    sb.write("src/main.rs", "fn main() {}\n// two\n");
    sb.write("README.md", "# demo\n");
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(sb.ws())
            .output()
            .unwrap();
        assert!(
            ok.status.success(),
            "{}",
            String::from_utf8_lossy(&ok.stderr)
        );
    };
    git(&["init", "-q"]);
    git(&[
        "-c",
        "user.name=Ada",
        "-c",
        "user.email=a@example.com",
        "add",
        ".",
    ]);
    git(&[
        "-c",
        "user.name=Ada",
        "-c",
        "user.email=a@example.com",
        "commit",
        "-qm",
        "first commit",
    ]);
    let server = server(&[
        B::Tool("t1", "git_log", r#"{"limit": 5}"#),
        B::Tool("t2", "line_count", "{}"),
    ]);
    let results = rounds(
        &sb,
        &server,
        &["--tools-file", EXAMPLE, "-a", "git_log,line_count"],
    );
    let log = results[0]["content"].as_str().unwrap();
    assert!(log.contains("Ada: first commit"), "{log}");
    let counts = results[1]["content"].as_str().unwrap();
    assert!(
        counts.contains(".rs") && counts.contains("total") && counts.contains("src/main.rs (2)"),
        "{counts}"
    );
    let offered: Vec<Value> = server.requests()[0].json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].clone())
        .collect();
    assert!(offered.contains(&json!("git_log")) && offered.contains(&json!("line_count")));
}

#[test]
fn command_tools_get_their_input_and_a_scrubbed_environment_and_report_failures() {
    let sb = Sandbox::new();
    std::fs::write(sb.path("tools.toml"), TEST_TOOLS).unwrap();
    let server = server(&[
        B::Tool("t1", "echo_input", r#"{"greeting":"hi"}"#),
        B::Tool("t2", "broken", "{}"),
        B::Tool("t3", "refuses", "{}"),
        B::Tool("t4", "slow", "{}"),
    ]);
    let manifest = sb.path("tools.toml").display().to_string();
    let started = std::time::Instant::now();
    let results = rounds(&sb, &server, &["--tools-file", &manifest, "-a", "all"]);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    let echo = results[0]["content"].as_str().unwrap();
    assert!(echo.starts_with(r#"{"greeting":"hi"}"#), "{echo}");
    assert!(
        echo.contains(&format!(
            "ROUNDS_MANIFEST_DIR={}",
            sb.path("").display().to_string().trim_end_matches('/')
        )),
        "{echo}"
    );
    assert!(
        !echo.contains("ANTHROPIC") && !echo.contains("sk-manifest-secret"),
        "{echo}"
    );
    assert_eq!(results[1]["error_kind"], "failed");
    assert_eq!(
        results[1]["content"],
        "broken exited with code 3\nstderr:\nwent wrong\nstdout:\npartial"
    );
    assert_eq!(
        (
            results[2]["error_kind"].as_str(),
            results[2]["content"].as_str()
        ),
        (Some("failed"), Some("not today"))
    );
    assert_eq!(results[3]["error_kind"], "timeout");
    let pid = std::fs::read_to_string(sb.ws().join("slow.pid")).unwrap();
    assert!(
        !std::path::Path::new(&format!("/proc/{}", pid.trim())).exists(),
        "the slow tool survived its timeout"
    );
}

#[test]
fn manifest_tools_need_allowing_and_a_bad_manifest_is_a_usage_error() {
    let sb = Sandbox::new();
    std::fs::write(sb.path("tools.toml"), TEST_TOOLS).unwrap();
    let manifest = sb.path("tools.toml").display().to_string();
    let server = server(&[B::Tool("t1", "echo_input", "{}")]);
    let results = rounds(&sb, &server, &["--tools-file", &manifest]);
    assert_eq!(
        results[0]["error_kind"], "unknown_tool",
        "not offered without -a"
    );

    std::fs::write(
        sb.path("bad.toml"),
        "[[tool]]\nname = \"read_file\"\ndescription = \"x\"\ncommand = \"true\"\n",
    )
    .unwrap();
    let out =
        run(sb
            .rounds()
            .env("ANTHROPIC_API_KEY", "k")
            .args(["--tools-file", "../bad.toml", "go"]));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("tool \"read_file\" from manifest ")
            && out.stderr.contains("already exists (built-in)"),
        "{}",
        out.stderr
    );
}

#[test]
fn rounds_tools_lists_built_ins_and_manifest_tools_with_their_allowlist_state() {
    let sb = Sandbox::new();
    let out = run(sb.rounds().args([
        "tools",
        "--tools-file",
        EXAMPLE,
        "-a",
        "git_log",
        "-o",
        "json",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let listed: Vec<Value> = serde_json::from_str(&out.stdout).unwrap();
    let row = |name: &str| {
        listed
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} not listed"))
            .clone()
    };
    assert_eq!(
        (
            row("read_file")["class"].as_str(),
            row("read_file")["offered"].as_bool()
        ),
        (Some("safe"), Some(true))
    );
    assert_eq!(
        (
            row("bash")["class"].as_str(),
            row("bash")["offered"].as_bool()
        ),
        (Some("mutating"), Some(false))
    );
    assert_eq!(row("git_log")["offered"], true);
    assert_eq!(row("line_count")["offered"], false);
    assert!(
        row("git_log")["origin"]
            .as_str()
            .unwrap()
            .starts_with("manifest ")
    );
    assert_eq!(
        row("git_log")["input_schema"]["properties"]["limit"]["maximum"],
        200
    );
    let text = run(sb.rounds().args(["tools", "--tools-file", EXAMPLE]));
    assert_eq!(text.code, 0);
    assert!(text.stdout.starts_with("TOOL"), "{}", text.stdout);
    assert!(
        text.stdout
            .contains("git_log     safe      no       manifest "),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .contains("Tool processes run in the sandbox workspace-write (network off;"),
        "{}",
        text.stdout
    );
    let off = run(sb.rounds().args(["tools", "--sandbox", "off"]));
    assert!(
        off.stdout
            .contains("sandbox off (network on; nothing enforced;"),
        "{}",
        off.stdout
    );
    let bad = run(sb.rounds().args(["tools", "-a", "nosuch"]));
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr.contains("unknown tool \"nosuch\""),
        "{}",
        bad.stderr
    );
}

#[test]
fn a_structured_error_longer_than_what_is_kept_is_still_an_error() {
    // The command's output is kept 8 KiB + 8 KiB in memory; a structured answer longer than
    // that used to be cut before it was parsed, and came back as a success.
    let tools = r#"
[[tool]]
name = "long_answer"
description = "Answers at length."
command = '''printf '{"content": "'; head -c 20000 /dev/zero | tr '\0' e; printf '", "is_error": %s}' "$(grep -q true && echo true || echo false)"'''
class = "safe"
input_schema = { type = "object", properties = { error = { type = "string" } } }
"#;
    // (the flag the command is given, exit code with --fail-on tool-error, is_error)
    for (flag, code, is_error) in [("true", 6, true), ("false", 0, false)] {
        let sb = Sandbox::new();
        std::fs::write(sb.path("tools.toml"), tools).unwrap();
        let input = json!({"error": flag}).to_string();
        let server = server(&[B::Tool("t1", "long_answer", &input)]);
        let out = run(sb
            .rounds()
            .env("ANTHROPIC_API_KEY", "k")
            .env("ANTHROPIC_BASE_URL", server.url())
            .arg("--tools-file")
            .arg(sb.path("tools.toml"))
            .args([
                "-a",
                "long_answer",
                "--fail-on",
                "tool-error",
                "--transcript",
            ])
            .arg(sb.transcript_path())
            .arg("go"));
        assert_eq!(out.code, code, "{flag}: {}", out.stderr);
        let result = &sb.transcript()[1]["results"][0];
        assert_eq!(result["is_error"], is_error, "{flag}: {result}");
        assert_eq!(
            result["content"].as_str().unwrap(),
            "e".repeat(20_000),
            "{flag}: the whole content, parsed"
        );
    }
}

/// Lists the directory named by `path`: whatever its path rule lets through, it shows.
const PEEK: &str = r#"
[[tool]]
name = "peek"
description = "Lists a directory."
command = ["python3", "-c", "import json, os, sys; print(' '.join(sorted(os.listdir(json.load(sys.stdin)['path']))))"]
class = "safe"
subject = "path"
"#;

/// Issue 17 §4: a command tool's path subject that left the workspace fell back to text
/// matching, where `*` matches `/` and `..`; so `peek(src/**)` let `src/../../outside` through.
/// A path that leaves it, lexically or through a symlink the kernel follows first, is now
/// denied by every path rule. CONTROL: allowed without a pattern, the same input lists the
/// outside directory.
#[test]
fn command_tool_path_rules_deny_paths_that_leave_the_workspace() {
    let sb = Sandbox::new();
    std::fs::write(sb.path("tools.toml"), PEEK).unwrap();
    let manifest = sb.path("tools.toml").display().to_string();
    let outside = sb.path("outside");
    std::fs::create_dir_all(outside.join("sub")).unwrap();
    std::fs::write(outside.join("OUTSIDE-MARKER"), "").unwrap();
    std::fs::write(outside.join("sub/SUB-MARKER"), "").unwrap();
    sb.write("src/lib/lib.rs", "");
    std::os::unix::fs::symlink("../../outside", sb.ws().join("src/out")).unwrap();
    std::os::unix::fs::symlink("../../outside/sub", sb.ws().join("src/deep")).unwrap();
    let absolute = outside.display().to_string();
    let climb = format!("src/{}{}", "../".repeat(30), &absolute[1..]);
    let through_link = format!("{}/src/out", sb.ws().display());
    let table = [
        ("src/../../outside", "OUTSIDE-MARKER"),
        (climb.as_str(), "OUTSIDE-MARKER"),
        (through_link.as_str(), "OUTSIDE-MARKER"),
        ("src/out", "OUTSIDE-MARKER"),
        ("src/out/sub", "SUB-MARKER"),
        // Lexically `src/sub`; the kernel follows `src/deep` first and lands outside.
        ("src/deep/../sub", "SUB-MARKER"),
    ];
    let call = |path: &str, allow: &str| {
        let input = json!({ "path": path }).to_string();
        let server = server(&[B::Tool("t1", "peek", &input)]);
        rounds(&sb, &server, &["--tools-file", &manifest, "-a", allow]).remove(0)
    };
    for (path, marker) in table {
        let result = call(path, "peek(src/**)");
        assert_eq!(result["error_kind"], "denied", "{path}: {result}");
        assert!(
            !result["content"].as_str().unwrap().contains(marker),
            "{path}: {result}"
        );
        let control = call(path, "peek");
        assert!(
            control["content"].as_str().unwrap().contains(marker),
            "CONTROL {path}: {control}"
        );
    }
    let inside = call("src/lib", "peek(src/**)");
    assert_eq!(inside["content"], "lib.rs\n", "{inside}");
}

/// The shipped `line_count` confines itself too: run with a pattern-less rule (nothing in
/// rounds stops the path), it refuses what leaves the workspace and still counts what is in it.
#[test]
fn the_example_line_count_refuses_paths_outside_the_workspace() {
    let sb = Sandbox::new();
    let outside = sb.path("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "1\n2\n3\n").unwrap();
    sb.write("src/a.rs", "fn a() {}\n");
    std::os::unix::fs::symlink("../../outside", sb.ws().join("src/out")).unwrap();
    std::os::unix::fs::symlink("../../outside/secret.txt", sb.ws().join("src/leak.txt")).unwrap();
    let absolute = outside.display().to_string();
    let count = |path: &str| {
        let input = json!({ "path": path }).to_string();
        let server = server(&[B::Tool("t1", "line_count", &input)]);
        rounds(&sb, &server, &["--tools-file", EXAMPLE, "-a", "line_count"]).remove(0)
    };
    for path in ["src/../../outside", absolute.as_str(), "src/out", ".."] {
        let result = count(path);
        assert_eq!(result["is_error"], true, "{path}: {result}");
        let said = result["content"].as_str().unwrap();
        assert!(
            said.contains("outside the workspace") && !said.contains("secret"),
            "{path}: {said}"
        );
    }
    // Inside, it counts; a file linked in from outside is not read.
    let result = count("src/../src");
    let said = result["content"].as_str().unwrap();
    assert_eq!(result["is_error"], false, "{result}");
    assert!(said.contains(".rs") && !said.contains("leak"), "{said}");
}
