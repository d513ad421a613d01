-- Version 2: the start line's `sandbox` (mode, writable directories, what the kernel enforced).
-- NULL for runs recorded before it existed, whose transcripts have no such field.
ALTER TABLE runs ADD COLUMN sandbox jsonb;
