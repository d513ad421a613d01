//! `rounds batch` as a queue in PostgreSQL: workers drain it with each job run exactly once,
//! and a worker killed mid-job loses nothing. The server comes from `common::pg`; with none,
//! each test says why and passes.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::batch::{job_of, jobs_file, rounds_before, three_rounds};
use crate::common::mock::{MockServer, Step};
use crate::common::pg::{Schema, server, sql};
use crate::common::{Run, Sandbox, run, run_within};

fn rounds(sb: &Sandbox, server: &MockServer, store: &str) -> Command {
    sb.write("a.txt", "alpha\n");
    let mut cmd = sb.anthropic(server);
    cmd.arg("batch").arg("--store").arg(store);
    cmd
}

fn enqueue(sb: &Sandbox, server: &MockServer, store: &str, jobs: &Path) -> String {
    let out = run(rounds(sb, server, store)
        .arg(jobs)
        .args(["--enqueue", "--max-rounds", "5"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let id = out.stdout.trim().to_owned();
    assert!(!id.is_empty() && !id.contains('\n'), "{:?}", out.stdout);
    id
}

fn worker(sb: &Sandbox, server: &MockServer, store: &str, batch: &str, out: &str) -> Command {
    let mut cmd = rounds(sb, server, store);
    cmd.args(["--batch", batch, "--worker", "--lease", "2", "--out"])
        .arg(sb.path(out));
    cmd
}

/// Each job's requests, by the round they asked for.
fn asked(server: &MockServer) -> BTreeMap<String, Vec<usize>> {
    let mut by_job: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for r in server.requests() {
        by_job
            .entry(job_of(&r))
            .or_default()
            .push(rounds_before(&r));
    }
    for rounds in by_job.values_mut() {
        rounds.sort();
    }
    by_job
}

#[test]
fn two_workers_on_the_queue_run_each_job_exactly_once() {
    let Some(pg) = server() else { return };
    let schema = Schema::new(pg);
    let sb = Sandbox::new();
    let server = MockServer::respond(three_rounds);
    let jobs = jobs_file(&sb, 24);
    let batch = enqueue(&sb, &server, &schema.url, &jobs);
    assert!(server.requests().is_empty());

    let spawn = |out: &str| {
        worker(&sb, &server, &schema.url, &batch, out)
            .args(["--jobs", "3"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let workers = [spawn("w1"), spawn("w2")];
    let mut completed = 0;
    for w in workers {
        let out = w.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let n: usize = stderr
            .split_whitespace()
            .nth(2)
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{stderr}"));
        completed += n;
    }
    assert_eq!(completed, 24);
    // Every job asked for its three rounds once: none ran twice, none started over.
    let by_job = asked(&server);
    assert_eq!(by_job.len(), 24);
    for (job, rounds) in &by_job {
        assert_eq!(rounds, &[0, 1, 2], "{job}");
    }
    let rows = sql(
        &schema.url,
        "SELECT state, attempts, cardinality(runs), result->>'status', (result->>'rounds')::int \
         FROM batch_jobs",
    );
    assert_eq!(rows.len(), 24);
    for r in &rows {
        let row: (String, i32, i32, String, i32) =
            (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4));
        assert_eq!(row, ("done".into(), 1, 1, "completed".into(), 3));
    }
    let runs = sql(
        &schema.url,
        "SELECT count(*) FROM runs WHERE status = 'completed'",
    );
    assert_eq!(runs[0].get::<_, i64>(0), 24);

    // The same reports a local batch writes, and the counts.
    let junit = sb.path("junit.xml");
    let out = run(sb
        .rounds()
        .args(["batch", "results", "--store", &schema.url, &batch, "--out"])
        .arg(sb.path("report"))
        .arg("--junit")
        .arg(&junit));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = std::fs::read_to_string(sb.path("report/results.jsonl")).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 24);
    assert!(lines.iter().all(|l| l["status"] == "completed"));
    let xml = std::fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let cases = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .count();
    assert_eq!(cases, 24);
    let status = run(sb
        .rounds()
        .args(["batch", "status", "--store", &schema.url, &batch]));
    assert_eq!(status.code, 0, "{}", status.stderr);
    assert!(status.stdout.contains("24 jobs"), "{}", status.stdout);
    assert!(
        status.stdout.contains("done: completed"),
        "{}",
        status.stdout
    );
}

#[test]
fn a_worker_killed_mid_job_loses_nothing_and_the_job_finishes_once_elsewhere() {
    let Some(pg) = server() else { return };
    let schema = Schema::new(pg);
    let sb = Sandbox::new();
    let release = sb.path("release");
    let held = release.clone();
    // The first worker's second request is held open: it is mid-job when it is killed.
    let mut holding = true;
    let server = MockServer::respond(move |r| {
        let mut reply = three_rounds(r);
        if rounds_before(r) == 1 && std::mem::take(&mut holding) {
            reply
                .body
                .insert(0, Step::WaitFor(held.clone(), Duration::from_secs(60)));
        }
        reply
    });
    let jobs = jobs_file(&sb, 1);
    let batch = enqueue(&sb, &server, &schema.url, &jobs);

    let mut first = worker(&sb, &server, &schema.url, &batch, "w1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.requests().iter().all(|r| rounds_before(r) != 1) {
        assert!(
            Instant::now() < deadline,
            "the first worker never reached round 2"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    first.kill().unwrap(); // SIGKILL
    first.wait().unwrap();
    let stored = sql(&schema.url, "SELECT count(*) FROM turn_rounds");
    assert_eq!(
        stored[0].get::<_, i64>(0),
        1,
        "round 1 was stored before the kill"
    );

    let second: Run = run_within(
        &mut worker(&sb, &server, &schema.url, &batch, "w2"),
        Duration::from_secs(60),
    );
    std::fs::write(&release, "").unwrap();
    assert_eq!(second.code, 0, "{}", second.stderr);

    // Round 1 was asked for once; round 2 twice (the held request, then the resumed run); the
    // answer once.
    let by_job = asked(&server);
    assert_eq!(by_job["job-0"], [0, 1, 1, 2]);
    let resumed = server
        .requests()
        .into_iter()
        .rfind(|r| rounds_before(r) == 1)
        .unwrap();
    assert!(String::from_utf8_lossy(&resumed.body).contains("alpha"));

    let row = &sql(
        &schema.url,
        "SELECT state, attempts, cardinality(runs), result->>'status', (result->>'rounds')::int, \
         runs[1], runs[2] FROM batch_jobs",
    )[0];
    let (state, attempts, runs, status, rounds): (String, i32, i32, String, i32) =
        (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
    assert_eq!((state.as_str(), attempts, runs), ("done", 2, 2));
    assert_eq!((status.as_str(), rounds), ("completed", 3));
    let (killed, finished): (String, String) = (row.get(5), row.get(6));
    let run = |id: &str| {
        let r = &sql(
            &schema.url,
            &format!(
                "SELECT status, (SELECT count(*) FROM turn_rounds t WHERE t.run_id = r.run_id), resumed_from IS NOT NULL FROM runs r WHERE run_id = '{id}'"
            ),
        )[0];
        (
            r.get::<_, Option<String>>(0),
            r.get::<_, i64>(1),
            r.get::<_, bool>(2),
        )
    };
    assert_eq!(run(&killed), (None, 1, false));
    assert_eq!(run(&finished), (Some("completed".into()), 2, true));
}

#[test]
fn a_worker_without_a_key_gives_the_job_back_and_exits_2() {
    let Some(pg) = server() else { return };
    let schema = Schema::new(pg);
    let sb = Sandbox::new();
    let server = MockServer::respond(three_rounds);
    let jobs = jobs_file(&sb, 2);
    let batch = enqueue(&sb, &server, &schema.url, &jobs);
    let out = run(sb.rounds().args([
        "batch",
        "--worker",
        "--store",
        &schema.url,
        "--batch",
        &batch,
    ]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("ANTHROPIC_API_KEY"), "{}", out.stderr);
    let rows = sql(
        &schema.url,
        "SELECT state, attempts FROM batch_jobs ORDER BY line",
    );
    let rows: Vec<(String, i32)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(rows, [("queued".into(), 0), ("queued".into(), 0)]);
    assert!(server.requests().is_empty());
}

/// Workers took `--retry-failed` and ignored it: a job that failed stayed failed however many
/// workers came. Now a worker started with it puts such jobs back first; a worker without it
/// (the control) retries nothing.
#[test]
fn a_worker_with_retry_failed_runs_the_jobs_that_did_not_complete_again() {
    let Some(pg) = server() else { return };
    let schema = Schema::new(pg);
    let sb = Sandbox::new();
    // job-1 is refused (400) until the switch file exists; then everything works.
    let fixed = sb.path("fixed");
    let switch = fixed.clone();
    let server = MockServer::respond(move |r| {
        if job_of(r) == "job-1" && !switch.exists() {
            return crate::common::mock::Reply::error(
                400,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"no"}}"#,
            );
        }
        three_rounds(r)
    });
    let jobs = jobs_file(&sb, 3);
    let batch = enqueue(&sb, &server, &schema.url, &jobs);
    let out = run(&mut worker(&sb, &server, &schema.url, &batch, "w1"));
    assert_eq!(out.code, 8, "{}", out.stderr);
    let states = || {
        let rows = sql(
            &schema.url,
            "SELECT job_id, state, exit_code FROM batch_jobs ORDER BY line",
        );
        rows.iter()
            .map(|r| {
                (
                    r.get::<_, String>(0),
                    r.get::<_, String>(1),
                    r.get::<_, Option<i32>>(2),
                )
            })
            .collect::<Vec<_>>()
    };
    let failed = vec![
        ("job-0".to_owned(), "done".to_owned(), Some(0)),
        ("job-1".to_owned(), "done".to_owned(), Some(1)),
        ("job-2".to_owned(), "done".to_owned(), Some(0)),
    ];
    assert_eq!(states(), failed);
    std::fs::write(&fixed, "").unwrap();

    // The control: a worker without the flag finds nothing to do.
    let before = server.requests().len();
    let out = run(&mut worker(&sb, &server, &schema.url, &batch, "w2"));
    assert_eq!(server.requests().len(), before, "{}", out.stderr);
    assert_eq!(states(), failed);

    let out = run(worker(&sb, &server, &schema.url, &batch, "w3").arg("--retry-failed"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("1 job that had not completed"),
        "{}",
        out.stderr
    );
    assert_eq!(
        states()[1],
        ("job-1".to_owned(), "done".to_owned(), Some(0))
    );
    // Only job-1 ran again, from its first round.
    let again: Vec<usize> = server.requests()[before..]
        .iter()
        .map(|r| {
            assert_eq!(job_of(r), "job-1");
            rounds_before(r)
        })
        .collect();
    assert_eq!(again, [0, 1, 2]);
}
