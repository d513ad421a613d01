//! A batch on one machine: plan each job from `--out DIR`, run up to `--jobs N` at once in this
//! process, write each result as its job ends, then report.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;

use super::display::{self, Display};
use super::job::{self, Placement, Setup, SetupError};
use super::jobs::{BadLine, Job};
use super::limits::{Budget, Pool};
use super::out::{OutDir, Plan};
use super::results::{self, Prior, ResultLine, ResultsFile};
use super::{BatchError, Control, Finish, Reports};
use crate::outcome::{Failure, Outcome, Status};

/// Runs `jobs` (this shard's) and reports them; returns the batch's status.
pub(crate) async fn run(
    setup: Setup,
    jobs: Vec<Job>,
    bad: &[BadLine],
    started: Instant,
) -> Result<Status, BatchError> {
    let flags = setup.parsed.flags.clone();
    let dir = flags.out.as_ref().ok_or(BatchError::NoOut)?;
    let out = OutDir::create(dir).map_err(|source| BatchError::Out {
        dir: Some(dir.clone()),
        source,
    })?;
    let reports = Reports::open(flags.junit.as_deref(), flags.step_summary.as_deref())?;
    let cli = setup.parsed.cli()?;
    let telemetry = crate::otel::for_batch(&cli)?;
    let (done, todo) = plan(&out, jobs, flags.retry_failed);
    // Flags that cannot run the first job (a missing key, a file that is not there) stop the
    // batch before any request, as they would stop a run.
    if let Some((job, _)) = todo.first() {
        probe(&setup, &out, job)?;
    }
    let results = out
        .results_target()
        .and_then(|t| ResultsFile::create(&t, &done))
        .map_err(|source| BatchError::Results {
            path: out.results(),
            source,
        })?;
    results.reserve_for(todo.len());
    // One trace for the batch: a span, and each job's run its child.
    let jobs = [("rounds.batch.jobs", todo.len().to_string())];
    let group = telemetry.as_ref().map(|t| t.group("batch", &jobs));

    let batch = Arc::new(Local {
        setup,
        out,
        pool: Arc::new(Pool::new(
            flags.rpm,
            flags.tpm,
            Budget::new(cli.budget_tokens, cli.budget_usd),
        )),
        display: Arc::new(Display::new(todo.len() as u64, cli.quiet)),
        results,
        control: Arc::new(Control::default()),
        finished: Mutex::new(Vec::new()),
        store: cli.store.clone().filter(|s| !s.is_empty()),
        halted: Mutex::new(None),
        group,
    });
    let signals = super::watch_signals(batch.control.clone());
    futures_util::stream::iter(todo.into_iter().enumerate())
        .for_each_concurrent(usize::from(flags.parallel), |(key, (job, plan))| {
            let batch = batch.clone();
            async move { batch.run_job(key, job, plan).await }
        })
        .await;
    signals.abort();
    batch.display.clear();
    if let Some((ids, e)) = batch.results.close() {
        display::warning(&unwritten(batch.results.path(), &ids, &e));
    }

    let mut all = done;
    if let Ok(mut finished) = batch.finished.lock() {
        all.append(&mut finished);
    }
    all.sort_by_key(|r| r.line);
    let finish = Finish {
        results: all,
        bad,
        results_path: Some(batch.results.path().to_owned()),
        backoffs: batch.pool.backoffs(),
        seconds: started.elapsed().as_secs_f64(),
        quiet: cli.quiet,
        reports,
    };
    let status = finish.report(batch.control.signal());
    crate::otel::end_batch(batch.group.as_ref(), telemetry.as_ref(), status).await;
    Ok(status)
}

