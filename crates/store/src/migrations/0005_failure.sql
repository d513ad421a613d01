-- Version 5: the end line's `failure`, what kind of failure ended the run and whether trying
-- again may help (`{"kind", "retryable", "retry_after"}`). NULL for runs that did not fail, and
-- for runs recorded before.
ALTER TABLE runs ADD COLUMN failure jsonb;
