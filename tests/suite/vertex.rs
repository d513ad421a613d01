//! Google Vertex AI end to end: the real binary against a loopback Google (common::vertex)
//! speaking Vertex's URLs and streams, with each source of Application Default Credentials:
//! a service-account key (its assertion verified against the key's public half at the key
//! file's own `token_uri`), a user's refresh token in gcloud's ADC file, workload identity
//! federation with a file-sourced token (GitHub OIDC's shape) at a loopback STS, and the
//! metadata server via `GCE_METADATA_HOST`.

use std::time::{Duration, Instant};

use crate::common::mock::Reply;
use crate::common::sse::{self, B};
use crate::common::vertex::{
    CLIENT_SECRET, Google, REFRESH_TOKEN, form, key_file, private_key, write_json,
};
use crate::common::{Sandbox, run, run_within};
use serde_json::json;

fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    sb
}

fn gemini_rounds() -> Vec<Reply> {
    vec![
        Reply::sse(sse::gemini(
            &[B::Tool("", "read_file", r#"{"path":"a.txt"}"#)],
            10,
            5,
        )),
        Reply::sse(sse::gemini(&[B::Text("alpha it is")], 20, 5)),
    ]
}

fn claude_rounds() -> Vec<Reply> {
    vec![
        Reply::sse(sse::anthropic(
            &[B::Tool("toolu_1", "read_file", r#"{"path":"a.txt"}"#)],
            "tool_use",
            10,
            5,
        )),
        Reply::sse(sse::anthropic(&[B::Text("alpha it is")], "end_turn", 20, 5)),
    ]
}

/// A run with the service-account key at `GOOGLE_APPLICATION_CREDENTIALS`.
fn with_key(sb: &Sandbox, google: &Google) -> std::process::Command {
    let key = sb.path("key.json");
    write_json(&key, &key_file(&google.url()));
    let mut cmd = sb.rounds();
    cmd.env("GOOGLE_APPLICATION_CREDENTIALS", &key)
        .args(["--base-url", &google.url()]);
    cmd
}

#[test]
fn gemini_on_vertex_runs_two_rounds_with_a_service_account_key() {
    let sb = sandbox();
    let google = Google::start(gemini_rounds(), 3600, Duration::ZERO);
    let out = run(with_key(&sb, &google)
        .args(["-m", "vertex/gemini-2.5-pro", "--transcript"])
        .arg(sb.transcript_path())
        .arg("read a.txt"));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "alpha it is\n"),
        "{}",
        out.stderr
    );
    assert_eq!(google.problems(), Vec::<String>::new());
    let requests = google.model_requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        // The key file's project, the default location, the Gemini API's method.
        assert_eq!(
            r.path,
            "/v1/projects/key-project/locations/global/publishers/google/models/\
             gemini-2.5-pro:streamGenerateContent?alt=sse"
        );
        assert_eq!(r.header("authorization"), Some("Bearer sa-token-1"));
        assert_eq!(r.header("x-goog-api-key"), None);
        assert!(r.json().get("model").is_none());
    }
    let second = requests[1].json();
    let response = &second["contents"][2]["parts"][0]["functionResponse"];
    assert_eq!(response["name"], "read_file", "{second}");
    // One token for the whole run, fetched with a verified assertion.
    assert_eq!(google.tokens().len(), 1);
    let transcript = std::fs::read_to_string(sb.transcript_path()).unwrap();
    assert!(transcript.contains("\"provider\":\"vertex\""));
    secrets_absent(&[&transcript, &out.stdout, &out.stderr]);
}

/// Neither the private key (any line of it), nor a token, nor a refresh token or client secret.
fn secrets_absent(texts: &[&str]) {
    let key = private_key();
    let lines: Vec<&str> = key.lines().filter(|l| !l.starts_with("-----")).collect();
    for text in texts {
        for line in &lines {
            assert!(
                !text.contains(line),
                "a line of the private key leaked: {text}"
            );
        }
        for secret in [
            "sa-token-",
            "sts-token-",
            "user-token-",
            "mds-token-",
            REFRESH_TOKEN,
            CLIENT_SECRET,
        ] {
            assert!(!text.contains(secret), "{secret} leaked: {text}");
        }
    }
}

#[test]
fn claude_on_vertex_runs_two_rounds_with_the_sdk_clients_body() {
    let sb = sandbox();
    let google = Google::start(claude_rounds(), 3600, Duration::ZERO);
    let out = run(with_key(&sb, &google)
        .env("GOOGLE_CLOUD_PROJECT", "env-project")
        .env("CLOUD_ML_REGION", "us-east5")
        .args([
            "-m",
            "vertex/claude-sonnet-4-5@20250929",
            "--no-transcript",
            "read a.txt",
        ]));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "alpha it is\n"),
        "{}",
        out.stderr
    );
    assert_eq!(google.problems(), Vec::<String>::new());
    let requests = google.model_requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(
            r.path,
            "/v1/projects/env-project/locations/us-east5/publishers/anthropic/models/\
             claude-sonnet-4-5@20250929:streamRawPredict"
        );
        assert_eq!(r.header("authorization"), Some("Bearer sa-token-1"));
        // No Anthropic key or version header: Vertex takes the version in the body.
        assert_eq!(r.header("x-api-key"), None);
        assert_eq!(r.header("anthropic-version"), None);
        let body = r.json();
        assert_eq!(body["anthropic_version"], "vertex-2023-10-16");
        assert!(body.get("model").is_none(), "{body}");
        assert_eq!(body["stream"], true);
    }
    let second = requests[1].json();
    assert_eq!(
        second["messages"][2]["content"][0]["type"], "tool_result",
        "{second}"
    );
    assert_eq!(
        second["messages"][2]["content"][0]["tool_use_id"],
        "toolu_1"
    );
}

