//! A batch as a work queue in the store (`batches` and `batch_jobs`, migration 3): queued by
//! `rounds batch --enqueue`, drained by any number of `--worker`s on any machines.
//!
//! A worker claims the first job that is queued, or running under a lease that expired (its
//! worker died), with `FOR UPDATE SKIP LOCKED`, so two workers never take the same job; renews
//! its lease while the job runs; and marks it done only while it still holds the lease, so a job
//! is finished exactly once. Jobs and their results are JSON the batch module defines.

use std::time::Duration;

use serde_json::Value;
use tokio_postgres::Client;

use super::StoreError;
use super::postgres::{database_error, migrate, open};

/// One connection to a store's queue.
pub(crate) struct Queue {
    client: Client,
    database: String,
}

/// A job a worker now holds.
#[derive(Debug, Clone)]
pub(crate) struct Claimed {
    pub(crate) job_id: String,
    pub(crate) line: i32,
    pub(crate) spec: Value,
    /// Its earlier runs, oldest first.
    pub(crate) runs: Vec<String>,
}

/// What a worker finds when it asks for a job.
#[derive(Debug)]
pub(crate) enum Claim {
    Job(Claimed),
    /// None is free, but some are running elsewhere (and may come back when a lease expires):
    /// ask again after this long.
    Wait(Duration),
    /// Every job is done, or given up.
    Drained,
}

/// A job's row, for `batch status` and `batch results`.
#[derive(Debug, Clone)]
pub(crate) struct JobRow {
    pub(crate) job_id: String,
    pub(crate) line: i32,
    pub(crate) state: String,
    pub(crate) lease_owner: Option<String>,
    /// Seconds since it was claimed, while running.
    pub(crate) running_secs: Option<f64>,
    /// Whether its lease has expired (its worker is gone or stuck).
    pub(crate) expired: bool,
    pub(crate) attempts: i32,
    pub(crate) result: Option<Value>,
}

impl Queue {
    /// Connects and brings the schema up to date.
    pub async fn connect(url: &str) -> Result<Queue, StoreError> {
        let (mut client, database) = open(url).await?;
        migrate(&mut client)
            .await
            .map_err(|cause| StoreError::Migrate {
                database: database.clone(),
                cause,
            })?;
        Ok(Queue { client, database })
    }

