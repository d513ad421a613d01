//! A batch as a work queue in the store (`batches` and `batch_jobs`, migrations 3 and 6):
//! queued by `rounds batch --enqueue`, drained by any number of `--worker`s on any machines.
//!
//! A worker claims a job whose lease expired (its worker died), or else the first queued one,
//! with `FOR UPDATE SKIP LOCKED`, so two workers never take the same job. Each claim adds one to
//! the job's `generation`, the lease's fencing token: the worker renews its lease, records the
//! job's runs and marks it done only under the generation it claimed, and its runs' rows are
//! written only while the job is still running under it (`Fence::hold`). A worker that lost its
//! lease, however late it wakes up, writes nothing, and a job is finished exactly once.

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::Transaction;
use serde_json::Value;

use super::StoreError;
use super::pool::{Notice, StorePool};
use super::postgres::database_error;

/// A store's queue, over a pool of connections.
pub struct Queue {
    pool: Arc<StorePool>,
}

/// A job a worker now holds.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub job_id: String,
    pub line: i32,
    pub spec: Value,
    /// Its earlier runs, oldest first.
    pub runs: Vec<String>,
    /// The claim's fencing token.
    pub generation: i64,
    /// The trace the enqueuer put it in (a W3C traceparent), if any: untrusted, as the row is.
    pub traceparent: Option<String>,
}

/// The lease a worker holds on a job: whatever it writes for the job is refused without it.
#[derive(Debug, Clone)]
pub struct Fence {
    pub batch_id: String,
    pub job_id: String,
    pub generation: i64,
}

impl Fence {
    /// Within a write's transaction: fails with `Fenced` when the job is no longer running
    /// under this generation, and otherwise keeps the job's row from being claimed (or
    /// finished) by anyone else until the transaction ends.
    pub(super) async fn hold(
        &self,
        tx: &Transaction<'_>,
        database: &str,
    ) -> Result<(), StoreError> {
        let fail = database_error(database);
        let held = tx
            .prepare_cached(
                "SELECT 1 FROM batch_jobs WHERE batch_id = $1 AND job_id = $2 \
                 AND generation = $3 AND state = 'running' FOR SHARE",
            )
            .await
            .map_err(&fail)?;
        let held = tx
            .query_opt(&held, &[&self.batch_id, &self.job_id, &self.generation])
            .await
            .map_err(&fail)?;
        match held {
            Some(_) => Ok(()),
            None => Err(StoreError::Fenced {
                job_id: self.job_id.clone(),
            }),
        }
    }
}

/// What a worker finds when it asks for a job.
#[derive(Debug)]
pub enum Claim {
    Job(Claimed),
    /// None is free, but some are running elsewhere (and may come back when a lease expires):
    /// ask again after this long.
    Wait(Duration),
    /// Every job is done, or given up.
    Drained,
}

/// A job's row, for `batch status` and `batch results`.
#[derive(Debug, Clone)]
pub struct JobRow {
    pub job_id: String,
    pub line: i32,
    pub state: String,
    pub lease_owner: Option<String>,
    /// Seconds since it was claimed, while running.
    pub running_secs: Option<f64>,
    /// Whether its lease has expired (its worker is gone or stuck).
    pub expired: bool,
    pub attempts: i32,
    pub result: Option<Value>,
}

/// The claim of a job whose lease expired (few: only running jobs are looked at), then of the
/// first queued one (served in line order by `batch_jobs_queued`). Expired ones first: their
/// workers died mid-job, and they have waited longest.
const CLAIM_EXPIRED: &str = "UPDATE batch_jobs j SET lease_owner = $2, \
     lease_expires_at = now() + make_interval(secs => $3), attempts = j.attempts + 1, \
     claimed_at = now(), generation = j.generation + 1 \
     WHERE (j.batch_id, j.job_id) IN ( \
       SELECT batch_id, job_id FROM batch_jobs \
       WHERE batch_id = $1 AND state = 'running' AND lease_expires_at < now() AND attempts < $4 \
       ORDER BY line LIMIT 1 FOR UPDATE SKIP LOCKED) \
     RETURNING j.job_id, j.line, j.spec, j.runs, j.generation, j.traceparent";
