-- Baton history schema, version 4: a run's whole output, kept as chunks. Forward only.
--
-- Every byte each attempt writes to stdout or stderr, in order, as chunks of one stream (up to
-- 64 KiB, or what 50 ms brought), written by the same group commits as transitions. Past the
-- run's `output.keep` the first half of it (the head) and the last half (the tail) are kept;
-- tail chunks that slide out are removed, and `output_totals` counts what was dropped between.
-- `start` is a chunk's position in everything the run wrote, dropped bytes included, so a gap
-- between two chunks is where bytes were dropped, and a follower resumes from an offset.
-- Self-contained: it reads or changes no other table, so it may be renumbered at a merge.

CREATE TABLE output_chunks (
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    start  INTEGER NOT NULL,                      -- position of the first byte in the run's output
    stream INTEGER NOT NULL,                      -- 1 stdout, 2 stderr
    at     INTEGER NOT NULL,                      -- when the first byte arrived (µs)
    bytes  BLOB    NOT NULL,
    PRIMARY KEY (run_id, start)
);

CREATE TABLE output_totals (
    run_id  INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    total   INTEGER NOT NULL,                     -- every byte the run wrote
    dropped INTEGER NOT NULL,                     -- how many of them are not kept
    head    INTEGER NOT NULL                      -- where the head ends: bytes before it are never dropped
);
