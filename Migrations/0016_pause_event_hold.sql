-- Baton history schema, version 16: whether a pause held its triggers, in the history of pauses.
-- Forward only, like 0001.
--
-- `pause_events.hold`: 1 for a pause made with `baton pause ACTION --hold` (its triggers waited
-- `queued` instead of being refused), so `baton history --events` says `paused (hold)`; rows
-- written before this version read 0 (no hold), as their pauses were made before holds existed
-- or their hold was not kept.
ALTER TABLE pause_events ADD COLUMN hold INTEGER NOT NULL DEFAULT 0;
