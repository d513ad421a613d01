//! A batch as a queue in the PostgreSQL store, for many machines: `--enqueue` puts the jobs and
//! the run flags in, workers (`--worker`) claim jobs under a lease they renew while the job
//! runs, and `batch status` / `batch results` read it back.
//!
//! A worker's jobs are always kept in the store (`--store`), and the queue remembers each job's
//! runs: a job whose worker died is taken by the next worker once its lease expires, which
//! exports those runs back into transcripts and resumes the last one, so no finished round is
//! lost and none is done twice.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::args::{self, Parsed};
use super::display::{self, Display};
use super::job::{self, Placement, Setup};
use super::jobs::{BadLine, Job, Overrides};
use super::limits::{Budget, Pool};
use super::results::{Prior, ResultLine};
use super::{BatchError, Control, Finish, Reports};
use crate::config::Config;
use crate::outcome::{Outcome, Status};
use crate::store::StoreError;
use crate::store::queue::{Claim, Claimed, Queue};
use crate::transcript::{Line, Record, Transcript};

/// A job as the queue keeps it (its id and line have columns of their own).
#[derive(Serialize, Deserialize)]
struct Spec {
    prompt: String,
    #[serde(default)]
    overrides: Overrides,
}

/// `rounds batch JOBS --store URL --enqueue`: prints the batch id.
pub(crate) async fn enqueue(
    parsed: &Parsed,
    jobs: &[Job],
    bad: &[BadLine],
) -> Result<Status, BatchError> {
    let url = store_url(parsed).ok_or(BatchError::NoStore)?;
    let words = parsed.run_words()?;
    let untrusted = args::untrusted_in_queue(&words);
    if !untrusted.is_empty() {
        display::warning(&format!(
            "workers apply {} only when started with --trust-queue",
            untrusted.join(", ")
        ));
    }
    let mut rows = Vec::with_capacity(jobs.len());
    for j in jobs {
        let spec = Spec {
            prompt: j.prompt.clone(),
            overrides: j.overrides.clone(),
        };
        let spec = serde_json::to_value(&spec).map_err(BatchError::Encode)?;
        rows.push((
            j.id.clone(),
            i32::try_from(j.line).unwrap_or(i32::MAX),
            spec,
        ));
    }
    let id = parsed.flags.batch.clone().unwrap_or_else(new_batch_id);
    let mut queue = Queue::connect(&url).await?;
    queue.enqueue(&id, &words, &rows).await?;
    if !bad.is_empty() {
        display::warning(&format!(
            "{} bad line{} left out of batch {id}",
            bad.len(),
            if bad.len() == 1 { "" } else { "s" }
        ));
    }
    display::stdout(&format!("{id}\n"));
    // The batch is queued without its bad lines: a job that will never run is not a success.
    Ok(match bad.is_empty() {
        true => Status::Completed,
        false => Status::Incomplete,
    })
}

fn store_url(parsed: &Parsed) -> Option<String> {
    parsed.cli().ok()?.store.filter(|s| !s.is_empty())
}

fn new_batch_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    let stamp = jiff::Timestamp::now().strftime("%Y%m%dT%H%M%SZ");
    format!("b{stamp}-{:08x}", h.finish() as u32)
}

