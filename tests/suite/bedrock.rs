//! `-m bedrock/…` end to end against a loopback AWS (tests/common/bedrock.rs): a two-round tool
//! run over the Converse event stream, signed with SigV4 by keys from each source of the
//! credential chain (the mock recomputes each signature), or carrying a Bedrock API key;
//! credentials refreshed when they expire mid-run; throttling retried; a clear exit 2 when no
//! credentials or region exist; and no secret in the transcript, the output or a tool's
//! environment.

use std::process::Command;

use crate::common::bedrock::{self, Auth, AwsMock, ModelReply};
use crate::common::{Run, Sandbox, run, run_within, types};
use pretty_assertions::assert_eq;
use serde_json::json;

const MODEL: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
const PATH: &str = "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream";
const ANSWER: &str = "a.txt says alpha and b.txt says beta ✓";
const ENV_SECRET: &str = "env-secret-access-key-DO-NOT-LEAK";
const BEARER: &str = "bedrock-api-key-DO-NOT-LEAK";

fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    sb.write("b.txt", "beta\n");
    sb
}

/// Round 1 reads both files, round 2 answers.
fn two_rounds() -> Vec<ModelReply> {
    vec![
        bedrock::response(
            "Reading both.",
            &[
                ("tooluse_a", "read_file", r#"{"path":"a.txt"}"#),
                ("tooluse_b", "read_file", r#"{"path":"b.txt"}"#),
            ],
            "tool_use",
            (100, 20),
        ),
        bedrock::response(ANSWER, &[], "end_turn", (150, 30)),
    ]
}

/// rounds on bedrock, its requests sent to `mock`, IMDS off unless a test turns it back on
/// (it would otherwise be tried at 169.254.169.254 when nothing else is found).
fn rounds(sb: &Sandbox, mock: &AwsMock) -> Command {
    let mut cmd = sb.rounds();
    cmd.env("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", mock.url())
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .args(["-m", &format!("bedrock/{MODEL}"), "--retry-delay", "0.05"])
        .arg("--transcript")
        .arg(sb.transcript_path());
    cmd
}

fn read_both(cmd: &mut Command) -> Run {
    let out = run_within(
        cmd.arg("read both files"),
        std::time::Duration::from_secs(60),
    );
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, format!("{ANSWER}\n").as_str()),
        "{}",
        out.stderr
    );
    out
}

/// Both model requests went to the Converse path, signed by `keys` in order (valid for the
/// secret the mock holds), and the transcript is the two rounds.
fn check_signed(sb: &Sandbox, mock: &AwsMock, region: &str, keys: &[&str]) {
    let requests = mock.model_requests();
    let signers: Vec<String> = requests
        .iter()
        .map(|r| match &r.auth {
            Some(Auth::SigV4 {
                access_key,
                valid: true,
                scope,
            }) => {
                assert!(
                    scope.ends_with(&format!("/{region}/bedrock/aws4_request")),
                    "{scope}"
                );
                access_key.clone()
            }
            other => panic!("not a valid SigV4 signature: {other:?}"),
        })
        .collect();
    assert_eq!(signers, keys);
    for r in &requests {
        assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", PATH));
        assert_eq!(
            r.header("accept"),
            Some("application/vnd.amazon.eventstream")
        );
    }
    check_transcript(sb, mock);
}

fn check_transcript(sb: &Sandbox, mock: &AwsMock) {
    let lines = sb.transcript();
    assert_eq!(types(&lines), ["start", "round", "round", "end"]);
    assert_eq!(lines[0]["provider"], "bedrock");
    assert_eq!(lines[0]["model"], MODEL);
    assert_eq!(
        lines[1]["blocks"],
        json!([
            {"type":"text","text":"Reading both."},
            {"type":"tool_use","id":"tooluse_a","name":"read_file","input":{"path":"a.txt"}},
            {"type":"tool_use","id":"tooluse_b","name":"read_file","input":{"path":"b.txt"}},
        ])
    );
    assert_eq!(lines[1]["stop_reason"], "tool_use");
    assert_eq!(
        lines[3]["usage"],
        json!({"input_tokens":250,"output_tokens":50})
    );
    assert_eq!(lines[3]["final_text"], ANSWER);
    // The second request carries the calls and their results in Converse's shape.
    let requests = mock.model_requests();
    let second = requests[1].json();
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(
        messages[1]["content"][1],
        json!({"toolUse": {"toolUseId": "tooluse_a", "name": "read_file", "input": {"path": "a.txt"}}})
    );
    assert_eq!(
        messages[2]["content"][0],
        json!({"toolResult": {"toolUseId": "tooluse_a", "content": [{"text": "     1\talpha\n"}]}})
    );
    assert_eq!(
        messages[2]["content"][2],
        json!({"cachePoint": {"type": "default"}})
    );
    let tools: Vec<&str> = second["toolConfig"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["toolSpec"]["name"].as_str())
        .collect();
    assert_eq!(tools, ["read_file", "list_dir", "glob", "grep"]);
}

