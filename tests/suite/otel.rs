//! OpenTelemetry (issue 33), end to end: the real binary exports to a loopback OTLP/HTTP
//! receiver, which decodes each request with the official protobuf definitions
//! (`opentelemetry-proto`), not rounds' own types.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::{Span, status};
use prost::Message;
use serde_json::json;

use super::settings::{project_file, user_file};
use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Sandbox, run};

/// The CI job's span rounds runs under.
const PARENT_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const PARENT_SPAN: &str = "b7ad6b7169203331";

/// A collector that takes everything.
fn receiver() -> MockServer {
    MockServer::respond(|_| Reply {
        status: 200,
        headers: vec![("content-type".into(), "application/x-protobuf".into())],
        body: vec![],
    })
}

/// Every span the receiver got, by name (several of one name in the order received).
fn spans(receiver: &MockServer) -> Vec<Span> {
    let mut all = Vec::new();
    for request in receiver
        .requests()
        .iter()
        .filter(|r| r.path == "/v1/traces")
    {
        let decoded = ExportTraceServiceRequest::decode(request.body.as_slice()).unwrap();
        for resource in decoded.resource_spans {
            let service = attribute(&resource.resource.unwrap().attributes, "service.name");
            assert_eq!(service.as_deref(), Some("rounds"));
            for scope in resource.scope_spans {
                all.extend(scope.spans);
            }
        }
    }
    all
}

fn value(v: &AnyValue) -> String {
    match &v.value {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        Some(any_value::Value::ArrayValue(a)) => {
            let items: Vec<String> = a.values.iter().map(value).collect();
            items.join(",")
        }
        other => format!("{other:?}"),
    }
}

fn attribute(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .map(value)
}

fn attr(span: &Span, key: &str) -> Option<String> {
    attribute(&span.attributes, key)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn named<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn tool_call(calls: &[(&str, &str, serde_json::Value)]) -> Reply {
    let inputs: Vec<(String, String, &str)> = calls
        .iter()
        .map(|(id, name, input)| ((*id).to_owned(), input.to_string(), *name))
        .collect();
    let blocks: Vec<B> = inputs
        .iter()
        .map(|(id, input, name)| B::Tool(id, name, input))
        .collect();
    Reply::sse(sse::anthropic(&blocks, "tool_use", 10, 5))
}

/// A three-round run under a CI job's trace, with a post-tool hook: round 1 reads a file, runs
/// bash (which prints the trace context it was given) and a command the allowlist denies; rounds 2 and 3
/// answer, and a check fails after each (exit 11).
fn three_rounds(sb: &Sandbox, collector: &MockServer, extra: &[&str]) -> crate::common::Run {
    sb.write("a.txt", "alpha\n");
    let model = MockServer::start(vec![
        tool_call(&[
            ("t1", "read_file", json!({"path": "a.txt"})),
            ("t2", "bash", json!({"command": "echo \"tp=$TRACEPARENT\""})),
            ("t3", "bash", json!({"command": "rm -f a.txt"})),
        ]),
        sse::answer("answer one"),
        sse::answer("answer two"),
    ]);
    let check =
        "n=$(cat n 2>/dev/null || echo 0); n=$((n+1)); echo $n > n; echo \"failure $n\"; exit 3";
    run(sb
        .anthropic(&model)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url())
        .env("TRACEPARENT", format!("00-{PARENT_TRACE}-{PARENT_SPAN}-01"))
        .env("DEPLOY_TOKEN", "tok-4f8a1c2e9b7d")
        .args(["-a", "read_file", "-a", "bash", "--deny", "bash(rm *)"])
        .args([
            "--check",
            check,
            "--max-checks",
            "2",
            "--post-tool-hook",
            "true",
        ])
        .arg("--transcript")
        .arg(sb.transcript_path())
        .args(extra)
        .arg("Read a.txt; the deploy token is tok-4f8a1c2e9b7d"))
}

