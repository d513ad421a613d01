//! A batch as a queue in the PostgreSQL store, for many machines: `--enqueue` puts the jobs and
//! the run flags in, workers (`--worker`) claim jobs under a lease they renew while the job
//! runs, and `batch status` / `batch results` read it back.
//!
//! A worker's jobs are always kept in the store (`--store`), and the queue remembers each job's
//! runs: a job whose worker died is taken by the next worker once its lease expires, which
//! exports those runs back into transcripts and resumes the last one, so no finished round is
//! lost and none is done twice.

use std::ffi::OsString;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::args::{self, Parsed};
use super::display::{self, Display};
use super::job::{self, Placement, Setup};
use super::jobs::{BadLine, Job, Overrides};
use super::lease::{JobStore, Lease, heartbeat};
use super::limits::{Budget, Pool};
use super::restore::{RestoreError, Restored, restore};
use super::results::{Prior, ResultLine};
use super::{BatchError, Control, Finish, Reports};
use crate::config::Config;
use crate::outcome::{Outcome, Status};
use crate::store::StoreError;
use crate::store::pool::Notice;
use crate::store::queue::{Claim, Claimed, Fence, Queue};

/// How long giving a job back may wait for the store.
const RELEASE_WAIT: Duration = Duration::from_secs(5);

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
    // The batch's trace starts here: a span for the enqueueing, whose context every job
    // carries to the worker that runs it.
    let telemetry = crate::otel::for_batch(&parsed.cli()?)?;
    let group = (telemetry.as_ref()).map(|t| {
        let attributes = [
            ("rounds.batch.id", id.clone()),
            ("rounds.batch.jobs", rows.len().to_string()),
        ];
        t.group("batch", &attributes)
    });
    let traceparent = group.as_ref().map(crate::telemetry::Group::traceparent);
    let mut queue = Queue::connect(&url).await?;
    let queued = queue
        .enqueue(&id, &words, &rows, traceparent.as_deref())
        .await;
    if let (Some(group), Some(telemetry)) = (&group, &telemetry) {
        let error = queued.as_ref().err().map(ToString::to_string);
        group.end(&[], error);
        telemetry.flush(crate::telemetry::FLUSH_BOUND).await;
    }
    queued?;
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
/// failed, unavailable (exit 10) when the store stayed away past `--store-timeout` (its jobs
/// are then left to the queue, for the next worker to resume).
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
    let max_attempts = i32::try_from(flags.max_attempts).unwrap_or(i32::MAX);
    if flags.retry_failed {
        requeue_failed(&queue, &batch, max_attempts).await?;
    }
    // Without --out, a new directory nobody can predict (nor plant a link in beforehand).
    let out = match &flags.out {
        Some(dir) => super::out::OutDir::create(dir),
        None => super::out::OutDir::temp("rounds-batch-"),
    };
    let out = out.map_err(|source| BatchError::Out { dir: None, source })?;
    let reports = Reports::open(flags.junit.as_deref(), flags.step_summary.as_deref())?;
    let telemetry = crate::otel::for_batch(&cli)?;
    let mut setup = Setup::new(parsed);
    setup.queue = Some(trusted);
    let worker = Arc::new(Worker {
        setup,
        queue,
        batch,
        url,
        owner: format!("{}-{}", hostname(), new_batch_id()),
        lease: Duration::from_secs_f64(flags.lease),
        max_attempts,
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
        unavailable: AtomicBool::new(false),
        misconfigured: AtomicBool::new(false),
        leased: AtomicUsize::new(0),
        finished: std::sync::Mutex::new(Vec::new()),
        telemetry,
    });
    let signals = super::watch_signals(worker.control.clone());
    let loops = (0..flags.parallel).map(|_| {
        let worker = worker.clone();
        async move { worker.drain().await }
    });
    futures_util::future::join_all(loops).await;
    signals.abort();
    worker.display.clear();
    if let Some(telemetry) = &worker.telemetry {
        telemetry.flush(crate::telemetry::FLUSH_BOUND).await;
    }
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
    worker.say_leased();
    Ok(worker.ended(status))
}

