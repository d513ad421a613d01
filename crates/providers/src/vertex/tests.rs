use std::collections::HashMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use super::adc::{GoogleAuth, Origin, describe_credentials, origin};
use super::service_account::ServiceAccount;
use super::*;
use crate::conversation::{Block, Message, ToolUse};
use crate::{Failure, Options, ToolChoice};

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name: &str| map.get(name).cloned()
}

fn fixture(name: &str) -> String {
    format!(
        "{}/../../fixtures/vertex/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn key_pem() -> String {
    std::fs::read_to_string(fixture("test-key.pem")).unwrap()
}

fn key_json(token_uri: &str) -> Value {
    json!({
        "type": "service_account",
        "project_id": "key-project",
        "private_key_id": "kid-1",
        "private_key": key_pem(),
        "client_email": "runner@key-project.iam.gserviceaccount.com",
        "client_id": "1",
        "token_uri": token_uri,
    })
}

fn place_of(project: &str, location: &str) -> Place {
    Place {
        project: project.into(),
        location: location.into(),
    }
}

#[test]
fn urls_name_project_location_publisher_and_method() {
    let p = place_of("proj", "us-east5");
    assert_eq!(
        url("", &p, "claude-sonnet-4-5@20250929"),
        "https://us-east5-aiplatform.googleapis.com/v1/projects/proj/locations/us-east5/\
         publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"
    );
    assert_eq!(
        url("", &p, "gemini-2.5-pro"),
        "https://us-east5-aiplatform.googleapis.com/v1/projects/proj/locations/us-east5/\
         publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    );
    // The SDKs' hosts for the global and multi-region locations.
    let global = url("", &place_of("proj", "global"), "gemini-3-pro");
    assert!(
        global.starts_with("https://aiplatform.googleapis.com/v1/projects/proj/locations/global/")
    );
    let us = url("", &place_of("proj", "us"), "claude-x");
    assert!(
        us.starts_with("https://aiplatform.us.rep.googleapis.com/v1/projects/proj/locations/us/")
    );
    // --base-url, with or without the SDKs' `/v1`.
    for base in [
        "http://127.0.0.1:9",
        "http://127.0.0.1:9/",
        "http://127.0.0.1:9/v1",
    ] {
        assert_eq!(
            url(base, &p, "claude-x"),
            "http://127.0.0.1:9/v1/projects/proj/locations/us-east5/publishers/anthropic/models/claude-x:streamRawPredict"
        );
    }
}

#[test]
fn project_and_location_come_from_flags_then_variables_then_the_key_file() {
    let env = env_of(&[
        ("GCLOUD_PROJECT", "gcloud-p"),
        ("ANTHROPIC_VERTEX_PROJECT_ID", "anthropic-p"),
        ("CLOUD_ML_REGION", "europe-west1"),
    ]);
    let got = place(None, None, &env, Some("file-p")).unwrap();
    assert_eq!(got, place_of("gcloud-p", "europe-west1"));
    let got = place(Some("flag-p"), Some("us-east5"), &env, Some("file-p")).unwrap();
    assert_eq!(got, place_of("flag-p", "us-east5"));
    let first = env_of(&[
        ("GOOGLE_CLOUD_PROJECT", "google-p"),
        ("GCLOUD_PROJECT", "gcloud-p"),
        ("GOOGLE_CLOUD_LOCATION", "asia-east1"),
        ("CLOUD_ML_REGION", "europe-west1"),
    ]);
    assert_eq!(
        place(None, None, &first, None).unwrap(),
        place_of("google-p", "asia-east1")
    );
    let none = env_of(&[]);
    assert_eq!(
        place(None, None, &none, Some("file-p")).unwrap(),
        place_of("file-p", "global")
    );
    let err = place(None, None, &none, None).unwrap_err().to_string();
    for name in [
        "--project",
        "GOOGLE_CLOUD_PROJECT",
        "GCLOUD_PROJECT",
        "ANTHROPIC_VERTEX_PROJECT_ID",
    ] {
        assert!(err.contains(name), "{err}");
    }
}

/// Project and location are path segments of the URL: a value that would change which
/// resource (or host, or query) it names is refused, and the same values are accepted once
/// made harmless, so the check is what refuses them.
#[test]
fn hostile_project_and_location_are_refused() {
    let none = env_of(&[]);
    for bad in [
        "p/../../other",
        "p?alt=x",
        "p#x",
        "a b",
        "p/x",
        "",
        "p%2Fx",
        "p@evil.com",
    ] {
        assert!(place(Some(bad), None, &none, None).is_err(), "{bad:?}");
        assert!(place(Some("p"), Some(bad), &none, None).is_err(), "{bad:?}");
        let tamed: String = bad.chars().filter(char::is_ascii_alphanumeric).collect();
        let tamed = if tamed.is_empty() {
            "p".to_owned()
        } else {
            tamed
        };
        assert!(place(Some(&tamed), Some(&tamed), &none, None).is_ok());
    }
    // Control: unchecked, such values move the request to another resource or query.
    let parsed = |p: &str| reqwest::Url::parse(&url("http://h", &place_of(p, "l"), "m")).unwrap();
    assert!(!parsed("p/../../other").path().starts_with("/v1/projects/"));
    assert!(
        parsed("p?alt=x")
            .query()
            .is_some_and(|q| q.starts_with("alt=x"))
    );
}

fn request_with<'a>(messages: &'a [Message]) -> Request<'a> {
    Request {
        system: "sys",
        messages,
        tools: &[],
        max_tokens: None,
        tool_choice: ToolChoice::Auto,
        cache: None,
        output_schema: None,
    }
}

