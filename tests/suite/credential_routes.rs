//! Where credentials go and how long rounds listens for them (issue 31): no credential follows
//! a redirect to another origin, for model requests and every token exchange (Entra ID, Google's
//! service-account exchange, STS), with a redirect within the origin as the control; and token
//! endpoints whose answer is endless or trickles end quickly, in bounded memory.

use std::io::{BufReader, Write};
use std::net::TcpListener;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::credentials::{KEY, families};
use crate::common::mock::{MockServer, Recorded, Reply, read_request};
use crate::common::vertex::{key_file, write_json};
use crate::common::{Sandbox, run};

/// A server on its own port (so another origin than any other) that answers every request
/// with a redirect to `to` + the request's path.
fn redirector(to: String) -> MockServer {
    MockServer::respond(move |r: &Recorded| Reply {
        status: 307,
        headers: vec![("location".into(), format!("{to}{}", r.path))],
        body: vec![],
    })
}

#[test]
fn no_key_follows_a_redirect_to_another_origin_and_one_within_the_origin_still_works() {
    for family in families() {
        let sb = Sandbox::new();
        // The other origin: it would answer, and must see nothing.
        let elsewhere = MockServer::start(vec![(family.answer)(), (family.answer)()]);
        let first = redirector(elsewhere.url());
        let out = run(sb
            .rounds()
            .env(family.key_var, KEY)
            .env(family.url_var, first.url())
            .args([
                "-m",
                family.model,
                "--max-retries",
                "0",
                "--no-transcript",
                "hi",
            ]));
        let case = family.key_var;
        assert_eq!(first.requests().len(), 1, "{case}");
        assert!(
            first.requests()[0].header(family.header).is_some(),
            "{case}: the first origin is the configured one"
        );
        assert_eq!(
            elsewhere.requests().len(),
            0,
            "{case}: followed to another origin"
        );
        assert_eq!(out.code, 1, "{case}: {out:?}");
        assert!(
            out.stderr.contains("another origin"),
            "{case}: {}",
            out.stderr
        );
        assert!(!out.stderr.contains(KEY));

        // The control: a redirect within the origin is followed, and the key goes with it, as
        // it would have gone to another origin without the policy.
        let hops = Arc::new(AtomicUsize::new(0));
        let counted = hops.clone();
        let answer = family.answer;
        let same: Arc<Mutex<Option<String>>> = Arc::default();
        let base = same.clone();
        let server = MockServer::respond(move |r: &Recorded| {
            if r.path.starts_with("/moved") {
                return answer();
            }
            counted.fetch_add(1, Ordering::SeqCst);
            let to = base.lock().unwrap().clone().unwrap_or_default();
            Reply {
                status: 307,
                headers: vec![("location".into(), format!("{to}/moved{}", r.path))],
                body: vec![],
            }
        });
        *same.lock().unwrap() = Some(server.url());
        let out = run(sb
            .rounds()
            .env(family.key_var, KEY)
            .env(family.url_var, server.url())
            .args(["-m", family.model, "--no-transcript", "hi"]));
        assert_eq!(
            (out.code, out.stdout.as_str()),
            (0, "ok\n"),
            "{case}: {out:?}"
        );
        let requests = server.requests();
        assert_eq!(hops.load(Ordering::SeqCst), 1);
        assert!(requests[1].path.starts_with("/moved"), "{case}");
        assert!(
            requests[1].header(family.header).is_some(),
            "{case}: control: the redirected request carries the key"
        );
    }
}

