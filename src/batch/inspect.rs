//! Reading a queued batch back: `rounds batch status` (counts by state, the jobs running
//! longest) and `rounds batch results` (its `results.jsonl` and JUnit, as a local batch writes).

use std::time::Instant;

use super::args::{ResultsArgs, StatusArgs};
use super::jobs::{Job, Overrides};
use super::results::ResultLine;
use super::{BatchError, Finish, display};
use crate::outcome::Status;
use crate::store::queue::{JobRow, Queue};

/// The batch's jobs, as the queue has them.
async fn jobs(store: &str, batch: &str) -> Result<Vec<JobRow>, BatchError> {
    let queue = Queue::connect(store).await?;
    let jobs = queue.jobs(batch).await?;
    jobs.ok_or_else(|| BatchError::UnknownBatch(batch.to_owned()))
}

/// `rounds batch status --store URL ID`: counts by state and the jobs running longest.
pub(crate) async fn status(a: &StatusArgs) -> Result<Status, BatchError> {
    let jobs = jobs(&a.store, &a.batch).await?;
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    for j in &jobs {
        let key = match (&j.state[..], &j.result) {
            ("done", Some(r)) => format!("done: {}", r["status"].as_str().unwrap_or("?")),
            ("running", _) if j.expired => "running, lease expired".to_owned(),
            (state, _) => state.to_owned(),
        };
        *counts.entry(key).or_default() += 1;
    }
    let batch = crate::terminal::line(&a.batch);
    let mut text = format!("batch {batch}: {} jobs\n", jobs.len());
    // A done job's status is what its worker stored: a string, shown escaped like the ids.
    for (state, n) in &counts {
        let state = crate::terminal::line(state);
        text.push_str(&format!("  {state:<26} {n:>6}\n"));
    }
    let mut running: Vec<_> = jobs.iter().filter(|j| j.state == "running").collect();
    running.sort_by(|x, y| {
        y.running_secs
            .unwrap_or(0.0)
            .total_cmp(&x.running_secs.unwrap_or(0.0))
    });
    if !running.is_empty() {
        text.push_str("running longest:\n");
    }
    for j in running.iter().take(10) {
        text.push_str(&format!(
            "  {}  {:.0}s  attempt {}  {}{}\n",
            crate::terminal::line(&j.job_id),
            j.running_secs.unwrap_or(0.0),
            j.attempts,
            crate::terminal::line(j.lease_owner.as_deref().unwrap_or("")),
            if j.expired { " (lease expired)" } else { "" }
        ));
    }
    display::stdout(&text);
    Ok(Status::Completed)
}

/// `rounds batch results --store URL ID --out DIR`: the batch's `results.jsonl` (and `--junit`)
/// as a local batch writes them; a job not done yet is `not_started`, with its state.
pub(crate) async fn results(a: &ResultsArgs) -> Result<Status, BatchError> {
    let started = Instant::now();
    let jobs = jobs(&a.store, &a.batch).await?;
    let lines: Vec<ResultLine> = jobs
        .iter()
        .map(|j| {
            let recorded = j
                .result
                .clone()
                .and_then(|r| serde_json::from_value::<ResultLine>(r).ok());
            recorded.unwrap_or_else(|| {
                let why = match (&j.state[..], j.expired) {
                    ("running", true) => format!("its lease expired after {} attempts", j.attempts),
                    ("running", false) => {
                        format!("still running ({})", j.lease_owner.as_deref().unwrap_or(""))
                    }
                    (state, _) => format!("still {state}"),
                };
                let job = Job {
                    id: j.job_id.clone(),
                    line: usize::try_from(j.line).unwrap_or(0),
                    prompt: String::new(),
                    overrides: Overrides::default(),
                };
                ResultLine::not_started(&job, &why)
            })
        })
        .collect();
    let out = super::out::OutDir::create(&a.out).map_err(|source| BatchError::Out {
        dir: Some(a.out.clone()),
        source,
    })?;
    let reports = super::Reports::open(a.junit.as_deref(), None)?;
    out.results_target()
        .and_then(|t| super::results::ResultsFile::create(&t, &lines))
        .map_err(BatchError::ResultsWritten)?;
    let finish = Finish {
        results: lines,
        bad: &[],
        results_path: Some(out.results()),
        backoffs: 0,
        seconds: started.elapsed().as_secs_f64(),
        quiet: false,
        reports,
    };
    Ok(finish.report(None))
}