/// Gemini on Vertex takes the Gemini API's body; a turn Vertex recorded keeps its signatures
/// (they are Vertex's own), exactly as a turn the Gemini API recorded does there.
#[test]
fn gemini_body_is_the_gemini_apis_with_vertex_turns_as_its_own() {
    let mut call = ToolUse::from_raw("c1".into(), "f".into(), "{}");
    call.signature = Some("sig".into());
    let turn = |provider: &str| {
        vec![
            Message::User("q".into()),
            Message::Assistant {
                blocks: vec![Block::ToolUse(call.clone())],
                provider: provider.into(),
            },
        ]
    };
    let (on_vertex, on_gemini) = (turn("vertex"), turn("gemini"));
    let o = Options::default();
    let vertex = serde_json::to_value(crate::gemini::build_body(
        "gemini-3-pro",
        "vertex",
        &request_with(&on_vertex),
        &o,
    ))
    .unwrap();
    let gemini = serde_json::to_value(crate::gemini::build_request(
        "gemini-3-pro",
        &request_with(&on_gemini),
        &o,
    ))
    .unwrap();
    assert_eq!(vertex, gemini);
    assert_eq!(vertex["contents"][1]["parts"][0]["thoughtSignature"], "sig");
    // Control: a turn another provider recorded does not carry its signature here.
    let other = serde_json::to_value(crate::gemini::build_body(
        "gemini-3-pro",
        "vertex",
        &request_with(&on_gemini),
        &o,
    ))
    .unwrap();
    assert_ne!(other["contents"][1]["parts"][0]["thoughtSignature"], "sig");
}

#[test]
fn families_by_model_name() {
    assert_eq!(Family::of("claude-opus-4-1@20250805"), Family::Claude);
    assert_eq!(Family::of("gemini-2.5-flash"), Family::Gemini);
    assert_eq!(Family::of("text-bison"), Family::Gemini);
}

fn decode(part: &str) -> Value {
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
}