/// `--retry-failed`: the batch's jobs that did not complete go back to the queue, said once.
async fn requeue_failed(queue: &Queue, batch: &str, max_attempts: i32) -> Result<(), BatchError> {
    let n = queue.requeue_failed(batch, max_attempts).await?;
    display::warning(&format!(
        "--retry-failed: {n} job{} that had not completed went back to the queue",
        if n == 1 { "" } else { "s" }
    ));
    Ok(())
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
    // A connection for each job's records, one for the claims and one for the leases.
    let size = usize::from(first.flags.parallel) + 2;
    let patience = Duration::from_secs_f64(first.flags.store_timeout);
    let notice: Notice = Arc::new(|e, patience| {
        display::warning(&format!(
            "{e}; waiting up to {}s for the store (--store-timeout)",
            patience.as_secs()
        ))
    });
    let queue = Queue::for_worker(&url, size, patience, notice).await?;
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
    /// The store stayed away past `--store-timeout`: the worker stopped taking jobs (exit 10).
    unavailable: AtomicBool,
    /// The worker cannot run jobs at all (exit 2).
    misconfigured: AtomicBool,
    /// Jobs claimed and not yet finished, given back or lost to another worker.
    leased: AtomicUsize,
    finished: std::sync::Mutex<Vec<ResultLine>>,
    /// OpenTelemetry, when on: each job's run continues the trace its row names.
    telemetry: Option<crate::telemetry::Telemetry>,
}

impl Worker {
    /// The worker's status, from its jobs' (`status`) and what went wrong beside them (said
    /// already, as it happened).
    fn ended(&self, status: Status) -> Status {
        match status {
            _ if self.misconfigured.load(Ordering::Relaxed) => Status::Usage,
            _ if self.unavailable.load(Ordering::Relaxed) => Status::Unavailable,
            Status::Completed if self.broken.load(Ordering::Relaxed) => Status::Error,
            // The queue holds those jobs' results as final: starting a worker again retries none.
            Status::Unavailable => Status::Incomplete,
            status => status,
        }
    }

    async fn drain(&self) {
        while self.going() {
            // While an endpoint's shared 429 pause is on, no job is claimed: a claimed job
            // would sit out the pause holding its lease. (A worker's jobs share one endpoint
            // unless job lines name others, so any pause holds the claims.) The wait is cut
            // short now and then to see a signal or a broken store.
            if self.pool.paused_until(None).is_some() {
                tokio::select! {
                    () = self.pool.wait_open(None) => {}
                    () = tokio::time::sleep(Duration::from_millis(200)) => {}
                }
                continue;
            }
            let claim = self
                .queue
                .claim(&self.batch, &self.owner, self.lease, self.max_attempts)
                .await;
            match claim {
                Ok(Claim::Job(job)) => {
                    self.leased.fetch_add(1, Ordering::Relaxed);
                    self.run(job).await
                }
                Ok(Claim::Wait(d)) => tokio::time::sleep(d).await,
                Ok(Claim::Drained) => return,
                Err(e) => self.queue_failed(e),
            }
        }
    }

    fn going(&self) -> bool {
        self.control.signal().is_none()
            && !self.broken.load(Ordering::Relaxed)
            && !self.unavailable.load(Ordering::Relaxed)
    }

    /// Stops taking jobs, saying why once: the store gone past `--store-timeout` (exit 10),
    /// or a queue that failed (exit 1). Jobs still leased are left to the queue.
    fn queue_failed(&self, e: StoreError) {
        let flag = match e {
            StoreError::Unavailable { .. } => &self.unavailable,
            _ => &self.broken,
        };
        if !flag.swap(true, Ordering::Relaxed) {
            display::error(BatchError::Queue(e));
        }
    }

    /// The job is no longer this worker's (finished, given back, or taken over).
    fn let_go(&self) {
        self.leased.fetch_sub(1, Ordering::Relaxed);
    }

    /// Says how many jobs this worker leaves leased as it exits: their next worker resumes
    /// them once their leases expire.
    fn say_leased(&self) {
        let n = self.leased.load(Ordering::Relaxed);
        if n > 0 {
            display::warning(&format!(
                "{n} job{s} left leased in the queue: the next worker resumes {them} once {its} \
                 lease{s} expire{v}",
                s = if n == 1 { "" } else { "s" },
                them = if n == 1 { "it" } else { "them" },
                its = if n == 1 { "its" } else { "their" },
                v = if n == 1 { "s" } else { "" },
            ));
        }
    }

