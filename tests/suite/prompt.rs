//! What every request starts with (issue 16): the system prompt and the tool definitions are the
//! same bytes for every run with the same flags, whatever the workspace, so a server's prefix
//! cache (llama.cpp's slot, OpenAI's automatic caching) hits across runs; and the first request
//! stays small, since a small local model evaluates every token of it.

use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run};
use pretty_assertions::assert_eq;
use serde_json::Value;

/// The raw first request body of a run of `model` in a fresh workspace, with `flags`, and the
/// workspace's path.
fn first_request(model: &str, flags: &[&str]) -> (String, String) {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let anthropic = model.starts_with("anthropic/");
    let reply = if anthropic {
        sse::answer("ok")
    } else {
        Reply::sse(sse::openai(&[B::Text("ok")], "stop", 5, 1))
    };
    let server = MockServer::start(vec![reply]);
    let base = if anthropic {
        server.url()
    } else {
        format!("{}/v1", server.url())
    };
    let out = run(sb
        .rounds()
        .env("ANTHROPIC_API_KEY", "k")
        .args(["-m", model, "--base-url", &base, "--no-transcript"])
        .args(flags)
        .arg("What does a.txt say?"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let body = String::from_utf8(server.requests()[0].body.clone()).unwrap();
    (body, sb.ws().display().to_string())
}

/// The body up to its first user message, byte for byte.
fn prefix(body: &str) -> &str {
    let json: Value = serde_json::from_str(body).unwrap();
    let first_user = json["messages"]
        .as_array()
        .unwrap()
        .iter()
        .position(|m| m["role"] == "user")
        .expect("a user message");
    let start = body.find(r#""messages":["#).expect("messages") + r#""messages":["#.len();
    // Walk the array's elements (strings may hold brackets) to the first user message.
    let (mut depth, mut in_string, mut escaped, mut element) = (0, false, false, 0);
    for (i, c) in body[start..].char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' => {
                if depth == 0 && element == first_user {
                    return &body[..start + i];
                }
                depth += 1;
            }
            '}' | ']' => depth -= 1,
            ',' if depth == 0 => element += 1,
            _ => {}
        }
    }
    panic!("no user message in {body}")
}

#[test]
fn the_prefix_up_to_the_first_user_message_is_the_same_in_every_workspace() {
    for model in ["anthropic/claude-sonnet-4-5", "llamacpp/qwen"] {
        for flags in [&[][..], &["-a", "bash", "-a", "write_file"][..]] {
            let (one, ws_one) = first_request(model, flags);
            let (two, ws_two) = first_request(model, flags);
            assert_ne!(ws_one, ws_two);
            assert_eq!(prefix(&one), prefix(&two), "{model} {flags:?}");
            // The prefix holds the system prompt and the tools; the workspace comes after it.
            let json: Value = serde_json::from_str(&one).unwrap();
            assert!(json["tools"].as_array().unwrap().len() >= 4);
            assert!(prefix(&one).contains("You are rounds"), "{model}");
            assert!(!prefix(&one).contains(&ws_one), "{model}");
            assert!(one[prefix(&one).len()..].contains(&format!("Workspace root: {ws_one}")));
            assert_ne!(one, two, "the control: the bodies differ after the prefix");
        }
    }
}

/// A request body's tokens, estimated as a quarter of its bytes. The local models' tokenizers
/// are not at hand in the suite; OpenAI's o200k_base, counted outside it (tiktoken-rs, which as
/// a dev-dependency would change the features of a normal dependency), gives 5 to 10% fewer
/// for these bodies, so the estimate errs on the large side.
fn tokens(body: &str) -> usize {
    body.len() / 4
}

#[test]
fn the_first_request_fits_the_prompt_budget() {
    let (four, _) = first_request("llamacpp/qwen", &[]);
    let all = ["-a", "write_file", "-a", "edit_file", "-a", "bash"];
    let (seven, _) = first_request("llamacpp/qwen", &all);
    let count = |body: &str| {
        let json: Value = serde_json::from_str(body).unwrap();
        json["tools"].as_array().unwrap().len()
    };
    assert_eq!((count(&four), count(&seven)), (4, 7));
    // The whole body: system prompt, tool definitions, the first user turn and the framing.
    assert!(
        tokens(&four) <= 900,
        "four tools: {} tokens (bytes/4)\n{four}",
        tokens(&four)
    );
    assert!(
        tokens(&seven) <= 1300,
        "seven tools: {} tokens (bytes/4)\n{seven}",
        tokens(&seven)
    );
}
