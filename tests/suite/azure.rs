//! Azure OpenAI and OpenRouter end to end: the real binary against a loopback server speaking
//! OpenAI's wire at Azure's URLs (the v1 API, and the deployment URLs of the `AzureOpenAI`
//! client in the openai SDK: `/openai/deployments/{model}/chat/completions?api-version=…`,
//! Responses at `/openai/responses?api-version=…`), with an `api-key` header, a user's Entra ID
//! token, or one fetched from a loopback Entra ID token endpoint for a service principal.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::mock::{MockServer, Recorded, Reply, Step};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run};
use serde_json::json;

const KEY: &str = "azure-key-0123456789";
const SECRET: &str = "client-secret-abcdef";

fn two_rounds() -> Vec<Reply> {
    vec![
        Reply::sse(sse::openai(
            &[B::Tool("call_1", "read_file", r#"{"path":"a.txt"}"#)],
            "tool_calls",
            10,
            5,
        )),
        Reply::sse(sse::openai(&[B::Text("alpha it is")], "stop", 20, 5)),
    ]
}

fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    sb
}

#[test]
fn the_v1_api_with_an_api_key_runs_two_rounds_and_the_key_stays_in_its_header() {
    let sb = sandbox();
    let server = MockServer::start(two_rounds());
    let out = run(sb
        .rounds()
        .env("AZURE_OPENAI_API_KEY", KEY)
        .env("AZURE_OPENAI_ENDPOINT", format!("{}/", server.url()))
        .args(["-m", "azure/my-gpt-deployment", "--transcript"])
        .arg(sb.transcript_path())
        .arg("read a.txt"));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "alpha it is\n"),
        "{}",
        out.stderr
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(r.path, "/openai/v1/chat/completions");
        assert_eq!(r.header("api-key"), Some(KEY));
        assert_eq!(r.header("authorization"), None);
        // The deployment is the model the body names, as the openai SDK sends it to the v1 API.
        assert_eq!(r.json()["model"], "my-gpt-deployment");
    }
    let second = requests[1].json();
    assert_eq!(second["messages"][3]["role"], "tool");
    assert_eq!(second["messages"][3]["tool_call_id"], "call_1");
    let transcript = std::fs::read_to_string(sb.transcript_path()).unwrap();
    assert!(
        transcript.contains("\"provider\":\"azure\""),
        "{transcript}"
    );
    for text in [&transcript, &out.stdout, &out.stderr] {
        assert!(!text.contains(KEY));
    }
}