/// A token that lives 2 s is fetched again at half its life; the first reply takes longer,
/// and the server refuses expired tokens, so the second round needs the new one.
#[test]
fn a_token_that_expires_during_the_run_is_fetched_again() {
    let sb = sandbox();
    let google = Google::start(gemini_rounds(), 2, Duration::from_millis(2300));
    let out = run(with_key(&sb, &google).args([
        "-m",
        "vertex/gemini-2.5-flash",
        "--no-transcript",
        "read a.txt",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(google.problems(), Vec::<String>::new());
    assert_eq!(
        google.tokens().len(),
        2,
        "one token per round: the first expired"
    );
    let bearers: Vec<_> = google
        .model_requests()
        .iter()
        .map(|r| r.header("authorization").unwrap_or("").to_owned())
        .collect();
    assert_eq!(bearers, ["Bearer sa-token-1", "Bearer sa-token-2"]);
}

#[test]
fn workload_identity_federation_exchanges_a_file_sourced_token_at_the_sts() {
    let sb = sandbox();
    let google = Google::start(gemini_rounds(), 3600, Duration::ZERO);
    let oidc = sb.path("oidc-token");
    std::fs::write(&oidc, "github-oidc-jwt").unwrap();
    let audience =
        "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/gh/providers/gh";
    let config = sb.path("wif.json");
    write_json(
        &config,
        &json!({"type": "external_account", "audience": audience,
            "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
            "token_url": format!("{}/sts", google.url()),
            "credential_source": {"file": oidc, "format": {"type": "text"}}}),
    );
    let out = run(sb
        .rounds()
        .env("GOOGLE_APPLICATION_CREDENTIALS", &config)
        .env("GOOGLE_CLOUD_PROJECT", "wif-project")
        .args(["--base-url", &google.url()])
        .args([
            "-m",
            "vertex/gemini-2.5-pro",
            "--no-transcript",
            "read a.txt",
        ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(google.problems(), Vec::<String>::new());
    let exchange = form(&google.tokens()[0]);
    assert_eq!(exchange["subject_token"], "github-oidc-jwt");
    assert_eq!(exchange["audience"], audience);
    assert_eq!(
        exchange["scope"],
        "https://www.googleapis.com/auth/cloud-platform"
    );
    for r in google.model_requests() {
        assert!(
            r.path
                .starts_with("/v1/projects/wif-project/locations/global/")
        );
        assert_eq!(r.header("authorization"), Some("Bearer sts-token-1"));
    }
    secrets_absent(&[&out.stdout, &out.stderr]);
}

/// The file google-github-actions/auth writes: the subject token fetched from GitHub's OIDC
/// endpoint (a URL with the runner's request token as a header, the token in JSON).
#[test]
fn workload_identity_federation_fetches_a_url_sourced_token_as_github_actions_sets_it_up() {
    let sb = sandbox();
    let google = Google::start(gemini_rounds(), 3600, Duration::ZERO);
    let config = sb.path("gha-creds.json");
    write_json(
        &config,
        &json!({"type": "external_account", "audience": "//iam.googleapis.com/pool",
            "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
            "token_url": format!("{}/sts", google.url()),
            "credential_source": {
                "url": format!("{}/oidc?api-version=2.0&audience=https://iam.googleapis.com/pool", google.url()),
                "headers": {"Authorization": "Bearer gh-request-token"},
                "format": {"type": "json", "subject_token_field_name": "value"}}}),
    );
    let out = run(sb
        .rounds()
        .env("GOOGLE_APPLICATION_CREDENTIALS", &config)
        .env("GOOGLE_CLOUD_PROJECT", "gha-project")
        .args(["--base-url", &google.url()])
        .args([
            "-m",
            "vertex/gemini-2.5-pro",
            "--no-transcript",
            "read a.txt",
        ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(google.problems(), Vec::<String>::new());
    let exchange = google
        .tokens()
        .into_iter()
        .find(|r| r.path == "/sts")
        .expect("an exchange");
    assert_eq!(form(&exchange)["subject_token"], "github-oidc-jwt");
    for r in google.model_requests() {
        assert_eq!(r.header("authorization"), Some("Bearer sts-token-1"));
    }
    assert!(!out.stderr.contains("gh-request-token"));
}

#[test]
fn workload_identity_federation_can_impersonate_a_service_account() {
    let sb = sandbox();
    let google = Google::start(claude_rounds(), 3600, Duration::ZERO);
    let oidc = sb.path("oidc-token");
    std::fs::write(&oidc, "github-oidc-jwt").unwrap();
    let config = sb.path("wif.json");
    write_json(
        &config,
        &json!({"type": "external_account", "audience": "//iam.googleapis.com/pool",
            "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
            "token_url": format!("{}/sts", google.url()),
            "service_account_impersonation_url": format!(
                "{}/v1/projects/-/serviceAccounts/ci@p.iam.gserviceaccount.com:generateAccessToken",
                google.url()),
            "credential_source": {"file": oidc}}),
    );
    let out = run(sb
        .rounds()
        .env("GOOGLE_APPLICATION_CREDENTIALS", &config)
        .args(["--project", "flag-project", "--region", "europe-west1"])
        .args(["--base-url", &google.url()])
        .args([
            "-m",
            "vertex/claude-opus-4-1@20250805",
            "--no-transcript",
            "read a.txt",
        ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(google.problems(), Vec::<String>::new());
    for r in google.model_requests() {
        assert!(
            r.path
                .starts_with("/v1/projects/flag-project/locations/europe-west1/")
        );
        assert_eq!(
            r.header("authorization"),
            Some("Bearer impersonated-token-2")
        );
    }
}

#[test]
fn an_authorized_user_in_gclouds_adc_file_is_refreshed_at_its_token_uri() {
    let sb = sandbox();
    let google = Google::start(gemini_rounds(), 3600, Duration::ZERO);
    write_json(
        &sb.path("home/.config/gcloud/application_default_credentials.json"),
        &json!({"type": "authorized_user", "client_id": "client-1",
            "client_secret": CLIENT_SECRET, "refresh_token": REFRESH_TOKEN,
            "token_uri": format!("{}/user-token", google.url())}),
    );
    let out = run(sb
        .rounds()
        .env("GOOGLE_CLOUD_PROJECT", "user-project")
        .args(["--base-url", &google.url()])
        .args([
            "-m",
            "vertex/gemini-2.5-pro",
            "--no-transcript",
            "read a.txt",
        ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(google.problems(), Vec::<String>::new());
    assert_eq!(form(&google.tokens()[0])["client_secret"], CLIENT_SECRET);
    for r in google.model_requests() {
        assert_eq!(r.header("authorization"), Some("Bearer user-token-1"));
    }
    secrets_absent(&[&out.stdout, &out.stderr]);
}

#[test]
fn the_metadata_server_named_by_gce_metadata_host_gives_the_token() {
    let sb = sandbox();
    let google = Google::start(gemini_rounds(), 3600, Duration::ZERO);
    let out = run(sb
        .rounds()
        .env("GCE_METADATA_HOST", google.host())
        .env("GOOGLE_CLOUD_PROJECT", "gce-project")
        .args(["--base-url", &google.url()])
        .args([
            "-m",
            "vertex/gemini-2.5-pro",
            "--no-transcript",
            "read a.txt",
        ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(google.problems(), Vec::<String>::new());
    let token = google
        .tokens()
        .into_iter()
        .find(|r| r.path.contains("/token"))
        .expect("a token request");
    assert!(token.path.contains("scopes=https"), "{}", token.path);
    for r in google.model_requests() {
        assert_eq!(r.header("authorization"), Some("Bearer mds-token-1"));
    }
}

#[test]
fn without_credentials_or_a_project_the_run_exits_2_naming_what_was_tried() {
    let sb = sandbox();
    let google = Google::start(gemini_rounds(), 3600, Duration::ZERO);
    // No project anywhere: stopped before any request.
    let out = run(sb
        .rounds()
        .env("GCE_METADATA_HOST", google.host())
        .args(["--base-url", &google.url()])
        .args(["-m", "vertex/gemini-2.5-pro", "--no-transcript", "hi"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    for named in [
        "--project",
        "GOOGLE_CLOUD_PROJECT",
        "ANTHROPIC_VERTEX_PROJECT_ID",
    ] {
        assert!(out.stderr.contains(named), "{named}: {}", out.stderr);
    }
    assert!(google.server.requests().is_empty());

    // No file, and nothing answers at the metadata address: named, quickly, exit 2.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let host = closed.local_addr().unwrap().to_string();
    drop(closed);
    let started = Instant::now();
    let out = run_within(
        sb.rounds()
            .env("GCE_METADATA_HOST", &host)
            .env("GOOGLE_CLOUD_PROJECT", "p")
            .args(["--base-url", &google.url()])
            .args(["-m", "vertex/gemini-2.5-pro", "--no-transcript", "hi"]),
        Duration::from_secs(30),
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(started.elapsed() < Duration::from_secs(15));
    for named in [
        "GOOGLE_APPLICATION_CREDENTIALS",
        "application_default_credentials.json",
        &host,
    ] {
        assert!(out.stderr.contains(named), "{named}: {}", out.stderr);
    }
    assert!(google.model_requests().is_empty());

    // A named file that is not there.
    let out = run(sb
        .rounds()
        .env("GOOGLE_APPLICATION_CREDENTIALS", sb.path("missing.json"))
        .env("GOOGLE_CLOUD_PROJECT", "p")
        .args(["-m", "vertex/claude-x", "--no-transcript", "hi"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("missing.json"), "{}", out.stderr);
}

/// The credentials variable is never handed to a tool (asking for it is refused), and a tool
/// printing its environment shows no key, token or file path; the control shows the same
/// command does print a variable that was passed.
#[test]
fn credentials_never_reach_a_tools_environment_or_the_transcript() {
    let sb = sandbox();
    let replies = vec![
        Reply::sse(sse::gemini(
            &[B::Tool("", "bash", r#"{"command":"env"}"#)],
            10,
            5,
        )),
        Reply::sse(sse::gemini(&[B::Text("ok")], 20, 5)),
    ];
    let google = Google::start(replies, 3600, Duration::ZERO);
    let command = |pass: &[&str]| {
        let mut cmd = with_key(&sb, &google);
        cmd.env("KEEP_ME", "kept");
        for name in pass {
            cmd.args(["--tool-env", name]);
        }
        cmd.args(["-m", "vertex/gemini-2.5-pro", "-a", "bash", "--transcript"])
            .arg(sb.transcript_path())
            .arg("print the environment");
        cmd
    };
    let out = run(&mut command(&["GOOGLE_APPLICATION_CREDENTIALS", "KEEP_ME"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("never passed to tools"),
        "{}",
        out.stderr
    );
    let out = run(&mut command(&["KEEP_ME"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let transcript = std::fs::read_to_string(sb.transcript_path()).unwrap();
    assert!(
        transcript.contains("KEEP_ME=kept"),
        "the control: {transcript}"
    );
    assert!(
        !transcript.contains("GOOGLE_APPLICATION_CREDENTIALS="),
        "{transcript}"
    );
    assert!(!transcript.contains("key.json"), "{transcript}");
    secrets_absent(&[&transcript, &out.stdout, &out.stderr]);
}

#[test]
fn doctor_names_the_credentials_vertex_would_use_without_a_secret() {
    let sb = sandbox();
    let key = sb.path("key.json");
    write_json(&key, &key_file("http://127.0.0.1:9"));
    let doctor = |vars: &[(&str, &std::ffi::OsStr)]| {
        let mut cmd = sb.rounds();
        cmd.envs(vars.iter().copied()).args([
            "doctor",
            "-m",
            "vertex/gemini-2.5-pro",
            "--timeout",
            "1",
        ]);
        run(&mut cmd)
    };
    let out = doctor(&[("GOOGLE_APPLICATION_CREDENTIALS", key.as_os_str())]);
    let auth = out
        .stdout
        .lines()
        .find(|l| l.contains("auth") && l.contains("vertex:"));
    let auth = auth.unwrap_or_default();
    assert!(auth.starts_with("ok"), "{}", out.stdout);
    for said in [
        crate::common::vertex::EMAIL,
        "key.json",
        "http://127.0.0.1:9/token",
        "global",
    ] {
        assert!(auth.contains(said), "{said}: {auth}");
    }
    secrets_absent(&[&out.stdout, &out.stderr]);
    let out = doctor(&[(
        "GOOGLE_APPLICATION_CREDENTIALS",
        sb.path("gone.json").as_os_str(),
    )]);
    let auth = out
        .stdout
        .lines()
        .find(|l| l.contains("auth") && l.contains("vertex:"));
    assert!(
        auth.unwrap_or_default().contains("gone.json"),
        "{}",
        out.stdout
    );
    assert_ne!(out.code, 0, "{}", out.stdout);
}

/// Claude on Vertex takes Anthropic's body, so Anthropic's option limits apply before any
/// request; Gemini on Vertex is not held to them (the control).
#[test]
fn claude_on_vertex_is_held_to_anthropics_option_limits() {
    let sb = sandbox();
    let google = Google::start(gemini_rounds(), 3600, Duration::ZERO);
    let args = |model: &str| {
        let mut cmd = with_key(&sb, &google);
        cmd.args([
            "-m",
            model,
            "--thinking-budget",
            "2048",
            "--max-tokens",
            "1024",
        ])
        .args(["--no-transcript", "read a.txt"]);
        cmd
    };
    let out = run(&mut args("vertex/claude-sonnet-4-5@20250929"));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("thinking budget"), "{}", out.stderr);
    assert!(google.server.requests().is_empty());
    let out = run(&mut args("vertex/gemini-2.5-pro"));
    assert_eq!(out.code, 0, "{}", out.stderr);
}