const CLAIM_QUEUED: &str = "UPDATE batch_jobs j SET state = 'running', lease_owner = $2, \
     lease_expires_at = now() + make_interval(secs => $3), attempts = j.attempts + 1, \
     claimed_at = now(), generation = j.generation + 1 \
     WHERE (j.batch_id, j.job_id) IN ( \
       SELECT batch_id, job_id FROM batch_jobs \
       WHERE batch_id = $1 AND state = 'queued' AND attempts < $4 \
       ORDER BY line LIMIT 1 FOR UPDATE SKIP LOCKED) \
     RETURNING j.job_id, j.line, j.spec, j.runs, j.generation, j.traceparent";

impl Queue {
    /// Connects and brings the schema up to date, for a command that asks once (`--enqueue`,
    /// `batch status`): an unreachable store is its error, not waited for.
    pub async fn connect(url: &str) -> Result<Queue, StoreError> {
        let pool = StorePool::open(url, 1, Duration::ZERO, None).await?;
        Ok(Queue {
            pool: Arc::new(pool),
        })
    }

    /// A worker's queue: `size` connections shared by its claims, its leases and its jobs'
    /// records, each operation waiting up to `patience` for an unavailable store (`notice`
    /// says when it starts waiting).
    pub async fn for_worker(
        url: &str,
        size: usize,
        patience: Duration,
        notice: Notice,
    ) -> Result<Queue, StoreError> {
        let pool = StorePool::open(url, size, patience, Some(notice)).await?;
        Ok(Queue {
            pool: Arc::new(pool),
        })
    }

    /// The pool, for the jobs' records.
    pub fn pool(&self) -> Arc<StorePool> {
        self.pool.clone()
    }

    /// Queues a batch: its run flags and its jobs as (id, line, spec), in the trace
    /// `traceparent` names, if any. Fails if the id is taken.
    pub async fn enqueue(
        &mut self,
        batch_id: &str,
        run_flags: &[String],
        jobs: &[(String, i32, Value)],
        traceparent: Option<&str>,
    ) -> Result<(), StoreError> {
        let mut client = self.pool.get().await?;
        let fail = database_error(&self.pool.database);
        let flags = serde_json::to_value(run_flags).map_err(|source| StoreError::Encode {
            what: "the run flags",
            source,
        })?;
        let count = i32::try_from(jobs.len()).map_err(|_| StoreError::TooManyJobs(jobs.len()))?;
        let ids: Vec<&str> = jobs.iter().map(|j| j.0.as_str()).collect();
        let lines: Vec<i32> = jobs.iter().map(|j| j.1).collect();
        let specs: Vec<&Value> = jobs.iter().map(|j| &j.2).collect();
        let tx = client.transaction().await.map_err(&fail)?;
        let inserted = tx
            .execute(
                "INSERT INTO batches (batch_id, run_flags, jobs) VALUES ($1, $2, $3) \
                 ON CONFLICT (batch_id) DO NOTHING",
                &[&batch_id, &flags, &count],
            )
            .await
            .map_err(&fail)?;
        if inserted == 0 {
            return Err(StoreError::BatchTaken {
                batch_id: batch_id.to_owned(),
                database: self.pool.database.clone(),
            });
        }
        tx.execute(
            "INSERT INTO batch_jobs (batch_id, job_id, line, spec, traceparent) \
             SELECT $1, j.id, j.line, j.spec, $5 \
             FROM unnest($2::text[], $3::int[], $4::jsonb[]) AS j(id, line, spec)",
            &[&batch_id, &ids, &lines, &specs, &traceparent],
        )
        .await
        .map_err(&fail)?;
        tx.commit().await.map_err(&fail)
    }

    /// The run flags a batch was queued with; `None` when there is no such batch.
    pub async fn run_flags(&self, batch_id: &str) -> Result<Option<Vec<String>>, StoreError> {
        let pool = &self.pool;
        let row = pool
            .retry(|| async move {
                let client = pool.get().await?;
                client
                    .query_opt(
                        "SELECT run_flags FROM batches WHERE batch_id = $1",
                        &[&batch_id],
                    )
                    .await
                    .map_err(database_error(&pool.database))
            })
            .await?;
        let Some(row) = row else { return Ok(None) };
        let flags: Value = row.try_get(0).map_err(database_error(&pool.database))?;
        serde_json::from_value(flags)
            .map(Some)
            .map_err(|source| StoreError::BatchFlags {
                batch_id: batch_id.to_owned(),
                source,
            })
    }