#[test]
fn a_run_is_one_trace_under_the_ci_jobs_span_with_a_span_per_request_tool_call_and_check() {
    let sb = Sandbox::new();
    let collector = receiver();
    let out = three_rounds(&sb, &collector, &[]);
    assert_eq!(out.code, 11, "{}", out.stderr);
    let spans = spans(&collector);
    let names: BTreeMap<&str, usize> = spans.iter().fold(BTreeMap::new(), |mut m, s| {
        *m.entry(s.name.as_str()).or_default() += 1;
        m
    });
    let model = "chat claude-sonnet-4-5";
    assert_eq!(
        names,
        BTreeMap::from([
            ("invoke_agent rounds", 1),
            (model, 3),
            ("execute_tool read_file", 1),
            ("execute_tool bash", 2),
            ("check", 2),
            ("hook post_tool_use", 2),
        ]),
        "{}",
        out.stderr
    );
    // One trace, the CI job's; the run's span is the job span's child, every other the run's.
    let root = named(&spans, "invoke_agent rounds")[0];
    for span in &spans {
        assert_eq!(hex(&span.trace_id), PARENT_TRACE, "{}", span.name);
    }
    assert_eq!(hex(&root.parent_span_id), PARENT_SPAN);
    for span in spans
        .iter()
        .filter(|s| s.name != root.name && !s.name.starts_with("hook "))
    {
        assert_eq!(span.parent_span_id, root.span_id, "{}", span.name);
    }
    // A hook's span is under the call it ran for.
    for hook in named(&spans, "hook post_tool_use") {
        let id = attr(hook, "gen_ai.tool.call.id").unwrap();
        let call = (spans.iter())
            .find(|s| {
                s.name.starts_with("execute_tool")
                    && attr(s, "gen_ai.tool.call.id") == Some(id.clone())
            })
            .unwrap();
        assert_eq!(hook.parent_span_id, call.span_id, "{id}");
        assert_eq!(attr(hook, "rounds.hook.outcome").as_deref(), Some("ok"));
    }
    // The run's span: how it ended, as the exit code says.
    let start = sb.transcript()[0].clone();
    assert_eq!(attr(root, "rounds.exit_code").as_deref(), Some("11"));
    assert_eq!(attr(root, "rounds.status").as_deref(), Some("check_failed"));
    assert_eq!(
        attr(root, "gen_ai.operation.name").as_deref(),
        Some("invoke_agent")
    );
    assert_eq!(
        attr(root, "gen_ai.provider.name").as_deref(),
        Some("anthropic")
    );
    assert_eq!(
        attr(root, "rounds.run.id"),
        start["run_id"].as_str().map(str::to_owned)
    );
    assert_eq!(
        root.status.as_ref().unwrap().code,
        status::StatusCode::Error as i32
    );
    // A request's span: its usage and why it ended.
    let chat = named(&spans, model);
    assert!(
        chat.iter()
            .all(|s| attr(s, "gen_ai.operation.name").as_deref() == Some("chat"))
    );
    assert_eq!(
        attr(chat[0], "gen_ai.usage.input_tokens").as_deref(),
        Some("10")
    );
    assert_eq!(
        attr(chat[0], "gen_ai.response.finish_reasons").as_deref(),
        Some("tool_use")
    );
    assert_eq!(
        attr(chat[0], "gen_ai.request.model").as_deref(),
        Some("claude-sonnet-4-5")
    );
    // Tool calls: outcome and status, the denied one as its own outcome.
    let ok = named(&spans, "execute_tool read_file")[0];
    assert_eq!(attr(ok, "gen_ai.tool.call.id").as_deref(), Some("t1"));
    assert_eq!(attr(ok, "rounds.tool.outcome").as_deref(), Some("ok"));
    assert_eq!(
        ok.status.as_ref().unwrap().code,
        status::StatusCode::Ok as i32
    );
    let call = |id: &str| {
        (spans.iter())
            .find(|s| {
                s.name.starts_with("execute_tool")
                    && attr(s, "gen_ai.tool.call.id").as_deref() == Some(id)
            })
            .unwrap()
    };
    let bash = call("t2");
    assert_eq!(attr(bash, "rounds.tool.exit_code").as_deref(), Some("0"));
    assert_eq!(attr(ok, "rounds.tool.exit_code"), None);
    let denied = call("t3");
    assert_eq!(
        attr(denied, "rounds.tool.outcome").as_deref(),
        Some("denied")
    );
    assert_eq!(
        denied.status.as_ref().unwrap().code,
        status::StatusCode::Error as i32
    );
    // The checks failed, each as a span.
    for check in named(&spans, "check") {
        assert_eq!(attr(check, "rounds.check.passed").as_deref(), Some("false"));
        assert_eq!(attr(check, "rounds.check.exit_code").as_deref(), Some("3"));
    }
    // The tool got the run's context: its spans join the same trace, under the run.
    let bash = sb.transcript()[1]["results"][1]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let expected = format!("tp=00-{PARENT_TRACE}-{}-01", hex(&root.span_id));
    assert!(bash.contains(&expected), "{bash}");
    // No content without the opt-in: not the prompt, not a tool's input or output.
    let bodies: Vec<u8> = (collector.requests().iter())
        .flat_map(|r| r.body.clone())
        .collect();
    let raw = String::from_utf8_lossy(&bodies);
    for secret_or_content in [
        "deploy token",
        "alpha",
        "a.txt",
        "tok-4f8a1c2e9b7d",
        "answer one",
    ] {
        assert!(
            !raw.contains(secret_or_content),
            "{secret_or_content} was exported"
        );
    }
    for span in &spans {
        for key in [
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.tool.call.arguments",
            "gen_ai.tool.call.result",
        ] {
            assert_eq!(attr(span, key), None, "{} has {key}", span.name);
        }
    }
}

