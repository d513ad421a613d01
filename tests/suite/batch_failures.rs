//! A batch never drops a job silently (issue 23): a line with a mistyped key is a bad line named
//! with the key it meant, counted in the headline, and fails the batch; a job the provider
//! stayed unavailable for makes the batch exit 10, and running the batch again takes it up.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};

use super::batch::job_of;
use crate::common::mock::{MockServer, Reply};
use crate::common::{Sandbox, run, sse};

fn batch(sb: &Sandbox, server: &MockServer, jobs: &Path, out: &str) -> Command {
    let mut cmd = sb.anthropic(server);
    cmd.arg("batch")
        .arg(jobs)
        .arg("--out")
        .arg(sb.path(out))
        .args(["--max-retries", "0", "--jobs", "1"]);
    cmd
}

fn results(sb: &Sandbox, out: &str) -> Vec<Value> {
    std::fs::read_to_string(sb.path(out).join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_mistyped_key_is_a_bad_line_named_counted_in_the_headline_and_fails_the_batch() {
    let sb = Sandbox::new();
    let server = MockServer::respond(|r| sse::answer(&format!("done with {}", job_of(r))));
    let jobs = sb.path("jobs.jsonl");
    let summary = sb.path("summary.md");
    let lines = |second: &str| {
        format!(
            "{{\"id\":\"job-1\",\"prompt\":\"Do job-1.\"}}\n{{\"id\":\"job-2\",\"{second}\":\"Do job-2.\"}}\n"
        )
    };

    // The control: spelled right, both jobs run and the batch succeeds.
    std::fs::write(&jobs, lines("prompt")).unwrap();
    let good = run(batch(&sb, &server, &jobs, "good")
        .arg("--step-summary")
        .arg(&summary));
    assert_eq!(good.code, 0, "{}", good.stderr);
    assert!(
        good.stderr.contains("2 of 2 jobs completed"),
        "{}",
        good.stderr
    );
    assert_eq!(server.requests().len(), 2);

    std::fs::write(&jobs, lines("promt")).unwrap();
    std::fs::remove_file(&summary).unwrap();
    let out = run(batch(&sb, &server, &jobs, "out")
        .arg("--step-summary")
        .arg(&summary));
    assert_eq!(out.code, 8, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("jobs.jsonl, line 2: unknown field \"promt\" (did you mean \"prompt\"?)"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("rounds batch: 1 of 2 jobs completed (1 bad line not run) in"),
        "{}",
        out.stderr
    );
    assert_eq!(server.requests().len(), 3, "only job-1 ran");
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(
        md.contains("### rounds batch: 1 of 2 jobs completed (1 bad line not run)"),
        "{md}"
    );
    assert!(md.contains("| bad lines | 1 |"), "{md}");
}

#[test]
fn a_job_the_provider_stayed_unavailable_for_makes_the_batch_exit_10_and_a_rerun_resumes_it() {
    let sb = Sandbox::new();
    let down = Arc::new(AtomicBool::new(true));
    let server = {
        let down = down.clone();
        MockServer::respond(move |r| {
            let job = job_of(r);
            if job == "job-2" && down.load(Ordering::SeqCst) {
                Reply::error(
                    529,
                    r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                )
            } else {
                sse::answer(&format!("done with {job}"))
            }
        })
    };
    let jobs = sb.path("jobs.jsonl");
    std::fs::write(
        &jobs,
        "{\"id\":\"job-1\",\"prompt\":\"Do job-1.\"}\n{\"id\":\"job-2\",\"prompt\":\"Do job-2.\"}\n",
    )
    .unwrap();
    let out = run(&mut batch(&sb, &server, &jobs, "out"));
    assert_eq!(out.code, 10, "{}", out.stderr);
    assert!(
        out.stderr.contains("1 of 2 jobs completed"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("  unavailable"), "{}", out.stderr);
    let lines = results(&sb, "out");
    let job2 = lines.iter().find(|l| l["id"] == "job-2").unwrap();
    assert_eq!(job2["status"], "unavailable");
    assert_eq!(job2["exit_code"], 10);
    assert_eq!(
        job2["failure"],
        json!({"kind": "overloaded", "retryable": true})
    );
    let asked = server.requests().len();
    assert_eq!(asked, 2);

    // Still down: the same command asks again, for job-2 alone (no --retry-failed needed).
    let again = run(&mut batch(&sb, &server, &jobs, "out"));
    assert_eq!(again.code, 10, "{}", again.stderr);
    assert_eq!(server.requests().len(), asked + 1);

    // Back up: the same command finishes the batch.
    down.store(false, Ordering::SeqCst);
    let later = run(&mut batch(&sb, &server, &jobs, "out"));
    assert_eq!(later.code, 0, "{}", later.stderr);
    assert_eq!(server.requests().len(), asked + 2);
    assert_eq!(job_of(&server.requests()[asked + 1]), "job-2");
    let lines = results(&sb, "out");
    assert!(
        lines.iter().all(|l| l["status"] == "completed"),
        "{lines:?}"
    );
}

#[test]
fn a_job_that_retrying_will_not_fix_keeps_the_batch_incomplete() {
    let sb = Sandbox::new();
    let server = MockServer::respond(|r| {
        if job_of(r) == "job-2" {
            Reply::error(
                401,
                r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
            )
        } else {
            Reply::error(
                529,
                r#"{"type":"error","error":{"type":"overloaded_error"}}"#,
            )
        }
    });
    let jobs = sb.path("jobs.jsonl");
    std::fs::write(
        &jobs,
        "{\"id\":\"job-1\",\"prompt\":\"Do job-1.\"}\n{\"id\":\"job-2\",\"prompt\":\"Do job-2.\"}\n",
    )
    .unwrap();
    let out = run(&mut batch(&sb, &server, &jobs, "out"));
    // One job unavailable, one refused for good: retrying the batch cannot finish it.
    assert_eq!(out.code, 8, "{}", out.stderr);
    let lines = results(&sb, "out");
    let kinds: Vec<&Value> = lines.iter().map(|l| &l["failure"]["kind"]).collect();
    assert_eq!(kinds, [&json!("overloaded"), &json!("auth")]);
}
