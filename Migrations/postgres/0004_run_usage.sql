-- Baton fleet schema for PostgreSQL, version 4: what each run's processes used. Forward only.
--
-- As in the SQLite history's version 3: the run's row carries its CPU time (summed over its
-- attempts, microseconds) and the largest peak memory of any attempt (bytes), from the details
-- of the transitions that end its attempts. NULL where nothing was measured. Adding nullable
-- columns rewrites no row, so hosts still on version 2 keep working meanwhile (they leave the
-- columns NULL for the runs they end).
ALTER TABLE runs ADD COLUMN cpu_user    BIGINT;
ALTER TABLE runs ADD COLUMN cpu_system  BIGINT;
ALTER TABLE runs ADD COLUMN memory_peak BIGINT;
