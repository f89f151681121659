-- Baton history schema, version 8: the hook that made a run. Forward only, like 0001.
--
-- `on: { failure: "page-oncall" }` makes a run of page-oncall when a run of its action fails,
-- created in the same transaction as that failure. The hook run's row names the run that fired
-- it (`hook_run`), that run's action and the hook (`failure`, `success` or `change`), so that
-- `show` lists it both ways and recovery tells a queued hook run what fired it. NULL for any
-- other run and for runs recorded before this version.
ALTER TABLE runs ADD COLUMN hook_run INTEGER;
ALTER TABLE runs ADD COLUMN hook_action TEXT;
ALTER TABLE runs ADD COLUMN hook_event TEXT;
CREATE INDEX runs_hook_run ON runs (hook_run) WHERE hook_run IS NOT NULL;
