-- Version 8: a run's subagents (the `task` tool). Each of their transcript lines (agent_start,
-- agent_round, agent_end) as written, in order, with how many of the run's own rounds came
-- before it, so that an export puts it back where the transcript had it.
CREATE TABLE agent_lines (
    run_id text NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    sequence integer NOT NULL,
    after_round integer NOT NULL,
    line jsonb NOT NULL,
    PRIMARY KEY (run_id, sequence)
);

-- And the files attached to a run's prompt (the start line's `attachments`: path, type, size,
-- digest; never the bytes). NULL when none.
ALTER TABLE runs ADD COLUMN attachments jsonb;
