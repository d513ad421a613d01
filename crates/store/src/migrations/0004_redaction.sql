-- Version 4: the start line's `redaction`, the names of the variables whose values the run
-- took out of what it wrote and sent (names only, never values). NULL for runs that redacted
-- nothing, and for runs recorded before.
ALTER TABLE runs ADD COLUMN redaction jsonb;
