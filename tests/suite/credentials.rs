//! Credentials end to end (issue 31): every key source trimmed alike, and a key or token no
//! header can carry refused before any request (exit 2, kind `config`, the variable named and
//! never the value), per provider family; `rounds doctor` failing such a key and skipping the
//! clouds with nothing set. Redirects and token endpoints' bounds: `credential_routes.rs`.

use std::net::TcpListener;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::bedrock::{self, Auth, AwsMock};
use crate::common::mock::{MockServer, Reply, Step};
use crate::common::sse::{self, B};
use crate::common::{Run, Sandbox, run, run_within};

pub(super) const KEY: &str = "sk-test-0123456789";

/// Values that are the key once trimmed.
fn trimmed() -> Vec<String> {
    ["\n", "\r\n"]
        .iter()
        .map(|end| format!("{KEY}{end}"))
        .chain([format!("  {KEY}"), format!("\t{KEY} \n")])
        .collect()
}

/// Values no header can carry even trimmed; each holds the key's tail, which must never show.
fn unsendable() -> Vec<String> {
    vec![
        "sk-test\n0123456789".into(),
        "sk-test\r\n0123456789".into(),
        "sk-test\u{7}0123456789".into(),
        "sk-test\u{1b}0123456789".into(),
        "sk-tëst-0123456789".into(),
        "sk-test 0123456789".into(),
    ]
}

/// A provider family reached with a plain key: the variables, the model, the header the key
/// must arrive in (as the mock sees it), and an answer in its wire.
pub(super) struct Family {
    pub(super) model: &'static str,
    pub(super) key_var: &'static str,
    pub(super) url_var: &'static str,
    pub(super) header: &'static str,
    pub(super) bearer: bool,
    pub(super) answer: fn() -> Reply,
}

pub(super) fn families() -> Vec<Family> {
    let openai = || Reply::sse(sse::openai(&[B::Text("ok")], "stop", 1, 1));
    vec![
        Family {
            model: "anthropic/claude-test",
            key_var: "ANTHROPIC_API_KEY",
            url_var: "ANTHROPIC_BASE_URL",
            header: "x-api-key",
            bearer: false,
            answer: || sse::answer("ok"),
        },
        Family {
            model: "openai/gpt-4.1",
            key_var: "OPENAI_API_KEY",
            url_var: "OPENAI_BASE_URL",
            header: "authorization",
            bearer: true,
            answer: openai,
        },
        Family {
            model: "gemini/gemini-2.5-flash",
            key_var: "GEMINI_API_KEY",
            url_var: "GEMINI_BASE_URL",
            header: "x-goog-api-key",
            bearer: false,
            answer: || Reply::sse(sse::gemini(&[B::Text("ok")], 1, 1)),
        },
        Family {
            model: "azure/dep",
            key_var: "AZURE_OPENAI_API_KEY",
            url_var: "AZURE_OPENAI_ENDPOINT",
            header: "api-key",
            bearer: false,
            answer: openai,
        },
        // Azure with a user's Entra ID token: not the entry's key, read by the cloud's module.
        Family {
            model: "azure/dep",
            key_var: "AZURE_OPENAI_AD_TOKEN",
            url_var: "AZURE_OPENAI_ENDPOINT",
            header: "authorization",
            bearer: true,
            answer: openai,
        },
    ]
}

/// `-o json`'s object (the last line of stdout).
fn json_of(out: &Run) -> Value {
    let last = out.stdout.lines().last().unwrap_or("");
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {out:?}"))
}

/// What every refusal must be: exit 2, kind config, not retryable, the variable named, nothing
/// of the value shown, and quick (no request, so no retry).
fn assert_refused(out: &Run, took: Duration, var: &str, case: &str) {
    assert_eq!(out.code, 2, "{case}: {out:?}");
    let json = json_of(out);
    assert_eq!(json["failure"]["kind"], "config", "{case}: {json}");
    assert_eq!(json["failure"]["retryable"], false, "{case}: {json}");
    assert!(out.stderr.contains(var), "{case}: {}", out.stderr);
    for text in [&out.stdout, &out.stderr] {
        assert!(
            !text.contains("0123456789"),
            "{case}: the value leaked: {text}"
        );
    }
    assert!(took < Duration::from_secs(1), "{case}: took {took:?}");
}