    /// Queues a batch: its run flags and its jobs as (id, line, spec). Fails if the id is taken.
    pub(crate) async fn enqueue(
        &mut self,
        batch_id: &str,
        run_flags: &[String],
        jobs: &[(String, i32, Value)],
    ) -> Result<(), StoreError> {
        let fail = database_error(&self.database);
        let flags = serde_json::to_value(run_flags).map_err(|source| StoreError::Encode {
            what: "the run flags",
            source,
        })?;
        let count = i32::try_from(jobs.len()).map_err(|_| StoreError::TooManyJobs(jobs.len()))?;
        let ids: Vec<&str> = jobs.iter().map(|j| j.0.as_str()).collect();
        let lines: Vec<i32> = jobs.iter().map(|j| j.1).collect();
        let specs: Vec<&Value> = jobs.iter().map(|j| &j.2).collect();
        let tx = self.client.transaction().await.map_err(&fail)?;
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
                database: self.database.clone(),
            });
        }
        tx.execute(
            "INSERT INTO batch_jobs (batch_id, job_id, line, spec) \
             SELECT $1, j.id, j.line, j.spec \
             FROM unnest($2::text[], $3::int[], $4::jsonb[]) AS j(id, line, spec)",
            &[&batch_id, &ids, &lines, &specs],
        )
        .await
        .map_err(&fail)?;
        tx.commit().await.map_err(&fail)
    }

    /// The run flags a batch was queued with; `None` when there is no such batch.
    pub(crate) async fn run_flags(
        &self,
        batch_id: &str,
    ) -> Result<Option<Vec<String>>, StoreError> {
        let fail = database_error(&self.database);
        let row = self
            .client
            .query_opt(
                "SELECT run_flags FROM batches WHERE batch_id = $1",
                &[&batch_id],
            )
            .await
            .map_err(&fail)?;
        let Some(row) = row else { return Ok(None) };
        let flags: Value = row.try_get(0).map_err(&fail)?;
        serde_json::from_value(flags)
            .map(Some)
            .map_err(|source| StoreError::BatchFlags {
                batch_id: batch_id.to_owned(),
                source,
            })
    }

    /// Takes the next job for `owner`, under a lease of `lease`: a queued one, or one whose
    /// lease expired and that fewer than `max_attempts` workers took before.
    pub(crate) async fn claim(
        &self,
        batch_id: &str,
        owner: &str,
        lease: Duration,
        max_attempts: i32,
    ) -> Result<Claim, StoreError> {
        let fail = database_error(&self.database);
        let secs = lease.as_secs_f64();
        let row = self
            .client
            .query_opt(
                "UPDATE batch_jobs j SET state = 'running', lease_owner = $2, \
                 lease_expires_at = now() + make_interval(secs => $3), \
                 attempts = j.attempts + 1, claimed_at = now() \
                 WHERE (j.batch_id, j.job_id) IN ( \
                   SELECT batch_id, job_id FROM batch_jobs \
                   WHERE batch_id = $1 AND attempts < $4 AND (state = 'queued' \
                     OR (state = 'running' AND lease_expires_at < now())) \
                   ORDER BY line LIMIT 1 FOR UPDATE SKIP LOCKED) \
                 RETURNING j.job_id, j.line, j.spec, j.attempts, j.runs",
                &[&batch_id, &owner, &secs, &max_attempts],
            )
            .await
            .map_err(&fail)?;
        if let Some(row) = row {
            return Ok(Claim::Job(Claimed {
                job_id: row.try_get(0).map_err(&fail)?,
                line: row.try_get(1).map_err(&fail)?,
                spec: row.try_get(2).map_err(&fail)?,
                runs: row.try_get(4).map_err(&fail)?,
            }));
        }
        // Nothing free: wait for the soonest lease to expire (or a released job), unless
        // nothing is left at all.
        let row = self
            .client
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
    }

    /// Records the job's runs (the one about to start last) while `owner` holds it.
    pub(crate) async fn set_runs(
        &self,
        batch_id: &str,
        job_id: &str,
        owner: &str,
        runs: &[String],
    ) -> Result<bool, StoreError> {
        let fail = database_error(&self.database);
        let n = self
            .client
            .execute(
                "UPDATE batch_jobs SET runs = $4 \
                 WHERE batch_id = $1 AND job_id = $2 AND lease_owner = $3 AND state = 'running'",
                &[&batch_id, &job_id, &owner, &runs],
            )
            .await
            .map_err(&fail)?;
        Ok(n == 1)
    }

    /// Renews `owner`'s lease on the job; `false` when it no longer holds it.
    pub(crate) async fn renew(
        &self,
        batch_id: &str,
        job_id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<bool, StoreError> {
        let fail = database_error(&self.database);
        let n = self
            .client
            .execute(
                "UPDATE batch_jobs SET lease_expires_at = now() + make_interval(secs => $4) \
                 WHERE batch_id = $1 AND job_id = $2 AND lease_owner = $3 AND state = 'running'",
                &[&batch_id, &job_id, &owner, &lease.as_secs_f64()],
            )
            .await
            .map_err(&fail)?;
        Ok(n == 1)
    }

    /// Marks the job done with its result, if `owner` still holds it; `false` when it does
    /// not (another worker took it over, and that one's result counts).
    pub(crate) async fn finish(
        &self,
        batch_id: &str,
        job_id: &str,
        owner: &str,
        result: &Value,
        exit_code: Option<i32>,
    ) -> Result<bool, StoreError> {
        let fail = database_error(&self.database);
        let n = self
            .client
            .execute(
                "UPDATE batch_jobs SET state = 'done', result = $4, exit_code = $5, \
                 finished_at = now(), lease_owner = NULL, lease_expires_at = NULL \
                 WHERE batch_id = $1 AND job_id = $2 AND lease_owner = $3 AND state = 'running'",
                &[&batch_id, &job_id, &owner, result, &exit_code],
            )
            .await
            .map_err(&fail)?;
        Ok(n == 1)
    }

    /// Puts the job back in the queue (its worker was interrupted); the take does not count as
    /// an attempt.
    pub(crate) async fn release(
        &self,
        batch_id: &str,
        job_id: &str,
        owner: &str,
    ) -> Result<(), StoreError> {
        let fail = database_error(&self.database);
        self.client
            .execute(
                "UPDATE batch_jobs SET state = 'queued', lease_owner = NULL, \
                 lease_expires_at = NULL, attempts = greatest(attempts - 1, 0) \
                 WHERE batch_id = $1 AND job_id = $2 AND lease_owner = $3 AND state = 'running'",
                &[&batch_id, &job_id, &owner],
            )
            .await
            .map_err(&fail)?;
        Ok(())
    }

    /// Every job of the batch in line order; `None` when there is no such batch.
    pub(crate) async fn jobs(&self, batch_id: &str) -> Result<Option<Vec<JobRow>>, StoreError> {
        let fail = database_error(&self.database);
        if self.run_flags(batch_id).await?.is_none() {
            return Ok(None);
        }
        let rows = self
            .client
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
