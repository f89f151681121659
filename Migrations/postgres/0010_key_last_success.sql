-- Baton fleet schema for PostgreSQL, version 10: each key's last success, for cooldowns. Forward only.
--
-- A trigger's transaction locks its key's slot row, and the writer locks the slot rows of the
-- keys whose ends it writes: so the run that last succeeded and when, kept in that row by the
-- transaction that writes the success (and releases the key), is read exactly by every later
-- decision about the key, whichever host makes it. `last_success_at` is the database's clock
-- (µs since the epoch) at that write, and a trigger compares it with the database's clock after
-- it holds the row: one clock for the whole window, whatever the hosts' clocks say.
-- The keys that succeeded before this version get their last success's `ended_at`.
ALTER TABLE keys ADD COLUMN last_success_run BIGINT, ADD COLUMN last_success_at BIGINT;
UPDATE keys k SET last_success_run = s.id, last_success_at = s.ended_at
FROM (SELECT DISTINCT ON (key) key, id, ended_at FROM runs WHERE phase = 'success' ORDER BY key, ended_at DESC, id DESC) s
WHERE s.key = k.key;
