//! SigV4 against botocore's signer (vectors in fixtures/wire/bedrock/sigv4-vectors.json, made by
//! sigv4_vectors.py), the refresh rule, and what `rounds doctor` is told.

use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use serde_json::Value;

use super::super::auth::{describe_credentials, fresh_for_test, sign_request};
use super::super::converse_stream_url;
use crate::testing::WIRE;

fn vectors() -> Vec<Value> {
    let text = std::fs::read_to_string(format!("{WIRE}/bedrock/sigv4-vectors.json")).unwrap();
    serde_json::from_str::<Value>(&text).unwrap()["vectors"]
        .as_array()
        .unwrap()
        .clone()
}

fn request_of(v: &Value, url: &str) -> reqwest::Request {
    let mut request =
        reqwest::Request::new(reqwest::Method::POST, reqwest::Url::parse(url).unwrap());
    for (name, value) in v["headers"].as_object().unwrap() {
        request.headers_mut().insert(
            reqwest::header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.as_str().unwrap().parse().unwrap(),
        );
    }
    *request.body_mut() = Some(v["body"].as_str().unwrap().to_owned().into());
    request
}

fn credentials_of(v: &Value) -> Credentials {
    Credentials::new(
        v["access_key_id"].as_str().unwrap(),
        v["secret_access_key"].as_str().unwrap(),
        v["session_token"].as_str().map(str::to_owned),
        None,
        "test",
    )
}

fn time_of(v: &Value) -> SystemTime {
    let at: jiff::Timestamp = v["time"].as_str().unwrap().parse().unwrap();
    SystemTime::from(at)
}

#[test]
fn signatures_match_botocores_for_the_same_request_keys_and_time() {
    let vectors = vectors();
    assert!(vectors.len() >= 4);
    for v in &vectors {
        let name = v["name"].as_str().unwrap();
        let region = v["region"].as_str().unwrap();
        // The URL is rounds' own, and must be botocore's to the byte (the model id's encoding).
        let base = format!("https://bedrock-runtime.{region}.amazonaws.com");
        let url = converse_stream_url(&base, v["model"].as_str().unwrap());
        assert_eq!(url, v["url"].as_str().unwrap(), "{name}");
        let mut request = request_of(v, &url);
        sign_request(&mut request, &credentials_of(v), region, time_of(v)).unwrap();
        for (header, want) in v["expected"].as_object().unwrap() {
            let got = request
                .headers()
                .get(header.as_str())
                .map(|h| h.to_str().unwrap());
            assert_eq!(got, want.as_str(), "{name}: {header}");
        }
        let auth = request.headers().get("authorization").unwrap();
        assert!(
            auth.is_sensitive(),
            "{name}: the signature is marked sensitive"
        );
        if v["session_token"].is_string() {
            assert!(
                request
                    .headers()
                    .get("x-amz-security-token")
                    .unwrap()
                    .is_sensitive()
            );
        }
    }
}

#[test]
fn a_signature_fails_for_another_body_time_or_key() {
    let v = &vectors()[0];
    let region = v["region"].as_str().unwrap();
    let url = v["url"].as_str().unwrap();
    let want = v["expected"]["authorization"].as_str().unwrap();
    let signed = |request: &mut reqwest::Request, creds: &Credentials, time: SystemTime| {
        sign_request(request, creds, region, time).unwrap();
        request.headers()["authorization"]
            .to_str()
            .unwrap()
            .to_owned()
    };
    let creds = credentials_of(v);
    let mut other_body = request_of(v, url);
    *other_body.body_mut() = Some("{}".into());
    assert_ne!(signed(&mut other_body, &creds, time_of(v)), want);
    let later = time_of(v) + Duration::from_secs(1);
    assert_ne!(signed(&mut request_of(v, url), &creds, later), want);
    let other_key = Credentials::new("AKIDEXAMPLE", "another-secret", None, None, "test");
    assert_ne!(
        signed(&mut request_of(v, url), &other_key, time_of(v)),
        want
    );
    // The control: the same inputs give the same signature.
    assert_eq!(signed(&mut request_of(v, url), &creds, time_of(v)), want);
}

#[test]
fn credentials_are_fetched_again_a_minute_before_they_expire() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let expiring = |secs: u64| {
        Credentials::new(
            "AKID",
            "secret",
            None,
            Some(now + Duration::from_secs(secs)),
            "t",
        )
    };
    assert!(fresh_for_test(&expiring(3600), now));
    assert!(fresh_for_test(&expiring(61), now));
    assert!(!fresh_for_test(&expiring(60), now));
    assert!(!fresh_for_test(&expiring(5), now));
    let past = Credentials::new(
        "AKID",
        "secret",
        None,
        Some(now - Duration::from_secs(1)),
        "t",
    );
    assert!(!fresh_for_test(&past, now));
    let forever = Credentials::new("AKID", "secret", None, None, "t");
    assert!(fresh_for_test(&forever, now));
}

fn describe(vars: &[(&str, &str)]) -> Vec<String> {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    describe_credentials(&|name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
}

#[test]
fn doctor_names_the_source_without_its_secret() {
    let secret = "wJalrXUtnFEMI-SECRET";
    let token = "bedrock-api-key-SECRET";
    let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
        (
            vec![
                ("AWS_BEARER_TOKEN_BEDROCK", token),
                ("AWS_ACCESS_KEY_ID", "AKID"),
            ],
            "AWS_BEARER_TOKEN_BEDROCK",
        ),
        (
            vec![
                ("AWS_ACCESS_KEY_ID", "AKID"),
                ("AWS_SECRET_ACCESS_KEY", secret),
                ("AWS_SESSION_TOKEN", secret),
            ],
            "AWS_SESSION_TOKEN",
        ),
        (
            vec![
                ("HOME", "/nonexistent"),
                ("AWS_WEB_IDENTITY_TOKEN_FILE", "/run/token"),
                ("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/ci"),
                ("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:1"),
            ],
            "arn:aws:iam::123456789012:role/ci",
        ),
        (
            vec![
                ("HOME", "/nonexistent"),
                (
                    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                    "http://127.0.0.1:2/creds",
                ),
            ],
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        ),
        (
            vec![("HOME", "/nonexistent")],
            "instance metadata service (not probed",
        ),
        (
            vec![
                ("HOME", "/nonexistent"),
                ("AWS_EC2_METADATA_DISABLED", "true"),
            ],
            "none found",
        ),
    ];
    for (vars, want) in cases {
        let lines = describe(&vars);
        let text = lines.join("\n");
        assert!(text.contains(want), "{vars:?}: {text}");
        assert!(!text.contains(secret) && !text.contains(token), "{text}");
    }
    let dir = tempfile::tempdir().unwrap();
    let creds = dir.path().join("credentials");
    std::fs::write(
        &creds,
        format!("[ci]\naws_access_key_id = AKID\naws_secret_access_key = {secret}\n"),
    )
    .unwrap();
    let text = describe(&[
        ("AWS_SHARED_CREDENTIALS_FILE", creds.to_str().unwrap()),
        ("HOME", "/nonexistent"),
        ("AWS_PROFILE", "ci"),
        ("AWS_REGION", "eu-west-1"),
    ])
    .join("\n");
    assert!(
        text.contains("profile `ci`") && text.contains(creds.to_str().unwrap()),
        "{text}"
    );
    assert!(text.contains("eu-west-1 (from AWS_REGION"), "{text}");
    assert!(!text.contains(secret), "{text}");
}
