-- Baton fleet schema for PostgreSQL, version 12: locks between actions (`locks`, `limits`)
-- across hosts. Forward only.
--
-- One row per lock name, locked FOR UPDATE by every decision to start a run that claims it, as
-- a key's slot row is by every decision about the key. The global order, so that no two
-- transactions deadlock: a transaction locks every key row it needs (in key order) before any
-- lock row, and its lock rows in one statement, in name order; none locks a key row after a
-- lock row.
--
-- Who holds a lock is not kept in its row but read from the runs, under the row's lock: the
-- runs loading or retrying whose `locks` name it. So an end, however it is written (its host,
-- a cancel, the reaper's `host_lost`), releases its locks with its phase, touching no lock row,
-- and a decision that reads before the end commits only waits longer. `runs.locks` is set by
-- the decision that starts the run, or that finds a lock full and puts the run in line:
-- `lock_wait`, from `lock_waits`, taken while the run's lock rows are held, so that of two runs
-- that want a common lock the one that came first to its lock rows has the smaller number. The
-- line is the queued runs with a `lock_wait`, in its order: first in first out, fleet-wide.
CREATE TABLE locks (
    name TEXT PRIMARY KEY
);
ALTER TABLE runs ADD COLUMN locks TEXT[], ADD COLUMN lock_wait BIGINT;
CREATE SEQUENCE lock_waits;
CREATE INDEX runs_with_locks ON runs (lock_wait, id) WHERE locks IS NOT NULL AND phase IN ('queued', 'loading', 'retrying');