#[test]
fn keys_from_the_environment_are_trimmed_or_refused_before_any_request() {
    for family in families() {
        let sb = Sandbox::new();
        for value in trimmed() {
            let server = MockServer::start(vec![(family.answer)()]);
            let out = run(sb
                .rounds()
                .env(family.key_var, &value)
                .env(family.url_var, server.url())
                .args(["-m", family.model, "--no-transcript", "hi"]));
            let case = format!("{} {value:?}", family.key_var);
            assert_eq!(
                (out.code, out.stdout.as_str()),
                (0, "ok\n"),
                "{case}: {out:?}"
            );
            let requests = server.requests();
            assert_eq!(requests.len(), 1, "{case}");
            let want = if family.bearer {
                format!("Bearer {KEY}")
            } else {
                KEY.to_owned()
            };
            assert_eq!(
                requests[0].header(family.header),
                Some(want.as_str()),
                "{case}"
            );
        }
        for value in unsendable() {
            let server = MockServer::start(vec![(family.answer)()]);
            let started = Instant::now();
            let out = run(sb
                .rounds()
                .env(family.key_var, &value)
                .env(family.url_var, server.url())
                .args(["-m", family.model, "--no-transcript", "-o", "json", "hi"]));
            let case = format!("{} {value:?}", family.key_var);
            assert_refused(&out, started.elapsed(), family.key_var, &case);
            assert_eq!(server.requests().len(), 0, "{case}");
        }
    }
}

#[test]
fn key_files_and_the_key_file_flag_are_trimmed_alike_and_name_their_source() {
    let sb = Sandbox::new();
    let file = sb.path("key");
    for (value, flag) in [
        (format!("  {KEY}\n"), false),
        (format!("\t{KEY}\r\n"), true),
    ] {
        std::fs::write(&file, &value).unwrap();
        let server = MockServer::start(vec![sse::answer("ok")]);
        let mut cmd = sb.rounds();
        cmd.env("ANTHROPIC_BASE_URL", server.url());
        if flag {
            cmd.arg("--api-key-file").arg(&file);
        } else {
            cmd.env("ANTHROPIC_API_KEY_FILE", &file);
        }
        let out = run(cmd.args(["-m", "anthropic/claude-test", "--no-transcript", "hi"]));
        assert_eq!(out.code, 0, "{value:?} {out:?}");
        assert_eq!(server.requests()[0].header("x-api-key"), Some(KEY));
    }
    for (flag, named) in [(false, "ANTHROPIC_API_KEY_FILE"), (true, "--api-key-file")] {
        std::fs::write(&file, "sk-tëst-0123456789\n").unwrap();
        let server = MockServer::start(vec![]);
        let mut cmd = sb.rounds();
        cmd.env("ANTHROPIC_BASE_URL", server.url());
        if flag {
            cmd.arg("--api-key-file").arg(&file);
        } else {
            cmd.env("ANTHROPIC_API_KEY_FILE", &file);
        }
        let started = Instant::now();
        let out = run(cmd.args(["-m", "anthropic/claude-test", "-o", "json", "hi"]));
        assert_refused(&out, started.elapsed(), named, named);
        assert_eq!(server.requests().len(), 0);
    }
}

/// rounds on bedrock against `mock`, the metadata service off.
fn bedrock_run(sb: &Sandbox, mock: &AwsMock) -> Command {
    let mut cmd = sb.rounds();
    cmd.env("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", mock.url())
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_REGION", "us-east-1")
        .args(["-m", "bedrock/anthropic.claude-test", "--no-transcript"]);
    cmd
}

