-- Version 2 (rounds 0.2): the start line's `sandbox` (mode, writable directories, what the
-- kernel enforced) and the end line's `cost_usd`. NULL for runs recorded before, whose
-- transcripts have no such fields (and for runs whose model has no known price).
ALTER TABLE runs ADD COLUMN sandbox jsonb;
ALTER TABLE runs ADD COLUMN cost_usd double precision;