/// `rounds batch --store URL --batch ID --worker`: runs the batch's jobs until none is left.
/// Completed when every job it ran completed, incomplete when one did not, interrupted on a
/// signal; a usage error when this worker cannot run jobs at all, an error when the queue
/// failed.
pub(crate) async fn work(words: Vec<OsString>, started: Instant) -> Result<Status, BatchError> {
    let Joined {
        parsed,
        trusted,
        url,
        batch,
        queue,
    } = join(words).await?;
    let cli = parsed.cli()?;
    let flags = parsed.flags.clone();
    // Without --out, a new directory nobody can predict (nor plant a link in beforehand).
    let out = match &flags.out {
        Some(dir) => super::out::OutDir::create(dir),
        None => super::out::OutDir::temp("rounds-batch-"),
    };
    let out = out.map_err(|source| BatchError::Out { dir: None, source })?;
    let reports = Reports::open(flags.junit.as_deref(), flags.step_summary.as_deref())?;
    let mut setup = Setup::new(parsed);
    setup.queue = Some(trusted);
    let worker = Arc::new(Worker {
        setup,
        queue,
        batch,
        url,
        owner: format!("{}-{}", hostname(), new_batch_id()),
        lease: Duration::from_secs_f64(flags.lease),
        max_attempts: i32::try_from(flags.max_attempts).unwrap_or(i32::MAX),
        out,
        pool: Arc::new(Pool::new(
            flags.rpm,
            flags.tpm,
            Budget::new(cli.budget_tokens, cli.budget_usd),
        )),
        display: Arc::new(Display::new(0, cli.quiet)),
        control: Arc::new(Control::default()),
        keys: AtomicUsize::new(0),
        broken: AtomicBool::new(false),
        misconfigured: AtomicBool::new(false),
        finished: std::sync::Mutex::new(Vec::new()),
    });
    let signals = super::watch_signals(worker.control.clone());
    let loops = (0..flags.parallel).map(|_| {
        let worker = worker.clone();
        async move { worker.drain().await }
    });
    futures_util::future::join_all(loops).await;
    signals.abort();
    worker.display.clear();
    let results = worker
        .finished
        .lock()
        .map(|mut r| std::mem::take(&mut *r))
        .unwrap_or_default();
    let finish = Finish {
        results,
        bad: &[],
        results_path: None,
        backoffs: worker.pool.backoffs(),
        seconds: started.elapsed().as_secs_f64(),
        quiet: cli.quiet,
        reports,
    };
    let status = finish.report(worker.control.signal());
    // What went wrong is said already, as it happened.
    Ok(match status {
        _ if worker.misconfigured.load(Ordering::Relaxed) => Status::Usage,
        Status::Completed if worker.broken.load(Ordering::Relaxed) => Status::Error,
        // The queue holds those jobs' results as final: starting a worker again retries none.
        Status::Unavailable => Status::Incomplete,
        status => status,
    })
}

/// The queued batch a worker joins.
struct Joined {
    /// The batch's queued run flags beneath the worker's own (which win), as `trusted` allows.
    parsed: Parsed,
    trusted: bool,
    url: String,
    batch: String,
    queue: Arc<Queue>,
}

async fn join(words: Vec<OsString>) -> Result<Joined, BatchError> {
    let first = args::parse(words.clone())?;
    let (Some(url), Some(batch)) = (store_url(&first), first.flags.batch.clone()) else {
        return Err(BatchError::NoQueue);
    };
    let queue = Queue::connect(&url).await?;
    let queued_flags = queue.run_flags(&batch).await?;
    let queued_flags = queued_flags.ok_or_else(|| BatchError::UnknownBatch(batch.clone()))?;
    // The batch's run flags are a queue row: `trust` decides what of them applies, beneath the
    // worker's own (which win).
    let trusted = first.flags.trust_queue;
    let (from_queue, refused) =
        args::queued(&queued_flags, &first.matches, trusted).map_err(BatchError::QueuedFlags)?;
    for r in &refused {
        display::warning(&crate::terminal::line(&r.to_string()));
    }
    let parsed = args::parse(from_queue.into_iter().chain(words));
    Ok(Joined {
        parsed: parsed.map_err(BatchError::WorkerFlags)?,
        trusted,
        url,
        batch,
        queue: Arc::new(queue),
    })
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "host".to_owned())
}

/// One worker process: `--jobs N` loops that each claim and run jobs.
struct Worker {
    setup: Setup,
    queue: Arc<Queue>,
    batch: String,
    url: String,
    /// Who holds a lease: unique per worker process.
    owner: String,
    lease: Duration,
    max_attempts: i32,
    out: super::out::OutDir,
    pool: Arc<Pool>,
    display: Arc<Display>,
    control: Arc<Control>,
    keys: AtomicUsize,
    /// The queue failed: the worker stopped taking jobs.
    broken: AtomicBool,
    /// The worker cannot run jobs at all (exit 2).
    misconfigured: AtomicBool,
    finished: std::sync::Mutex<Vec<ResultLine>>,
}