#[test]
fn environment_keys_sign_a_two_round_tool_run() {
    let sb = sandbox();
    let mock = AwsMock::start(two_rounds());
    mock.accept("AKIAENVEXAMPLE", ENV_SECRET, None);
    read_both(
        rounds(&sb, &mock)
            .env("AWS_ACCESS_KEY_ID", "AKIAENVEXAMPLE")
            .env("AWS_SECRET_ACCESS_KEY", ENV_SECRET)
            .env("AWS_REGION", "eu-west-1"),
    );
    check_signed(
        &sb,
        &mock,
        "eu-west-1",
        &["AKIAENVEXAMPLE", "AKIAENVEXAMPLE"],
    );
}

#[test]
fn a_wrong_secret_is_refused_as_auth_not_retried() {
    // The control for every signing test: the mock does refuse a signature it cannot verify.
    let sb = sandbox();
    let mock = AwsMock::start(two_rounds());
    mock.accept("AKIAENVEXAMPLE", "the-real-secret", None);
    let out = run(rounds(&sb, &mock)
        .env("AWS_ACCESS_KEY_ID", "AKIAENVEXAMPLE")
        .env("AWS_SECRET_ACCESS_KEY", ENV_SECRET)
        .env("AWS_REGION", "eu-west-1")
        .arg("read both files"));
    assert_ne!(out.code, 0);
    assert!(
        out.stderr.contains("InvalidSignatureException"),
        "{}",
        out.stderr
    );
    assert_eq!(
        mock.model_requests().len(),
        1,
        "an auth failure is not retried"
    );
    assert!(matches!(
        mock.model_requests()[0].auth,
        Some(Auth::SigV4 { valid: false, .. })
    ));
}

#[test]
fn a_profile_in_the_shared_files_gives_keys_and_region() {
    let sb = sandbox();
    let mock = AwsMock::start(two_rounds());
    mock.accept(
        "AKIAPROFILE",
        "profile-secret-DO-NOT-LEAK",
        Some("profile-token"),
    );
    std::fs::write(
        sb.path("credentials"),
        "[default]\naws_access_key_id = AKIAWRONG\naws_secret_access_key = wrong\n\n\
         [ci]\naws_access_key_id = AKIAPROFILE\naws_secret_access_key = profile-secret-DO-NOT-LEAK\n\
         aws_session_token = profile-token\n",
    )
    .unwrap();
    std::fs::write(sb.path("config"), "[profile ci]\nregion = ap-southeast-2\n").unwrap();
    read_both(
        rounds(&sb, &mock)
            .env("AWS_SHARED_CREDENTIALS_FILE", sb.path("credentials"))
            .env("AWS_CONFIG_FILE", sb.path("config"))
            .env("AWS_PROFILE", "ci"),
    );
    check_signed(
        &sb,
        &mock,
        "ap-southeast-2",
        &["AKIAPROFILE", "AKIAPROFILE"],
    );
    let first = &mock.model_requests()[0];
    assert_eq!(first.header("x-amz-security-token"), Some("profile-token"));
}

/// A GitHub Actions job's OIDC setup: a token file and a role, exchanged at (mock) STS.
fn web_identity(sb: &Sandbox, mock: &AwsMock, cmd: &mut Command) {
    std::fs::write(
        sb.path("oidc-token"),
        "eyJhbGciOiJSUzI1NiJ9.github-oidc.sig",
    )
    .unwrap();
    cmd.env("AWS_WEB_IDENTITY_TOKEN_FILE", sb.path("oidc-token"))
        .env("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/ci")
        .env("AWS_ROLE_SESSION_NAME", "rounds-ci")
        .env("AWS_ENDPOINT_URL_STS", mock.url())
        .env("AWS_REGION", "us-east-1");
}

