//! `--store`: runs kept in PostgreSQL as they happen, and `rounds export` writing one back as a
//! transcript that reads back equal to the file and that `--resume` accepts.
//!
//! The server comes from `common::pg`; with none, each test says why on stderr and passes.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use rounds_base::conversation::{
    Block, CallDefect, ErrorKind, StopReason, ToolResult, ToolUse, Usage,
};
use rounds_base::outcome::{Failure, FailureRecord, Status};
use rounds_base::transcript::{self, End, Limits, Line, RetryNote, Round, Start};
use rounds_store::Store;
use serde_json::{Value, json};
use tokio_postgres::NoTls;

use crate::common::mock::{MockServer, Reply, Step};
use crate::common::pg::{Schema, block_on, server, sql};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, read_jsonl, run, types};

// ---------------------------------------------------------------------------------------------
// Runs.

/// A two-round Anthropic run: thinking, text and two parallel reads, then the answer.
fn two_round_script() -> Vec<Reply> {
    vec![
        Reply::sse(sse::anthropic(
            &[
                B::Thinking("Both files matter.", "sig-1"),
                B::Text("Reading both."),
                B::Tool("toolu_1", "read_file", r#"{"path":"a.txt"}"#),
                B::Tool("toolu_2", "read_file", r#"{"path":"missing.txt"}"#),
            ],
            "tool_use",
            100,
            20,
        )),
        Reply::sse(sse::anthropic(
            &[B::Text("a.txt says alpha; missing.txt is missing.")],
            "end_turn",
            150,
            30,
        )),
    ]
}

/// `rounds` with a key, the mock as provider, the store and the transcript.
fn rounds_with_store(sb: &Sandbox, server: &MockServer, store: &str) -> Command {
    let mut cmd = sb.rounds();
    cmd.env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", server.url())
        .arg("--store")
        .arg(store)
        .arg("--transcript")
        .arg(sb.transcript_path());
    cmd
}

fn run_id(sb: &Sandbox) -> String {
    sb.transcript()[0]["run_id"].as_str().unwrap().to_owned()
}

/// `rounds export`, checked to succeed; returns stdout.
fn export(sb: &Sandbox, store: &str, run_id: &str) -> String {
    let out = run(sb.rounds().args(["export", "--store", store, run_id]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.stdout
}

/// The export and the transcript file hold the same lines, as JSON values and as the transcript
/// types `--resume` reads.
fn assert_same_transcript(exported: &str, file: &Path) {
    let exported_lines = crate::common::parse_lines(exported);
    assert_eq!(exported_lines, read_jsonl(file));
    let copy = file.with_extension("exported.jsonl");
    std::fs::write(&copy, exported).unwrap();
    assert_eq!(
        transcript::read(&copy).unwrap(),
        transcript::read(file).unwrap()
    );
}

#[test]
fn the_schema_is_created_on_first_use_and_not_migrated_again() {
    let Some(base) = server() else { return };
    let schema = Schema::new(base);
    let tables = "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() \
                  AND table_name IN ('runs', 'turn_blocks', 'turn_rounds', 'rounds_schema_migrations')";
    assert_eq!(sql(&schema.url, tables)[0].get::<_, i64>(0), 0);

    let sb = Sandbox::new();
    let server = MockServer::start(vec![sse::answer("first")]);
    let out = run(rounds_with_store(&sb, &server, &schema.url).arg("one"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(sql(&schema.url, tables)[0].get::<_, i64>(0), 4);
    let migrations = "SELECT version, applied_at::text FROM rounds_schema_migrations";
    let applied = |url: &str| -> Vec<(i32, String)> {
        sql(url, migrations)
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect()
    };
    let first = applied(&schema.url);
    assert_eq!(
        first.iter().map(|(v, _)| *v).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5, 6, 7, 8]
    );

    let server = MockServer::start(vec![sse::answer("second")]);
    let out = run(rounds_with_store(&sb, &server, &schema.url).arg("two"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(applied(&schema.url), first, "the second run migrated again");
    let runs = sql(
        &schema.url,
        "SELECT prompt, status FROM runs ORDER BY started_at",
    );
    let runs: Vec<(String, String)> = runs.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(
        runs,
        [
            (sb.turn("one"), "completed".into()),
            (sb.turn("two"), "completed".into())
        ]
    );
}

#[test]
fn runs_starting_together_on_a_new_database_migrate_once() {
    let Some(base) = server() else { return };
    let schema = Schema::new(base);
    let results = block_on(futures_util::future::join_all(
        (0..4).map(|_| rounds_store::connect(&schema.url)),
    ));
    for r in &results {
        assert!(r.is_ok(), "{:?}", r.as_ref().err());
    }
    let rows = sql(&schema.url, "SELECT count(*) FROM rounds_schema_migrations");
    assert_eq!(rows[0].get::<_, i64>(0), 8);
}

#[test]
fn blocks_land_in_order_with_their_types_and_the_run_row_is_completed() {
    let Some(base) = server() else { return };
    let schema = Schema::new(base);
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let server = MockServer::start(two_round_script());
    let out = run(rounds_with_store(&sb, &server, &schema.url).arg("what do the files say?"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let id = run_id(&sb);
    let lines = sb.transcript();

    let rows = sql(
        &schema.url,
        &format!(
            "SELECT round, sequence, block_type, content FROM turn_blocks \
             WHERE run_id = '{id}' ORDER BY round, sequence"
        ),
    );
    let got: Vec<(i32, i32, String)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    let expected: Vec<(i32, i32, String)> = [
        (0, 0, "text_content"),
        (1, 0, "thinking"),
        (1, 1, "text"),
        (1, 2, "tool_use"),
        (1, 3, "tool_use"),
        (1, 4, "tool_result"),
        (1, 5, "tool_result"),
        (2, 0, "text"),
    ]
    .into_iter()
    .map(|(r, s, t)| (r, s, t.to_owned()))
    .collect();
    assert_eq!(got, expected);
    // Each row holds the transcript's own JSON for its block or result.
    let contents: Vec<Value> = rows.iter().map(|r| r.get(3)).collect();
    assert_eq!(
        contents[0],
        json!({"type": "text", "text": sb.turn("what do the files say?")})
    );
    let round1 = &lines[1];
    assert_eq!(contents[1..5], round1["blocks"].as_array().unwrap()[..]);
    assert_eq!(contents[5..7], round1["results"].as_array().unwrap()[..]);
    assert_eq!(contents[7], lines[2]["blocks"][0]);

    let meta = sql(
        &schema.url,
        &format!("SELECT round, meta FROM turn_rounds WHERE run_id = '{id}' ORDER BY round"),
    );
    assert_eq!(meta.len(), 2);
    let meta1: Value = meta[0].get(1);
    assert_eq!(meta1["stop_reason"], "tool_use");
    assert_eq!(meta1["usage"], round1["usage"]);
    assert_eq!(meta1["time"], round1["time"]);

    let run_row = sql(
        &schema.url,
        &format!(
            "SELECT status, exit_code, rounds, tool_calls, tool_errors, provider, tools, \
             ended_at IS NOT NULL, started_at = (start_time)::timestamptz \
             FROM runs WHERE run_id = '{id}'"
        ),
    );
    let r = &run_row[0];
    assert_eq!(r.get::<_, String>(0), "completed");
    assert_eq!(r.get::<_, i32>(1), 0);
    assert_eq!(r.get::<_, i32>(2), 2);
    assert_eq!(r.get::<_, i32>(3), 2);
    assert_eq!(r.get::<_, Value>(4), json!({"failed": 1}));
    assert_eq!(r.get::<_, String>(5), "anthropic");
    assert_eq!(r.get::<_, Value>(6), lines[0]["tools"]);
    assert!(r.get::<_, bool>(7) && r.get::<_, bool>(8));
}

#[test]
fn an_export_equals_the_transcript_and_resumes_like_it() {
    let Some(base) = server() else { return };
    let schema = Schema::new(base);
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let server = MockServer::start(two_round_script());
    let out = run(rounds_with_store(&sb, &server, &schema.url).arg("what do the files say?"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let id = run_id(&sb);

    let exported = export(&sb, &schema.url, &id);
    assert_same_transcript(&exported, &sb.transcript_path());

    // --out writes the same bytes to a file.
    let file = sb.path("exported.jsonl");
    let out = run(sb
        .rounds()
        .args(["export", "--store", &schema.url, &id, "--out"])
        .arg(&file));
    assert_eq!((out.code, out.stdout.as_str()), (0, ""), "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), exported);

    // Resuming the export sends the model exactly what resuming the original does.
    let resume_body = |from: &Path| {
        let server = MockServer::start(vec![sse::answer("ok")]);
        let out = run(sb
            .anthropic(&server)
            .args(["--no-transcript", "--resume"])
            .arg(from)
            .arg("and then?"));
        assert_eq!(
            (out.code, out.stdout.as_str()),
            (0, "ok\n"),
            "{}",
            out.stderr
        );
        server.requests()[0].json()
    };
    let from_export = resume_body(&file);
    assert_eq!(from_export, resume_body(&sb.transcript_path()));
    assert_eq!(from_export["messages"].as_array().unwrap().len(), 5);
}

#[test]
fn a_run_killed_in_round_two_keeps_round_one_in_the_store() {
    let Some(base) = server() else { return };
    let schema = Schema::new(base);
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let server = MockServer::start(vec![
        Reply::sse(sse::anthropic(
            &[B::Tool("toolu_1", "read_file", r#"{"path":"a.txt"}"#)],
            "tool_use",
            10,
            5,
        )),
        // Round 2 never answers: the run is killed while waiting for it.
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: vec![Step::Sleep(Duration::from_secs(30))],
        },
    ]);
    let mut child = rounds_with_store(&sb, &server, &schema.url)
        .arg("read a.txt")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Round 1 is recorded before round 2 is requested.
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.requests().len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(server.requests().len(), 2, "round 2 was never requested");
    child.kill().unwrap();
    child.wait().unwrap();

    let id = run_id(&sb);
    let rounds = sql(
        &schema.url,
        &format!("SELECT round FROM turn_rounds WHERE run_id = '{id}' ORDER BY round"),
    );
    assert_eq!(rounds.iter().map(|r| r.get(0)).collect::<Vec<i32>>(), [1]);
    let blocks = sql(
        &schema.url,
        &format!("SELECT count(*) FROM turn_blocks WHERE run_id = '{id}' AND round = 1"),
    );
    assert_eq!(blocks[0].get::<_, i64>(0), 2);
    let ended = sql(
        &schema.url,
        &format!("SELECT status IS NULL AND ended_at IS NULL FROM runs WHERE run_id = '{id}'"),
    );
    assert!(ended[0].get::<_, bool>(0), "a killed run has no end");

    let exported = export(&sb, &schema.url, &id);
    let lines = crate::common::parse_lines(&exported);
    assert_eq!(crate::common::types(&lines), ["start", "round"]);
    assert_same_transcript(&exported, &sb.transcript_path());
}

#[test]
fn every_field_survives_the_round_trip_even_nul_characters() {
    let Some(base) = server() else { return };
    let schema = Schema::new(base);
    let call = ToolUse {
        raw_input: Some("{\"path\": \"b\u{0}.txt\"}".into()),
        signature: Some("gemini-sig".into()),
        ..ToolUse::from_raw("call_1".into(), "read_file".into(), r#"{"path":"b.txt"}"#)
    };
    let broken = ToolUse::from_raw("call_2".into(), "grep".into(), "{\"pattern\": ");
    let cut = ToolUse {
        defect: Some(CallDefect::Truncated),
        ..ToolUse::from_raw("call_3".into(), "glob".into(), "{}")
    };
    assert!(matches!(broken.defect, Some(CallDefect::InvalidJson(_))));
    let ok = ToolResult {
        tool_use_id: "call_1".into(),
        name: "read_file".into(),
        is_error: false,
        content: "bin\u{0}ary \u{10FFFF} ünïcode 🦀".into(),
        error_kind: None,
        duration_ms: 7,
        truncated: true,
        bytes: 123_456,
        full_output: Some("/tmp/out/call_1.txt".into()),
        redacted: vec!["GITHUB_TOKEN".into()],
        volatile: Vec::new(),
        exit_code: None,
        media: Vec::new(),
    };
    let start = Start {
        run_id: format!("lib-{}", schema.name),
        time: "2026-02-03T04:05:06.789Z".into(),
        provider: "openai".into(),
        model: "gpt-x".into(),
        workspace: "/ws".into(),
        prompt: "find \u{0} it".into(),
        project_docs: Vec::new(),
        system: "be brief".into(),
        tools: vec!["read_file".into(), "bash(git *)".into()],
        limits: Limits {
            max_rounds: 3,
            max_tokens: Some(100),
            budget_tokens: Some(10_000),
            budget_usd: Some(2.5),
            context_window: Some(200_000),
            timeout_secs: Some(1.5),
            tool_timeout_secs: 30.0,
            max_parallel: 2,
            max_calls_per_round: Some(16),
            max_repeats: Some(3),
            check: Some("make test".into()),
            max_checks: Some(3),
        },
        resumed_from: Some("/runs/earlier.jsonl".into()),
        sandbox: Some(
            serde_json::from_value(json!({"mode": "workspace-write", "required": false,
                "landlock_abi": 6, "network": false, "write": ["/ws", "/tmp/a\u{0}b"],
                "enforced": {"filesystem": true, "network_tcp": true, "network_other": true,
                    "processes": true, "signals": true, "abstract_unix_sockets": true}}))
            .unwrap(),
        ),
        redaction: vec!["GITHUB_TOKEN".into()],
        attachments: Vec::new(),
    };
    let lines = vec![
        Line::Start(start.clone()),
        Line::Round(Round {
            round: 1,
            time: "2026-02-03T04:05:07.000Z".into(),
            blocks: vec![
                Block::RedactedThinking {
                    data: "opaque".into(),
                },
                Block::Thinking {
                    text: "hmm".into(),
                    signature: None,
                },
                Block::Text {
                    text: "calling".into(),
                    signature: Some("s".into()),
                },
                Block::ToolUse(call.clone()),
                Block::ToolUse(broken.clone()),
                Block::ToolUse(cut.clone()),
            ],
            results: vec![
                ok,
                ToolResult::error(&broken, ErrorKind::InvalidJson, "not JSON"),
                ToolResult::error(&cut, ErrorKind::Cancelled, "cut off"),
            ],
            stop_reason: Some(StopReason::MaxTokens),
            usage: Usage {
                input_tokens: 10,
                output_tokens: 20,
                cache_read_tokens: 30,
                cache_write_tokens: 40,
                reasoning_tokens: 0,
            },
            model_ms: 1234,
            tools_ms: 56,
            retries: vec![RetryNote {
                round: 1,
                attempt: 1,
                error: "overloaded".into(),
                delay_ms: 1000,
            }],
            error: Some("stream broke \u{0} off".into()),
            summary: false,
            elided: vec!["earlier_1".into()],
            guards: vec![transcript::GuardNote {
                kind: transcript::GuardKind::Duplicate,
                tool_use_id: Some("b".into()),
                of: Some("a".into()),
                count: None,
            }],
            cost_usd: Some(0.0123),
            check: None,
        }),
        // A round with no blocks at all still exists.
        Line::Round(Round {
            round: 2,
            time: "2026-02-03T04:05:08.000Z".into(),
            blocks: vec![],
            results: vec![],
            stop_reason: None,
            usage: Usage::default(),
            model_ms: 0,
            tools_ms: 0,
            retries: vec![],
            error: None,
            summary: true,
            elided: vec![],
            guards: vec![],
            cost_usd: None,
            check: Some(rounds_base::outcome::CheckRun {
                command: "make test".into(),
                attempt: 2,
                passed: false,
                exit_code: Some(2),
                duration_ms: 120,
                output: "exit code: 2\nstdout: (empty)\nstderr:\nboom \u{0}\n".into(),
                truncated: true,
                bytes: 70_000,
                full_output: Some("/tmp/x.outputs/check-2.txt".into()),
                redacted: vec!["GH_TOKEN".into()],
            }),
        }),
        Line::End(End {
            status: Status::Unavailable,
            exit_code: 10,
            rounds: 2,
            final_text: "partial \u{0}".into(),
            usage: Usage {
                input_tokens: 10,
                output_tokens: 20,
                cache_read_tokens: 30,
                cache_write_tokens: 40,
                reasoning_tokens: 0,
            },
            cost_usd: Some(0.0123),
            duration_ms: 9_000_000_000,
            error: Some("anthropic: HTTP 429 Too Many Requests".into()),
            // Kept whole, the provider's wait with it.
            failure: Some(FailureRecord {
                kind: Failure::RateLimited,
                retryable: true,
                retry_after: Some(37.5),
            }),
            tool_calls: 3,
            tool_errors: [(ErrorKind::InvalidJson, 1), (ErrorKind::Cancelled, 1)].into(),
        }),
    ];
    let sb = Sandbox::new();
    let mut writer = transcript::Writer::create(&sb.transcript_path()).unwrap();
    let exported = block_on(async {
        let mut store = rounds_store::connect(&schema.url).await.unwrap();
        for line in &lines {
            writer.write(line).unwrap();
            store.write(line).await.unwrap();
        }
        rounds_store::export(&schema.url, &start.run_id)
            .await
            .unwrap()
    });
    // The file is written by the transcript writer itself: the export must match it exactly.
    assert_eq!(
        exported,
        std::fs::read_to_string(sb.transcript_path()).unwrap()
    );
    let read = transcript::read(&sb.transcript_path()).unwrap();
    assert_eq!(read.rounds.len(), 2);

    // Redacted reasoning is stored as thinking, with its own JSON.
    let rows = sql(
        &schema.url,
        &format!(
            "SELECT block_type, content FROM turn_blocks WHERE run_id = '{}' AND round = 1 \
             AND sequence = 0",
            start.run_id
        ),
    );
    assert_eq!(rows[0].get::<_, String>(0), "thinking");
    assert_eq!(
        rows[0].get::<_, Value>(1),
        json!({"type": "redacted_thinking", "data": "opaque"})
    );
}

#[test]
fn exporting_an_unknown_run_is_a_usage_error() {
    let Some(base) = server() else { return };
    let schema = Schema::new(base);
    let sb = Sandbox::new();
    // A database rounds never wrote to, then one it did.
    for _ in 0..2 {
        let out = run(sb
            .rounds()
            .args(["export", "--store", &schema.url, "no-such-run"]));
        assert_eq!((out.code, out.stdout.as_str()), (2, ""), "{}", out.stderr);
        assert!(
            out.stderr
                .contains("no run \"no-such-run\" in the store postgres://"),
            "{}",
            out.stderr
        );
        drop(block_on(rounds_store::connect(&schema.url)).unwrap());
    }
}

#[test]
fn an_unreachable_store_is_a_usage_error_before_any_request_and_hides_the_password() {
    // Needs no server: the point is that there is none.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://rounds:hunter2@127.0.0.1:{port}/runs?sslmode=disable");
    let sb = Sandbox::new();
    let server = MockServer::start(vec![sse::answer("never")]);
    let out =
        run(sb
            .anthropic(&server)
            .args(["--store", &url, "--no-transcript", "-o", "json", "hi"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(server.requests().len(), 0, "a request was made");
    let expected = format!("cannot connect to the store postgres://rounds@127.0.0.1:{port}/runs");
    assert!(out.stderr.contains(&expected), "{}", out.stderr);
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["status"], "usage");
    let mut said = vec![out.stderr, out.stdout];

    let out = run(sb.rounds().args(["export", "--store", &url, "some-run"]));
    assert_eq!((out.code, out.stdout.as_str()), (2, ""), "{}", out.stderr);
    assert!(out.stderr.contains(&expected), "{}", out.stderr);
    said.push(out.stderr);
    // The same from the environment, and a malformed URL.
    let out = run(sb
        .rounds()
        .env("ROUNDS_STORE", &url)
        .args(["export", "some-run"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    said.push(out.stderr);
    let out = run(sb.rounds().args([
        "export",
        "--store",
        "postgres://rounds:hunter2@127.0.0.1:notaport/runs",
        "some-run",
    ]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("invalid store URL"), "{}", out.stderr);
    said.push(out.stderr);
    for text in said {
        assert!(!text.contains("hunter2"), "{text}");
    }
}

#[test]
fn tls_follows_the_sslmode_as_libpq_does() {
    let Some(pg) = server() else { return };
    let Some(ca) = &pg.ca else {
        eprintln!("skipping: the test server has no TLS (ROUNDS_TEST_PG_CA names its CA)");
        return;
    };
    let schema = Schema::new(pg);
    let with = |params: &str| format!("{}&{params}", schema.url);
    let connect = |url: String| block_on(rounds_store::connect(&url)).map(drop);
    // require: encrypted (the server must agree), the certificate not checked.
    connect(with("sslmode=require")).unwrap();
    // verify-full: the certificate must chain to trusted roots; the test CA is not a system one.
    let err = connect(with("sslmode=verify-full"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("certificate"), "{err}");
    let trusted = with(&format!("sslmode=verify-full&sslrootcert={}", ca.display()));
    connect(trusted.clone()).unwrap();

    // A whole run over a verified connection.
    answer_and_export(&trusted, "secure");
}

/// A one-round run answering `answer`, stored at `store`, exported back equal to its transcript.
fn answer_and_export(store: &str, answer: &str) {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![Reply::sse(sse::anthropic(
        &[B::Text(answer)],
        "end_turn",
        1,
        1,
    ))]);
    let out = run(rounds_with_store(&sb, &server, store).arg("hi"));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, format!("{answer}\n").as_str()),
        "{}",
        out.stderr
    );
    assert_same_transcript(&export(&sb, store, &run_id(&sb)), &sb.transcript_path());
}

#[test]
fn a_client_certificate_logs_in_where_the_server_demands_one() {
    let Some(pg) = server() else { return };
    let (Some(ca), Some(client)) = (&pg.ca, &pg.client) else {
        eprintln!(
            "skipping: the test server has no certificate-only role \
             (ROUNDS_TEST_PG_CLIENT_CERT and ROUNDS_TEST_PG_CLIENT_KEY name its certificate)"
        );
        return;
    };
    let schema = Schema::new(pg);
    sql(
        &schema.base,
        &format!("GRANT ALL ON SCHEMA {} TO {}", schema.name, client.user),
    );
    // The same server and database, as the certificate's role and without a password.
    let mut url = reqwest::Url::parse(&schema.url).unwrap();
    url.set_username(&client.user).unwrap();
    url.set_password(None).unwrap();
    let verified = format!("{url}&sslmode=verify-full&sslrootcert={}", ca.display());
    let err = block_on(rounds_store::connect(&verified))
        .map(drop)
        .unwrap_err()
        .to_string();
    assert!(err.contains("certificate"), "refused without one: {err}");
    let with_cert = format!(
        "{verified}&sslcert={}&sslkey={}",
        client.cert.display(),
        client.key.display()
    );
    answer_and_export(&with_cert, "it is me");
    let owner = format!(
        "SELECT tableowner FROM pg_tables WHERE schemaname = '{}' AND tablename = 'runs'",
        schema.name
    );
    let owner: String = sql(&schema.base, &owner)[0].get(0);
    assert_eq!(
        owner, client.user,
        "the run was stored as the certificate's role"
    );
}

#[test]
fn a_dropped_connection_is_reopened_for_the_next_line() {
    let Some(pg) = server() else { return };
    let schema = Schema::new(pg);
    // Its own application name, to find its backend among the other tests'.
    let app = format!("a{}", schema.name);
    let url = format!("{}&application_name={app}", schema.url);
    let start = Start {
        run_id: format!("drop-{}", schema.name),
        time: "2026-02-03T04:05:06.789Z".into(),
        provider: "anthropic".into(),
        model: "m".into(),
        workspace: "/ws".into(),
        prompt: "p".into(),
        project_docs: Vec::new(),
        system: "s".into(),
        tools: vec![],
        limits: Limits {
            max_rounds: 1,
            max_tokens: None,
            budget_tokens: None,
            budget_usd: None,
            context_window: None,
            timeout_secs: None,
            tool_timeout_secs: 1.0,
            max_parallel: 1,
            max_calls_per_round: None,
            max_repeats: None,
            check: None,
            max_checks: None,
        },
        resumed_from: None,
        sandbox: None,
        redaction: Vec::new(),
        attachments: Vec::new(),
    };
    let round = Round {
        round: 1,
        time: "2026-02-03T04:05:07.000Z".into(),
        blocks: vec![Block::text("done")],
        results: vec![],
        stop_reason: Some(StopReason::EndTurn),
        usage: Usage::default(),
        model_ms: 1,
        tools_ms: 0,
        retries: vec![],
        error: None,
        summary: false,
        elided: vec![],
        guards: vec![],
        cost_usd: None,
        check: None,
    };
    let exported = block_on(async {
        let mut store = rounds_store::connect(&url).await.unwrap();
        store.write(&Line::Start(start.clone())).await.unwrap();
        let (admin, connection) = tokio_postgres::connect(&schema.url, NoTls).await.unwrap();
        tokio::spawn(connection);
        let killed = admin
            .query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE application_name = $1",
                &[&app],
            )
            .await
            .unwrap();
        assert_eq!(killed.len(), 1);
        // The round line finds the connection gone, whether or not it noticed yet.
        store.write(&Line::Round(round.clone())).await.unwrap();
        rounds_store::export(&url, &start.run_id).await.unwrap()
    });
    let lines = crate::common::parse_lines(&exported);
    assert_eq!(crate::common::types(&lines), ["start", "round"]);
    assert_eq!(
        lines[1]["blocks"],
        json!([{"type": "text", "text": "done"}])
    );
}

#[test]
fn a_version_1_database_is_upgraded_and_its_runs_still_export() {
    let Some(base) = server() else { return };
    let schema = Schema::new(base);
    // What rounds v0.1 left behind: schema version 1 and one finished run.
    let v1 = format!(
        "CREATE TABLE rounds_schema_migrations (version int PRIMARY KEY, \
         applied_at timestamptz NOT NULL DEFAULT now());\n{}\n\
         INSERT INTO rounds_schema_migrations VALUES (1, now());\n\
         INSERT INTO runs (run_id, started_at, start_time, provider, model, workspace, prompt, \
         system, tools, limits, resumed_from, ended_at, status, exit_code, rounds, final_text, \
         usage, duration_ms, error, tool_calls, tool_errors) VALUES ('old', now(), \
         '2026-01-01T00:00:00.000Z', 'anthropic', 'm', '/ws', 'p', 's', '[]', \
         '{{\"max_rounds\":1,\"max_tokens\":null,\"budget_tokens\":null,\"timeout_secs\":null,\
         \"tool_timeout_secs\":30.0,\"max_parallel\":8}}', NULL, now(), 'completed', 0, 0, '', \
         '{{\"input_tokens\":1,\"output_tokens\":1}}', 5, NULL, 0, '{{}}');\n\
         INSERT INTO turn_blocks (run_id, round, sequence, block_type, content) \
         VALUES ('old', 0, 0, 'text_content', '{{\"type\":\"text\",\"text\":\"p\"}}');",
        include_str!("../../crates/store/src/migrations/0001_runs.sql")
    );
    block_on(async {
        let (client, connection) = tokio_postgres::connect(&schema.url, NoTls).await.unwrap();
        tokio::spawn(connection);
        client.batch_execute(&v1).await.unwrap();
    });
    // Export only reads: it works on the old schema as it is.
    let jsonl = block_on(rounds_store::export(&schema.url, "old")).unwrap();
    let lines = crate::common::parse_lines(&jsonl);
    assert_eq!(types(&lines), ["start", "end"]);
    assert!(lines[0].get("sandbox").is_none(), "{}", lines[0]);
    // A run's connection migrates it, and the old run reads back the same.
    block_on(rounds_store::connect(&schema.url)).unwrap();
    let versions: Vec<i32> = sql(
        &schema.url,
        "SELECT version FROM rounds_schema_migrations ORDER BY version",
    )
    .iter()
    .map(|r| r.get(0))
    .collect();
    assert_eq!(versions, [1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(
        block_on(rounds_store::export(&schema.url, "old")).unwrap(),
        jsonl
    );
}
