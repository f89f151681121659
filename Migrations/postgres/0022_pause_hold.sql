-- Baton fleet schema for PostgreSQL, version 22: a pause that holds its action's triggers.
-- Forward only.
--
-- As in the SQLite history (0015_hold_origin): `baton pause ACTION --hold` on any host makes
-- every host's trigger batches queue the action's triggers (the engine's `KeyDecision` goes on
-- past the pause) instead of refusing them; starts refuse the runs while the pause holds, as for
-- any pause, and take them in trigger order once it ends. Self-contained: only `pauses` changes.
ALTER TABLE pauses ADD COLUMN hold BOOLEAN NOT NULL DEFAULT false;