#[test]
fn with_the_opt_in_content_is_exported_redacted_as_the_transcript_is() {
    let sb = Sandbox::new();
    let collector = receiver();
    let out = three_rounds(&sb, &collector, &["--otel-content"]);
    assert_eq!(out.code, 11, "{}", out.stderr);
    let spans = spans(&collector);
    let root = named(&spans, "invoke_agent rounds")[0];
    let prompt = attr(root, "gen_ai.input.messages").unwrap();
    assert!(
        prompt.contains("Read a.txt; the deploy token is"),
        "{prompt}"
    );
    assert!(prompt.contains("[REDACTED:DEPLOY_TOKEN]"), "{prompt}");
    let read = named(&spans, "execute_tool read_file")[0];
    assert!(
        attr(read, "gen_ai.tool.call.result")
            .unwrap()
            .contains("alpha")
    );
    assert!(
        attr(read, "gen_ai.tool.call.arguments")
            .unwrap()
            .contains("a.txt")
    );
    let chat = named(&spans, "chat claude-sonnet-4-5");
    assert!(
        attr(chat[1], "gen_ai.output.messages")
            .unwrap()
            .contains("answer one")
    );
    // docs/observability.md names every span and attribute a run exports.
    let docs = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/observability.md"
    ))
    .unwrap();
    for span in &spans {
        let generic = span.name.split(' ').next().unwrap();
        assert!(
            docs.contains(&format!("`{generic}")),
            "{} is not documented",
            span.name
        );
        for kv in &span.attributes {
            assert!(
                docs.contains(&format!("`{}", kv.key)),
                "{} is not documented",
                kv.key
            );
        }
    }
    // The secret, in the prompt and in the model's view of it, never leaves.
    let bodies: Vec<u8> = (collector.requests().iter())
        .flat_map(|r| r.body.clone())
        .collect();
    assert!(!String::from_utf8_lossy(&bodies).contains("tok-4f8a1c2e9b7d"));
}

