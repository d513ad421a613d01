//! A local batch through a rate-limit storm and onto a full disk (issue 26, items 4 and 5): a
//! window of 429s costs no job its retries and starts no job while the endpoint is paused; a
//! disk that fills stops new jobs with one warning, keeps every completed job's line whole in
//! `results.jsonl`, and a rerun that cannot write its resumed transcript keeps the chain.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use super::batch::{job_of, jobs_file, rounds_before, three_rounds};
use crate::common::mock::{MockServer, Reply, Step};
use crate::common::{Sandbox, read_jsonl, run, sse};

const LIMITED: &str =
    r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#;

fn batch(sb: &Sandbox, server: &MockServer, jobs: &Path, out: &Path) -> Command {
    sb.write("a.txt", "alpha\n");
    let mut cmd = sb.anthropic(server);
    cmd.arg("batch")
        .arg(jobs)
        .arg("--out")
        .arg(out)
        .args(["--max-rounds", "5"]);
    cmd
}

/// The lines of `results.jsonl`; a line that is no JSON (a cut line) fails the test.
fn results(out: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    let tail: String = text
        .chars()
        .rev()
        .take(200)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "a cut last line: …{tail:?}"
    );
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {} bytes", l.len())))
        .collect()
}

fn limited(retry_after: Option<&str>) -> Reply {
    let mut reply = Reply::error(429, LIMITED);
    if let Some(secs) = retry_after {
        reply.headers.push(("retry-after".into(), secs.into()));
    }
    reply
}

/// Three-round jobs against an endpoint that, from the 20th request on, answers every request
/// with 429 for 2 s, then recovers; and how many 429s it served.
fn storm_server(retry_after: Option<&'static str>) -> (MockServer, Arc<Mutex<usize>>) {
    const WINDOW: Duration = Duration::from_secs(2);
    let refused: Arc<Mutex<usize>> = Arc::default();
    let count = refused.clone();
    let mut seen = (0, None::<Instant>);
    let server = MockServer::respond(move |r| {
        seen.0 += 1;
        if seen.0 == 20 {
            seen.1 = Some(r.received);
        }
        match seen.1 {
            Some(since) if r.received < since + WINDOW => {
                *count.lock().unwrap() += 1;
                limited(retry_after)
            }
            _ => three_rounds(r),
        }
    });
    (server, refused)
}

#[test]
fn a_429_window_fails_no_job_when_it_names_its_wait() {
    storm(Some("1"));
}

#[test]
fn a_429_window_that_names_no_wait_fails_no_job_either() {
    storm(None);
}