    /// Takes the next job for `owner`, under a lease of `lease`: one whose lease expired and
    /// that fewer than `max_attempts` workers took before, or else a queued one.
    pub async fn claim(
        &self,
        batch_id: &str,
        owner: &str,
        lease: Duration,
        max_attempts: i32,
    ) -> Result<Claim, StoreError> {
        let pool = &self.pool;
        pool.retry(|| async move {
            let client = pool.get().await?;
            let fail = database_error(&pool.database);
            let secs = lease.as_secs_f64();
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
                [&batch_id, &owner, &secs, &max_attempts];
            let expired = client.prepare_cached(CLAIM_EXPIRED).await.map_err(&fail)?;
            let mut row = client.query_opt(&expired, &params).await.map_err(&fail)?;
            if row.is_none() {
                row = client
                    .query_opt(
                        &client.prepare_cached(CLAIM_QUEUED).await.map_err(&fail)?,
                        &params,
                    )
                    .await
                    .map_err(&fail)?;
            }
            if let Some(row) = row {
                return Ok(Claim::Job(Claimed {
                    job_id: row.try_get(0).map_err(&fail)?,
                    line: row.try_get(1).map_err(&fail)?,
                    spec: row.try_get(2).map_err(&fail)?,
                    runs: row.try_get(3).map_err(&fail)?,
                    generation: row.try_get(4).map_err(&fail)?,
                    traceparent: row.try_get(5).map_err(&fail)?,
                }));
            }
            // Nothing free: wait for the soonest lease to expire (or a released job), unless
            // nothing is left at all.
            let row = client
                .query_one(
                    "SELECT EXTRACT(EPOCH FROM min(lease_expires_at) - now())::float8, \
                     count(*) FILTER (WHERE state = 'queued' AND attempts < $2) \
                     FROM batch_jobs WHERE batch_id = $1 AND (state = 'queued' \
                       OR (state = 'running' AND (lease_expires_at >= now() OR attempts < $2)))",
                    &[&batch_id, &max_attempts],
                )
                .await
                .map_err(&fail)?;
            let soonest: Option<f64> = row.try_get(0).map_err(&fail)?;
            let queued: i64 = row.try_get(1).map_err(&fail)?;
            Ok(match (soonest, queued) {
                (None, 0) => Claim::Drained,
                (Some(secs), _) => Claim::Wait(Duration::from_secs_f64(secs.clamp(0.05, 1.0))),
                (None, _) => Claim::Wait(Duration::from_millis(50)),
            })
        })
        .await
    }