    async fn run(&self, claimed: Claimed) {
        let key = self.keys.fetch_add(1, Ordering::Relaxed);
        let fence = Fence {
            batch_id: self.batch.clone(),
            job_id: claimed.job_id.clone(),
            generation: claimed.generation,
        };
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
                return self.finish(&job, line, &fence).await;
            }
        };
        match self.configure(&job, &claimed.runs, &fence).await {
            Configured::Run(run) => {
                let trace = claimed.traceparent.as_deref();
                self.execute(key, &job, *run, &fence, trace).await
            }
            Configured::Finished(line) => self.finish(&job, *line, &fence).await,
            Configured::GivenBack => {}
            Configured::Left(e) => self.queue_failed(e),
        }
    }

    /// The job's run, configured to continue its earlier runs, if any; or the job's result
    /// when it cannot run.
    async fn configure(&self, job: &Job, runs: &[String], fence: &Fence) -> Configured {
        let failed = |why: &dyn std::fmt::Display, prior: &Prior| {
            let outcome = Outcome::new(Status::Error, Some(why.to_string()));
            Configured::Finished(Box::new(ResultLine::finished(job, &outcome, None, prior)))
        };
        let restored = restore(&self.queue.pool(), &self.out, job, runs).await;
        let (resume, prior, runs) = match restored {
            Ok(Restored::Finished(line)) => return Configured::Finished(line),
            Ok(Restored::Resume { path, prior, runs }) => (Some(path), prior, runs),
            Ok(Restored::Fresh) => (None, Prior::default(), Vec::new()),
            // Not the job's failure: it stays leased, for the next worker.
            Err(RestoreError::Export(e @ StoreError::Unavailable { .. })) => {
                return Configured::Left(e);
            }
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
                self.release(fence).await;
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

    /// Runs the configured job under its lease, and marks it done unless the lease was lost,
    /// the store stayed away (then it is left to the queue) or a signal stopped it (then it
    /// goes back to the queue); either way its next worker resumes it.
    async fn execute(
        &self,
        key: usize,
        job: &Job,
        run: JobRun,
        fence: &Fence,
        traceparent: Option<&str>,
    ) {
        let JobRun {
            mut config,
            prior,
            mut runs,
        } = run;
        let trace =
            (self.telemetry.as_ref()).map(|t| Arc::new(t.run_under(traceparent, &config.run_id)));
        if let Some(run) = &trace {
            crate::otel::hand_to_tools(&mut config.tool_settings, run);
        }
        let run_id = config.run_id.clone();
        runs.push(run_id.clone());
        // The run is recorded before it starts: a worker that dies leaves a pointer to it.
        match self.queue.set_runs(fence, &runs).await {
            Ok(true) => {}
            Ok(false) => return self.lost(&job.id),
            Err(e) => return self.queue_failed(e),
        }
        let Some(cancel) = self.control.start(key) else {
            return self.release(fence).await;
        };
        self.display.started(key, &job.id);
        let lease = Lease::default();
        let heartbeat = heartbeat(
            self.queue.clone(),
            fence,
            self.lease,
            cancel.clone(),
            lease.clone(),
        );
        let store = Arc::new(JobStore {
            pool: self.queue.pool(),
            fence: fence.clone(),
            gave_up: lease.gave_up.clone(),
        });
        let outcome = job::run_with(
            config,
            key,
            cancel,
            &self.pool,
            &self.display,
            Some(store),
            trace,
        )
        .await;
        heartbeat.abort();
        self.control.done(key);
        let line = ResultLine::finished(job, &outcome, Some(run_id), &prior);
        self.display.finished(key, line.completed());
        if lease.lost.load(Ordering::Relaxed) {
            // Said when it was found.
            return self.let_go();
        }
        if lease.gave_up.load(Ordering::Relaxed) {
            display::warning(&format!(
                "job {:?} is left to the queue: the store is unavailable",
                job.id
            ));
            self.unavailable.store(true, Ordering::Relaxed);
            return;
        }
        if matches!(outcome.status, Status::Interrupted(_)) {
            // Not the job's failure: the next worker resumes it.
            return self.release(fence).await;
        }
        self.finish(job, line, fence).await;
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
    async fn finish(&self, job: &Job, line: ResultLine, fence: &Fence) {
        let value = serde_json::to_value(&line).unwrap_or(Value::Null);
        let code = line.exit_code.map(i32::from);
        match self.queue.finish(fence, &value, code).await {
            Ok(true) => {
                self.let_go();
                if let Ok(mut all) = self.finished.lock() {
                    all.push(line);
                }
            }
            Ok(false) => self.lost(&job.id),
            Err(e) => self.queue_failed(e),
        }
    }

    /// Gives the job back to the queue (not counted as an attempt). Not waited for long: a
    /// worker stopped by a signal while the store is away leaves the job leased (and says so).
    async fn release(&self, fence: &Fence) {
        let released = tokio::time::timeout(RELEASE_WAIT, self.queue.release(fence)).await;
        if matches!(released, Ok(Ok(_))) {
            self.let_go();
        }
    }

    /// Another worker holds the job now: its result there counts.
    fn lost(&self, job_id: &str) {
        self.let_go();
        display::warning(&format!(
            "this worker lost its lease on job {job_id:?}: another worker took it over, and its \
             result there counts"
        ));
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
    /// The store is unavailable: it stays leased, for its next worker to resume.
    Left(StoreError),
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
