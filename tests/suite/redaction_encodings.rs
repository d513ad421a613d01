//! Redaction that an encoding or an echo cannot undo: a tool prints the key encoded (base64,
//! base64url, hex, URL encoding, reversed) and the model writes it back decoded, in its answer
//! (split between two deltas), its thinking and a tool call; a provider's error body quotes the
//! key. The key must appear nowhere rounds writes: stdout in every `-o` mode, stderr, the
//! transcript, the step summary, the last-message file, the requests after the first. The
//! controls run the same script with a value that is not a secret, which does appear.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};

use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Run, Sandbox, run};
use pretty_assertions::assert_eq;
use serde_json::json;

const KEY: &str = "sk-ant-api03-EncodedEcho_0123456789abcdefGHIJKLMNOPqrstuvwxyz-0000AA";
const PLAIN: &str = "plain-value-EncodedEcho_0123456789abcdefGHIJKLMNOPqrstuvwxyz-0000A";

/// What a tool prints for `value`: each encoding a shell has at hand, at several alignments.
fn encoded(value: &str) -> String {
    let file = format!("{value}\n");
    let hex: String = value.bytes().map(|b| format!("{b:02x}")).collect();
    let url: String = value
        .bytes()
        .map(|b| format!("%{b:02X}"))
        .collect::<String>();
    [
        // `base64 key.txt`: wrapped at 76 columns.
        wrap(&STANDARD.encode(&file), 76),
        STANDARD.encode(format!("x{value}")),
        STANDARD.encode(format!("xy{value}")),
        URL_SAFE_NO_PAD.encode(format!("k={value}")),
        hex.clone(),
        hex.to_uppercase(),
        url,
        value.chars().rev().collect(),
    ]
    .join("\n")
}