    /// Runs `sql` on the job's row under `fence` (`$1`-`$3` are the fence, `extra` follow);
    /// whether the fence still held (one row changed).
    async fn fenced(
        &self,
        fence: &Fence,
        sql: &str,
        extra: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<bool, StoreError> {
        let pool = &self.pool;
        let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
            vec![&fence.batch_id, &fence.job_id, &fence.generation];
        params.extend_from_slice(extra);
        let params = &params;
        pool.retry(|| async move {
            let client = pool.get().await?;
            let fail = database_error(&pool.database);
            let statement = client.prepare_cached(sql).await.map_err(&fail)?;
            let n = client.execute(&statement, params).await.map_err(&fail)?;
            Ok(n == 1)
        })
        .await
    }

    /// Records the job's runs (the one about to start last) while the fence holds.
    pub async fn set_runs(&self, fence: &Fence, runs: &[String]) -> Result<bool, StoreError> {
        self.fenced(
            fence,
            "UPDATE batch_jobs SET runs = $4 \
             WHERE batch_id = $1 AND job_id = $2 AND generation = $3 AND state = 'running'",
            &[&runs],
        )
        .await
    }

    /// Renews the lease; `false` when it is no longer this worker's.
    pub async fn renew(&self, fence: &Fence, lease: Duration) -> Result<bool, StoreError> {
        self.fenced(
            fence,
            "UPDATE batch_jobs SET lease_expires_at = now() + make_interval(secs => $4) \
             WHERE batch_id = $1 AND job_id = $2 AND generation = $3 AND state = 'running'",
            &[&lease.as_secs_f64()],
        )
        .await
    }

    /// Marks the job done with its result, if the fence holds; `false` when it does not
    /// (another worker took it over, and that one's result counts).
    pub async fn finish(
        &self,
        fence: &Fence,
        result: &Value,
        exit_code: Option<i32>,
    ) -> Result<bool, StoreError> {
        self.fenced(
            fence,
            "UPDATE batch_jobs SET state = 'done', result = $4, exit_code = $5, \
             finished_at = now(), lease_owner = NULL, lease_expires_at = NULL \
             WHERE batch_id = $1 AND job_id = $2 AND generation = $3 AND state = 'running'",
            &[result, &exit_code],
        )
        .await
    }

    /// `--retry-failed` on a worker: every job of the batch that ended without completing, or
    /// was given up after `max_attempts`, goes back to the queue with its attempts cleared. A
    /// job that ended `unavailable` or `interrupted` keeps its runs and resumes the last; any
    /// other starts over (as a local batch's `--retry-failed` does). A job another worker is
    /// running is left alone; one taken before is fenced off by the new generation. Returns how
    /// many went back.
    pub async fn requeue_failed(
        &self,
        batch_id: &str,
        max_attempts: i32,
    ) -> Result<u64, StoreError> {
        let pool = &self.pool;
        pool.retry(|| async move {
            let client = pool.get().await?;
            client
                .execute(
                    "UPDATE batch_jobs SET state = 'queued', attempts = 0, result = NULL,                        exit_code = NULL, finished_at = NULL, lease_owner = NULL,                        lease_expires_at = NULL, generation = generation + 1,                        runs = CASE WHEN result->>'status' IN ('unavailable', 'interrupted')                          THEN runs ELSE '{}' END                      WHERE batch_id = $1 AND (                        (state = 'done' AND coalesce(exit_code, 1) <> 0)                        OR (state = 'queued' AND attempts >= $2)                        OR (state = 'running' AND attempts >= $2 AND lease_expires_at < now()))",
                    &[&batch_id, &max_attempts],
                )
                .await
                .map_err(database_error(&pool.database))
        })
        .await
    }

    /// Puts the job back in the queue (its worker was interrupted); the take does not count as
    /// an attempt.
    pub async fn release(&self, fence: &Fence) -> Result<bool, StoreError> {
        self.fenced(
            fence,
            "UPDATE batch_jobs SET state = 'queued', lease_owner = NULL, \
             lease_expires_at = NULL, attempts = greatest(attempts - 1, 0) \
             WHERE batch_id = $1 AND job_id = $2 AND generation = $3 AND state = 'running'",
            &[],
        )
        .await
    }

    /// Every job of the batch in line order; `None` when there is no such batch.
    pub async fn jobs(&self, batch_id: &str) -> Result<Option<Vec<JobRow>>, StoreError> {
        let fail = database_error(&self.pool.database);
        if self.run_flags(batch_id).await?.is_none() {
            return Ok(None);
        }
        let client = self.pool.get().await?;
        let rows = client
            .query(
                "SELECT job_id, line, spec, state, lease_owner, \
                 CASE WHEN state = 'running' THEN EXTRACT(EPOCH FROM now() - claimed_at)::float8 END, \
                 coalesce(state = 'running' AND lease_expires_at < now(), false), attempts, result \
                 FROM batch_jobs WHERE batch_id = $1 ORDER BY line",
                &[&batch_id],
            )
            .await
            .map_err(&fail)?;
        let mut jobs = Vec::with_capacity(rows.len());
        for row in rows {
            jobs.push(JobRow {
                job_id: row.try_get(0).map_err(&fail)?,
                line: row.try_get(1).map_err(&fail)?,
                state: row.try_get(3).map_err(&fail)?,
                lease_owner: row.try_get(4).map_err(&fail)?,
                running_secs: row.try_get(5).map_err(&fail)?,
                expired: row.try_get(6).map_err(&fail)?,
                attempts: row.try_get(7).map_err(&fail)?,
                result: row.try_get(8).map_err(&fail)?,
            });
        }
        Ok(Some(jobs))
    }
}
