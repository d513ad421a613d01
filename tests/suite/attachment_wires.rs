//! Attachments (issue 35) on every other wire, end to end against each one's loopback
//! stand-in: OpenAI Chat and Responses, Azure, Gemini, Bedrock (signed) and Vertex (both
//! families), each in its own shape.

use serde_json::json;

use super::attachments::{PDF, base64, files, png};
use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run};

#[test]
fn responses_azure_and_bedrock_get_their_own_shapes_end_to_end() {
    let sb = Sandbox::new();
    files(&sb);
    let image = base64(&png(640, 480));
    // OpenAI's Responses API.
    let server = MockServer::start(vec![Reply::sse(sse::responses(&[B::Text("ok")], 1, 1, 0))]);
    let out = run(sb
        .rounds()
        .env("OPENAI_API_KEY", "k")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url()))
        .args([
            "-m",
            "openai/gpt-4.1",
            "--api",
            "responses",
            "--no-transcript",
        ])
        .args(["-i", "shot.dat", "-i", "spec.pdf", "look"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let content = &server.requests()[0].json()["input"][0]["content"];
    assert_eq!(
        content[0],
        json!({"type": "input_image", "detail": "auto", "image_url": format!("data:image/png;base64,{image}")})
    );
    assert_eq!(content[1]["type"], "input_file");
    assert_eq!(content[1]["filename"], "spec.pdf");
    // Azure OpenAI: Chat Completions' parts, on the deployment's URL.
    let server = MockServer::start(vec![Reply::sse(sse::openai(
        &[B::Text("ok")],
        "stop",
        1,
        1,
    ))]);
    let out = run(sb
        .rounds()
        .env("AZURE_OPENAI_API_KEY", "azure-key-123456")
        .env("AZURE_OPENAI_ENDPOINT", server.url())
        .args([
            "-m",
            "azure/dep-1",
            "--no-transcript",
            "-i",
            "shot.dat",
            "look",
        ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let request = &server.requests()[0];
    assert!(request.path.starts_with("/openai/"), "{}", request.path);
    let parts = &request.json()["messages"][1]["content"];
    assert_eq!(parts[0]["type"], "image_url", "{parts}");
    // Bedrock Converse, signed: image and document blocks.
    let mock = crate::common::bedrock::AwsMock::start(vec![crate::common::bedrock::response(
        "ok",
        &[],
        "end_turn",
        (1, 1),
    )]);
    mock.accept("AKIAATTACHEXAMPLE", "attach-secret-access-key", None);
    let out = run(sb
        .rounds()
        .env("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", mock.url())
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_ACCESS_KEY_ID", "AKIAATTACHEXAMPLE")
        .env("AWS_SECRET_ACCESS_KEY", "attach-secret-access-key")
        .env("AWS_REGION", "eu-west-1")
        .args(["-m", "bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0"])
        .args([
            "--no-transcript",
            "-i",
            "shot.dat",
            "-i",
            "spec.pdf",
            "look",
        ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let body = mock.model_requests()[0].json();
    let content = &body["messages"][0]["content"];
    assert_eq!(
        content[0],
        json!({"image": {"format": "png", "source": {"bytes": image}}})
    );
    assert_eq!(content[1]["document"]["name"], "spec");
    assert_eq!(content[1]["document"]["format"], "pdf");
}

#[test]
fn vertex_sends_each_familys_shape_and_refuses_a_gif_only_for_gemini() {
    use crate::common::vertex::{Google, key_file, write_json};
    let sb = Sandbox::new();
    files(&sb);
    let gif = b"GIF89a\x0a\x00\x14\x00\x00\x00\x00\x3b".to_vec();
    std::fs::write(sb.path("ws/still.gif"), &gif).unwrap();
    let vertex = |google: &Google, model: &str, files: &[&str]| {
        let key = sb.path("key.json");
        write_json(&key, &key_file(&google.url()));
        let mut cmd = sb.rounds();
        cmd.env("GOOGLE_APPLICATION_CREDENTIALS", &key)
            .env("GOOGLE_CLOUD_PROJECT", "p")
            .env("CLOUD_ML_REGION", "us-east5")
            .args(["--base-url", &google.url(), "-m", model, "--no-transcript"]);
        for f in files {
            cmd.args(["-i", f]);
        }
        run(cmd.arg("look"))
    };
    let google = Google::start(vec![sse::answer("ok")], 3600, std::time::Duration::ZERO);
    let out = vertex(
        &google,
        "vertex/claude-sonnet-4-5@20250929",
        &["shot.dat", "still.gif"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let content = &google.model_requests()[0].json()["messages"][0]["content"];
    assert_eq!(content[0]["type"], "image");
    assert_eq!(content[1]["source"]["media_type"], "image/gif");

    let google = Google::start(
        vec![Reply::sse(sse::gemini(&[B::Text("ok")], 1, 1))],
        3600,
        std::time::Duration::ZERO,
    );
    let out = vertex(&google, "vertex/gemini-2.5-pro", &["shot.dat"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let parts = &google.model_requests()[0].json()["contents"][0]["parts"];
    assert_eq!(parts[0]["inlineData"]["mimeType"], "image/png");
    // Gemini takes no GIF: refused before any request.
    let google = Google::start(vec![], 3600, std::time::Duration::ZERO);
    let out = vertex(&google, "vertex/gemini-2.5-pro", &["still.gif"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("(Vertex AI (Gemini) limits)"),
        "{}",
        out.stderr
    );
    assert_eq!(google.model_requests().len(), 0);
}

#[test]
fn openai_and_gemini_get_their_own_shapes() {
    let sb = Sandbox::new();
    files(&sb);
    let server = MockServer::start(vec![Reply::sse(sse::openai(
        &[B::Text("ok")],
        "stop",
        1,
        1,
    ))]);
    let out = run(sb
        .rounds()
        .env("OPENAI_API_KEY", "k")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url()))
        .args([
            "-m",
            "openai/gpt-4.1",
            "--no-transcript",
            "-i",
            "shot.dat",
            "-i",
            "spec.pdf",
        ])
        .arg("look"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let content = &server.requests()[0].json()["messages"][1]["content"];
    assert_eq!(
        content[0],
        json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{}", base64(&png(640, 480)))}})
    );
    assert_eq!(
        content[1],
        json!({"type": "file", "file": {"file_data": format!("data:application/pdf;base64,{}", base64(PDF)), "filename": "spec.pdf"}})
    );
    assert_eq!(content[2], json!({"type": "text", "text": sb.turn("look")}));

    let server = MockServer::start(vec![Reply::sse(sse::gemini(&[B::Text("ok")], 1, 1))]);
    let out = run(sb
        .rounds()
        .env("GEMINI_API_KEY", "k")
        .env("GEMINI_BASE_URL", server.url())
        .args([
            "-m",
            "gemini/gemini-2.5-flash",
            "--no-transcript",
            "-i",
            "shot.dat",
        ])
        .arg("look"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let parts = &server.requests()[0].json()["contents"][0]["parts"];
    assert_eq!(
        parts[0],
        json!({"inlineData": {"mimeType": "image/png", "data": base64(&png(640, 480))}})
    );
}