impl Worker {
    async fn drain(&self) {
        while self.control.signal().is_none() && !self.broken.load(Ordering::Relaxed) {
            let claim = self
                .queue
                .claim(&self.batch, &self.owner, self.lease, self.max_attempts)
                .await;
            match claim {
                Ok(Claim::Job(job)) => self.run(job).await,
                Ok(Claim::Wait(d)) => tokio::time::sleep(d).await,
                Ok(Claim::Drained) => return,
                Err(e) => {
                    display::error(BatchError::Queue(e));
                    self.broken.store(true, Ordering::Relaxed);
                }
            }
        }
    }

    async fn run(&self, claimed: Claimed) {
        let key = self.keys.fetch_add(1, Ordering::Relaxed);
        let job = match queued_job(&claimed) {
            Ok(job) => job,
            Err(why) => {
                let job = Job {
                    id: claimed.job_id.clone(),
                    line: 0,
                    prompt: String::new(),
                    overrides: Overrides::default(),
                };
                let line = ResultLine::not_started(&job, &why.to_string());
                return self.finish(&job, line).await;
            }
        };
        match self.configure(&job, &claimed.runs).await {
            Configured::Run(run) => self.execute(key, &job, *run).await,
            Configured::Finished(line) => self.finish(&job, *line).await,
            Configured::GivenBack => {}
        }
    }

    /// The job's run, configured to continue its earlier runs, if any; or the job's result
    /// when it cannot run.
    async fn configure(&self, job: &Job, runs: &[String]) -> Configured {
        let failed = |why: &dyn std::fmt::Display, prior: &Prior| {
            let outcome = Outcome::new(Status::Error, Some(why.to_string()));
            Configured::Finished(Box::new(ResultLine::finished(job, &outcome, None, prior)))
        };
        let (resume, prior, runs) = match self.restore(job, runs).await {
            Ok(Restored::Finished(line)) => return Configured::Finished(line),
            Ok(Restored::Resume { path, prior, runs }) => (Some(path), prior, runs),
            Ok(Restored::Fresh) => (None, Prior::default(), Vec::new()),
            Err(why) => return failed(&why, &Prior::default()),
        };
        let transcript = match self.out.transcript_target(&job.id) {
            Ok(t) => t,
            Err(e) => return failed(&e, &prior),
        };
        if self.out.transcript(&job.id).symlink_metadata().is_ok() {
            let _ = self.out.set_aside(&job.id);
        }
        let placement = Placement {
            transcript: transcript.clone(),
            resume: resume.as_deref(),
            store: Some(&self.url),
        };
        match self.setup.config(job, &placement) {
            Ok(config) => Configured::Run(Box::new(JobRun {
                config,
                prior,
                runs,
            })),
            Err(source) if !self.can_run(job, &transcript) => {
                // Not even without its overrides: the worker's flags or environment are wrong
                // (a missing key), not the job. It goes back for a worker that can run it.
                let _ = self.queue.release(&self.batch, &job.id, &self.owner).await;
                let id = job.id.clone();
                display::error(BatchError::Job { id, source });
                self.misconfigured.store(true, Ordering::Relaxed);
                self.broken.store(true, Ordering::Relaxed);
                Configured::GivenBack
            }
            Err(e) => {
                let outcome = Outcome::usage_error(e.to_string());
                let line = ResultLine::finished(job, &outcome, None, &prior);
                Configured::Finished(Box::new(line))
            }
        }
    }