/// The assertion is RS256 over `header.claims`, verifiable with the key's public half, with
/// the claims google-auth sends; a changed byte fails verification (the control).
#[test]
fn assertion_is_signed_by_the_key_with_googles_claims() {
    let sa = ServiceAccount::parse(key_json("http://127.0.0.1:1/token"), "test").unwrap();
    let jwt = sa.assertion(1_700_000_000).unwrap();
    let parts: Vec<&str> = jwt.split('.').collect();
    assert_eq!(parts.len(), 3);
    assert_eq!(
        decode(parts[0]),
        json!({"alg":"RS256","typ":"JWT","kid":"kid-1"})
    );
    assert_eq!(
        decode(parts[1]),
        json!({"iss":"runner@key-project.iam.gserviceaccount.com",
               "scope":"https://www.googleapis.com/auth/cloud-platform",
               "aud":"https://oauth2.googleapis.com/token","iat":1_700_000_000u64,"exp":1_700_003_600u64})
    );
    let public = std::fs::read(fixture("test-key.pub.der")).unwrap();
    let key = ring::signature::UnparsedPublicKey::new(
        &ring::signature::RSA_PKCS1_2048_8192_SHA256,
        &public,
    );
    let signed = format!("{}.{}", parts[0], parts[1]);
    let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
    assert!(key.verify(signed.as_bytes(), &signature).is_ok());
    let tampered = signed.replacen("eyJ", "eyK", 1);
    assert!(key.verify(tampered.as_bytes(), &signature).is_err());
}

/// RSA PKCS#1 v1.5 is deterministic: the assertion for a fixed time is the one google-auth
/// verified (fixtures/vertex/google_auth_check.py checks this very file against the public
/// key, with google-auth's own JWT decoder).
#[test]
fn assertion_is_the_one_google_auth_verified() {
    let sa = ServiceAccount::parse(key_json("http://127.0.0.1:1/token"), "test").unwrap();
    let jwt = sa.assertion(1_700_000_000).unwrap();
    if std::env::var_os("ROUNDS_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(fixture("assertion.jwt"), format!("{jwt}\n")).unwrap();
    }
    let captured = std::fs::read_to_string(fixture("assertion.jwt")).unwrap();
    assert_eq!(jwt, captured.trim());
}

#[test]
fn broken_keys_are_config_errors_that_never_quote_the_key() {
    let pem = key_pem();
    let cut = pem[..pem.len() / 2].to_owned();
    let body: String = pem.lines().nth(3).unwrap().to_owned();
    let mut wrong_type = key_json("x");
    wrong_type["private_key"] = json!(42);
    let mut missing = key_json("x");
    missing.as_object_mut().unwrap().remove("client_email");
    let mut truncated = key_json("x");
    truncated["private_key"] = json!(cut);
    let mut not_rsa = key_json("x");
    not_rsa["private_key"] =
        json!("-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n");
    for json in [wrong_type, missing, truncated, not_rsa] {
        let Err(e) = ServiceAccount::parse(json, "KEYFILE") else {
            panic!("accepted a broken key")
        };
        assert_eq!(e.kind, Failure::Config);
        assert!(e.message.contains("KEYFILE"), "{}", e.message);
        assert!(!e.message.contains(&body[..20]), "{}", e.message);
    }
}

fn write(dir: &std::path::Path, name: &str, json: &Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, json.to_string()).unwrap();
    path.display().to_string()
}

#[test]
fn the_chain_takes_the_variable_then_gcloud_then_the_metadata_server() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().display().to_string();
    let gcloud = dir.path().join(".config/gcloud");
    std::fs::create_dir_all(&gcloud).unwrap();
    let none = env_of(&[("HOME", &home)]);
    assert_eq!(
        origin(&none),
        Origin::Metadata {
            host: "metadata.google.internal".into(),
            named: false
        }
    );
    let adc = write(
        &gcloud,
        "application_default_credentials.json",
        &json!({"type":"authorized_user"}),
    );
    assert_eq!(origin(&none), Origin::Gcloud(adc.into()));
    let key = write(dir.path(), "key.json", &key_json("x"));
    let named = env_of(&[("HOME", &home), ("GOOGLE_APPLICATION_CREDENTIALS", &key)]);
    assert_eq!(origin(&named), Origin::Variable(key.clone().into()));
    let other = tempfile::tempdir().unwrap();
    let moved = env_of(&[
        ("HOME", &home),
        ("CLOUDSDK_CONFIG", &other.path().display().to_string()),
        ("GCE_METADATA_HOST", "127.0.0.1:1"),
    ]);
    assert_eq!(
        origin(&moved),
        Origin::Metadata {
            host: "127.0.0.1:1".into(),
            named: true
        }
    );
}

