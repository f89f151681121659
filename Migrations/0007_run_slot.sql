-- Baton history schema, version 7: the schedule slot a run was made for. Forward only, like 0001.
--
-- `baton run --scheduled=SLOT` (a systemd timer, or cron) makes at most one run per action and
-- slot: the engine decides it, and this index makes the database refuse a second one, should
-- anything get past it. The slot is in microseconds since 1970; NULL for an unscheduled trigger
-- and for runs recorded before this version.
ALTER TABLE runs ADD COLUMN slot INTEGER;
CREATE UNIQUE INDEX runs_action_slot ON runs (action, slot) WHERE slot IS NOT NULL;
