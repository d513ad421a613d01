//! Attachments (issue 35): `--attach` files sent in each provider's own shape, recorded by
//! digest with their bytes kept beside the transcript, and every refusal made before any
//! request, each with the control that the same kind of file within the limit is sent.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, check_schema, run};

/// A PNG's signature and header chunk: what the type and the pixels are read from.
pub(super) fn png(width: u32, height: u32) -> Vec<u8> {
    let mut b = vec![0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13];
    b.extend_from_slice(b"IHDR");
    b.extend_from_slice(&width.to_be_bytes());
    b.extend_from_slice(&height.to_be_bytes());
    b.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
    b
}

pub(super) const PDF: &[u8] = b"%PDF-1.7\n1 0 obj << /Type /Page >> endobj\n%%EOF\n";

pub(super) fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub(super) fn hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub(super) fn files(sb: &Sandbox) {
    std::fs::write(sb.path("ws/shot.dat"), png(640, 480)).unwrap();
    std::fs::write(sb.path("ws/spec.pdf"), PDF).unwrap();
    sb.write("notes.md", "The build is red since Tuesday.\n");
}

#[test]
fn anthropic_gets_image_and_document_blocks_and_the_transcript_keeps_each_file_by_digest() {
    let sb = Sandbox::new();
    files(&sb);
    let server = MockServer::start(vec![sse::answer("a chart and a spec")]);
    let out = run(sb
        .anthropic(&server)
        .args([
            "-i", "shot.dat", "--attach", "spec.pdf", "--image", "notes.md",
        ])
        .arg("--transcript")
        .arg(sb.transcript_path())
        .arg("what do these show?"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let body = server.requests()[0].json();
    let content = &body["messages"][0]["content"];
    assert_eq!(
        content[0],
        json!({"source": {"data": base64(&png(640, 480)), "media_type": "image/png", "type": "base64"}, "type": "image"})
    );
    assert_eq!(
        content[1],
        json!({"source": {"data": base64(PDF), "media_type": "application/pdf", "type": "base64"}, "type": "document"})
    );
    // The text file is text, in the turn, before the prompt.
    let text = content[2]["text"].as_str().unwrap();
    let (file, prompt) = (
        text.find("The build is red since Tuesday.").unwrap(),
        text.find("what do these show?").unwrap(),
    );
    assert!(file < prompt, "{text}");
    // Recorded by digest, never inline; the bytes kept beside the transcript.
    let start = &sb.transcript()[0];
    check_schema(start);
    assert!(!start.to_string().contains(&base64(PDF)));
    let attached = start["attachments"].as_array().unwrap();
    assert_eq!(
        attached[0],
        json!({"path": "shot.dat", "type": "png", "bytes": 33, "sha256": hex(&png(640, 480)), "width": 640, "height": 480})
    );
    assert_eq!(attached[1]["type"], "pdf");
    assert_eq!(attached[1]["pages"], 1);
    assert_eq!(attached[2]["type"], "text");
    let kept = sb
        .path("t.outputs/attachments")
        .join(format!("{}.png", hex(&png(640, 480))));
    assert_eq!(std::fs::read(kept).unwrap(), png(640, 480));
}

/// Runs `args` against a mock that answers anything, and returns the exit code, stderr and
/// how many requests were made.
fn attempt(sb: &Sandbox, args: &[&str]) -> (i32, String, usize) {
    // Each wire's answer, by the path it asks.
    let server = MockServer::respond(|request| {
        if request.path.contains("chat/completions") {
            Reply::sse(sse::openai(&[B::Text("seen")], "stop", 1, 1))
        } else {
            sse::answer("seen")
        }
    });
    let local = args.contains(&"ollama/llava");
    let mut cmd = sb.anthropic(&server);
    if local {
        cmd.arg("--base-url").arg(format!("{}/v1", server.url()));
    }
    let out = run(cmd
        .env("GEMINI_API_KEY", "k")
        .args(["--no-transcript"])
        .args(args)
        .arg("look"));
    (out.code, out.stderr, server.requests().len())
}

#[test]
fn every_refusal_comes_before_any_request_and_names_the_file_and_the_limit() {
    let sb = Sandbox::new();
    std::fs::write(sb.path("ws/tool"), b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0").unwrap();
    std::fs::write(sb.path("ws/wide.png"), png(8001, 100)).unwrap();
    std::fs::write(sb.path("ws/edge.png"), png(8000, 100)).unwrap();
    let gif = b"GIF89a\x0a\x00\x14\x00\x00\x00\x00\x3b".to_vec();
    std::fs::write(sb.path("ws/still.gif"), &gif).unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["-i", "tool"], "--attach tool: not a file rounds attaches"),
        (
            &["-i", "missing.png"],
            "--attach missing.png: cannot read it",
        ),
        (
            &["-i", "wide.png"],
            "--attach wide.png: 8001×100 pixels, more than 8000 on a side (Anthropic limits)",
        ),
        (
            &["-m", "gemini/gemini-2.5-flash", "-i", "still.gif"],
            "--attach still.gif: image/gif images are not taken (Gemini limits)",
        ),
        (
            &["-m", "ollama/llava", "-i", "edge.png"],
            "ollama/llava is not known to take images or PDFs; if it does, give --vision",
        ),
    ];
    for (args, says) in cases {
        let mut args = args.to_vec();
        args.extend(["--max-rounds", "1"]);
        let (code, stderr, requests) = attempt(&sb, &args);
        assert_eq!((code, requests), (2, 0), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    // The controls: the same kinds of file within the limits are sent.
    for args in [
        &["-i", "edge.png"][..],
        &["-i", "still.gif"],
        &["-m", "ollama/llava", "--vision", "-i", "edge.png"],
    ] {
        let (code, stderr, requests) = attempt(&sb, args);
        assert_eq!((code, requests), (0, 1), "{args:?}: {stderr}");
    }
}

#[test]
fn a_project_file_cannot_attach_anything() {
    let sb = Sandbox::new();
    std::fs::write(sb.path("ws/secret.png"), png(10, 10)).unwrap();
    sb.write(".rounds.toml", "attach = [\"secret.png\"]\n");
    let server = MockServer::start(vec![sse::answer("ok")]);
    let out = run(sb.anthropic(&server).args(["--no-transcript", "look"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("attach"), "{}", out.stderr);
    let body: Value = server.requests()[0].json();
    let content = body["messages"][0]["content"].to_string();
    assert!(!content.contains("\"image\""), "{body}");
    // The control: the user's own settings file may.
    let sb = Sandbox::new();
    std::fs::write(sb.path("ws/mine.png"), png(10, 10)).unwrap();
    std::fs::create_dir_all(sb.path("home/.config/rounds")).unwrap();
    std::fs::write(
        sb.path("home/.config/rounds/config.toml"),
        "attach = [\"mine.png\"]\n",
    )
    .unwrap();
    let server = MockServer::start(vec![sse::answer("ok")]);
    let out = run(sb.anthropic(&server).args(["--no-transcript", "look"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let body: Value = server.requests()[0].json();
    assert_eq!(body["messages"][0]["content"][0]["type"], "image", "{body}");
}

#[test]
fn resume_sends_the_kept_files_again_and_refuses_ones_that_changed() {
    let sb = Sandbox::new();
    files(&sb);
    let server = MockServer::start(vec![sse::answer("a chart")]);
    let out = run(sb
        .anthropic(&server)
        .args(["-i", "shot.dat", "--transcript"])
        .arg(sb.transcript_path())
        .arg("what is it?"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    // The file itself may go: the run kept its bytes.
    std::fs::remove_file(sb.path("ws/shot.dat")).unwrap();
    let resume = |sb: &Sandbox| {
        let server = MockServer::start(vec![sse::answer("still a chart")]);
        let out = run(sb
            .anthropic(&server)
            .args(["--no-transcript", "--resume"])
            .arg(sb.transcript_path())
            .arg("and now?"));
        (out, server)
    };
    let (out, server) = resume(&sb);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let first = &server.requests()[0].json()["messages"][0]["content"];
    assert_eq!(first[0]["source"]["data"], base64(&png(640, 480)));
    assert_eq!(first[0]["type"], "image");
    // A kept file that is not the one recorded is refused, before any request.
    let kept = sb
        .path("t.outputs/attachments")
        .join(format!("{}.png", hex(&png(640, 480))));
    std::fs::write(&kept, png(641, 480)).unwrap();
    let (out, server) = resume(&sb);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("its attachment shot.dat is not kept beside it as recorded"),
        "{}",
        out.stderr
    );
    assert_eq!(server.requests().len(), 0);
    // And one that is gone.
    std::fs::remove_file(&kept).unwrap();
    let (out, _) = resume(&sb);
    assert_eq!(out.code, 2, "{}", out.stderr);
}

#[test]
fn read_file_shows_an_image_to_a_model_that_takes_images_and_a_note_to_one_that_does_not() {
    let sb = Sandbox::new();
    std::fs::write(sb.path("ws/chart.png"), png(300, 200)).unwrap();
    let look = Reply::sse(sse::anthropic(
        &[B::Tool("t1", "read_file", r#"{"path":"chart.png"}"#)],
        "tool_use",
        10,
        5,
    ));
    let server = MockServer::start(vec![look, sse::answer("a bar chart")]);
    let out = run(sb
        .anthropic(&server)
        .arg("--transcript")
        .arg(sb.transcript_path())
        .arg("what is chart.png?"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    // The model is told it can look.
    let says = "A PNG, JPEG, GIF or WebP image is shown to you as an image.";
    let first = server.requests()[0].json();
    assert!(
        first["tools"][0]["description"]
            .as_str()
            .unwrap()
            .ends_with(says)
    );
    let second = server.requests()[1].json();
    let result = &second["messages"][2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["content"][1]["type"], "image");
    assert_eq!(
        result["content"][1]["source"]["data"],
        base64(&png(300, 200))
    );
    // Recorded by digest in the round's result, its bytes kept beside the transcript.
    let lines = sb.transcript();
    lines.iter().for_each(check_schema);
    let recorded = &lines[1]["results"][0];
    assert_eq!(recorded["media"][0]["sha256"], hex(&png(300, 200)));
    assert!(!lines[1].to_string().contains(&base64(&png(300, 200))));
    let kept = sb
        .path("t.outputs/attachments")
        .join(format!("{}.png", hex(&png(300, 200))));
    assert_eq!(std::fs::read(kept).unwrap(), png(300, 200));
    // A resumed run sends the image again with its result.
    let again = MockServer::start(vec![sse::answer("still a bar chart")]);
    let out = run(sb
        .anthropic(&again)
        .args(["--no-transcript", "--resume"])
        .arg(sb.transcript_path())
        .arg("and the colours?"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let resent = &again.requests()[0].json()["messages"][2]["content"][0]["content"][1];
    assert_eq!(resent["source"]["data"], base64(&png(300, 200)));

    // A local model, not known to take images: the note, and no image sent.
    let local = MockServer::start(vec![
        Reply::sse(sse::openai(
            &[B::Tool("t1", "read_file", r#"{"path":"chart.png"}"#)],
            "tool_calls",
            10,
            5,
        )),
        Reply::sse(sse::openai(&[B::Text("cannot see it")], "stop", 10, 5)),
    ]);
    let out = run(sb
        .rounds()
        .args(["-m", "ollama/qwen3", "--no-transcript", "--base-url"])
        .arg(format!("{}/v1", local.url()))
        .arg("what is chart.png?"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let second = local.requests()[1].json();
    let tool = &second["messages"][3];
    assert_eq!(tool["role"], "tool", "{second}");
    assert!(
        tool["content"]
            .as_str()
            .unwrap()
            .contains("an image (image/png) this model is not known to take"),
        "{tool}"
    );
    assert!(!second.to_string().contains("data:image/png"));
    // And it was not told it could look: its first request is as it always was.
    let first = local.requests()[0].json();
    assert!(!first.to_string().contains(says));
}

#[test]
fn the_html_page_shows_attached_and_looked_at_images_inline_under_its_csp() {
    let sb = Sandbox::new();
    files(&sb);
    std::fs::write(sb.path("ws/chart.png"), png(300, 200)).unwrap();
    let look = Reply::sse(sse::anthropic(
        &[B::Tool("t1", "read_file", r#"{"path":"chart.png"}"#)],
        "tool_use",
        10,
        5,
    ));
    let server = MockServer::start(vec![look, sse::answer("seen")]);
    let out = run(sb
        .anthropic(&server)
        .args(["-i", "shot.dat", "-i", "spec.pdf", "--transcript"])
        .arg(sb.transcript_path())
        .arg("compare"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let page = run(sb
        .rounds()
        .args(["show", "--html", "-"])
        .arg(sb.transcript_path()));
    assert_eq!(page.code, 0, "{}", page.stderr);
    let html = &page.stdout;
    assert!(
        html.contains("img-src data:"),
        "the CSP allows data: images"
    );
    for image in [png(640, 480), png(300, 200)] {
        let url = format!("data:image/png;base64,{}", base64(&image));
        assert!(html.contains(&format!("<img src=\"{url}\"")), "{html}");
    }
    assert!(
        html.contains("spec.pdf (application/pdf, 48 bytes)"),
        "{html}"
    );
    // The control: without the kept bytes, the image is named, not shown.
    std::fs::remove_dir_all(sb.path("t.outputs/attachments")).unwrap();
    let page = run(sb
        .rounds()
        .args(["show", "--html", "-"])
        .arg(sb.transcript_path()));
    assert!(!page.stdout.contains("<img "), "{}", page.stdout);
    assert!(
        page.stdout
            .contains("shot.dat (image/png, 33 bytes, 640×480) (not shown")
    );
}

#[test]
fn a_recorded_run_with_attachments_replays() {
    let sb = Sandbox::new();
    files(&sb);
    let server = MockServer::start(vec![sse::answer("a chart and a spec")]);
    let out = run(sb
        .anthropic(&server)
        .args(["-i", "shot.dat", "-i", "spec.pdf", "--transcript"])
        .arg(sb.transcript_path())
        .arg("what are these?"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let replay = format!("replay:{}", sb.transcript_path().display());
    let out = run(sb
        .rounds()
        .args(["-m", &replay, "-o", "json", "--no-transcript"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["final_text"], "a chart and a spec");
}

#[test]
fn a_batch_job_line_attaches_its_own_files() {
    let sb = Sandbox::new();
    std::fs::write(sb.path("ws/one.png"), png(10, 10)).unwrap();
    sb.write(
        "jobs.jsonl",
        "{\"id\": \"a\", \"prompt\": \"look\", \"attach\": [\"one.png\"]}\n{\"id\": \"b\", \"prompt\": \"plain\"}\n",
    );
    let server = MockServer::respond(|_| sse::answer("ok"));
    let out =
        run(sb
            .anthropic(&server)
            .args(["batch", "jobs.jsonl", "--out", "results", "--jobs", "1"]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let bodies: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.json()["messages"][0]["content"].to_string())
        .collect();
    let with = bodies
        .iter()
        .filter(|b| b.contains(&base64(&png(10, 10))))
        .count();
    assert_eq!((bodies.len(), with), (2, 1), "{bodies:?}");
}

#[test]
fn a_stores_export_keeps_the_attachments_and_a_results_images() {
    let Some(base) = crate::common::pg::server() else {
        return;
    };
    let schema = crate::common::pg::Schema::new(base);
    let sb = Sandbox::new();
    files(&sb);
    std::fs::write(sb.path("ws/chart.png"), png(300, 200)).unwrap();
    let look = Reply::sse(sse::anthropic(
        &[B::Tool("t1", "read_file", r#"{"path":"chart.png"}"#)],
        "tool_use",
        10,
        5,
    ));
    let server = MockServer::start(vec![look, sse::answer("seen")]);
    let out = run(sb
        .anthropic(&server)
        .args([
            "-i",
            "shot.dat",
            "-i",
            "spec.pdf",
            "--store",
            &schema.url,
            "--transcript",
        ])
        .arg(sb.transcript_path())
        .arg("compare"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = sb.transcript();
    let id = lines[0]["run_id"].as_str().unwrap();
    let exported = run(sb.rounds().args(["export", "--store", &schema.url, id]));
    assert_eq!(exported.code, 0, "{}", exported.stderr);
    assert_eq!(crate::common::parse_lines(&exported.stdout), lines);
    assert_eq!(lines[0]["attachments"].as_array().unwrap().len(), 2);
    assert_eq!(lines[1]["results"][0]["media"][0]["width"], 300);
}