#[test]
fn an_api_version_takes_the_deployment_urls_of_the_sdk_client() {
    let sb = sandbox();
    let server = MockServer::start(two_rounds());
    let out = run(sb
        .rounds()
        .env("AZURE_OPENAI_AD_TOKEN", "entra-token-from-the-user")
        .args([
            "-m",
            "azure/dep-1",
            "--api-version",
            "2024-10-21",
            "--no-transcript",
        ])
        .args(["--base-url", &format!("{}/openai", server.url())])
        .arg("read a.txt"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    for r in server.requests() {
        assert_eq!(
            r.path,
            "/openai/deployments/dep-1/chat/completions?api-version=2024-10-21"
        );
        assert_eq!(
            r.header("authorization"),
            Some("Bearer entra-token-from-the-user")
        );
        assert_eq!(r.header("api-key"), None);
    }

    // The Responses API is not a deployment URL in the SDK's client: /openai/responses.
    let server = MockServer::start(vec![Reply::sse(sse::responses(
        &[B::Text("done")],
        10,
        5,
        0,
    ))]);
    let out = run(sb
        .rounds()
        .env("AZURE_OPENAI_API_KEY", KEY)
        .env("AZURE_OPENAI_ENDPOINT", server.url())
        .args(["-m", "azure/dep-2", "--api", "responses", "--no-transcript"])
        .args(["--api-version", "2025-04-01-preview", "hi"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let request = &server.requests()[0];
    assert_eq!(
        request.path,
        "/openai/responses?api-version=2025-04-01-preview"
    );
    assert_eq!(request.json()["model"], "dep-2");
}

/// The mock's routes: Entra ID's token endpoint for the tenant, then the model.
fn entra_and_model(
    lifetime_secs: u64,
    tokens: Arc<Mutex<Vec<Recorded>>>,
    first_reply_pause: Duration,
) -> MockServer {
    let mut replies = two_rounds().into_iter();
    MockServer::respond(move |r| {
        if r.path == "/tenant-1/oauth2/v2.0/token" {
            let mut seen = tokens.lock().unwrap();
            seen.push(r.clone());
            let body = json!({
                "token_type": "Bearer",
                "expires_in": lifetime_secs,
                "access_token": format!("entra-access-{}", seen.len()),
            });
            return Reply::error(200, &body.to_string());
        }
        let mut reply = replies.next().unwrap_or_else(|| sse::answer("extra"));
        if !first_reply_pause.is_zero() {
            reply.body.insert(0, Step::Sleep(first_reply_pause));
        }
        reply
    })
}

fn form(r: &Recorded) -> std::collections::BTreeMap<String, String> {
    form_urlencoded::parse(&r.body).into_owned().collect()
}

#[test]
fn workload_identity_exchanges_the_federated_token_and_refreshes_it_when_it_expires() {
    let sb = sandbox();
    sb.write("federated.jwt", "github-oidc-token-1\n");
    let tokens = Arc::new(Mutex::new(Vec::new()));
    // A token that is good for 301 s is fetched again 300 s early: after one second. The
    // first model reply takes longer than that, so the second round needs a new token.
    let server = entra_and_model(301, tokens.clone(), Duration::from_millis(1300));
    let token_file = sb.path("ws/federated.jwt");
    let out = run(sb
        .rounds()
        .env("AZURE_OPENAI_ENDPOINT", server.url())
        .env("AZURE_CLIENT_ID", "client-1")
        .env("AZURE_TENANT_ID", "tenant-1")
        .env("AZURE_FEDERATED_TOKEN_FILE", &token_file)
        .env("AZURE_AUTHORITY_HOST", format!("{}/", server.url()))
        .args(["-m", "azure/dep", "--no-transcript", "read a.txt"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let exchanges = tokens.lock().unwrap().clone();
    assert_eq!(exchanges.len(), 2, "one token per round: the first expired");
    let first = form(&exchanges[0]);
    assert_eq!(first["grant_type"], "client_credentials");
    assert_eq!(first["client_id"], "client-1");
    assert_eq!(
        first["scope"],
        "https://cognitiveservices.azure.com/.default"
    );
    assert_eq!(
        first["client_assertion_type"],
        "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    );
    assert_eq!(first["client_assertion"], "github-oidc-token-1");
    let model: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect();
    assert_eq!(model.len(), 2);
    assert_eq!(
        model[0].header("authorization"),
        Some("Bearer entra-access-1")
    );
    assert_eq!(
        model[1].header("authorization"),
        Some("Bearer entra-access-2")
    );
}

#[test]
fn a_client_secret_is_sent_to_entra_only_and_never_reaches_a_tool() {
    let sb = sandbox();
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let probe = [
        Reply::sse(sse::openai(
            &[B::Tool("call_1", "bash", r#"{"command":"env"}"#)],
            "tool_calls",
            10,
            5,
        )),
        Reply::sse(sse::openai(&[B::Text("ok")], "stop", 20, 5)),
    ];
    let mut replies = probe.into_iter();
    let seen = tokens.clone();
    let server = MockServer::respond(move |r| {
        if r.path.ends_with("/oauth2/v2.0/token") {
            seen.lock().unwrap().push(r.clone());
            let body = json!({"expires_in": 3600, "access_token": "entra-access"});
            return Reply::error(200, &body.to_string());
        }
        replies.next().unwrap_or_else(|| sse::answer("extra"))
    });
    let command = |pass: &[&str]| {
        let mut cmd = sb.rounds();
        cmd.env("AZURE_OPENAI_ENDPOINT", server.url())
            .env("AZURE_CLIENT_ID", "client-1")
            .env("AZURE_TENANT_ID", "tenant-1")
            .env("AZURE_CLIENT_SECRET", SECRET)
            .env("AZURE_AUTHORITY_HOST", server.url())
            .env("KEEP_ME", "kept");
        for name in pass {
            cmd.args(["--tool-env", name]);
        }
        cmd.args(["-m", "azure/dep", "-a", "bash", "--transcript"])
            .arg(sb.transcript_path())
            .arg("print the environment");
        cmd
    };
    // The user passing the secret's name through is refused before anything runs.
    let out = run(&mut command(&["AZURE_CLIENT_SECRET", "KEEP_ME"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("never passed to tools"),
        "{}",
        out.stderr
    );
    let out = run(&mut command(&["KEEP_ME"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let exchanges = tokens.lock().unwrap().clone();
    assert_eq!(exchanges.len(), 1);
    assert_eq!(form(&exchanges[0])["client_secret"], SECRET);
    let transcript = std::fs::read_to_string(sb.transcript_path()).unwrap();
    assert!(
        transcript.contains("KEEP_ME=kept"),
        "the control passes: {transcript}"
    );
    for text in [&transcript, &out.stdout, &out.stderr] {
        assert!(!text.contains(SECRET), "the secret leaked: {text}");
        assert!(!text.contains("entra-access"), "the token leaked: {text}");
    }
}

#[test]
fn without_an_endpoint_or_credentials_azure_says_what_it_tried_and_exits_2() {
    let sb = sandbox();
    let out = run(sb.rounds().env("AZURE_OPENAI_API_KEY", KEY).args([
        "-m",
        "azure/dep",
        "--no-transcript",
        "hi",
    ]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("AZURE_OPENAI_ENDPOINT"),
        "{}",
        out.stderr
    );

    let out = run(sb
        .rounds()
        .env("AZURE_OPENAI_ENDPOINT", "http://127.0.0.1:9")
        .args(["-m", "azure/dep", "--no-transcript", "hi"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    for tried in [
        "AZURE_OPENAI_API_KEY",
        "AZURE_OPENAI_AD_TOKEN",
        "AZURE_CLIENT_ID",
    ] {
        assert!(out.stderr.contains(tried), "{tried}: {}", out.stderr);
    }

    // Entra ID refusing the service principal is an auth failure, named, with no secret.
    let server = MockServer::respond(|_| {
        Reply::error(
            400,
            r#"{"error":"invalid_client","error_description":"AADSTS7000215: Invalid client secret provided."}"#,
        )
    });
    let out = run(sb
        .rounds()
        .env("AZURE_OPENAI_ENDPOINT", server.url())
        .env("AZURE_CLIENT_ID", "client-1")
        .env("AZURE_TENANT_ID", "tenant-1")
        .env("AZURE_CLIENT_SECRET", SECRET)
        .env("AZURE_AUTHORITY_HOST", server.url())
        .args(["-m", "azure/dep", "--no-transcript", "hi"]));
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("AADSTS7000215"), "{}", out.stderr);
    assert!(!out.stderr.contains(SECRET));
}

#[test]
fn openrouter_names_the_app_and_speaks_the_compatible_dialect_without_local_defaults() {
    let sb = sandbox();
    let server = MockServer::start(two_rounds());
    let out = run(sb
        .rounds()
        .env("OPENROUTER_API_KEY", "sk-or-test")
        .env("OPENROUTER_BASE_URL", format!("{}/api/v1", server.url()))
        .args([
            "-m",
            "openrouter/anthropic/claude-sonnet-4.5",
            "--no-transcript",
        ])
        .arg("read a.txt"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests();
    let first = &requests[0];
    assert_eq!(first.path, "/api/v1/chat/completions");
    assert_eq!(first.header("authorization"), Some("Bearer sk-or-test"));
    assert_eq!(first.header("x-title"), Some("rounds"));
    let body = first.json();
    assert_eq!(body["model"], "anthropic/claude-sonnet-4.5");
    assert_eq!(body["messages"][0]["role"], "system");
    // A hosted service: no output cap of the local servers' by default.
    assert_eq!(body.get("max_tokens"), None, "{body}");

    let out = run(sb
        .rounds()
        .args(["-m", "openrouter/x", "--no-transcript", "hi"]));
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("OPENROUTER_API_KEY"), "{}", out.stderr);
}

#[test]
fn doctor_names_the_credentials_azure_would_use_and_fails_without_any() {
    let sb = sandbox();
    let doctor = |vars: &[(&str, &str)]| {
        let mut cmd = sb.rounds();
        cmd.envs(vars.iter().copied())
            .args(["doctor", "-m", "azure/dep", "--timeout", "1"]);
        run(&mut cmd)
    };
    let out = doctor(&[
        ("AZURE_OPENAI_ENDPOINT", "http://127.0.0.1:9"),
        ("AZURE_CLIENT_ID", "client-1"),
        ("AZURE_TENANT_ID", "tenant-1"),
        ("AZURE_FEDERATED_TOKEN_FILE", "/var/run/token"),
    ]);
    let auth = out
        .stdout
        .lines()
        .find(|l| l.contains("auth") && l.contains("azure:"));
    let auth = auth.unwrap_or_default();
    assert!(auth.starts_with("ok"), "{}", out.stdout);
    assert!(auth.contains("federated token in /var/run/token"), "{auth}");

    let out = doctor(&[("AZURE_OPENAI_AD_TOKEN", "secret-entra-token")]);
    assert!(!out.stdout.contains("secret-entra-token"));
    let out = doctor(&[]);
    assert_ne!(out.code, 0, "{}", out.stdout);
    for needed in ["AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY"] {
        assert!(out.stdout.contains(needed), "{needed}: {}", out.stdout);
    }
}
