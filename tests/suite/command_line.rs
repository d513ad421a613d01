//! rounds' command line as its tools see it (issue 31): `/proc/<rounds>/cmdline` is readable by
//! every process, sandboxed tools included, and a probe read the key file's path there, then had
//! a tool encode the file past the redactor. The values of `--api-key-file` and `--store` are
//! starred in rounds' command line before anything runs; the control is a flag whose value is
//! no secret (`--transcript`), which a tool still reads there.

use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, read_jsonl, run};

/// What the one bash call printed: every command line of the machine that mentions `tag`.
fn tool_output(transcript: &std::path::Path) -> String {
    let lines = read_jsonl(transcript);
    let round = lines
        .iter()
        .find(|l| l["type"] == "round")
        .expect("a round line");
    round["results"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_key_files_path_is_not_in_rounds_command_line_where_tools_can_read_it() {
    let sb = Sandbox::new();
    let tag = format!("argvtag{}", std::process::id());
    let secrets = sb.path(&format!("{tag}-keydir"));
    std::fs::create_dir_all(&secrets).unwrap();
    let key_file = secrets.join("anthropic.key");
    std::fs::write(&key_file, "sk-ant-argv-test-key-0123456789\n").unwrap();
    let transcript = sb.path(&format!("{tag}-transcript.jsonl"));
    let command = format!(
        "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < \"$f\"; echo; done | grep -- '--transcript' | grep {tag} || true"
    );
    let input = serde_json::json!({ "command": command }).to_string();
    let server = MockServer::start(vec![
        Reply::sse(sse::anthropic(
            &[B::Tool("t1", "bash", &input)],
            "tool_use",
            1,
            1,
        )),
        sse::answer("done"),
    ]);
    let out = run(sb
        .rounds()
        .env("ANTHROPIC_BASE_URL", server.url())
        .arg("--api-key-file")
        .arg(&key_file)
        .args(["--full-auto", "--transcript"])
        .arg(&transcript)
        .arg("look"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    // The key was read from the file: the flag did its work.
    assert!(
        server.requests()[0]
            .headers
            .iter()
            .any(|(k, v)| k == "x-api-key" && v == "sk-ant-argv-test-key-0123456789"),
        "the key file's key must be sent"
    );
    let seen = tool_output(&transcript);
    // The control: the tool did read rounds' command line (the transcript's path is there).
    assert!(
        seen.contains(&format!("{tag}-transcript.jsonl")),
        "the tool must see rounds' command line: {seen}"
    );
    assert!(seen.contains("--api-key-file ***"), "{seen}");
    assert!(
        !seen.contains("keydir"),
        "the key file's path is visible: {seen}"
    );
}