#[test]
fn web_identity_is_exchanged_at_sts_for_signing_keys() {
    let sb = sandbox();
    let mock = AwsMock::start(two_rounds());
    let mut cmd = rounds(&sb, &mock);
    web_identity(&sb, &mock, &mut cmd);
    read_both(&mut cmd);
    check_signed(&sb, &mock, "us-east-1", &["ASIASTS1", "ASIASTS1"]);
    assert_eq!(
        mock.issued("sts"),
        1,
        "fresh credentials are cached across rounds"
    );
    let sts = mock.seen().into_iter().find(|s| !s.is_model()).unwrap();
    let form = String::from_utf8(sts.body).unwrap();
    for part in [
        "Action=AssumeRoleWithWebIdentity",
        "RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Fci",
        "RoleSessionName=rounds-ci",
        "WebIdentityToken=eyJhbGciOiJSUzI1NiJ9.github-oidc.sig",
    ] {
        assert!(form.contains(part), "{part} not in {form}");
    }
    assert_eq!(
        mock.model_requests()[0].header("x-amz-security-token"),
        Some("sts-session-token-1-DO-NOT-LEAK")
    );
}

#[test]
fn credentials_that_expire_during_a_run_are_fetched_again() {
    let sb = sandbox();
    let mock = AwsMock::start(two_rounds());
    // Thirty seconds left is within the minute rounds refreshes ahead of expiry.
    mock.lifetime(30);
    let mut cmd = rounds(&sb, &mock);
    web_identity(&sb, &mock, &mut cmd);
    read_both(&mut cmd);
    assert_eq!(mock.issued("sts"), 2);
    check_signed(&sb, &mock, "us-east-1", &["ASIASTS1", "ASIASTS2"]);
}

#[test]
fn container_credentials_on_loopback_sign_the_run() {
    let sb = sandbox();
    let mock = AwsMock::start(two_rounds());
    read_both(
        rounds(&sb, &mock)
            .env(
                "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                format!("{}/container-credentials", mock.url()),
            )
            .env("AWS_REGION", "us-west-2"),
    );
    check_signed(
        &sb,
        &mock,
        "us-west-2",
        &["ASIACONTAINER1", "ASIACONTAINER1"],
    );
}

#[test]
fn instance_metadata_credentials_sign_the_run() {
    let sb = sandbox();
    let mock = AwsMock::start(two_rounds());
    read_both(
        rounds(&sb, &mock)
            .env_remove("AWS_EC2_METADATA_DISABLED")
            .env("AWS_EC2_METADATA_SERVICE_ENDPOINT", mock.url())
            .env("AWS_REGION", "us-west-2"),
    );
    check_signed(&sb, &mock, "us-west-2", &["ASIAIMDS1", "ASIAIMDS1"]);
    let token_put = mock.seen().into_iter().find(|s| s.method == "PUT").unwrap();
    assert_eq!(
        token_put.path, "/latest/api/token",
        "IMDSv2, with a session token"
    );
}

#[test]
fn a_bedrock_api_key_is_sent_as_a_bearer_token_unsigned() {
    let sb = sandbox();
    let mock = AwsMock::start(two_rounds());
    mock.accept_bearer(BEARER);
    // No region needed: the endpoint is given and nothing is signed.
    read_both(rounds(&sb, &mock).env("AWS_BEARER_TOKEN_BEDROCK", BEARER));
    let requests = mock.model_requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(r.auth, Some(Auth::Bearer(BEARER.into())));
        assert_eq!(r.header("x-amz-date"), None);
    }
    check_transcript(&sb, &mock);
}

#[test]
fn throttling_before_and_during_the_stream_is_retried() {
    let sb = sandbox();
    let mut replies = vec![
        ModelReply::Error(
            429,
            "ThrottlingException",
            "Too many requests, please wait.",
        ),
        ModelReply::Frames(vec![
            bedrock::event("messageStart", json!({"role": "assistant"})),
            bedrock::exception("throttlingException", "Too many tokens, please wait."),
        ]),
    ];
    replies.extend(two_rounds());
    let mock = AwsMock::start(replies);
    mock.accept_bearer(BEARER);
    let out = read_both(rounds(&sb, &mock).env("AWS_BEARER_TOKEN_BEDROCK", BEARER));
    assert_eq!(mock.model_requests().len(), 4, "{}", out.stderr);
    // The control: a validation error is the request's fault and is not retried.
    let sb = sandbox();
    let mock = AwsMock::start(vec![ModelReply::Error(
        400,
        "ValidationException",
        "extraneous key [foo] is not permitted",
    )]);
    mock.accept_bearer(BEARER);
    let out = run(rounds(&sb, &mock)
        .env("AWS_BEARER_TOKEN_BEDROCK", BEARER)
        .arg("read both files"));
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("extraneous key"), "{}", out.stderr);
    assert_eq!(mock.model_requests().len(), 1);
}