#[test]
fn the_runs_metrics_follow_the_genai_conventions() {
    let sb = Sandbox::new();
    let collector = receiver();
    let out = three_rounds(&sb, &collector, &[]);
    assert_eq!(out.code, 11, "{}", out.stderr);
    let mut metrics = BTreeMap::new();
    for request in collector
        .requests()
        .iter()
        .filter(|r| r.path == "/v1/metrics")
    {
        let decoded = ExportMetricsServiceRequest::decode(request.body.as_slice()).unwrap();
        for resource in decoded.resource_metrics {
            for scope in resource.scope_metrics {
                for metric in scope.metrics {
                    metrics.insert(metric.name.clone(), metric);
                }
            }
        }
    }
    use opentelemetry_proto::tonic::metrics::v1::metric::Data;
    let usage = &metrics["gen_ai.client.token.usage"];
    assert_eq!(usage.unit, "{token}");
    let Some(Data::Histogram(histogram)) = &usage.data else {
        panic!("{usage:?}")
    };
    let input = histogram
        .data_points
        .iter()
        .find(|p| attribute(&p.attributes, "gen_ai.token.type").as_deref() == Some("input"))
        .unwrap();
    // Three requests: 10 input tokens, then 1 and 1 (the mock's answers).
    assert_eq!((input.count, input.sum), (3, Some(12.0)));
    assert_eq!(input.explicit_bounds[..3], [1.0, 4.0, 16.0]);
    assert_eq!(metrics["gen_ai.client.operation.duration"].unit, "s");
    assert!(metrics.contains_key("rounds.tool.duration"));
    let Some(Data::Sum(runs)) = &metrics["rounds.runs"].data else {
        panic!()
    };
    let point = &runs.data_points[0];
    assert_eq!(
        attribute(&point.attributes, "rounds.exit_code").as_deref(),
        Some("11")
    );
}

#[test]
fn a_dead_or_silent_collector_costs_at_most_the_flush_bound_and_changes_no_exit_code() {
    // Nothing listens on a port just released; a collector that never answers.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let silent = MockServer::respond(|_| Reply::silent(Duration::from_secs(30)));
    for endpoint in [dead_url, silent.url()] {
        let sb = Sandbox::new();
        let model = MockServer::start(vec![sse::answer("done")]);
        let started = Instant::now();
        let out = run(sb
            .anthropic(&model)
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
            .args(["--transcript"])
            .arg(sb.transcript_path())
            .arg("go"));
        let took = started.elapsed();
        assert_eq!(
            (out.code, out.stdout.as_str()),
            (0, "done\n"),
            "{}",
            out.stderr
        );
        assert!(took < Duration::from_secs(5), "{endpoint}: {took:?}");
        // Said once, whatever failed how often.
        assert_eq!(
            out.stderr.matches("OpenTelemetry export failed").count(),
            1,
            "{}",
            out.stderr
        );
        assert_eq!(sb.transcript().last().unwrap()["status"], "completed");
    }
}

#[test]
fn only_the_user_says_where_telemetry_goes() {
    let run_with = |setup: &dyn Fn(&Sandbox, &str)| {
        let sb = Sandbox::new();
        let collector = receiver();
        setup(&sb, &collector.url());
        let model = MockServer::start(vec![sse::answer("done")]);
        let out = run(sb.anthropic(&model).arg("go"));
        (out, collector.requests().len())
    };
    // A project file (a repository rounds runs in) may not send the run's telemetry anywhere.
    let (out, received) = run_with(&|sb, url| {
        project_file(
            sb,
            &format!("otel-endpoint = \"{url}\"\notel-content = true\n"),
        );
    });
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(received, 0);
    assert!(out.stderr.contains("otel-endpoint"), "{}", out.stderr);
    // The control: the user's own settings file may.
    let (out, received) =
        run_with(&|sb, url| user_file(sb, &format!("otel-endpoint = \"{url}\"\n")));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(received > 0, "{}", out.stderr);
    // And an endpoint OTLP cannot use is a usage error before any request.
    let (out, received) = run_with(&|sb, _| user_file(sb, "otel-endpoint = \"collector:4318\"\n"));
    assert_eq!((out.code, received), (2, 0), "{}", out.stderr);
    assert!(
        out.stderr.contains("not an http:// or https:// URL"),
        "{}",
        out.stderr
    );
}