#[test]
fn bedrock_api_keys_and_aws_keys_are_trimmed_or_refused_before_any_request() {
    let sb = Sandbox::new();
    let answer = || bedrock::response("ok", &[], "end_turn", (1, 1));
    const ID: &str = "AKIAENVEXAMPLE";
    const SECRET: &str = "env-secret-0123456789";
    for value in trimmed() {
        let mock = AwsMock::start(vec![answer()]);
        mock.accept_bearer(KEY);
        let out = run(bedrock_run(&sb, &mock)
            .env("AWS_BEARER_TOKEN_BEDROCK", &value)
            .arg("hi"));
        assert_eq!(out.code, 0, "{value:?} {out:?}");
        let seen = mock.model_requests();
        assert_eq!(seen[0].auth, Some(Auth::Bearer(KEY.into())), "{value:?}");

        // Each of the environment's keys, padded alike, still signs a request AWS accepts.
        for padded in [
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
        ] {
            let mock = AwsMock::start(vec![answer()]);
            mock.accept(ID, SECRET, Some("session-0123456789"));
            let pad = |name: &str, v: &str| match name == padded {
                true => value.replace(KEY, v),
                false => v.to_owned(),
            };
            let out = run(bedrock_run(&sb, &mock)
                .env("AWS_ACCESS_KEY_ID", pad("AWS_ACCESS_KEY_ID", ID))
                .env(
                    "AWS_SECRET_ACCESS_KEY",
                    pad("AWS_SECRET_ACCESS_KEY", SECRET),
                )
                .env(
                    "AWS_SESSION_TOKEN",
                    pad("AWS_SESSION_TOKEN", "session-0123456789"),
                )
                .arg("hi"));
            let case = format!("{padded} {value:?}");
            assert_eq!(out.code, 0, "{case}: {out:?}");
            match &mock.model_requests()[0].auth {
                Some(Auth::SigV4 {
                    access_key, valid, ..
                }) => {
                    assert_eq!((access_key.as_str(), *valid), (ID, true), "{case}");
                }
                other => panic!("{case}: {other:?}"),
            }
        }
    }
    for value in unsendable() {
        for var in [
            "AWS_BEARER_TOKEN_BEDROCK",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
        ] {
            let mock = AwsMock::start(vec![answer()]);
            let mut cmd = bedrock_run(&sb, &mock);
            if var != "AWS_BEARER_TOKEN_BEDROCK" {
                cmd.env("AWS_ACCESS_KEY_ID", ID)
                    .env("AWS_SECRET_ACCESS_KEY", SECRET);
            }
            let started = Instant::now();
            let out = run(cmd.env(var, &value).args(["-o", "json", "hi"]));
            let case = format!("{var} {value:?}");
            assert_refused(&out, started.elapsed(), var, &case);
            assert_eq!(mock.seen().len(), 0, "{case}");
        }
    }
}

#[test]
fn an_azure_client_secret_no_form_should_carry_is_refused_before_the_exchange() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![]);
    let started = Instant::now();
    let out = run(sb
        .rounds()
        .env("AZURE_OPENAI_ENDPOINT", server.url())
        .env("AZURE_CLIENT_ID", "client-1")
        .env("AZURE_TENANT_ID", "tenant-1")
        .env("AZURE_CLIENT_SECRET", "secret\n0123456789")
        .env("AZURE_AUTHORITY_HOST", server.url())
        .args(["-m", "azure/dep", "-o", "json", "hi"]));
    assert_refused(
        &out,
        started.elapsed(),
        "AZURE_CLIENT_SECRET",
        "client secret",
    );
    assert_eq!(server.requests().len(), 0);
}

/// `rounds doctor -o json` for `model` with `env` set, every endpoint on a closed loopback port
/// (the endpoint checks are not what these tests are about): its code and report.
fn doctor(sb: &Sandbox, model: &str, env: &[(&str, &str)]) -> (Run, Value) {
    let closed = {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        format!("http://127.0.0.1:{port}")
    };
    let mut cmd = sb.rounds();
    for var in [
        "ANTHROPIC_BASE_URL",
        "OPENAI_BASE_URL",
        "GEMINI_BASE_URL",
        "OPENROUTER_BASE_URL",
        "AZURE_OPENAI_ENDPOINT",
        "AWS_ENDPOINT_URL",
    ] {
        cmd.env(var, &closed);
    }
    cmd.env("AWS_EC2_METADATA_DISABLED", "true");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.args(["doctor", "-m", model, "-o", "json", "--timeout", "2"]);
    let out = run_within(&mut cmd, Duration::from_secs(30));
    let report = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    (out, report)
}

/// The check of `kind` (`key`, `auth`) for `subject` in a doctor report.
fn check<'a>(report: &'a Value, subject: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| (c["check"] == "key" || c["check"] == "auth") && c["subject"] == subject)
        .unwrap_or_else(|| panic!("no key or auth check for {subject}: {report}"))
}