/// 40 three-round jobs, 8 at once, one retry each, through the storm of `storm_server`. Every wave of 429s would cost each
/// job in flight a retry; the shared pause must cost none.
fn storm(retry_after: Option<&'static str>) {
    let (server, refused) = storm_server(retry_after);
    let sb = Sandbox::new();
    let jobs = jobs_file(&sb, 40);
    let out = sb.path("out");
    let ran = run(batch(&sb, &server, &jobs, &out).args(["--jobs", "8", "--max-retries", "1"]));
    let refused = *refused.lock().unwrap();
    assert!(
        refused >= 8,
        "the storm must meet several jobs: {refused} 429s"
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let lines = results(&out);
    assert_eq!(lines.len(), 40);
    for line in &lines {
        assert_eq!(line["status"], "completed", "{line}");
    }
    assert!(
        ran.stderr.contains("40 of 40 jobs completed"),
        "{}",
        ran.stderr
    );
}

#[test]
fn a_429_window_fails_no_job_through_two_queue_workers() {
    let Some(pg) = crate::common::pg::server() else {
        return;
    };
    let schema = crate::common::pg::Schema::new(pg);
    let (server, refused) = storm_server(Some("1"));
    let sb = Sandbox::new();
    let jobs = jobs_file(&sb, 40);
    sb.write("a.txt", "alpha\n");
    let queue = |cmd: &mut Command| {
        cmd.arg("batch").arg("--store").arg(&schema.url);
    };
    let mut enqueue = sb.anthropic(&server);
    queue(&mut enqueue);
    enqueue
        .arg(&jobs)
        .args(["--enqueue", "--max-rounds", "5", "--max-retries", "1"]);
    let queued = run(&mut enqueue);
    assert_eq!(queued.code, 0, "{}", queued.stderr);
    let batch = queued.stdout.trim().to_owned();
    let spawn = |out: &str| {
        let mut cmd = sb.anthropic(&server);
        queue(&mut cmd);
        cmd.args([
            "--batch",
            &batch,
            "--worker",
            "--jobs",
            "4",
            "--max-retries",
            "1",
        ])
        .arg("--out")
        .arg(sb.path(out))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
    };
    let workers = [spawn("w1"), spawn("w2")];
    let mut said = String::new();
    for w in workers {
        let out = w.wait_with_output().unwrap();
        said.push_str(&String::from_utf8_lossy(&out.stderr));
    }
    // Workers claim nothing while the endpoint is paused, so fewer requests meet the storm
    // here than in a local batch, and how many depends on the machine's load.
    let refused = *refused.lock().unwrap();
    assert!(
        refused >= 4,
        "the storm must meet several jobs: {refused} 429s"
    );
    let rows = crate::common::pg::sql(
        &schema.url,
        "SELECT result->>'status', count(*) FROM batch_jobs GROUP BY 1 ORDER BY 1",
    );
    let by_status: Vec<(Option<String>, i64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(by_status, [(Some("completed".to_owned()), 40)], "{said}");
}

/// When `t` (RFC 3339, from a transcript) was.
fn at(t: &Value) -> SystemTime {
    let ts: jiff::Timestamp = t.as_str().unwrap().parse().unwrap();
    SystemTime::from(ts)
}

#[test]
fn a_paused_endpoint_starts_no_new_job_until_it_opens() {
    // Four slots. job-0's first request gets a 429 asking for 2 s; job-1..3 are answered
    // slowly, so they end (and free their slots) while the endpoint is paused. The jobs that
    // take those slots must not start until the pause is over.
    const PAUSE: Duration = Duration::from_secs(2);
    let paused: Arc<Mutex<Option<(Instant, SystemTime)>>> = Arc::default();
    let seen = paused.clone();
    let server = MockServer::respond(move |r| {
        let job = job_of(r);
        let mut p = seen.lock().unwrap();
        if job == "job-0" && p.is_none() {
            *p = Some((r.received, SystemTime::now()));
            return limited(Some("2"));
        }
        let mut reply = sse::answer(&format!("done with {job}"));
        if ["job-1", "job-2", "job-3"].contains(&job.as_str()) {
            reply
                .body
                .insert(0, Step::Sleep(Duration::from_millis(600)));
        }
        reply
    });
    let sb = Sandbox::new();
    let jobs = jobs_file(&sb, 8);
    let out = sb.path("out");
    let ran = run(batch(&sb, &server, &jobs, &out).args(["--jobs", "4"]));
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let (since, wall) = paused.lock().unwrap().unwrap();
    // Not vacuous: slots came free while the endpoint was paused.
    let freed = server
        .requests()
        .iter()
        .filter(|r| ["job-1", "job-2", "job-3"].contains(&job_of(r).as_str()))
        .filter_map(|r| r.replied)
        .filter(|t| *t < since + PAUSE - Duration::from_millis(500))
        .count();
    assert!(freed >= 2, "{freed} slots freed during the pause");
    let margin = Duration::from_millis(150);
    for line in results(&out) {
        assert_eq!(line["status"], "completed", "{line}");
        let t = read_jsonl(Path::new(line["transcript"].as_str().unwrap()));
        let started = at(&t[0]["time"]);
        let inside = started > wall + margin && started + margin < wall + PAUSE;
        assert!(
            !inside,
            "{} started {:?} into the pause",
            line["id"],
            started.duration_since(wall)
        );
    }
}

/// A small tmpfs mounted at a path for one test, or why there is none.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(at)
            .output();
        match ok {
            Ok(o) if o.status.success() => Some(Tmpfs(at.to_owned())),
            Ok(o) => {
                eprintln!(
                    "skipped: cannot mount a tmpfs: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                );
                None
            }
            Err(e) => {
                eprintln!("skipped: cannot run mount: {e}");
                None
            }
        }
    }

    /// Fills the file system: a file as large as it takes no more.
    fn fill(&self) -> PathBuf {
        use std::io::Write;
        let path = self.0.join("filler");
        let mut f = std::fs::File::create(&path).unwrap();
        let chunk = vec![b'x'; 4096];
        while f.write_all(&chunk).is_ok() {}
        let one = [b'x'];
        while f.write_all(&one).is_ok() {}
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_stops_new_jobs_says_so_once_and_keeps_every_completed_line() {
    let sb = Sandbox::new();
    let out = sb.path("out");
    let Some(_disk) = Tmpfs::mount(&out, "400k") else {
        return;
    };
    let long = "x".repeat(4000);
    let server =
        MockServer::respond(move |r| sse::answer(&format!("{long} done with {}", job_of(r))));
    let jobs = jobs_file(&sb, 60);
    let ran = run(batch(&sb, &server, &jobs, &out).args(["--jobs", "4"]));
    assert_ne!(ran.code, 0, "{}", ran.stderr);
    let lines = results(&out);
    let completed: Vec<&str> = lines
        .iter()
        .filter(|l| l["status"] == "completed")
        .map(|l| l["id"].as_str().unwrap())
        .collect();
    assert!(!completed.is_empty(), "{}", ran.stderr);
    // Every job whose transcript says it completed has its line.
    for entry in std::fs::read_dir(&out).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("job-") || !name.ends_with(".jsonl") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let ended = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .any(|l| l["type"] == "end" && l["status"] == "completed");
        let id = name.trim_end_matches(".jsonl");
        if ended {
            assert!(completed.contains(&id), "{id} completed but has no line");
        }
    }
    // After the first failure no job starts: only those already running fail.
    let failed: Vec<&Value> = lines
        .iter()
        .filter(|l| l["status"] != "completed" && l["status"] != "not_started")
        .collect();
    assert!(
        failed.len() <= 4,
        "{} jobs failed: {failed:?}",
        failed.len()
    );
    let not_started = lines
        .iter()
        .filter(|l| l["status"] == "not_started")
        .count();
    assert!(not_started > 0, "{}", ran.stderr);
    assert!(server.requests().len() <= completed.len() + 4);
    // Said once, not once per job.
    let said = ran.stderr.matches("No space left on device").count();
    assert!(
        (1..=2).contains(&said),
        "said {said} times:\n{}",
        ran.stderr
    );
    // A job that could not start leaves nothing behind: no empty transcript, no empty outputs
    // directory (the attempts directory is made only when a transcript is set aside).
    for entry in std::fs::read_dir(&out).unwrap() {
        let path = entry.unwrap().path();
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(path.is_file() && size > 0, "{} left behind", path.display());
    }
}

#[test]
fn a_rerun_that_cannot_write_its_resumed_transcript_keeps_the_chain() {
    let sb = Sandbox::new();
    let out = sb.path("out");
    let Some(disk) = Tmpfs::mount(&out, "1m") else {
        return;
    };
    // The first run: job-1's first round runs, its second request meets an overloaded
    // provider, so the job ends unavailable and a rerun resumes it.
    let down = Arc::new(Mutex::new(true));
    let flag = down.clone();
    let server = MockServer::respond(move |r| {
        if *flag.lock().unwrap() && rounds_before(r) == 1 {
            return Reply::error(
                529,
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            );
        }
        three_rounds(r)
    });
    let jobs = sb.path("jobs.jsonl");
    std::fs::write(&jobs, "{\"id\":\"job-1\",\"prompt\":\"Do job-1.\"}\n").unwrap();
    let first = run(batch(&sb, &server, &jobs, &out).args(["--max-retries", "0"]));
    assert_eq!(first.code, 10, "{}", first.stderr);
    *down.lock().unwrap() = false;

    // The rerun on a full disk: the resumed transcript cannot be written. (results.jsonl goes
    // first: the rerun replaces it, and the room it held would be room again.)
    std::fs::remove_file(out.join("results.jsonl")).unwrap();
    let filler = disk.fill();
    let before = server.requests().len();
    let full = run(&mut batch(&sb, &server, &jobs, &out));
    assert_ne!(full.code, 0, "{}", full.stderr);
    assert_eq!(server.requests().len(), before, "nothing was asked");

    // With room again, the next rerun continues from the first round, not from the start.
    std::fs::remove_file(filler).unwrap();
    let again = run(&mut batch(&sb, &server, &jobs, &out));
    assert_eq!(again.code, 0, "{}", again.stderr);
    let asked = &server.requests()[before..];
    assert!(!asked.is_empty());
    assert_eq!(
        rounds_before(&asked[0]),
        1,
        "the job started over instead of resuming"
    );
    let line = &results(&out)[0];
    assert_eq!(line["status"], "completed", "{line}");
    assert_eq!(line["rounds"], 3, "{line}");
}

/// A 429 the shared pause waits out is logged by the batch before any job's own redactor sees
/// it: a provider that quotes the key back in it must not put the key on stderr. The control
/// quotes a value that is no secret, which does show: the warning carries the provider's text.
#[test]
fn a_429_quoting_the_key_is_logged_redacted() {
    const KEY: &str = "sk-ant-batch-storm-secret-4f1c9e2a7b";
    const PLAIN: &str = "no-secret-here-8d3b1f";
    for (quoted, secret) in [(KEY, true), (PLAIN, false)] {
        let sb = Sandbox::new();
        let body = format!(
            r#"{{"type":"error","error":{{"type":"rate_limit_error","message":"slow down, {quoted}"}}}}"#
        );
        let mut served = 0;
        let server = MockServer::respond(move |r| {
            served += 1;
            if served == 1 {
                let mut reply = Reply::error(429, &body);
                reply.headers.push(("retry-after".into(), "1".into()));
                return reply;
            }
            three_rounds(r)
        });
        let out_dir = sb.path("out");
        let jobs = jobs_file(&sb, 1);
        let out = run(batch(&sb, &server, &jobs, &out_dir)
            .env("ANTHROPIC_API_KEY", KEY)
            .arg("-v"));
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(
            out.stderr.contains("shared pause"),
            "the 429 must be logged: {}",
            out.stderr
        );
        if secret {
            assert!(!out.stderr.contains(KEY), "{}", out.stderr);
            assert!(
                out.stderr.contains("[REDACTED:ANTHROPIC_API_KEY]"),
                "{}",
                out.stderr
            );
        } else {
            assert!(out.stderr.contains(PLAIN), "{}", out.stderr);
        }
    }
}