fn wrap(s: &str, width: usize) -> String {
    s.as_bytes()
        .chunks(width)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Round 1 prints the encodings; round 2 thinks, says and runs the decoded value; round 3
/// answers with it, split between two deltas.
fn script(value: &str) -> MockServer {
    let cat = json!({"command": "cat enc.txt"}).to_string();
    let echo = json!({"command": format!("echo {value} >/dev/null")}).to_string();
    let thought = format!("decoded: {value}");
    let said = format!("it is {value} ok");
    let answer = format!("The key is {value} (decoded)");
    MockServer::start(vec![
        Reply::sse(sse::anthropic(
            &[B::Tool("c1", "bash", &cat)],
            "tool_use",
            10,
            5,
        )),
        Reply::sse(sse::anthropic(
            &[
                B::Thinking(&thought, "sig"),
                B::Text(&said),
                B::Tool("c2", "bash", &echo),
            ],
            "tool_use",
            10,
            5,
        )),
        Reply::sse(sse::anthropic(&[B::Text(&answer)], "end_turn", 10, 5)),
    ])
}

/// Everything one run wrote, by name.
struct Written {
    all: Vec<(String, String)>,
}

impl Written {
    fn holding(&self, needle: &str) -> Vec<&str> {
        self.all
            .iter()
            .filter(|(_, text)| text.contains(needle))
            .map(|(name, _)| name.as_str())
            .collect()
    }
}

/// Runs the script for `value` with `-o mode`, the key `key` in the environment.
fn run_mode(value: &str, key: &str, mode: &str) -> (Run, Written) {
    let sb = Sandbox::new();
    sb.write("enc.txt", &encoded(value));
    let server = script(value);
    let summary = sb.path("summary.md");
    let last = sb.path("last.txt");
    let out = run(sb
        .rounds()
        .env("ANTHROPIC_API_KEY", key)
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("GITHUB_STEP_SUMMARY", &summary)
        .args(["-a", "bash", "-o", mode, "--transcript"])
        .arg(sb.transcript_path())
        .arg("--output-last-message")
        .arg(&last)
        .arg("decode it"));
    let read = |p: &std::path::Path| std::fs::read_to_string(p).unwrap_or_default();
    let mut all = vec![
        ("stdout".to_owned(), out.stdout.clone()),
        ("stderr".to_owned(), out.stderr.clone()),
        ("transcript".to_owned(), read(&sb.transcript_path())),
        ("step summary".to_owned(), read(&summary)),
        ("last message".to_owned(), read(&last)),
    ];
    // The first request carries the key in its header only; later ones carry the conversation.
    for (i, r) in server.requests().iter().enumerate() {
        all.push((
            format!("request {i}"),
            String::from_utf8_lossy(&r.body).into_owned(),
        ));
    }
    assert_eq!(server.requests().len(), 3, "{}", out.stderr);
    (out, Written { all })
}

#[test]
fn an_encoded_key_the_model_decodes_appears_nowhere_in_any_output_mode() {
    for mode in ["text", "json", "stream-json"] {
        let (out, written) = run_mode(KEY, KEY, mode);
        assert_eq!(out.code, 0, "{mode}: {}", out.stderr);
        assert_eq!(written.holding(KEY), Vec::<&str>::new(), "{mode}");
        // Nor any encoding of it: the transcript keeps the tool's output redacted.
        for line in encoded(KEY).lines() {
            let piece = &line[2..line.len().min(30)];
            assert_eq!(written.holding(piece), Vec::<&str>::new(), "{mode}: {line}");
        }
        assert!(
            written
                .holding("[REDACTED:ANTHROPIC_API_KEY]")
                .contains(&"transcript"),
            "{mode}"
        );
        assert!(
            written
                .holding("[REDACTED:ANTHROPIC_API_KEY]")
                .contains(&"last message")
        );
    }
}

#[test]
fn the_same_script_with_a_value_that_is_no_secret_shows_it_everywhere() {
    for mode in ["text", "json", "stream-json"] {
        let (out, written) = run_mode(PLAIN, KEY, mode);
        assert_eq!(out.code, 0, "{mode}: {}", out.stderr);
        let holding = written.holding(PLAIN);
        for place in [
            "stdout",
            "transcript",
            "step summary",
            "last message",
            "request 2",
        ] {
            assert!(
                holding.contains(&place),
                "{mode}: {place} lacks it: {holding:?}"
            );
        }
        assert!(written.holding("[REDACTED").is_empty(), "{mode}");
    }
}

#[test]
fn a_provider_error_quoting_the_key_is_redacted_wherever_it_is_shown() {
    for (key, redacted) in [(KEY, true), (PLAIN, false)] {
        let sb = Sandbox::new();
        let body = json!({"type":"error","error":{"type":"invalid_request_error",
            "message": format!("invalid x-api-key: {key}")}})
        .to_string();
        let server = MockServer::start(vec![Reply::error(400, &body)]);
        let summary = sb.path("summary.md");
        let out = run(sb
            .rounds()
            .env("ANTHROPIC_API_KEY", KEY)
            .env("ANTHROPIC_BASE_URL", server.url())
            .env("GITHUB_STEP_SUMMARY", &summary)
            .args(["-o", "stream-json", "--transcript"])
            .arg(sb.transcript_path())
            .arg("hi"));
        assert_ne!(out.code, 0);
        let all = [
            ("stdout", out.stdout.clone()),
            ("stderr", out.stderr.clone()),
            (
                "transcript",
                std::fs::read_to_string(sb.transcript_path()).unwrap(),
            ),
            (
                "summary",
                std::fs::read_to_string(&summary).unwrap_or_default(),
            ),
        ];
        for (name, text) in all {
            if redacted {
                assert!(!text.contains(KEY), "{name}: {text}");
            } else {
                // The control: the error text reaches each place (the summary says the ending).
                if name != "summary" {
                    assert!(text.contains(PLAIN), "{name}: {text}");
                }
            }
        }
        if redacted {
            assert!(
                out.stderr.contains("[REDACTED:ANTHROPIC_API_KEY]"),
                "{}",
                out.stderr
            );
        }
    }
}

/// Entra ID's token endpoint refusing the request with a description that quotes the client
/// secret: the run's ending says it redacted everywhere.
#[test]
fn an_entra_id_error_quoting_the_client_secret_is_redacted_wherever_it_is_shown() {
    const SECRET: &str = "entra-client-secret-5a7d0c31e9";
    for (quoted, redacted) in [(SECRET, true), (PLAIN, false)] {
        let sb = Sandbox::new();
        let description = format!("AADSTS7000215: Invalid client secret provided: {quoted}");
        let server = MockServer::respond(move |r| {
            if r.path.ends_with("/oauth2/v2.0/token") {
                let body = json!({"error": "invalid_client", "error_description": description});
                return Reply::error(401, &body.to_string());
            }
            sse::answer("never asked")
        });
        let summary = sb.path("summary.md");
        let out = run(sb
            .rounds()
            .env("AZURE_OPENAI_ENDPOINT", server.url())
            .env("AZURE_AUTHORITY_HOST", server.url())
            .env("AZURE_CLIENT_ID", "client-1")
            .env("AZURE_TENANT_ID", "tenant-1")
            .env("AZURE_CLIENT_SECRET", SECRET)
            .env("GITHUB_STEP_SUMMARY", &summary)
            .args(["-m", "azure/dep", "-o", "stream-json", "--transcript"])
            .arg(sb.transcript_path())
            .arg("hi"));
        assert_ne!(out.code, 0);
        let all = [
            ("stdout", out.stdout.clone()),
            ("stderr", out.stderr.clone()),
            (
                "transcript",
                std::fs::read_to_string(sb.transcript_path()).unwrap_or_default(),
            ),
            (
                "summary",
                std::fs::read_to_string(&summary).unwrap_or_default(),
            ),
        ];
        for (name, text) in &all {
            assert!(!text.contains(SECRET), "{name}: {text}");
        }
        if redacted {
            assert!(
                out.stderr.contains("[REDACTED:AZURE_CLIENT_SECRET]"),
                "{}",
                out.stderr
            );
        } else {
            // The control: the description reaches stderr and the end line as it was.
            assert!(out.stderr.contains(PLAIN), "{}", out.stderr);
            assert!(out.stdout.contains(PLAIN), "{}", out.stdout);
        }
    }
}

/// A command that fails before any run has no run's redactor: its message is redacted of the
/// environment's secrets where failures are said (stderr, and `-o json`'s object).
#[test]
fn a_failure_before_any_run_is_said_without_the_environments_secrets() {
    const TOKEN: &str = "tok-deploy-0123456789abcdef";
    for (var, redacted) in [("DEPLOY_TOKEN", true), ("DEPLOY_NAME", false)] {
        for mode in ["text", "json"] {
            let sb = Sandbox::new();
            let out = run(sb
                .rounds()
                .env("ANTHROPIC_API_KEY", "k")
                .env(var, TOKEN)
                .args(["-o", mode, "--output-schema"])
                .arg(format!("/nonexistent/{TOKEN}.json"))
                .arg("hi"));
            assert_eq!(out.code, 2, "{}", out.stderr);
            let said = format!("{}{}", out.stdout, out.stderr);
            assert!(said.contains("output schema"), "{said}");
            // The control: a variable not named like a secret is said as it is.
            assert_eq!(!said.contains(TOKEN), redacted, "{var} {mode}: {said}");
        }
    }
}