#[test]
fn the_exporters_headers_reach_the_collector_but_never_a_tool_or_the_transcript() {
    let token = "hny-7c1e0f4b2a9d83e5";
    let headers = format!("x-honeycomb-team={token},authorization=Bearer%20{token}x");
    let attack = "echo \"h=$OTEL_EXPORTER_OTLP_HEADERS s=$OTEL_SERVICE_NAME\"";
    let input = json!({ "command": attack }).to_string();
    let sb = Sandbox::new();
    let collector = receiver();
    let model = MockServer::start(vec![
        Reply::sse(sse::anthropic(
            &[B::Tool("t1", "bash", &input)],
            "tool_use",
            1,
            1,
        )),
        sse::answer(&format!("the header was {token}")),
    ]);
    let out = run(sb
        .anthropic(&model)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url())
        .env("OTEL_EXPORTER_OTLP_HEADERS", &headers)
        .env("OTEL_SERVICE_NAME", "rounds")
        // The control: a variable passed by name reaches the tool.
        .args([
            "-a",
            "bash",
            "--tool-env",
            "OTEL_SERVICE_NAME",
            "--transcript",
        ])
        .arg(sb.transcript_path())
        .arg("go"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    // The collector got the headers: they are the exporter's credentials.
    let sent = &collector.requests()[0];
    assert_eq!(sent.header("x-honeycomb-team"), Some(token));
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {token}x").as_str())
    );
    // The tool did not; the record holds neither the list nor a token from it.
    let result = sb.transcript()[1]["results"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(result.contains("h= s=rounds"), "{result}");
    let transcript = std::fs::read_to_string(sb.transcript_path()).unwrap();
    assert!(!transcript.contains(token), "{transcript}");
    assert!(!out.stdout.contains(token) && !out.stderr.contains(token));
    // The model's answer named it, and the record says so without it.
    assert!(
        transcript.contains("[REDACTED:OTEL_EXPORTER_OTLP_HEADERS]"),
        "{transcript}"
    );

    // Asked for by name, a header variable is refused before anything runs.
    let refused = run(sb
        .anthropic(&model)
        .env("OTEL_EXPORTER_OTLP_HEADERS", &headers)
        .args([
            "-a",
            "bash",
            "--tool-env",
            "OTEL_EXPORTER_OTLP_HEADERS",
            "go",
        ]));
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("never passed to tools"),
        "{}",
        refused.stderr
    );
}

#[test]
fn a_batch_is_one_trace_with_each_jobs_run_under_its_span() {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let collector = receiver();
    let model = MockServer::respond(super::batch::three_rounds);
    let jobs = super::batch::jobs_file(&sb, 3);
    let out = run(sb
        .anthropic(&model)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url())
        .env("TRACEPARENT", format!("00-{PARENT_TRACE}-{PARENT_SPAN}-01"))
        .arg("batch")
        .arg(&jobs)
        .arg("--out")
        .arg(sb.path("out")));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let spans = spans(&collector);
    let batch = named(&spans, "batch");
    assert_eq!(
        batch.len(),
        1,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    let batch = batch[0];
    assert_eq!(hex(&batch.parent_span_id), PARENT_SPAN);
    assert_eq!(attr(batch, "rounds.batch.jobs").as_deref(), Some("3"));
    assert_eq!(attr(batch, "rounds.status").as_deref(), Some("completed"));
    let runs = named(&spans, "invoke_agent rounds");
    assert_eq!(runs.len(), 3);
    for run in &runs {
        assert_eq!(run.parent_span_id, batch.span_id);
        // Each job's requests and tool calls are under its own run.
        let children: Vec<&Span> = (spans.iter())
            .filter(|s| s.parent_span_id == run.span_id)
            .collect();
        let chats = children
            .iter()
            .filter(|s| s.name.starts_with("chat "))
            .count();
        let tools = children
            .iter()
            .filter(|s| s.name == "execute_tool read_file")
            .count();
        assert_eq!(
            (chats, tools),
            (3, 2),
            "{}",
            attr(run, "rounds.run.id").unwrap()
        );
    }
    assert!(spans.iter().all(|s| hex(&s.trace_id) == PARENT_TRACE));
}