#[test]
fn no_secret_follows_a_token_endpoint_redirect_to_another_origin() {
    let sb = Sandbox::new();

    // Entra ID: the client secret is in the form.
    let elsewhere = MockServer::start(vec![]);
    let first = redirector(elsewhere.url());
    let model = MockServer::start(vec![]);
    let out = run(sb
        .rounds()
        .env("AZURE_OPENAI_ENDPOINT", model.url())
        .env("AZURE_CLIENT_ID", "client-1")
        .env("AZURE_TENANT_ID", "tenant-1")
        .env("AZURE_CLIENT_SECRET", "client-secret-0123456789")
        .env("AZURE_AUTHORITY_HOST", first.url())
        .args([
            "-m",
            "azure/dep",
            "--max-retries",
            "0",
            "--no-transcript",
            "hi",
        ]));
    assert_eq!(first.requests().len(), 1, "{out:?}");
    assert!(String::from_utf8_lossy(&first.requests()[0].body).contains("client_secret"));
    assert_eq!(elsewhere.requests().len(), 0, "entra: followed: {out:?}");
    assert_ne!(out.code, 0);
    assert_eq!(model.requests().len(), 0);

    // Google's service-account exchange: the signed assertion is in the form.
    let elsewhere = MockServer::start(vec![]);
    let first = redirector(elsewhere.url());
    let key = sb.path("key.json");
    write_json(&key, &key_file(&first.url()));
    let out = run(sb
        .rounds()
        .env("GOOGLE_APPLICATION_CREDENTIALS", &key)
        .args(["--base-url", &model.url()])
        .args(["-m", "vertex/gemini-2.5-pro", "--max-retries", "0", "hi"]));
    assert_eq!(first.requests().len(), 1, "{out:?}");
    assert!(String::from_utf8_lossy(&first.requests()[0].body).contains("assertion"));
    assert_eq!(elsewhere.requests().len(), 0, "vertex: followed: {out:?}");
    assert_ne!(out.code, 0);

    // STS: the web identity token is in the query or form.
    let elsewhere = MockServer::start(vec![]);
    let first = redirector(elsewhere.url());
    std::fs::write(sb.path("oidc-token"), "oidc-token-0123456789").unwrap();
    let out = run(sb
        .rounds()
        .env("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", model.url())
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_WEB_IDENTITY_TOKEN_FILE", sb.path("oidc-token"))
        .env("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/ci")
        .env("AWS_ENDPOINT_URL_STS", first.url())
        .env("AWS_REGION", "us-east-1")
        .args([
            "-m",
            "bedrock/anthropic.claude-test",
            "--max-retries",
            "0",
            "hi",
        ]));
    assert!(!first.requests().is_empty(), "{out:?}");
    assert_eq!(elsewhere.requests().len(), 0, "sts: followed: {out:?}");
    assert_ne!(out.code, 0);
    assert_eq!(model.requests().len(), 0);
}

/// A token endpoint on loopback that answers every request with 200 and a JSON body that
/// never ends (`trickle`: a byte now and then, else as fast as the socket takes it).
fn endless_token_endpoint(trickle: Option<Duration>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let Some(_) = read_request(&mut reader) else {
                    return;
                };
                let mut w = stream;
                let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                            transfer-encoding: chunked\r\n\r\n1\r\n{\r\n";
                if w.write_all(head.as_bytes()).is_err() {
                    return;
                }
                let chunk = match trickle {
                    Some(_) => b"1\r\n \r\n".to_vec(),
                    None => {
                        let data = vec![b' '; 64 * 1024];
                        [
                            format!("{:x}\r\n", data.len()).into_bytes(),
                            data,
                            b"\r\n".to_vec(),
                        ]
                        .concat()
                    }
                };
                while w.write_all(&chunk).is_ok() {
                    if let Some(pause) = trickle {
                        std::thread::sleep(pause);
                    }
                }
            });
        }
    });
    url
}

/// A run whose token comes from `token_url` (Entra ID for `azure`, a key file's `token_uri`
/// for `vertex`), with the output to files so the peak RSS can be sampled.
fn token_run(sb: &Sandbox, cloud: &str, token_url: &str, model: &str, idle: &str) -> Command {
    let mut cmd = sb.rounds();
    match cloud {
        "sts" => {
            std::fs::write(sb.path("oidc-token"), "oidc-token").unwrap();
            cmd.env("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", model)
                .env("AWS_EC2_METADATA_DISABLED", "true")
                .env("AWS_WEB_IDENTITY_TOKEN_FILE", sb.path("oidc-token"))
                .env("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/ci")
                .env("AWS_ENDPOINT_URL_STS", token_url)
                .env("AWS_REGION", "us-east-1")
                .args(["-m", "bedrock/anthropic.claude-test"]);
        }
        "azure" => {
            cmd.env("AZURE_OPENAI_ENDPOINT", model)
                .env("AZURE_CLIENT_ID", "client-1")
                .env("AZURE_TENANT_ID", "tenant-1")
                .env("AZURE_CLIENT_SECRET", "client-secret")
                .env("AZURE_AUTHORITY_HOST", token_url)
                .args(["-m", "azure/dep"]);
        }
        _ => {
            let key = sb.path("key.json");
            write_json(&key, &key_file(token_url));
            cmd.env("GOOGLE_APPLICATION_CREDENTIALS", &key).args([
                "--base-url",
                model,
                "-m",
                "vertex/gemini-2.5-pro",
            ]);
        }
    }
    cmd.args(["--idle-timeout", idle, "--max-retries", "0", "-o", "json"])
        .arg("--no-transcript")
        .arg("hi")
        .stdout(std::fs::File::create(sb.path("out")).unwrap())
        .stderr(std::fs::File::create(sb.path("err")).unwrap());
    cmd
}

