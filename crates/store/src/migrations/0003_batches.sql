-- Version 3: batches as work queues (`rounds batch --enqueue`, `--worker`).

-- One row per queued batch.
CREATE TABLE batches (
    batch_id   text PRIMARY KEY,
    created_at timestamptz NOT NULL DEFAULT now(),
    -- The run flags the batch was queued with, as command-line words: every job's defaults on
    -- every worker (a worker's own flags come after them).
    run_flags  jsonb NOT NULL,
    jobs       int NOT NULL
);

-- One row per job. A worker claims a queued job (or one whose lease expired) with
-- SELECT ... FOR UPDATE SKIP LOCKED, holds it under a lease it renews while the job runs, and
-- marks it done with its results.jsonl line. A job whose worker died goes back to the next
-- worker once its lease expires, and resumes from the last of its runs.
CREATE TABLE batch_jobs (
    batch_id         text NOT NULL REFERENCES batches (batch_id) ON DELETE CASCADE,
    job_id           text NOT NULL,
    -- Its line in the jobs file: jobs are claimed in this order.
    line             int NOT NULL,
    -- The job as parsed: its prompt and per-job overrides.
    spec             jsonb NOT NULL,
    state            text NOT NULL DEFAULT 'queued'
        CHECK (state IN ('queued', 'running', 'done')),
    lease_owner      text,
    lease_expires_at timestamptz,
    -- How many times a worker took it.
    attempts         int NOT NULL DEFAULT 0,
    -- Its runs (runs.run_id, kept with --store), oldest first; each resumes the one before.
    runs             text[] NOT NULL DEFAULT '{}',
    claimed_at       timestamptz,
    finished_at      timestamptz,
    exit_code        int,
    -- Its results.jsonl line, once done.
    result           jsonb,
    PRIMARY KEY (batch_id, job_id)
);

CREATE INDEX batch_jobs_claim ON batch_jobs (batch_id, state, line);