#[test]
fn doctor_fails_a_key_no_header_can_carry_and_says_why_without_the_value() {
    let sb = Sandbox::new();
    let cases: &[(&str, &str)] = &[
        ("anthropic/claude-test", "ANTHROPIC_API_KEY"),
        ("azure/dep", "AZURE_OPENAI_API_KEY"),
        ("azure/dep", "AZURE_OPENAI_AD_TOKEN"),
        ("bedrock/anthropic.claude-test", "AWS_BEARER_TOKEN_BEDROCK"),
        ("bedrock/anthropic.claude-test", "AWS_ACCESS_KEY_ID"),
    ];
    for (model, var) in cases {
        let provider = model.split('/').next().unwrap_or("");
        let mut env = vec![("AWS_REGION", "us-east-1")];
        if *var == "AWS_ACCESS_KEY_ID" {
            env.push(("AWS_SECRET_ACCESS_KEY", "secret"));
        }
        let padded = format!("{KEY}\n");
        let good = [env.clone(), vec![(*var, padded.as_str())]].concat();
        let (_, report) = doctor(&sb, model, &good);
        let found = check(&report, provider);
        assert_eq!(
            found["state"], "ok",
            "{var}: a trimmed key is fine: {found}"
        );

        let bad = [env.clone(), vec![(*var, "sk-test\n0123456789")]].concat();
        let (out, report) = doctor(&sb, model, &bad);
        assert_eq!(out.code, 1, "{var}: {out:?}");
        let found = check(&report, provider);
        assert_eq!(
            (&found["state"], &found["needed"]),
            (&"fail".into(), &true.into()),
            "{var}: {found}"
        );
        let detail = found["detail"].as_str().unwrap_or("");
        assert!(
            detail.contains(var) && detail.contains("line break"),
            "{var}: {detail}"
        );
        for text in [&out.stdout, &out.stderr] {
            assert!(
                !text.contains("0123456789"),
                "{var}: the value leaked: {text}"
            );
        }
    }
}

#[test]
fn doctor_skips_bedrock_and_vertex_when_nothing_is_set_for_them() {
    let sb = Sandbox::new();
    let (_, report) = doctor(&sb, "anthropic/claude-test", &[("ANTHROPIC_API_KEY", KEY)]);
    for provider in ["bedrock", "vertex", "openai"] {
        let found = check(&report, provider);
        assert_eq!(found["state"], "skip", "{provider}: {found}");
    }
    // With nothing set, the metadata service is left; AWS_EC2_METADATA_DISABLED aside.
    let (out, report) = doctor(
        &sb,
        "anthropic/claude-test",
        &[
            ("ANTHROPIC_API_KEY", KEY),
            ("AWS_EC2_METADATA_DISABLED", "false"),
        ],
    );
    let bedrock = check(&report, "bedrock");
    assert_eq!(bedrock["state"], "skip", "{bedrock}");
    assert!(
        bedrock["detail"]
            .as_str()
            .unwrap_or("")
            .contains("not probed"),
        "{bedrock}"
    );
    // Only the run's endpoint (closed here) fails; nothing about the clouds is needed.
    assert_eq!(
        report["failed"],
        serde_json::json!(["endpoint (anthropic)"]),
        "{out:?}"
    );
}

#[test]
fn a_token_from_an_exchange_that_no_header_can_carry_is_an_auth_error_not_the_network() {
    let sb = Sandbox::new();
    let entra = MockServer::start(vec![Reply {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
        body: vec![Step::Bytes(
            br#"{"access_token":"tok\nen","expires_in":3600}"#.to_vec(),
        )],
    }]);
    let model = MockServer::start(vec![]);
    let started = Instant::now();
    let out = run(sb
        .rounds()
        .env("AZURE_OPENAI_ENDPOINT", model.url())
        .env("AZURE_CLIENT_ID", "client-1")
        .env("AZURE_TENANT_ID", "tenant-1")
        .env("AZURE_CLIENT_SECRET", "client-secret")
        .env("AZURE_AUTHORITY_HOST", entra.url())
        .args(["-m", "azure/dep", "-o", "json", "--no-transcript", "hi"]));
    assert_eq!(out.code, 1, "{out:?}");
    let json = json_of(&out);
    assert_eq!(json["failure"]["kind"], "auth", "{json}");
    assert_eq!(entra.requests().len(), 1, "not retried");
    assert_eq!(model.requests().len(), 0);
    assert!(started.elapsed() < Duration::from_secs(2));
}