/// What each job does: the results of those done before (first in `results.jsonl`), and the
/// jobs to run with their plans.
fn plan(out: &OutDir, jobs: Vec<Job>, retry_failed: bool) -> (Vec<ResultLine>, Vec<(Job, Plan)>) {
    let earlier = results::previous(&out.results());
    let mut done = Vec::new();
    let mut todo = Vec::new();
    for job in jobs {
        match out.plan(&job, retry_failed) {
            Plan::Skip(recorded) => {
                // The earlier line has what the transcript lacks (final_json), if it is the
                // same run's.
                let line = match earlier.get(&job.id) {
                    Some(e) if e.run_id == recorded.run_id && e.status == recorded.status => {
                        e.clone()
                    }
                    _ => *recorded,
                };
                done.push(line);
            }
            plan => todo.push((job, plan)),
        }
    }
    (done, todo)
}

/// Says which finished jobs' lines `results.jsonl` lacks, and how to get them back.
fn unwritten(path: &Path, ids: &[String], e: &std::io::Error) -> String {
    const SHOWN: usize = 10;
    let mut named = ids
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > SHOWN {
        named.push_str(&format!(" and {} more", ids.len() - SHOWN));
    }
    format!(
        "{}: the lines of {} finished job(s) could not be written ({e}): {named}; with room \
         again, running the batch again writes them from the transcripts",
        path.display(),
        ids.len()
    )
}

/// Configures `job` as it would run, without running it: an error is the batch's flags' or
/// environment's.
fn probe(setup: &Setup, out: &OutDir, job: &Job) -> Result<(), BatchError> {
    let configured = out
        .transcript_target(&job.id)
        .map_err(SetupError::from)
        .and_then(|transcript| {
            let placement = Placement {
                transcript,
                resume: None,
                store: None,
            };
            setup.config(job, &placement)
        });
    match configured {
        Ok(_) => Ok(()),
        Err(source) => Err(BatchError::Job {
            id: job.id.clone(),
            source,
        }),
    }
}

/// A running local batch.
struct Local {
    setup: Setup,
    out: OutDir,
    pool: Arc<Pool>,
    display: Arc<Display>,
    results: ResultsFile,
    control: Arc<Control>,
    finished: Mutex<Vec<ResultLine>>,
    /// `--store`: every job's run kept in PostgreSQL too.
    store: Option<String>,
    /// Why no job may start any more: a write of the batch's own files failed (a full disk).
    halted: Mutex<Option<String>>,
    /// The batch's span, when OpenTelemetry is on: each job's run is its child.
    group: Option<crate::telemetry::Group>,
}

impl Local {
    async fn run_job(&self, key: usize, job: Job, plan: Plan) {
        let line = self.job_line(key, &job, plan).await;
        if let Err(e) = self.results.append(&line) {
            // The line is kept and written with the next one, or at the end (see `results`).
            self.halt(&format!("{}: {e}", self.results.path().display()));
        }
        if let Ok(mut all) = self.finished.lock() {
            all.push(line);
        }
    }