#[test]
fn a_queued_batch_is_one_trace_from_the_enqueue_to_the_last_worker() {
    let Some(pg) = crate::common::pg::server() else {
        return;
    };
    let schema = crate::common::pg::Schema::new(pg);
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let collector = receiver();
    let model = MockServer::respond(super::batch::three_rounds);
    let jobs = super::batch::jobs_file(&sb, 4);
    let batch = |args: &[&str]| {
        let mut cmd = sb.anthropic(&model);
        cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url())
            .arg("batch")
            .arg("--store")
            .arg(&schema.url)
            .args(args);
        cmd
    };
    let enqueued = run(
        batch(&[jobs.to_str().unwrap(), "--enqueue", "--max-rounds", "5"])
            .env("TRACEPARENT", format!("00-{PARENT_TRACE}-{PARENT_SPAN}-01")),
    );
    assert_eq!(enqueued.code, 0, "{}", enqueued.stderr);
    let id = enqueued.stdout.trim().to_owned();
    // Two workers, elsewhere: in their own traces if they traced for themselves.
    let spawn_for = |id: &str, out: &str| {
        batch(&["--batch", id, "--worker", "--jobs", "2", "--out"])
            .arg(sb.path(out))
            .env(
                "TRACEPARENT",
                "00-11111111111111111111111111111111-2222222222222222-01",
            )
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    for worker in [spawn_for(&id, "w1"), spawn_for(&id, "w2")] {
        let out = worker.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let first = spans(&collector);
    let group = named(&first, "batch");
    assert_eq!(group.len(), 1);
    assert_eq!(
        attr(group[0], "rounds.batch.id").as_deref(),
        Some(id.as_str())
    );
    assert_eq!(hex(&group[0].parent_span_id), PARENT_SPAN);
    let runs = named(&first, "invoke_agent rounds");
    assert_eq!(runs.len(), 4);
    for run in &runs {
        assert_eq!(
            run.parent_span_id,
            group[0].span_id,
            "{:?}",
            attr(run, "rounds.run.id")
        );
    }
    assert!(first.iter().all(|s| hex(&s.trace_id) == PARENT_TRACE));

    // The control: jobs queued by an enqueuer that traced nothing run in the worker's own
    // trace, so it is the row that put them in the enqueuer's.
    let untraced = run(sb
        .anthropic(&model)
        .arg("batch")
        .arg("--store")
        .arg(&schema.url)
        .args([jobs.to_str().unwrap(), "--enqueue", "--max-rounds", "5"]));
    assert_eq!(untraced.code, 0, "{}", untraced.stderr);
    let before = collector.requests().len();
    let out = spawn_for(untraced.stdout.trim(), "w3")
        .wait_with_output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let later: Vec<Span> = spans(&collector).into_iter().skip(first.len()).collect();
    assert!(collector.requests().len() > before);
    let runs = named(&later, "invoke_agent rounds");
    assert_eq!(runs.len(), 4);
    for run in runs {
        assert_eq!(hex(&run.trace_id), "11111111111111111111111111111111");
        assert_eq!(hex(&run.parent_span_id), "2222222222222222");
    }
}

/// `examples/otel`'s compose file and collector configuration (not run here: no Docker in
/// CI) agree with each other and with what rounds exports: OTLP/HTTP on the port the docs give,
/// traces to the Jaeger service the compose file starts.
#[test]
fn the_example_collector_takes_otlp_http_where_the_docs_say_and_sends_traces_to_jaeger() {
    use yaml_rust2::YamlLoader;
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/otel");
    let load = |name: &str| {
        let text = std::fs::read_to_string(format!("{dir}/{name}")).unwrap();
        YamlLoader::load_from_str(&text).unwrap().remove(0)
    };
    let compose = load("compose.yaml");
    let collector = load("collector.yaml");
    let services = &compose["services"];
    let ports: Vec<&str> = (services["collector"]["ports"].as_vec().unwrap().iter())
        .filter_map(|p| p.as_str())
        .collect();
    assert!(ports.contains(&"4318:4318"), "{ports:?}");
    let endpoint = collector["receivers"]["otlp"]["protocols"]["http"]["endpoint"].as_str();
    assert_eq!(endpoint, Some("0.0.0.0:4318"));
    let jaeger = collector["exporters"]["otlp/jaeger"]["endpoint"]
        .as_str()
        .unwrap();
    assert!(jaeger.starts_with("jaeger:") && !services["jaeger"].is_badvalue());
    let traces = &collector["service"]["pipelines"]["traces"];
    assert_eq!(traces["receivers"][0].as_str(), Some("otlp"));
    assert_eq!(traces["exporters"][0].as_str(), Some("otlp/jaeger"));
    let docs = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/observability.md"
    ))
    .unwrap();
    assert!(docs.contains("OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318"));
}

