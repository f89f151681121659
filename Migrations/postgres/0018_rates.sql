-- Baton fleet schema for PostgreSQL, version 18: rate limits across a fleet. Forward only.
--
-- A bucket of `rateLimit` counts every host's starts (docs/scale-out.md): `rate_at` is a run's
-- first `loading` by the database's clock (the one clock every host's decision compares with;
-- `started_at` stays the starting host's, for durations), and `rate_until` when a queued run
-- that its rate limit held back may start (the database's clock; NULL once it starts, or when
-- not held): a look for runs to start leaves it out until then, and the runs behind it in the
-- bucket count it ahead of them. Runs from before this version count by their `started_at`.
ALTER TABLE runs ADD COLUMN rate_at BIGINT;
ALTER TABLE runs ADD COLUMN rate_until BIGINT;
UPDATE runs SET rate_at = started_at WHERE started_at IS NOT NULL;
-- A bucket's starts inside its window, and its runs made but not started, read by index.
CREATE INDEX runs_rate_starts ON runs (action, rate_at) WHERE rate_at IS NOT NULL;
CREATE INDEX runs_not_started ON runs (action) WHERE phase = 'queued' AND started_at IS NULL;