    async fn job_line(&self, key: usize, job: &Job, plan: Plan) -> ResultLine {
        let not_started = (self.control.stopped())
            .or_else(|| self.halted())
            .or_else(|| self.pool.budget.spent());
        if let Some(why) = not_started {
            return ResultLine::not_started(job, &why);
        }
        let transcript = match self.out.transcript_target(&job.id) {
            Ok(t) => t,
            Err(e) => return self.failed_to_start(job, &e.to_string()),
        };
        let set_aside = |prior: Prior| {
            let path = self.out.set_aside(&job.id)?;
            Ok::<_, std::io::Error>((Some(path), prior))
        };
        let aside = match plan {
            Plan::Resume { prior } => set_aside(prior),
            Plan::Fresh { set_aside: true } => {
                set_aside(Prior::default()).map(|_| (None, Prior::default()))
            }
            Plan::Fresh { set_aside: false } | Plan::Skip(_) => Ok((None, Prior::default())),
        };
        let (resume, prior) = match aside {
            Ok(aside) => aside,
            Err(e) => {
                let path = transcript.path();
                let why = format!("cannot set aside {}: {e}", path.display());
                self.halt(&why);
                return self.failed_to_start(job, &why);
            }
        };
        let placement = Placement {
            transcript,
            resume: resume.as_deref(),
            store: self.store.as_deref(),
        };
        // A job that does not start after all gives its interrupted transcript back: a later
        // batch may still resume it.
        let put_back = || {
            if let Some(aside) = &resume {
                let _ = self.out.put_back(&job.id, aside);
            }
        };
        let (outcome, run_id) = match self.setup.config(job, &placement) {
            Err(e) => {
                put_back();
                (Outcome::usage_error(e.to_string()), None)
            }
            Ok(mut config) => {
                let trace = (self.group.as_ref()).map(|g| Arc::new(g.run(&config.run_id)));
                if let Some(run) = &trace {
                    crate::otel::hand_to_tools(&mut config.tool_settings, run);
                }
                if let Some(endpoint) = config.provider.base_url() {
                    self.wait_open(endpoint).await;
                }
                let cancel = match self.halted() {
                    None => self.control.start(key),
                    Some(_) => None,
                };
                let Some(cancel) = cancel else {
                    put_back();
                    let why = (self.control.stopped()).or_else(|| self.halted());
                    return ResultLine::not_started(job, &why.unwrap_or_default());
                };
                self.display.started(key, &job.id);
                let run_id = config.run_id.clone();
                let outcome = job::run(config, key, cancel, &self.pool, &self.display, trace).await;
                self.control.done(key);
                self.after_run(job, &outcome, resume.as_deref());
                (outcome, Some(run_id))
            }
        };
        let line = ResultLine::finished(job, &outcome, run_id, &prior);
        self.display.finished(key, line.completed());
        line
    }

    /// Waits while `endpoint` is paused after a 429: a job started now would only wait at its
    /// gate, holding a slot. A signal ends the wait (the job then does not start).
    async fn wait_open(&self, endpoint: &str) {
        while self.control.stopped().is_none() {
            tokio::select! {
                () = self.pool.wait_open(Some(endpoint)) => return,
                () = tokio::time::sleep(Duration::from_millis(200)) => {}
            }
        }
    }

    /// Stops the batch from starting jobs after a write of its own files failed (a full disk
    /// would fail every one of them, in a moment); says so once.
    fn halt(&self, why: &str) {
        let Ok(mut halted) = self.halted.lock() else {
            return;
        };
        if halted.is_none() {
            display::warning(&format!("{why}; no more jobs start (those running finish)"));
            *halted = Some(format!(
                "the batch stopped starting jobs when it could not write its files: {why}"
            ));
        }
    }

    fn halted(&self) -> Option<String> {
        self.halted.lock().ok().and_then(|h| h.clone())
    }

    /// A run that could not write its transcript halts the batch. A transcript left without
    /// one whole line (its start could not be written) is removed, and the transcript it was to
    /// continue put back: the next batch resumes the chain instead of starting the job over.
    fn after_run(&self, job: &Job, outcome: &Outcome, resumed: Option<&Path>) {
        let path = self.out.transcript(&job.id);
        // Its records are the batch's own files: one that cannot be written halts the batch.
        let unwritten = outcome
            .failure
            .as_ref()
            .is_some_and(|f| f.kind == Failure::Write);
        if let Some(e) = outcome.error.as_deref().filter(|_| unwritten) {
            self.halt(e);
        }
        if outcome.status == Status::Completed {
            return;
        }
        let blank = std::fs::read(&path).is_ok_and(|bytes| !bytes.contains(&b'\n'));
        if blank
            && self.out.remove_transcript(&job.id).is_ok()
            && let Some(aside) = resumed
        {
            let _ = self.out.put_back(&job.id, aside);
        }
    }

    fn failed_to_start(&self, job: &Job, why: &str) -> ResultLine {
        let outcome = Outcome::new(Status::Error, Some(why.to_owned()));
        ResultLine::finished(job, &outcome, None, &Prior::default())
    }
}
