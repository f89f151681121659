-- Baton fleet schema for PostgreSQL, version 7: the schedule slot a run was made for. Forward only.
--
-- As in the SQLite history's version 7: `baton run --scheduled` makes at most one run per action
-- and slot across the fleet. The trigger transaction reads the slot's run under the fleet's
-- write lock and joins it or answers "scheduled slot already ran"; this index makes the database
-- refuse a second run of a slot should anything get past that. NULL for an unscheduled trigger.
ALTER TABLE runs ADD COLUMN slot BIGINT;
CREATE UNIQUE INDEX runs_action_slot ON runs (action, slot) WHERE slot IS NOT NULL;
