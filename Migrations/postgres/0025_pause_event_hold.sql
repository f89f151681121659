-- Baton fleet schema for PostgreSQL, version 25: whether a pause held its triggers, in the
-- history of pauses. Forward only.
--
-- As in the SQLite history (0016_pause_event_hold): `pause_events.hold` is true for a pause made
-- with `baton pause ACTION --hold` on any host, so every host's `baton history --events` says
-- `paused (hold)`; rows written before this version read false (no hold). Self-contained: only
-- `pause_events` changes.
ALTER TABLE pause_events ADD COLUMN hold BOOLEAN NOT NULL DEFAULT false;
