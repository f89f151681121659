-- Baton fleet schema for PostgreSQL, version 21: runs that need other runs (`needs`) across a
-- fleet. Forward only.
--
-- A run of an action with `needs` is made with `runs.needs = 'asking'`: it may not start. Its
-- owner then triggers each needed action through the fleet's own trigger path (policy `join`,
-- so single flight holds fleet-wide) and writes which runs it waits for, in its action's order
-- (`run_needs`), with `needs = 'waiting'`. Any host that sees a needed run end decides the wait
-- once, holding the waiting run's key row: one UPDATE ... WHERE phase = 'queued' AND needs =
-- 'waiting' to `met` (it may start, on its owner) or `failed` (it ends `failure`, never
-- started). The outcome each needed run had when the wait was decided is kept beside it.
CREATE TABLE run_needs (
    run_id BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    action TEXT NOT NULL,
    needed_run BIGINT NOT NULL,
    phase TEXT,
    reason TEXT,
    PRIMARY KEY (run_id, position)
);
CREATE INDEX run_needs_needed ON run_needs (needed_run);
ALTER TABLE runs ADD COLUMN needs TEXT CHECK (needs IN ('asking', 'waiting', 'met', 'failed'));
CREATE INDEX runs_needs_open ON runs (id) WHERE needs IN ('asking', 'waiting');
