//! A final answer in a schema (`--output-schema`): told to the model, or sent as the
//! provider's structured output; checked; corrected once; exit 7 when it still fails. And
//! `--output-last-message`.

use serde_json::{Value, json};

use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run};

const SCHEMA: &str = r#"{"type": "object", "properties": {"files": {"type": "integer", "minimum": 0}},
    "required": ["files"], "additionalProperties": false}"#;

fn answers(texts: &[&str]) -> MockServer {
    MockServer::start(
        texts
            .iter()
            .map(|t| Reply::sse(sse::anthropic(&[B::Text(t)], "end_turn", 5, 5)))
            .collect(),
    )
}

fn with_schema(sb: &Sandbox, server: &MockServer) -> crate::common::Run {
    std::fs::write(sb.path("schema.json"), SCHEMA).unwrap();
    run(sb
        .anthropic(server)
        .args(["-o", "json", "--output-schema"])
        .arg(sb.path("schema.json"))
        .arg("--transcript")
        .arg(sb.transcript_path())
        .arg("count the files"))
}

#[test]
fn a_valid_answer_completes_with_its_json_and_the_model_was_told_the_schema() {
    let sb = Sandbox::new();
    let server = answers(&["```json\n{\"files\": 3}\n```"]);
    let out = with_schema(&sb, &server);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["final_json"], json!({"files": 3}));
    let system = server.requests()[0].json()["system"].to_string();
    assert!(system.contains("must be only a JSON value"), "{system}");
    assert!(system.contains("additionalProperties"), "{system}");
}

#[test]
fn an_invalid_answer_gets_one_corrective_turn_then_exit_7() {
    // Corrected on the second try.
    let sb = Sandbox::new();
    let server = answers(&["There are 3 files.", "{\"files\": 3}"]);
    let out = with_schema(&sb, &server);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let second = server.requests()[1].json();
    let turn = second["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string();
    assert!(turn.contains("the final answer is not JSON"), "{turn}");
    assert!(turn.contains("Reply again"), "{turn}");

    // Wrong twice: status schema, exit 7, the errors in the end line.
    let sb = Sandbox::new();
    let server = answers(&["{\"files\": -1}", "{\"files\": \"three\"}", "never asked"]);
    let out = with_schema(&sb, &server);
    assert_eq!(out.code, 7, "{}", out.stderr);
    assert_eq!(server.requests().len(), 2, "one corrective turn only");
    let end = sb.transcript().pop().unwrap();
    assert_eq!(
        (end["status"].as_str(), end["exit_code"].as_i64()),
        (Some("schema"), Some(7))
    );
    let error = end["error"].as_str().unwrap();
    assert!(
        error.contains("/files") && error.contains("is not of type"),
        "{error}"
    );
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(v.get("final_json").is_none());

    // An unreadable schema is a usage error before any request.
    std::fs::write(sb.path("schema.json"), "{\"type\": 12}").unwrap();
    let server = answers(&["{}"]);
    let out = run(sb
        .anthropic(&server)
        .arg("--output-schema")
        .arg(sb.path("schema.json"))
        .arg("go"));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(server.requests().is_empty());
}

#[test]
fn openai_gets_the_schema_as_its_response_format_not_as_an_instruction() {
    let sb = Sandbox::new();
    std::fs::write(sb.path("schema.json"), SCHEMA).unwrap();
    let server = MockServer::start(vec![Reply::sse(sse::openai(
        &[B::Text("{\"files\": 2}")],
        "stop",
        5,
        5,
    ))]);
    let out = run(sb
        .rounds()
        .env("OPENAI_API_KEY", "k")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url()))
        .args(["-m", "openai/gpt-4.1", "--no-transcript", "--output-schema"])
        .arg(sb.path("schema.json"))
        .arg("count"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let body = server.requests()[0].json();
    assert_eq!(body["response_format"]["type"], "json_schema");
    let expected: Value = serde_json::from_str(SCHEMA).unwrap();
    assert_eq!(body["response_format"]["json_schema"]["schema"], expected);
    assert!(
        !body["messages"][0]["content"]
            .to_string()
            .contains("must be only a JSON value")
    );
}

#[test]
fn the_last_message_is_also_written_to_a_file() {
    let sb = Sandbox::new();
    let server = answers(&["the answer\nin two lines"]);
    let file = sb.path("answer.txt");
    let out = run(sb
        .anthropic(&server)
        .args(["--no-transcript", "--output-last-message"])
        .arg(&file)
        .arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "the answer\nin two lines"
    );
    // A file that cannot be written is a usage error before any model call: its directory is
    // made and opened before the run.
    let server = answers(&["x"]);
    let out = run(sb.anthropic(&server).args([
        "--no-transcript",
        "--output-last-message",
        "/proc/nope/answer.txt",
        "go",
    ]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(server.requests().is_empty());
    assert!(
        out.stderr.contains("--output-last-message"),
        "{}",
        out.stderr
    );
}