#[test]
fn no_credentials_anywhere_is_exit_2_naming_what_was_tried() {
    let sb = sandbox();
    let mock = AwsMock::start(two_rounds());
    let out = run_within(
        rounds(&sb, &mock)
            .env("AWS_REGION", "us-east-1")
            .arg("read both files"),
        std::time::Duration::from_secs(30),
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    for tried in [
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_ACCESS_KEY_ID",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "instance metadata",
    ] {
        assert!(
            out.stderr.contains(tried),
            "{tried} not named: {}",
            out.stderr
        );
    }
    assert!(mock.model_requests().is_empty());
}

#[test]
fn no_region_is_exit_2_before_any_request() {
    let sb = sandbox();
    let mock = AwsMock::start(two_rounds());
    let out = run_within(
        sb.rounds()
            .env("AWS_ACCESS_KEY_ID", "AKIAENVEXAMPLE")
            .env("AWS_SECRET_ACCESS_KEY", ENV_SECRET)
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .args(["-m", &format!("bedrock/{MODEL}"), "read both files"]),
        std::time::Duration::from_secs(30),
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("no AWS region"), "{}", out.stderr);
    assert!(out.stderr.contains("--region"), "{}", out.stderr);
    assert!(mock.seen().is_empty());
    // `--region` is enough (the endpoint is the region's; nothing is listening here, so the
    // run fails later, on the network, not on its setup).
    let out = run_within(
        rounds(&sb, &mock)
            .env("AWS_ACCESS_KEY_ID", "AKIAENVEXAMPLE")
            .env("AWS_SECRET_ACCESS_KEY", ENV_SECRET)
            .args(["--region", "eu-north-1", "--max-retries", "0"])
            .arg("read both files"),
        std::time::Duration::from_secs(30),
    );
    assert!(!out.stderr.contains("no AWS region"), "{}", out.stderr);
}

#[test]
fn no_secret_reaches_the_transcript_the_output_or_a_tools_environment() {
    let sb = sandbox();
    let env_cmd = json!({"command": "env"}).to_string();
    let mock = AwsMock::start(vec![
        bedrock::response(
            "",
            &[("tooluse_env", "bash", &env_cmd)],
            "tool_use",
            (10, 5),
        ),
        bedrock::response("done", &[], "end_turn", (10, 5)),
    ]);
    mock.lifetime(30);
    let mut cmd = rounds(&sb, &mock);
    web_identity(&sb, &mock, &mut cmd);
    cmd.env("AWS_SECRET_ACCESS_KEY", ENV_SECRET)
        .env("AWS_SESSION_TOKEN", "env-session-token-DO-NOT-LEAK")
        .env("AWS_BEARER_TOKEN_BEDROCK_UNUSED", BEARER)
        .args(["-a", "bash", "-v", "done?"]);
    let out = run_within(&mut cmd, std::time::Duration::from_secs(60));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let transcript = std::fs::read_to_string(sb.transcript_path()).unwrap();
    let lines = sb.transcript();
    let env_output = lines[1]["results"][0]["content"].as_str().unwrap();
    // The control: the tool did print its environment (the variables it is given are there).
    assert!(env_output.contains("PATH="), "{env_output}");
    for name in [
        "AWS_SECRET_ACCESS_KEY=",
        "AWS_SESSION_TOKEN=",
        "AWS_BEARER_TOKEN_BEDROCK",
    ] {
        assert!(
            !env_output.contains(name),
            "{name} reached the tool: {env_output}"
        );
    }
    let mut secrets = mock.issued_secrets();
    secrets.extend([
        ENV_SECRET.into(),
        "env-session-token-DO-NOT-LEAK".into(),
        BEARER.into(),
    ]);
    assert!(mock.issued("sts") >= 1);
    for secret in &secrets {
        for (what, text) in [
            ("transcript", &transcript),
            ("stdout", &out.stdout),
            ("stderr", &out.stderr),
        ] {
            assert!(!text.contains(secret.as_str()), "{secret} in the {what}");
        }
    }
}

#[test]
fn tracing_everything_still_shows_no_secret() {
    let sb = sandbox();
    let mock = AwsMock::start(two_rounds());
    let mut cmd = rounds(&sb, &mock);
    web_identity(&sb, &mock, &mut cmd);
    cmd.env("ROUNDS_LOG", "trace");
    let out = read_both(&mut cmd);
    // The control: everything was traced (AWS's crates included, up to INFO).
    assert!(out.stderr.contains("converse-stream"), "{}", out.stderr);
    for secret in mock.issued_secrets() {
        assert!(!out.stderr.contains(&secret), "{secret} in the trace log");
    }
}

/// A batch's jobs share one credential chain: one STS exchange for all of them, where each job
/// made its own (a token service throttles a batch that asks once per job).
#[test]
fn a_batchs_jobs_share_one_web_identity_exchange() {
    let sb = sandbox();
    let jobs = 4;
    let replies = (0..jobs)
        .map(|_| bedrock::response("done", &[], "end_turn", (10, 5)))
        .collect();
    let mock = AwsMock::start(replies);
    let lines: String = (0..jobs)
        .map(|i| format!("{{\"id\":\"job-{i}\",\"prompt\":\"Do job {i}.\"}}\n"))
        .collect();
    sb.write("jobs.jsonl", &lines);
    let mut cmd = sb.rounds();
    cmd.env("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", mock.url())
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .args(["batch", "jobs.jsonl", "--jobs", "2", "--out"])
        .arg(sb.path("out"))
        .args(["-m", &format!("bedrock/{MODEL}")]);
    web_identity(&sb, &mock, &mut cmd);
    let out = run_within(&mut cmd, std::time::Duration::from_secs(60));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(mock.model_requests().len(), jobs);
    assert_eq!(mock.issued("sts"), 1, "one exchange for the whole batch");
}

/// `--resume` across the clouds: an Anthropic run (thinking signed by Anthropic, a tool call)
/// continues on Bedrock in Converse's shape without Anthropic's signature, and that run
/// continues on Azure in OpenAI's.
#[test]
fn a_run_resumes_across_providers_and_clouds_in_each_ones_shape() {
    use crate::common::mock::{MockServer, Reply};
    use crate::common::sse::{self, B};
    let sb = sandbox();
    let first = super::resume::anthropic_run(&sb);

    let mock = AwsMock::start(vec![bedrock::response("ALPHA", &[], "end_turn", (10, 5))]);
    mock.accept("AKIAENVEXAMPLE", ENV_SECRET, None);
    let second = sb.path("second.jsonl");
    let out = run(sb
        .rounds()
        .env("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", mock.url())
        .env("AWS_ACCESS_KEY_ID", "AKIAENVEXAMPLE")
        .env("AWS_SECRET_ACCESS_KEY", ENV_SECRET)
        .env("AWS_REGION", "us-east-1")
        .args(["-m", &format!("bedrock/{MODEL}"), "--resume"])
        .arg(&first)
        .arg("--transcript")
        .arg(&second)
        .arg("and in upper case?"));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "ALPHA\n"),
        "{}",
        out.stderr
    );
    let body = mock.model_requests()[0].json();
    let text = body.to_string();
    assert!(
        !text.contains("sig-anthropic") && !text.contains("I should read it."),
        "{text}"
    );
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 5, "{body:#}");
    assert_eq!(
        messages[1]["content"][1],
        json!({"toolUse": {"toolUseId": "toolu_1", "name": "read_file", "input": {"path": "a.txt"}}})
    );
    assert_eq!(
        messages[2]["content"][0]["toolResult"]["toolUseId"],
        "toolu_1"
    );

    let azure = MockServer::start(vec![Reply::sse(sse::openai(
        &[B::Text("ok")],
        "stop",
        1,
        1,
    ))]);
    let out = run(sb
        .rounds()
        .env("AZURE_OPENAI_API_KEY", "k")
        .env("AZURE_OPENAI_ENDPOINT", azure.url())
        .args(["-m", "azure/dep", "--no-transcript", "--resume"])
        .arg(&second)
        .arg("thanks"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let body = azure.requests()[0].json();
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "developer",
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant",
            "user"
        ]
    );
    assert_eq!(body["messages"][2]["tool_calls"][0]["id"], "toolu_1");
}
