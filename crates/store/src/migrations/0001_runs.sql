-- Version 1: one row per run, its blocks in order, and what else each round recorded.
-- Applied once, inside the migration transaction (see src/store/postgres.rs).

CREATE TABLE runs (
    run_id       text PRIMARY KEY,
    started_at   timestamptz NOT NULL,
    -- The start line's `time` exactly as written, so an export reproduces it byte for byte;
    -- started_at is the same instant, typed for queries.
    start_time   text NOT NULL,
    provider     text NOT NULL,
    model        text NOT NULL,
    workspace    text NOT NULL,
    prompt       text NOT NULL,
    system       text NOT NULL,
    tools        jsonb NOT NULL,
    limits       jsonb NOT NULL,
    resumed_from text,
    -- Filled by the end line; all NULL while the run is going (or if it was killed).
    ended_at     timestamptz,
    status       text,
    exit_code    int,
    rounds       int,
    final_text   text,
    usage        jsonb,
    duration_ms  bigint,
    error        text,
    tool_calls   int,
    tool_errors  jsonb
);

CREATE INDEX runs_started_at ON runs (started_at);

-- Round 0 holds the run's prompt ('text_content'); rounds 1.. hold the model's blocks, then
-- the tool results, in transcript order.
CREATE TABLE turn_blocks (
    run_id     text NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    round      int NOT NULL,
    sequence   int NOT NULL,
    block_type text NOT NULL
        CHECK (block_type IN ('thinking', 'text', 'tool_use', 'tool_result', 'text_content')),
    content    jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, round, sequence)
);

-- The rest of each round line (time, stop_reason, usage, model_ms, tools_ms, retries, error,
-- summary): without it an export could not rebuild the round, and a round with no blocks at
-- all would leave no trace.
CREATE TABLE turn_rounds (
    run_id     text NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    round      int NOT NULL,
    meta       jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, round)
);