#[test]
fn a_named_file_that_is_missing_malformed_or_unknown_stops_the_build() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.json").display().to_string();
    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, "{not json").unwrap();
    let unknown = write(
        dir.path(),
        "unknown.json",
        &json!({"type":"gdch_service_account"}),
    );
    for (path, says) in [
        (missing.as_str(), "cannot read"),
        (&garbage.display().to_string(), "not JSON"),
        (unknown.as_str(), "not supported"),
    ] {
        let env = env_of(&[("GOOGLE_APPLICATION_CREDENTIALS", path)]);
        let Err(e) = GoogleAuth::locate(&env, crate::http::client().unwrap()) else {
            panic!("{path} accepted")
        };
        assert_eq!(e.kind, Failure::Config);
        assert!(
            e.message.contains(says) && e.message.contains(path),
            "{}",
            e.message
        );
    }
}

/// Nothing answers at the metadata address: a Config error naming everything tried, within the
/// probe's few seconds (no retries, no hang).
#[tokio::test]
async fn no_credentials_at_all_is_a_config_error_naming_what_was_tried() {
    let dir = tempfile::tempdir().unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let host = closed.local_addr().unwrap().to_string();
    drop(closed);
    let env = env_of(&[
        ("HOME", &dir.path().display().to_string()),
        ("GCE_METADATA_HOST", &host),
    ]);
    let auth = GoogleAuth::locate(&env, crate::http::client().unwrap()).unwrap();
    let started = std::time::Instant::now();
    let e = auth.headers().await.unwrap_err();
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(e.kind, Failure::Config);
    for named in [
        "GOOGLE_APPLICATION_CREDENTIALS",
        "application_default_credentials.json",
        &host,
    ] {
        assert!(e.message.contains(named), "{}", e.message);
    }
}

#[test]
fn doctor_names_the_source_and_never_a_secret() {
    let dir = tempfile::tempdir().unwrap();
    let key = write(
        dir.path(),
        "key.json",
        &key_json("https://oauth2.example/token"),
    );
    let lines = describe_credentials(&env_of(&[
        ("GOOGLE_APPLICATION_CREDENTIALS", &key),
        ("GOOGLE_CLOUD_PROJECT", "p1"),
    ]));
    let text = lines.join("\n");
    assert!(
        text.contains(&key) && text.contains("runner@key-project"),
        "{text}"
    );
    assert!(
        text.contains("https://oauth2.example/token")
            && text.contains("p1 (from GOOGLE_CLOUD_PROJECT)")
    );
    assert!(text.contains("global (the default)"));
    assert!(!text.contains("PRIVATE KEY") && !text.contains(&key_pem()[40..80]));
    let federation = write(
        dir.path(),
        "wif.json",
        &json!({"type":"external_account","audience":"//iam.googleapis.com/x",
            "subject_token_type":"urn:ietf:params:oauth:token-type:jwt",
            "token_url":"https://sts.googleapis.com/v1/token",
            "service_account_impersonation_url":"https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/ci@p.iam.gserviceaccount.com:generateAccessToken",
            "credential_source":{"file":"/tmp/oidc-token","format":{"type":"text"}}}),
    );
    let text = describe_credentials(&env_of(&[("GOOGLE_APPLICATION_CREDENTIALS", &federation)]))
        .join("\n");
    assert!(
        text.contains("/tmp/oidc-token") && text.contains("https://sts.googleapis.com/v1/token"),
        "{text}"
    );
    assert!(
        text.contains("impersonating ci@p.iam.gserviceaccount.com"),
        "{text}"
    );
    let user = write(
        dir.path(),
        "user.json",
        &json!({"type":"authorized_user","client_id":"id","client_secret":"CLIENT-SECRET","refresh_token":"REFRESH-TOKEN"}),
    );
    let text =
        describe_credentials(&env_of(&[("GOOGLE_APPLICATION_CREDENTIALS", &user)])).join("\n");
    assert!(
        text.contains("refresh token")
            && !text.contains("REFRESH-TOKEN")
            && !text.contains("CLIENT-SECRET"),
        "{text}"
    );
    let text =
        describe_credentials(&env_of(&[("HOME", &dir.path().display().to_string())])).join("\n");
    assert!(
        text.contains("metadata server metadata.google.internal (not probed"),
        "{text}"
    );
}
