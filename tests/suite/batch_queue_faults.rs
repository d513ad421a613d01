//! The queue under the faults of a distributed system: more connections wanted than the server
//! allows, a server restart mid-batch, a worker paused past its lease, a store that is down when
//! a worker starts. Tests that stop or fill the server use a cluster of their own
//! (`common::pg::own_cluster`); with no PostgreSQL here, each says why and passes.

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::batch::{job_of, jobs_file, rounds_before, three_rounds};
use crate::common::mock::{MockServer, Step};
use crate::common::pg::{Schema, own_cluster, server, sql};
use crate::common::{Sandbox, run, run_within};

fn rounds(sb: &Sandbox, server: &MockServer, store: &str) -> Command {
    sb.write("a.txt", "alpha\n");
    let mut cmd = sb.anthropic(server);
    cmd.arg("batch").arg("--store").arg(store);
    cmd
}

fn enqueue(sb: &Sandbox, server: &MockServer, store: &str, jobs: usize) -> String {
    let jobs = jobs_file(sb, jobs);
    let out = run(rounds(sb, server, store)
        .arg(&jobs)
        .args(["--enqueue", "--max-rounds", "5"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.stdout.trim().to_owned()
}

fn worker(sb: &Sandbox, server: &MockServer, store: &str, batch: &str, out: &str) -> Command {
    let mut cmd = rounds(sb, server, store);
    cmd.args(["--batch", batch, "--worker", "--out"])
        .arg(sb.path(out));
    cmd
}

fn spawn(cmd: &mut Command) -> Child {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for a worker, killing it past `limit`: its exit code and stderr.
fn finish(child: Child, limit: Duration) -> (Option<i32>, String) {
    let pid = child.id();
    let watchdog = std::thread::spawn(move || {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            std::thread::sleep(Duration::from_millis(100));
            if std::fs::metadata(format!("/proc/{pid}")).is_err() {
                return;
            }
        }
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    });
    let out = child.wait_with_output().unwrap();
    let _ = watchdog.join();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
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

/// Every job done, completed in three rounds, and asked for each round exactly once.
fn every_job_completed_once(store: &str, server: &MockServer, jobs: usize) {
    let rows = sql(
        store,
        "SELECT job_id, state, result->>'status', (result->>'rounds')::int FROM batch_jobs \
         ORDER BY line",
    );
    assert_eq!(rows.len(), jobs);
    for r in &rows {
        let row: (String, String, Option<String>, Option<i32>) =
            (r.get(0), r.get(1), r.get(2), r.get(3));
        let id = row.0.clone();
        assert_eq!(row, (id, "done".into(), Some("completed".into()), Some(3)));
    }
    let by_job = asked(server);
    assert_eq!(by_job.len(), jobs);
    for (job, rounds) in &by_job {
        assert_eq!(rounds, &[0, 1, 2], "{job}");
    }
}

#[test]
fn more_workers_times_jobs_than_max_connections_all_complete() {
    let Some(cluster) = own_cluster(20) else {
        return;
    };
    let sb = Sandbox::new();
    let server = MockServer::respond(three_rounds);
    let batch = enqueue(&sb, &server, &cluster.url, 40);
    // 3 workers x 8 jobs at once want more sessions than the 20 the server allows.
    let workers: Vec<Child> = (0..3)
        .map(|i| {
            spawn(
                worker(&sb, &server, &cluster.url, &batch, &format!("w{i}"))
                    .args(["--jobs", "8", "--lease", "10"]),
            )
        })
        .collect();
    for w in workers {
        let (code, stderr) = finish(w, Duration::from_secs(180));
        assert_eq!(code, Some(0), "{stderr}");
    }
    every_job_completed_once(&cluster.url, &server, 40);
}

#[test]
fn a_store_restart_mid_batch_completes_every_job_without_restarting_workers() {
    let Some(cluster) = own_cluster(100) else {
        return;
    };
    let sb = Sandbox::new();
    // Slow enough replies that the restart lands mid-batch.
    let server = MockServer::respond(|r| {
        let mut reply = three_rounds(r);
        reply
            .body
            .insert(0, Step::Sleep(Duration::from_millis(150)));
        reply
    });
    let batch = enqueue(&sb, &server, &cluster.url, 16);
    let workers: Vec<Child> = (0..2)
        .map(|i| {
            spawn(
                worker(&sb, &server, &cluster.url, &batch, &format!("w{i}"))
                    .args(["--jobs", "2", "--lease", "20"]),
            )
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.requests().len() < 10 {
        assert!(Instant::now() < deadline, "the workers never got going");
        std::thread::sleep(Duration::from_millis(20));
    }
    cluster.down().unwrap();
    std::thread::sleep(Duration::from_secs(2));
    cluster.up().unwrap();
    for w in workers {
        let (code, stderr) = finish(w, Duration::from_secs(180));
        assert_eq!(code, Some(0), "{stderr}");
    }
    every_job_completed_once(&cluster.url, &server, 16);
}

fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

#[test]
fn a_worker_paused_past_its_lease_writes_nothing_after_another_took_over() {
    let Some(pg) = server() else { return };
    let schema = Schema::new(pg);
    let sb = Sandbox::new();
    let release = sb.path("release");
    let held = release.clone();
    // The first worker's second request is held: it is mid-job when it is paused.
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
    let batch = enqueue(&sb, &server, &schema.url, 1);
    let first = spawn(worker(&sb, &server, &schema.url, &batch, "w1").args(["--lease", "2"]));
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.requests().iter().all(|r| rounds_before(r) != 1) {
        assert!(
            Instant::now() < deadline,
            "the first worker never reached round 2"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(&first, "-STOP");
    std::thread::sleep(Duration::from_secs(3));
    let second = run_within(
        worker(&sb, &server, &schema.url, &batch, "w2").args(["--lease", "2"]),
        Duration::from_secs(60),
    );
    assert_eq!(second.code, 0, "{}", second.stderr);
    // The held answer reaches the paused worker, which then wakes up.
    std::fs::write(&release, "").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    signal(&first, "-CONT");
    let (_, stderr) = finish(first, Duration::from_secs(60));

    // No request after the takeover: round 2 asked twice (the held one, then the resumed run).
    assert_eq!(asked(&server)["job-0"], [0, 1, 1, 2], "{stderr}");
    let row = &sql(
        &schema.url,
        "SELECT state, attempts, result->>'status', (result->>'rounds')::int, runs[1] \
         FROM batch_jobs",
    )[0];
    let (state, attempts, status, rounds): (String, i32, String, i32) =
        (row.get(0), row.get(1), row.get(2), row.get(3));
    assert_eq!(
        (state.as_str(), attempts, status.as_str(), rounds),
        ("done", 2, "completed", 3)
    );
    // The paused worker's run is as it was when it was taken over: one round, no end.
    let paused: String = row.get(4);
    let r = &sql(
        &schema.url,
        &format!(
            "SELECT status, (SELECT count(*) FROM turn_rounds t WHERE t.run_id = r.run_id) \
             FROM runs r WHERE run_id = '{paused}'"
        ),
    )[0];
    assert_eq!(
        (r.get::<_, Option<String>>(0), r.get::<_, i64>(1)),
        (None, 1),
        "{stderr}"
    );
    let all = sql(&schema.url, "SELECT count(*) FROM turn_rounds");
    assert_eq!(all[0].get::<_, i64>(0), 3, "{stderr}");
    assert!(stderr.contains("lost its lease"), "{stderr}");
}

#[test]
fn a_worker_started_while_the_store_is_down_waits_and_exits_10_if_it_never_returns() {
    // Needs no server: the point is that there is none.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://rounds:hunter2@127.0.0.1:{port}/runs?sslmode=disable");
    let sb = Sandbox::new();
    let server = MockServer::respond(three_rounds);
    let started = Instant::now();
    let out = run_within(
        worker(&sb, &server, &url, "b1", "w").args(["--store-timeout", "2"]),
        Duration::from_secs(60),
    );
    assert_eq!(out.code, 10, "{}", out.stderr);
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("waiting"), "{}", out.stderr);
    assert!(!out.stderr.contains("hunter2"), "{}", out.stderr);
    assert!(server.requests().is_empty());

    // One that comes back in time: the worker goes on and drains the batch.
    let Some(cluster) = own_cluster(100) else {
        return;
    };
    let batch = enqueue(&sb, &server, &cluster.url, 3);
    cluster.down().unwrap();
    let w = spawn(worker(&sb, &server, &cluster.url, &batch, "w2").args(["--store-timeout", "60"]));
    std::thread::sleep(Duration::from_secs(2));
    cluster.up().unwrap();
    let (code, stderr) = finish(w, Duration::from_secs(120));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("waiting"), "{stderr}");
    every_job_completed_once(&cluster.url, &server, 3);
}

#[test]
fn a_store_gone_past_the_timeout_leaves_the_job_to_the_queue_and_exits_10() {
    let Some(cluster) = own_cluster(100) else {
        return;
    };
    let sb = Sandbox::new();
    let release = sb.path("release");
    let held = release.clone();
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
    let batch = enqueue(&sb, &server, &cluster.url, 1);
    let first = spawn(worker(&sb, &server, &cluster.url, &batch, "w1").args([
        "--lease",
        "3",
        "--store-timeout",
        "2",
    ]));
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.requests().iter().all(|r| rounds_before(r) != 1) {
        assert!(
            Instant::now() < deadline,
            "the worker never reached round 2"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The store goes away mid-job, and the model's answer arrives while it is away.
    cluster.down().unwrap();
    std::fs::write(&release, "").unwrap();
    let (code, stderr) = finish(first, Duration::from_secs(60));
    assert_eq!(code, Some(10), "{stderr}");
    assert!(stderr.contains("waiting up to 2s"), "{stderr}");
    assert!(stderr.contains("1 job left leased"), "{stderr}");

    // Not failed: still the queue's, and the next worker resumes it after round 1.
    cluster.up().unwrap();
    let row = &sql(&cluster.url, "SELECT state, result IS NULL FROM batch_jobs")[0];
    assert_eq!(
        (row.get::<_, String>(0), row.get::<_, bool>(1)),
        ("running".into(), true)
    );
    let second = run_within(
        worker(&sb, &server, &cluster.url, &batch, "w2").args(["--lease", "3"]),
        Duration::from_secs(60),
    );
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert_eq!(asked(&server)["job-0"], [0, 1, 1, 2]);
    let row = &sql(&cluster.url, "SELECT result->>'status' FROM batch_jobs")[0];
    assert_eq!(row.get::<_, String>(0), "completed");
}
