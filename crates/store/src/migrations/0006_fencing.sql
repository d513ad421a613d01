-- Version 6: the queue across machines.
--
-- `generation` is the lease's fencing token: each claim of a job adds one, and every write a
-- worker makes for the job (its runs' rows, its lease, its result) is refused unless the job is
-- still running under the generation that worker claimed. A worker paused past its lease, or
-- cut off from the store while another took its job over, then writes nothing more.
ALTER TABLE batch_jobs ADD COLUMN generation bigint NOT NULL DEFAULT 0;

-- The claim takes the first queued job in line order: this index hands it over without
-- reading, or sorting, the rest of the queue (52 ms per claim at 100,000 queued before).
CREATE INDEX batch_jobs_queued ON batch_jobs (batch_id, line) WHERE state = 'queued';
-- Jobs whose lease expired are looked for among the running ones only.
CREATE INDEX batch_jobs_running ON batch_jobs (batch_id, lease_expires_at) WHERE state = 'running';
