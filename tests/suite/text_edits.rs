//! Edits a small model wrote as text (issue 37): on a local server, an answer with the fixed
//! code in a block is the `edit_file` call it stands for, run through the same pipeline (a hook
//! sees it and can veto it); a hosted model's answer stays an answer; and when a check fails
//! after an answer that showed code, the model is told that no file changed.

use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Run, Sandbox, run};
use pretty_assertions::assert_eq;
use serde_json::Value;

const BUGGY: &str = "def shout(s):\n    \"\"\"In capitals.\"\"\"\n    return s.lower() + \"!\"\n";
const ANSWER: &str = "The bug is in `strutil.py`. Here is the corrected function:\n\n```python\ndef shout(s):\n    return s.upper() + \"!\"\n```\n";
const FIXED: &str = "def shout(s):\n    return s.upper() + \"!\"\n";

/// `model` answers `first` (text only), then "done"; the run may edit files.
fn answer_then_done(sb: &Sandbox, model: &str, first: &str, extra: &[&str]) -> (Run, MockServer) {
    sb.write("strutil.py", BUGGY);
    let server = MockServer::start(vec![
        Reply::sse(sse::openai(&[B::Text(first)], "stop", 10, 5)),
        Reply::sse(sse::openai(&[B::Text("done")], "stop", 10, 1)),
        Reply::sse(sse::openai(&[B::Text("done again")], "stop", 10, 1)),
    ]);
    let out = run(sb
        .rounds()
        .env("OPENAI_API_KEY", "k")
        .args(["-m", model, "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .args(["-a", "edit_file,bash", "--transcript"])
        .arg(sb.transcript_path())
        .args(extra)
        .arg("Fix strutil.py so that shout('hi') is 'HI!'."));
    (out, server)
}

fn read(sb: &Sandbox, rel: &str) -> String {
    std::fs::read_to_string(sb.ws().join(rel)).unwrap()
}

fn body(server: &MockServer, n: usize) -> String {
    String::from_utf8(server.requests()[n].body.clone()).unwrap()
}

#[test]
fn code_in_a_local_models_answer_is_the_edit_it_stands_for() {
    let sb = Sandbox::new();
    let (out, server) = answer_then_done(&sb, "llamacpp/qwen", ANSWER, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "done");
    assert_eq!(read(&sb, "strutil.py"), FIXED);
    let round = &sb.transcript()[1];
    let blocks = round["blocks"].as_array().unwrap();
    assert_eq!(blocks[0]["text"], ANSWER, "the model's words are kept");
    let call = &blocks[1];
    assert_eq!(call["name"], "edit_file");
    assert_eq!(call["id"], "edit_from_text_1_1");
    assert_eq!(call["input"]["path"], "strutil.py");
    assert_eq!(call["input"]["old_string"], BUGGY.trim_end());
    let result = &round["results"][0];
    assert_eq!(result["is_error"], false, "{result}");
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .starts_with("edited strutil.py")
    );
    assert_eq!(round["stop_reason"], "tool_use");
    // The model is told what happened, as for any call of its own.
    assert_eq!(server.requests().len(), 2);
    let next: Value = serde_json::from_str(&body(&server, 1)).unwrap();
    let messages = next["messages"].as_array().unwrap();
    let told = messages.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(told["tool_call_id"], "edit_from_text_1_1");
    assert!(
        told["content"]
            .as_str()
            .unwrap()
            .contains("edited strutil.py")
    );
}

#[test]
fn a_hosted_models_answer_or_a_run_without_edit_file_stays_an_answer() {
    for (model, allow) in [
        // The control is the test above: the same answer on llama.cpp edits the file.
        ("openai/gpt-4.1", "edit_file,bash"),
        ("llamacpp/qwen", "bash"),
    ] {
        let sb = Sandbox::new();
        sb.write("strutil.py", BUGGY);
        let server = MockServer::start(vec![Reply::sse(sse::openai(
            &[B::Text(ANSWER)],
            "stop",
            10,
            5,
        ))]);
        let out = run(sb
            .rounds()
            .env("OPENAI_API_KEY", "k")
            .args(["-m", model, "--base-url"])
            .arg(format!("{}/v1", server.url()))
            .args(["-a", allow])
            .arg("Fix strutil.py."));
        assert_eq!(out.code, 0, "{model}: {}", out.stderr);
        assert_eq!(out.stdout.trim(), ANSWER.trim(), "{model}");
        assert_eq!(read(&sb, "strutil.py"), BUGGY, "{model}");
        assert_eq!(server.requests().len(), 1, "{model}");
    }
}

#[test]
fn a_pre_tool_hook_sees_a_text_edit_and_can_veto_it() {
    let sb = Sandbox::new();
    let hook = r#"cat > seen.json; if grep -q edit_file seen.json; then echo "no edits today" >&2; exit 2; fi"#;
    let (out, _server) = answer_then_done(&sb, "llamacpp/qwen", ANSWER, &["--pre-tool-hook", hook]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(read(&sb, "strutil.py"), BUGGY, "the veto held");
    let seen: Value = serde_json::from_str(&read(&sb, "seen.json")).unwrap();
    assert_eq!(seen["tool"], "edit_file");
    assert_eq!(seen["id"], "edit_from_text_1_1");
    let result = &sb.transcript()[1]["results"][0];
    assert_eq!(result["error_kind"], "vetoed", "{result}");
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("no edits today")
    );
}

#[test]
fn a_failed_check_after_an_answer_with_code_says_no_file_changed() {
    let note = "Your last answer had code in it, but no file changed";
    for (first, told) in [
        (ANSWER, true),
        // The control: an answer without code gets the plain check turn.
        ("I think it is fixed now.", false),
    ] {
        let sb = Sandbox::new();
        // A hosted model: its code is not applied, so the check still fails.
        let (out, server) = answer_then_done(
            &sb,
            "openai/gpt-4.1",
            first,
            &["--check", "exit 1", "--max-checks", "2"],
        );
        assert_eq!(out.code, 11, "{}", out.stderr);
        let turn = body(&server, 1);
        assert!(turn.contains("The check the user set"), "{turn}");
        assert_eq!(turn.contains(note), told, "{first}: {turn}");
        if told {
            assert!(turn.contains("with edit_file"), "{turn}");
        }
    }
}