#[test]
fn a_command_tools_exit_code_is_on_its_span_whether_it_succeeded_or_failed() {
    let sb = Sandbox::new();
    let tools = r#"
[[tool]]
name = "passes"
description = "Exits 0."
command = "echo fine"
class = "safe"

[[tool]]
name = "breaks"
description = "Exits 3."
command = "echo bad >&2; exit 3"
class = "safe"
"#;
    std::fs::write(sb.path("tools.toml"), tools).unwrap();
    let collector = receiver();
    let model = MockServer::start(vec![
        tool_call(&[("p", "passes", json!({})), ("b", "breaks", json!({}))]),
        sse::answer("done"),
    ]);
    let out = run(sb
        .anthropic(&model)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url())
        .arg("--tools-file")
        .arg(sb.path("tools.toml"))
        .args(["-a", "passes", "-a", "breaks", "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let spans = spans(&collector);
    let exit = |name: &str| {
        let span = named(&spans, name)[0];
        (
            attr(span, "rounds.tool.exit_code"),
            attr(span, "rounds.tool.outcome"),
        )
    };
    assert_eq!(
        exit("execute_tool passes"),
        (Some("0".into()), Some("ok".into()))
    );
    assert_eq!(
        exit("execute_tool breaks"),
        (Some("3".into()), Some("failed".into()))
    );
}

#[test]
fn a_subagents_spans_nest_as_an_invoke_agent_child_of_its_task_call() {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let collector = receiver();
    let model = MockServer::respond(|request| {
        let body = request.json();
        let sub = body["system"].to_string().contains("You are a subagent");
        let answered = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "assistant")
            .count();
        match (sub, answered) {
            (false, 0) => tool_call(&[(
                "t1",
                "task",
                json!({"description": "read", "prompt": "read a.txt"}),
            )]),
            (true, 0) => tool_call(&[("s1", "read_file", json!({"path": "a.txt"}))]),
            (true, _) => sse::answer("it says alpha"),
            (false, _) => sse::answer("done"),
        }
    });
    let out = run(sb
        .anthropic(&model)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url())
        .args(["-a", "task", "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let spans = spans(&collector);
    let task = named(&spans, "execute_tool task")[0];
    let agent = named(&spans, "invoke_agent general")[0];
    assert_eq!(hex(&agent.parent_span_id), hex(&task.span_id));
    assert_eq!(hex(&agent.trace_id), hex(&task.trace_id));
    assert_eq!(attr(agent, "rounds.agent.depth").as_deref(), Some("1"));
    let read = named(&spans, "execute_tool read_file")[0];
    assert_eq!(hex(&read.parent_span_id), hex(&agent.span_id));
    // Its two requests are its children too, not the run's.
    let chats: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name.starts_with("chat ") && s.parent_span_id == agent.span_id)
        .collect();
    assert_eq!(chats.len(), 2);
}
