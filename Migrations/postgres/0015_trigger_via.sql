-- Baton fleet schema for PostgreSQL, version 15: where a trigger that made no run came from. Forward only.
--
-- As in the SQLite history (0009_trigger_via): a webhook delivery or a hook that joined,
-- coalesced into or was rejected by a run in flight keeps its `via` ("webhook gh from
-- 203.0.113.7, delivery 72d3…") with its trigger row. NULL for a socket trigger and for triggers
-- recorded before this version.
ALTER TABLE triggers ADD COLUMN via TEXT;
