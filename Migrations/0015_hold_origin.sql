-- Baton history schema, version 15: a pause that holds (queues) its action's triggers, and the
-- uid at the origin of a run. Forward only, like 0001.
--
-- `pauses.hold`: 1 for `baton pause ACTION --hold` (its triggers wait `queued` until it ends,
-- instead of being refused `paused`); a restart finds the pause holding, its runs waiting.
-- `runs.origin_uid`: the uid of whoever triggered the run that led to this one, followed through
-- hooks and needs (NULL where it is the run's own trigger's, or nobody's): an approval's no-self
-- rule refuses that uid's approve after a restart as before it.
ALTER TABLE pauses ADD COLUMN hold INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN origin_uid INTEGER;