#[test]
fn an_endless_token_answer_ends_as_an_auth_error_in_bounded_memory() {
    for cloud in ["azure", "vertex", "sts"] {
        let sb = Sandbox::new();
        let model = MockServer::start(vec![]);
        let endpoint = endless_token_endpoint(None);
        // A long idle timeout: only the size cap can end this quickly.
        let cmd = token_run(&sb, cloud, &endpoint, &model.url(), "60");
        let measured = crate::common::measure::measured(cmd);
        let stderr = std::fs::read_to_string(sb.path("err")).unwrap();
        let stdout = std::fs::read_to_string(sb.path("out")).unwrap();
        eprintln!(
            "{cloud}: endless token answer: {:?}, peak RSS {} KiB",
            measured.wall, measured.peak_kib
        );
        assert_eq!(measured.code, 1, "{cloud}: {stderr}");
        assert!(stderr.contains("larger than"), "{cloud}: {stderr}");
        let json: Value = serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap();
        assert_eq!(json["failure"]["kind"], "auth", "{cloud}: {json}");
        assert!(
            measured.wall < Duration::from_secs(10),
            "{cloud}: {:?}",
            measured.wall
        );
        assert!(
            measured.peak_kib < 200 * 1024,
            "{cloud}: {} KiB",
            measured.peak_kib
        );
        assert_eq!(model.requests().len(), 0);
    }
}

#[test]
fn a_trickling_token_answer_ends_after_the_idle_timeout() {
    for cloud in ["azure", "vertex", "sts"] {
        let sb = Sandbox::new();
        let model = MockServer::start(vec![]);
        let endpoint = endless_token_endpoint(Some(Duration::from_millis(100)));
        let started = Instant::now();
        let mut cmd = token_run(&sb, cloud, &endpoint, &model.url(), "2");
        let status = cmd.status().unwrap();
        let took = started.elapsed();
        let stderr = std::fs::read_to_string(sb.path("err")).unwrap();
        eprintln!("{cloud}: trickling token answer ended after {took:?}");
        assert_ne!(status.code(), Some(0), "{cloud}: {stderr}");
        assert!(took < Duration::from_secs(6), "{cloud}: {took:?} {stderr}");
        assert!(took >= Duration::from_secs(2), "{cloud}: {took:?} {stderr}");
        assert!(stderr.contains("2s"), "{cloud}: {stderr}");
        assert_eq!(model.requests().len(), 0);
    }
}

#[test]
fn a_signed_bedrock_request_does_not_follow_a_redirect_to_another_origin() {
    // reqwest strips `Authorization` across origins itself, but not `x-amz-security-token`.
    let sb = Sandbox::new();
    let elsewhere = MockServer::start(vec![]);
    let first = redirector(elsewhere.url());
    let out = run(sb
        .rounds()
        .env("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", first.url())
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "AKIAENVEXAMPLE")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_SESSION_TOKEN", "session-token-0123456789")
        .args(["-m", "bedrock/anthropic.claude-test", "--max-retries", "0"])
        .args(["--no-transcript", "hi"]));
    assert_eq!(first.requests().len(), 1, "{out:?}");
    assert!(first.requests()[0].header("x-amz-security-token").is_some());
    assert_eq!(elsewhere.requests().len(), 0, "followed: {out:?}");
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("another origin"), "{}", out.stderr);
    assert!(!out.stderr.contains("0123456789"));
}
