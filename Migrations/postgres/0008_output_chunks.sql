-- Baton fleet schema for PostgreSQL, version 8: a run's whole output, kept as chunks. Forward only.
--
-- As in the SQLite history's version 4: every byte each attempt writes, in order, as chunks of
-- one stream, written by the host that runs the run through its writer's batches (one statement
-- per write, never one per chunk). Past the run's `output.keep` the head and the tail are kept;
-- tail chunks that slide out are removed, and `output_totals` counts what was dropped between.
-- `start` is a chunk's position in everything the run wrote, so any host follows a run from an
-- offset: chunks past it, in order. Rows go with their run (retention). Self-contained: it reads
-- or changes no other table (it was 0007 on its branch; renumbered at the merge after 0007_run_slot).
CREATE TABLE output_chunks (
    run_id BIGINT   NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    start  BIGINT   NOT NULL,                     -- position of the first byte in the run's output
    stream SMALLINT NOT NULL,                     -- 1 stdout, 2 stderr
    at     BIGINT   NOT NULL,                     -- when the first byte arrived (µs)
    bytes  BYTEA    NOT NULL,
    PRIMARY KEY (run_id, start)
);

CREATE TABLE output_totals (
    run_id  BIGINT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    total   BIGINT NOT NULL,                      -- every byte the run wrote
    dropped BIGINT NOT NULL,                      -- how many of them are not kept
    head    BIGINT NOT NULL                       -- where the head ends: bytes before it are never dropped
);
