-- Baton fleet schema for PostgreSQL, version 11: hooks (`on:`) across hosts. Forward only.
--
-- A run's end and the hook runs it makes are written in one transaction, by the host that
-- records the end, holding the slot rows of the run's key and of each hook's key (in key
-- order). `keys.last_outcome` is the key's last `success` or `failure`, written by the
-- transaction that records that end (and releases the key): a `change` hook compares the new
-- end with it under the same lock, so every host sees every end before it. A hook run's row
-- names the run that fired it (`hook_run`), that run's action and the hook (`failure`,
-- `success` or `change`), as the SQLite history's version 8: `show` lists it both ways, and a
-- host that claims or takes it over tells it what fired it from that run's row and output.
-- The keys that ended before this version get their last end's outcome.
ALTER TABLE keys ADD COLUMN last_outcome TEXT;
ALTER TABLE runs ADD COLUMN hook_run BIGINT, ADD COLUMN hook_action TEXT, ADD COLUMN hook_event TEXT;
CREATE INDEX runs_hook_run ON runs (hook_run) WHERE hook_run IS NOT NULL;
UPDATE keys k SET last_outcome = s.phase
FROM (SELECT DISTINCT ON (key) key, phase FROM runs WHERE phase IN ('success', 'failure') ORDER BY key, id DESC) s
WHERE s.key = k.key;
