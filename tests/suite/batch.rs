//! `rounds batch` on one machine: many jobs in one process against the loopback mock, resumed by
//! running it again, split into shards, sharing one backoff after a 429, reporting bad lines and
//! a JUnit file.

use std::collections::{BTreeMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::mock::{MockServer, Recorded, Reply, Step};
use crate::common::sse::{self, B};
use crate::common::{Run, Sandbox, read_jsonl, run, types};

/// The job a request belongs to: the `job-N` its prompt names.
pub fn job_of(request: &Recorded) -> String {
    let body = String::from_utf8_lossy(&request.body);
    let at = body.find("job-").expect("a job's prompt");
    body[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect()
}

/// How many rounds the conversation of a request has had (its assistant turns).
pub fn rounds_before(request: &Recorded) -> usize {
    request.json()["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "assistant")
        .count()
}

/// A three-round job: two rounds that read a file, then the answer naming the job.
pub fn three_rounds(request: &Recorded) -> Reply {
    let round = rounds_before(request);
    if round < 2 {
        let id = format!("toolu_{round}");
        Reply::sse(sse::anthropic(
            &[B::Tool(&id, "read_file", r#"{"path":"a.txt"}"#)],
            "tool_use",
            10,
            5,
        ))
    } else {
        sse::answer(&format!("done with {}", job_of(request)))
    }
}

/// A jobs file with `n` jobs `job-0` … in the sandbox.
pub fn jobs_file(sb: &Sandbox, n: usize) -> PathBuf {
    let path = sb.path("jobs.jsonl");
    let text: String = (0..n)
        .map(|i| format!("{{\"id\":\"job-{i}\",\"prompt\":\"Do job-{i}.\"}}\n"))
        .collect();
    std::fs::write(&path, text).unwrap();
    path
}

fn batch(sb: &Sandbox, server: &MockServer, jobs: &Path, out: &str) -> Command {
    sb.write("a.txt", "alpha\n");
    let mut cmd = sb.anthropic(server);
    cmd.arg("batch")
        .arg(jobs)
        .arg("--out")
        .arg(sb.path(out))
        .args(["--max-rounds", "5"]);
    cmd
}

fn results(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn by_id(lines: &[Value]) -> BTreeMap<String, Value> {
    lines
        .iter()
        .map(|l| (l["id"].as_str().unwrap().to_owned(), l.clone()))
        .collect()
}

#[test]
fn two_hundred_jobs_sixteen_at_once_then_a_rerun_asks_the_model_nothing() {
    let sb = Sandbox::new();
    let server = MockServer::respond(three_rounds);
    let jobs = jobs_file(&sb, 200);
    let out = run(batch(&sb, &server, &jobs, "out").args(["--jobs", "16"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.requests().len(), 600);
    assert!(
        out.stderr.contains("200 of 200 jobs completed"),
        "{}",
        out.stderr
    );
    // One connection pool: connections are reused across jobs, not one per run.
    assert!(
        server.connections() <= 64,
        "{} connections",
        server.connections()
    );

    let lines = results(&sb.path("out/results.jsonl"));
    assert_eq!(lines.len(), 200);
    let ids = by_id(&lines);
    assert_eq!(ids.len(), 200);
    for (id, line) in &ids {
        assert_eq!(line["status"], "completed", "{line}");
        assert_eq!(line["exit_code"], 0);
        assert_eq!(line["rounds"], 3);
        assert_eq!(line["final_text"], format!("done with {id}"));
        assert_eq!(line["usage"]["input_tokens"], 21);
        let transcript = PathBuf::from(line["transcript"].as_str().unwrap());
        assert_eq!(transcript, sb.path(&format!("out/{id}.jsonl")));
        let t = read_jsonl(&transcript);
        assert_eq!(types(&t), ["start", "round", "round", "round", "end"]);
        assert_eq!(t[4]["status"], "completed");
    }

    let again = run(batch(&sb, &server, &jobs, "out").args(["--jobs", "16"]));
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(server.requests().len(), 600, "the rerun asked the model");
    let lines_again = results(&sb.path("out/results.jsonl"));
    assert_eq!(by_id(&lines_again), ids);
}

#[test]
fn shards_split_the_jobs_so_that_each_runs_exactly_once() {
    let sb = Sandbox::new();
    let server = MockServer::respond(|r| sse::answer(&format!("ok {}", job_of(r))));
    let jobs = jobs_file(&sb, 60);
    let mut ran = Vec::new();
    for (shard, out) in [("0/2", "s0"), ("1/2", "s1")] {
        let before = server.requests().len();
        let done = run(batch(&sb, &server, &jobs, out).args(["--shard", shard]));
        assert_eq!(done.code, 0, "{}", done.stderr);
        let mine: Vec<String> = server.requests()[before..].iter().map(job_of).collect();
        assert_eq!(
            results(&sb.path(&format!("{out}/results.jsonl"))).len(),
            mine.len()
        );
        assert!(
            !mine.is_empty() && mine.len() < 60,
            "shard {shard}: {}",
            mine.len()
        );
        ran.extend(mine);
    }
    let distinct: HashSet<&String> = ran.iter().collect();
    assert_eq!((ran.len(), distinct.len()), (60, 60));
}

#[test]
fn a_shared_429_makes_one_backoff_for_all_jobs() {
    shared_429(true);
}

#[test]
fn a_429_that_names_no_wait_is_shared_too() {
    // The batch holds every job off for the default first backoff (1 s).
    shared_429(false);
}

fn shared_429(retry_after: bool) {
    // A rate limiter: the first request gets 429 (with retry-after 1 s, or none). Requests already on
    // their way by then are answered (after a short hold, as a busy server would); any request
    // that arrives later while the limit holds is refused again. Jobs that share the backoff
    // send nothing until the second is over.
    const HOLD: Duration = Duration::from_millis(400);
    const WAIT: Duration = Duration::from_secs(1);
    let limited: Arc<Mutex<Option<Instant>>> = Arc::default();
    let refused = Arc::new(Mutex::new(Vec::new()));
    let (limit, late) = (limited.clone(), refused.clone());
    let server = MockServer::respond(move |r| {
        let now = r.received;
        let mut limit = limit.lock().unwrap();
        let Some(since) = *limit else {
            *limit = Some(now);
            late.lock().unwrap().push(job_of(r));
            let mut reply = Reply::error(
                429,
                r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
            );
            if retry_after {
                reply.headers.push(("retry-after".into(), "1".into()));
            }
            return reply;
        };
        let mut reply = three_rounds(r);
        if now < since + HOLD {
            reply.body.insert(0, Step::Sleep(since + HOLD - now));
        } else if now < since + WAIT {
            late.lock().unwrap().push(job_of(r));
            return Reply::error(
                429,
                r#"{"type":"error","error":{"type":"rate_limit_error","message":"still limited"}}"#,
            );
        }
        reply
    });
    let sb = Sandbox::new();
    let jobs = jobs_file(&sb, 8);
    let out = run(batch(&sb, &server, &jobs, "out").args(["--jobs", "8"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let refused = refused.lock().unwrap().clone();
    assert_eq!(refused.len(), 1, "429s served: {refused:?}");
    assert!(out.stderr.contains("1 shared backoff"), "{}", out.stderr);
    // Only the job that got the 429 asked again, once, and no job asked again before the
    // second was over.
    let since = limited.lock().unwrap().unwrap();
    for r in server.requests() {
        assert!(r.received <= since + HOLD || r.received >= since + WAIT);
    }
    let mut retried = Vec::new();
    for line in results(&sb.path("out/results.jsonl")) {
        assert_eq!(line["status"], "completed", "{line}");
        let t = read_jsonl(Path::new(line["transcript"].as_str().unwrap()));
        let notes: usize = t
            .iter()
            .map(|l| l["retries"].as_array().map_or(0, Vec::len))
            .sum();
        if notes > 0 {
            retried.push((line["id"].clone(), notes));
        }
    }
    // The wait was the endpoint's shared pause, not a retry: no job spent one (issue 26).
    assert!(retried.is_empty(), "{retried:?}");
    let asked = server.requests();
    let again = asked.iter().filter(|r| job_of(r) == refused[0]).count();
    assert_eq!(again, 3 + 1, "three rounds and the refused request");
}

/// The JUnit file, parsed: (testcase name, failure type or error) per testcase.
fn junit(path: &Path) -> Vec<(String, Option<String>)> {
    let xml = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .unwrap();
    let cases: Vec<_> = suite
        .children()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(
        suite.attribute("tests"),
        Some(cases.len().to_string().as_str())
    );
    cases
        .iter()
        .map(|c| {
            let name = c.attribute("name").unwrap().to_owned();
            let problem = c
                .children()
                .find(|n| n.has_tag_name("failure") || n.has_tag_name("error"))
                .map(|n| {
                    let text = n.text().unwrap_or("");
                    format!(
                        "{}: {} | {text}",
                        n.attribute("type").unwrap(),
                        n.attribute("message").unwrap()
                    )
                });
            (name, problem)
        })
        .collect()
}

#[test]
fn bad_lines_are_reported_with_their_numbers_and_the_rest_run() {
    let sb = Sandbox::new();
    let server = MockServer::respond(three_rounds);
    let jobs = sb.path("jobs.jsonl");
    std::fs::write(
        &jobs,
        concat!(
            "{\"id\":\"job-1\",\"prompt\":\"Do job-1.\"}\n",
            "{\"id\":\"job-2\",\"prompt\":\"Do job-2 <&> \u{1b}[31m.\"\n",
            "{\"prompt\":\"Do job-3.\"}\n",
            "{\"id\":\"job-1\",\"prompt\":\"Do job-1 again.\"}\n",
            "{\"id\":\"job-5\",\"prompt\":\"Do job-5.\",\"colour\":\"red\"}\n",
            "{\"id\":\"job-6\",\"prompt\":\"Do job-6.\",\"max_rounds\":1}\n",
        ),
    )
    .unwrap();
    let junit_path = sb.path("junit.xml");
    let out = run(batch(&sb, &server, &jobs, "out")
        .arg("--junit")
        .arg(&junit_path));
    // job-6 stops at its own round limit: the batch is incomplete.
    assert_eq!(out.code, 8, "{}", out.stderr);
    for (line, says) in [
        (2, "not JSON"),
        (3, "no \"id\""),
        (4, "the id \"job-1\" was already used"),
        (5, "unknown field \"colour\""),
    ] {
        let wanted = format!("jobs.jsonl, line {line}: {says}");
        assert!(out.stderr.contains(&wanted), "{wanted:?} in {}", out.stderr);
    }
    let lines = by_id(&results(&sb.path("out/results.jsonl")));
    assert_eq!(lines.keys().collect::<Vec<_>>(), ["job-1", "job-6"]);
    assert_eq!(lines["job-6"]["status"], "max_rounds");
    assert_eq!(lines["job-6"]["exit_code"], 3);

    let cases = junit(&junit_path);
    assert_eq!(cases.len(), 6);
    assert_eq!(cases[0], ("job-1".to_owned(), None));
    assert_eq!(cases[1].0, "job-6");
    let failure = cases[1].1.clone().unwrap();
    assert!(
        failure.starts_with("max_rounds: max_rounds (exit 3)"),
        "{failure}"
    );
    let errors: Vec<&str> = cases[2..].iter().map(|c| c.0.as_str()).collect();
    assert_eq!(errors, ["line 2", "line 3", "line 4", "line 5"]);

    // A rerun asks nothing of failed jobs unless told to retry them.
    let asked = server.requests().len();
    let again = run(&mut batch(&sb, &server, &jobs, "out"));
    assert_eq!((again.code, server.requests().len()), (8, asked));
    let retried = run(batch(&sb, &server, &jobs, "out").arg("--retry-failed"));
    assert_eq!(retried.code, 8, "{}", retried.stderr);
    assert_eq!(server.requests().len(), asked + 1);
    assert!(sb.path("out/attempts/job-6.1.jsonl").exists());

    // Nothing valid: a usage error before any request.
    std::fs::write(&jobs, "nonsense\n{\"id\":1}\n").unwrap();
    let none = run(&mut batch(&sb, &server, &jobs, "out2"));
    assert_eq!(none.code, 2, "{}", none.stderr);
    assert!(none.stderr.contains("no valid job"), "{}", none.stderr);
    assert_eq!(server.requests().len(), asked + 1);
}

#[test]
fn the_batch_budget_stops_jobs_from_starting_once_it_is_spent() {
    let sb = Sandbox::new();
    let server = MockServer::respond(three_rounds);
    let jobs = jobs_file(&sb, 4);
    // A job takes 32 tokens; the budget is spent during the second.
    let out = run(batch(&sb, &server, &jobs, "out").args(["--jobs", "1", "--budget-tokens", "50"]));
    assert_eq!(out.code, 8, "{}", out.stderr);
    let lines = by_id(&results(&sb.path("out/results.jsonl")));
    let statuses: Vec<&str> = lines
        .values()
        .map(|l| l["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        ["completed", "budget", "not_started", "not_started"]
    );
    assert!(
        lines["job-2"]["error"]
            .as_str()
            .unwrap()
            .contains("token budget of 50")
    );
}

fn spawn(mut cmd: Command) -> std::process::Child {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn wait(mut child: std::process::Child) -> Run {
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let code = child.wait().unwrap().code().unwrap_or(-1);
    Run {
        code,
        stdout: String::new(),
        stderr,
    }
}

#[test]
fn sigint_stops_the_batch_and_a_rerun_resumes_the_interrupted_jobs() {
    let sb = Sandbox::new();
    let release = sb.path("release");
    let held = release.clone();
    // Round 2 is held until the test says so: the jobs are mid-run when SIGINT comes.
    let server = MockServer::respond(move |r| {
        let mut reply = three_rounds(r);
        if rounds_before(r) == 1 && !held.exists() {
            reply
                .body
                .insert(0, Step::WaitFor(held.clone(), Duration::from_secs(20)));
        }
        reply
    });
    let jobs = jobs_file(&sb, 3);
    let child = spawn({
        let mut cmd = batch(&sb, &server, &jobs, "out");
        cmd.args(["--jobs", "2"]);
        cmd
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    while server
        .requests()
        .iter()
        .filter(|r| rounds_before(r) == 1)
        .count()
        < 2
    {
        assert!(Instant::now() < deadline, "the jobs never reached round 2");
        std::thread::sleep(Duration::from_millis(20));
    }
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = wait(child);
    std::fs::write(&release, "").unwrap();
    assert_eq!(out.code, 130, "{}", out.stderr);
    let lines = by_id(&results(&sb.path("out/results.jsonl")));
    let statuses: Vec<&str> = lines
        .values()
        .map(|l| l["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["interrupted", "interrupted", "not_started"]);
    for id in ["job-0", "job-1"] {
        let t = read_jsonl(&sb.path(&format!("out/{id}.jsonl")));
        assert_eq!(types(&t), ["start", "round", "end"]);
        assert_eq!(t[2]["exit_code"], 130);
    }

    let asked = server.requests().len();
    let again = run(batch(&sb, &server, &jobs, "out").args(["--jobs", "2"]));
    assert_eq!(again.code, 0, "{}", again.stderr);
    let lines = by_id(&results(&sb.path("out/results.jsonl")));
    for id in ["job-0", "job-1"] {
        assert_eq!(lines[id]["status"], "completed");
        // One round before the signal, two after it.
        assert_eq!(lines[id]["rounds"], 3, "{}", lines[id]);
        let aside = sb.path(&format!("out/attempts/{id}.1.jsonl"));
        let t = read_jsonl(&sb.path(&format!("out/{id}.jsonl")));
        assert_eq!(
            t[0]["resumed_from"],
            aside.canonicalize().unwrap().display().to_string()
        );
        assert_eq!(types(&t), ["start", "round", "round", "end"]);
    }
    assert_eq!(lines["job-2"]["rounds"], 3);
    // The resumed jobs went on from their first round: 2 requests each, and 3 for job-2.
    let after: Vec<Recorded> = server.requests()[asked..].to_vec();
    assert_eq!(after.len(), 7);
    for r in after.iter().filter(|r| job_of(r) != "job-2") {
        assert!(rounds_before(r) >= 1, "a resumed job started over");
        assert!(
            String::from_utf8_lossy(&r.body).contains("alpha"),
            "the first round's result is kept"
        );
    }
}

#[test]
fn a_template_makes_each_prompt_from_lines_read_on_stdin() {
    let sb = Sandbox::new();
    let server = MockServer::respond(|r| sse::answer(&format!("ok {}", job_of(r))));
    let template = sb.path("review.md");
    std::fs::write(&template, "Review {{file}} for job-{{ n }}.").unwrap();
    let mut cmd = batch(&sb, &server, Path::new("-"), "out");
    cmd.arg("--template").arg(&template).stdin(Stdio::piped());
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(
                b"{\"id\":\"src/a.rs\",\"file\":\"src/a.rs\",\"n\":1}\n{\"id\":\"b\",\"n\":2}\n",
            )
            .unwrap();
    }
    let out = wait(child);
    // The line that lacks a field is no job: the batch is incomplete.
    assert_eq!(out.code, 8, "{}", out.stderr);
    assert!(
        out.stderr.contains("stdin, line 2: no field \"file\""),
        "{}",
        out.stderr
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let body = String::from_utf8_lossy(&requests[0].body);
    assert!(body.contains("Review src/a.rs for job-1."), "{body}");
    // The id names a file of its own in the directory.
    assert!(sb.path("out/src%2Fa.rs.jsonl").exists());
}