    /// Runs the configured job under its lease, and marks it done unless the lease was lost
    /// or a signal stopped it (then it goes back to the queue, to be resumed).
    async fn execute(&self, key: usize, job: &Job, run: JobRun) {
        let JobRun {
            config,
            prior,
            mut runs,
        } = run;
        let run_id = config.run_id.clone();
        runs.push(run_id.clone());
        // The run is recorded before it starts: a worker that dies leaves a pointer to it.
        match self
            .queue
            .set_runs(&self.batch, &job.id, &self.owner, &runs)
            .await
        {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                display::error(BatchError::Queue(e));
                self.broken.store(true, Ordering::Relaxed);
                let _ = self.queue.release(&self.batch, &job.id, &self.owner).await;
                return;
            }
        }
        let Some(cancel) = self.control.start(key) else {
            let _ = self.queue.release(&self.batch, &job.id, &self.owner).await;
            return;
        };
        self.display.started(key, &job.id);
        let lost = Arc::new(AtomicBool::new(false));
        let heartbeat = self.heartbeat(&job.id, cancel.clone(), lost.clone());
        let outcome = job::run(config, key, cancel, &self.pool, &self.display).await;
        heartbeat.abort();
        self.control.done(key);
        let line = ResultLine::finished(job, &outcome, Some(run_id), &prior);
        self.display.finished(key, line.completed());
        if lost.load(Ordering::Relaxed) {
            return;
        }
        if matches!(outcome.status, Status::Interrupted(_)) {
            // Not the job's failure: the next worker resumes it.
            let _ = self.queue.release(&self.batch, &job.id, &self.owner).await;
            return;
        }
        self.finish(job, line).await;
    }

    /// Whether this worker's flags and environment can configure `job` without its
    /// per-job overrides.
    fn can_run(&self, job: &Job, transcript: &crate::files::Target) -> bool {
        let bare = Job {
            overrides: Overrides::default(),
            ..job.clone()
        };
        let placement = Placement {
            transcript: transcript.clone(),
            resume: None,
            store: None,
        };
        self.setup.config(&bare, &placement).is_ok()
    }

    /// Marks the job done, if this worker still holds it.
    async fn finish(&self, job: &Job, line: ResultLine) {
        let value = serde_json::to_value(&line).unwrap_or(Value::Null);
        let code = line.exit_code.map(i32::from);
        match self
            .queue
            .finish(&self.batch, &job.id, &self.owner, &value, code)
            .await
        {
            Ok(true) => {
                if let Ok(mut all) = self.finished.lock() {
                    all.push(line);
                }
            }
            Ok(false) => display::warning(&format!(
                "job {:?} was taken over by another worker; its result there counts",
                job.id
            )),
            Err(e) => {
                display::error(BatchError::Queue(e));
                self.broken.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Renews the lease every third of it while the job runs. A lease that cannot be renewed
    /// before it expires is lost: another worker may take the job, so this one stops it.
    fn heartbeat(
        &self,
        job_id: &str,
        cancel: crate::agent::Cancel,
        lost: Arc<AtomicBool>,
    ) -> tokio::task::JoinHandle<()> {
        let queue = self.queue.clone();
        let (batch, job_id, owner, lease) = (
            self.batch.clone(),
            job_id.to_owned(),
            self.owner.clone(),
            self.lease,
        );
        tokio::spawn(async move {
            let mut renewed = Instant::now();
            loop {
                tokio::time::sleep(lease / 3).await;
                match queue.renew(&batch, &job_id, &owner, lease).await {
                    Ok(true) => renewed = Instant::now(),
                    Ok(false) => break,
                    Err(e) if renewed.elapsed() >= lease => {
                        tracing::error!("job {job_id:?}: cannot renew its lease: {e}");
                        break;
                    }
                    Err(_) => {}
                }
            }
            lost.store(true, Ordering::Relaxed);
            cancel.cancel(
                Status::Error,
                format!("this worker lost its lease on job {job_id:?}; another worker may run it"),
            );
        })
    }

    /// The job's earlier runs, exported from the store into `attempts/` as a chain of
    /// transcripts: what the job does now.
    async fn restore(&self, job: &Job, runs: &[String]) -> Result<Restored, RestoreError> {
        let mut chain: Vec<Transcript> = Vec::new();
        let mut kept = Vec::new();
        let mut previous: Option<PathBuf> = None;
        for run_id in runs {
            let jsonl = match crate::store::export(&self.url, run_id).await {
                Ok(j) => j,
                // The worker died before the run's start line was stored: nothing to keep.
                Err(crate::store::StoreError::UnknownRun { .. }) => continue,
                Err(e) => return Err(RestoreError::Export(e)),
            };
            // The run id comes from the queue: it names a file only as one component.
            let target = self.out.attempt_target(&job.id, run_id).map_err(|source| {
                RestoreError::Attempt {
                    job: job.id.clone(),
                    run: run_id.clone(),
                    source,
                }
            })?;
            let path = target.path();
            let transcript = relink(&jsonl, previous.as_deref(), &target)?;
            chain.push(transcript);
            kept.push(run_id.clone());
            previous = Some(path);
        }
        let Some(path) = previous else {
            return Ok(Restored::Fresh);
        };
        let last = chain.last().and_then(|t| t.end.as_ref()).map(|e| e.status);
        Ok(match last {
            // It ended, but its worker died before saying so: its result stands.
            Some(status) if !matches!(status, Status::Interrupted(_)) => {
                Restored::Finished(Box::new(ResultLine::recorded(job, &path, &chain)))
            }
            _ => {
                let prior = Prior::of(&chain);
                if prior.rounds == 0 {
                    Restored::Fresh
                } else {
                    Restored::Resume {
                        path,
                        prior,
                        runs: kept,
                    }
                }
            }
        })
    }
}

/// A claimed job's run, configured.
struct JobRun {
    config: Config,
    /// What its earlier runs did.
    prior: Prior,
    /// Its runs so far, the queue's pointers to them.
    runs: Vec<String>,
}

/// What a claimed job comes to once configured.
enum Configured {
    Run(Box<JobRun>),
    /// It ended without running: its result.
    Finished(Box<ResultLine>),
    /// It went back to the queue for another worker.
    GivenBack,
}

/// The claimed job as the queue keeps it.
fn queued_job(claimed: &Claimed) -> Result<Job, QueuedJobError> {
    let spec: Spec = serde_json::from_value(claimed.spec.clone()).map_err(QueuedJobError)?;
    Ok(Job {
        id: claimed.job_id.clone(),
        line: usize::try_from(claimed.line).unwrap_or(0),
        prompt: spec.prompt,
        overrides: spec.overrides,
    })
}

/// A queue row that is no job.
#[derive(Debug, thiserror::Error)]
#[error("the queued job cannot be read: {0}")]
struct QueuedJobError(serde_json::Error);

/// Why a job's earlier runs could not be brought back from the store.
#[derive(Debug, thiserror::Error)]
enum RestoreError {
    #[error("cannot read the job's earlier run: {0}")]
    Export(StoreError),
    /// The run id (from the queue) cannot name a file in `attempts/`.
    #[error("job {job:?}: run {run:?}: {source}")]
    Attempt {
        job: String,
        run: String,
        source: std::io::Error,
    },
    #[error("an exported run: {0}")]
    Exported(serde_json::Error),
    #[error("{0}")]
    Encode(serde_json::Error),
    #[error("{0}")]
    Write(std::io::Error),
    #[error(transparent)]
    Read(#[from] crate::transcript::ReadError),
}

/// What a claimed job's earlier runs leave it to do.
enum Restored {
    Fresh,
    Resume {
        path: PathBuf,
        prior: Prior,
        runs: Vec<String>,
    },
    Finished(Box<ResultLine>),
}

/// Writes an exported run to `path` with `resumed_from` pointing at the local copy of the run
/// before it (the exported one names a file on the machine that ran it), and reads it back.
fn relink(
    jsonl: &str,
    previous: Option<&Path>,
    target: &crate::files::Target,
) -> Result<Transcript, RestoreError> {
    let path = target.path();
    let mut lines = jsonl.lines();
    let first = lines.next().unwrap_or_default();
    let mut record: Record = serde_json::from_str(first).map_err(RestoreError::Exported)?;
    if let Line::Start(start) = &mut record.line {
        start.resumed_from = previous.map(|p| p.display().to_string());
    }
    let mut text = serde_json::to_string(&record).map_err(RestoreError::Encode)?;
    text.push('\n');
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    target.write(text.as_bytes()).map_err(RestoreError::Write)?;
    Ok(crate::transcript::read(&path)?)
}
