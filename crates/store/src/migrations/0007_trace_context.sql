-- Version 7: the trace a queued job belongs to (OpenTelemetry). The enqueuer's span context as
-- a W3C traceparent, so that the worker that runs the job, on any machine, continues the
-- enqueuer's trace: one trace for a distributed batch. NULL when the enqueuer traced nothing.
ALTER TABLE batch_jobs ADD COLUMN traceparent text;
